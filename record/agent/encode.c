/*
 * encode.c - CUPTI activity records -> normalised raw records and chunks.
 *
 * Runs on the writer thread only (and at exit, after that thread is joined),
 * so nothing here locks.  Strings (kernel, NVTX, device and thread names) are
 * interned by content in a cache of bounded size; a STRINGS chunk defining new
 * ids is always written before the RECORDS chunks that use them.  Each CUPTI
 * activity kind is a row of act_kinds, which one function applies.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record/agent/agent.h"

#define STAGE_FLUSH (4u << 20)   /* write a kind's records once this many bytes are staged */
#define PENDING_FLUSH (1u << 20) /* write new strings once this many bytes wait */
#define STR_BUDGET (4u << 20)    /* string text the cache keeps (TRACE_RECORD_STRING_CACHE) */
#define STR_MAX_SLOTS (1u << 17) /* and its table's slots at most */
#define MAX_STR (1u << 20)       /* longer strings are cut */

static void act_rows_init(rec_encoder *e);

void rec_enc_init(rec_encoder *e, int fd)
{
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->next_sid = 1;
    e->str_budget = STR_BUDGET;
    tr_raw_crc32_slices_init(&e->crc);
    act_rows_init(e);
}

void rec_enc_free(rec_encoder *e)
{
    for (size_t i = 0; i < TR_RAW_REC_COUNT_; i++)
        free(e->stage[i].data);
    for (size_t i = 0; i < e->cap_strs; i++)
        free(e->strs[i].s);
    free(e->strs);
    free(e->pending);
    free(e->kept_ranges);
    free(e->named);
    free(e->nvtx_named);
    free(e->query_ids[0]);
    free(e->query_ids[1]);
    free(e->psync);
    memset(e, 0, sizeof *e);
    e->fd = -1;
}

static int write_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        ssize_t w = writev(fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    return 0;
}

void rec_write_chunk(rec_encoder *e, unsigned type, const void *payload, size_t len)
{
    if (e->fd < 0 || e->write_failed)
        return;
    static const unsigned char zeros[8];
    size_t padded = tr_raw_pad8(len);
    tr_raw_chunk c;
    memset(&c, 0, sizeof c);
    c.sync = TR_RAW_CHUNK_SYNC;
    c.type = (uint16_t)type;
    c.payload_len = (uint32_t)padded;
    c.crc = tr_raw_crc32_update_sliced(&e->crc, tr_raw_crc32_update_sliced(&e->crc, 0, payload, len),
                                       zeros, padded - len);
    c.seq = e->seq++;
    struct iovec iov[3] = {{&c, sizeof c}, {(void *)payload, len}, {(void *)zeros, padded - len}};
    if (write_all(e->fd, iov, padded > len ? 3 : 2) < 0)
        e->write_failed = 1;
}

static uint64_t hash_str(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h | 1;
}

static int grow(void **p, size_t *cap, size_t need, size_t elsize)
{
    if (need <= *cap)
        return 0;
    size_t nc = *cap ? *cap : 64;
    while (nc < need)
        nc *= 2;
    void *q = realloc(*p, nc * elsize);
    if (!q)
        return -1;
    *p = q;
    *cap = nc;
    return 0;
}

static int strtab_grow(rec_encoder *e)
{
    size_t nc = e->cap_strs ? e->cap_strs * 2 : 1024;
    rec_strent *n = calloc(nc, sizeof *n);
    if (!n)
        return -1;
    for (size_t i = 0; i < e->cap_strs; i++) {
        if (!e->strs[i].hash)
            continue;
        size_t j = e->strs[i].hash & (nc - 1);
        while (n[j].hash)
            j = (j + 1) & (nc - 1);
        n[j] = e->strs[i];
    }
    free(e->strs);
    e->strs = n;
    e->cap_strs = nc;
    return 0;
}

/* Empties the cache.  Programs that name every range differently (emit_nvtx's
 * sequence numbers and shapes) would otherwise grow it without end; a string
 * seen again after this is written again under a new id. */
