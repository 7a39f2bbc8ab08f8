/*
 * report_nvtxgpu.c - the GPU projection of host ranges (nsys nvtx_gpu_proj_sum):
 * for each instance of an NVTX range, record_function label or op, the GPU
 * activities launched by the API calls inside it on its thread, across
 * streams; their span (first start to last end) and busy time (the union).
 *
 * Host events arrive per thread in start order (longest first on ties), each
 * API call joined with the activities it launched.  A stack holds the open
 * ranges; the activities launched while any range is open go into one buffer,
 * and each range owns the suffix that began when it opened, so a range's
 * activities are sorted and merged when it closes.  Memory is bounded by the
 * activities of the outermost open range.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_nvtx_gpu_cols[] = {
    {"span_pct", "Time (%)", TR_COL_PCT, 0},
    {"total_span_ns", "Total Proj Time", TR_COL_NS, 0},
    {"total_range_ns", "Total Range Time", TR_COL_NS, 0},
    {"instances", "Range Instances", TR_COL_INT, 0},
    {"avg_span_ns", "Proj Avg", TR_COL_NSR, 0},
    {"min_span_ns", "Proj Min", TR_COL_NS, 0},
    {"max_span_ns", "Proj Max", TR_COL_NS, 0},
    {"stddev_span_ns", "Proj StdDev", TR_COL_NSR, 0},
    {"total_busy_ns", "GPU Busy", TR_COL_NS, 0},
    {"busy_pct", "Busy of Proj (%)", TR_COL_PCT, 0},
    {"gpu_ops", "Total GPU Ops", TR_COL_INT, 0},
    {"kind", "Kind", TR_COL_STR, 0},
    {"name", "Range", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_nvtx_gpu_params[] = {{NULL, 0, 0, NULL}};

typedef struct { int64_t s, e; } ival;
typedef struct { int64_t name, kind, start, end; size_t off; int counted; } open_range;

typedef struct {
    tr_report_ctx *c;
    tr_rgroups g;      /* sum[0] range time, sum[1] busy, sum[2] GPU ops */
    ival *buf;
    size_t n, cap;
    open_range *stack;
    size_t depth, scap;
    int64_t without_gpu;
} ng_state;

static int cmp_ival(const void *a, const void *b)
{
    const ival *x = a, *y = b;
    return x->s < y->s ? -1 : x->s > y->s ? 1 : (x->e > y->e) - (x->e < y->e);
}

static tr_status close_top(ng_state *s)
{
    open_range *r = &s->stack[--s->depth];
    size_t k = s->n - r->off;
    if (r->counted) {
        if (!k) {
            s->without_gpu++;
        } else {
            ival *v = s->buf + r->off;
            qsort(v, k, sizeof *v, cmp_ival);
            int64_t busy = 0, cs = v[0].s, ce = v[0].e, last = v[0].e;
            for (size_t i = 1; i < k; i++) {
                if (v[i].e > last)
                    last = v[i].e;
                if (v[i].s <= ce) {
                    if (v[i].e > ce)
                        ce = v[i].e;
                } else {
                    busy += ce - cs;
                    cs = v[i].s, ce = v[i].e;
                }
            }
            busy += ce - cs;
            tr_rgroup *g = tr_rgroups_get(&s->g, r->name, r->kind);
            if (!g)
                return tr_report_nomem(s->c);
            tr_rgroup_add(g, last - v[0].s, r->start);
            tr_sat_acc(&g->sum[0], r->end - r->start);
            tr_sat_acc(&g->sum[1], busy);
            g->sum[2] += (int64_t)k;
        }
    }
    if (!s->depth)
        s->n = 0;
    return TR_OK;
}

static int gpu_ok(tr_report_ctx *c, int64_t stream)
{
    const tr_selection *sel = c->sel;
    if (!sel)
        return 1;
    int64_t v;
    if (sel->has_device && (!tr_i64map_get(&c->stream_dev, stream, &v) || c->devs[v].ordinal != sel->device))
        return 0;
    if (sel->has_stream && (!tr_i64map_get(&c->stream_num, stream, &v) || v != sel->stream))
        return 0;
    return 1;
}

