/*
 * report_launch.c - what launching kernels costs (HTA's kernel launch
 * statistics, TraceLens's short-kernel study): per kernel name, the launch
 * call's duration (overhead) and the wait from the call's start to the
 * kernel's start (queue delay), with percentiles; the kernels shorter than
 * their own launch call (launch-bound); and the kernels under a threshold.
 *
 * Percentiles are exact: after the folding scan, one scan in overhead order
 * and one in queue-delay order hand every group its values sorted, and the
 * nearest-rank positions are picked as they pass.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_launch_cols[] = {
    {"kernels", "Kernels", TR_COL_INT, 0},
    {"overhead_avg_ns", "Launch Avg", TR_COL_NSR, 0},
    {"overhead_p50_ns", "Launch p50", TR_COL_NS, 0},
    {"overhead_p95_ns", "Launch p95", TR_COL_NS, 0},
    {"overhead_max_ns", "Launch Max", TR_COL_NS, 0},
    {"queue_avg_ns", "Queue Avg", TR_COL_NSR, 0},
    {"queue_p50_ns", "Queue p50", TR_COL_NS, 0},
    {"queue_p95_ns", "Queue p95", TR_COL_NS, 0},
    {"queue_max_ns", "Queue Max", TR_COL_NS, 0},
    {"launch_bound", "Launch-bound", TR_COL_INT, 0},
    {"launch_bound_pct", "Launch-bound (%)", TR_COL_PCT, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col short_cols[] = {
    {"count", "Count", TR_COL_INT, 0},
    {"count_pct", "Of kernels (%)", TR_COL_PCT, 0},
    {"total_ns", "Total Time", TR_COL_NS, 0},
    {"time_pct", "Of kernel time (%)", TR_COL_PCT, 0},
    {"avg_ns", "Avg", TR_COL_NSR, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_launch_params[] = {
    {"short", TR_PARAM_TIME, 10000, "kernels shorter than this are short kernels"},
    {NULL, 0, 0, NULL},
};

typedef struct {
    tr_rgroups ovh;      /* per name: API durations; sum[0] launch-bound; med_lo/med_hi: p50/p95 */
    tr_rgroups queue;    /* per name: queue delays; med_lo/med_hi: p50/p95 */
    tr_rgroups shorts;   /* per name: short kernels */
    tr_rvalues ovh_vals, queue_vals;   /* for the percentiles */
    int64_t kernels, kernel_ns, linked, bound;
    int64_t short_thresh;
} ln_state;

static int64_t queue_of(const tr_rev *ev)
{
    int64_t q = ev->start - ev->launch_start;
    return q < 0 ? 0 : q;   /* a GPU clock a little behind the host's */
}

static tr_status fold(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    ln_state *s = arg;
    int64_t dur = ev->end - ev->start;
    s->kernels++;
    tr_sat_acc(&s->kernel_ns, dur);
    if (dur < s->short_thresh) {
        tr_rgroup *g = tr_rgroups_get(&s->shorts, ev->name_id, 0);
        if (!g)
            return tr_report_nomem(c);
        tr_rgroup_add(g, dur, ev->start);
    }
    if (!ev->has_launch)
        return TR_OK;
    int64_t api = ev->launch_end - ev->launch_start;
    tr_rgroup *o = tr_rgroups_get(&s->ovh, ev->name_id, 0);
    tr_rgroup *q = o ? tr_rgroups_get(&s->queue, ev->name_id, 0) : NULL;
    if (!q)
        return tr_report_nomem(c);
    tr_rgroup_add(o, api < 0 ? 0 : api, ev->start);
    tr_rgroup_add(q, queue_of(ev), ev->start);
    (void)tr_rvalues_add(&s->ovh_vals, (size_t)(o - s->ovh.v), api < 0 ? 0 : api);
    (void)tr_rvalues_add(&s->queue_vals, (size_t)(q - s->queue.v), queue_of(ev));
    s->linked++;
    if (dur < api) {
        o->sum[0]++;
        s->bound++;
    }
    return TR_OK;
}

/* nearest rank: the value at position ceil(p * n) of the sorted n values */
static int64_t rank_of(int64_t n, double p)
{
    int64_t r = (int64_t)ceil(p * (double)n) - 1;
    return r < 0 ? 0 : r;
}

/* the ranks med_lo and med_hi hold: p50 and p95 */
static void p50_p95(int64_t n, size_t *a, size_t *b)
{
    *a = (size_t)rank_of(n, 0.50);
    *b = (size_t)rank_of(n, 0.95);
}

static void feed(tr_rgroup *g, int64_t v)
{
    if (!g)
        return;
    int64_t pos = g->seen++;
    if (pos == rank_of(g->count, 0.50))
        g->med_lo = v;
    if (pos == rank_of(g->count, 0.95))
        g->med_hi = v;
}

static tr_status by_overhead(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)c, (void)st;
    ln_state *s = arg;
    if (ev->has_launch) {
        int64_t api = ev->launch_end - ev->launch_start;
        feed(tr_rgroups_find(&s->ovh, ev->name_id, 0), api < 0 ? 0 : api);
    }
    return TR_OK;
}

static tr_status by_queue(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)c, (void)st;
    ln_state *s = arg;
    if (ev->has_launch)
        feed(tr_rgroups_find(&s->queue, ev->name_id, 0), queue_of(ev));
    return TR_OK;
}

