/*
 * report_gaps.c - GPU idle intervals per device above a threshold, largest
 * first, each with what the launching host threads were doing when it began.
 *
 * Every GPU activity counts here (launched in the trace or not): a gap is time
 * when the device ran nothing.  Classes follow HTA's idle time breakdown:
 *   kernel wait  the gap is shorter than `kwait`: back-to-back work separated
 *                by launch overhead;
 *   host wait    the next activity's launching call started after the gap
 *                began: the GPU waited for the host to submit work;
 *   other        the next work was already submitted (it waited on a
 *                synchronisation, an event, a copy engine), or its launching
 *                call is not in the trace.
 * One ordered scan of GPU activities finds the gaps (the `top` largest kept);
 * one scan of the launching threads' host events in start order, with a stack
 * of open events, finds the innermost one open at each kept gap's start.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/model.h"

const tr_report_col tr_gaps_cols[] = {
    {"device", "Device", TR_COL_STR, 0},
    {"start_ns", "Start", TR_COL_NS, 0},
    {"gap_ns", "Gap", TR_COL_NS, 0},
    {"class", "Class", TR_COL_STR, 0},
    {"launch_after_ns", "Launched after", TR_COL_NS, 0},
    {"next", "Next GPU work", TR_COL_STR, 0},
    {"host", "Host threads at the gap's start", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col class_cols[] = {
    {"class", "Class", TR_COL_STR, 0},
    {"gaps", "Gaps", TR_COL_INT, 0},
    {"total_ns", "Total", TR_COL_NS, 0},
    {"idle_pct", "Of the gaps (%)", TR_COL_PCT, 0},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_gaps_params[] = {
    {"min", TR_PARAM_TIME, 100000, "gaps shorter than this are not listed"},
    {"top", TR_PARAM_COUNT, 20, "the largest gaps listed"},
    {"kwait", TR_PARAM_TIME, 10000, "gaps shorter than this are kernel wait"},
    {NULL, 0, 0, NULL},
};

enum { KERNEL_WAIT, HOST_WAIT, OTHER, NCLASS };
static const char *const class_names[NCLASS] = {"kernel wait", "host wait", "other"};

#define MAX_LAUNCHERS 8

typedef struct {
    int dev, cls;
    int64_t start, len, launch_after, next_name;
    int has_launch_after;
    int64_t host_name[MAX_LAUNCHERS];
    int host_kind[MAX_LAUNCHERS];
} gap;

typedef struct {
    int64_t *end;            /* per device: end of the busy union so far */
    int *open;
    gap *top;
    size_t ntop, cap;
    int64_t min, kwait;
    int64_t cls_n[NCLASS], cls_ns[NCLASS];
    int64_t launchers[MAX_LAUNCHERS];
    size_t nlaunchers;
    int64_t t0;
    int any;
} gp_state;

static void keep(gp_state *s, const gap *g)
{
    if (!s->cap)
        return;   /* top=0: the totals by class only */
    if (s->ntop < s->cap) {
        s->top[s->ntop++] = *g;
        return;
    }
    size_t min = 0;
    for (size_t i = 1; i < s->ntop; i++)
        if (s->top[i].len < s->top[min].len)
            min = i;
    if (g->len > s->top[min].len)
        s->top[min] = *g;
}

static tr_status on_gpu(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)c, (void)st;
    gp_state *s = arg;
    if (!s->any++)
        s->t0 = ev->start;
    if (ev->has_launch && ev->launch_thread) {
        size_t i = 0;
        while (i < s->nlaunchers && s->launchers[i] != ev->launch_thread)
            i++;
        if (i == s->nlaunchers && i < MAX_LAUNCHERS)
            s->launchers[s->nlaunchers++] = ev->launch_thread;
    }
    int d = ev->dev < 0 ? (int)c->ndevs : ev->dev;   /* the last slot: activities without a device */
    if (s->open[d] && ev->start > s->end[d]) {
        gap g;
        memset(&g, 0, sizeof g);
        g.dev = ev->dev;
        g.start = s->end[d];
        g.len = ev->start - s->end[d];
        g.next_name = ev->name_id;
        if (ev->has_launch && ev->launch_start > g.start) {
            g.cls = HOST_WAIT;
            g.has_launch_after = 1;
            g.launch_after = ev->launch_start - g.start;
        } else {
            g.cls = OTHER;
        }
        if (g.len < s->kwait)
            g.cls = KERNEL_WAIT;
        s->cls_n[g.cls]++;
        tr_sat_acc(&s->cls_ns[g.cls], g.len);
        if (g.len >= s->min)
            keep(s, &g);
    }
    if (!s->open[d] || ev->end > s->end[d])
        s->end[d] = ev->end;
    s->open[d] = 1;
    return TR_OK;
}

