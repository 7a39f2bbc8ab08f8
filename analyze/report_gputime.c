/*
 * report_gputime.c - the GPU time breakdown of TraceLens's gpu_timeline.
 *
 * GPU activities (kernels, copies, sets) whose launching call is in the trace
 * are classified as TraceLens does: copies are memcpy; kernels with nccl,
 * rccl or cross_device_reduce in the name (any case) are communication;
 * every other kernel and every set is computation, but for ROCm's own copy
 * kernels, which are memcpy.  Each class is a union of intervals.  Activities arrive in
 * start order, so every union is built in one pass with O(1) state, and the
 * set differences TraceLens computes follow from unions alone:
 *   |comm \ comp|          = |comm ∪ comp| - |comp|
 *   |memcpy \ (comp ∪ comm)| = |all| - |comp ∪ comm|
 * time_ns is exact integer ns.  time_ms and percent reproduce TraceLens's own
 * arithmetic where it can be known: TraceLens reads a Kineto file's ts and dur
 * as float64 microseconds, takes t_end = ts + dur in float64, and measures
 * unions and differences of those floats.  For the events of one Kineto time
 * frame (the file's baseTimeNanoseconds, kept by trace-ingest as the meta row
 * time_base_ns.N) the same floats are rebuilt from the ns and measured exactly
 * in 64.64 fixed point, where every such float is exact.  TraceLens's sums of
 * these interval lengths are exact too when the times share one magnitude, as
 * a trace's do (they are multiples of the floats' spacing), so the rows agree
 * to the last bit; else they differ by its rounding, 1e-16 per interval.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

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

/* ---- TraceLens's float microseconds ---------------------------------------
 * A time is held as a 64.64 fixed-point number of microseconds: a float64 of
 * magnitude at least 2^-12 us and below 2^63 us is exact there, and so are sums
 * and differences of such numbers. */
__extension__ typedef __int128 fx;

static fx fx_of(double us) { return (fx)ldexp(us, 64); }
static double fx_us(fx v) { return ldexp((double)v, -64); }

/* n ns as the float64 of n/1000 us: what Python parses from the decimal text
 * the ns came from (any text with at most three decimals). */
static double ns_to_us(int64_t n)
{
    if (n > -(INT64_C(1) << 53) && n < (INT64_C(1) << 53))
        return (double)n / 1000.0;   /* one correctly rounded division */
    if (n % 1000 == 0)
        return (double)(n / 1000);   /* a whole number of us, as Python's int */
    return (double)((long double)n / 1000.0L);
}

typedef struct { fx s, e, total; int open; } fxacc;

static fx fx_add(fxacc *u, fx s, fx e)
{
    if (!u->open) {
        u->s = s, u->e = e, u->open = 1;
        return 0;
    }
    if (s <= u->e) {
        if (e > u->e)
            u->e = e;
        return 0;
    }
    fx gap = s - u->e;
    u->total += u->e - u->s;
    u->s = s, u->e = e;
    return gap;
}

static fx fx_total(const fxacc *u) { return u->total + (u->open ? u->e - u->s : 0); }

/* A scope in TraceLens's floats, valid while all its activities come from
 * Kineto sources with one time base (several sources share no clock). */
typedef struct {
    fxacc comp, comm, mem, cc, all;
    fx first, last, micro, macro;
    int64_t n, base;
    int frame;             /* 0: no activity yet, 1: one Kineto time frame, -1: none (exact ns only) */
} fscope;

static void fscope_add(fscope *f, int cls, int has_base, int64_t base, int64_t st, int64_t en, double micro_us)
{
    if (f->frame < 0)
        return;
    if (!has_base || (f->frame == 1 && base != f->base)) {
        f->frame = -1;
        return;
    }
    f->frame = 1, f->base = base;
    double ts = ns_to_us(st - base);
    fx s = fx_of(ts), e = fx_of(ts + ns_to_us(en - st));   /* t_end = ts + dur, in float64 */
    if (!f->n++)
        f->first = s;
    if (e > f->last || f->n == 1)
        f->last = e;
    fx gap = fx_add(&f->all, s, e);
    if (gap > 0) {
        /* TraceLens compares the float gap with its threshold */
        if (fx_us(gap) < micro_us)
            f->micro += gap;
        else
            f->macro += gap;
    }
    fx_add(cls == 0 ? &f->comp : cls == 1 ? &f->comm : &f->mem, s, e);
    if (cls != 2)
        fx_add(&f->cc, s, e);
}

typedef struct {
    scope *sc;             /* [0] all devices, [1 + i] device i */
    fscope *fs;            /* the same scopes in TraceLens's floats */
    int64_t micro_thresh;
    tr_i64map is_comm;     /* kernel name id -> its class (kernel_class()) */
    tr_i64map base;        /* Kineto source id -> its time base (ns) */
} gt_state;

/* The time base of every Kineto source (meta time_base_ns.N).  A run.db
 * without these rows, or another format, keeps exact ns in every column. */
static tr_status load_bases(tr_report_ctx *c, gt_state *g)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db,
                           "SELECT s.id, m.value FROM sources s JOIN meta m ON m.key = 'time_base_ns.' || s.id "
                           "WHERE s.format = 'kineto'",
                           -1, &st, NULL) != SQLITE_OK)
        return TR_OK;
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 1);
        char *end;
        long long b = v ? strtoll(v, &end, 10) : 0;
        /* within +-2^62 as every kept time is, so start - base cannot overflow */
        if (v && end != v && !*end && b >= -(1LL << 62) && b <= (1LL << 62)
            && tr_i64map_put(&g->base, sqlite3_column_int64(st, 0), b) < 0)
            rc = tr_report_nomem(c);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Communication kernels, as TraceLens names them: "nccl" or "rccl" anywhere
 * in the name, or vLLM's custom all-reduce (cross_device_reduce_1stage,
 * _2stage), any case. */
