/*
 * diff.h - what changed between two runs, and many runs as one.
 *
 * tr_diff_run() summarizes each run.db with tr_summarize() (the same
 * grouping and selection as the table) and joins the groups of the two runs
 * by their text key: name, host/device, and the input shapes and stack
 * frames when grouped by them.  Rows are sorted by the absolute change of
 * the sort key; docs/diff.md gives the columns and the normalisation rule.
 *
 * tr_summary_merge() folds one run's summary into another's, joining groups
 * by the same text key: counts and sums add exactly, durations (--stats) are
 * concatenated, so min/max/median/stddev stay exact.
 *
 * Ownership: both borrow the options; tr_summary_merge() moves what it needs
 * out of src (its groups' strings and durations) and leaves src freeable.
 */
#ifndef TR_ANALYZE_DIFF_H
#define TR_ANALYZE_DIFF_H

#include <stdio.h>

#include "analyze/analyze.h"
#include "analyze/normalize.h"

typedef struct {
    const char *base, *new_;      /* run.db paths */
    int normalize;                /* --diff-normalize */
    const tr_sort_key *sort;      /* NULL: self GPU when either run has GPU time, else self CPU */
} tr_diff_opts;

/* Writes the diff in o->format's layout (text, csv, json or markdown). */
tr_status tr_diff_run(const tr_diff_opts *d, const tr_analyze_opts *o, FILE *out, FILE *warn,
                      tr_error *err);

/* The table of many run.dbs as one: each summarized, then merged (exit
 * status and warnings as for one run.db). */
tr_status tr_analyze_merged(char *const *paths, size_t n, const tr_analyze_opts *o,
                            const tr_sort_key *sort, FILE *out, FILE *warn, tr_error *err);

/* Adds src's groups into dst (both from tr_summarize() with the same options). */
tr_status tr_summary_merge(tr_summary *dst, tr_summary *src, tr_error *err);

#endif