/* ---- what each launching thread was inside at each kept gap's start ---- */

typedef struct { int64_t name, end; int kind; } open_ev;

static int cmp_gap_start(const void *a, const void *b)
{
    const gap *x = *(gap *const *)a, *y = *(gap *const *)b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static tr_status host_at_gaps(tr_report_ctx *c, gp_state *s)
{
    if (!s->ntop || !s->nlaunchers)
        return TR_OK;
    gap **by_start = malloc(s->ntop * sizeof *by_start);
    if (!by_start)
        return tr_report_nomem(c);
    for (size_t i = 0; i < s->ntop; i++)
        by_start[i] = &s->top[i];
    qsort(by_start, s->ntop, sizeof *by_start, cmp_gap_start);
    char ids[256] = "";
    size_t k = 0;
    for (size_t i = 0; i < s->nlaunchers; i++)
        k += (size_t)snprintf(ids + k, sizeof ids - k, "%s%lld", i ? "," : "", (long long)s->launchers[i]);
    char *sql = NULL;
    if (asprintf(&sql, "SELECT thread_id, kind, name_id, start_ns, end_ns FROM events WHERE kind IN (1, 2, 4, 5, 6) "
                 "AND thread_id IN (%s) AND flags & 1 = 0 ORDER BY thread_id, start_ns, end_ns DESC, id", ids) < 0) {
        free(by_start);
        return tr_report_nomem(c);
    }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        free(by_start);
        return tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(c->db));
    }
    open_ev *stack = NULL;
    size_t depth = 0, cap = 0, next = 0, slot = 0;
    int64_t thread = -1;
    tr_status res = TR_OK;
    /* resolve the gaps up to time t (exclusive) of the current thread */
#define RESOLVE(t)                                                                     \
    for (; next < s->ntop && by_start[next]->start < (t); next++) {                    \
        while (depth && stack[depth - 1].end <= by_start[next]->start)                 \
            depth--;                                                                   \
        if (depth) {                                                                   \
            by_start[next]->host_name[slot] = stack[depth - 1].name;                   \
            by_start[next]->host_kind[slot] = stack[depth - 1].kind;                   \
        }                                                                              \
    }
    for (;;) {
        int r = sqlite3_step(st);
        int64_t th = r == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -2;
        if (th != thread) {
            if (thread >= 0)
                RESOLVE(INT64_MAX);
            if (r != SQLITE_ROW) {
                if (r != SQLITE_DONE)
                    res = tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(c->db));
                break;
            }
            thread = th;
            depth = 0;
            next = 0;
            for (slot = 0; slot < s->nlaunchers && s->launchers[slot] != th; slot++)
                ;
        }
        int64_t start = sqlite3_column_int64(st, 3), end = sqlite3_column_int64(st, 4);
        if (!tr_times_ok(start, end))
            continue;
        /* the gaps that begin before this event: it was not open at their start */
        RESOLVE(start);
        while (depth && stack[depth - 1].end <= start)
            depth--;
        if (depth == cap) {
            size_t nc = cap ? cap * 2 : 64;
            open_ev *ns = realloc(stack, nc * sizeof *ns);
            if (!ns) {
                res = tr_report_nomem(c);
                break;
            }
            stack = ns;
            cap = nc;
        }
        stack[depth++] = (open_ev){sqlite3_column_int64(st, 2), end, sqlite3_column_int(st, 1)};
    }
#undef RESOLVE
    sqlite3_finalize(st);
    free(stack);
    free(by_start);
    return res;
}

static int cmp_gap_len(const void *a, const void *b)
{
    const gap *x = a, *y = b;
    return x->len > y->len ? -1 : x->len < y->len ? 1 : (x->start > y->start) - (x->start < y->start);
}

