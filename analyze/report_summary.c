/*
 * report_summary.c - the run on one screen: sources, span, processes, threads,
 * devices and streams, events per kind, GPU busy time, the top kernels and ops,
 * and the counts that say how complete the trace is.
 *
 * One unordered scan of the selected events feeds every table but GPU busy,
 * which takes an ordered scan of the GPU activities (one union per device).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/format.h"
#include "lib/model.h"

const tr_report_col tr_summary_cols[] = {
    {"item", "Item", TR_COL_STR, 0},
    {"value", "Value", TR_COL_STR, 0},
    {"number", "Number", TR_COL_INT, TR_COL_MACHINE_ONLY},
    {NULL, NULL, 0, 0},
};
const tr_report_param tr_summary_params[] = {
    {"top", TR_PARAM_COUNT, 10, "rows in the top kernels and top ops tables"},
    {NULL, 0, 0, NULL},
};

static const tr_report_col kind_cols[] = {
    {"kind", "Kind", TR_COL_STR, 0},
    {"events", "Events", TR_COL_INT, 0},
    {"total_ns", "Total Time", TR_COL_NS, 0},
    {"events_pct", "Events (%)", TR_COL_PCT, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col thread_cols[] = {
    {"pid", "PID", TR_COL_INT, 0},
    {"tid", "TID", TR_COL_INT, 0},
    {"events", "Events", TR_COL_INT, 0},
    {"name", "Thread name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col device_cols[] = {
    {"device", "Device", TR_COL_STR, 0},
    {"streams", "Streams", TR_COL_INT, 0},
    {"activities", "GPU activities", TR_COL_INT, 0},
    {"busy_ns", "Busy", TR_COL_NS, 0},
    {"busy_pct", "Busy (%)", TR_COL_PCT, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col top_op_cols[] = {
    {"total_ns", "Total Time", TR_COL_NS, 0},
    {"count", "Count", TR_COL_INT, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};
static const tr_report_col top_cols[] = {
    {"total_ns", "Total Time", TR_COL_NS, 0},
    {"time_pct", "Time (%)", TR_COL_PCT, 0},
    {"count", "Count", TR_COL_INT, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};

typedef struct { int64_t s, e, total; int open; } uacc;
static void u_add(uacc *u, int64_t s, int64_t e)
{
    if (u->open && s <= u->e) {
        if (e > u->e)
            u->e = e;
        return;
    }
    if (u->open)
        u->total += u->e - u->s;
    u->s = s, u->e = e, u->open = 1;
}
static int64_t u_total(const uacc *u) { return u->total + (u->open ? u->e - u->s : 0); }

typedef struct {
    int64_t kind_n[TR_KIND_COUNT_], kind_ns[TR_KIND_COUNT_];
    int64_t events, first, last;
    int64_t unattributed, unattributed_ns, unterminated, async;
    tr_i64map per_thread;       /* thread row -> events */
    tr_rgroups kernels, ops;    /* k2: kind */
    uacc *dev_busy, all_busy;
    int64_t *dev_n, *dev_first, *dev_last;
    int64_t gpu_first, gpu_last, gpu_n;
} sm_state;

static tr_status on_event(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    sm_state *s = arg;
    int flags = sqlite3_column_int(st, TR_SCAN_NCOLS);
    int64_t dur = ev->end - ev->start;
    if (!s->events++ || ev->start < s->first)
        s->first = ev->start;
    if (s->events == 1 || ev->end > s->last)
        s->last = ev->end;
    if (ev->kind > 0 && ev->kind < TR_KIND_COUNT_) {
        s->kind_n[ev->kind]++;
        tr_sat_acc(&s->kind_ns[ev->kind], dur);
    }
    if (ev->on_gpu && !ev->parent)
        s->unattributed++, tr_sat_acc(&s->unattributed_ns, dur);
    if (flags & TR_FLAG_UNTERMINATED)
        s->unterminated++;
    /* overhead rows carry the async bit too (they are on no thread) */
    if ((flags & TR_FLAG_ASYNC) && (ev->kind == TR_KIND_RANGE || ev->kind == TR_KIND_OP))
        s->async++;
    if (ev->thread) {
        int64_t n = 0;
        tr_i64map_get(&s->per_thread, ev->thread, &n);
        if (tr_i64map_put(&s->per_thread, ev->thread, n + 1) < 0)
            return tr_report_nomem(c);
    }
    tr_rgroups *gs = ev->kind == TR_KIND_KERNEL ? &s->kernels
                     : ev->kind == TR_KIND_OP || ev->kind == TR_KIND_RANGE ? &s->ops : NULL;
    if (gs && !(flags & TR_FLAG_MERGED)) {   /* a merged redispatch is its outer op's */
        tr_rgroup *g = tr_rgroups_get(gs, ev->name_id, ev->kind);
        if (!g)
            return tr_report_nomem(c);
        tr_rgroup_add(g, dur, ev->start);
    }
    return TR_OK;
}

