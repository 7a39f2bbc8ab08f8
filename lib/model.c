#include "lib/model.h"

#include "lib/spill.h"

#include <stdlib.h>
#include <string.h>

const tr_kind_info tr_kinds[] = {
    [TR_KIND_RANGE] = {TR_KIND_RANGE, "range", 0, 0, 1},
    [TR_KIND_OP] = {TR_KIND_OP, "op", 0, 0, 1},
    [TR_KIND_MARK] = {TR_KIND_MARK, "mark", 0, 0, 0},
    [TR_KIND_RUNTIME] = {TR_KIND_RUNTIME, "runtime", 0, 1, 0},
    [TR_KIND_DRIVER] = {TR_KIND_DRIVER, "driver", 0, 1, 0},
    [TR_KIND_SYNC] = {TR_KIND_SYNC, "sync", 0, 0, 0},
    [TR_KIND_KERNEL] = {TR_KIND_KERNEL, "kernel", 1, 0, 0},
    [TR_KIND_MEMCPY] = {TR_KIND_MEMCPY, "memcpy", 1, 0, 0},
    [TR_KIND_MEMSET] = {TR_KIND_MEMSET, "memset", 1, 0, 0},
    [TR_KIND_MEMORY] = {TR_KIND_MEMORY, "memory", 0, 0, 0},
    [TR_KIND_PYTHON] = {TR_KIND_PYTHON, "python", 0, 0, 0},
    /* OpenACC events enclose the CUDA calls they make, so they take their GPU time as ranges do */
    [TR_KIND_OPENACC_DATA] = {TR_KIND_OPENACC_DATA, "openacc_data", 0, 0, 1},
    [TR_KIND_OPENACC_LAUNCH] = {TR_KIND_OPENACC_LAUNCH, "openacc_launch", 0, 0, 1},
    [TR_KIND_OPENACC_OTHER] = {TR_KIND_OPENACC_OTHER, "openacc_other", 0, 0, 1},
    [TR_KIND_CUDA_EVENT] = {TR_KIND_CUDA_EVENT, "cuda_event", 1, 0, 0},
    [TR_KIND_OVERHEAD] = {TR_KIND_OVERHEAD, "overhead", 0, 0, 0},
};

const tr_kind_info *tr_kind_lookup(const char *name)
{
    for (int k = 1; k < TR_KIND_COUNT_; k++)
        if (strcmp(tr_kinds[k].name, name) == 0)
            return &tr_kinds[k];
    return NULL;
}

/* A map from up to three int64 keys to a 1-based index, open addressing. */
typedef struct tr_idmap {
    struct slot { int64_t k[3]; uint32_t val; } *slots;
    size_t n, cap;
} tr_idmap;

static uint64_t mix3(const int64_t k[3])
{
    uint64_t h = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 3; i++) {
        h ^= (uint64_t)k[i] + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 33);
}