tr_status tr_report_launch(tr_report_ctx *c, tr_rresult *r)
{
    ln_state s;
    memset(&s, 0, sizeof s);
    s.short_thresh = c->param[0];
    unsigned mask = TR_KBIT(TR_KIND_KERNEL);
    tr_status st = tr_report_scan(c, mask, TR_SCAN_LAUNCH, NULL, NULL, NULL, fold, &s);
    /* the percentiles from the values the scan kept, else from a scan in
     * the order of each */
    if (st == TR_OK && s.linked && tr_rvalues_select(&s.ovh_vals, &s.ovh, p50_p95) < 0)
        st = tr_report_scan(c, mask, TR_SCAN_LAUNCH | TR_SCAN_NARROW, "p.end_ns - p.start_ns", NULL, NULL, by_overhead, &s);
    if (st == TR_OK && s.linked && tr_rvalues_select(&s.queue_vals, &s.queue, p50_p95) < 0)
        st = tr_report_scan(c, mask, TR_SCAN_LAUNCH | TR_SCAN_NARROW, "e.start_ns - p.start_ns", NULL, NULL, by_queue, &s);
    tr_rvalues_free(&s.ovh_vals);
    tr_rvalues_free(&s.queue_vals);
    /* the overhead groups are sorted by total launch time; the queue groups stay indexed */
    if (st == TR_OK)
        st = tr_rgroups_finish(c, &s.ovh, 1);
    if (st == TR_OK && !s.kernels && tr_rresult_nodata(r, "no GPU kernels selected"))
        st = tr_report_nomem(c);
    tr_rtable *t = NULL;
    if (st == TR_OK && s.linked) {
        if (!(t = tr_rtable_add(r, "Kernel launches", tr_launch_cols)))
            st = tr_report_nomem(c);
        for (size_t i = 0; st == TR_OK && i < s.ovh.n; i++) {
            const tr_rgroup *o = &s.ovh.v[i], *q = tr_rgroups_find(&s.queue, o->k1, 0);
            tr_cell *row = tr_rtable_row(t);
            if (!row || !q || tr_cell_str(&row[11], o->name)) {
                st = tr_report_nomem(c);
                break;
            }
            tr_cell_int(&row[0], o->count);
            tr_cell_nsr(&row[1], (double)o->total / (double)o->count);
            tr_cell_ns(&row[2], o->med_lo);
            tr_cell_ns(&row[3], o->med_hi);
            tr_cell_ns(&row[4], o->max);
            tr_cell_nsr(&row[5], (double)q->total / (double)q->count);
            tr_cell_ns(&row[6], q->med_lo);
            tr_cell_ns(&row[7], q->med_hi);
            tr_cell_ns(&row[8], q->max);
            tr_cell_int(&row[9], o->sum[0]);
            tr_cell_pct(&row[10], (double)o->sum[0], (double)o->count);
        }
        if (st == TR_OK
            && tr_rtable_note(t, "launch-bound: %lld of %lld kernels (%.2f%%) ran shorter than their launch call",
                              (long long)s.bound, (long long)s.linked, (double)s.bound * 100.0 / (double)s.linked))
            st = tr_report_nomem(c);
        if (st == TR_OK && s.linked < s.kernels
            && tr_rtable_note(t, "%lld kernels without their launching call in the trace are not in this table",
                              (long long)(s.kernels - s.linked)))
            st = tr_report_nomem(c);
    } else if (st == TR_OK && s.kernels) {
        if (tr_rresult_note(r, "no kernel has its launching call in the trace: no launch statistics"))
            st = tr_report_nomem(c);
    }
    if (st == TR_OK && s.kernels)
        st = tr_rgroups_finish(c, &s.shorts, 1);
    if (st == TR_OK && s.kernels) {
        char th[64];
        tr_fmt_time(th, sizeof th, (double)s.short_thresh / 1000.0, TR_UNIT_AUTO);
        char title[128];
        snprintf(title, sizeof title, "Short kernels (under %s)", th);
        tr_rtable *sk = tr_rtable_add(r, title, short_cols);
        if (!sk)
            st = tr_report_nomem(c);
        int64_t n = 0, ns = 0;
        for (size_t i = 0; st == TR_OK && i < s.shorts.n; i++) {
            const tr_rgroup *g = &s.shorts.v[i];
            tr_cell *row = tr_rtable_row(sk);
            if (!row || tr_cell_str(&row[5], g->name)) {
                st = tr_report_nomem(c);
                break;
            }
            tr_cell_int(&row[0], g->count);
            tr_cell_pct(&row[1], (double)g->count, (double)s.kernels);
            tr_cell_ns(&row[2], g->total);
            tr_cell_pct(&row[3], (double)g->total, (double)s.kernel_ns);
            tr_cell_nsr(&row[4], (double)g->total / (double)g->count);
            n += g->count;
            tr_sat_acc(&ns, g->total);
        }
        if (st == TR_OK
            && tr_rtable_note(sk, "%lld of %lld kernels (%.2f%%) are short; they take %.2f%% of the kernel time",
                              (long long)n, (long long)s.kernels, (double)n * 100.0 / (double)s.kernels,
                              s.kernel_ns > 0 ? (double)ns * 100.0 / (double)s.kernel_ns : 0.0))
            st = tr_report_nomem(c);
    }
    tr_rgroups_free(&s.ovh);
    tr_rgroups_free(&s.queue);
    tr_rgroups_free(&s.shorts);
    return st;
}