static void strtab_reset(rec_encoder *e)
{
    for (size_t i = 0; i < e->cap_strs; i++) {
        free(e->strs[i].s);
        e->strs[i] = (rec_strent){0, 0, 0, NULL};
    }
    e->nstrs = 0;
    e->str_bytes = 0;
    e->stats[TR_RAW_STAT_STRING_RESETS]++;
}

static void write_pending_strings(rec_encoder *e)
{
    if (e->npending) {
        rec_write_chunk(e, TR_RAW_CH_STRINGS, e->pending, e->npending);
        e->npending = 0;
    }
}

uint32_t rec_enc_string(rec_encoder *e, const char *s)
{
    if (!s)
        return 0;
    size_t len = strnlen(s, MAX_STR);
    uint64_t h = hash_str(s, len);
    if (e->cap_strs) {
        for (size_t j = h & (e->cap_strs - 1); e->strs[j].hash; j = (j + 1) & (e->cap_strs - 1))
            if (e->strs[j].hash == h && e->strs[j].len == len && memcmp(e->strs[j].s, s, len) == 0)
                return e->strs[j].sid;
    }
    if (e->str_bytes + len > e->str_budget
        || ((e->nstrs + 1) * 2 > e->cap_strs && e->cap_strs >= STR_MAX_SLOTS))
        strtab_reset(e);
    if ((e->nstrs + 1) * 2 > e->cap_strs && strtab_grow(e) < 0)
        return 0;
    size_t j = h & (e->cap_strs - 1);
    while (e->strs[j].hash)
        j = (j + 1) & (e->cap_strs - 1);
    char *copy = malloc(len + 1);
    size_t need = e->npending + 8 + ((len + 3) & ~(size_t)3);
    if (!copy || grow((void **)&e->pending, &e->cap_pending, need, 1) < 0) {
        free(copy);
        return 0;
    }
    memcpy(copy, s, len);
    copy[len] = 0;
    uint32_t sid = e->next_sid++;
    e->strs[j] = (rec_strent){h, sid, (uint32_t)len, copy};
    e->nstrs++;
    e->str_bytes += len;
    uint32_t hdr[2] = {sid, (uint32_t)len};
    memcpy(e->pending + e->npending, hdr, 8);
    memcpy(e->pending + e->npending + 8, s, len);
    memset(e->pending + e->npending + 8 + len, 0, ((len + 3) & ~(size_t)3) - len);
    e->npending = need;
    /* a string may be defined any time before its first use: early is fine */
    if (e->npending >= PENDING_FLUSH)
        write_pending_strings(e);
    return sid;
}

static void flush_kind(rec_encoder *e, unsigned kind)
{
    rec_stage *st = &e->stage[kind];
    if (!st->count)
        return;
    uint16_t k16 = (uint16_t)kind, sz = (uint16_t)tr_raw_rec_size(kind);
    memcpy(st->data, &k16, 2);
    memcpy(st->data + 2, &sz, 2);
    memcpy(st->data + 4, &st->count, 4);
    rec_write_chunk(e, TR_RAW_CH_RECORDS, st->data, st->n);
    e->stats[TR_RAW_STAT_RECORDS] += st->count;
    st->n = 8;
    st->count = 0;
}

void rec_enc_flush(rec_encoder *e)
{
    write_pending_strings(e);
    for (unsigned k = 1; k < TR_RAW_REC_COUNT_; k++)
        flush_kind(e, k);
}

void rec_enc_add(rec_encoder *e, unsigned kind, const void *rec)
{
    size_t sz = tr_raw_rec_size(kind);
    rec_stage *st = &e->stage[kind];
    if (!sz)
        return;
    if (st->n + sz > STAGE_FLUSH && st->count) {
        write_pending_strings(e);
        flush_kind(e, kind);
    }
    if (st->n == 0)
        st->n = 8;
    if (grow((void **)&st->data, &st->cap, st->n + sz, 1) < 0)
        return;
    memcpy(st->data + st->n, rec, sz);
    st->n += sz;
    st->count++;
}

