/*
 * analyze.h - PyTorch key_averages()-style summaries of a run database.
 *
 * tr_summarize() scans the events table once (twice when grouping by range
 * ancestry: host events in tree order, then device activities) and folds the
 * selected events into groups keyed by name, host/device, and optionally input
 * shapes and the innermost N stack frames.  Memory is bounded by the number of
 * groups and distinct stacks (plus, with --stats, one duration per event).
 *
 * Output is data-driven: sort keys (tr_sort_keys[]), table columns and output
 * formats (text, csv, json, markdown) are rows of tables.
 *
 * Ownership: a tr_summary owns its groups, names and frames; free it with
 * tr_summary_free().  tr_selection owns its compiled regexes; free it with
 * tr_selection_free().
 */
#ifndef TR_ANALYZE_ANALYZE_H
#define TR_ANALYZE_ANALYZE_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"
#include "lib/format.h"
#include "lib/i64map.h"
#include "lib/ranks.h"

typedef struct {
    int64_t name_id, shape_id, stack_key;
    int on_gpu;
    int is_async;                                /* its first event crosses threads */
    int64_t count;
    int64_t cpu_total, cpu_self, gpu_total, gpu_self;
    int64_t cpu_mem, cpu_mem_self, gpu_mem, gpu_mem_self;
    int64_t flops;
    int64_t first_start, first_end, first_id;   /* first appearance, for stable order */
    int64_t *durations;                          /* --stats only */
    size_t ndur, capdur;
    char *name, *shape;                          /* resolved after the scan */
    char **frames;                               /* innermost first */
    size_t nframes;
    int hidden;                                  /* --compat torch --top-level: its first event has a
                                                    parent, so PyTorch leaves the row out */
} tr_group;

typedef struct {
    tr_group *groups;
    size_t n, cap;
    int64_t events;
    int64_t skipped;                             /* events left out for impossible times */
    int64_t sum_cpu_self, sum_gpu_self_device;   /* the table's denominators */
    int64_t sum_gpu_self_host;                   /* GPU time launched by the host rows */
    int filtered;                                /* a selection left events out */
    int64_t cpu_covered;                         /* filtered: the host time the shown events' spans cover */
    int has_shapes, has_mem, has_gpu_mem, has_gpu, has_flops, has_frames;
    const char *stack_source;                    /* "frames" or "tree" when grouping by stack */
    /* selected GPU activities without a launching call (docs/semantics.md): also
     * the host row "[no launching call]", so host rows add up to the device's time */
    int64_t unattributed, unattributed_ns;
    int64_t unattributed_no_corr;                /* the source gives no correlation */
    int64_t unattributed_before;                 /* correlation older than any call: launched before the capture */
    int64_t unattributed_not_found;              /* a correlation no call of the source has */
} tr_summary;

/* The name of the host row of GPU activities without a launching call. */
#define TR_NO_LAUNCH_ROW "[no launching call]"

typedef struct {
    const char *name;         /* PyTorch's attribute name, e.g. "self_cpu_time_total" */
    const char *aliases;      /* space-separated short names */
    double (*value)(const tr_group *g);
} tr_sort_key;

extern const tr_sort_key tr_sort_keys[];
extern const size_t tr_nsort_keys;
const tr_sort_key *tr_sort_key_lookup(const char *name);

/* Which events count.  All filters combine with AND; 0/NULL = no filter. */
typedef struct tr_selection {
    struct tr_regex *include, *exclude;
    unsigned kind_mask;             /* bit per tr_kind; 0 = all */
    int has_thread; int64_t thread; /* OS thread id; GPU work matches its launching thread */
    int has_device; int64_t device; /* device ordinal: only GPU activities on it */
    int has_stream; int64_t stream; /* stream id: only GPU activities on it */
    int has_time; int64_t time_start, time_end;  /* ns from the trace's first event; start in [s, e) */
    int top_level;                  /* host events without a parent, and device activities */
    tr_rank_set ranks;              /* --rank; n == 0: every rank (lib/ranks.h) */
    int64_t rank_base;              /* many run.dbs: the sources before this one (lib/ranks.h) */
    tr_rank_map *rank_map;          /* ranks resolved against the open run.db: tr_selection_bind */
} tr_selection;