static tr_status on_gpu(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)c, (void)st;
    sm_state *s = arg;
    if (!s->gpu_n++ || ev->start < s->gpu_first)
        s->gpu_first = ev->start;
    if (s->gpu_n == 1 || ev->end > s->gpu_last)
        s->gpu_last = ev->end;
    u_add(&s->all_busy, ev->start, ev->end);
    if (ev->dev >= 0) {
        int d = ev->dev;
        if (!s->dev_n[d]++ || ev->start < s->dev_first[d])
            s->dev_first[d] = ev->start;
        if (s->dev_n[d] == 1 || ev->end > s->dev_last[d])
            s->dev_last[d] = ev->end;
        u_add(&s->dev_busy[d], ev->start, ev->end);
    }
    return TR_OK;
}

static int kv(tr_rtable *t, const char *item, const char *value, int has_num, int64_t num)
{
    tr_cell *row = tr_rtable_row(t);
    if (!row || tr_cell_str(&row[0], item) || tr_cell_str(&row[1], value))
        return -1;
    if (has_num)
        tr_cell_int(&row[2], num);
    return 0;
}

static int kv_count(tr_rtable *t, const char *item, int64_t n)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)n);
    return kv(t, item, b, 1, n);
}

static tr_status run_table(tr_report_ctx *c, tr_rresult *r, sm_state *s)
{
    tr_rtable *t = tr_rtable_add(r, "Run", tr_summary_cols);
    if (!t)
        return tr_report_nomem(c);
    t->whole = 1;
    char b[1024], tb[64];
    sqlite3_stmt *st;
    /* the rank a source has, stored or, among several, its order's (lib/ranks.h) */
    if (sqlite3_prepare_v2(c->db, "SELECT id, path, format, coalesce(format_version, ''), coalesce(host, ''), "
                           "coalesce(rank, CASE WHEN (SELECT count(*) FROM sources) > 1 THEN "
                           "(SELECT count(*) FROM sources x WHERE x.id < s.id) END), event_count "
                           "FROM sources s ORDER BY id", -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            char item[32], rank[48] = "";
            snprintf(item, sizeof item, "source %lld", (long long)sqlite3_column_int64(st, 0));
            if (sqlite3_column_type(st, 5) != SQLITE_NULL)
                snprintf(rank, sizeof rank, ", rank %lld", (long long)sqlite3_column_int64(st, 5));
            const char *host = (const char *)sqlite3_column_text(st, 4);
            const char *ver = (const char *)sqlite3_column_text(st, 3);
            snprintf(b, sizeof b, "%s (%s%s%s%s%s%s)", (const char *)sqlite3_column_text(st, 1),
                     (const char *)sqlite3_column_text(st, 2), ver && *ver ? " " : "", ver ? ver : "",
                     host && *host ? ", host " : "", host ? host : "", rank);
            if (kv(t, item, b, 1, sqlite3_column_int64(st, 6))) {
                sqlite3_finalize(st);
                return tr_report_nomem(c);
            }
        }
        sqlite3_finalize(st);
    }
    int64_t span = s->events ? s->last - s->first : 0;
    tr_fmt_time(tb, sizeof tb, (double)span / 1000.0, c->o->unit);
    static const struct { const char *item, *sql; } counts[] = {
        {"processes", "SELECT count(*) FROM processes"},
        {"threads", "SELECT count(*) FROM threads"},
        {"devices", "SELECT count(*) FROM devices"},
        {"streams", "SELECT count(*) FROM streams"},
    };
    if (kv(t, "span", tb, 1, span) || kv_count(t, "events", s->events))
        return tr_report_nomem(c);
    for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++)
        if (kv_count(t, counts[i].item, tr_report_query_i64(c, counts[i].sql)))
            return tr_report_nomem(c);
    int64_t busy = u_total(&s->all_busy);
    if (s->gpu_n) {
        tr_fmt_time(tb, sizeof tb, (double)busy / 1000.0, c->o->unit);
        snprintf(b, sizeof b, "%s, %.2f%% of the span", tb, span > 0 ? (double)busy * 100.0 / (double)span : 0.0);
        if (kv(t, "GPU busy", b, 1, busy))
            return tr_report_nomem(c);
    }
    tr_fmt_time(tb, sizeof tb, (double)s->unattributed_ns / 1000.0, c->o->unit);
    snprintf(b, sizeof b, "%lld (%s) without their launching call in the trace", (long long)s->unattributed, tb);
    if (kv(t, "unattributed GPU activities", b, 1, s->unattributed)
        || kv_count(t, "unterminated ranges", s->unterminated)
        || kv_count(t, "cross-thread ranges", s->async))
        return tr_report_nomem(c);
    int64_t graphs = tr_report_empty_graph_launches(c);
    if (graphs) {
        snprintf(b, sizeof b, "%lld without kernel records: their GPU time is missing", (long long)graphs);
        if (kv(t, "CUDA graph launches", b, 1, graphs))
            return tr_report_nomem(c);
    }
    /* facts an ingest recorded beyond the fixed keys: dropped records, warnings, ...
     * (the total of activities without a launching call: its reasons are shown) */
    if (sqlite3_prepare_v2(c->db, "SELECT key, value FROM meta WHERE key NOT IN "
                           "('schema_version', 'tool_version', 'time_unit', 'generator', 'gpu_unlaunched') "
                           "AND key NOT LIKE 'time\\_base\\_ns.%' ESCAPE '\\' ORDER BY key",
                           -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW)
            if (kv(t, (const char *)sqlite3_column_text(st, 0), (const char *)sqlite3_column_text(st, 1), 0, 0)) {
                sqlite3_finalize(st);
                return tr_report_nomem(c);
            }
        sqlite3_finalize(st);
    }
    return TR_OK;
}

