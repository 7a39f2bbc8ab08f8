#include "analyze/compat_torch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/checked.h"
#include "lib/model.h"
#include "lib/rundb.h"
#include "lib/rundb_scan.h"

/* tr_torch_compat.state bits */
enum {
    TORCH_ROW = 1,        /* a host or memory event PyTorch's numbers are computed for */
    TORCH_MEMORY = 2,
    TORCH_ASYNC = 4,
    TORCH_GPU_MEM = 8,
    TORCH_CLAIMED = 16    /* a memory event inside some host event's window */
};

/* An allocation: prefix sums of the bytes up to and including it, in time order. */
typedef struct { int64_t t; size_t slot; int64_t bytes, cpu, gpu; int gpu_mem; } mem_point;

/* One event as the passes read it. */
typedef struct { int64_t id, start, end, parent, bytes; int flags, kind, has_parent; } ev_cols;

enum { C_ID, C_START, C_END, C_PARENT, C_FLAGS, C_KIND, C_BYTES, NCOLS };
static const char scan_sql[] =
    "SELECT id, start_ns, end_ns, parent_id, flags, kind, bytes FROM events ORDER BY id";

static tr_status fail_db(sqlite3 *db, tr_error *err)
{
    return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(db),
                   sqlite3_errmsg(db));
}

static tr_status nomem(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while computing PyTorch's metrics");
}