/* Parse helpers; each fills err with a usage message on failure. */
tr_status tr_selection_add_regex(tr_selection *s, int exclude, const char *pattern, tr_error *err);
tr_status tr_selection_parse_kinds(tr_selection *s, const char *list, tr_error *err);
tr_status tr_parse_time_range(const char *text, int64_t *start, int64_t *end, tr_error *err);
void tr_selection_free(tr_selection *s);
/* Resolves --rank against the open run.db (a no-op without it); every scan
 * then asks tr_selection_rank_ok.  A shallow copy of a selection may be bound
 * to another run.db and unbound again: the copy owns only its map. */
tr_status tr_selection_bind(tr_selection *s, sqlite3 *db, tr_error *err);
void tr_selection_unbind(tr_selection *s);
/* Is an event of threads.id thread_row (or, < 0, of streams.id stream_row) of a selected rank? */
static inline int tr_selection_rank_ok(const tr_selection *s, int64_t thread_row, int64_t stream_row)
{
    return !s || !s->rank_map || tr_rank_map_ok(s->rank_map, thread_row, stream_row);
}
/* Does the name with string id name_id pass --include/--exclude?  name_stmt is a
 * prepared "SELECT value FROM strings WHERE id = ?"; cache keeps each id's answer,
 * so a name is matched once however many events carry it. */
int tr_selection_name_id_ok(const tr_selection *s, sqlite3_stmt *name_stmt,
                            tr_i64map *cache, int64_t name_id);
/* Names of the --kind choices, for help and error messages. */
const char *tr_kind_choices(void);

typedef enum { TR_STACK_AUTO = 0, TR_STACK_FRAMES, TR_STACK_TREE } tr_stack_source;

typedef struct tr_output_format tr_output_format;

typedef struct {
    int group_by_shape;
    long group_by_stack;        /* innermost N frames; 0 = not grouped by stack */
    tr_stack_source stack_source;
    const tr_sort_key *sort;    /* NULL: first-appearance order */
    long limit;                 /* rows; < 0 = all */
    tr_time_unit unit;
    int stats;                  /* min/max/median/stddev columns */
    int compat_torch;           /* PyTorch 1.13's numbers, defects included (compat_torch.h) */
    int name_width;             /* widest Name column; 0: the terminal's room on a TTY, else 55 */
    int short_names;            /* C++ names shortened (tr_short_name), distinct in one table */
    int *names_alike;           /* text table: set to 1 when names read alike once cut (or NULL) */
    const tr_output_format *format;
    const tr_selection *select;
} tr_analyze_opts;

tr_status tr_summarize(sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err);
/* The denominators and the has_* flags the columns follow, from the resolved groups. */
void tr_summary_totals(tr_summary *s);
/* The denominator of Self CUDA % and the footer's "Self CUDA time total": the
 * device rows' self time (PyTorch's); a table without device rows, or a
 * filtered one whose host rows launched more than the device rows shown (a
 * kernel excluded by name or outside --time-range, its launcher kept), takes
 * the time the host rows launched, so that neither side's shares pass 100%.
 * *launched (may be NULL) is set when it is the host rows' time. */
int64_t tr_summary_gpu_base(const tr_summary *s, int compat_torch, int *launched);
void tr_summary_sort(tr_summary *s, const tr_sort_key *key);
/* Whether a's first appearance comes before b's: the earlier first event,
 * the longer one, the lower id, a device row before a host row; the order of
 * rows that tie on the sort key, in one run.db and over several. */
int tr_group_first_before(const tr_group *a, const tr_group *b);
void tr_summary_free(tr_summary *s);

/* Output formats (rows of a table). */
struct tr_output_format {
    const char *name;
    tr_status (*write)(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err);
};
extern const tr_output_format tr_output_formats[];
extern const size_t tr_noutput_formats;
const tr_output_format *tr_output_format_lookup(const char *name);

/* The text table in PyTorch 1.13's layout; nothing for an empty summary. */
tr_status tr_print_table(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err);

/* Per-group duration statistics in ns (valid when stats were collected). */
typedef struct { int64_t min, max; double median, stddev; } tr_group_stats;
void tr_group_stats_get(const tr_group *g, tr_group_stats *st);

#endif