static tr_status kind_table(tr_report_ctx *c, tr_rresult *r, sm_state *s)
{
    tr_rtable *t = tr_rtable_add(r, "Events by kind", kind_cols);
    if (!t)
        return tr_report_nomem(c);
    t->whole = 1;
    for (int k = 1; k < TR_KIND_COUNT_; k++) {
        if (!s->kind_n[k])
            continue;
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[0], tr_kinds[k].name))
            return tr_report_nomem(c);
        tr_cell_int(&row[1], s->kind_n[k]);
        tr_cell_ns(&row[2], s->kind_ns[k]);
        tr_cell_pct(&row[3], (double)s->kind_n[k], (double)s->events);
    }
    return TR_OK;
}

static tr_status thread_table(tr_report_ctx *c, tr_rresult *r, sm_state *s)
{
    if (!s->per_thread.n)
        return TR_OK;
    tr_rtable *t = tr_rtable_add(r, "Threads", thread_cols);
    if (!t)
        return tr_report_nomem(c);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT t.id, p.pid, t.tid, coalesce(s.value, '') FROM threads t "
                           "JOIN processes p ON p.id = t.process_id LEFT JOIN strings s ON s.id = t.name_id "
                           "ORDER BY p.pid, t.tid", -1, &st, NULL) != SQLITE_OK)
        return tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read threads: %s", sqlite3_errmsg(c->db));
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        int64_t n;
        if (!tr_i64map_get(&s->per_thread, sqlite3_column_int64(st, 0), &n))
            continue;
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[3], (const char *)sqlite3_column_text(st, 3))) {
            rc = tr_report_nomem(c);
            break;
        }
        tr_cell_int(&row[0], sqlite3_column_int64(st, 1));
        tr_cell_int(&row[1], sqlite3_column_int64(st, 2));
        tr_cell_int(&row[2], n);
    }
    sqlite3_finalize(st);
    return rc;
}

static tr_status device_table(tr_report_ctx *c, tr_rresult *r, sm_state *s)
{
    if (!c->ndevs)
        return TR_OK;
    tr_rtable *t = tr_rtable_add(r, "Devices", device_cols);
    if (!t)
        return tr_report_nomem(c);
    /* the streams of every device in one pass: a count per device would scan them all each time */
    tr_i64map streams;
    tr_i64map_init(&streams);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT device_id, count(*) FROM streams GROUP BY device_id", -1, &st, NULL)
        != SQLITE_OK)
        return tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read streams: %s", sqlite3_errmsg(c->db));
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW)
        if (tr_i64map_put(&streams, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0)
            rc = tr_report_nomem(c);
    sqlite3_finalize(st);
    if (rc == TR_OK && sqlite3_prepare_v2(c->db, "SELECT coalesce(s.value, ''), d.compute_major, d.compute_minor "
                                          "FROM devices d LEFT JOIN strings s ON s.id = d.name_id WHERE d.id = ?",
                                          -1, &st, NULL) != SQLITE_OK)
        rc = tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read devices: %s", sqlite3_errmsg(c->db));
    if (rc != TR_OK) {
        tr_i64map_free(&streams);
        return rc;
    }
    for (size_t i = 0; rc == TR_OK && i < c->ndevs; i++) {
        sqlite3_bind_int64(st, 1, c->devs[i].id);
        char name[512] = "";
        int64_t nstreams = 0;
        tr_i64map_get(&streams, c->devs[i].id, &nstreams);
        if (sqlite3_step(st) == SQLITE_ROW) {
            const char *nm = (const char *)sqlite3_column_text(st, 0);
            if (sqlite3_column_type(st, 1) != SQLITE_NULL)
                snprintf(name, sizeof name, "%s (sm %d.%d)", nm, sqlite3_column_int(st, 1), sqlite3_column_int(st, 2));
            else
                snprintf(name, sizeof name, "%s", nm);
        }
        sqlite3_reset(st);
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[0], c->devs[i].label) || tr_cell_str(&row[5], name)) {
            rc = tr_report_nomem(c);
            break;
        }
        tr_cell_int(&row[1], nstreams);
        tr_cell_int(&row[2], s->dev_n[i]);
        int64_t busy = u_total(&s->dev_busy[i]);
        tr_cell_ns(&row[3], busy);
        /* busy over the span of this device's own activity */
        if (s->dev_n[i])
            tr_cell_pct(&row[4], (double)busy, (double)(s->dev_last[i] - s->dev_first[i]));
    }
    sqlite3_finalize(st);
    tr_i64map_free(&streams);
    return rc;
}

