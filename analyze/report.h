/*
 * report.h - timeline reports: rows of one report table (name, description,
 * parameters, columns, function), run over a run database with the same
 * selection (--device, --stream, --thread, --time-range, --include/--exclude,
 * --kind) and output formats (text, csv, json, markdown) as the key_averages
 * table.  docs/reports.md defines every column.
 *
 * A report function streams the events it needs from SQLite through
 * tr_report_scan() (one SELECT, in start order when asked) and fills a
 * tr_rresult: one or more tables of cells plus note lines.  Memory is bounded
 * by the rows of those tables (groups), never by the number of events.
 *
 * Ownership: tr_report_opts owns its request array (tr_report_opts_free());
 * a tr_rresult owns its tables, cells, strings and notes (freed by the runner).
 */
#ifndef TR_ANALYZE_REPORT_H
#define TR_ANALYZE_REPORT_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/analyze.h"
#include "lib/error.h"
#include "lib/i64map.h"

#define TR_REPORT_MAX_PARAMS 4

/* ---- what main.c sees ---- */

typedef struct tr_report tr_report;

typedef struct {
    const tr_report *report;
    int64_t param[TR_REPORT_MAX_PARAMS];
} tr_report_req;

typedef struct tr_report_opts_ {
    tr_report_req *v;
    size_t n;
    int list;                       /* --report list */
    int has_step;                   /* --step N or A-B */
    int64_t step_lo, step_hi;
} tr_report_opts;

/* Adds the reports of one --report argument: NAME[:PARAM=VALUE...][,NAME...],
 * or "list".  An unknown name is a usage error whose message lists the reports. */
tr_status tr_report_opts_add(tr_report_opts *ro, const char *spec, tr_error *err);
void tr_report_opts_free(tr_report_opts *ro);
/* --step N|A-B: only the windows of those ProfilerStep#N ranges. */
tr_status tr_report_opts_step(tr_report_opts *ro, const char *spec, tr_error *err);
/* --report list: a line per report, with its parameters. */
void tr_report_print_list(FILE *out);
/* Runs the requested reports in order and writes them in o->format's format.
 * A report without data says so in one line on `diag` and is otherwise empty. */
tr_status tr_report_run(sqlite3 *db, const tr_report_opts *ro, const tr_analyze_opts *o,
                        FILE *out, FILE *diag, tr_error *err);
/* Several run.dbs (the ranks of one job, in the order given; names for
 * messages): a rank-aware report (tr_report.many) sees dbs[0] as ctx->db and
 * all of them in ctx->dbs; any other runs on each in turn, its tables joined
 * with the rank of each row in front (docs/reports.md, "Several run.dbs"). */
tr_status tr_report_run_many(sqlite3 *const *dbs, const char *const *names, size_t ndbs,
                             const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                             tr_error *err);
/* The same over run.db files (opened with tr_rundb_open(), closed after). */
tr_status tr_report_run_paths(const char *const *paths, const char *const *names, size_t n,
                              const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                              tr_error *err);

/* ---- what the report functions (report_*.c) and renderers use ---- */

typedef enum {
    TR_COL_STR,     /* text */
    TR_COL_INT,     /* a count */
    TR_COL_NS,      /* a duration or time in ns: formatted in text, raw ns in csv/json */
    TR_COL_NSR,     /* the same, not a whole number (averages, medians) */
    TR_COL_PCT,     /* a percentage in [0, 100] */
    TR_COL_BYTES,   /* a byte count */
    TR_COL_REAL     /* any other real number (GB/s, ms) */
} tr_col_type;

enum { TR_COL_TEXT_ONLY = 1, TR_COL_MACHINE_ONLY = 2 };

typedef struct {
    const char *key;      /* csv/json key */
    const char *header;   /* text/markdown header */
    tr_col_type type;
    int flags;
} tr_report_col;

typedef struct {
    int null;             /* no value: empty in csv, null in json, "-" in text */
    int64_t i;
    double d;
    char *s;
} tr_cell;

typedef struct {
    char *title;
    const tr_report_col *cols;
    size_t ncols;
    tr_cell *cells;       /* nrows * ncols */
    size_t nrows, caprows;
    char **notes;
    size_t nnotes;
    int whole;            /* -n does not cut it (a key/value table) */
} tr_rtable;

typedef struct {
    const char *report;
    tr_rtable *tables;
    size_t ntables;
    char **notes;         /* lines about the whole report */
    size_t nnotes;
    char *nodata;         /* set when the report has nothing to show */
    char **warnings;      /* tr_rresult_warn(): also on stderr */
    size_t nwarnings;
    tr_report_col **owned_cols;   /* column lists made at run time (freed with the result) */
    size_t nowned_cols;
} tr_rresult;