static tr_status walk(ng_state *s)
{
    tr_report_ctx *c = s->c;
    static const char sql[] =
        "SELECT e.id, e.kind, e.name_id, e.start_ns, e.end_ns, e.thread_id, e.flags, g.start_ns, g.end_ns, "
        "g.stream_id FROM events e LEFT JOIN events g ON e.kind IN (4, 5) AND g.parent_id = e.id "
        "AND g.kind IN (7, 8, 9) WHERE e.kind IN (1, 2, 4, 5) AND e.thread_id IS NOT NULL "
        "ORDER BY e.thread_id, e.start_ns, e.end_ns DESC, e.id";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(c->db));
    tr_status rc = TR_OK;
    int64_t prev_id = -1, prev_thread = -1;
    int r;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), thread = sqlite3_column_int64(st, 5);
        int kind = sqlite3_column_int(st, 1);
        int64_t start = sqlite3_column_int64(st, 3), end = sqlite3_column_int64(st, 4);
        if (!tr_times_ok(start, end))
            continue;   /* impossible times: left out, as the scans of the other reports do */
        if (thread != prev_thread)
            while (rc == TR_OK && s->depth)
                rc = close_top(s);
        prev_thread = thread;
        if (id != prev_id) {
            while (rc == TR_OK && s->depth && s->stack[s->depth - 1].end <= start)
                rc = close_top(s);
            /* an async range nests in nothing; a merged redispatch's work is its outer op's */
            if (rc == TR_OK && (kind == TR_KIND_RANGE || kind == TR_KIND_OP)
                && !(sqlite3_column_int(st, 6) & (TR_FLAG_ASYNC | TR_FLAG_MERGED))) {
                tr_rev ev;
                memset(&ev, 0, sizeof ev);
                ev.kind = kind, ev.name_id = sqlite3_column_int64(st, 2), ev.thread = thread, ev.dev = -1;
                int in_time = !c->sel || !c->sel->has_time
                              || (start - c->t0 >= c->sel->time_start && start - c->t0 < c->sel->time_end);
                if (s->depth == s->scap) {
                    size_t nc = s->scap ? s->scap * 2 : 64;
                    open_range *ns = realloc(s->stack, nc * sizeof *ns);
                    if (!ns) {
                        rc = tr_report_nomem(c);
                        break;
                    }
                    s->stack = ns;
                    s->scap = nc;
                }
                /* a range that is not selected still scopes the work of the selected ones around it */
                s->stack[s->depth++] = (open_range){ev.name_id, kind, start, end, s->n,
                                                    in_time && tr_report_selected(c, &ev)};
            }
        }
        prev_id = id;
        if (rc != TR_OK || !s->depth || sqlite3_column_type(st, 7) == SQLITE_NULL)
            continue;
        if (!gpu_ok(c, sqlite3_column_int64(st, 9)))
            continue;
        if (s->n == s->cap) {
            size_t nc = s->cap ? s->cap * 2 : 1024;
            ival *nb = realloc(s->buf, nc * sizeof *nb);
            if (!nb) {
                rc = tr_report_nomem(c);
                break;
            }
            s->buf = nb;
            s->cap = nc;
        }
        int64_t gs = sqlite3_column_int64(st, 7), ge = sqlite3_column_int64(st, 8);
        if (tr_times_ok(gs, ge))
            s->buf[s->n++] = (ival){gs, ge};
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(c->db));
    while (rc == TR_OK && s->depth)
        rc = close_top(s);
    sqlite3_finalize(st);
    return rc;
}

tr_status tr_report_nvtx_gpu(tr_report_ctx *c, tr_rresult *r)
{
    ng_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    tr_status st = walk(&s);
    if (st == TR_OK)
        st = tr_rgroups_finish(c, &s.g, 1);
    if (st == TR_OK && !s.g.n && tr_rresult_nodata(r, "no range, annotation or op launched GPU work"))
        st = tr_report_nomem(c);
    double all = 0;
    for (size_t i = 0; i < s.g.n; i++)
        all += (double)s.g.v[i].total;
    tr_rtable *t = st == TR_OK && s.g.n ? tr_rtable_add(r, "GPU projection of ranges", tr_nvtx_gpu_cols) : NULL;
    if (st == TR_OK && s.g.n && !t)
        st = tr_report_nomem(c);
    for (size_t i = 0; st == TR_OK && t && i < s.g.n; i++) {
        const tr_rgroup *g = &s.g.v[i];
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[11], g->k2 > 0 && g->k2 < TR_KIND_COUNT_ ? tr_kinds[g->k2].name : "?")
            || tr_cell_str(&row[12], g->name)) {
            st = tr_report_nomem(c);
            break;
        }
        tr_cell_pct(&row[0], (double)g->total, all);
        tr_cell_ns(&row[1], g->total);
        tr_cell_ns(&row[2], g->sum[0]);
        tr_cell_int(&row[3], g->count);
        tr_cell_nsr(&row[4], (double)g->total / (double)g->count);
        tr_cell_ns(&row[5], g->min);
        tr_cell_ns(&row[6], g->max);
        tr_cell_nsr(&row[7], tr_rgroup_stddev(g));
        tr_cell_ns(&row[8], g->sum[1]);
        tr_cell_pct(&row[9], (double)g->sum[1], (double)g->total);
        tr_cell_int(&row[10], g->sum[2]);
    }
    if (st == TR_OK && t && s.without_gpu
        && tr_rtable_note(t, "%lld range instances launched no GPU work and are not counted", (long long)s.without_gpu))
        st = tr_report_nomem(c);
    free(s.buf);
    free(s.stack);
    tr_rgroups_free(&s.g);
    return st;
}
