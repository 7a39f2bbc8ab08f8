#include "lib/aggregates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/checked.h"
#include "lib/pair_trie.h"
#include "lib/spill.h"

typedef struct {
    uint32_t name, shape;
    uint32_t path, stack;   /* stack aggregates only: tree path node, events.stack_id */
    int gpu, used;
    int64_t count, cpu_total, cpu_self, gpu_total, gpu_self, cmem, cmem_self, gmem, gmem_self;
    int64_t flops;
    int has_flops;
    int64_t first_start, first_end, first_id;
    int first_async;
} agg_row;

typedef struct { agg_row *r; size_t n, cap; } agg_map;

static size_t agg_hash(const agg_row *k, size_t cap)
{
    uint64_t h = ((uint64_t)k->name * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)k->shape * 0xff51afd7ed558ccdull)
                 ^ ((uint64_t)k->path * 0xc4ceb9fe1a85ec53ull) ^ ((uint64_t)k->stack * 0x2545f4914f6cdd1dull)
                 ^ (uint64_t)k->gpu;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

static int agg_same(const agg_row *a, const agg_row *k)
{
    return a->name == k->name && a->shape == k->shape && a->gpu == k->gpu && a->path == k->path
           && a->stack == k->stack;
}

/* The row of key k (its name, shape, gpu, path and stack), made on first use. */
static agg_row *agg_find(agg_map *m, const agg_row *k)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        /* a group a distinct name: as many as a third of the events */
        agg_row *nr = tr_spill_calloc(ncap, sizeof *nr);
        if (!nr)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            tr_spill_tick();
            if (!m->r[i].used)
                continue;
            size_t j = agg_hash(&m->r[i], ncap);
            while (nr[j].used)
                j = (j + 1) & (ncap - 1);
            nr[j] = m->r[i];
        }
        tr_spill_free(m->r);
        m->r = nr;
        m->cap = ncap;
    }
    size_t j = agg_hash(k, m->cap);
    while (m->r[j].used && !agg_same(&m->r[j], k))
        j = (j + 1) & (m->cap - 1);
    if (!m->r[j].used) {
        m->r[j] = (agg_row){.name = k->name, .shape = k->shape, .path = k->path, .stack = k->stack,
                            .gpu = k->gpu, .used = 1, .first_start = INT64_MAX};
        m->n++;
    }
    return &m->r[j];
}

/* The event's times and stored totals are ones a trace can hold (as analyze checks). */
static int event_ok(const tr_trace *t, const tr_event *e, int gpu, int64_t *cpu_total)
{
    int64_t d = 0;
    if (!gpu && __builtin_sub_overflow(e->end, e->start, &d))
        return 0;
    *cpu_total = gpu ? 0 : d;
    return tr_times_ok(e->start, e->end) && tr_ns_ok(*cpu_total) && tr_ns_ok(tr_cpu_self(t, e))
           && tr_ns_ok(tr_gpu_total(t, e)) && tr_ns_ok(tr_gpu_self(t, e));
}

static void agg_add(agg_row *a, const tr_trace *t, size_t i, int64_t cpu_total)
{
    const tr_event *e = &t->events.v[i];
    static const tr_event_mem none;
    const tr_event_mem *m = t->mem ? &t->mem[i] : &none;
    int64_t id = (int64_t)i + 1;
    if (e->start < a->first_start || (e->start == a->first_start && (e->end > a->first_end
                                      || (e->end == a->first_end && id < a->first_id)))) {
        a->first_start = e->start;
        a->first_end = e->end;
        a->first_id = id;
        a->first_async = (e->flags & TR_FLAG_ASYNC) != 0;
    }
    a->count++;
    tr_sat_acc(&a->cpu_total, cpu_total);
    tr_sat_acc(&a->cpu_self, tr_cpu_self(t, e));
    tr_sat_acc(&a->gpu_total, tr_gpu_total(t, e));
    tr_sat_acc(&a->gpu_self, tr_gpu_self(t, e));
    tr_sat_acc(&a->cmem, m->cpu_total);
    tr_sat_acc(&a->cmem_self, m->cpu_self);
    tr_sat_acc(&a->gmem, m->gpu_total);
    tr_sat_acc(&a->gmem_self, m->gpu_self);
    int64_t flops = tr_extra(t, e).flops;
    if (flops != -1) {
        tr_sat_acc(&a->flops, flops);
        a->has_flops = 1;
    }
}

