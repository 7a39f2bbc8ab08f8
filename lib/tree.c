#include "lib/tree.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Order in which events with identical intervals nest (outermost first). */
static const int nest_rank[TR_KIND_COUNT_] = {
    [TR_KIND_PYTHON] = 0, [TR_KIND_RANGE] = 1, [TR_KIND_OP] = 2,
    [TR_KIND_RUNTIME] = 3, [TR_KIND_DRIVER] = 4, [TR_KIND_SYNC] = 5,
    [TR_KIND_MARK] = 6, [TR_KIND_MEMORY] = 7,
};

uint32_t tr_event_source(const tr_trace *t, const tr_event *e)
{
    if (e->thread)
        return t->processes.v[t->threads.v[e->thread].process].source;
    if (e->stream)
        return t->devices.v[t->streams.v[e->stream].device].source;
    return 0;
}

static const tr_event *sort_events;

static int cmp_cpu(const void *pa, const void *pb)
{
    size_t ia = *(const size_t *)pa, ib = *(const size_t *)pb;
    const tr_event *a = &sort_events[ia], *b = &sort_events[ib];
    if (a->thread != b->thread)
        return a->thread < b->thread ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    if (nest_rank[a->kind] != nest_rank[b->kind])
        return nest_rank[a->kind] < nest_rank[b->kind] ? -1 : 1;
    return ia < ib ? -1 : ia > ib;
}

/* Correlation map: (source, correlation) -> API event index. */
/* 16 bytes a slot: the map holds every API call of the trace. */
typedef struct { int64_t corr; uint32_t source; uint32_t event_plus1; } corr_slot;
typedef struct { corr_slot *s; size_t cap; } corr_map;

static size_t corr_hash(uint32_t source, int64_t corr, size_t cap)
{
    uint64_t h = (uint64_t)corr * 0x9e3779b97f4a7c15ull ^ ((uint64_t)source << 32);
    h ^= h >> 29;
    return (size_t)h & (cap - 1);
}

static corr_slot *corr_find(corr_map *m, uint32_t source, int64_t corr)
{
    size_t i = corr_hash(source, corr, m->cap);
    while (m->s[i].event_plus1 && !(m->s[i].source == source && m->s[i].corr == corr))
        i = (i + 1) & (m->cap - 1);
    return &m->s[i];
}

typedef struct { size_t event; int64_t frontier, covered; } open_frame;

/* Sorts order[0..n) by cmp_cpu.  A radix sort on (thread, start) does most of
 * the work in a few linear passes (qsort through an index into the events was
 * a tenth of the ingest time); runs of equal (thread, start) are then
 * finished with cmp_cpu.  Falls back to qsort when the key does not fit. */
typedef struct { uint64_t key; size_t event; } sort_item;

static tr_status sort_cpu_events(const tr_event *ev, size_t *order, size_t n, tr_error *err)
{
    sort_events = ev;
    if (n < 2)
        return TR_OK;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    uint32_t max_thread = 0;
    for (size_t k = 0; k < n; k++) {
        const tr_event *e = &ev[order[k]];
        lo = e->start < lo ? e->start : lo;
        hi = e->start > hi ? e->start : hi;
        max_thread = e->thread > max_thread ? e->thread : max_thread;
    }
    const int time_bits = 44;   /* 4.9 hours of nanoseconds */
    if ((uint64_t)hi - (uint64_t)lo >= (1ull << time_bits) || max_thread >= (1u << (64 - time_bits))) {
        qsort(order, n, sizeof *order, cmp_cpu);
        return TR_OK;
    }
    sort_item *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    if (!a || !b) {
        free(a);
        free(b);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory while rebuilding the call tree");
    }
    uint64_t differ = 0;
    for (size_t k = 0; k < n; k++) {
        const tr_event *e = &ev[order[k]];
        a[k].key = (uint64_t)e->thread << time_bits | (uint64_t)(e->start - lo);
        a[k].event = order[k];
        differ |= a[k].key ^ a[0].key;
    }
    /* LSD radix, 8 bits a pass, skipping bytes that are the same in every key */
    for (int shift = 0; shift < 64; shift += 8) {
        if (!((differ >> shift) & 0xff))
            continue;
        size_t count[257] = {0};
        for (size_t k = 0; k < n; k++)
            count[((a[k].key >> shift) & 0xff) + 1]++;
        for (int d = 0; d < 256; d++)
            count[d + 1] += count[d];
        for (size_t k = 0; k < n; k++)
            b[count[(a[k].key >> shift) & 0xff]++] = a[k];
        sort_item *tmp = a;
        a = b;
        b = tmp;
    }
    for (size_t k = 0; k < n; k++)
        order[k] = a[k].event;
    /* stable passes kept equal keys in index order; finish each run properly */
    for (size_t k = 0; k < n;) {
        size_t end = k + 1;
        while (end < n && a[end].key == a[k].key)
            end++;
        if (end - k > 1)
            qsort(order + k, end - k, sizeof *order, cmp_cpu);
        k = end;
    }
    free(a);
    free(b);
    return TR_OK;
}

