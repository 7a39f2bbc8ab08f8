/*
 * report_advice.c - findings in the manner of nsys's analysis rules and HTA's
 * and TensorBoard's performance recommendations, each with the events and
 * the time at stake, so that every finding can be checked in the trace.
 *
 * Three scans: API calls (synchronous copies and sets, device-wide syncs);
 * copies with their launching call (pageable memory in async copies); GPU
 * activities in start order (gaps, low-utilisation windows, launch-bound
 * kernels, a dominant short-kernel family).  Memory: per name and per device,
 * plus one word per utilisation window.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_advice_cols[] = {
    {"finding", "Finding", TR_COL_STR, 0},
    {"events", "Events", TR_COL_INT, 0},
    {"time_ns", "Time", TR_COL_NS, 0},
    {"evidence", "Evidence and advice", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_advice_params[] = {
    {"gap", TR_PARAM_TIME, 1000000, "GPU gaps at least this long are findings"},
    {"window", TR_PARAM_TIME, 10000000, "length of the utilisation windows"},
    {"low", TR_PARAM_COUNT, 50, "a window busy less than this percent is a low-utilisation window"},
    {"short", TR_PARAM_TIME, 10000, "kernels shorter than this are short kernels"},
    {NULL, 0, 0, NULL},
};

enum { API_OTHER, API_SYNC_COPY, API_SYNC_SET, API_DEVICE_SYNC, API_ASYNC };

/* The API functions by what they do; names are stored without nsys's _vNNNN suffix. */
static int api_class(const char *n)
{
    static const char *const device_sync[] = {"cudaDeviceSynchronize", "cuCtxSynchronize", "cudaThreadSynchronize"};
    for (size_t i = 0; i < sizeof device_sync / sizeof device_sync[0]; i++)
        if (!strcmp(n, device_sync[i]))
            return API_DEVICE_SYNC;
    int copy = !strncmp(n, "cudaMemcpy", 10) || !strncmp(n, "cuMemcpy", 8);
    int set = !strncmp(n, "cudaMemset", 10) || !strncmp(n, "cuMemset", 8);
    if ((copy || set) && strstr(n, "Async"))
        return API_ASYNC;
    return copy ? API_SYNC_COPY : set ? API_SYNC_SET : API_OTHER;
}

typedef struct {
    int64_t n, ns, first_name;
} finding;

typedef struct {
    tr_i64map cls;                     /* API name id -> class */
    finding sync_copy, sync_set, device_sync, pageable, gaps, launch_bound;
    int64_t kernels, linked, kernel_ns;
    tr_rgroups shorts;
    /* GPU order: per device busy end, all-device union for the windows */
    int64_t *dev_end;
    int *dev_open;
    int64_t gap_min, max_gap, max_gap_dev;
    int64_t first, us, ue;
    int any, uopen;
    int64_t window, *busy;
    size_t nwin, capwin;
    int windows_capped;
} ad_state;

static int classify(tr_report_ctx *c, ad_state *s, int64_t name_id)
{
    int64_t v;
    if (tr_i64map_get(&s->cls, name_id, &v))
        return (int)v;
    char *n = tr_report_string(c, name_id);
    if (!n)
        return -1;
    v = api_class(n);
    free(n);
    return tr_i64map_put(&s->cls, name_id, v) < 0 ? -1 : (int)v;
}

static void note(finding *f, int64_t dur, int64_t name)
{
    if (!f->n++)
        f->first_name = name;
    tr_sat_acc(&f->ns, dur);
}

static tr_status on_api(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    ad_state *s = arg;
    int k = classify(c, s, ev->name_id);
    if (k < 0)
        return tr_report_nomem(c);
    int64_t dur = ev->end - ev->start;
    if (k == API_SYNC_COPY)
        note(&s->sync_copy, dur, ev->name_id);
    else if (k == API_SYNC_SET)
        note(&s->sync_set, dur, ev->name_id);
    else if (k == API_DEVICE_SYNC && (!c->nsteps || tr_report_step_at(c, ev->start) >= 0))
        note(&s->device_sync, dur, ev->name_id);   /* in the step loop, when the run has steps */
    return TR_OK;
}

static tr_status on_copy(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    ad_state *s = arg;
    const char *src = (const char *)sqlite3_column_text(st, TR_SCAN_NCOLS);
    const char *dst = (const char *)sqlite3_column_text(st, TR_SCAN_NCOLS + 1);
    int pageable = (src && !strcmp(src, "Pageable")) || (dst && !strcmp(dst, "Pageable"));
    if (!pageable || !ev->has_launch)
        return TR_OK;
    int k = classify(c, s, ev->launch_name);
    if (k < 0)
        return tr_report_nomem(c);
    if (k == API_ASYNC)
        note(&s->pageable, ev->end - ev->start, ev->launch_name);
    return TR_OK;
}

#define MAX_WINDOWS ((size_t)1 << 22)
#define MIN_FAMILY 20   /* a handful of short kernels is no family worth fusing */

