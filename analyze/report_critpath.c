/*
 * report_critpath.c - the critical path of each step across ranks, and the
 * slack of every op of the step (docs/reports.md, "critical-path").
 *
 * A step is the ProfilerStep#N window of every rank that has it.  Its events
 * (host events that start in a rank's window, GPU work whose launching call
 * does) are the nodes of a graph whose edges say what an event waited for:
 *   thread    the event before it on its thread (end -> start)
 *   nested    its enclosing event on the thread (start -> start)
 *   returns   an enclosing event ends after its children (child end -> end)
 *   launch    a kernel, copy or set starts after its launching call (end -> start)
 *   stream    GPU work starts after the work before it on its stream (end -> start)
 *   sync      a synchronising call ends after the last GPU work it waits for:
 *             the work last launched on each stream of its rank (end -> end)
 *   collective a collective ends on every rank only after the last rank
 *             arrived: each part's start -> a join at the last arrival -> each
 *             part's end
 * Times are aligned to rank 0's clock with the offsets of lib/collectives.h.
 * The path is walked back from the event that ends last: at an event's end,
 * through the end edge that released it last when that was after its start;
 * else from its start, through the start edge that was ready last.  Slack is
 * the classical backward pass over the same edges: how far an event's end
 * (or start) may move before the step's end moves.
 *
 * Memory: one step's events at a time.  Each run.db is read once, ordered by
 * the time that places an event in a step (its start; for GPU work its
 * launching call's start), and a step is computed and freed as soon as every
 * run.db has been read past its windows.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report_ranks.h"
#include "lib/checked.h"
#include "lib/collectives.h"
#include "lib/format.h"
#include "lib/model.h"

const tr_report_param tr_critpath_params[] = {
    {"top", TR_PARAM_COUNT, 10, "ops off the path with the least slack, listed per step"},
    {"all", TR_PARAM_FLAG, 0, "1: the path of every step (default: of the slowest step)"},
    {NULL, 0, 0, NULL},
};

const tr_report_col tr_critpath_cols[] = {
    {"step", "Step", TR_COL_INT, 0},
    {"pos", "#", TR_COL_INT, 0},
    {"rank", "Rank", TR_COL_INT, 0},
    {"kind", "Kind", TR_COL_STR, 0},
    {"start_ns", "Start", TR_COL_NS, 0},
    {"dur_ns", "Duration", TR_COL_NS, 0},
    {"path_ns", "On path", TR_COL_NS, 0},
    {"wait_ns", "Wait before", TR_COL_NS, 0},
    {"slack_ns", "Slack", TR_COL_NS, 0},
    {"type", "After", TR_COL_STR, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};

static const tr_report_col step_cols[] = {
    {"step", "Step", TR_COL_INT, 0},
    {"ranks", "Ranks", TR_COL_INT, 0},
    {"span_ns", "Span", TR_COL_NS, 0},
    {"path_from_ns", "Path from", TR_COL_NS, 0},
    {"host_ns", "Host", TR_COL_NS, 0},
    {"gpu_ns", "GPU compute", TR_COL_NS, 0},
    {"comm_ns", "Communication", TR_COL_NS, 0},
    {"wait_ns", "Waits", TR_COL_NS, 0},
    {"ops", "Ops on path", TR_COL_INT, 0},
    {"end_rank", "Ends on", TR_COL_INT, 0},
    {"top_rank", "Most on path", TR_COL_INT, 0},
    {"top_rank_ns", "Its time", TR_COL_NS, 0},
    {NULL, NULL, 0, 0},
};

static const tr_report_col slack_cols[] = {
    {"step", "Step", TR_COL_INT, 0},
    {"rank", "Rank", TR_COL_INT, 0},
    {"kind", "Kind", TR_COL_STR, 0},
    {"start_ns", "Start", TR_COL_NS, 0},
    {"dur_ns", "Duration", TR_COL_NS, 0},
    {"slack_ns", "Slack", TR_COL_NS, 0},
    {"name", "Name", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};

/* ---- the graph of one step ---- */

enum { CL_HOST, CL_GPU, CL_COMM, CL_JOIN };
enum { E_THREAD, E_NESTED, E_RETURNS, E_LAUNCH, E_STREAM, E_SYNC, E_COLL_IN, E_COLL_OUT, E_NONE };
static const char *const edge_names[] = {"thread", "nested", "returns", "launch", "stream", "sync",
                                         "collective", "collective", ""};

#define NO_TIME INT64_MIN

typedef struct {
    int64_t id, name_id, s, e, key, thread, stream, parent;
    int64_t ss, se;          /* slack of the start and of the end */
    int64_t tb, sb;          /* the latest ready time over the end edges, the start edges; NO_TIME: none */
    uint32_t db, rank;       /* rank: index into the tr_rk_set */
    int32_t call;            /* collective call, -1 */
    uint8_t kind, cls, sync, on_path;
    uint8_t seen;            /* the walk reached its start (1), its end (2) */
    uint32_t in_s, n_s, in_e, n_e;   /* the edges into the start and into the end (sorted edges) */
} cp_node;

typedef struct {
    uint32_t from, to;
    uint8_t type, from_end, to_end;
} cp_edge;

typedef struct {
    cp_node *v;
    size_t n, cap;
} cp_nodes;

typedef struct {
    uint32_t node;
    int64_t path, wait;      /* its time on the path, and the wait before that */
    uint8_t link;            /* the edge to the row before it in time */
} cp_row;

/* A row of the path table, kept until the slowest step is known. */
typedef struct {
    int64_t rank, start, dur, path, wait, slack, name_id;
    uint32_t db;
    uint8_t kind, link;
} cp_prow;

typedef struct {
    cp_prow *v;
    size_t n, cap;
    int64_t step, span;
} cp_path;

/* ---- one run.db being read ---- */

typedef struct {
    sqlite3 *db;
    sqlite3_stmt *st, *name_st;
    FILE *spill;             /* several run.dbs: the rows, read once in order */
    int has_row, done;
    cp_node row;             /* the row read ahead */
    int64_t row_source;
    tr_i64map thread_src, stream_src;   /* threads.id, streams.id -> sources.id */
    tr_i64map name_class;    /* name id << 5 | kind -> 1 sync, 2 collective kernel, 0 neither */
} cp_db;