/* Open-range ids kept by the capture filter, so that their ends are kept too. */
static void kept_put(rec_encoder *e, uint64_t id)
{
    id = id ? id : ~0ull;
    if ((e->n_kept + 1) * 2 > e->cap_kept) {
        size_t nc = e->cap_kept ? e->cap_kept * 2 : 256;
        uint64_t *n = calloc(nc, sizeof *n);
        if (!n)
            return;
        for (size_t i = 0; i < e->cap_kept; i++) {
            if (!e->kept_ranges[i])
                continue;
            size_t j = (e->kept_ranges[i] * 0x9e3779b97f4a7c15ull) >> 20 & (nc - 1);
            while (n[j])
                j = (j + 1) & (nc - 1);
            n[j] = e->kept_ranges[i];
        }
        free(e->kept_ranges);
        e->kept_ranges = n;
        e->cap_kept = nc;
    }
    size_t j = (id * 0x9e3779b97f4a7c15ull) >> 20 & (e->cap_kept - 1);
    while (e->kept_ranges[j] && e->kept_ranges[j] != id)
        j = (j + 1) & (e->cap_kept - 1);
    if (!e->kept_ranges[j])
        e->n_kept++;
    e->kept_ranges[j] = id;
}

/* 1 if id was kept; removes it (backward-shift deletion). */
static int kept_take(rec_encoder *e, uint64_t id)
{
    id = id ? id : ~0ull;
    if (!e->cap_kept)
        return 0;
    size_t mask = e->cap_kept - 1, j = (id * 0x9e3779b97f4a7c15ull) >> 20 & mask;
    while (e->kept_ranges[j] && e->kept_ranges[j] != id)
        j = (j + 1) & mask;
    if (!e->kept_ranges[j])
        return 0;
    e->kept_ranges[j] = 0;
    e->n_kept--;
    for (size_t k = (j + 1) & mask; e->kept_ranges[k]; k = (k + 1) & mask) {
        uint64_t v = e->kept_ranges[k];
        size_t home = (v * 0x9e3779b97f4a7c15ull) >> 20 & mask;
        if ((k > j && (home <= j || home > k)) || (k < j && home <= j && home > k)) {
            e->kept_ranges[j] = v;
            e->kept_ranges[k] = 0;
            j = k;
        }
    }
    return 1;
}

void rec_enc_thread_name(rec_encoder *e, uint32_t tid, const char *name, int by_nvtx)
{
    for (size_t i = 0; i < e->n_nvtx_named && !by_nvtx; i++)
        if (e->nvtx_named[i] == tid)
            return;
    if (by_nvtx && grow((void **)&e->nvtx_named, &e->cap_nvtx_named, e->n_nvtx_named + 1,
                        sizeof *e->nvtx_named) == 0)
        e->nvtx_named[e->n_nvtx_named++] = tid;
    uint32_t sid = rec_enc_string(e, name);
    if (!sid)
        return;
    uint64_t key = (uint64_t)tid << 32 | sid;
    for (size_t i = 0; i < e->n_named; i++)
        if (e->named[i] == key)
            return;
    if (grow((void **)&e->named, &e->cap_named, e->n_named + 1, sizeof *e->named) < 0)
        return;
    e->named[e->n_named++] = key;
    tr_raw_name n = {TR_RAW_OBJ_THREAD, tid, sid, 0};
    rec_enc_add(e, TR_RAW_REC_NAME, &n);
}

static int keep(rec_encoder *e, uint64_t ts)
{
    if (!e->keep || e->keep(ts - (uint64_t)e->clock_offset))
        return 1;
    e->stats[TR_RAW_STAT_FILTERED]++;
    return 0;
}

/* ------------------------------------------------------------ queries and syncs */

int rec_is_query(int driver, uint32_t cbid)
{
    if (driver)
        return cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery
               || cbid == CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz
               || cbid == CUPTI_DRIVER_TRACE_CBID_cuEventQuery;
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020
           || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000
           || cbid == CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020;
}

static size_t qslot(uint32_t id, size_t cap)
{
    return (size_t)((id * 0x9e3779b1u) & (uint32_t)(cap - 1));
}

/* Correlation ids of the queries of this buffer (set 0) and of the last (1):
 * open addressing, 0 is empty (CUPTI's ids start at 1). */
