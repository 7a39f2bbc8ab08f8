#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "lib/i64map.h"

#define US(ns) ((double)(ns) / 1000.0)

static double v_cpu_total(const tr_group *g) { return (double)g->cpu_total; }
static double v_cpu_self(const tr_group *g) { return (double)g->cpu_self; }
static double v_gpu_total(const tr_group *g) { return (double)g->gpu_total; }
static double v_gpu_self(const tr_group *g) { return (double)g->gpu_self; }
static double v_cpu_avg(const tr_group *g) { return g->count ? (double)g->cpu_total / (double)g->count : 0; }
static double v_gpu_avg(const tr_group *g) { return g->count ? (double)g->gpu_total / (double)g->count : 0; }
static double v_count(const tr_group *g) { return (double)g->count; }
static double v_cpu_mem(const tr_group *g) { return (double)g->cpu_mem; }
static double v_cpu_mem_self(const tr_group *g) { return (double)g->cpu_mem_self; }
static double v_gpu_mem(const tr_group *g) { return (double)g->gpu_mem; }
static double v_gpu_mem_self(const tr_group *g) { return (double)g->gpu_mem_self; }
static double v_flops(const tr_group *g) { return (double)g->flops; }

const tr_sort_key tr_sort_keys[] = {
    {"cpu_time_total", "cpu_total", v_cpu_total},
    {"self_cpu_time_total", "self_cpu", v_cpu_self},
    {"cuda_time_total", "gpu_total cuda_total", v_gpu_total},
    {"self_cuda_time_total", "self_gpu self_cuda", v_gpu_self},
    {"cpu_time", "cpu_avg", v_cpu_avg},
    {"cuda_time", "gpu_avg cuda_avg", v_gpu_avg},
    {"count", "calls", v_count},
    {"cpu_memory_usage", "cpu_mem", v_cpu_mem},
    {"self_cpu_memory_usage", "self_cpu_mem", v_cpu_mem_self},
    {"cuda_memory_usage", "gpu_mem cuda_mem", v_gpu_mem},
    {"self_cuda_memory_usage", "self_gpu_mem self_cuda_mem", v_gpu_mem_self},
    {"flops", "", v_flops},
};
const size_t tr_nsort_keys = sizeof tr_sort_keys / sizeof tr_sort_keys[0];

const tr_sort_key *tr_sort_key_lookup(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < tr_nsort_keys; i++) {
        if (strcmp(tr_sort_keys[i].name, name) == 0)
            return &tr_sort_keys[i];
        for (const char *a = tr_sort_keys[i].aliases; *a;) {
            size_t n = strcspn(a, " ");
            if (n == len && strncmp(a, name, n) == 0)
                return &tr_sort_keys[i];
            a += n;
            a += *a == ' ';
        }
    }
    return NULL;
}

static int before(int64_t s1, int64_t e1, int64_t i1, int64_t s2, int64_t e2, int64_t i2)
{
    if (s1 != s2)
        return s1 < s2;
    if (e1 != e2)
        return e1 > e2;
    return i1 < i2;
}

static tr_status resolve_strings(sqlite3 *db, tr_summary *s, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "run database: %s", sqlite3_errmsg(db));
    for (size_t i = 0; i < s->n; i++) {
        for (int which = 0; which < 2; which++) {
            int64_t id = which ? s->groups[i].shape_id : s->groups[i].name_id;
            char **dst = which ? &s->groups[i].shape : &s->groups[i].name;
            const char *v = "";
            sqlite3_bind_int64(st, 1, id);
            if (id && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
                v = (const char *)sqlite3_column_text(st, 0);
            *dst = strdup(v);
            sqlite3_reset(st);
            if (!*dst) {
                sqlite3_finalize(st);
                return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            }
        }
    }
    sqlite3_finalize(st);
    return TR_OK;
}

