/*
 * report_gputime.c - the GPU time breakdown of TraceLens's gpu_timeline.
 *
 * GPU activities (kernels, copies, sets) whose launching call is in the trace
 * are classified: copies are memcpy; kernels with nccl or rccl in the name
 * (any case) are communication; every other kernel and every set is
 * computation.  Each class is a union of intervals.  Activities arrive in
 * start order, so every union is built in one pass with O(1) state, and the
 * set differences TraceLens computes follow from unions alone:
 *   |comm \ comp|          = |comm ∪ comp| - |comp|
 *   |memcpy \ (comp ∪ comm)| = |all| - |comp ∪ comm|
 * Times are exact integer ns (TraceLens sums float microseconds).
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_param tr_gpu_time_params[] = {
    {"micro", TR_PARAM_TIME, 10000, "idle gaps shorter than this are micro idle, the rest macro idle"},
    {NULL, 0, 0, NULL},
};

const tr_report_col tr_gpu_time_cols[] = {
    {"device", "Device", TR_COL_STR, 0},
    {"type", "Type", TR_COL_STR, 0},
    {"time_ns", "Time", TR_COL_NS, 0},
    {"time_ms", "Time (ms)", TR_COL_REAL, TR_COL_MACHINE_ONLY},
    {"percent", "Percent", TR_COL_PCT, 0},
    {NULL, NULL, 0, 0},
};

typedef tr_uacc uacc;
typedef tr_gt_scope scope;

/* Adds [s, e); returns the gap before it (0 when it touches or overlaps). */
static int64_t u_add(uacc *u, int64_t s, int64_t e)
{
    if (!u->open) {
        u->s = s, u->e = e, u->open = 1;
        return 0;
    }
    if (s <= u->e) {   /* TraceLens merges touching intervals too */
        if (e > u->e)
            u->e = e;
        return 0;
    }
    int64_t gap = s - u->e;
    u->total += u->e - u->s;
    u->s = s, u->e = e;
    return gap;
}

static int64_t u_total(const uacc *u) { return u->total + (u->open ? u->e - u->s : 0); }
int64_t tr_uacc_total(const tr_uacc *u) { return u_total(u); }

typedef struct {
    scope *sc;             /* [0] all devices, [1 + i] device i */
    int64_t micro_thresh;
    tr_i64map is_comm;     /* kernel name id -> 1 communication, 0 computation */
} gt_state;

static int name_is_comm(const char *s)
{
    for (const char *p = s; *p; p++) {
        char a = (char)tolower((unsigned char)p[0]);
        if ((a == 'n' || a == 'r') && tolower((unsigned char)p[1]) == 'c' && tolower((unsigned char)p[2]) == 'c'
            && tolower((unsigned char)p[3]) == 'l')
            return 1;
    }
    return 0;
}

void tr_gt_scope_add(scope *s, int cls, int64_t st, int64_t en, int64_t micro_thresh)
{
    if (!s->n++)
        s->first = st;
    if (en > s->last || s->n == 1)
        s->last = en;
    int64_t gap = u_add(&s->all, st, en);
    if (gap > 0) {
        if (gap < micro_thresh)
            s->micro += gap, s->nmicro++;
        else
            s->macro += gap, s->nmacro++;
    }
    if (cls == 0)
        u_add(&s->comp, st, en);
    else if (cls == 1)
        u_add(&s->comm, st, en);
    else
        u_add(&s->mem, st, en);
    if (cls != 2)
        u_add(&s->cc, st, en);
}

int tr_gt_class(tr_report_ctx *c, tr_i64map *is_comm, const tr_rev *ev)
{
    if (ev->kind == TR_KIND_MEMCPY)
        return 2;
    if (ev->kind != TR_KIND_KERNEL)
        return 0;
    int64_t v;
    if (!tr_i64map_get(is_comm, ev->name_id, &v)) {
        char *name = tr_report_string(c, ev->name_id);
        if (!name)
            return -1;
        v = name_is_comm(name);
        free(name);
        if (tr_i64map_put(is_comm, ev->name_id, v) < 0)
            return -1;
    }
    return (int)v;
}

static tr_status on_event(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    gt_state *g = arg;
    scope *dev = ev->dev >= 0 ? &g->sc[1 + ev->dev] : NULL;
    if (!ev->parent) {
        /* launched before the profiling window (or by a call the trace lacks): TraceLens leaves it out */
        g->sc[0].excluded++;
        tr_sat_acc(&g->sc[0].excluded_ns, ev->end - ev->start);
        if (dev)
            dev->excluded++, tr_sat_acc(&dev->excluded_ns, ev->end - ev->start);
        return TR_OK;
    }
    int cls = tr_gt_class(c, &g->is_comm, ev);
    if (cls < 0)
        return tr_report_nomem(c);
    tr_gt_scope_add(&g->sc[0], cls, ev->start, ev->end, g->micro_thresh);
    if (dev)
        tr_gt_scope_add(dev, cls, ev->start, ev->end, g->micro_thresh);
    return TR_OK;
}

