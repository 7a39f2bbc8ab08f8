/*
 * report_steps.c - one row per ProfilerStep#N.
 *
 * A step's window is the time of its ProfilerStep#N range (over all threads;
 * a window ends where the next step begins).  Work belongs to a step by time
 * window across all threads: host events that start in it, GPU activities
 * whose launching call starts in it, so the backward pass on the autograd
 * thread counts.  The GPU activities of a step get gpu-time's breakdown over
 * the span of that work.  Activities come in start order, and each step's
 * own activities are a subsequence of that order, so every step's unions are
 * built in the same single pass.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_steps_cols[] = {
    {"step", "Step", TR_COL_INT, 0},
    {"wall_ns", "Wall", TR_COL_NS, 0},
    {"gpu_span_ns", "GPU span", TR_COL_NS, 0},
    {"busy_ns", "GPU busy", TR_COL_NS, 0},
    {"busy_pct", "Busy (%)", TR_COL_PCT, 0},
    {"computation_ns", "Computation", TR_COL_NS, 0},
    {"exposed_comm_ns", "Exposed comm", TR_COL_NS, 0},
    {"exposed_memcpy_ns", "Exposed memcpy", TR_COL_NS, 0},
    {"idle_ns", "Idle", TR_COL_NS, 0},
    {"kernels", "Kernels", TR_COL_INT, 0},
    {"slowest", "Slowest", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_steps_params[] = {{NULL, 0, 0, NULL}};

typedef struct {
    tr_gt_scope *sc;      /* per step */
    int64_t *kernels;
    tr_i64map is_comm;
} st_state;

static tr_status on_event(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    st_state *s = arg;
    if (!ev->has_launch)
        return TR_OK;
    long i = tr_report_step_at(c, ev->launch_start);
    if (i < 0 || (c->has_step && (i < (long)c->step_first || i >= (long)(c->step_first + c->step_count))))
        return TR_OK;
    int cls = tr_gt_class(c, &s->is_comm, ev);
    if (cls < 0)
        return tr_report_nomem(c);
    tr_gt_scope_add(&s->sc[i], cls, ev->start, ev->end, 0);
    s->kernels[i] += ev->kind == TR_KIND_KERNEL;
    return TR_OK;
}

tr_status tr_report_steps(tr_report_ctx *c, tr_rresult *r)
{
    tr_status ls = tr_report_load_steps(c);
    if (ls != TR_OK)
        return ls;
    if (!c->nsteps)
        return tr_rresult_nodata(r, "no ProfilerStep#N ranges in the run") ? tr_report_nomem(c) : TR_OK;
    st_state s;
    memset(&s, 0, sizeof s);
    tr_i64map_init(&s.is_comm);
    s.sc = calloc(c->nsteps, sizeof *s.sc);
    s.kernels = calloc(c->nsteps, sizeof *s.kernels);
    tr_status st = s.sc && s.kernels ? TR_OK : tr_report_nomem(c);
    if (st == TR_OK)
        st = tr_report_scan(c, TR_GPU_KINDS, TR_SCAN_LAUNCH, TR_ORDER_START, NULL, NULL, on_event, &s);
    size_t first = c->has_step ? c->step_first : 0, n = c->has_step ? c->step_count : c->nsteps;
    size_t slowest = first;
    int64_t sum_wall = 0;
    for (size_t i = first; i < first + n; i++) {
        if (c->steps[i].end - c->steps[i].start > c->steps[slowest].end - c->steps[slowest].start)
            slowest = i;
        tr_sat_acc(&sum_wall, c->steps[i].end - c->steps[i].start);
    }
    tr_rtable *t = st == TR_OK ? tr_rtable_add(r, "Steps", tr_steps_cols) : NULL;
    if (st == TR_OK && !t)
        st = tr_report_nomem(c);
    for (size_t i = first; st == TR_OK && i < first + n; i++) {
        const tr_gt_scope *g = &s.sc[i];
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[10], i == slowest && n > 1 ? "*" : "")) {
            st = tr_report_nomem(c);
            break;
        }
        int64_t comp = tr_uacc_total(&g->comp), cc = tr_uacc_total(&g->cc), all = tr_uacc_total(&g->all);
        int64_t span = g->n ? g->last - g->first : 0;
        tr_cell_int(&row[0], c->steps[i].step);
        tr_cell_ns(&row[1], c->steps[i].end - c->steps[i].start);
        tr_cell_ns(&row[2], span);
        tr_cell_ns(&row[3], all);
        tr_cell_pct(&row[4], (double)all, (double)span);
        tr_cell_ns(&row[5], comp);
        tr_cell_ns(&row[6], cc - comp);
        tr_cell_ns(&row[7], all - cc);
        tr_cell_ns(&row[8], span - all);
        tr_cell_int(&row[9], s.kernels[i]);
    }
    if (st == TR_OK && n > 1) {
        char b[64];
        tr_fmt_time(b, sizeof b, (double)sum_wall / 1000.0 / (double)n, c->o->unit);
        if (tr_rtable_note(t, "%zu steps, mean wall time %s; slowest: ProfilerStep#%lld", n, b,
                           (long long)c->steps[slowest].step))
            st = tr_report_nomem(c);
    }
    free(s.sc);
    free(s.kernels);
    tr_i64map_free(&s.is_comm);
    return st;
}