/* Adds a closed busy segment of the all-device union to the windows it covers. */
static int add_busy(ad_state *s, int64_t a, int64_t b)
{
    for (int64_t t = a; t < b;) {
        size_t w = (size_t)((t - s->first) / s->window);
        if (w >= MAX_WINDOWS) {
            s->windows_capped = 1;
            return 0;
        }
        if (w >= s->capwin) {
            size_t nc = s->capwin ? s->capwin * 2 : 1024;
            while (nc <= w)
                nc *= 2;
            int64_t *nb = realloc(s->busy, nc * sizeof *nb);
            if (!nb)
                return -1;
            memset(nb + s->capwin, 0, (nc - s->capwin) * sizeof *nb);
            s->busy = nb;
            s->capwin = nc;
        }
        int64_t wend = s->first + (int64_t)(w + 1) * s->window;
        int64_t e = b < wend ? b : wend;
        s->busy[w] += e - t;
        if (w + 1 > s->nwin)
            s->nwin = w + 1;
        t = e;
    }
    return 0;
}

static tr_status on_gpu(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    ad_state *s = arg;
    int64_t dur = ev->end - ev->start;
    if (!s->any++)
        s->first = ev->start;
    int d = ev->dev < 0 ? (int)c->ndevs : ev->dev;
    if (s->dev_open[d] && ev->start - s->dev_end[d] >= s->gap_min) {
        int64_t g = ev->start - s->dev_end[d];
        note(&s->gaps, g, ev->name_id);
        if (g > s->max_gap)
            s->max_gap = g, s->max_gap_dev = ev->dev;
    }
    if (!s->dev_open[d] || ev->end > s->dev_end[d])
        s->dev_end[d] = ev->end;
    s->dev_open[d] = 1;
    if (s->uopen && ev->start <= s->ue) {
        if (ev->end > s->ue)
            s->ue = ev->end;
    } else {
        if (s->uopen && add_busy(s, s->us, s->ue))
            return tr_report_nomem(c);
        s->us = ev->start, s->ue = ev->end, s->uopen = 1;
    }
    if (ev->kind != TR_KIND_KERNEL)
        return TR_OK;
    s->kernels++;
    tr_sat_acc(&s->kernel_ns, dur);
    if (ev->has_launch) {
        s->linked++;
        if (dur < ev->launch_end - ev->launch_start)
            note(&s->launch_bound, dur, ev->name_id);
    }
    if (dur < c->param[3]) {
        tr_rgroup *g = tr_rgroups_get(&s->shorts, ev->name_id, 0);
        if (!g)
            return tr_report_nomem(c);
        tr_rgroup_add(g, dur, ev->start);
    }
    return TR_OK;
}