static tr_status db_fail(sqlite3 *db, const char *table, tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table %s)", sqlite3_errmsg(db), table);
}

/* The rows of m into `table`, whose columns are those of aggregates, after
 * path_id and stack_id when `stacked`; then the skipped events' row. */
static tr_status insert_rows(sqlite3 *db, const char *table, int stacked, const agg_map *m,
                             size_t skipped, tr_error *err)
{
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT INTO %s VALUES(%s?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", table,
             stacked ? "?,?," : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, table, err);
    const int at = stacked ? 2 : 0;
    tr_status s = TR_OK;
    for (size_t i = 0; i < m->cap && s == TR_OK; i++) {
        tr_spill_tick();
        const agg_row *a = &m->r[i];
        if (!a->used)
            continue;
        if (stacked) {
            sqlite3_bind_int64(st, 1, a->path);
            if (a->stack)
                sqlite3_bind_int64(st, 2, a->stack);
            else
                sqlite3_bind_null(st, 2);
        }
        const int64_t v[] = {a->name, a->gpu, a->shape, a->count, a->cpu_total, a->cpu_self,
                             a->gpu_total, a->gpu_self, a->cmem, a->cmem_self, a->gmem,
                             a->gmem_self, a->flops, a->first_start, a->first_end, a->first_id,
                             a->first_async};
        for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++) {
            if ((k == 2 && !a->shape) || (k == 12 && !a->has_flops))
                sqlite3_bind_null(st, at + k + 1);
            else
                sqlite3_bind_int64(st, at + k + 1, v[k]);
        }
        if (sqlite3_step(st) != SQLITE_DONE)
            s = db_fail(db, table, err);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (s != TR_OK || !skipped)
        return s;
    snprintf(sql, sizeof sql, "INSERT INTO %s VALUES(%s0, %d, NULL, %zu, 0,0,0,0,0,0,0,0, "
             "NULL, 0, 0, 0, 0)", table, stacked ? "0, NULL, " : "", TR_AGG_SKIPPED, skipped);
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? TR_OK : db_fail(db, table, err);
}

/* ---- tree paths ---------------------------------------------------------- */

/* A host event that is some event's ancestry: not async (analyze/summary.c
 * leaves those out of every path). */
static int path_holder(const tr_event *e)
{
    return !tr_kinds[e->kind].on_gpu && !(e->flags & TR_FLAG_ASYNC);
}

/* The events of a parent chain whose paths are not known yet, innermost first. */
typedef struct { size_t *v; size_t n, cap; } path_chain;

/* self[i]: the path of host event i, its ancestors' names and its own (0: not
 * known yet); made down the parent chain from the highest ancestor not known.
 * The chain is bounded by the event count, so a cycle ends at the root. */
static uint32_t self_path(const tr_trace *t, tr_pair_trie *p, path_chain *ch, uint32_t *self, size_t i)
{
    const tr_event *ev = t->events.v;
    ch->n = 0;
    uint32_t base = 0;
    for (size_t k = i; !self[k];) {
        if (tr_vec_reserve(*ch, ch->n + 1) < 0)
            return 0;
        ch->v[ch->n++] = k;
        int32_t up = ev[k].parent;
        if (up < 0 || !path_holder(&ev[up]) || ch->n > t->events.n)
            break;
        k = (size_t)up;
        base = self[k];
    }
    if (!ch->n)
        return self[i];
    while (ch->n) {
        size_t k = ch->v[--ch->n];
        int64_t node = tr_pair_trie_get(p, base, ev[k].name);
        if (node <= 0 || node > UINT32_MAX)
            return 0;
        self[k] = base = (uint32_t)node;
    }
    return base;
}

/* The stack aggregates' path of event i: a host event's ancestors' path, a
 * device activity's launching call's own path (analyze/summary.c's scan_tree()). */
static int event_path(const tr_trace *t, tr_pair_trie *p, path_chain *ch, uint32_t *self, size_t i,
                      uint32_t *out)
{
    const tr_event *e = &t->events.v[i];
    *out = 0;
    if (e->parent < 0)
        return 0;
    const tr_event *up = &t->events.v[e->parent];
    int gpu = tr_kinds[e->kind].on_gpu;
    if (!path_holder(up) || (gpu && !tr_kinds[up->kind].is_api) || (!gpu && (e->flags & TR_FLAG_ASYNC)))
        return 0;
    *out = self_path(t, p, ch, self, (size_t)e->parent);
    return *out ? 0 : -1;
}

