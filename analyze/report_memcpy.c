/*
 * report_memcpy.c - copies by kind (HtoD, DtoH, ... with the host memory kind
 * where the source gives it) and sets: count, bytes, time and the achieved
 * bandwidth, as nsys cuda_gpu_mem_time_sum and cuda_gpu_mem_size_sum together.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_memcpy_cols[] = {
    {"operation", "Operation", TR_COL_STR, 0},
    {"count", "Count", TR_COL_INT, 0},
    {"total_bytes", "Total", TR_COL_BYTES, 0},
    {"avg_bytes", "Avg bytes", TR_COL_REAL, 0},
    {"min_bytes", "Min", TR_COL_BYTES, 0},
    {"max_bytes", "Max", TR_COL_BYTES, 0},
    {"total_ns", "Total Time", TR_COL_NS, 0},
    {"avg_ns", "Avg Time", TR_COL_NSR, 0},
    {"time_pct", "Time (%)", TR_COL_PCT, 0},
    {"gb_per_s", "GB/s", TR_COL_REAL, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_memcpy_params[] = {{NULL, 0, 0, NULL}};

typedef struct {
    char **labels;
    size_t nlabels;
    tr_rgroups g;     /* k1 = label index; sum[0] bytes, sum[1] min bytes, sum[2] max bytes */
} mc_state;

static int64_t label_index(mc_state *m, const char *label)
{
    for (size_t i = 0; i < m->nlabels; i++)
        if (!strcmp(m->labels[i], label))
            return (int64_t)i;
    char **nl = realloc(m->labels, (m->nlabels + 1) * sizeof *nl);
    if (!nl)
        return -1;
    m->labels = nl;
    if (!(nl[m->nlabels] = strdup(label)))
        return -1;
    return (int64_t)m->nlabels++;
}

static tr_status on_event(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    mc_state *m = arg;
    char label[256];
    const char *kind = (const char *)sqlite3_column_text(st, TR_SCAN_NCOLS);
    const char *src = (const char *)sqlite3_column_text(st, TR_SCAN_NCOLS + 1);
    const char *dst = (const char *)sqlite3_column_text(st, TR_SCAN_NCOLS + 2);
    if (ev->kind == TR_KIND_MEMSET)
        snprintf(label, sizeof label, "memset");
    else if (kind && src && dst && *src && *dst)
        snprintf(label, sizeof label, "%s (%s -> %s)", kind, src, dst);
    else
        snprintf(label, sizeof label, "%s", kind && *kind ? kind : "memcpy (kind unknown)");
    int64_t li = label_index(m, label);
    tr_rgroup *g = li < 0 ? NULL : tr_rgroups_get(&m->g, li, 0);
    if (!g)
        return tr_report_nomem(c);
    int64_t b = ev->bytes < 0 ? 0 : ev->bytes;
    if (!g->count || b < g->sum[1])
        g->sum[1] = b;
    if (!g->count || b > g->sum[2])
        g->sum[2] = b;
    tr_sat_acc(&g->sum[0], b);
    tr_rgroup_add(g, ev->end - ev->start, ev->start);
    return TR_OK;
}

tr_status tr_report_memcpy(tr_report_ctx *c, tr_rresult *r)
{
    mc_state m;
    memset(&m, 0, sizeof m);
    tr_status st = tr_report_scan(c, TR_KBIT(TR_KIND_MEMCPY) | TR_KBIT(TR_KIND_MEMSET), 0, NULL,
                                  "c.copy_kind, c.src_kind, c.dst_kind", "LEFT JOIN copies c ON c.event_id = e.id",
                                  on_event, &m);
    if (st == TR_OK)
        st = tr_rgroups_finish(c, &m.g, 0);
    if (st == TR_OK && !m.g.n && tr_rresult_nodata(r, "no GPU copies or sets selected"))
        st = tr_report_nomem(c);
    double all = 0;
    for (size_t i = 0; i < m.g.n; i++)
        all += (double)m.g.v[i].total;
    tr_rtable *t = st == TR_OK && m.g.n ? tr_rtable_add(r, "GPU copies and sets", tr_memcpy_cols) : NULL;
    if (st == TR_OK && m.g.n && !t)
        st = tr_report_nomem(c);
    for (size_t i = 0; st == TR_OK && t && i < m.g.n; i++) {
        const tr_rgroup *g = &m.g.v[i];
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[0], m.labels[g->k1])) {
            st = tr_report_nomem(c);
            break;
        }
        tr_cell_int(&row[1], g->count);
        tr_cell_int(&row[2], g->sum[0]);
        tr_cell_real(&row[3], (double)g->sum[0] / (double)g->count);
        tr_cell_int(&row[4], g->sum[1]);
        tr_cell_int(&row[5], g->sum[2]);
        tr_cell_ns(&row[6], g->total);
        tr_cell_nsr(&row[7], (double)g->total / (double)g->count);
        tr_cell_pct(&row[8], (double)g->total, all);
        /* bytes per ns is GB/s; no bandwidth for zero time */
        if (g->total > 0)
            tr_cell_real(&row[9], (double)g->sum[0] / (double)g->total);
    }
    for (size_t i = 0; i < m.nlabels; i++)
        free(m.labels[i]);
    free(m.labels);
    tr_rgroups_free(&m.g);
    return st;
}