static void query_note(rec_encoder *e, uint32_t id)
{
    if (!id)
        return;
    if ((e->n_query[0] + 1) * 2 > e->cap_query) {
        size_t nc = e->cap_query ? e->cap_query * 2 : 256;
        uint32_t *a = calloc(nc, sizeof *a), *b = calloc(nc, sizeof *b);
        if (!a || !b) {
            free(a);
            free(b);
            return;
        }
        for (int g = 0; g < 2; g++) {
            uint32_t *to = g ? b : a;
            for (size_t i = 0; i < e->cap_query; i++) {
                uint32_t v = e->query_ids[g][i];
                if (!v)
                    continue;
                size_t j = qslot(v, nc);
                while (to[j])
                    j = (j + 1) & (nc - 1);
                to[j] = v;
            }
            free(e->query_ids[g]);
        }
        e->query_ids[0] = a;
        e->query_ids[1] = b;
        e->cap_query = nc;
    }
    size_t j = qslot(id, e->cap_query);
    while (e->query_ids[0][j] && e->query_ids[0][j] != id)
        j = (j + 1) & (e->cap_query - 1);
    if (!e->query_ids[0][j]) {
        e->query_ids[0][j] = id;
        e->n_query[0]++;
    }
}

static int query_seen(const rec_encoder *e, uint32_t id)
{
    if (!e->cap_query || !id)
        return 0;
    for (int g = 0; g < 2; g++)
        for (size_t j = qslot(id, e->cap_query); e->query_ids[g][j]; j = (j + 1) & (e->cap_query - 1))
            if (e->query_ids[g][j] == id)
                return 1;
    return 0;
}

/* At the end of a buffer: each held sync is a query's (folded, or kept and
 * flagged with --kinds query) or, once its buffer and the next have shown no
 * query of its id, a wait.  Then this buffer's queries become the last's. */
static void resolve_syncs(rec_encoder *e, int final)
{
    size_t kept = 0;
    for (size_t i = 0; i < e->n_psync; i++) {
        rec_pending_sync *p = &e->psync[i];
        if (query_seen(e, p->r.corr)) {
            if (!e->keep_queries) {
                e->stats[TR_RAW_STAT_QUERIES]++;
                continue;
            }
            p->r.type |= TR_RAW_SYNC_QUERY;
        } else if (!final && p->age++ == 0) {
            e->psync[kept++] = *p;
            continue;
        }
        if (keep(e, p->r.start))
            rec_enc_add(e, TR_RAW_REC_SYNC, &p->r);
    }
    e->n_psync = kept;
    if (e->cap_query) {
        uint32_t *t = e->query_ids[1];
        e->query_ids[1] = e->query_ids[0];
        e->query_ids[0] = t;
        memset(t, 0, e->cap_query * sizeof *t);
        e->n_query[1] = e->n_query[0];
        e->n_query[0] = 0;
    }
}

void rec_enc_finish(rec_encoder *e)
{
    resolve_syncs(e, 1);
    rec_enc_flush(e);
}

/* ------------------------------------------------------------ one record */

/* Every CUPTI kind the recorder writes is one row of act_kinds: its CUPTI and
 * raw record types, the list of fields copied from one to the other, how the
 * capture window applies, the strings it interns, and, for what a field list
 * cannot say, a hook.  rec_enc_activity does the rest for every kind.
 *
 * A field list is (raw field, CUPTI field) pairs; the converter made from it
 * copies them with plain typed assignments (a loop over field offsets cost the
 * writer a fifth more per kernel). */
#define KERNEL_FIELDS(F)                                                                       \
    F(start, start) F(end, end) F(graph_node, graphNodeId) F(corr, correlationId)            \
    F(device, deviceId) F(context, contextId) F(stream, streamId) F(grid[0], gridX)           \
    F(grid[1], gridY) F(grid[2], gridZ) F(block[0], blockX) F(block[1], blockY)               \
    F(block[2], blockZ) F(smem_static, staticSharedMemory)                                    \
    F(smem_dynamic, dynamicSharedMemory) F(local_per_thread, localMemoryPerThread)            \
    F(registers, registersPerThread) F(launch_type, launchType) F(graph_id, graphId)

/* correlationId is the driver call's id, runtimeCorrelationId the runtime
 * call's: both are kept, the reader picks the one to join on. */