typedef struct {
    tr_report_ctx *c;
    tr_rk_set rs;
    int64_t *offset;         /* per rank index: add to its times */
    tr_coll_set coll;
    tr_i64map call_of;       /* (db << 48 | event id) -> call index */
    cp_db *dbs;
    size_t ndbs;
    int64_t *steps;          /* the selected step numbers, ascending */
    size_t nsteps, cur;
    cp_nodes *bucket;        /* per selected step */
    /* scratch of one step, reused */
    cp_edge *ed;
    size_t ned, caped;
    uint32_t *order, *parts;
    cp_row *rows;
    size_t nrows, caprows;
    int64_t path_from;       /* where the walk ended: the chain's first point */
    tr_rtable *t_path, *t_steps, *t_slack;
    int64_t top, all;
    cp_path pcur, pbest;     /* this step's path; the slowest step's so far */
} cp_state;

static int64_t db_key(size_t db, int64_t id) { return (int64_t)((uint64_t)db << 48 | ((uint64_t)id & 0xffffffffffffull)); }

static tr_status cp_db_error(cp_state *s, sqlite3 *db)
{
    return tr_fail(s->c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(db));
}

/* What a name stands for: a synchronising call (it returns when GPU work is
 * done), a collective kernel, or neither. */
static int name_class(const char *n, int kind)
{
    char op[32];
    if (kind == TR_KIND_KERNEL)
        return tr_coll_kernel_op(n, op, sizeof op) ? 2 : 0;
    if (kind == TR_KIND_SYNC)
        return 1;
    if (kind != TR_KIND_RUNTIME && kind != TR_KIND_DRIVER)
        return 0;
    if (strstr(n, "Synchronize"))
        return 1;
    /* a copy or set without Async waits for the work before it, then for itself */
    if ((!strncmp(n, "cudaMemcpy", 10) || !strncmp(n, "cuMemcpy", 8) || !strncmp(n, "cudaMemset", 10)
         || !strncmp(n, "cuMemset", 8))
        && !strstr(n, "Async"))
        return 1;
    return 0;
}

static tr_status cp_db_open(cp_state *s, cp_db *d, sqlite3 *db)
{
    d->db = db;
    tr_i64map_init(&d->thread_src);
    tr_i64map_init(&d->stream_src);
    tr_i64map_init(&d->name_class);
    static const struct { const char *sql; size_t map; } maps[] = {
        {"SELECT t.id, p.source_id FROM threads t JOIN processes p ON p.id = t.process_id",
         offsetof(cp_db, thread_src)},
        {"SELECT m.id, d.source_id FROM streams m JOIN devices d ON d.id = m.device_id", offsetof(cp_db, stream_src)},
    };
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, maps[i].sql, -1, &st, NULL) != SQLITE_OK)
            return cp_db_error(s, db);
        tr_i64map *m = (tr_i64map *)((char *)d + maps[i].map);
        while (sqlite3_step(st) == SQLITE_ROW)
            if (tr_i64map_put(m, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0) {
                sqlite3_finalize(st);
                return tr_report_nomem(s->c);
            }
        sqlite3_finalize(st);
    }
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &d->name_st, NULL) != SQLITE_OK)
        return cp_db_error(s, db);
    /* host events, syncs and GPU work: what a step waits on.  Marks, memory
     * events and Python frames add nothing to the order; cross-thread ranges
     * and merged redispatches nest in no thread. */
    if (sqlite3_prepare_v2(db,
                           "SELECT e.id, e.kind, e.name_id, e.start_ns, e.end_ns, e.thread_id, e.stream_id, "
                           "CASE WHEN e.kind IN (7, 8, 9) THEN e.parent_id END, p.start_ns "
                           "FROM events e LEFT JOIN events p ON p.id = e.parent_id AND e.kind IN (7, 8, 9) "
                           "WHERE e.kind IN (1, 2, 4, 5, 6, 7, 8, 9) AND (e.flags & 33) = 0 "
                           "ORDER BY coalesce(p.start_ns, e.start_ns), e.id",
                           -1, &d->st, NULL) != SQLITE_OK)
        return cp_db_error(s, db);
    return TR_OK;
}

static void cp_db_close(cp_db *d)
{
    sqlite3_finalize(d->st);
    sqlite3_finalize(d->name_st);
    if (d->spill)
        fclose(d->spill);
    tr_i64map_free(&d->thread_src);
    tr_i64map_free(&d->stream_src);
    tr_i64map_free(&d->name_class);
}

static char *cp_name(cp_db *d, int64_t id)
{
    const char *v = "";
    sqlite3_bind_int64(d->name_st, 1, id);
    if (sqlite3_step(d->name_st) == SQLITE_ROW && sqlite3_column_text(d->name_st, 0))
        v = (const char *)sqlite3_column_text(d->name_st, 0);
    char *r = strdup(v);
    sqlite3_reset(d->name_st);
    return r;
}