tr_status tr_summarize(sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err)
{
    memset(s, 0, sizeof *s);
    static const char sql[] =
        "SELECT e.id, e.name_id, e.shape_id, k.on_gpu, e.start_ns, e.end_ns, e.cpu_total_ns, "
        "e.cpu_self_ns, e.gpu_total_ns, e.gpu_self_ns, e.cpu_mem_total, e.cpu_mem_self, "
        "e.gpu_mem_total, e.gpu_mem_self, e.flops "
        "FROM events e JOIN kinds k ON k.id = e.kind";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(db));
    tr_i64map index;
    tr_i64map_init(&index);
    tr_status status = TR_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        int64_t name = sqlite3_column_int64(st, 1);
        int64_t shape = o->group_by_shape ? sqlite3_column_int64(st, 2) : 0;
        int on_gpu = sqlite3_column_int(st, 3) != 0;
        int64_t key = (name << 32) ^ (shape << 1) ^ on_gpu;
        int64_t gi;
        if (!tr_i64map_get(&index, key, &gi)) {
            if (s->n == s->cap) {
                size_t ncap = s->cap ? s->cap * 2 : 256;
                tr_group *ng = realloc(s->groups, ncap * sizeof *ng);
                if (!ng)
                    goto nomem;
                s->groups = ng;
                s->cap = ncap;
            }
            gi = (int64_t)s->n++;
            tr_group *g = &s->groups[gi];
            memset(g, 0, sizeof *g);
            g->name_id = name;
            g->shape_id = shape;
            g->on_gpu = on_gpu;
            g->first_start = INT64_MAX;
            if (tr_i64map_put(&index, key, gi) < 0)
                goto nomem;
        }
        tr_group *g = &s->groups[gi];
        int64_t start = sqlite3_column_int64(st, 4), end = sqlite3_column_int64(st, 5);
        if (before(start, end, id, g->first_start, g->first_end, g->first_id)) {
            g->first_start = start;
            g->first_end = end;
            g->first_id = id;
        }
        g->count++;
        g->cpu_total += sqlite3_column_int64(st, 6);
        g->cpu_self += sqlite3_column_int64(st, 7);
        g->gpu_total += sqlite3_column_int64(st, 8);
        g->gpu_self += sqlite3_column_int64(st, 9);
        g->cpu_mem += sqlite3_column_int64(st, 10);
        g->cpu_mem_self += sqlite3_column_int64(st, 11);
        g->gpu_mem += sqlite3_column_int64(st, 12);
        g->gpu_mem_self += sqlite3_column_int64(st, 13);
        if (sqlite3_column_type(st, 14) != SQLITE_NULL)
            g->flops += sqlite3_column_int64(st, 14);
        s->events++;
    }
    if (rc != SQLITE_DONE) {
        status = tr_fail(err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(db));
        goto out;
    }
    for (size_t i = 0; i < s->n; i++) {
        tr_group *g = &s->groups[i];
        s->sum_cpu_self += g->cpu_self;
        if (g->on_gpu)
            s->sum_gpu_self_device += g->gpu_self;
        if (g->gpu_self > 0)
            s->has_gpu = 1;
        if (g->shape_id)
            s->has_shapes = 1;
        if (g->cpu_mem || g->gpu_mem || g->cpu_mem_self || g->gpu_mem_self)
            s->has_mem = 1;
    }
    /* First-appearance order, the order PyTorch's key_averages() yields. */
    tr_summary_sort(s, NULL);
    status = resolve_strings(db, s, err);
    goto out;
nomem:
    status = tr_fail(err, TR_ERR_RUNTIME, "out of memory while grouping events");
out:
    sqlite3_finalize(st);
    tr_i64map_free(&index);
    return status;
}

static const tr_sort_key *sort_by;

static int cmp_groups(const void *pa, const void *pb)
{
    const tr_group *a = pa, *b = pb;
    if (sort_by) {
        double va = sort_by->value(a), vb = sort_by->value(b);
        if (va != vb)
            return va > vb ? -1 : 1;
    }
    /* ties keep first-appearance order: PyTorch's sort is stable */
    if (before(a->first_start, a->first_end, a->first_id, b->first_start, b->first_end, b->first_id))
        return -1;
    return before(b->first_start, b->first_end, b->first_id, a->first_start, a->first_end, a->first_id);
}

void tr_summary_sort(tr_summary *s, const tr_sort_key *key)
{
    sort_by = key;
    if (s->n > 1)
        qsort(s->groups, s->n, sizeof *s->groups, cmp_groups);
}

void tr_summary_free(tr_summary *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->groups[i].name);
        free(s->groups[i].shape);
    }
    free(s->groups);
    memset(s, 0, sizeof *s);
}