/* Kernels get their share of the kernel time; ops and ranges nest, so their
 * inclusive times have no common whole and get none. */
static tr_status top_table(tr_report_ctx *c, tr_rresult *r, tr_rgroups *g, const char *title, int shares)
{
    if (!g->n)
        return TR_OK;
    tr_status rc = tr_rgroups_finish(c, g, 1);
    tr_rtable *t = rc == TR_OK ? tr_rtable_add(r, title, shares ? top_cols : top_op_cols) : NULL;
    if (rc == TR_OK && !t)
        return tr_report_nomem(c);
    double all = 0;
    for (size_t i = 0; i < g->n; i++)
        all += (double)g->v[i].total;
    for (size_t i = 0; rc == TR_OK && i < g->n && (int64_t)i < c->param[0]; i++) {
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[shares ? 3 : 2], g->v[i].name))
            return tr_report_nomem(c);
        tr_cell_ns(&row[0], g->v[i].total);
        if (shares)
            tr_cell_pct(&row[1], (double)g->v[i].total, all);
        tr_cell_int(&row[shares ? 2 : 1], g->v[i].count);
    }
    return rc;
}

tr_status tr_report_summary(tr_report_ctx *c, tr_rresult *r)
{
    sm_state s;
    memset(&s, 0, sizeof s);
    tr_i64map_init(&s.per_thread);
    size_t nd = c->ndevs ? c->ndevs : 1;
    s.dev_busy = calloc(nd, sizeof *s.dev_busy);
    s.dev_n = calloc(nd, sizeof *s.dev_n);
    s.dev_first = calloc(nd, sizeof *s.dev_first);
    s.dev_last = calloc(nd, sizeof *s.dev_last);
    tr_status st = s.dev_busy && s.dev_n && s.dev_first && s.dev_last ? TR_OK : tr_report_nomem(c);
    unsigned all = 0;
    for (int k = 1; k < TR_KIND_COUNT_; k++)
        all |= TR_KBIT(k);
    /* the GPU activities' busy time (on_gpu) on a second thread, beside the scan of
     * every event (on_event): the two fill separate parts of s */
    tr_report_scan_job *gpu = NULL;
    if (st == TR_OK)
        st = tr_report_scan_start(c, &gpu, TR_GPU_KINDS, 0, TR_ORDER_START, NULL, NULL, on_gpu, &s);
    if (st == TR_OK)
        st = tr_report_scan(c, all, 0, NULL, "e.flags", NULL, on_event, &s);
    st = tr_report_scan_finish(c, gpu, st);
    if (st == TR_OK && !s.events) {
        if (tr_rresult_nodata(r, "no events selected"))
            st = tr_report_nomem(c);
    } else if (st == TR_OK) {
        st = run_table(c, r, &s);
        if (st == TR_OK)
            st = kind_table(c, r, &s);
        if (st == TR_OK)
            st = thread_table(c, r, &s);
        if (st == TR_OK)
            st = device_table(c, r, &s);
        if (st == TR_OK)
            st = top_table(c, r, &s.kernels, "Top kernels", 1);
        if (st == TR_OK)
            st = top_table(c, r, &s.ops, "Top ops and ranges", 0);
    }
    tr_i64map_free(&s.per_thread);
    tr_rgroups_free(&s.kernels);
    tr_rgroups_free(&s.ops);
    free(s.dev_busy);
    free(s.dev_n);
    free(s.dev_first);
    free(s.dev_last);
    return st;
}