#define MEMCPY_FIELDS(F)                                                                       \
    F(start, start) F(end, end) F(bytes, bytes) F(corr, correlationId)                         \
    F(runtime_corr, runtimeCorrelationId) F(device, deviceId) F(context, contextId)            \
    F(stream, streamId) F(copy_kind, copyKind) F(src_kind, srcKind) F(dst_kind, dstKind)      \
    F(graph_id, graphId) F(copy_count, copyCount)

#define P2P_FIELDS(F)                                                                          \
    F(start, start) F(end, end) F(bytes, bytes) F(corr, correlationId) F(device, deviceId)    \
    F(context, contextId) F(stream, streamId) F(copy_kind, copyKind) F(src_kind, srcKind)     \
    F(dst_kind, dstKind) F(graph_id, graphId)

#define MEMSET_FIELDS(F)                                                                       \
    F(start, start) F(end, end) F(bytes, bytes) F(corr, correlationId) F(device, deviceId)    \
    F(context, contextId) F(stream, streamId) F(value, value) F(memory_kind, memoryKind)

#define API_FIELDS(F)                                                                          \
    F(start, start) F(end, end) F(corr, correlationId) F(cbid, cbid) F(tid, threadId)          \
    F(ret, returnValue)

#define SYNC_FIELDS(F)                                                                         \
    F(start, start) F(end, end) F(corr, correlationId) F(type, type) F(context, contextId)    \
    F(stream, streamId) F(event_id, cudaEventId) F(ret, returnValue)

#define MARKER_FIELDS(F) F(ts, timestamp) F(id, id)

#define DEVICE_FIELDS(F)                                                                       \
    F(global_memory, globalMemorySize) F(id, id) F(cc_major, computeCapabilityMajor)          \
    F(cc_minor, computeCapabilityMinor) F(sm_count, numMultiprocessors)

#define CONTEXT_FIELDS(F) F(context, contextId) F(device, deviceId) F(null_stream, nullStreamId)

#define STREAM_FIELDS(F)                                                                       \
    F(context, contextId) F(stream, streamId) F(priority, priority) F(flag, flag)             \
    F(corr, correlationId)

#define OVERHEAD_FIELDS(F)                                                                     \
    F(start, start) F(end, end) F(overhead_kind, overheadKind) F(object_kind, objectKind)     \
    F(corr, correlationId)