/* Index of the first point with t > x (upper) or t >= x (lower). */
static size_t bound(const mem_point *p, size_t n, int64_t x, int upper)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (upper ? p[mid].t <= x : p[mid].t < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* (time, id): the order PyTorch's allocations are summed in */
static int cmp_point(const void *a, const void *b)
{
    const mem_point *x = a, *y = b;
    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return x->slot < y->slot ? -1 : x->slot > y->slot;
}

/* The slot of event id, or 0 with none. */
static int slot_of(const tr_torch_compat *tc, int64_t id, size_t *slot)
{
    if (tc->sparse) {
        int64_t v;
        if (!tr_i64map_get(&tc->slot_of, id, &v))
            return 0;
        *slot = (size_t)v;
        return 1;
    }
    uint64_t off = (uint64_t)id - (uint64_t)tc->base;
    if (id < tc->base || off >= tc->nslots)
        return 0;
    *slot = (size_t)off;
    return 1;
}

/* The event kinds on the host, by the run.db's own kinds table, as id -> 1. */
static tr_status load_host_kinds(sqlite3 *db, tr_i64map *host, tr_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id FROM kinds WHERE on_gpu = 0", -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table kinds: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER
            && tr_i64map_put(host, sqlite3_column_int64(st, 0), 1) < 0) {
            sqlite3_finalize(st);
            return nomem(err);
        }
    tr_status s = rc == SQLITE_DONE ? TR_OK
                  : tr_fail(err, TR_ERR_INPUT, "%s: cannot read table kinds: %s", tr_rundb_name(db),
                            sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return s;
}

/* Slots by id: an array over [min id, max id] where at most about half its ids
 * are missing, else a map filled from one pass over the ids. */
static tr_status place_slots(sqlite3 *db, tr_torch_compat *tc, tr_error *err)
{
    sqlite3_stmt *st;
    int64_t count = 0, lo, hi;
    if (sqlite3_prepare_v2(db, "SELECT count(*) FROM events", -1, &st, NULL) != SQLITE_OK)
        return fail_db(db, err);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        count = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return fail_db(db, err);
    if (!count || !tr_rundb_event_ids(db, &lo, &hi))
        return TR_OK;   /* no events: no slots */
    uint64_t span = (uint64_t)hi - (uint64_t)lo + 1;
    if (hi >= lo && span != 0 && span <= 2 * (uint64_t)count + 4096 && span <= SIZE_MAX / 32) {
        tc->base = lo;
        tc->nslots = (size_t)span;
        return TR_OK;
    }
    tc->sparse = 1;
    tr_rundb_scan s;
    int started, r = 0;
    tr_status st2 = tr_rundb_scan_start(&s, db, "SELECT id FROM events ORDER BY id", 1, "events", 0,
                                        &started, err);
    const tr_sql_cell *c;
    while (st2 == TR_OK && (c = tr_rundb_scan_next(&s, &r, err)) != NULL)
        if (tr_i64map_put(&tc->slot_of, c[0].i, (int64_t)tc->nslots++) < 0)
            st2 = nomem(err);
    if (st2 == TR_OK && r < 0)
        st2 = err->status;
    tr_rundb_scan_stop(&s);
    return st2;
}

/* What the passes read of a row: a NULL parent is none, a NULL bytes 0 (a
 * cell's integer reads 0 for NULL, as sqlite3_column_int64() does), an end
 * before the start is the start, flags and kind as C ints. */
static void read_cols(const tr_sql_cell *c, ev_cols *e)
{
    e->id = c[C_ID].i;
    e->start = c[C_START].i;
    e->end = c[C_END].i;
    e->end = e->end < e->start ? e->start : e->end;
    e->has_parent = c[C_PARENT].type != SQLITE_NULL;
    e->parent = c[C_PARENT].i;
    e->flags = (int)c[C_FLAGS].i;
    e->kind = c[C_KIND].type == SQLITE_INTEGER ? (int)c[C_KIND].i : -1;
    e->bytes = c[C_BYTES].i;
}

/* A host event (by the kinds table) that was not merged, with times a trace can hold. */
static int is_row(const tr_i64map *host, const tr_sql_cell *c, const ev_cols *e)
{
    int64_t on_host;
    return c[C_KIND].type == SQLITE_INTEGER && tr_i64map_get(host, c[C_KIND].i, &on_host)
           && !(c[C_FLAGS].i & TR_FLAG_MERGED) && tr_times_ok(e->start, e->end);
}

/* The slot of e's parent, where it has one that can be an event's: 0 without.
 * A parent that turns out to be no row is never read. */
static int parent_slot(const tr_torch_compat *tc, const ev_cols *e, size_t *slot)
{
    return e->has_parent && e->parent >= 0 && slot_of(tc, e->parent, slot);
}

typedef struct {
    const tr_i64map *host;
    tr_torch_compat *tc;
    int64_t *dur;          /* pass 1: each row's duration */
    mem_point *pts;        /* the allocations */
    size_t np, cap;
    int64_t *diff;         /* pass 2: host windows opening (+1) and closing (-1) over pts */
    int64_t (*child_mem)[2];   /* pass 2: children's cpu and gpu memory */
} passes;

/* Pass 1: which events are rows; their durations; the sums of their children's
 * durations (the children of a memory event aside, as PyTorch's tree has none),
 * in tc->cpu_self for now; the allocations. */
static tr_status pass_durations(passes *p, const tr_sql_cell *c, tr_error *err)
{
    ev_cols e;
    read_cols(c, &e);
    size_t slot, ps;
    tr_torch_compat *tc = p->tc;
    if (!is_row(p->host, c, &e) || !slot_of(tc, e.id, &slot))
        return TR_OK;
    int memory = e.kind == TR_KIND_MEMORY;
    tc->state[slot] = (uint8_t)(TORCH_ROW | (memory ? TORCH_MEMORY : 0)
                                | (e.flags & TR_FLAG_ASYNC ? TORCH_ASYNC : 0)
                                | (e.flags & TR_FLAG_GPU_MEMORY ? TORCH_GPU_MEM : 0));
    p->dur[slot] = e.end - e.start;
    if (memory) {
        if (p->np == p->cap) {
            size_t ncap = p->cap ? 2 * p->cap : 1024;
            mem_point *np = realloc(p->pts, ncap * sizeof *np);
            if (!np)
                return nomem(err);
            p->pts = np;
            p->cap = ncap;
        }
        p->pts[p->np++] = (mem_point){e.start, slot, e.bytes, 0, 0, (e.flags & TR_FLAG_GPU_MEMORY) != 0};
    } else if (parent_slot(tc, &e, &ps)) {
        tr_sat_acc(&tc->cpu_self[ps], e.end - e.start);
    }
    return TR_OK;
}

/* Pass 2, with allocations: each host event's window [start, end] over them,
 * its memory, its children's (summed in id order: only sums past 2^63 bytes
 * could tell that from PyTorch's order) and the windows' edges, for claims. */
static tr_status pass_windows(passes *p, const tr_sql_cell *c, tr_error *err)
{
    (void)err;
    ev_cols e;
    read_cols(c, &e);
    size_t slot, ps;
    tr_torch_compat *tc = p->tc;
    /* the rows are those pass 1 marked */
    if (!slot_of(tc, e.id, &slot) || (tc->state[slot] & (TORCH_ROW | TORCH_MEMORY)) != TORCH_ROW)
        return TR_OK;
    size_t lo = bound(p->pts, p->np, e.start, 0), hi = bound(p->pts, p->np, e.end, 1);
    tr_torch_mem *m = &tc->mem[slot];
    if (hi > lo) {
        m->cpu_mem = tr_sat_sub(p->pts[hi - 1].cpu, lo ? p->pts[lo - 1].cpu : 0);
        m->gpu_mem = tr_sat_sub(p->pts[hi - 1].gpu, lo ? p->pts[lo - 1].gpu : 0);
        p->diff[lo]++;
        p->diff[hi]--;
    }
    if (parent_slot(tc, &e, &ps)) {
        tr_sat_acc(&p->child_mem[ps][0], m->cpu_mem);
        tr_sat_acc(&p->child_mem[ps][1], m->gpu_mem);
    }
    return TR_OK;
}

/* Runs pass over every event in id order. */
static tr_status scan_events(sqlite3 *db, passes *p,
                             tr_status (*pass)(passes *, const tr_sql_cell *, tr_error *), tr_error *err)
{
    tr_rundb_scan s;
    int started, r = 0;
    tr_status rc = tr_rundb_scan_start(&s, db, scan_sql, NCOLS, "events", 0, &started, err);
    const tr_sql_cell *c;
    while (rc == TR_OK && (c = tr_rundb_scan_next(&s, &r, err)) != NULL)
        rc = pass(p, c, err);
    if (rc == TR_OK && r < 0)
        rc = err->status;
    tr_rundb_scan_stop(&s);
    return rc;
}

/* Self CPU time: the duration less the children's summed (an async event: none). */
static void finish_self(tr_torch_compat *tc, const int64_t *dur)
{
    for (size_t i = 0; i < tc->nslots; i++) {
        uint8_t s = tc->state[i];
        tc->cpu_self[i] = (s & TORCH_ROW) && !(s & (TORCH_MEMORY | TORCH_ASYNC))
                          ? tr_sat_sub(dur[i], tc->cpu_self[i]) : 0;
    }
}

/* The allocations' prefix sums, in (time, id) order. */
static void sum_points(passes *p)
{
    qsort(p->pts, p->np, sizeof *p->pts, cmp_point);
    int64_t cpu = 0, gpu = 0;
    for (size_t k = 0; k < p->np; k++) {
        tr_sat_acc(p->pts[k].gpu_mem ? &gpu : &cpu, p->pts[k].bytes);
        p->pts[k].cpu = cpu;
        p->pts[k].gpu = gpu;
    }
}

/* Memory events' own bytes, self memory, and which allocations a window claims. */
static void finish_memory(tr_torch_compat *tc, const passes *p)
{
    for (size_t i = 0; i < tc->nslots; i++) {
        uint8_t s = tc->state[i];
        tr_torch_mem *m = &tc->mem[i];
        if ((s & TORCH_ROW) && !(s & (TORCH_MEMORY | TORCH_ASYNC))) {
            m->cpu_mem_self = tr_sat_sub(m->cpu_mem, p->child_mem[i][0]);
            m->gpu_mem_self = tr_sat_sub(m->gpu_mem, p->child_mem[i][1]);
        }
    }
    int64_t open = 0;
    for (size_t k = 0; k < p->np; k++) {
        const mem_point *pt = &p->pts[k];
        tr_torch_mem *m = &tc->mem[pt->slot];
        *(pt->gpu_mem ? &m->gpu_mem : &m->cpu_mem) = pt->bytes;
        *(pt->gpu_mem ? &m->gpu_mem_self : &m->cpu_mem_self) = pt->bytes;
        open += p->diff[k];
        if (open)
            tc->state[pt->slot] |= TORCH_CLAIMED;
    }
}

static tr_status compute(sqlite3 *db, tr_torch_compat *tc, passes *p, tr_error *err)
{
    tr_status st = place_slots(db, tc, err);
    if (st != TR_OK || !tc->nslots)
        return st;
    tc->state = calloc(tc->nslots, 1);
    tc->cpu_self = calloc(tc->nslots, sizeof *tc->cpu_self);
    p->dur = calloc(tc->nslots, sizeof *p->dur);
    if (!tc->state || !tc->cpu_self || !p->dur)
        return nomem(err);
    if ((st = scan_events(db, p, pass_durations, err)) != TR_OK)
        return st;
    finish_self(tc, p->dur);
    free(p->dur);
    p->dur = NULL;
    if (!p->np)
        return TR_OK;
    sum_points(p);
    tc->mem = calloc(tc->nslots, sizeof *tc->mem);
    p->child_mem = calloc(tc->nslots, sizeof *p->child_mem);
    p->diff = calloc(p->np + 1, sizeof *p->diff);
    if (!tc->mem || !p->child_mem || !p->diff)
        return nomem(err);
    if ((st = scan_events(db, p, pass_windows, err)) != TR_OK)
        return st;
    finish_memory(tc, p);
    return TR_OK;
}

tr_status tr_torch_compat_load(sqlite3 *db, tr_torch_compat *tc, tr_error *err)
{
    memset(tc, 0, sizeof *tc);
    tr_i64map_init(&tc->slot_of);
    tr_i64map host;
    tr_i64map_init(&host);
    passes p = {&host, tc, NULL, NULL, 0, 0, NULL, NULL};
    tr_status st = load_host_kinds(db, &host, err);
    if (st == TR_OK)
        st = compute(db, tc, &p, err);
    tr_i64map_free(&host);
    free(p.dur);
    free(p.pts);
    free(p.diff);
    free(p.child_mem);
    if (st != TR_OK)
        tr_torch_compat_free(tc);
    return st;
}

int tr_torch_compat_get(const tr_torch_compat *tc, int64_t id, tr_torch_metrics *out, int *claimed)
{
    size_t slot;
    *claimed = 0;
    if (!tc->state || !slot_of(tc, id, &slot) || !(tc->state[slot] & TORCH_ROW))
        return 0;
    *claimed = (tc->state[slot] & TORCH_CLAIMED) != 0;
    const tr_torch_mem *m = tc->mem ? &tc->mem[slot] : NULL;
    *out = (tr_torch_metrics){tc->cpu_self[slot], m ? m->cpu_mem : 0, m ? m->cpu_mem_self : 0,
                              m ? m->gpu_mem : 0, m ? m->gpu_mem_self : 0};
    return 1;
}

void tr_torch_compat_free(tr_torch_compat *tc)
{
    tr_i64map_free(&tc->slot_of);
    free(tc->state);
    free(tc->cpu_self);
    free(tc->mem);
    memset(tc, 0, sizeof *tc);
}
