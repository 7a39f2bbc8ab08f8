#include "analyze/compat_torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/checked.h"
#include "lib/model.h"
#include "lib/rundb.h"

typedef struct { int64_t t; int64_t cpu, gpu; } mem_point;   /* prefix sums after t */
typedef struct { int64_t start, end; } span;

static tr_status fail_db(sqlite3 *db, tr_error *err)
{
    return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(db),
                   sqlite3_errmsg(db));
}

static tr_status nomem(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while computing PyTorch's metrics");
}

/* Index of the first point with t > x (upper) or t >= x (lower). */
static size_t bound(const mem_point *p, size_t n, int64_t x, int upper)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (upper ? p[mid].t <= x : p[mid].t < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int cmp_span(const void *a, const void *b)
{
    const span *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

typedef struct {
    int64_t id, start, end, parent;
    int async, memory, gpu_mem;
    int64_t bytes;
} host_row;

static tr_status load_rows(sqlite3 *db, host_row **out, size_t *n, tr_error *err)
{
    sqlite3_stmt *st;
    char sql[320];
    snprintf(sql, sizeof sql,
             "SELECT e.id, e.start_ns, e.end_ns, coalesce(e.parent_id, -1), e.flags, e.kind, "
             "coalesce(e.bytes, 0) FROM events e JOIN kinds k ON k.id = e.kind "
             "WHERE k.on_gpu = 0 AND (e.flags & %d) = 0 ORDER BY e.start_ns, e.id", TR_FLAG_MERGED);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return fail_db(db, err);
    size_t cap = 1024, k = 0;
    host_row *r = malloc(cap * sizeof *r);
    int rc;
    while (r && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            host_row *nr = realloc(r, (cap *= 2) * sizeof *r);
            if (!nr) {
                free(r);
                r = NULL;
                break;
            }
            r = nr;
        }
        int flags = sqlite3_column_int(st, 4);
        int64_t start = sqlite3_column_int64(st, 1), end = sqlite3_column_int64(st, 2);
        if (!tr_times_ok(start, end < start ? start : end))
            continue;   /* times no trace can hold: counted by the summary's own scan */
        r[k++] = (host_row){sqlite3_column_int64(st, 0), start, end < start ? start : end,
                            sqlite3_column_int64(st, 3), (flags & TR_FLAG_ASYNC) != 0,
                            sqlite3_column_int(st, 5) == TR_KIND_MEMORY,
                            (flags & TR_FLAG_GPU_MEMORY) != 0, sqlite3_column_int64(st, 6)};
    }
    if (!r) {
        sqlite3_finalize(st);
        return nomem(err);
    }
    if (rc != SQLITE_DONE) {
        free(r);
        tr_status s = fail_db(db, err);
        sqlite3_finalize(st);
        return s;
    }
    sqlite3_finalize(st);
    *out = r;
    *n = k;
    return TR_OK;
}

tr_status tr_torch_compat_load(sqlite3 *db, tr_torch_compat *tc, tr_error *err)
{
    memset(tc, 0, sizeof *tc);
    tr_i64map_init(&tc->row);
    host_row *rows = NULL;
    size_t n = 0;
    tr_status st = load_rows(db, &rows, &n, err);
    if (st != TR_OK)
        return st;
    size_t nmem = 0, nhost = 0;
    for (size_t i = 0; i < n; i++)
        rows[i].memory ? nmem++ : nhost++;
    mem_point *pts = malloc((nmem + 1) * sizeof *pts);
    span *spans = malloc((nhost + 1) * sizeof *spans);
    int64_t *child_dur = calloc(n + 1, sizeof *child_dur);
    int64_t *child_cmem = calloc(n + 1, sizeof *child_cmem);
    int64_t *child_gmem = calloc(n + 1, sizeof *child_gmem);
    tc->m = calloc(n + 1, sizeof *tc->m);
    tc->claimed = calloc(n + 1, 1);
    tc->n = n;
    if (!pts || !spans || !child_dur || !child_cmem || !child_gmem || !tc->m || !tc->claimed) {
        st = nomem(err);
        goto out;
    }
    /* prefix sums of the allocations, in time order (rows are sorted by start) */
    size_t np = 0, ns = 0;
    int64_t cpu = 0, gpu = 0;
    for (size_t i = 0; i < n; i++) {
        if (tr_i64map_put(&tc->row, rows[i].id, (int64_t)i) < 0) {
            st = nomem(err);
            goto out;
        }
        if (rows[i].memory) {
            tr_sat_acc(rows[i].gpu_mem ? &gpu : &cpu, rows[i].bytes);
            pts[np++] = (mem_point){rows[i].start, cpu, gpu};
        } else {
            spans[ns++] = (span){rows[i].start, rows[i].end};
        }
    }
    /* inclusive memory of each host event: every allocation in [start, end], any thread */
    for (size_t i = 0; i < n; i++) {
        if (rows[i].memory)
            continue;
        size_t lo = bound(pts, np, rows[i].start, 0), hi = bound(pts, np, rows[i].end, 1);
        tr_torch_metrics *m = &tc->m[i];
        if (hi > lo) {
            m->cpu_mem = tr_sat_sub(pts[hi - 1].cpu, lo ? pts[lo - 1].cpu : 0);
            m->gpu_mem = tr_sat_sub(pts[hi - 1].gpu, lo ? pts[lo - 1].gpu : 0);
        }
    }
    /* children sums: PyTorch's tree is ours, with memory events left out */
    for (size_t i = 0; i < n; i++) {
        int64_t p;
        if (rows[i].memory || rows[i].parent < 0 || !tr_i64map_get(&tc->row, rows[i].parent, &p))
            continue;
        tr_sat_acc(&child_dur[p], rows[i].end - rows[i].start);
        tr_sat_acc(&child_cmem[p], tc->m[i].cpu_mem);
        tr_sat_acc(&child_gmem[p], tc->m[i].gpu_mem);
    }
    for (size_t i = 0; i < n; i++) {
        tr_torch_metrics *m = &tc->m[i];
        if (rows[i].memory) {
            *(rows[i].gpu_mem ? &m->gpu_mem : &m->cpu_mem) = rows[i].bytes;
            *(rows[i].gpu_mem ? &m->gpu_mem_self : &m->cpu_mem_self) = rows[i].bytes;
        } else if (!rows[i].async) {
            m->cpu_self = tr_sat_sub(rows[i].end - rows[i].start, child_dur[i]);
            m->cpu_mem_self = tr_sat_sub(m->cpu_mem, child_cmem[i]);
            m->gpu_mem_self = tr_sat_sub(m->gpu_mem, child_gmem[i]);
        }
    }
    /* an allocation inside any host event's window is claimed: no row of its own */
    qsort(spans, ns, sizeof *spans, cmp_span);
    size_t k = 0;
    int64_t reach = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (!rows[i].memory)
            continue;
        int64_t t = rows[i].start;
        while (k < ns && spans[k].start <= t) {
            reach = spans[k].end > reach ? spans[k].end : reach;
            k++;
        }
        tc->claimed[i] = reach >= t;
    }
out:
    free(rows);
    free(pts);
    free(spans);
    free(child_dur);
    free(child_cmem);
    free(child_gmem);
    if (st != TR_OK)
        tr_torch_compat_free(tc);
    return st;
}

const tr_torch_metrics *tr_torch_compat_get(const tr_torch_compat *tc, int64_t id, int *claimed)
{
    int64_t i;
    *claimed = 0;
    if (!tr_i64map_get(&tc->row, id, &i))
        return NULL;
    *claimed = tc->claimed[i];
    return &tc->m[i];
}

void tr_torch_compat_free(tr_torch_compat *tc)
{
    tr_i64map_free(&tc->row);
    free(tc->m);
    free(tc->claimed);
    memset(tc, 0, sizeof *tc);
}