static const char *const comm_markers[] = {"nccl", "rccl", "cross_device_reduce"};

static int name_is_comm(const char *s)
{
    for (const char *p = s; *p; p++)
        for (size_t m = 0; m < sizeof comm_markers / sizeof comm_markers[0]; m++)
            if (!strncasecmp(p, comm_markers[m], strlen(comm_markers[m])))
                return 1;
    return 0;
}

/* ROCm before 7.2 recorded its own copies as kernels named after the copy
 * (MEMORY_COPY_HOST_TO_DEVICE, __amd_rocclr_copyBuffer...); TraceLens counts
 * them as copies, so that traces of both ROCm versions compare.  Its fill
 * kernels stay computation, as sets are. */
static int name_is_rocm_copy(const char *s)
{
    static const char *const exact[] = {"MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST",
                                        "MEMORY_COPY_DEVICE_TO_DEVICE"};
    size_t n = strlen(s);
    if (n > 3 && !strcmp(s + n - 3, ".kd"))
        n -= 3;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (n == strlen(exact[i]) && !strncmp(s, exact[i], n))
            return 1;
    static const char base[] = "__amd_rocclr_copyBuffer";
    if (n < sizeof base - 1 || strncmp(s, base, sizeof base - 1))
        return 0;
    const char *rest = s + sizeof base - 1, *end = s + n;
    if (end - rest >= 4 && !strncmp(rest, "Rect", 4))
        rest += 4;
    if (end - rest >= 7 && !strncmp(rest, "Aligned", 7))
        rest += 7;
    return rest == end;
}

/* 0 computation, 1 communication, 2 memcpy, for a kernel of this name. */
static int kernel_class(const char *name)
{
    return name_is_rocm_copy(name) ? 2 : name_is_comm(name);
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
        v = kernel_class(name);
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
    int64_t base = 0;
    int has_base = ev->dev >= 0 && tr_i64map_get(&g->base, c->devs[ev->dev].source, &base);
    double micro_us = (double)g->micro_thresh / 1000.0;
    fscope_add(&g->fs[0], cls, has_base, base, ev->start, ev->end, micro_us);
    if (dev)
        fscope_add(&g->fs[1 + ev->dev], cls, has_base, base, ev->start, ev->end, micro_us);
    return TR_OK;
}

static int add_row(tr_rtable *t, const char *device, const char *type, int64_t ns, double us, double total_us)
{
    tr_cell *row = tr_rtable_row(t);
    if (!row || tr_cell_str(&row[0], device) || tr_cell_str(&row[1], type))
        return -1;
    tr_cell_ns(&row[2], ns);
    tr_cell_real(&row[3], us / 1e3);
    tr_cell_pct(&row[4], us, total_us);
    return 0;
}

static int add_scope(tr_rtable *t, const char *device, const scope *s, const fscope *f)
{
    int64_t comp = u_total(&s->comp), cc = u_total(&s->cc), all = u_total(&s->all);
    int64_t total = s->last - s->first;
    fx fcomp = fx_total(&f->comp), fcc = fx_total(&f->cc), fall = fx_total(&f->all);
    fx ftotal = f->last - f->first;
    const struct { const char *type; int64_t ns; fx us; } rows[] = {
        {"computation_time", comp, fcomp},
        {"exposed_comm_time", cc - comp, fcc - fcomp},
        {"exposed_memcpy_time", all - cc, fall - fcc},
        {"busy_time", all, fall},
        {"idle_time", total - all, ftotal - fall},
        {"micro_idle_time", s->micro, f->micro},
        {"macro_idle_time", s->macro, f->macro},
        {"total_time", total, ftotal},
        {"total_comm_time", u_total(&s->comm), fx_total(&f->comm)},
        {"total_memcpy_time", u_total(&s->mem), fx_total(&f->mem)},
    };
    int tl = f->frame == 1;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        if (add_row(t, device, rows[i].type, rows[i].ns, tl ? fx_us(rows[i].us) : (double)rows[i].ns / 1e3,
                    tl ? fx_us(ftotal) : (double)total / 1e3))
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
    tr_i64map_init(&g.base);
    g.sc = calloc(c->ndevs + 1, sizeof *g.sc);
    g.fs = calloc(c->ndevs + 1, sizeof *g.fs);
    tr_status st = g.sc && g.fs ? load_bases(c, &g) : tr_report_nomem(c);
    unsigned mask = (1u << TR_KIND_KERNEL) | (1u << TR_KIND_MEMCPY) | (1u << TR_KIND_MEMSET);
    if (st == TR_OK)
        st = tr_report_scan(c, mask, 0, TR_ORDER_START, NULL, NULL, on_event, &g);
    if (!g.sc || !g.fs) {
        free(g.sc);
        free(g.fs);
        tr_i64map_free(&g.is_comm);
        tr_i64map_free(&g.base);
        return st;
    }
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
        if (!t || add_scope(t, "all", all, &g.fs[0]))
            st = tr_report_nomem(c);
        /* one device: its rows would repeat the overall ones */
        for (size_t i = 0; st == TR_OK && ndev_used > 1 && i < c->ndevs; i++)
            if (g.sc[1 + i].n && add_scope(t, c->devs[i].label, &g.sc[1 + i], &g.fs[1 + i]))
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
    free(g.fs);
    tr_i64map_free(&g.is_comm);
    tr_i64map_free(&g.base);
    return st;
}
