/*
 * html.h - trace-export --html: one self-contained HTML file (inline CSS and
 * SVG, no script, nothing fetched) with the summary, the GPU time breakdown
 * per device and per step, the top kernels and ops, a timeline overview and
 * the key tables of the timeline reports (analyze/report.h, docs/reports.md).
 *
 * html.c renders the reports and sees only analyze's types; html_format.c is
 * the trace-export format row around it (export's types).
 */
#ifndef TR_EXPORT_HTML_H
#define TR_EXPORT_HTML_H

#include <sqlite3.h>
#include <stdio.h>

#include "lib/error.h"

/* title: NULL for the default; ranks: the ranks whose events the tables count
 * (NULL or empty: all; lib/ranks.h). */
struct tr_rank_set;
tr_status tr_html_report(sqlite3 *db, const char *title, const struct tr_rank_set *ranks, FILE *out,
                         tr_error *err);

struct tr_export_format;
extern const struct tr_export_format tr_export_html_format;

#endif
