/*
 * analyze.h - PyTorch key_averages()-style summaries of a run database.
 *
 * tr_summarize() makes one scan of the events table and folds the events
 * into groups (by name; optionally by name + input shapes); memory is bounded
 * by the number of groups.  tr_print_table() renders the groups in the layout
 * of PyTorch 1.13's key_averages().table() (docs/semantics.md says where and
 * why the numbers differ).  Sort keys and columns are tables of rows.
 *
 * Ownership: a tr_summary owns its groups and names; free with tr_summary_free().
 */
#ifndef TR_ANALYZE_ANALYZE_H
#define TR_ANALYZE_ANALYZE_H

#include <sqlite3.h>
#include <stdio.h>

#include "lib/error.h"
#include "lib/format.h"

typedef struct {
    int64_t name_id, shape_id;
    int on_gpu;
    int64_t count;
    int64_t cpu_total, cpu_self, gpu_total, gpu_self;
    int64_t cpu_mem, cpu_mem_self, gpu_mem, gpu_mem_self;
    int64_t flops;
    int64_t first_start, first_end, first_id;   /* first appearance, for stable order */
    char *name, *shape;                          /* resolved after the scan */
} tr_group;

typedef struct {
    tr_group *groups;
    size_t n, cap;
    int64_t events;
    int64_t sum_cpu_self, sum_gpu_self_device;   /* table denominators */
    int has_shapes, has_mem, has_gpu;
} tr_summary;

typedef struct {
    const char *name;         /* PyTorch's attribute name, e.g. "self_cpu_time_total" */
    const char *aliases;      /* space-separated short names */
    double (*value)(const tr_group *g);
} tr_sort_key;

extern const tr_sort_key tr_sort_keys[];
extern const size_t tr_nsort_keys;
const tr_sort_key *tr_sort_key_lookup(const char *name);

typedef struct {
    int group_by_shape;
    const tr_sort_key *sort;   /* NULL: first-appearance order */
    long limit;                /* rows; < 0 = all */
    tr_time_unit unit;
} tr_analyze_opts;

tr_status tr_summarize(sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err);
void tr_summary_sort(tr_summary *s, const tr_sort_key *key);
void tr_summary_free(tr_summary *s);

/* Writes the table; nothing at all for an empty summary (as PyTorch). */
tr_status tr_print_table(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err);

#endif