#define RAW_MAX 128   /* bytes of the largest raw record (the kernel's 88) */
#define COPY_FIELD(R, C) r->R = (__typeof__(r->R))c->C;
#define CONVERTER(NAME, RAW, CUPTI, FIELDS)                         \
    _Static_assert(sizeof(RAW) <= RAW_MAX, #RAW " is staged in RAW_MAX bytes"); \
    static void NAME(void *raw, const void *cupti)                  \
    {                                                               \
        RAW *r = raw;                                               \
        const CUPTI *c = cupti;                                     \
        memset(r, 0, sizeof *r);                                    \
        FIELDS(COPY_FIELD)                                          \
    }
CONVERTER(conv_kernel, tr_raw_kernel, CUpti_ActivityKernel10, KERNEL_FIELDS)
CONVERTER(conv_memcpy, tr_raw_memcpy, CUpti_ActivityMemcpy6, MEMCPY_FIELDS)
CONVERTER(conv_p2p, tr_raw_memcpy, CUpti_ActivityMemcpyPtoP4, P2P_FIELDS)
CONVERTER(conv_memset, tr_raw_memset, CUpti_ActivityMemset4, MEMSET_FIELDS)
CONVERTER(conv_api, tr_raw_api, CUpti_ActivityAPI, API_FIELDS)
CONVERTER(conv_sync, tr_raw_sync, CUpti_ActivitySynchronization2, SYNC_FIELDS)
CONVERTER(conv_marker, tr_raw_marker, CUpti_ActivityMarker2, MARKER_FIELDS)
CONVERTER(conv_device, tr_raw_device, CUpti_ActivityDevice5, DEVICE_FIELDS)
CONVERTER(conv_context, tr_raw_context, CUpti_ActivityContext3, CONTEXT_FIELDS)
CONVERTER(conv_stream, tr_raw_stream, CUpti_ActivityStream, STREAM_FIELDS)
CONVERTER(conv_overhead, tr_raw_overhead, CUpti_ActivityOverhead3, OVERHEAD_FIELDS)

/* API records of queries are noted (a sync record of the same id is then a
 * query's) and folded unless --kinds query keeps them; 0 drops the record. */
static int api_pre(rec_encoder *e, const CUpti_Activity *a)
{
    const CUpti_ActivityAPI *p = (const void *)a;
    if (a->kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API
        || !rec_is_query(a->kind == CUPTI_ACTIVITY_KIND_DRIVER, p->cbid))
        return 1;
    query_note(e, p->correlationId);
    if (e->keep_queries)
        return 1;
    e->stats[TR_RAW_STAT_QUERIES]++;
    return 0;
}

static int api_post(rec_encoder *e, const CUpti_Activity *a, void *raw)
{
    tr_raw_api *r = raw;
    r->domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME  ? TR_RAW_API_RUNTIME
                : a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? TR_RAW_API_DRIVER
                                                        : TR_RAW_API_INTERNAL;
    if (r->domain == TR_RAW_API_INTERNAL)
        e->stats[TR_RAW_STAT_INTERNAL_LAUNCH]++;
    return 1;
}

/* A sync is held to the end of its buffer: whether it is a query's shows in
 * the query's API record, which may come after it (resolve_syncs). */
static int sync_post(rec_encoder *e, const CUpti_Activity *a, void *raw)
{
    (void)a;
    tr_raw_sync *r = raw;
    r->type &= TR_RAW_SYNC_TYPE_MASK;
    if (grow((void **)&e->psync, &e->cap_psync, e->n_psync + 1, sizeof *e->psync) == 0)
        e->psync[e->n_psync++] = (rec_pending_sync){*r, 0};
    else
        e->stats[TR_RAW_STAT_DROPPED]++;   /* out of memory: lost, and said so */
    return 0;
}

/* Ranges, not sync acquire/release markers.  Under a capture window an end is
 * kept exactly when its start was. */
static int marker_post(rec_encoder *e, const CUpti_Activity *a, void *raw)
{
    const CUpti_ActivityMarker2 *m = (const void *)a;
    tr_raw_marker *r = raw;
    if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
        r->flags = TR_RAW_MK_MARK;
    else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START)
        r->flags = TR_RAW_MK_START;
    else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)
        r->flags = TR_RAW_MK_END;
    else
        return 0;
    if (e->keep) {
        if (r->flags == TR_RAW_MK_END) {
            if (!kept_take(e, r->id)) {
                e->stats[TR_RAW_STAT_FILTERED]++;
                return 0;
            }
        } else if (!keep(e, r->ts)) {
            return 0;
        } else if (r->flags == TR_RAW_MK_START) {
            kept_put(e, r->id);
        }
    }
    if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
        r->tid = m->objectId.pt.threadId;
    return 1;
}

static int overhead_post(rec_encoder *e, const CUpti_Activity *a, void *raw)
{
    (void)e;
    const CUpti_ActivityOverhead3 *o = (const void *)a;
    tr_raw_overhead *r = raw;
    r->object_id = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId
                                                                 : o->objectId.pt.processId;
    return 1;
}