static int add_row(tr_rtable *t, const char *device, const char *type, int64_t ns, int64_t total)
{
    tr_cell *row = tr_rtable_row(t);
    if (!row || tr_cell_str(&row[0], device) || tr_cell_str(&row[1], type))
        return -1;
    tr_cell_ns(&row[2], ns);
    tr_cell_real(&row[3], (double)ns / 1e6);
    tr_cell_pct(&row[4], (double)ns, (double)total);
    return 0;
}

static int add_scope(tr_rtable *t, const char *device, const scope *s)
{
    int64_t comp = u_total(&s->comp), cc = u_total(&s->cc), all = u_total(&s->all);
    int64_t total = s->last - s->first;
    const struct { const char *type; int64_t ns; } rows[] = {
        {"computation_time", comp},
        {"exposed_comm_time", cc - comp},
        {"exposed_memcpy_time", all - cc},
        {"busy_time", all},
        {"idle_time", total - all},
        {"micro_idle_time", s->micro},
        {"macro_idle_time", s->macro},
        {"total_time", total},
        {"total_comm_time", u_total(&s->comm)},
        {"total_memcpy_time", u_total(&s->mem)},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (add_row(t, device, rows[i].type, rows[i].ns, total))
            return -1;
    return 0;
}

static void fmt_ms(char *b, size_t n, int64_t ns) { snprintf(b, n, "%.6f ms", (double)ns / 1e6); }

tr_status tr_report_gpu_time(tr_report_ctx *c, tr_rresult *r)
{
    gt_state g;
    memset(&g, 0, sizeof g);
    g.micro_thresh = c->param[0];
    tr_i64map_init(&g.is_comm);
    g.sc = calloc(c->ndevs + 1, sizeof *g.sc);
    if (!g.sc)
        return tr_report_nomem(c);
    unsigned mask = (1u << TR_KIND_KERNEL) | (1u << TR_KIND_MEMCPY) | (1u << TR_KIND_MEMSET);
    tr_status st = tr_report_scan(c, mask, 0, TR_ORDER_START, NULL, NULL, on_event, &g);
    const scope *all = &g.sc[0];
    size_t ndev_used = 0;
    for (size_t i = 0; i < c->ndevs; i++)
        ndev_used += g.sc[1 + i].n > 0;
    char ms[64];
    if (st == TR_OK && all->n == 0) {
        if (all->excluded) {
            fmt_ms(ms, sizeof ms, all->excluded_ns);
            if (tr_rresult_nodata(r, "no GPU activity with its launching call in the trace (%lld excluded, %s)",
                                  (long long)all->excluded, ms))
                st = tr_report_nomem(c);
        } else if (tr_rresult_nodata(r, "no GPU activity (kernels, copies, sets) selected")) {
            st = tr_report_nomem(c);
        }
    } else if (st == TR_OK) {
        tr_rtable *t = tr_rtable_add(r, "GPU time breakdown", tr_gpu_time_cols);
        if (!t || add_scope(t, "all", all))
            st = tr_report_nomem(c);
        /* one device: its rows would repeat the overall ones */
        for (size_t i = 0; st == TR_OK && ndev_used > 1 && i < c->ndevs; i++)
            if (g.sc[1 + i].n && add_scope(t, c->devs[i].label, &g.sc[1 + i]))
                st = tr_report_nomem(c);
        char th[64];
        tr_fmt_time(th, sizeof th, (double)g.micro_thresh / 1000.0, TR_UNIT_AUTO);
        if (st == TR_OK && tr_rtable_note(t, "micro idle: gaps shorter than %s (%lld gaps); macro idle: the rest (%lld gaps)",
                                          th, (long long)all->nmicro, (long long)all->nmacro))
            st = tr_report_nomem(c);
        fmt_ms(ms, sizeof ms, all->excluded_ns);
        if (st == TR_OK
            && tr_rtable_note(t, "excluded: %lld GPU activities whose launching call is not in the trace "
                                 "(launched before the profiling window), %s of GPU time",
                              (long long)all->excluded, ms))
            st = tr_report_nomem(c);
        int64_t graphs = st == TR_OK ? tr_report_empty_graph_launches(c) : 0;
        if (graphs && tr_rtable_note(t, "warning: %lld CUDA graph launches have no kernel records in the trace "
                                        "(the graph was traced as a whole): their GPU time is missing, and the "
                                        "GPU may have been busy where this shows it idle", (long long)graphs))
            st = tr_report_nomem(c);
        for (size_t i = 0; st == TR_OK && ndev_used > 1 && i < c->ndevs; i++) {
            const scope *d = &g.sc[1 + i];
            fmt_ms(ms, sizeof ms, d->excluded_ns);
            if (d->excluded && tr_rtable_note(t, "excluded on device %s: %lld, %s", c->devs[i].label,
                                              (long long)d->excluded, ms))
                st = tr_report_nomem(c);
        }
    }
    free(g.sc);
    tr_i64map_free(&g.is_comm);
    return st;
}