typedef enum { TR_PARAM_TIME, TR_PARAM_COUNT, TR_PARAM_FLAG /* 0 or 1 */ } tr_param_type;

typedef struct {
    const char *name;
    tr_param_type type;
    int64_t def;          /* ns for TR_PARAM_TIME */
    const char *help;
} tr_report_param;

typedef struct {
    int64_t id;           /* devices.id */
    int64_t source, ordinal;
    char *label;          /* "0", or "s2:0" with several sources */
} tr_rdevice;

/* A ProfilerStep#N window: the union of that step's ranges over all threads. */
typedef struct {
    int64_t step, start, end;
    int64_t name_id;
} tr_rstep;

typedef struct tr_report_ctx {
    sqlite3 *db;
    const tr_analyze_opts *o;
    const tr_selection *sel;
    const int64_t *param;
    tr_error *err;
    int64_t t0;                         /* first event's start, for --time-range */
    tr_rdevice *devs;
    size_t ndevs;
    tr_i64map stream_dev;               /* streams.id -> index into devs */
    tr_i64map stream_num;               /* streams.id -> CUDA stream id */
    tr_i64map thread_tid;               /* threads.id -> OS tid */
    tr_i64map name_ok;                  /* name id -> passes --include/--exclude */
    sqlite3_stmt *name_stmt;
    tr_rstep *steps;                    /* every step of the run, by start (tr_report_load_steps) */
    size_t nsteps;
    int steps_loaded;
    int has_step;                       /* --step: only work in these windows */
    size_t step_first, step_count;      /* the selected steps[] */
    int64_t skipped;                    /* events left out for impossible times */
    /* every run.db of the analysis: one unless a rank-aware report (tr_report.many)
     * was given several; dbs[db_index] == db */
    sqlite3 *const *dbs;
    const char *const *db_names;        /* as given on the command line; entries may be NULL */
    size_t ndbs, db_index;
    const struct tr_report_opts_ *ro_;  /* the requests, for tr_report_ctx_sub() (--step) */
} tr_report_ctx;

/* A context like c that scans dbs[i] (its own devices, streams, threads and
 * --step windows; the same options and parameters).  Free it with
 * tr_report_ctx_sub_free(), before c. */
tr_status tr_report_ctx_sub(const tr_report_ctx *c, size_t i, tr_report_ctx *sub);
void tr_report_ctx_sub_free(tr_report_ctx *sub);

tr_status tr_report_load_steps(tr_report_ctx *c);
/* The index of the step whose window holds time t, or -1. */
long tr_report_step_at(const tr_report_ctx *c, int64_t t);

/* One event of a scan.  For GPU activities, launch_* describe the API call
 * that launched it (when the scan asked for it and the call is in the trace). */
typedef struct {
    int64_t id, name_id, start, end, parent, thread, stream, bytes, correlation;
    int kind, on_gpu;
    int dev;                            /* index into ctx->devs, -1 = none */
    int has_launch;
    int64_t launch_thread, launch_start, launch_end, launch_name;
} tr_rev;

/* TR_SCAN_NARROW: the callback reads only kind, name_id, start, end, thread,
 * stream and dev (id, parent, bytes and correlation read as 0, 0, 0, -1):
 * a scan in an ORDER BY then sorts a few columns, not all of them. */
enum { TR_SCAN_LAUNCH = 1, TR_SCAN_UNFILTERED_NAMES = 2, TR_SCAN_NARROW = 4 };

/* Streams events of the kinds in kind_mask (bit per tr_kind) that pass the
 * selection, in the SQL order `order` (NULL: as stored; "e.start_ns, e.id":
 * time order).  extra_cols/extra_join add columns after the fixed ones (read
 * them from st at TR_SCAN_NCOLS onwards). */
#define TR_SCAN_NCOLS 14
#define TR_ORDER_START "e.start_ns, e.id"
#define TR_KBIT(k) (1u << (k))
#define TR_GPU_KINDS (TR_KBIT(7) | TR_KBIT(8) | TR_KBIT(9))
typedef tr_status (*tr_scan_fn)(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg);
tr_status tr_report_scan(tr_report_ctx *c, unsigned kind_mask, int flags, const char *order,
                         const char *extra_cols, const char *extra_join, tr_scan_fn fn, void *arg);

