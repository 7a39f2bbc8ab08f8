#include "lib/aggregates.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/checked.h"
#include "lib/spill.h"

typedef struct {
    uint32_t name, shape;
    int gpu, used;
    int64_t count, cpu_total, cpu_self, gpu_total, gpu_self, cmem, cmem_self, gmem, gmem_self;
    int64_t flops;
    int has_flops;
    int64_t first_start, first_end, first_id;
    int first_async;
} agg_row;

typedef struct { agg_row *r; size_t n, cap; } agg_map;

static size_t agg_hash(uint32_t name, uint32_t shape, int gpu, size_t cap)
{
    uint64_t h = ((uint64_t)name * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)shape * 0xff51afd7ed558ccdull)
                 ^ (uint64_t)gpu;
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

static agg_row *agg_find(agg_map *m, uint32_t name, uint32_t shape, int gpu)
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
            size_t j = agg_hash(m->r[i].name, m->r[i].shape, m->r[i].gpu, ncap);
            while (nr[j].used)
                j = (j + 1) & (ncap - 1);
            nr[j] = m->r[i];
        }
        tr_spill_free(m->r);
        m->r = nr;
        m->cap = ncap;
    }
    size_t j = agg_hash(name, shape, gpu, m->cap);
    while (m->r[j].used && !(m->r[j].name == name && m->r[j].shape == shape && m->r[j].gpu == gpu))
        j = (j + 1) & (m->cap - 1);
    if (!m->r[j].used) {
        m->r[j] = (agg_row){.name = name, .shape = shape, .gpu = gpu, .used = 1,
                            .first_start = INT64_MAX};
        m->n++;
    }
    return &m->r[j];
}

/* The event's times and stored totals are ones a trace can hold (as analyze checks). */
static int event_ok(const tr_event *e, int gpu, int64_t *cpu_total)
{
    int64_t d = 0;
    if (!gpu && __builtin_sub_overflow(e->end, e->start, &d))
        return 0;
    *cpu_total = gpu ? 0 : d;
    return tr_times_ok(e->start, e->end) && tr_ns_ok(*cpu_total) && tr_ns_ok(e->cpu_self)
           && tr_ns_ok(e->gpu_total) && tr_ns_ok(e->gpu_self);
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
    tr_sat_acc(&a->cpu_self, e->cpu_self);
    tr_sat_acc(&a->gpu_total, e->gpu_total);
    tr_sat_acc(&a->gpu_self, e->gpu_self);
    tr_sat_acc(&a->cmem, m->cpu_total);
    tr_sat_acc(&a->cmem_self, m->cpu_self);
    tr_sat_acc(&a->gmem, m->gpu_total);
    tr_sat_acc(&a->gmem_self, m->gpu_self);
    if (e->flops != -1) {
        tr_sat_acc(&a->flops, e->flops);
        a->has_flops = 1;
    }
}

static tr_status db_fail(sqlite3 *db, tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table aggregates)", sqlite3_errmsg(db));
}

static tr_status insert_rows(sqlite3 *db, const agg_map *m, size_t skipped, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "INSERT INTO aggregates VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err);
    tr_status s = TR_OK;
    for (size_t i = 0; i < m->cap && s == TR_OK; i++) {
        tr_spill_tick();
        const agg_row *a = &m->r[i];
        if (!a->used)
            continue;
        const int64_t v[] = {a->name, a->gpu, a->shape, a->count, a->cpu_total, a->cpu_self,
                             a->gpu_total, a->gpu_self, a->cmem, a->cmem_self, a->gmem,
                             a->gmem_self, a->flops, a->first_start, a->first_end, a->first_id,
                             a->first_async};
        for (int k = 0; k < (int)(sizeof v / sizeof v[0]); k++) {
            if ((k == 2 && !a->shape) || (k == 12 && !a->has_flops))
                sqlite3_bind_null(st, k + 1);
            else
                sqlite3_bind_int64(st, k + 1, v[k]);
        }
        if (sqlite3_step(st) != SQLITE_DONE)
            s = db_fail(db, err);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    if (s != TR_OK || !skipped)
        return s;
    char sql[160];
    snprintf(sql, sizeof sql, "INSERT INTO aggregates VALUES(0, %d, NULL, %zu, 0,0,0,0,0,0,0,0, "
             "NULL, 0, 0, 0, 0)", TR_AGG_SKIPPED, skipped);
    return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? TR_OK : db_fail(db, err);
}

tr_status tr_aggregates_write(sqlite3 *db, const tr_trace *t, tr_error *err)
{
    agg_map m = {0};
    size_t skipped = 0;
    tr_status s = TR_OK;
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        const tr_event *e = &t->events.v[i];
        if (e->flags & TR_FLAG_MERGED)
            continue;   /* counted in the op it merged into */
        if (e->kind == TR_KIND_MEMORY && e->parent >= 0)
            continue;   /* held by a host event: in its memory columns, no row of its own */
        int gpu = tr_kinds[e->kind].on_gpu;
        int64_t cpu_total;
        if (!event_ok(e, gpu, &cpu_total)) {
            skipped++;
            continue;
        }
        agg_row *a = agg_find(&m, e->name, e->shape, gpu);
        if (!a) {
            s = tr_fail(err, TR_ERR_RUNTIME, "out of memory while writing table aggregates");
            break;
        }
        agg_add(a, t, i, cpu_total);
    }
    if (s == TR_OK)
        s = insert_rows(db, &m, skipped, err);
    tr_spill_free(m.r);
    return s;
}