static tr_status build_cpu_tree(tr_trace *t, size_t *order, size_t n, tr_error *err)
{
    tr_event *ev = t->events.v;
    open_frame *stack = NULL;
    size_t depth = 0, cap = 0;
    uint32_t thread = 0;
    for (size_t k = 0; k <= n; k++) {
        tr_event *e = k < n ? &ev[order[k]] : NULL;
        if (!e || e->thread != thread) {
            while (depth) {
                open_frame *f = &stack[--depth];
                ev[f->event].cpu_self = ev[f->event].end - ev[f->event].start - f->covered;
            }
            if (!e)
                break;
            thread = e->thread;
        }
        while (depth) {
            open_frame *f = &stack[depth - 1];
            tr_event *p = &ev[f->event];
            if (e->start >= p->end || e->end > p->end) {
                p->cpu_self = p->end - p->start - f->covered;
                depth--;
                continue;
            }
            e->parent = (int64_t)f->event;
            e->depth = p->depth + 1;
            if (e->start >= f->frontier) {
                f->covered += e->end - e->start;
                f->frontier = e->end;
            } else if (e->end > f->frontier) {
                f->covered += e->end - f->frontier;
                f->frontier = e->end;
            }
            break;
        }
        if (depth == cap) {
            size_t ncap = cap ? cap * 2 : 64;
            open_frame *ns = realloc(stack, ncap * sizeof *ns);
            if (!ns) {
                free(stack);
                return tr_fail(err, TR_ERR_RUNTIME, "out of memory while rebuilding the call tree");
            }
            stack = ns;
            cap = ncap;
        }
        stack[depth++] = (open_frame){order[k], e->start, 0};
    }
    free(stack);
    return TR_OK;
}

