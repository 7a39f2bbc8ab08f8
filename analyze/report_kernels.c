/*
 * report_kernels.c - duration summaries by name in the layout of nsys stats:
 * kernels (cuda_gpu_kern_sum), api (cuda_api_sum) and nvtx (nvtx_sum).
 *
 * Two scans: the first folds durations into groups (count, total, min, max,
 * Welford mean/variance); the second reads the same events in duration order,
 * so every group's durations arrive sorted and its exact median is picked by
 * position, with memory bounded by the number of groups.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/model.h"

#define DURSUM_STATS(first)                                               \
    {"time_pct", "Time (%)", TR_COL_PCT, 0},                              \
    {"total_ns", "Total Time", TR_COL_NS, 0},                             \
    {"instances", first, TR_COL_INT, 0},                                  \
    {"avg_ns", "Avg", TR_COL_NSR, 0},                                     \
    {"med_ns", "Med", TR_COL_NSR, 0},                                     \
    {"min_ns", "Min", TR_COL_NS, 0},                                      \
    {"max_ns", "Max", TR_COL_NS, 0},                                      \
    {"stddev_ns", "StdDev", TR_COL_NSR, 0}
#define NSTATS 8

const tr_report_col tr_dursum_cols[] = {DURSUM_STATS("Instances"), {"name", "Name", TR_COL_STR, 0}, {NULL, NULL, 0, 0}};
static const tr_report_col api_cols[] = {DURSUM_STATS("Num Calls"), {"name", "Name", TR_COL_STR, 0}, {NULL, NULL, 0, 0}};
static const tr_report_col kern_dev_cols[] = {DURSUM_STATS("Instances"), {"device", "Device", TR_COL_STR, 0},
                                              {"name", "Name", TR_COL_STR, 0}, {NULL, NULL, 0, 0}};
static const tr_report_col kern_stream_cols[] = {DURSUM_STATS("Instances"), {"device", "Device", TR_COL_STR, 0},
                                                 {"stream", "Stream", TR_COL_INT, 0},
                                                 {"name", "Name", TR_COL_STR, 0}, {NULL, NULL, 0, 0}};
const tr_report_col tr_nvtx_cols[] = {DURSUM_STATS("Instances"), {"kind", "Kind", TR_COL_STR, 0},
                                      {"name", "Range", TR_COL_STR, 0}, {NULL, NULL, 0, 0}};

const tr_report_param tr_kernels_params[] = {
    {"device", TR_PARAM_FLAG, 0, "1: a row per kernel name and device"},
    {"stream", TR_PARAM_FLAG, 0, "1: a row per kernel name, device and stream"},
    {NULL, 0, 0, NULL},
};
const tr_report_param tr_api_params[] = {{NULL, 0, 0, NULL}};
const tr_report_param tr_nvtx_params[] = {{NULL, 0, 0, NULL}};

enum { BY_NAME, BY_DEVICE, BY_STREAM, BY_KIND };

typedef struct {
    tr_rgroups g;
    tr_rvalues durs;   /* for the medians */
    int by;
    int skip_merged;   /* the scans carry e.flags: leave out merged redispatches */
} dursum;

/* A redispatch merged into its parent op is one call with it (docs/semantics.md),
 * so the ranges and ops summary does not count it again. */
static int left_out(const dursum *d, sqlite3_stmt *st)
{
    return d->skip_merged && (sqlite3_column_int(st, TR_SCAN_NCOLS) & TR_FLAG_MERGED);
}

static int64_t key2(tr_report_ctx *c, const dursum *d, const tr_rev *ev)
{
    (void)c;
    switch (d->by) {
    case BY_DEVICE: return ev->dev;
    case BY_STREAM: return ev->stream;
    case BY_KIND: return ev->kind;
    default: return 0;
    }
}

static tr_status fold(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    dursum *d = arg;
    if (left_out(d, st))
        return TR_OK;
    tr_rgroup *g = tr_rgroups_get(&d->g, ev->name_id, key2(c, d, ev));
    if (!g)
        return tr_report_nomem(c);
    tr_rgroup_add(g, ev->end - ev->start, ev->start);
    if (ev->dev >= 0)
        g->sum[0] = ev->dev;
    (void)tr_rvalues_add(&d->durs, (size_t)(g - d->g.v), ev->end - ev->start);
    return TR_OK;
}

static tr_status median(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    dursum *d = arg;
    if (left_out(d, st))
        return TR_OK;
    tr_rgroup *g = tr_rgroups_find(&d->g, ev->name_id, key2(c, d, ev));
    if (g)
        tr_rgroup_median_feed(g, ev->end - ev->start);
    return TR_OK;
}