/* CUPTI's thread names: the program's own (NVTX) names win over them. */
static int name_post(rec_encoder *e, const CUpti_Activity *a, void *raw)
{
    (void)raw;
    const CUpti_ActivityName *n = (const void *)a;
    if (n->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
        rec_enc_thread_name(e, n->objectId.pt.threadId, n->name, 1);
    return 0;
}

/* How a record meets the capture window: not at all, by its start, or as a
 * GPU interval, which a flush can catch still running (both timestamps 0): it
 * is then kept, flagged and counted, whatever the window. */
enum { WIN_NONE, WIN_START, WIN_GPU };

typedef struct {
    CUpti_ActivityKind kind;
    uint8_t raw_kind;              /* 0: nothing written but by the hooks */
    uint8_t window;                /* WIN_* */
    uint16_t start, end;           /* CUPTI offsets of the interval the window sees */
    uint16_t raw_flags;            /* WIN_GPU: raw offset of the u8 flags byte */
    struct {
        uint16_t cupti, raw;       /* a const char * (0: none) interned into a u32 sid */
    } str[2];
    void (*convert)(void *raw, const void *cupti);
    int (*pre)(rec_encoder *e, const CUpti_Activity *a);   /* before the window; 0 drops */
    int (*post)(rec_encoder *e, const CUpti_Activity *a, void *raw);   /* after it; 0 drops */
} act_kind;

#define OFF(T, F) (uint16_t)offsetof(T, F)
#define ANYTIME 0, 0, 0
#define GPU_INTERVAL(T, RAW) OFF(T, start), OFF(T, end), OFF(RAW, flags)
#define AT_START(T) OFF(T, start), 0, 0
#define STR(T, F, RAW, RF) {OFF(T, F), OFF(RAW, RF)}
#define NO_STR {0, 0}

static const act_kind act_kinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, TR_RAW_REC_KERNEL, WIN_GPU,
     GPU_INTERVAL(CUpti_ActivityKernel10, tr_raw_kernel),
     {STR(CUpti_ActivityKernel10, name, tr_raw_kernel, name_sid), NO_STR}, conv_kernel, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_KERNEL, TR_RAW_REC_KERNEL, WIN_GPU,
     GPU_INTERVAL(CUpti_ActivityKernel10, tr_raw_kernel),
     {STR(CUpti_ActivityKernel10, name, tr_raw_kernel, name_sid), NO_STR}, conv_kernel, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_MEMCPY, TR_RAW_REC_MEMCPY, WIN_GPU,
     GPU_INTERVAL(CUpti_ActivityMemcpy6, tr_raw_memcpy), {NO_STR, NO_STR}, conv_memcpy, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, TR_RAW_REC_MEMCPY, WIN_GPU,
     GPU_INTERVAL(CUpti_ActivityMemcpyPtoP4, tr_raw_memcpy), {NO_STR, NO_STR}, conv_p2p, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_MEMSET, TR_RAW_REC_MEMSET, WIN_GPU,
     GPU_INTERVAL(CUpti_ActivityMemset4, tr_raw_memset), {NO_STR, NO_STR}, conv_memset, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_RUNTIME, TR_RAW_REC_API, WIN_START, AT_START(CUpti_ActivityAPI),
     {NO_STR, NO_STR}, conv_api, api_pre, api_post},
    {CUPTI_ACTIVITY_KIND_DRIVER, TR_RAW_REC_API, WIN_START, AT_START(CUpti_ActivityAPI),
     {NO_STR, NO_STR}, conv_api, api_pre, api_post},
    {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, TR_RAW_REC_API, WIN_START, AT_START(CUpti_ActivityAPI),
     {NO_STR, NO_STR}, conv_api, api_pre, api_post},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, TR_RAW_REC_SYNC, WIN_NONE, ANYTIME, {NO_STR, NO_STR},
     conv_sync, NULL, sync_post},
    {CUPTI_ACTIVITY_KIND_MARKER, TR_RAW_REC_MARKER, WIN_NONE, ANYTIME,
     {STR(CUpti_ActivityMarker2, name, tr_raw_marker, name_sid),
      STR(CUpti_ActivityMarker2, domain, tr_raw_marker, domain_sid)},
     conv_marker, NULL, marker_post},
    {CUPTI_ACTIVITY_KIND_DEVICE, TR_RAW_REC_DEVICE, WIN_NONE, ANYTIME,
     {STR(CUpti_ActivityDevice5, name, tr_raw_device, name_sid), NO_STR}, conv_device, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_CONTEXT, TR_RAW_REC_CONTEXT, WIN_NONE, ANYTIME, {NO_STR, NO_STR},
     conv_context, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_STREAM, TR_RAW_REC_STREAM, WIN_NONE, ANYTIME, {NO_STR, NO_STR},
     conv_stream, NULL, NULL},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, TR_RAW_REC_OVERHEAD, WIN_START, AT_START(CUpti_ActivityOverhead3),
     {NO_STR, NO_STR}, conv_overhead, NULL, overhead_post},
    {CUPTI_ACTIVITY_KIND_NAME, 0, WIN_NONE, ANYTIME, {NO_STR, NO_STR}, NULL, NULL, name_post},
};
#define N_ACT_KINDS (sizeof act_kinds / sizeof act_kinds[0])
_Static_assert(N_ACT_KINDS < 255, "act_row holds a row index + 1");

