/*
 * export.h - writers that turn a run database into other tools' formats:
 * folded stacks (flamegraph.pl, speedscope), a self-contained interactive
 * flamegraph SVG, and a chrome-trace JSON for Perfetto UI / chrome://tracing.
 *
 * One ordered scan of the events table (scan.c) gives every event its stack:
 * a node of a frame tree that is keyed by (parent node, name, kind), so the
 * tree grows with the number of distinct stacks, not with the number of
 * events.  Ancestry comes from the rebuilt tree (events.parent_id) or, with
 * --stack-source frames, from recorded frames (stack_nodes).  The writers
 * are rows of tr_export_formats[]; the metrics are rows of tr_export_metrics[].
 * docs/export.md describes the options and the output layouts.
 *
 * Ownership: tr_export_opts holds compiled regexes; release them with
 * tr_export_opts_free().  Writers only write to the FILE they are given.
 */
#ifndef TR_EXPORT_EXPORT_H
#define TR_EXPORT_EXPORT_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "lib/escape.h"
#include "lib/ranks.h"

/* Per-event metric values, in the order of tr_export_metrics[]. */
enum {
    TR_M_SELF_CPU, TR_M_SELF_GPU, TR_M_CPU_TOTAL, TR_M_GPU_TOTAL, TR_M_COUNT,
    TR_M_SELF_CPU_MEM, TR_M_SELF_GPU_MEM, TR_M_COUNT_
};

typedef struct tr_xrow tr_xrow;

typedef struct {
    const char *name;       /* --metric NAME */
    const char *torch;      /* PyTorch's attribute name for --compat torch, or NULL */
    const char *label;      /* for titles: "self CPU time" */
    const char *unit;       /* "ns", "calls" or "bytes" */
    int inclusive;          /* a frame's value already includes its children's */
    int64_t (*value)(const tr_xrow *r);
} tr_export_metric;

extern const tr_export_metric tr_export_metrics[];
const tr_export_metric *tr_export_metric_lookup(const char *name);

typedef enum { TR_SRC_AUTO = 0, TR_SRC_FRAMES, TR_SRC_TREE } tr_stack_source;

typedef struct {
    const struct tr_export_format *format;
    const tr_export_metric *metric;   /* NULL: self_cpu, or self_gpu when there is no CPU time */
    tr_stack_source source;
    int compat_torch;
    /* selection */
    int has_time_range, time_absolute;
    int64_t t_start, t_end;           /* [t_start, t_end); INT64_MIN/MAX when open */
    int has_thread, has_device;
    int64_t thread_tid, device;
    void *include_re, *exclude_re;    /* pcre2_code *, NULL = none */
    tr_rank_set ranks;                /* --rank; n == 0: every rank (each scan resolves it, lib/ranks.h) */
    /* flamegraph */
    const char *title;
    int width;
    double minwidth;
    int inverted;
    /* when set, receives the number of events left out for impossible times
     * (an end before the start, or out of range) */
    size_t *skipped;
    /* --stacks --compat torch: when set, receives 1 when no event has recorded frames
     * (PyTorch's export_stacks() needs a profile recorded with with_stack=True) */
    int *no_frames;
    /* chrome: --min-dur (ns; slices shorter are left out), --max-size (bytes of one
     * part; 0 = one file), gzip the output, and what was written */
    int64_t min_dur;
    uint64_t max_size;
    int gzip;
    struct tr_export_chrome_stats *chrome_stats;
} tr_export_opts;

/* What --chrome wrote: files (parts), their events and uncompressed bytes. */
typedef struct tr_export_chrome_stats {
    int files;
    uint64_t events, bytes, max_file_events, max_file_bytes;
} tr_export_chrome_stats;

typedef struct tr_export_format {
    const char *name;   /* --stacks, --flamegraph, --chrome */
    tr_status (*write)(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);
} tr_export_format;

extern const tr_export_format tr_export_formats[];
extern const size_t tr_export_nformats;
const tr_export_format *tr_export_format_lookup(const char *name);

void tr_export_opts_init(tr_export_opts *o);
void tr_export_opts_free(tr_export_opts *o);
/* Compiles a PCRE2 pattern for --include (which=0) or --exclude (which=1);
 * TR_ERR_USAGE with PCRE2's message and offset when it is invalid. */
tr_status tr_export_set_regex(tr_export_opts *o, int which, const char *pattern, tr_error *err);
/* Parses "START:END" (ns; either side may be empty; a leading '@' makes both absolute). */
tr_status tr_export_parse_time_range(tr_export_opts *o, const char *arg, tr_error *err);

/* Runs o->format over the database. */
tr_status tr_export_run(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);

/* The writers (rows of tr_export_formats[]). */
tr_status tr_export_stacks(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);
tr_status tr_export_flamegraph(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);
tr_status tr_export_chrome(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);
/* --chrome --max-size: numbered parts PATH.1.json, PATH.2.json ... (before the
 * .json/.json.gz suffix), each a whole trace with the metadata repeated, each
 * written atomically; .gz parts are gzipped. */
tr_status tr_export_chrome_parts(sqlite3 *db, const tr_export_opts *o, const char *path,
                                 tr_error *err);
/* "10us" -> ns (units ns, us, ms, s; none: ns); "200MB" -> bytes (k, M, G, KiB, MiB, GiB). */
tr_status tr_export_parse_dur(const char *s, int64_t *ns, tr_error *err);
tr_status tr_export_parse_size(const char *s, uint64_t *bytes, tr_error *err);
/* --step N|A-B: the absolute time range from the first start to the last end of those
 * ProfilerStep#N ranges; TR_ERR_INPUT naming the steps that exist when there is none. */
tr_status tr_export_step_window(sqlite3 *db, const char *spec, tr_export_opts *o, tr_error *err);
/* A warning on f when a chrome output is too large for the browser viewers. */
void tr_export_chrome_warn(FILE *f, const tr_export_chrome_stats *s);
/* The events table as JSON Lines / CSV (docs/events.md). */
tr_status tr_export_events_jsonl(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);
tr_status tr_export_events_csv(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err);

/* The escapers of every writer are in lib/escape.h. */

#endif