/* The rows shared by every duration summary: the statistics, then the keys. */
static tr_status dursum_run(tr_report_ctx *c, tr_rresult *r, unsigned mask, int by, const char *title,
                            const tr_report_col *cols, const char *none)
{
    dursum d;
    memset(&d, 0, sizeof d);
    d.by = by;
    d.skip_merged = (mask & TR_KBIT(TR_KIND_OP)) != 0;
    const char *flags_col = d.skip_merged ? "e.flags" : NULL;
    tr_status st = tr_report_scan(c, mask, 0, NULL, flags_col, NULL, fold, &d);
    /* the medians from the values the scan kept, else from a second scan in
     * duration order */
    if (st == TR_OK && d.g.n && tr_rvalues_select(&d.durs, &d.g, tr_rranks_median) < 0)
        st = tr_report_scan(c, mask, TR_SCAN_NARROW, "e.end_ns - e.start_ns", flags_col, NULL, median, &d);
    tr_rvalues_free(&d.durs);
    if (st == TR_OK)
        st = tr_rgroups_finish(c, &d.g, 1);
    if (st == TR_OK && !d.g.n && tr_rresult_nodata(r, "%s", none))
        st = tr_report_nomem(c);
    double all = 0;
    for (size_t i = 0; i < d.g.n; i++)
        all += (double)d.g.v[i].total;
    tr_rtable *t = st == TR_OK && d.g.n ? tr_rtable_add(r, title, cols) : NULL;
    if (st == TR_OK && d.g.n && !t)
        st = tr_report_nomem(c);
    for (size_t i = 0; st == TR_OK && t && i < d.g.n; i++) {
        const tr_rgroup *g = &d.g.v[i];
        tr_cell *row = tr_rtable_row(t);
        if (!row) {
            st = tr_report_nomem(c);
            break;
        }
        tr_cell_pct(&row[0], (double)g->total, all);
        tr_cell_ns(&row[1], g->total);
        tr_cell_int(&row[2], g->count);
        tr_cell_nsr(&row[3], (double)g->total / (double)g->count);
        tr_cell_nsr(&row[4], tr_rgroup_median(g));
        tr_cell_ns(&row[5], g->min);
        tr_cell_ns(&row[6], g->max);
        tr_cell_nsr(&row[7], tr_rgroup_stddev(g));
        size_t k = NSTATS;
        int bad = 0;
        if (by == BY_DEVICE || by == BY_STREAM) {
            int64_t di = by == BY_DEVICE ? g->k2 : g->sum[0];
            bad |= tr_cell_str(&row[k++], di >= 0 && (size_t)di < c->ndevs ? c->devs[di].label : "?");
        }
        if (by == BY_STREAM) {
            int64_t num;
            if (tr_i64map_get(&c->stream_num, g->k2, &num))
                tr_cell_int(&row[k], num);
            k++;
        }
        if (by == BY_KIND)
            bad |= tr_cell_str(&row[k++], g->k2 > 0 && g->k2 < TR_KIND_COUNT_ ? tr_kinds[g->k2].name : "?");
        bad |= tr_cell_str(&row[k], g->name);
        if (bad)
            st = tr_report_nomem(c);
    }
    tr_rgroups_free(&d.g);
    return st;
}

tr_status tr_report_kernels(tr_report_ctx *c, tr_rresult *r)
{
    int by = c->param[1] ? BY_STREAM : c->param[0] ? BY_DEVICE : BY_NAME;
    return dursum_run(c, r, TR_KBIT(TR_KIND_KERNEL), by, "GPU kernels",
                      by == BY_STREAM ? kern_stream_cols : by == BY_DEVICE ? kern_dev_cols : tr_dursum_cols,
                      "no GPU kernels selected");
}

tr_status tr_report_api(tr_report_ctx *c, tr_rresult *r)
{
    return dursum_run(c, r, TR_KBIT(TR_KIND_RUNTIME) | TR_KBIT(TR_KIND_DRIVER), BY_NAME, "CUDA API calls",
                      api_cols, "no CUDA API calls selected");
}

tr_status tr_report_nvtx(tr_report_ctx *c, tr_rresult *r)
{
    return dursum_run(c, r, TR_KBIT(TR_KIND_RANGE) | TR_KBIT(TR_KIND_OP), BY_KIND, "NVTX ranges and ops",
                      tr_nvtx_cols, "no NVTX ranges, annotations or ops selected");
}