tr_status tr_tree_build(tr_trace *t, tr_error *err)
{
    tr_event *ev = t->events.v;
    size_t nev = t->events.n;
    tr_status st = TR_OK;

    /* Reset derived fields so a rebuild gives the same result (idempotent). */
    size_t napi = 0, nmem = 0;
    if (nev >= UINT32_MAX)
        return tr_fail(err, TR_ERR_RUNTIME, "more than %u events in one trace", UINT32_MAX - 1);
    for (size_t i = 0; i < nev; i++) {
        tr_event *e = &ev[i];
        e->parent = -1;
        e->depth = 0;
        e->cpu_self = e->gpu_self = e->gpu_total = 0;
        if (e->kind == TR_KIND_MEMORY)
            nmem++;
        if (e->end < e->start)
            e->end = e->start;
        if (tr_kinds[e->kind].is_api && e->correlation >= 0)
            napi++;
    }

    /* Correlation map over API calls. */
    free(t->mem);
    t->mem = nmem ? calloc(nev, sizeof *t->mem) : NULL;
    corr_map cm = {NULL, 16};
    while (cm.cap < napi * 2 + 16)
        cm.cap *= 2;
    cm.s = calloc(cm.cap, sizeof *cm.s);
    size_t *order = malloc((nev ? nev : 1) * sizeof *order);
    if (!cm.s || !order || (nmem && !t->mem)) {
        st = tr_fail(err, TR_ERR_RUNTIME, "out of memory while rebuilding the call tree");
        goto out;
    }
    for (size_t i = 0; i < nev; i++) {
        tr_event *e = &ev[i];
        if (!tr_kinds[e->kind].is_api || e->correlation < 0)
            continue;
        corr_slot *s = corr_find(&cm, tr_event_source(t, e), e->correlation);
        if (!s->event_plus1)
            *s = (corr_slot){e->correlation, tr_event_source(t, e), (uint32_t)i + 1};
        else if (e->kind == TR_KIND_RUNTIME && ev[s->event_plus1 - 1].kind != TR_KIND_RUNTIME)
            s->event_plus1 = (uint32_t)i + 1;   /* the runtime call is the one the program made */
    }

    /* Sync waits recorded without a thread take the thread of their API call. */
    for (size_t i = 0; i < nev; i++) {
        tr_event *e = &ev[i];
        if (e->kind != TR_KIND_SYNC || e->thread || e->correlation < 0)
            continue;
        corr_slot *s = corr_find(&cm, tr_event_source(t, e), e->correlation);
        if (s->event_plus1)
            e->thread = ev[s->event_plus1 - 1].thread;
    }

    /* CPU tree. */
    size_t n = 0;
    for (size_t i = 0; i < nev; i++) {
        const tr_event *e = &ev[i];
        if (!tr_kinds[e->kind].on_gpu && e->thread && !(e->flags & TR_FLAG_ASYNC))
            order[n++] = i;
    }
    if ((st = sort_cpu_events(ev, order, n, err)) != TR_OK)
        goto out;
    if ((st = build_cpu_tree(t, order, n, err)) != TR_OK)
        goto out;

    /* GPU activities hang off their API call; their time goes to the innermost range. */
    for (size_t i = 0; i < nev; i++) {
        tr_event *g = &ev[i];
        if (!tr_kinds[g->kind].on_gpu)
            continue;
        int64_t dur = g->end - g->start;
        g->gpu_self = g->gpu_total = dur;
        if (g->correlation < 0)
            continue;
        corr_slot *s = corr_find(&cm, tr_event_source(t, g), g->correlation);
        if (!s->event_plus1)
            continue;
        tr_event *api = &ev[s->event_plus1 - 1];
        g->parent = (int64_t)s->event_plus1 - 1;
        g->depth = api->depth + 1;
        tr_event *target = api;
        for (int64_t p = api->parent; p >= 0; p = ev[p].parent) {
            if (tr_kinds[ev[p].kind].is_range) {
                target = &ev[p];
                break;
            }
        }
        target->gpu_self += dur;
    }

    /* Memory events: own bytes; then totals bottom-up.  In the sorted order a
     * parent precedes all its descendants, so a reverse walk sees every child
     * complete before its parent. */
    for (size_t k = 0; k < n; k++) {
        tr_event *e = &ev[order[k]];
        e->gpu_total = e->gpu_self;
        if (e->kind == TR_KIND_MEMORY) {
            tr_event_mem *m = &t->mem[order[k]];
            if (e->flags & TR_FLAG_GPU_MEMORY)
                m->gpu_total = m->gpu_self = e->bytes;
            else
                m->cpu_total = m->cpu_self = e->bytes;
        }
    }
    for (size_t k = n; k-- > 0;) {
        tr_event *e = &ev[order[k]];
        if (e->parent < 0)
            continue;
        ev[e->parent].gpu_total += e->gpu_total;
        if (!t->mem)
            continue;
        const tr_event_mem *m = &t->mem[order[k]];
        tr_event_mem *pm = &t->mem[e->parent];
        pm->cpu_total += m->cpu_total;
        pm->gpu_total += m->gpu_total;
        if (e->kind == TR_KIND_MEMORY) {
            pm->cpu_self += m->cpu_self;
            pm->gpu_self += m->gpu_self;
        }
    }
    t->tree_built = 1;
out:
    free(cm.s);
    free(order);
    return st;
}