static int add_finding(tr_report_ctx *c, tr_rtable *t, const char *id, int64_t n, int64_t ns, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static int add_finding(tr_report_ctx *c, tr_rtable *t, const char *id, int64_t n, int64_t ns, const char *fmt, ...)
{
    (void)c;
    char b[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof b, fmt, ap);
    va_end(ap);
    tr_cell *row = tr_rtable_row(t);
    if (!row || tr_cell_str(&row[0], id) || tr_cell_str(&row[3], b))
        return -1;
    tr_cell_int(&row[1], n);
    tr_cell_ns(&row[2], ns);
    return 0;
}

static void fmt_t(char *b, size_t n, int64_t ns, const tr_report_ctx *c)
{
    tr_fmt_time(b, n, (double)ns / 1000.0, c->o->unit);
}

static tr_status findings(tr_report_ctx *c, tr_rresult *r, ad_state *s)
{
    tr_rtable *t = tr_rtable_add(r, "Findings", tr_advice_cols);
    if (!t)
        return tr_report_nomem(c);
    char a[64], b[64];
    char *name = NULL;
    int bad = 0;
#define NAME(id) (free(name), name = tr_report_string(c, (id)), name ? name : "")
    if (s->sync_copy.n)
        bad |= add_finding(c, t, "sync-memcpy", s->sync_copy.n, s->sync_copy.ns,
                           "synchronous copies (e.g. %s) block the calling thread until the copy ends; use the "
                           "Async form on a stream with pinned host memory", NAME(s->sync_copy.first_name));
    if (s->sync_set.n)
        bad |= add_finding(c, t, "sync-memset", s->sync_set.n, s->sync_set.ns,
                           "synchronous sets (e.g. %s) block the calling thread; use the Async form",
                           NAME(s->sync_set.first_name));
    if (s->pageable.n)
        bad |= add_finding(c, t, "pageable-async-memcpy", s->pageable.n, s->pageable.ns,
                           "async copies (e.g. %s) from or to pageable host memory are staged and run synchronously; "
                           "pin the host buffers (cudaHostAlloc, pin_memory=True)", NAME(s->pageable.first_name));
    if (s->device_sync.n)
        bad |= add_finding(c, t, "device-sync", s->device_sync.n, s->device_sync.ns,
                           "%s waits for all work on the device%s; synchronise on a stream or an event, or not at all",
                           NAME(s->device_sync.first_name), c->nsteps ? " inside the step loop" : "");
    if (s->gaps.n) {
        fmt_t(a, sizeof a, s->max_gap, c);
        fmt_t(b, sizeof b, c->param[0], c);
        bad |= add_finding(c, t, "gpu-gaps", s->gaps.n, s->gaps.ns,
                           "the GPU idled %lld times for %s or more (longest %s on device %s); see --report gaps "
                           "for what the host was doing", (long long)s->gaps.n, b, a,
                           s->max_gap_dev >= 0 && (size_t)s->max_gap_dev < c->ndevs ? c->devs[s->max_gap_dev].label : "?");
    }
    int64_t nlow = 0, low_idle = 0;
    for (size_t w = 0; w < s->nwin; w++) {
        int64_t len = s->window;
        if (w + 1 == s->nwin && s->uopen)   /* the last window ends with the last activity */
            len = s->ue - (s->first + (int64_t)w * s->window);
        if (len > 0 && s->busy[w] * 100 < c->param[2] * len) {
            nlow++;
            tr_sat_acc(&low_idle, len - s->busy[w]);
        }
    }
    if (nlow) {
        fmt_t(a, sizeof a, s->window, c);
        bad |= add_finding(c, t, "low-utilisation", nlow, low_idle,
                           "%lld of %zu windows of %s had the GPU busy less than %lld%% of the time (Time: their "
                           "idle time)%s", (long long)nlow, s->nwin, a, (long long)c->param[2],
                           s->windows_capped ? "; the run is longer than the windows counted" : "");
    }
    if (s->linked && s->launch_bound.n * 10 >= s->linked)
        bad |= add_finding(c, t, "launch-bound", s->launch_bound.n, s->launch_bound.ns,
                           "%.1f%% of the kernels ran shorter than their own launch call (e.g. %s): the GPU waits for "
                           "launches; fuse kernels, use CUDA graphs or torch.compile",
                           (double)s->launch_bound.n * 100.0 / (double)s->linked, NAME(s->launch_bound.first_name));
    size_t top = 0;
    for (size_t i = 1; i < s->shorts.n; i++)
        if (s->shorts.v[i].count > s->shorts.v[top].count)
            top = i;
    if (s->shorts.n && s->shorts.v[top].count * 10 >= s->kernels && s->shorts.v[top].count >= MIN_FAMILY) {
        const tr_rgroup *g = &s->shorts.v[top];
        fmt_t(a, sizeof a, c->param[3], c);
        bad |= add_finding(c, t, "short-kernel-family", g->count, g->total,
                           "%s: %.1f%% of all kernels, each under %s; a candidate for fusion",
                           NAME(g->k1), (double)g->count * 100.0 / (double)s->kernels, a);
    }
#undef NAME
    free(name);
    if (bad)
        return tr_report_nomem(c);
    if (!t->nrows && tr_rtable_note(t, "nothing found: no synchronous copies or sets, no pageable async copies, "
                                       "no device-wide syncs, no long GPU gaps, no low-utilisation windows, "
                                       "no launch-bound kernels, no dominant short-kernel family"))
        return tr_report_nomem(c);
    return TR_OK;
}

tr_status tr_report_advice(tr_report_ctx *c, tr_rresult *r)
{
    ad_state s;
    memset(&s, 0, sizeof s);
    tr_i64map_init(&s.cls);
    s.gap_min = c->param[0] > 0 ? c->param[0] : 1;
    s.window = c->param[1] > 0 ? c->param[1] : 1;
    s.max_gap_dev = -1;
    s.dev_end = calloc(c->ndevs + 1, sizeof *s.dev_end);
    s.dev_open = calloc(c->ndevs + 1, sizeof *s.dev_open);
    tr_status st = s.dev_end && s.dev_open ? TR_OK : tr_report_nomem(c);
    if (st == TR_OK)
        st = tr_report_load_steps(c);
    /* the GPU activities in start order (on_gpu) on a second thread, beside the API
     * calls and the copies: on_gpu fills its own part of s, the other two share
     * the classification of names */
    tr_report_scan_job *gpu = NULL;
    if (st == TR_OK)
        st = tr_report_scan_start(c, &gpu, TR_GPU_KINDS, TR_SCAN_LAUNCH, TR_ORDER_START, NULL, NULL, on_gpu, &s);
    if (st == TR_OK)
        st = tr_report_scan(c, TR_KBIT(TR_KIND_RUNTIME) | TR_KBIT(TR_KIND_DRIVER), 0, NULL, NULL, NULL, on_api, &s);
    if (st == TR_OK)
        st = tr_report_scan(c, TR_KBIT(TR_KIND_MEMCPY), TR_SCAN_LAUNCH, NULL, "c.src_kind, c.dst_kind",
                            "JOIN copies c ON c.event_id = e.id", on_copy, &s);
    st = tr_report_scan_finish(c, gpu, st);
    if (st == TR_OK && s.uopen && add_busy(&s, s.us, s.ue))
        st = tr_report_nomem(c);
    if (st == TR_OK)
        st = findings(c, r, &s);
    tr_i64map_free(&s.cls);
    tr_rgroups_free(&s.shorts);
    free(s.dev_end);
    free(s.dev_open);
    free(s.busy);
    return st;
}