static uint32_t idmap_find(const tr_idmap *m, const int64_t k[3])
{
    if (!m || !m->cap)
        return 0;
    size_t i = mix3(k) & (m->cap - 1);
    while (m->slots[i].val) {
        if (!memcmp(m->slots[i].k, k, sizeof m->slots[i].k))
            return m->slots[i].val;
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

static int idmap_put(tr_idmap **mp, const int64_t k[3], uint32_t val)
{
    tr_idmap *m = *mp;
    if (!m) {
        m = calloc(1, sizeof *m);
        if (!m)
            return -1;
        *mp = m;
    }
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 64;
        struct slot *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t j = 0; j < m->cap; j++) {
            tr_spill_tick();
            if (!m->slots[j].val)
                continue;
            size_t i = mix3(m->slots[j].k) & (ncap - 1);
            while (ns[i].val)
                i = (i + 1) & (ncap - 1);
            ns[i] = m->slots[j];
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    size_t i = mix3(k) & (m->cap - 1);
    while (m->slots[i].val)
        i = (i + 1) & (m->cap - 1);
    memcpy(m->slots[i].k, k, sizeof m->slots[i].k);
    m->slots[i].val = val;
    m->n++;
    return 0;
}

static void idmap_free(tr_idmap *m)
{
    if (m) {
        free(m->slots);
        free(m);
    }
}

/* Grows a vector through grow (a tr_spill_realloc_*()). */
static int vec_reserve_with(void **v, size_t *cap, size_t need, size_t elsize,
                            void *(*grow)(void *, size_t, size_t))
{
    if (need <= *cap)
        return 0;
    size_t ncap = *cap ? *cap : 16;
    while (ncap < need)
        ncap *= 2;
    /* large arrays (the events, the detail rows) go to a file: lib/spill.h */
    void *nv = grow(*v, *cap * elsize, ncap * elsize);
    if (!nv)
        return -1;
    /* no zeroing: untouched capacity then costs address space, not memory */
    if (*cap == 0)
        memset(nv, 0, elsize);   /* element 0 of the 1-based vectors */
    *v = nv;
    *cap = ncap;
    return 0;
}

int tr_vec_reserve_(void **v, size_t *cap, size_t need, size_t elsize)
{
    return vec_reserve_with(v, cap, need, elsize, tr_spill_realloc_sequential);
}

/* 1-based vectors keep element 0 as a placeholder so index 0 can mean "none". */
#define ONE_BASED_PUSH(t, vec, value)                                          \
    ((tr_vec_reserve((vec), ((vec).n ? (vec).n : 1) + 1) < 0)                  \
         ? 0u                                                                  \
         : ((vec).n = (vec).n ? (vec).n : 1, (vec).v[(vec).n] = (value),       \
            (uint32_t)(vec).n++))

tr_status tr_trace_init(tr_trace *t, tr_error *err)
{
    (void)err;
    memset(t, 0, sizeof *t);
    tr_intern_init(&t->strings);
    tr_i64map_init(&t->wide);
    tr_i64map_init(&t->raw_names);
    return TR_OK;
}

void tr_trace_free(tr_trace *t)
{
    tr_intern_free(&t->strings);
    tr_i64map_free(&t->wide);
    tr_i64map_free(&t->raw_names);
    tr_spill_free(t->events.v);
    tr_spill_free(t->extras.v);
    tr_spill_free(t->mem);
    tr_spill_free(t->backward.v);
    tr_spill_free(t->comms.v);
    tr_spill_free(t->clock_offsets.v);
    tr_spill_free(t->sources.v);
    tr_spill_free(t->processes.v);
    tr_spill_free(t->threads.v);
    tr_spill_free(t->devices.v);
    tr_spill_free(t->streams.v);
    tr_spill_free(t->stack_nodes.v);
    tr_spill_free(t->kernels.v);
    tr_spill_free(t->copies.v);
    tr_spill_free(t->apis.v);
    tr_spill_free(t->memset_values.v);
    idmap_free(t->thread_map);
    idmap_free(t->stream_map);
    idmap_free(t->device_map);
    idmap_free(t->process_map);
    idmap_free(t->stack_map);
    free(t->detail_cache);
    memset(t, 0, sizeof *t);
}

uint32_t tr_add_source(tr_trace *t, const char *path, const char *format, const char *format_version)
{
    tr_source s = {tr_str(t, path), tr_str(t, format),
                   format_version ? tr_str(t, format_version) : 0, 0, -1, 0};
    return ONE_BASED_PUSH(t, t->sources, s);
}

uint32_t tr_process_get(tr_trace *t, uint32_t source, int64_t pid)
{
    int64_t k[3] = {source, pid, 0};
    uint32_t id = idmap_find(t->process_map, k);
    if (id)
        return id;
    tr_process p = {source, pid, 0};
    id = ONE_BASED_PUSH(t, t->processes, p);
    if (id && idmap_put(&t->process_map, k, id) < 0)
        return 0;
    return id;
}

uint32_t tr_thread_get(tr_trace *t, uint32_t process, int64_t tid)
{
    int64_t k[3] = {process, tid, 0};
    uint32_t id = idmap_find(t->thread_map, k);
    if (id)
        return id;
    tr_thread th = {process, tid, 0};
    id = ONE_BASED_PUSH(t, t->threads, th);
    if (id && idmap_put(&t->thread_map, k, id) < 0)
        return 0;
    return id;
}

uint32_t tr_device_get(tr_trace *t, uint32_t source, int64_t device)
{
    int64_t k[3] = {source, device, 0};
    uint32_t id = idmap_find(t->device_map, k);
    if (id)
        return id;
    tr_device d = {source, device, 0, -1, -1, -1, -1};
    id = ONE_BASED_PUSH(t, t->devices, d);
    if (id && idmap_put(&t->device_map, k, id) < 0)
        return 0;
    return id;
}

uint32_t tr_stream_get(tr_trace *t, uint32_t device, int64_t context, int64_t stream)
{
    int64_t k[3] = {device, context, stream};
    uint32_t id = idmap_find(t->stream_map, k);
    if (id)
        return id;
    tr_stream s = {device, context, stream};
    id = ONE_BASED_PUSH(t, t->streams, s);
    if (id && idmap_put(&t->stream_map, k, id) < 0)
        return 0;
    return id;
}

uint32_t tr_stack_child(tr_trace *t, uint32_t parent, uint32_t frame)
{
    int64_t k[3] = {parent, frame, 0};
    uint32_t id = idmap_find(t->stack_map, k);
    if (!id) {
        tr_stack_node sn = {parent, frame};
        id = ONE_BASED_PUSH(t, t->stack_nodes, sn);
        if (!id || idmap_put(&t->stack_map, k, id) < 0)
            return 0;
    }
    return id;
}

int tr_shape_get(tr_trace *t, const char *s, size_t n, uint32_t *shape)
{
    if (n == 2 && s[0] == '[' && s[1] == ']') {
        *shape = 0;
        return 0;
    }
    *shape = tr_intern_add(&t->strings, s, n);
    return *shape ? 0 : -1;
}

uint32_t tr_stack_get(tr_trace *t, const uint32_t *frames, size_t nframes)
{
    uint32_t node = 0;
    for (size_t i = 0; i < nframes && (node = tr_stack_child(t, node, frames[i])); i++)
        ;
    return node;
}

atomic_size_t tr_events_added;

tr_event *tr_add_event(tr_trace *t, tr_kind kind)
{
    /* the event array, most of the memory, has a heap budget of its own */
    if (t->events.n == t->events.cap
        && vec_reserve_with((void **)&t->events.v, &t->events.cap, t->events.n + 1, sizeof *t->events.v,
                            tr_spill_realloc_primary) < 0)
        return NULL;
    /* a load and a store, not a locked add: this is the hottest call of every reader */
    atomic_store_explicit(&tr_events_added,
                          atomic_load_explicit(&tr_events_added, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    tr_spill_tick();
    tr_event *e = &t->events.v[t->events.n++];
    memset(e, 0, sizeof *e);
    e->kind = (uint8_t)kind;
    e->correlation32 = TR_CORRELATION_NONE;
    e->parent = -1;
    t->tree_built = 0;
    return e;
}

/* The wide map's key: the event's index and which field. */
static int64_t wide_key(const tr_trace *t, const tr_event *e, int field)
{
    return (int64_t)(e - t->events.v) * TR_WIDE_FIELDS + field;
}

int64_t tr_wide_value_(const tr_trace *t, const tr_event *e, int field)
{
    int64_t v = 0;
    tr_i64map_get(&t->wide, wide_key(t, e, field), &v);
    return v;
}

int tr_set_correlation(tr_trace *t, tr_event *e, int64_t correlation)
{
    if (correlation >= 0 && correlation < TR_CORRELATION_WIDE) {
        e->correlation32 = (uint32_t)correlation;
        return 0;
    }
    if (correlation == -1) {
        e->correlation32 = TR_CORRELATION_NONE;
        return 0;
    }
    if (tr_i64map_put(&t->wide, wide_key(t, e, TR_WIDE_CORRELATION), correlation) < 0)
        return -1;
    e->correlation32 = TR_CORRELATION_WIDE;
    return 0;
}

int tr_set_depth(tr_trace *t, tr_event *e, int64_t depth)
{
    if (depth < TR_DEPTH_WIDE) {
        e->depth16 = (uint16_t)depth;
        return 0;
    }
    if (tr_i64map_put(&t->wide, wide_key(t, e, TR_WIDE_DEPTH), depth) < 0)
        return -1;
    e->depth16 = TR_DEPTH_WIDE;
    return 0;
}

int tr_set_wide_time_(tr_trace *t, tr_event *e, uint32_t *to, int64_t v, int field)
{
    if (tr_i64map_put(&t->wide, wide_key(t, e, field), v) < 0)
        return -1;
    *to = TR_TIME_WIDE;
    return 0;
}

/* tr_trace.raw_names' value: the raw name, with this bit once an event of
 * that name holds a raw name of its own in the wide map. */
#define RAW_NAME_OWNED ((int64_t)1 << 32)

uint32_t tr_raw_name_of_(const tr_trace *t, const tr_event *e)
{
    if (e->extra && t->extras.v[e->extra].raw_name)
        return t->extras.v[e->extra].raw_name;
    int64_t v = 0, own;
    tr_i64map_get(&t->raw_names, e->name, &v);
    if ((v & RAW_NAME_OWNED) && tr_i64map_get(&t->wide, wide_key(t, e, TR_WIDE_RAW_NAME), &own))
        return (uint32_t)own;
    return (uint32_t)v;
}

int tr_set_raw_name(tr_trace *t, tr_event *e, uint32_t raw)
{
    if (e->extra)
        t->extras.v[e->extra].raw_name = raw;
    if (!raw) {
        e->flags &= (uint8_t)~TR_FLAG_RAW_NAMED;
        return 0;
    }
    e->flags |= TR_FLAG_RAW_NAMED;
    if (e->extra)
        return 0;
    int64_t v, own;
    if (!tr_i64map_get(&t->raw_names, e->name, &v))
        return tr_i64map_put(&t->raw_names, e->name, raw);
    int64_t key = wide_key(t, e, TR_WIDE_RAW_NAME);
    if ((uint32_t)v == raw && (!(v & RAW_NAME_OWNED) || !tr_i64map_get(&t->wide, key, &own)))
        return 0;   /* the name's (an own one set before is replaced below) */
    if (!(v & RAW_NAME_OWNED) && tr_i64map_put(&t->raw_names, e->name, v | RAW_NAME_OWNED) < 0)
        return -1;
    return tr_i64map_put(&t->wide, key, raw);
}

const tr_event_extra tr_no_extra = {-1, -1, 0, -1, 0};

/* Stores v in a row's 32-bit field, or in the wide map (TR_WIDE_SEQ or TR_WIDE_OP_ID). */
static int set_narrow(tr_trace *t, const tr_event *e, int32_t *to, int64_t v, int field)
{
    if (v > TR_EXTRA_WIDE && v <= INT32_MAX) {
        *to = (int32_t)v;
        return 0;
    }
    *to = TR_EXTRA_WIDE;
    return tr_i64map_put(&t->wide, wide_key(t, e, field), v);
}

int tr_extra_set(tr_trace *t, tr_event *e, const tr_event_extra *x)
{
    const tr_event_extra *d = &tr_no_extra;
    if (!e->extra && x->seq == d->seq && x->op_id == d->op_id && x->bytes == d->bytes
        && x->flops == d->flops && x->shape == d->shape)
        return 0;
    static const tr_extra_row none = {0, -1, -1, -1, 0};
    if (!e->extra && !(e->extra = ONE_BASED_PUSH(t, t->extras, none)))
        return -1;
    tr_extra_row *to = &t->extras.v[e->extra];
    to->bytes = x->bytes;
    to->flops = x->flops;
    to->shape = x->shape;
    return set_narrow(t, e, &to->seq, x->seq, TR_WIDE_SEQ) < 0
           || set_narrow(t, e, &to->op_id, x->op_id, TR_WIDE_OP_ID) < 0 ? -1 : 0;
}

int tr_set_bytes(tr_trace *t, tr_event *e, int64_t bytes)
{
    tr_event_extra x = tr_extra(t, e);
    x.bytes = bytes;
    return tr_extra_set(t, e, &x);
}

/* Detail rows repeat: a kernel is launched with one configuration, an API call
 * returns success, thousands of times over.  Each kind keeps its recent rows
 * in a small direct-mapped cache by hash, and an add equal to the cached row
 * takes that row's index: the repeats of real traces are found in a fixed
 * 64 KiB, where their copies were most of the detail arrays (at 10^6 nvprof
 * events, 15 MB of 16). */
enum { DETAIL_KERNEL, DETAIL_COPY, DETAIL_API, DETAIL_MEMSET, DETAIL_KINDS_ };
#define DETAIL_CACHE_SLOTS 4096
struct tr_detail_cache {
    uint32_t row[DETAIL_KINDS_][DETAIL_CACHE_SLOTS];
};

/* Rows are whole 4-byte words (int32 fields, or int64 ones with padding
 * zeroed): hashed a word at a time. */
static uint64_t row_hash(const unsigned char *p, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15u;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        uint32_t w;
        memcpy(&w, p + i, 4);
        h = (h ^ w) * 0xFF51AFD7ED558CCDu;
        h ^= h >> 29;
    }
    return h ^ (h >> 32);
}

/* Pushes row (size bytes, padding zeroed) onto a 1-based vector, or returns the
 * index of an equal row the cache holds; 0 on out-of-memory. */
static uint32_t push_shared_row(tr_trace *t, int kind, void **v, size_t *n, size_t *cap,
                                const void *row, size_t size)
{
    if (!t->detail_cache)
        t->detail_cache = calloc(1, sizeof *t->detail_cache);   /* none: no sharing */
    uint32_t *slot = t->detail_cache
                         ? &t->detail_cache->row[kind][row_hash(row, size) % DETAIL_CACHE_SLOTS]
                         : NULL;
    if (slot && *slot && memcmp((const char *)*v + (size_t)*slot * size, row, size) == 0)
        return *slot;
    size_t at = *n ? *n : 1;
    if (at >= UINT32_MAX || tr_vec_reserve_(v, cap, at + 1, size) < 0)
        return 0;
    memcpy((char *)*v + at * size, row, size);
    *n = at + 1;
    if (slot)
        *slot = (uint32_t)at;
    return (uint32_t)at;
}

#define PUSH_SHARED(t, kind, vec, row) \
    push_shared_row((t), (kind), (void **)&(vec).v, &(vec).n, &(vec).cap, (row), sizeof *(vec).v)

uint32_t tr_add_kernel_detail(tr_trace *t, const tr_kernel_detail *d)
{
    return PUSH_SHARED(t, DETAIL_KERNEL, t->kernels, d);   /* int32 fields: no padding */
}

uint32_t tr_add_copy_detail(tr_trace *t, const tr_copy_detail *d)
{
    return PUSH_SHARED(t, DETAIL_COPY, t->copies, d);
}

uint32_t tr_add_api_detail(tr_trace *t, const tr_api_detail *d)
{
    tr_api_detail row;
    memset(&row, 0, sizeof row);   /* the padding after cbid is compared too */
    row.cbid = d->cbid;
    row.return_value = d->return_value;
    return PUSH_SHARED(t, DETAIL_API, t->apis, &row);
}

uint32_t tr_add_memset_value(tr_trace *t, int64_t value)
{
    return PUSH_SHARED(t, DETAIL_MEMSET, t->memset_values, &value);
}
