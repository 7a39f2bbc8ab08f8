/*
 * encode.c - CUPTI activity records -> normalised raw records and chunks.
 *
 * Runs on the writer thread only (and at exit, after that thread is joined),
 * so nothing here locks.  Strings (kernel, NVTX, device and thread names) are
 * interned by content; a STRINGS chunk defining new ids is always written
 * before the RECORDS chunks that use them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "record/agent/agent.h"

#define STAGE_FLUSH (4u << 20)   /* write a kind's records once this many bytes are staged */

void rec_enc_init(rec_encoder *e, int fd)
{
    memset(e, 0, sizeof *e);
    e->fd = fd;
    e->next_sid = 1;
    tr_raw_crc32_slices_init(&e->crc);
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

uint32_t rec_enc_string(rec_encoder *e, const char *s)
{
    if (!s)
        return 0;
    size_t len = strlen(s);
    if (len > (1u << 20))
        len = 1u << 20;
    uint64_t h = hash_str(s, len);
    if ((e->nstrs + 1) * 2 > e->cap_strs && strtab_grow(e) < 0)
        return 0;
    size_t j = h & (e->cap_strs - 1);
    while (e->strs[j].hash) {
        if (e->strs[j].hash == h && e->strs[j].len == len && memcmp(e->strs[j].s, s, len) == 0)
            return e->strs[j].sid;
        j = (j + 1) & (e->cap_strs - 1);
    }
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
    uint32_t hdr[2] = {sid, (uint32_t)len};
    memcpy(e->pending + e->npending, hdr, 8);
    memcpy(e->pending + e->npending + 8, s, len);
    memset(e->pending + e->npending + 8 + len, 0, ((len + 3) & ~(size_t)3) - len);
    e->npending = need;
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
    if (e->npending) {
        rec_write_chunk(e, TR_RAW_CH_STRINGS, e->pending, e->npending);
        e->npending = 0;
    }
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
        if (e->npending) {
            rec_write_chunk(e, TR_RAW_CH_STRINGS, e->pending, e->npending);
            e->npending = 0;
        }
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

void rec_enc_thread_name(rec_encoder *e, uint32_t tid, const char *name)
{
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
    if (!e->keep || e->keep(ts))
        return 1;
    e->stats[TR_RAW_STAT_FILTERED]++;
    return 0;
}

/* A GPU activity with a zero interval was still running at the flush: it is
 * kept, flagged, and counted; otherwise the capture window decides. */
enum { GPU_KEEP, GPU_RUNNING, GPU_DROP };
static int gpu_interval(rec_encoder *e, uint64_t start, uint64_t end)
{
    if (!start && !end) {
        e->stats[TR_RAW_STAT_INCOMPLETE]++;
        return GPU_RUNNING;
    }
    return keep(e, start) ? GPU_KEEP : GPU_DROP;
}

void rec_enc_activity(rec_encoder *e, const CUpti_Activity *a)
{
    switch (a->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        const CUpti_ActivityKernel10 *k = (const void *)a;
        tr_raw_kernel r;
        memset(&r, 0, sizeof r);
        r.start = k->start;
        r.end = k->end;
        int when = gpu_interval(e, r.start, r.end);
        if (when == GPU_DROP)
            return;
        if (when == GPU_RUNNING)
            r.flags |= TR_RAW_KF_INCOMPLETE;
        r.graph_node = k->graphNodeId;
        r.corr = k->correlationId;
        r.name_sid = rec_enc_string(e, k->name);
        r.device = k->deviceId;
        r.context = k->contextId;
        r.stream = k->streamId;
        r.grid[0] = k->gridX, r.grid[1] = k->gridY, r.grid[2] = k->gridZ;
        r.block[0] = k->blockX, r.block[1] = k->blockY, r.block[2] = k->blockZ;
        r.smem_static = (uint32_t)k->staticSharedMemory;
        r.smem_dynamic = (uint32_t)k->dynamicSharedMemory;
        r.local_per_thread = k->localMemoryPerThread;
        r.registers = k->registersPerThread;
        r.launch_type = k->launchType;
        r.graph_id = k->graphId;
        rec_enc_add(e, TR_RAW_REC_KERNEL, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: {
        const CUpti_ActivityAPI *p = (const void *)a;
        if (!keep(e, p->start))
            return;
        tr_raw_api r;
        memset(&r, 0, sizeof r);
        r.start = p->start;
        r.end = p->end;
        r.corr = p->correlationId;
        r.cbid = p->cbid;
        r.tid = p->threadId;
        r.ret = p->returnValue;
        r.domain = a->kind == CUPTI_ACTIVITY_KIND_RUNTIME  ? TR_RAW_API_RUNTIME
                   : a->kind == CUPTI_ACTIVITY_KIND_DRIVER ? TR_RAW_API_DRIVER
                                                            : TR_RAW_API_INTERNAL;
        rec_enc_add(e, TR_RAW_REC_API, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
        const CUpti_ActivityMemcpy6 *m = (const void *)a;
        tr_raw_memcpy r;
        memset(&r, 0, sizeof r);
        r.start = m->start;
        r.end = m->end;
        int when = gpu_interval(e, r.start, r.end);
        if (when == GPU_DROP)
            return;
        if (when == GPU_RUNNING)
            r.flags |= TR_RAW_KF_INCOMPLETE;
        r.bytes = m->bytes;
        r.corr = m->correlationId;
        r.runtime_corr = m->runtimeCorrelationId;
        r.device = m->deviceId;
        r.context = m->contextId;
        r.stream = m->streamId;
        r.copy_kind = m->copyKind;
        r.src_kind = m->srcKind;
        r.dst_kind = m->dstKind;
        r.graph_id = m->graphId;
        rec_enc_add(e, TR_RAW_REC_MEMCPY, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
        const CUpti_ActivityMemcpyPtoP4 *m = (const void *)a;
        tr_raw_memcpy r;
        memset(&r, 0, sizeof r);
        r.start = m->start;
        r.end = m->end;
        int when = gpu_interval(e, r.start, r.end);
        if (when == GPU_DROP)
            return;
        if (when == GPU_RUNNING)
            r.flags |= TR_RAW_KF_INCOMPLETE;
        r.bytes = m->bytes;
        r.corr = m->correlationId;
        r.device = m->deviceId;
        r.context = m->contextId;
        r.stream = m->streamId;
        r.copy_kind = m->copyKind;
        r.src_kind = m->srcKind;
        r.dst_kind = m->dstKind;
        r.graph_id = m->graphId;
        rec_enc_add(e, TR_RAW_REC_MEMCPY, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
        const CUpti_ActivityMemset4 *m = (const void *)a;
        tr_raw_memset r;
        memset(&r, 0, sizeof r);
        r.start = m->start;
        r.end = m->end;
        int when = gpu_interval(e, r.start, r.end);
        if (when == GPU_DROP)
            return;
        if (when == GPU_RUNNING)
            r.flags |= TR_RAW_KF_INCOMPLETE;
        r.bytes = m->bytes;
        r.corr = m->correlationId;
        r.device = m->deviceId;
        r.context = m->contextId;
        r.stream = m->streamId;
        r.value = m->value;
        r.memory_kind = m->memoryKind;
        rec_enc_add(e, TR_RAW_REC_MEMSET, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
        const CUpti_ActivitySynchronization2 *s = (const void *)a;
        if (!keep(e, s->start))
            return;
        tr_raw_sync r;
        memset(&r, 0, sizeof r);
        r.start = s->start;
        r.end = s->end;
        r.corr = s->correlationId;
        r.type = (uint32_t)s->type;
        r.context = s->contextId;
        r.stream = s->streamId;
        r.event_id = s->cudaEventId;
        rec_enc_add(e, TR_RAW_REC_SYNC, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
        const CUpti_ActivityMarker2 *m = (const void *)a;
        tr_raw_marker r;
        memset(&r, 0, sizeof r);
        r.ts = m->timestamp;
        r.id = m->id;
        if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
            r.flags = TR_RAW_MK_MARK;
        else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START)
            r.flags = TR_RAW_MK_START;
        else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)
            r.flags = TR_RAW_MK_END;
        else
            return;   /* sync acquire/release markers: no range */
        if (e->keep) {
            if (r.flags == TR_RAW_MK_END) {
                if (!kept_take(e, r.id)) {
                    e->stats[TR_RAW_STAT_FILTERED]++;
                    return;
                }
            } else if (!keep(e, r.ts)) {
                return;
            } else if (r.flags == TR_RAW_MK_START) {
                kept_put(e, r.id);
            }
        }
        if (m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD
            || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS)
            r.tid = m->objectId.pt.threadId;
        r.name_sid = rec_enc_string(e, m->name);
        r.domain_sid = rec_enc_string(e, m->domain);
        rec_enc_add(e, TR_RAW_REC_MARKER, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
        const CUpti_ActivityDevice5 *d = (const void *)a;
        tr_raw_device r;
        memset(&r, 0, sizeof r);
        r.global_memory = d->globalMemorySize;
        r.id = d->id;
        r.name_sid = rec_enc_string(e, d->name);
        r.cc_major = d->computeCapabilityMajor;
        r.cc_minor = d->computeCapabilityMinor;
        r.sm_count = d->numMultiprocessors;
        rec_enc_add(e, TR_RAW_REC_DEVICE, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
        const CUpti_ActivityContext3 *c = (const void *)a;
        tr_raw_context r = {c->contextId, c->deviceId, c->nullStreamId, 0};
        rec_enc_add(e, TR_RAW_REC_CONTEXT, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_STREAM: {
        const CUpti_ActivityStream *s = (const void *)a;
        tr_raw_stream r = {s->contextId, s->streamId, s->priority, (uint32_t)s->flag,
                           s->correlationId, 0};
        rec_enc_add(e, TR_RAW_REC_STREAM, &r);
        return;
    }
    case CUPTI_ACTIVITY_KIND_NAME: {
        const CUpti_ActivityName *n = (const void *)a;
        if (n->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD)
            rec_enc_thread_name(e, n->objectId.pt.threadId, n->name);
        return;
    }
    default:
        e->stats[TR_RAW_STAT_UNKNOWN]++;
        return;
    }
}

void rec_enc_buffer(rec_encoder *e, uint8_t *buf, size_t valid)
{
    CUpti_Activity *rec = NULL;
    for (;;) {
        CUptiResult r = cuptiActivityGetNextRecord(buf, valid, &rec);
        if (r != CUPTI_SUCCESS)
            break;   /* MAX_LIMIT_REACHED: end; INVALID_KIND: incomplete record */
        rec_enc_activity(e, rec);
    }
    rec_enc_flush(e);
}