static int host_text(tr_report_ctx *c, const gp_state *s, const gap *g, char *b, size_t n)
{
    size_t k = 0;
    b[0] = '\0';
    for (size_t i = 0; i < s->nlaunchers && k < n; i++) {
        int64_t tid = 0;
        tr_i64map_get(&c->thread_tid, s->launchers[i], &tid);
        char *name = g->host_name[i] ? tr_report_string(c, g->host_name[i]) : NULL;
        if (g->host_name[i] && !name)
            return -1;
        if (name)
            k += (size_t)snprintf(b + k, n - k, "%stid %lld: %s (%s)", i ? "; " : "", (long long)tid, name,
                                  tr_kinds[g->host_kind[i] % TR_KIND_COUNT_].name);
        else
            k += (size_t)snprintf(b + k, n - k, "%stid %lld: nothing open", i ? "; " : "", (long long)tid);
        free(name);
    }
    return 0;
}

tr_status tr_report_gaps(tr_report_ctx *c, tr_rresult *r)
{
    gp_state s;
    memset(&s, 0, sizeof s);
    s.min = c->param[0];
    s.cap = c->param[1] > 0 ? (size_t)c->param[1] : 0;
    s.kwait = c->param[2];
    s.end = calloc(c->ndevs + 1, sizeof *s.end);
    s.open = calloc(c->ndevs + 1, sizeof *s.open);
    s.top = calloc(s.cap ? s.cap : 1, sizeof *s.top);
    tr_status st = s.end && s.open && s.top ? TR_OK : tr_report_nomem(c);
    if (st == TR_OK)
        st = tr_report_scan(c, TR_GPU_KINDS, TR_SCAN_LAUNCH, TR_ORDER_START, NULL, NULL, on_gpu, &s);
    if (st == TR_OK)
        st = host_at_gaps(c, &s);
    int64_t ngaps = s.cls_n[0] + s.cls_n[1] + s.cls_n[2], gap_ns = s.cls_ns[0] + s.cls_ns[1] + s.cls_ns[2];
    if (st == TR_OK && !s.any && tr_rresult_nodata(r, "no GPU activity selected"))
        st = tr_report_nomem(c);
    else if (st == TR_OK && s.any && !ngaps && tr_rresult_nodata(r, "the GPU never idled between activities"))
        st = tr_report_nomem(c);
    if (st == TR_OK && ngaps) {
        qsort(s.top, s.ntop, sizeof *s.top, cmp_gap_len);
        char th[64], title[128];
        tr_fmt_time(th, sizeof th, (double)s.min / 1000.0, TR_UNIT_AUTO);
        snprintf(title, sizeof title, "GPU gaps of %s or more, largest first", th);
        tr_rtable *t = tr_rtable_add(r, title, tr_gaps_cols);
        if (!t)
            st = tr_report_nomem(c);
        char host[4096];
        for (size_t i = 0; st == TR_OK && i < s.ntop; i++) {
            const gap *g = &s.top[i];
            tr_cell *row = tr_rtable_row(t);
            char *next = row ? tr_report_string(c, g->next_name) : NULL;
            if (!next || host_text(c, &s, g, host, sizeof host)
                || tr_cell_str(&row[0], g->dev >= 0 ? c->devs[g->dev].label : "?")
                || tr_cell_str(&row[3], class_names[g->cls]) || tr_cell_str(&row[5], next)
                || tr_cell_str(&row[6], host)) {
                free(next);
                st = tr_report_nomem(c);
                break;
            }
            free(next);
            tr_cell_ns(&row[1], g->start - s.t0);
            tr_cell_ns(&row[2], g->len);
            if (g->has_launch_after)
                tr_cell_ns(&row[4], g->launch_after);
        }
        if (st == TR_OK && tr_rtable_note(t, "Start is from the first GPU activity; Launched after: from the gap's "
                                             "start to the next activity's launching call"))
            st = tr_report_nomem(c);
        tr_rtable *ct = st == TR_OK ? tr_rtable_add(r, "All gaps by class", class_cols) : NULL;
        if (st == TR_OK && !ct)
            st = tr_report_nomem(c);
        for (int k = 0; st == TR_OK && k < NCLASS; k++) {
            tr_cell *row = tr_rtable_row(ct);
            if (!row || tr_cell_str(&row[0], class_names[k])) {
                st = tr_report_nomem(c);
                break;
            }
            tr_cell_int(&row[1], s.cls_n[k]);
            tr_cell_ns(&row[2], s.cls_ns[k]);
            tr_cell_pct(&row[3], (double)s.cls_ns[k], (double)gap_ns);
        }
    }
    free(s.end);
    free(s.open);
    free(s.top);
    return st;
}