/* Reads the next usable row of the query into d->row; d->done at the end. */
static tr_status sql_next(cp_state *s, cp_db *d)
{
    d->has_row = 0;
    while (!d->done) {
        int rc = sqlite3_step(d->st);
        if (rc == SQLITE_DONE) {
            d->done = 1;
            break;
        }
        if (rc != SQLITE_ROW)
            return cp_db_error(s, d->db);
        cp_node *n = &d->row;
        memset(n, 0, sizeof *n);
        n->id = sqlite3_column_int64(d->st, 0);
        n->kind = (uint8_t)sqlite3_column_int(d->st, 1);
        n->name_id = sqlite3_column_int64(d->st, 2);
        n->s = sqlite3_column_int64(d->st, 3);
        n->e = sqlite3_column_int64(d->st, 4);
        n->thread = sqlite3_column_type(d->st, 5) == SQLITE_NULL ? 0 : sqlite3_column_int64(d->st, 5);
        n->stream = sqlite3_column_type(d->st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(d->st, 6);
        n->parent = sqlite3_column_type(d->st, 7) == SQLITE_NULL ? 0 : sqlite3_column_int64(d->st, 7);
        n->key = sqlite3_column_type(d->st, 8) == SQLITE_NULL ? n->s : sqlite3_column_int64(d->st, 8);
        n->call = -1;
        int gpu = n->kind >= TR_KIND_KERNEL && n->kind <= TR_KIND_MEMSET;
        if (!tr_times_ok(n->s, n->e) || !tr_times_ok(n->key, n->key)) {
            s->c->skipped++;
            continue;
        }
        /* Kineto's GPU-side sync markers sit on a stream, not a thread: the call they mirror is read */
        if (gpu ? !n->stream : !n->thread)
            continue;
        if (!tr_i64map_get(gpu ? &d->stream_src : &d->thread_src, gpu ? n->stream : n->thread, &d->row_source))
            continue;
        int64_t cls;
        /* by name and kind: a runtime call and an op may share a name */
        int64_t nk = (int64_t)((uint64_t)n->name_id << 5 | n->kind);
        if (!tr_i64map_get(&d->name_class, nk, &cls)) {
            char *nm = cp_name(d, n->name_id);
            if (!nm)
                return tr_report_nomem(s->c);
            cls = name_class(nm, n->kind);
            free(nm);
            if (tr_i64map_put(&d->name_class, nk, cls) < 0)
                return tr_report_nomem(s->c);
        }
        n->cls = gpu ? (cls == 2 ? CL_COMM : CL_GPU) : CL_HOST;
        n->sync = !gpu && cls == 1;
        d->has_row = 1;
        break;
    }
    return TR_OK;
}

/* A row as spilled: what the step needs of it. */
typedef struct {
    int64_t id, name_id, s, e, key, thread, stream, parent, source;
    uint8_t kind, cls, sync;
} cp_rec;

/* With several run.dbs, each is read in order once into a temporary file:
 * a query ordered by time holds SQLite's sorter (up to 250 pages) open, and
 * one per run.db would grow with the ranks. */
static tr_status spill(cp_state *s, cp_db *d)
{
    if (!(d->spill = tmpfile()))
        return tr_fail(s->c->err, TR_ERR_RUNTIME, "cannot create a temporary file for the critical path");
    tr_status st;
    while ((st = sql_next(s, d)) == TR_OK && d->has_row) {
        const cp_node *n = &d->row;
        cp_rec r = {n->id, n->name_id, n->s, n->e, n->key, n->thread, n->stream, n->parent, d->row_source,
                    n->kind, n->cls, n->sync};
        if (fwrite(&r, sizeof r, 1, d->spill) != 1)
            return tr_fail(s->c->err, TR_ERR_RUNTIME, "cannot write a temporary file for the critical path");
    }
    sqlite3_finalize(d->st);
    d->st = NULL;
    d->done = d->has_row = 0;
    if (st == TR_OK && (fflush(d->spill) || fseek(d->spill, 0, SEEK_SET)))
        st = tr_fail(s->c->err, TR_ERR_RUNTIME, "cannot read back a temporary file for the critical path");
    return st;
}

static tr_status cp_db_next(cp_state *s, cp_db *d)
{
    if (!d->spill)
        return sql_next(s, d);
    cp_rec r;
    d->has_row = 0;
    if (d->done)
        return TR_OK;
    if (fread(&r, sizeof r, 1, d->spill) != 1) {
        d->done = 1;
        return ferror(d->spill) ? tr_fail(s->c->err, TR_ERR_RUNTIME, "cannot read a temporary file") : TR_OK;
    }
    cp_node *n = &d->row;
    memset(n, 0, sizeof *n);
    *n = (cp_node){.id = r.id, .name_id = r.name_id, .s = r.s, .e = r.e, .key = r.key, .thread = r.thread,
                   .stream = r.stream, .parent = r.parent, .call = -1, .kind = r.kind, .cls = r.cls, .sync = r.sync};
    d->row_source = r.source;
    d->has_row = 1;
    return TR_OK;
}

static long step_index(const cp_state *s, int64_t n)
{
    size_t lo = 0, hi = s->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (s->steps[mid] < n)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->nsteps && s->steps[lo] == n ? (long)lo : -1;
}

static int push_node(cp_nodes *b, const cp_node *n)
{
    if (b->n == b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        cp_node *nv = realloc(b->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        b->v = nv;
        b->cap = nc;
    }
    b->v[b->n++] = *n;
    return 0;
}

/* Reads run.db d until its rows are past `until` (its own clock), routing
 * each row to the step whose window holds it on its rank. */
static tr_status cp_db_fill(cp_state *s, size_t di, int64_t until)
{
    cp_db *d = &s->dbs[di];
    for (;;) {
        if (!d->has_row) {
            tr_status st = cp_db_next(s, d);
            if (st != TR_OK)
                return st;
            if (!d->has_row)
                return TR_OK;
        }
        if (d->row.key >= until)
            return TR_OK;
        d->has_row = 0;
        long ri = tr_rk_find(&s->rs, di, d->row_source);
        if (ri < 0)
            continue;
        const tr_rk_rank *r = &s->rs.v[ri];
        long k = tr_rk_step_at(r, d->row.key);
        long b = k < 0 ? -1 : step_index(s, r->steps[k].step);
        if (b < (long)s->cur)
            continue;   /* no step, or one computed already */
        cp_node n = d->row;
        n.db = (uint32_t)di;
        n.rank = (uint32_t)ri;
        int64_t off = s->offset[ri];
        n.s = tr_sat_add(n.s, off);
        n.e = tr_sat_add(n.e, off);
        n.key = tr_sat_add(n.key, off);
        int64_t call;
        if (n.kind == TR_KIND_KERNEL && tr_i64map_get(&s->call_of, db_key(di, n.id), &call))
            n.call = (int32_t)call;
        if (push_node(&s->bucket[b], &n) < 0)
            return tr_report_nomem(s->c);
    }
}

/* ---- building the edges ---- */

static int add_edge(cp_state *s, size_t from, size_t to, int type, int from_end, int to_end)
{
    if (s->ned == s->caped) {
        size_t nc = s->caped ? s->caped * 2 : 1024;
        cp_edge *nv = realloc(s->ed, nc * sizeof *nv);
        if (!nv)
            return -1;
        s->ed = nv;
        s->caped = nc;
    }
    s->ed[s->ned++] = (cp_edge){(uint32_t)from, (uint32_t)to, (uint8_t)type, (uint8_t)from_end, (uint8_t)to_end};
    return 0;
}

static _Thread_local const cp_node *sort_nodes;   /* qsort()'s comparison context */

/* host events by thread, then start, the enclosing one first */
static int cmp_thread(const void *pa, const void *pb)
{
    const cp_node *a = &sort_nodes[*(const uint32_t *)pa], *b = &sort_nodes[*(const uint32_t *)pb];
    if ((a->cls == CL_HOST) != (b->cls == CL_HOST))
        return a->cls == CL_HOST ? -1 : 1;
    if (a->db != b->db)
        return a->db < b->db ? -1 : 1;
    if (a->cls == CL_HOST) {
        if (a->thread != b->thread)
            return a->thread < b->thread ? -1 : 1;
    } else if (a->stream != b->stream) {
        return a->stream < b->stream ? -1 : 1;
    }
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    if (a->e != b->e)
        return a->e > b->e ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static int cmp_edge(const void *pa, const void *pb)
{
    const cp_edge *a = pa, *b = pb;
    /* a total order: which of two equally late edges the walk follows must not depend on qsort */
    if (a->to != b->to)
        return a->to < b->to ? -1 : 1;
    if (a->to_end != b->to_end)
        return a->to_end < b->to_end ? -1 : 1;
    if (a->type != b->type)
        return a->type < b->type ? -1 : 1;
    if (a->from != b->from)
        return a->from < b->from ? -1 : 1;
    return (a->from_end > b->from_end) - (a->from_end < b->from_end);
}

static int64_t point(const cp_node *n, int end) { return end ? n->e : n->s; }

/* Host edges, per thread: each event nests in the innermost open one and returns to
 * it, and follows the last one closed before it.  ord[0..nreal) is sorted by class,
 * then thread; returns where the host events end in it.  The API calls go into api,
 * by id, for the launches. */
static size_t host_edges(cp_state *s, cp_node *v, const uint32_t *ord, size_t nreal,
                         uint32_t *stack, tr_i64map *api, tr_status *st)
{
    size_t i = 0;
    while (*st == TR_OK && i < nreal && v[ord[i]].cls == CL_HOST) {
        size_t j = i, depth = 0;
        long last = -1;
        for (; j < nreal && v[ord[j]].cls == CL_HOST && v[ord[j]].db == v[ord[i]].db
               && v[ord[j]].thread == v[ord[i]].thread; j++) {
            uint32_t x = ord[j];
            while (depth && v[stack[depth - 1]].e <= v[x].s) {
                uint32_t p = stack[--depth];
                if (last < 0 || v[p].e > v[last].e)
                    last = p;
            }
            if ((depth && (add_edge(s, stack[depth - 1], x, E_NESTED, 0, 0)
                           || add_edge(s, x, stack[depth - 1], E_RETURNS, 1, 1)))
                || (last >= 0 && add_edge(s, (size_t)last, x, E_THREAD, 1, 0))
                || (v[x].kind == TR_KIND_RUNTIME || v[x].kind == TR_KIND_DRIVER
                    ? tr_i64map_put(api, db_key(v[x].db, v[x].id), x) < 0 : 0)) {
                *st = tr_report_nomem(s->c);
                break;
            }
            stack[depth++] = x;
        }
        i = j;
    }
    return i;
}

/* GPU edges: stream order and launches; each stream's work is a run of ord[first..nreal). */
static tr_status gpu_edges(cp_state *s, cp_node *v, const uint32_t *ord, size_t first, size_t nreal,
                           tr_i64map *api)
{
    for (size_t i = first; i < nreal; i++) {
        uint32_t x = ord[i];
        int64_t l;
        if (i > first && v[ord[i - 1]].db == v[x].db && v[ord[i - 1]].stream == v[x].stream
            && add_edge(s, ord[i - 1], x, E_STREAM, 1, 0))
            return tr_report_nomem(s->c);
        if (v[x].parent && tr_i64map_get(api, db_key(v[x].db, v[x].parent), &l)
            && add_edge(s, (size_t)l, x, E_LAUNCH, 1, 0))
            return tr_report_nomem(s->c);
    }
    return TR_OK;
}

/* Sync edges: a sync waits for the work last launched (before the call) on each
 * stream of its rank. */
static tr_status sync_edges(cp_state *s, cp_node *v, const uint32_t *ord, size_t gpu_first,
                            size_t nreal)
{
    for (size_t k = 0; k < nreal; k++) {
        if (!v[k].sync)
            continue;
        for (size_t a = gpu_first; a < nreal;) {
            size_t z = a;
            long tail = -1;
            for (; z < nreal && v[ord[z]].db == v[ord[a]].db && v[ord[z]].stream == v[ord[a]].stream; z++)
                if (v[ord[z]].rank == v[k].rank && v[ord[z]].key <= v[k].s
                    && (tail < 0 || v[ord[z]].s >= v[tail].s))
                    tail = ord[z];
            if (tail >= 0 && add_edge(s, (size_t)tail, k, E_SYNC, 1, 1))
                return tr_report_nomem(s->c);
            a = z;
        }
    }
    return TR_OK;
}

/* Collective edges: each part into the join, the join out to each part. */
static tr_status collective_edges(cp_state *s, cp_node *v, size_t nreal, size_t n)
{
    for (size_t k = nreal; k < n; k++)
        for (uint32_t q = v[k].in_s; q < v[k].in_s + v[k].n_s; q++)
            if (add_edge(s, s->parts[q], k, E_COLL_IN, 0, 0) || add_edge(s, k, s->parts[q], E_COLL_OUT, 1, 1))
                return tr_report_nomem(s->c);
    return TR_OK;
}

/* Sorts the edges by target and gives each node its incoming edges at its start and
 * at its end, with the latest time each allows it (tb, sb). */
static void index_incoming(cp_state *s, cp_node *v, size_t n)
{
    if (s->ned > 1)
        qsort(s->ed, s->ned, sizeof *s->ed, cmp_edge);
    for (size_t k = 0; k < n; k++)
        v[k].n_s = v[k].n_e = 0, v[k].tb = v[k].sb = NO_TIME;
    for (size_t k = 0; k < s->ned; k++) {
        cp_edge *e = &s->ed[k];
        cp_node *to = &v[e->to];
        int64_t t = point(&v[e->from], e->from_end);
        if (e->to_end) {
            if (!to->n_e)
                to->in_e = (uint32_t)k;
            to->n_e++;
            if (t > to->tb)
                to->tb = t;
        } else {
            if (!to->n_s)
                to->in_s = (uint32_t)k;
            to->n_s++;
            if (t > to->sb)
                to->sb = t;
        }
    }
}

static tr_status build_edges(cp_state *s, cp_nodes *b)
{
    cp_node *v = b->v;
    size_t n = b->n;
    s->ned = 0;
    uint32_t *ord = realloc(s->order, (n ? n : 1) * sizeof *ord);
    if (!ord)
        return tr_report_nomem(s->c);
    s->order = ord;
    for (size_t i = 0; i < n; i++)
        ord[i] = (uint32_t)i;
    size_t nreal = n;   /* the joins of collectives come last */
    for (size_t i = 0; i < n; i++)
        if (v[i].cls == CL_JOIN)
            nreal = nreal < i ? nreal : i;
    sort_nodes = v;
    qsort(ord, nreal, sizeof *ord, cmp_thread);
    tr_i64map api;
    tr_i64map_init(&api);
    uint32_t *stack = malloc((n ? n : 1) * sizeof *stack);
    tr_status st = stack ? TR_OK : tr_report_nomem(s->c);
    size_t gpu_first = host_edges(s, v, ord, nreal, stack, &api, &st);
    if (st == TR_OK)
        st = gpu_edges(s, v, ord, gpu_first, nreal, &api);
    if (st == TR_OK)
        st = sync_edges(s, v, ord, gpu_first, nreal);
    if (st == TR_OK)
        st = collective_edges(s, v, nreal, n);
    free(stack);
    tr_i64map_free(&api);
    if (st == TR_OK)
        index_incoming(s, v, n);
    return st;
}

static int cmp_call(const void *pa, const void *pb)
{
    const cp_node *a = &sort_nodes[*(const uint32_t *)pa], *b = &sort_nodes[*(const uint32_t *)pb];
    if (a->call != b->call)
        return a->call < b->call ? -1 : 1;
    return (*(const uint32_t *)pa > *(const uint32_t *)pb) - (*(const uint32_t *)pa < *(const uint32_t *)pb);
}

/* One join node per collective call with parts from at least two ranks in
 * the step, at the last part's start; s->parts holds the parts grouped by
 * call, and each join the range of its own. */
static tr_status add_joins(cp_state *s, cp_nodes *b)
{
    size_t n = b->n, m = 0;
    uint32_t *p = realloc(s->parts, (n ? n : 1) * sizeof *p);
    if (!p)
        return tr_report_nomem(s->c);
    s->parts = p;
    for (size_t i = 0; i < n; i++)
        if (b->v[i].call >= 0)
            p[m++] = (uint32_t)i;
    sort_nodes = b->v;
    qsort(p, m, sizeof *p, cmp_call);
    for (size_t i = 0, j; i < m; i = j) {
        int64_t last = NO_TIME;
        for (j = i; j < m && b->v[p[j]].call == b->v[p[i]].call; j++)
            if (b->v[p[j]].s > last)
                last = b->v[p[j]].s;
        if (j - i < 2)
            continue;
        cp_node jn;
        memset(&jn, 0, sizeof jn);
        jn.cls = CL_JOIN;
        jn.call = b->v[p[i]].call;
        jn.s = jn.e = jn.key = last;
        jn.id = -1;
        jn.in_s = (uint32_t)i;     /* the parts, until build_edges() sets the edges */
        jn.n_s = (uint32_t)(j - i);
        if (push_node(b, &jn) < 0)
            return tr_report_nomem(s->c);
    }
    return TR_OK;
}

/* ---- the path and the slack ---- */

static int push_row(cp_state *s, uint32_t node)
{
    if (s->nrows == s->caprows) {
        size_t nc = s->caprows ? s->caprows * 2 : 64;
        cp_row *nv = realloc(s->rows, nc * sizeof *nv);
        if (!nv)
            return -1;
        s->rows = nv;
        s->caprows = nc;
    }
    s->rows[s->nrows++] = (cp_row){node, 0, 0, E_NONE};
    return 0;
}

/* The latest-ready edge of [first, first + n), or -1. */
static long best_edge(const cp_state *s, const cp_node *v, uint32_t first, uint32_t n)
{
    long best = -1;
    int64_t bt = NO_TIME;
    for (uint32_t k = first; k < first + n; k++) {
        const cp_edge *e = &s->ed[k];
        int64_t t = point(&v[e->from], e->from_end);
        if (t > bt || (t == bt && best >= 0 && v[e->from].rank < v[s->ed[best].from].rank)) {
            bt = t;
            best = (long)k;
        }
    }
    return best;
}

static tr_status walk(cp_state *s, cp_nodes *b, size_t term)
{
    cp_node *v = b->v;
    s->nrows = 0;
    size_t cur = term;
    int at_end = 1;
    int64_t T = v[term].e;
    s->path_from = T;
    for (;;) {
        /* a point reached twice: a cycle that skewed clocks made */
        if (v[cur].seen & (at_end ? 2 : 1))
            break;
        v[cur].seen |= at_end ? 2 : 1;
        if (push_row(s, (uint32_t)cur))
            return tr_report_nomem(s->c);
        cp_row *row = &s->rows[s->nrows - 1];
        v[cur].on_path = 1;
        int64_t in = T < point(&v[cur], at_end) ? T : point(&v[cur], at_end);
        /* the wait between where this row ends and where the later one began */
        if (s->nrows > 1)
            s->rows[s->nrows - 2].wait += T - in;
        long ed = -1;
        int64_t leave;
        if (at_end && v[cur].n_e && v[cur].tb > v[cur].s) {
            ed = best_edge(s, v, v[cur].in_e, v[cur].n_e);
            leave = v[cur].tb;
        } else {
            v[cur].seen |= 1;
            leave = v[cur].s;
            if (v[cur].n_s)
                ed = best_edge(s, v, v[cur].in_s, v[cur].n_s);
        }
        if (leave > in)
            leave = in;
        row->path = in - leave;
        T = leave;
        s->path_from = T;
        if (ed < 0)
            break;
        const cp_edge *e = &s->ed[ed];
        row->link = e->type;
        cur = e->from;
        at_end = e->from_end;
    }
    return TR_OK;
}

/* The backward pass: how far each start and end may move before the step's
 * end does.  The edge that was ready last into a point is the one the point
 * waited for: the time from it to the point (queueing, host work between
 * traced calls) moves with it, so it carries the point's slack unchanged;
 * any other edge also carries the time between it and that last one.  An
 * end's last edge competes with the event's start.  Points (2i: start of
 * node i, 2i + 1: its end) are settled in reverse topological order, each
 * once all the points that depend on it are; points on a cycle (which only
 * clocks that disagree can make) are relaxed a bounded number of times. */
static int64_t *pslack(cp_node *v, uint32_t p) { return p & 1 ? &v[p >> 1].se : &v[p >> 1].ss; }

static int64_t edge_float(const cp_node *v, const cp_edge *e)
{
    const cp_node *w = &v[e->to];
    int64_t tau = e->to_end ? (w->tb > w->s ? w->tb : w->s) : w->sb;
    int64_t fl = tau - point(&v[e->from], e->from_end);
    return fl > 0 ? fl : 0;
}

static int relax_into(cp_state *s, cp_node *v, uint32_t p, uint32_t *outdeg, uint32_t *queue, size_t *nq)
{
    const cp_node *w = &v[p >> 1];
    uint32_t first = p & 1 ? w->in_e : w->in_s, n = p & 1 ? w->n_e : w->n_s;
    int changed = 0;
    for (uint32_t k = first; k < first + n; k++) {
        const cp_edge *e = &s->ed[k];
        uint32_t from = 2 * e->from + e->from_end;
        int64_t c = tr_sat_add(*pslack(v, p), edge_float(v, e)), *t = pslack(v, from);
        if (c < *t)
            *t = c, changed = 1;
        if (outdeg && !--outdeg[from])
            queue[(*nq)++] = from;
    }
    if (p & 1) {   /* the event's start moves its end once past what the end waited for */
        uint32_t from = p - 1;
        int64_t wait = w->tb > w->s ? w->tb - w->s : 0;
        int64_t c = tr_sat_add(*pslack(v, p), wait), *t = pslack(v, from);
        if (c < *t)
            *t = c, changed = 1;
        if (outdeg && !--outdeg[from])
            queue[(*nq)++] = from;
    }
    return changed;
}

static tr_status slack(cp_state *s, cp_nodes *b, int64_t t_end)
{
    cp_node *v = b->v;
    size_t np = 2 * b->n, nq = 0;
    uint32_t *outdeg = calloc(np ? np : 1, sizeof *outdeg), *queue = malloc((np ? np : 1) * sizeof *queue);
    if (!outdeg || !queue) {
        free(outdeg);
        free(queue);
        return tr_report_nomem(s->c);
    }
    for (size_t i = 0; i < b->n; i++) {
        v[i].se = t_end - v[i].e > 0 ? t_end - v[i].e : 0;
        v[i].ss = INT64_MAX;
        outdeg[2 * i]++;   /* start -> end */
    }
    for (size_t k = 0; k < s->ned; k++)
        outdeg[2 * s->ed[k].from + s->ed[k].from_end]++;
    for (uint32_t p = 0; p < np; p++)
        if (!outdeg[p])
            queue[nq++] = p;
    for (size_t h = 0; h < nq; h++)
        relax_into(s, v, queue[h], outdeg, queue, &nq);
    if (nq < np)
        for (int pass = 0, changed = 1; changed && pass < 100; pass++) {
            changed = 0;
            for (uint32_t p = (uint32_t)np; p-- > 0;)
                changed |= relax_into(s, v, p, NULL, NULL, NULL);
        }
    free(outdeg);
    free(queue);
    return TR_OK;
}

static int64_t node_slack(const cp_node *n) { return n->ss < n->se ? n->ss : n->se; }

/* ---- output ---- */

static const char *kind_name(const cp_node *n)
{
    return n->kind > 0 && n->kind < TR_KIND_COUNT_ ? tr_kinds[n->kind].name : "";
}

static int row_name(cp_state *s, tr_cell *cell, const cp_node *n)
{
    char *nm = cp_name(&s->dbs[n->db], n->name_id);
    int rc = !nm || tr_cell_str(cell, nm);
    free(nm);
    return rc;
}

/* Writes a step's path into the path table. */
static tr_status write_path(cp_state *s, const cp_path *p)
{
    for (size_t i = 0; i < p->n; i++) {
        const cp_prow *q = &p->v[i];
        tr_cell *row = tr_rtable_row(s->t_path);
        char *nm = row ? cp_name(&s->dbs[q->db], q->name_id) : NULL;
        int bad = !nm || tr_cell_str(&row[3], q->kind > 0 && q->kind < TR_KIND_COUNT_ ? tr_kinds[q->kind].name : "")
                  || tr_cell_str(&row[10], nm) || tr_cell_str(&row[9], edge_names[q->link]);
        free(nm);
        if (bad)
            return tr_report_nomem(s->c);
        tr_cell_int(&row[0], p->step);
        tr_cell_int(&row[1], (int64_t)i + 1);
        tr_cell_int(&row[2], q->rank);
        tr_cell_ns(&row[4], q->start);
        tr_cell_ns(&row[5], q->dur);
        tr_cell_ns(&row[6], q->path);
        tr_cell_ns(&row[7], q->wait);
        tr_cell_ns(&row[8], q->slack);
    }
    return TR_OK;
}

/* Every step's path goes out as it is found (all=1); else only the slowest
 * step's is kept, so the rows held are one path's. */
static tr_status keep_path(cp_state *s)
{
    if (s->all)
        return write_path(s, &s->pcur);
    if (s->pcur.span > s->pbest.span) {
        cp_path t = s->pbest;
        s->pbest = s->pcur;
        s->pcur = t;
    }
    return TR_OK;
}

static int cmp_slack(const void *pa, const void *pb)
{
    const cp_node *a = &sort_nodes[*(const uint32_t *)pa], *b = &sort_nodes[*(const uint32_t *)pb];
    int64_t x = node_slack(a), y = node_slack(b);
    if (x != y)
        return x < y ? -1 : 1;
    if (a->s != b->s)
        return a->s < b->s ? -1 : 1;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->db != b->db)
        return a->db < b->db ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static tr_status emit(cp_state *s, cp_nodes *b, int64_t step, int64_t origin, size_t nranks, size_t term)
{
    cp_node *v = b->v;
    int64_t host = 0, gpu = 0, comm = 0, wait = 0, ops = 0;
    int64_t *per_rank = calloc(s->rs.n ? s->rs.n : 1, sizeof *per_rank);
    if (!per_rank)
        return tr_report_nomem(s->c);
    /* joins are no event: their wait goes to the row after them in time */
    for (size_t i = s->nrows; i-- > 0;) {
        cp_row *r = &s->rows[i];
        if (v[r->node].cls == CL_JOIN && i > 0)
            s->rows[i - 1].wait += r->wait;
    }
    s->pcur.n = 0;
    s->pcur.step = step;
    s->pcur.span = v[term].e - origin;
    for (size_t i = s->nrows; i-- > 0;) {
        const cp_row *r = &s->rows[i];
        const cp_node *n = &v[r->node];
        if (n->cls == CL_JOIN)
            continue;
        if (s->pcur.n == s->pcur.cap) {
            size_t nc = s->pcur.cap ? s->pcur.cap * 2 : 64;
            cp_prow *nv = realloc(s->pcur.v, nc * sizeof *nv);
            if (!nv) {
                free(per_rank);
                return tr_report_nomem(s->c);
            }
            s->pcur.v = nv;
            s->pcur.cap = nc;
        }
        s->pcur.v[s->pcur.n++] = (cp_prow){s->rs.v[n->rank].rank, n->s - origin, n->e - n->s, r->path, r->wait,
                                         node_slack(n), n->name_id, n->db, n->kind, r->link};
        int64_t *acc = n->cls == CL_HOST ? &host : n->cls == CL_COMM ? &comm : &gpu;
        tr_sat_acc(acc, r->path);
        tr_sat_acc(&wait, r->wait);
        tr_sat_acc(&per_rank[n->rank], r->path);
        ops++;
    }
    size_t top = 0;
    for (size_t i = 1; i < s->rs.n; i++)
        if (per_rank[i] > per_rank[top])
            top = i;
    tr_cell *row = tr_rtable_row(s->t_steps);
    if (!row) {
        free(per_rank);
        return tr_report_nomem(s->c);
    }
    tr_cell_int(&row[0], step);
    tr_cell_int(&row[1], (int64_t)nranks);
    tr_cell_ns(&row[2], v[term].e - origin);
    tr_cell_ns(&row[3], s->path_from - origin);
    tr_cell_ns(&row[4], host);
    tr_cell_ns(&row[5], gpu);
    tr_cell_ns(&row[6], comm);
    tr_cell_ns(&row[7], wait);
    tr_cell_int(&row[8], ops);
    tr_cell_int(&row[9], s->rs.v[v[term].rank].rank);
    tr_cell_int(&row[10], s->rs.v[top].rank);
    tr_cell_ns(&row[11], per_rank[top]);
    free(per_rank);
    /* the ops off the path with the least slack */
    size_t m = 0;
    for (size_t i = 0; i < b->n; i++)
        if (!v[i].on_path && v[i].cls != CL_JOIN)
            s->order[m++] = (uint32_t)i;
    sort_nodes = v;
    qsort(s->order, m, sizeof *s->order, cmp_slack);
    for (size_t i = 0; i < m && (int64_t)i < s->top; i++) {
        const cp_node *n = &v[s->order[i]];
        tr_cell *sr = tr_rtable_row(s->t_slack);
        if (!sr || tr_cell_str(&sr[2], kind_name(n)) || row_name(s, &sr[6], n))
            return tr_report_nomem(s->c);
        tr_cell_int(&sr[0], step);
        tr_cell_int(&sr[1], s->rs.v[n->rank].rank);
        tr_cell_ns(&sr[3], n->s - origin);
        tr_cell_ns(&sr[4], n->e - n->s);
        tr_cell_ns(&sr[5], node_slack(n));
    }
    return TR_OK;
}

static tr_status do_step(cp_state *s, size_t k)
{
    cp_nodes *b = &s->bucket[k];
    int64_t origin = INT64_MAX;
    size_t nranks = 0;
    for (size_t i = 0; i < s->rs.n; i++) {
        const tr_rk_rank *r = &s->rs.v[i];
        for (size_t j = 0; j < r->nsteps; j++)
            if (r->steps[j].step == s->steps[k]) {
                int64_t a = tr_sat_add(r->steps[j].start, s->offset[i]);
                if (a < origin)
                    origin = a;
                nranks++;
                break;
            }
    }
    tr_status st = add_joins(s, b);
    if (st == TR_OK)
        st = build_edges(s, b);
    if (st != TR_OK || !b->n)
        return st;
    size_t term = 0;
    for (size_t i = 1; i < b->n; i++) {
        const cp_node *a = &b->v[i], *t = &b->v[term];
        if (a->cls != CL_JOIN && (a->e > t->e || (a->e == t->e && a->rank < t->rank) || t->cls == CL_JOIN))
            term = i;
    }
    st = walk(s, b, term);
    if (st == TR_OK) {
        st = slack(s, b, b->v[term].e);
        if (st == TR_OK)
            st = emit(s, b, s->steps[k], origin, nranks, term);
        if (st == TR_OK)
            st = keep_path(s);
    }
    return st;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* The clock offsets and the collective calls of lib/collectives.h. */
static tr_status load_coll(cp_state *s)
{
    tr_coll_opts co = {1, NULL, 0};
    tr_status st = tr_coll_load(s->c->dbs, s->c->ndbs, &co, &s->coll, s->c->err);
    if (st != TR_OK)
        return st;
    for (size_t i = 0; i < s->rs.n; i++) {
        long k = tr_coll_rank_index(&s->coll, s->rs.v[i].db, s->rs.v[i].source);
        s->offset[i] = k < 0 ? 0 : s->coll.ranks[k].offset_ns;
    }
    for (size_t c = 0; c < s->coll.ncalls; c++)
        for (size_t r = 0; r < s->coll.nranks; r++) {
            const tr_coll_part *p = &s->coll.calls[c].parts[r];
            if (p->event_id >= 0 && tr_i64map_put(&s->call_of, db_key(s->coll.ranks[r].db, p->event_id), (int64_t)c) < 0)
                return tr_report_nomem(s->c);
        }
    return TR_OK;
}

static tr_status run(cp_state *s, tr_rresult *r)
{
    tr_status st = tr_rk_load(s->c->dbs, s->c->ndbs, 0, &s->rs, s->c->err);
    if (st != TR_OK)
        return st;
    tr_rk_select(&s->rs, s->c);
    size_t total = 0;
    for (size_t i = 0; i < s->rs.n; i++)
        total += s->rs.v[i].nsteps;
    s->steps = malloc((total ? total : 1) * sizeof *s->steps);
    s->offset = calloc(s->rs.n ? s->rs.n : 1, sizeof *s->offset);
    if (!s->steps || !s->offset)
        return tr_report_nomem(s->c);
    for (size_t i = 0; i < s->rs.n; i++)
        for (size_t k = 0; k < s->rs.v[i].nsteps; k++)
            if (tr_rk_step_selected(s->c, s->rs.v[i].steps[k].step))
                s->steps[s->nsteps++] = s->rs.v[i].steps[k].step;
    qsort(s->steps, s->nsteps, sizeof *s->steps, cmp_i64);
    size_t u = 0;
    for (size_t i = 0; i < s->nsteps; i++)
        if (!u || s->steps[i] != s->steps[u - 1])
            s->steps[u++] = s->steps[i];
    s->nsteps = u;
    if (!s->nsteps)
        return tr_rresult_nodata(r, "no ProfilerStep#N ranges: the critical path is found step by step")
                   ? tr_report_nomem(s->c) : TR_OK;
    if ((st = load_coll(s)) != TR_OK)
        return st;
    s->bucket = calloc(s->nsteps, sizeof *s->bucket);
    s->dbs = calloc(s->c->ndbs, sizeof *s->dbs);
    if (!s->bucket || !s->dbs)
        return tr_report_nomem(s->c);
    s->ndbs = s->c->ndbs;
    for (size_t d = 0; d < s->ndbs; d++)
        if ((st = cp_db_open(s, &s->dbs[d], s->c->dbs[d])) != TR_OK
            || (s->ndbs > 1 && (st = spill(s, &s->dbs[d])) != TR_OK))
            return st;
    size_t t0 = r->ntables;
    if (!tr_rtable_add(r, "Critical path", tr_critpath_cols) || !tr_rtable_add(r, "Steps", step_cols)
        || !tr_rtable_add(r, "Least slack off the path", slack_cols))
        return tr_report_nomem(s->c);
    /* taken after the last add: each may move the array */
    s->t_path = &r->tables[t0];
    s->t_steps = &r->tables[t0 + 1];
    s->t_slack = &r->tables[t0 + 2];
    for (size_t k = 0; k < s->nsteps; k++) {
        s->cur = k;
        for (size_t d = 0; d < s->ndbs; d++) {
            int64_t until = NO_TIME;
            for (size_t i = 0; i < s->rs.n; i++) {
                const tr_rk_rank *rk = &s->rs.v[i];
                for (size_t j = 0; rk->db == d && j < rk->nsteps; j++)
                    if (rk->steps[j].step == s->steps[k] && rk->steps[j].end > until)
                        until = rk->steps[j].end;
            }
            if (until != NO_TIME && (st = cp_db_fill(s, d, until)) != TR_OK)
                return st;
        }
        st = do_step(s, k);
        free(s->bucket[k].v);
        s->bucket[k] = (cp_nodes){0};
        if (st != TR_OK)
            return st;
    }
    if (!s->all && s->pbest.span >= 0) {
        if ((st = write_path(s, &s->pbest)) != TR_OK)
            return st;
        if (s->nsteps > 1 && tr_rtable_note(s->t_path, "the path of ProfilerStep#%lld, the slowest of %zu steps "
                                                       "(critical-path:all=1: every step's)",
                                            (long long)s->pbest.step, s->nsteps))
            return tr_report_nomem(s->c);
    }
    if (tr_rtable_note(s->t_path, "Start: from the step's earliest window start over its ranks; clocks aligned to "
                                  "rank 0's (lib/collectives.h); After: what the row waited for in the row above")
        || (s->coll.max_residual_ns > TR_COLL_SKEW_WARN_NS
            && tr_rresult_note(r, "warning: the ranks' clocks disagree by up to %lld ns after alignment: "
                                  "cross-rank links may be misplaced", (long long)s->coll.max_residual_ns)))
        return tr_report_nomem(s->c);
    return TR_OK;
}

tr_status tr_report_critpath(tr_report_ctx *c, tr_rresult *r)
{
    cp_state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    s.top = c->param[0];
    s.all = c->param[1];
    s.pbest.span = -1;
    tr_i64map_init(&s.call_of);
    tr_status st = run(&s, r);
    for (size_t d = 0; d < s.ndbs; d++)
        cp_db_close(&s.dbs[d]);
    free(s.dbs);
    for (size_t k = 0; s.bucket && k < s.nsteps; k++)
        free(s.bucket[k].v);
    free(s.bucket);
    free(s.steps);
    free(s.offset);
    free(s.ed);
    free(s.order);
    free(s.parts);
    free(s.rows);
    free(s.pcur.v);
    free(s.pbest.v);
    tr_coll_set_free(&s.coll);
    tr_i64map_free(&s.call_of);
    tr_rk_set_free(&s.rs);
    return st;
}