/* The same scan on a second thread (a connection and a context of its own:
 * the same options, time origin and --step windows) while the caller goes on;
 * tr_report_scan_finish() waits for it and returns st, the caller's status,
 * or if that is TR_OK the scan's.  fn runs on that thread with that context,
 * so it must touch only arg's state, and no state the caller's own scans touch
 * meanwhile.  Where no thread can be had (or TR_ONE_THREAD is set), the scan
 * runs in tr_report_scan_finish(), after the caller's, as one thread would. */
typedef struct tr_report_scan_job tr_report_scan_job;
tr_status tr_report_scan_start(tr_report_ctx *c, tr_report_scan_job **job, unsigned kind_mask, int flags,
                               const char *order, const char *extra_cols, const char *extra_join, tr_scan_fn fn,
                               void *arg);
tr_status tr_report_scan_finish(tr_report_ctx *c, tr_report_scan_job *job, tr_status st);

/* Groups of durations keyed by two integers (a name id and a device, stream,
 * ...): count, total, min, max, mean and variance (Welford), and the median,
 * found by a second scan in duration order (tr_rgroups_median_*). */
typedef struct {
    int64_t k1, k2;
    int64_t count, total, min, max;
    double mean, m2;
    int64_t med_lo, med_hi, seen;
    int64_t sum[4];          /* the report's own sums */
    int64_t first_start;
    char *name;              /* resolved for output */
} tr_rgroup;

typedef struct {
    tr_rgroup *v;
    size_t n, cap;
    struct tr_rgslot { int64_t k1, k2; size_t idx; int used; } *slots;
    size_t scap;
} tr_rgroups;

tr_rgroup *tr_rgroups_get(tr_rgroups *g, int64_t k1, int64_t k2);   /* NULL on out-of-memory */
tr_rgroup *tr_rgroups_find(const tr_rgroups *g, int64_t k1, int64_t k2);
void tr_rgroup_add(tr_rgroup *g, int64_t dur, int64_t start);
/* Feed every event of the group again in ascending duration order. */
void tr_rgroup_median_feed(tr_rgroup *g, int64_t dur);
double tr_rgroup_median(const tr_rgroup *g);

/* The same values from one scan: each value logged with its group's index
 * in g->v (before tr_rgroups_finish() reorders them), then partitioned by
 * group and selected in place: 12 bytes a value, up to 2^23 values (the log
 * then fails and the caller scans again), in lib/spill.h arrays. */
typedef struct {
    uint32_t *group;
    int64_t *v;
    size_t n, cap;
    int failed;
} tr_rvalues;
int tr_rvalues_add(tr_rvalues *l, size_t group, int64_t v);   /* -1 once out of memory */
/* The ranks (0-based, in ascending order) of the two values a group of n
 * keeps in med_lo and med_hi, a <= b < n; tr_rranks_median: the middle two. */
typedef void (*tr_rranks_fn)(int64_t n, size_t *a, size_t *b);
void tr_rranks_median(int64_t n, size_t *a, size_t *b);
/* Sets med_lo and med_hi of every group; -1 (the caller then scans again) when
 * the log failed or does not hold exactly the values the groups counted.
 * Reorders the log. */
int tr_rvalues_select(tr_rvalues *l, tr_rgroups *g, tr_rranks_fn ranks);
void tr_rvalues_free(tr_rvalues *l);
double tr_rgroup_stddev(const tr_rgroup *g);      /* sample standard deviation, as nsys */
/* Sorts by total descending (ties: first appearance), resolves names of k1. */
tr_status tr_rgroups_finish(tr_report_ctx *c, tr_rgroups *g, int resolve_names);
void tr_rgroups_free(tr_rgroups *g);

/* Does an event pass the selection (kind, thread, device, stream, names)?
 * --time-range is applied by the scan's SQL, not here. */
int tr_report_selected(tr_report_ctx *c, const tr_rev *ev);
/* The text of a string id ("" when absent); malloc'd, NULL on out-of-memory. */
char *tr_report_string(tr_report_ctx *c, int64_t id);
/* CUDA graph launches (cudaGraphLaunch, cuGraphLaunch) with no GPU activity
 * of theirs in the trace: Kineto and CUPTI can record a graph as a whole,
 * without its kernels, and then its GPU time is missing. */
int64_t tr_report_empty_graph_launches(tr_report_ctx *c);
/* Runs a one-value query; 0 when it returns no row. */
int64_t tr_report_query_i64(tr_report_ctx *c, const char *sql);