static tr_status write_paths(sqlite3 *db, const tr_pair_trie *p, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO stack_paths VALUES(?,?,?)", -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, "stack_paths", err);
    tr_status s = TR_OK;
    for (size_t id = 1; id <= p->n && s == TR_OK; id++) {
        tr_spill_tick();
        sqlite3_bind_int64(st, 1, (int64_t)id);
        if (p->parent[id])
            sqlite3_bind_int64(st, 2, p->parent[id]);
        else
            sqlite3_bind_null(st, 2);
        sqlite3_bind_int64(st, 3, p->label[id]);
        if (sqlite3_step(st) != SQLITE_DONE)
            s = db_fail(db, "stack_paths", err);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- the pass ------------------------------------------------------------ */

/* Past this many stack rows an event, a --group-by-stack scan costs about what
 * reading them would, and the table is left out. */
#define STACK_ROWS_MAX_SHARE 4

static tr_status oom_agg(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while writing table aggregates");
}

struct tr_aggregates {
    agg_map m, sm;          /* by (name, shape, side); the same by tree path and stack too */
    tr_pair_trie paths;
    size_t skipped;         /* events left out for impossible times */
    int stacked;            /* sm and paths are complete */
};

void tr_aggregates_free(tr_aggregates *ag)
{
    if (!ag)
        return;
    tr_spill_free(ag->m.r);
    tr_spill_free(ag->sm.r);
    tr_pair_trie_free(&ag->paths);
    free(ag);
}

tr_status tr_aggregates_compute(const tr_trace *t, tr_aggregates **out, tr_error *err)
{
    *out = NULL;
    tr_aggregates *ag = calloc(1, sizeof *ag);
    if (!ag)
        return oom_agg(err);
    path_chain chain = {0};
    uint32_t *self = tr_spill_calloc(t->events.n ? t->events.n : 1, sizeof *self);
    ag->stacked = self != NULL;
    tr_status s = TR_OK;
    for (size_t i = 0; i < t->events.n && s == TR_OK; i++) {
        tr_spill_tick();
        const tr_event *e = &t->events.v[i];
        if (e->flags & TR_FLAG_MERGED)
            continue;   /* counted in the op it merged into */
        if (e->kind == TR_KIND_MEMORY && e->parent >= 0)
            continue;   /* held by a host event: in its memory columns, no row of its own */
        int gpu = tr_kinds[e->kind].on_gpu;
        int64_t cpu_total;
        if (!event_ok(t, e, gpu, &cpu_total)) {
            ag->skipped++;
            continue;
        }
        agg_row key = {.name = e->name, .shape = tr_extra(t, e).shape, .gpu = gpu};
        agg_row *a = agg_find(&ag->m, &key);
        if (!a) {
            s = oom_agg(err);
            break;
        }
        agg_add(a, t, i, cpu_total);
        if (!ag->stacked)
            continue;
        key.stack = e->stack;
        if (event_path(t, &ag->paths, &chain, self, i, &key.path) < 0 || !(a = agg_find(&ag->sm, &key))) {
            ag->stacked = 0;   /* the scan serves --group-by-stack */
            continue;
        }
        agg_add(a, t, i, cpu_total);
        ag->stacked = ag->sm.n <= t->events.n / STACK_ROWS_MAX_SHARE + 1024;
    }
    tr_spill_free(self);
    tr_spill_free(chain.v);
    if (s != TR_OK) {
        tr_aggregates_free(ag);
        return s;
    }
    *out = ag;
    return TR_OK;
}

tr_status tr_aggregates_insert(sqlite3 *db, const tr_aggregates *ag, tr_error *err)
{
    tr_status s = insert_rows(db, "aggregates", 0, &ag->m, ag->skipped, err);
    if (s == TR_OK && ag->stacked && (s = write_paths(db, &ag->paths, err)) == TR_OK)
        s = insert_rows(db, "stack_aggregates", 1, &ag->sm, ag->skipped, err);
    if (s == TR_OK && !ag->stacked && sqlite3_exec(db, "DROP TABLE stack_aggregates; DROP TABLE stack_paths",
                                                   NULL, NULL, NULL) != SQLITE_OK)
        s = db_fail(db, "stack_aggregates", err);
    return s;
}