static void act_rows_init(rec_encoder *e)
{
    for (size_t i = 0; i < N_ACT_KINDS; i++)
        e->act_row[act_kinds[i].kind] = (uint8_t)(i + 1);
}

/* The work of every row.  It is inlined into one function per row (enc_row),
 * where the row's fields are constants and its hooks direct calls: the same
 * code through the row at run time cost the writer a tenth more per record. */
static inline __attribute__((always_inline)) void encode_row(rec_encoder *e, const CUpti_Activity *a,
                                                             const act_kind *k)
{
    const unsigned char *src = (const unsigned char *)a;
    if (k->pre && !k->pre(e, a))
        return;
    int running = 0;
    if (k->window != WIN_NONE) {
        uint64_t start, end = 0;
        memcpy(&start, src + k->start, 8);
        if (k->window == WIN_GPU)
            memcpy(&end, src + k->end, 8);
        if (k->window == WIN_GPU && !start && !end) {
            e->stats[TR_RAW_STAT_INCOMPLETE]++;
            running = 1;
        } else if (!keep(e, start)) {
            return;
        }
    }
    _Alignas(8) unsigned char r[RAW_MAX];
    if (k->convert)   /* zeroes the record first: its size is known there */
        k->convert(r, a);
    if (running)
        r[k->raw_flags] |= TR_RAW_KF_INCOMPLETE;
    if (k->post && !k->post(e, a, r))
        return;
    for (int i = 0; i < 2 && k->str[i].cupti; i++) {
        const char *s;
        memcpy(&s, src + k->str[i].cupti, sizeof s);
        uint32_t sid = s ? rec_enc_string(e, s) : 0;   /* an end marker has none: no call */
        memcpy(r + k->str[i].raw, &sid, 4);
    }
    rec_enc_add(e, k->raw_kind, r);
}

typedef void (*row_encoder)(rec_encoder *e, const CUpti_Activity *a);
#define ENC_ROW(I)                                                         \
    static void enc_row_##I(rec_encoder *e, const CUpti_Activity *a)      \
    {                                                                      \
        encode_row(e, a, &act_kinds[I]);                                   \
    }
ENC_ROW(0) ENC_ROW(1) ENC_ROW(2) ENC_ROW(3) ENC_ROW(4) ENC_ROW(5) ENC_ROW(6) ENC_ROW(7)
ENC_ROW(8) ENC_ROW(9) ENC_ROW(10) ENC_ROW(11) ENC_ROW(12) ENC_ROW(13) ENC_ROW(14)
static const row_encoder enc_row[] = {
    enc_row_0, enc_row_1, enc_row_2,  enc_row_3,  enc_row_4,  enc_row_5,  enc_row_6, enc_row_7,
    enc_row_8, enc_row_9, enc_row_10, enc_row_11, enc_row_12, enc_row_13, enc_row_14};
_Static_assert(sizeof enc_row / sizeof enc_row[0] == N_ACT_KINDS, "one enc_row per row of act_kinds");

void rec_enc_activity(rec_encoder *e, const CUpti_Activity *a)
{
    unsigned row = (unsigned)a->kind < CUPTI_ACTIVITY_KIND_COUNT ? e->act_row[a->kind] : 0;
    if (row)
        enc_row[row - 1](e, a);
    else
        e->stats[TR_RAW_STAT_UNKNOWN]++;
}

void rec_enc_buffer(rec_encoder *e, uint8_t *buf, size_t valid)
{
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buf, valid, &rec);
        if (r == CUPTI_ERROR_INVALID_KIND)   /* its size is unknown: the rest is lost */
            e->stats[TR_RAW_STAT_INVALID]++;
        if (r != CUPTI_SUCCESS)
            break;   /* MAX_LIMIT_REACHED: the end */
        rec_enc_activity(e, rec);
    }
    resolve_syncs(e, 0);
    rec_enc_flush(e);
}