/* Result building; each returns NULL / nonzero on out-of-memory. */
/* cols: NULL-key terminated. */
tr_rtable *tr_rtable_add(tr_rresult *r, const char *title, const tr_report_col *cols);
tr_cell *tr_rtable_row(tr_rtable *t);   /* a new row, all cells null */
int tr_cell_str(tr_cell *c, const char *s);
void tr_cell_int(tr_cell *c, int64_t v);
void tr_cell_ns(tr_cell *c, int64_t v);  /* negative values are clamped to 0 */
void tr_cell_pct(tr_cell *c, double part, double whole);  /* null when whole <= 0 */
void tr_cell_real(tr_cell *c, double v); /* null when not finite */
void tr_cell_nsr(tr_cell *c, double v);  /* a real ns value; negative clamped to 0 */
int tr_rtable_note(tr_rtable *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tr_rresult_note(tr_rresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int tr_rresult_nodata(tr_rresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A warning: a note "warning: ..." of the report, and one line on stderr
 * ("trace-analyze: REPORT: warning: ...") from the runner. */
int tr_rresult_warn(tr_rresult *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
tr_status tr_report_nomem(tr_report_ctx *c);

/* The gpu-time breakdown of one scope (all devices, a device, a step), fed
 * with GPU activities in start order; report_gputime.c. */
typedef struct { int64_t s, e, total; int open; } tr_uacc;
typedef struct {
    tr_uacc comp, comm, mem, cc, all;    /* cc: computation ∪ communication */
    int64_t first, last, n;
    int64_t micro, macro, nmicro, nmacro;
    int64_t excluded, excluded_ns;
} tr_gt_scope;
/* cls: 0 computation, 1 communication, 2 memcpy (tr_gt_class). */
void tr_gt_scope_add(tr_gt_scope *s, int cls, int64_t start, int64_t end, int64_t micro_thresh);
int tr_gt_class(tr_report_ctx *c, tr_i64map *is_comm, const tr_rev *ev);   /* -1 on out-of-memory */
int64_t tr_uacc_total(const tr_uacc *u);

/* Computes one report (NAME[:PARAM=VALUE...]) into r, for renderers other than
 * trace-analyze's (the HTML report); free r with tr_rresult_free(). */
tr_status tr_report_compute(sqlite3 *db, const char *spec, const tr_analyze_opts *o, tr_rresult *r, tr_error *err);
void tr_rresult_free(tr_rresult *r);
/* A cell as the text format prints it. */
void tr_report_fmt_cell(char *b, size_t n, const tr_report_col *col, const tr_cell *c, tr_time_unit unit);

/* The report table. */
struct tr_report {
    const char *name;
    const char *description;
    const tr_report_param *params;   /* NULL-name terminated, or NULL */
    const tr_report_col *cols;       /* the main table's columns, NULL-key terminated */
    tr_status (*run)(tr_report_ctx *c, tr_rresult *r);
    int many;                        /* rank-aware: reads every run.db in c->dbs */
};

extern const tr_report tr_reports[];
extern const size_t tr_nreports;

/* The report functions (one file each). */
#define TR_REPORT_DECL(fn, cols, params) \
    tr_status fn(tr_report_ctx *c, tr_rresult *r); \
    extern const tr_report_col cols[]; \
    extern const tr_report_param params[]
TR_REPORT_DECL(tr_report_gpu_time, tr_gpu_time_cols, tr_gpu_time_params);
TR_REPORT_DECL(tr_report_summary, tr_summary_cols, tr_summary_params);
TR_REPORT_DECL(tr_report_kernels, tr_dursum_cols, tr_kernels_params);
TR_REPORT_DECL(tr_report_api, tr_dursum_cols, tr_api_params);
TR_REPORT_DECL(tr_report_nvtx, tr_nvtx_cols, tr_nvtx_params);
TR_REPORT_DECL(tr_report_memcpy, tr_memcpy_cols, tr_memcpy_params);
TR_REPORT_DECL(tr_report_nvtx_gpu, tr_nvtx_gpu_cols, tr_nvtx_gpu_params);
TR_REPORT_DECL(tr_report_steps, tr_steps_cols, tr_steps_params);
TR_REPORT_DECL(tr_report_launch, tr_launch_cols, tr_launch_params);
TR_REPORT_DECL(tr_report_gaps, tr_gaps_cols, tr_gaps_params);
TR_REPORT_DECL(tr_report_advice, tr_advice_cols, tr_advice_params);
TR_REPORT_DECL(tr_report_collectives, tr_collectives_cols, tr_collectives_params);

#endif
