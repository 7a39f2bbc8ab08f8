/*
 * raw.c - reader for trace-record raw files (record/raw_format.h, docs/raw-format.md).
 *
 * One file per recorded process.  The file is mapped and read front to back;
 * pages already read are released as the reader moves on, so memory does not
 * grow with the file.  Every chunk whose CRC checks is used.  A truncated
 * tail, chunks with a bad CRC and garbage between chunks are skipped with a warning that says how much was lost; a bad
 * or newer-major header is refused (TR_ERR_INPUT).  Timestamps are recorded on
 * CLOCK_MONOTONIC and shifted to CLOCK_REALTIME ns with the header's anchor so
 * that files of several processes (and hosts) line up.
 *
 * The header says which clock the timestamps are on: CLOCK_MONOTONIC (the
 * recorder's timestamp callback), CUPTI's own clock anchored by t0_cupti (the
 * callback failed), or, in files that say neither, CLOCK_REALTIME.  STATUS
 * chunks say what the recorder could not record, and when another CUPTI
 * client took over: both become warnings.
 *
 * A copy joins to the runtime call that made it when there is one
 * (runtimeCorrelationId), else to the driver call (correlationId); kernels and
 * sets have one id, and a runtime call is preferred to a driver call sharing
 * it.  Syncs of stream and event queries are not waits: they make no event.
 *
 * Stacks (--backtrace) are attached to the API call of the same correlation id.
 * A frame is named by the function holding it, read from the symbol table of
 * the object the recorded /proc/self/maps places it in (or of that object's
 * separate debug file), once the file on disk is shown to be the one that was
 * mapped (MODULES build-id, else the maps inode); otherwise "module+0xoffset".
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ingest/ingest.h"
#include "ingest/native_frames.h"
#include "lib/crc32.h"
#include "lib/cuda_enums.h"
#include "lib/i64map.h"
#include "lib/names.h"
#include "lib/progress.h"
#include "lib/spill.h"
#include "record/raw_format.h"

typedef struct { size_t event; uint32_t context, stream; } pending_stream;
typedef struct { size_t event; uint32_t driver_corr, runtime_corr; } pending_copy;
/* weak: a driver call or an internal launch, which GPU work hangs off only
 * where no runtime call has the correlation */
typedef struct { size_t event; uint32_t corr, weak; } api_call;

typedef struct {
    tr_trace *t;
    const tr_ingest_opts *o;
    const char *path;
    uint32_t source, process;
    int64_t shift;            /* added to every timestamp */
    int64_t max_ts;
    uint32_t *strs;           /* file string id -> our string id (0 = undefined) */
    uint32_t *kname;          /* file string id -> demangled display name */
    size_t nstrs;
    tr_i64map ctx_device;     /* context -> device */
    tr_i64map open_ranges;    /* marker id -> event index */
    TR_VEC(api_call) api_calls;   /* the API calls with a correlation, in order */
    tr_i64map api_corr;       /* correlation the copies or stacks ask for -> API event index
                                 (a runtime call's, if one has it), -1 for none */
    tr_i64map stack_at;       /* stack id -> index into stack_pcs of {n, pcs...} */
    uint64_t *stack_pcs;
    size_t nstack_pcs, cap_stack_pcs;
    tr_raw_stackref *refs;
    size_t nrefs, cap_refs;
    char *maps;               /* last MAPS text (NUL-terminated) */
    unsigned char *modules;   /* last MODULES payload */
    size_t nmodules;
    uint64_t stats[TR_RAW_STAT_COUNT_];
    int have_stats, have_end;
    size_t unknown_kinds, short_records, incomplete, orphan_ends, restarted;
    size_t not_waits;         /* sync records of queries, or of calls that failed */
    size_t failures;          /* STATUS failures seen; after the first few, only named */
    char *not_recorded;       /* the "what" of the failures not warned about one by one */
    size_t n_not_recorded;
    uint64_t t0_real;         /* the header's CLOCK_REALTIME anchor */
    TR_VEC(pending_copy) copies;   /* copies whose join waits for the API calls */
    uint32_t api_names[2][1024];
    tr_nvtx_parser *nvtx;
    /* syncs and streams seen before their context record: device resolved at the end */
    TR_VEC(pending_stream) pending;
    /* the last thread and stream found (id 0: none yet): a buffer holds runs of one
     * thread's calls and of one stream's activities, and each lookup is a hash */
    struct { uint32_t process, tid, id; } last_thread;
    struct { uint32_t device, context, stream, id; } last_stream;
} raw_reader;

#define NO_EVENT ((size_t)-1)
/* CUPTI's "not applicable" stream of context- and event-level syncs */
#define NO_STREAM 0xffffffffu

/* The CRC-32 of the format (IEEE, as zlib's; lib/crc32.h). */
static uint32_t crc_of(const unsigned char *p, size_t n)
{
    return tr_crc32(0, p, n);
}

static tr_status oom(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while reading a trace-record raw file");
}

int tr_raw_probe(const char *path, const unsigned char *head, size_t headlen)
{
    (void)path;
    return headlen >= 8 && memcmp(head, TR_RAW_MAGIC, 8) == 0;
}

static int64_t ts_of(raw_reader *r, uint64_t ts)
{
    int64_t v;
    if (__builtin_add_overflow((int64_t)ts, r->shift, &v))   /* a damaged clock anchor */
        v = r->shift < 0 ? INT64_MIN : INT64_MAX;
    if (v > r->max_ts)
        r->max_ts = v;
    return v;
}

static uint32_t str_of(raw_reader *r, uint32_t sid)
{
    if (sid && sid < r->nstrs && r->strs[sid])
        return r->strs[sid];
    return sid ? tr_str(r->t, "[unknown string]") : 0;
}

/* 0, or -1 out of memory */
static int kernel_name(raw_reader *r, uint32_t sid, tr_event *e)
{
    if (!sid || sid >= r->nstrs || !r->strs[sid]) {
        e->name = tr_str(r->t, "[unknown kernel]");
        return 0;
    }
    if (!r->kname[sid]) {
        char *d = tr_demangle(tr_str_of(r->t, r->strs[sid]));
        r->kname[sid] = d ? tr_str(r->t, d) : r->strs[sid];
        free(d);
    }
    e->name = r->kname[sid];
    if (e->name == r->strs[sid])
        return 0;
    e->flags |= TR_FLAG_DEMANGLED;
    return tr_set_raw_name(r->t, e, r->strs[sid]);
}

static uint32_t thread_of(raw_reader *r, uint32_t tid)
{
    if (!tid)
        return 0;
    if (r->last_thread.id && r->last_thread.tid == tid && r->last_thread.process == r->process)
        return r->last_thread.id;
    uint32_t id = tr_thread_get(r->t, r->process, tid);
    r->last_thread.process = r->process;
    r->last_thread.tid = tid;
    r->last_thread.id = id;
    return id;
}

static uint32_t stream_of(raw_reader *r, uint32_t device, uint32_t context, uint32_t stream)
{
    if (r->last_stream.id && r->last_stream.device == device && r->last_stream.context == context
        && r->last_stream.stream == stream)
        return r->last_stream.id;
    uint32_t d = tr_device_get(r->t, r->source, device);
    uint32_t id = d ? tr_stream_get(r->t, d, context, stream) : 0;
    r->last_stream.device = device;
    r->last_stream.context = context;
    r->last_stream.stream = stream;
    r->last_stream.id = id;
    return id;
}

/* Gives the event (unless NO_EVENT) the stream (device, context, stream). */
static tr_status set_stream(raw_reader *r, size_t event, int64_t device, uint32_t context,
                            uint32_t stream, tr_error *err)
{
    uint32_t st = stream_of(r, (uint32_t)device, context, stream);
    if (!st)
        return oom(err);
    if (event != NO_EVENT)
        r->t->events.v[event].stream = st;
    return TR_OK;
}

/* A stream known by its context only: its device comes from the context's
 * record, which the recorder may write after the records that use it. */
static tr_status context_stream(raw_reader *r, size_t event, uint32_t context, uint32_t stream,
                                tr_error *err)
{
    int64_t device;
    if (tr_i64map_get(&r->ctx_device, context, &device))
        return set_stream(r, event, device, context, stream, err);
    if (tr_vec_reserve(r->pending, r->pending.n + 1) < 0)
        return oom(err);
    r->pending.v[r->pending.n++] = (pending_stream){event, context, stream};
    return TR_OK;
}

/* At the end: contexts never described are taken to be on device 0. */
static tr_status resolve_pending(raw_reader *r, tr_error *err)
{
    tr_status s = TR_OK;
    for (size_t i = 0; i < r->pending.n && s == TR_OK; i++) {
        const pending_stream *ps = &r->pending.v[i];
        int64_t device = 0;
        tr_i64map_get(&r->ctx_device, ps->context, &device);
        s = set_stream(r, ps->event, device, ps->context, ps->stream, err);
    }
    return s;
}

/* Grows the maps from the file's string ids so that id fits. */
static tr_status fit_string_id(raw_reader *r, uint32_t id, tr_error *err)
{
    if (id < r->nstrs)
        return TR_OK;
    size_t nn = r->nstrs ? r->nstrs : 64;
    while (nn <= id)
        nn *= 2;
    if (nn > (1u << 26))
        return tr_fail(err, TR_ERR_INPUT, "%s: string id %u out of range", r->path, id);
    uint32_t *a = tr_spill_realloc(r->strs, r->nstrs * sizeof *a, nn * sizeof *a);
    if (!a)
        return oom(err);
    r->strs = a;
    uint32_t *b = tr_spill_realloc(r->kname, r->nstrs * sizeof *b, nn * sizeof *b);
    if (!b)
        return oom(err);
    r->kname = b;
    memset(r->strs + r->nstrs, 0, (nn - r->nstrs) * sizeof *a);
    memset(r->kname + r->nstrs, 0, (nn - r->nstrs) * sizeof *b);
    r->nstrs = nn;
    return TR_OK;
}

/* The strings of a STRINGS chunk, interned a batch at a time: in a PyTorch
 * recording nearly every NVTX text is new, and a batch lets each one's slot
 * in the string table come from memory while the ones before it are added. */
typedef struct {
    const char *s[TR_INTERN_MANY];
    uint32_t len[TR_INTERN_MANY], file_id[TR_INTERN_MANY], ids[TR_INTERN_MANY];
    size_t n;
} string_batch;

static tr_status intern_batch(raw_reader *r, string_batch *sb, tr_error *err)
{
    if (tr_intern_add_many(&r->t->strings, sb->n, sb->s, sb->len, sb->ids) < 0)
        return oom(err);
    for (size_t i = 0; i < sb->n; i++) {
        r->strs[sb->file_id[i]] = sb->ids[i];
        r->kname[sb->file_id[i]] = 0;
    }
    sb->n = 0;
    return TR_OK;
}

static tr_status read_strings(raw_reader *r, const unsigned char *p, size_t n, tr_error *err)
{
    string_batch sb;
    sb.n = 0;
    size_t off = 0;
    tr_status s = TR_OK;
    while (off + 8 <= n && s == TR_OK) {
        uint32_t id = tr_raw_ld32(p + off), len = tr_raw_ld32(p + off + 4);
        if (len > n - off - 8)
            break;   /* padding or damage: the CRC passed, so padding */
        if (id != 0 && (s = fit_string_id(r, id, err)) == TR_OK) {
            sb.s[sb.n] = (const char *)p + off + 8;
            sb.len[sb.n] = len;
            sb.file_id[sb.n++] = id;
            if (sb.n == TR_INTERN_MANY)
                s = intern_batch(r, &sb, err);
        }
        off += 8 + (((size_t)len + 3u) & ~(size_t)3u);
    }
    return s == TR_OK ? intern_batch(r, &sb, err) : s;
}

static void read_meta(raw_reader *r, const unsigned char *p, size_t n)
{
    size_t off = 0;
    while (off < n) {
        const char *kv = (const char *)p + off;
        const char *z = memchr(kv, 0, n - off);
        if (!z)
            break;
        if (strncmp(kv, "exe=", 4) == 0 && r->process) {
            const char *base = strrchr(kv + 4, '/');
            r->t->processes.v[r->process].name = tr_str(r->t, base ? base + 1 : kv + 4);
        }
        off += (size_t)(z - kv) + 1;
    }
}

static uint32_t api_name(raw_reader *r, int driver, uint32_t cbid)
{
    if (cbid < 1024 && r->api_names[driver][cbid])
        return r->api_names[driver][cbid];
    const char *known = driver ? tr_driver_cbid_name((int)cbid) : tr_runtime_cbid_name((int)cbid);
    char buf[64];
    if (!known) {
        snprintf(buf, sizeof buf, "%s API cbid %u", driver ? "driver" : "runtime", cbid);
        known = buf;
    }
    uint32_t id = tr_str(r->t, known);
    if (cbid < 1024)
        r->api_names[driver][cbid] = id;
    return id;
}

static uint32_t overhead_name(raw_reader *r, uint32_t kind)
{
    char buf[64];
    tr_overhead_name(buf, sizeof buf, (int64_t)kind);
    return tr_str(r->t, buf);
}

/* ---- RECORDS chunks: one reader per record kind --------------------------
 * Each reads one record; p points at rec_size >= the kind's v1 size bytes.
 * A chunk holds records of one kind, so its reader is looked up once a chunk
 * (record_readers[], indexed by kind). */

typedef tr_status (*record_reader)(raw_reader *r, const unsigned char *p, tr_error *err);

/* A record without timestamps (CUPTI could not collect them): counted, not kept. */
static int incomplete(raw_reader *r, uint32_t flags, uint64_t start, uint64_t end)
{
    if ((flags & TR_RAW_KF_INCOMPLETE) || (start == 0 && end == 0)) {
        r->incomplete++;
        return 1;
    }
    return 0;
}

static tr_status read_kernel(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_kernel k;
    memcpy(&k, p, sizeof k);
    if (incomplete(r, k.flags, k.start, k.end))
        return TR_OK;
    tr_event *e = tr_add_event(r->t, TR_KIND_KERNEL);
    if (!e)
        return oom(err);
    e->start = ts_of(r, k.start);
    e->end = ts_of(r, k.end);
    if (tr_set_correlation(r->t, e, k.corr) < 0)
        return oom(err);
    e->stream = stream_of(r, k.device, k.context, k.stream);
    if (kernel_name(r, k.name_sid, e) < 0)
        return oom(err);
    tr_kernel_detail d;
    for (int j = 0; j < 3; j++) {
        d.grid[j] = k.grid[j];
        d.block[j] = k.block[j];
    }
    d.registers = k.registers;
    d.static_smem = (int32_t)k.smem_static;
    d.dynamic_smem = (int32_t)k.smem_dynamic;
    return (e->detail = tr_add_kernel_detail(r->t, &d)) ? TR_OK : oom(err);
}

static tr_status read_api(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_api a;
    memcpy(&a, p, sizeof a);
    int driver = a.domain == TR_RAW_API_DRIVER;
    tr_event *e = tr_add_event(r->t, driver ? TR_KIND_DRIVER : TR_KIND_RUNTIME);
    if (!e)
        return oom(err);
    e->start = ts_of(r, a.start);
    e->end = ts_of(r, a.end);
    if (tr_set_correlation(r->t, e, a.corr) < 0)
        return oom(err);
    e->thread = thread_of(r, a.tid);
    e->name = a.domain == TR_RAW_API_INTERNAL ? tr_str(r->t, "[internal launch]")
                                              : api_name(r, driver, a.cbid);
    tr_api_detail d = {(int32_t)a.cbid, (int64_t)a.ret};
    if (!(e->detail = tr_add_api_detail(r->t, &d)))
        return oom(err);
    if (!a.corr)
        return TR_OK;
    if (tr_vec_reserve(r->api_calls, r->api_calls.n + 1) < 0)
        return oom(err);
    r->api_calls.v[r->api_calls.n++]
        = (api_call){r->t->events.n - 1, a.corr, a.domain != TR_RAW_API_RUNTIME};
    return TR_OK;
}

static tr_status read_memcpy(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_memcpy m;
    memcpy(&m, p, sizeof m);
    if (incomplete(r, m.flags, m.start, m.end))
        return TR_OK;
    tr_event *e = tr_add_event(r->t, TR_KIND_MEMCPY);
    if (!e)
        return oom(err);
    tr_copy_detail d = {tr_enum_str(r->t, &tr_copy_kinds, m.copy_kind),
                        tr_enum_str(r->t, &tr_memory_kinds, m.src_kind),
                        tr_enum_str(r->t, &tr_memory_kinds, m.dst_kind)};
    e->name = tr_memcpy_name(r->t, d.copy_kind);
    if (tr_set_bytes(r->t, e, (int64_t)m.bytes) < 0)
        return oom(err);
    e->start = ts_of(r, m.start);
    e->end = ts_of(r, m.end);
    if (tr_set_correlation(r->t, e, m.runtime_corr ? m.runtime_corr : m.corr) < 0)
        return oom(err);
    e->stream = stream_of(r, m.device, m.context, m.stream);
    if (!(e->detail = tr_add_copy_detail(r->t, &d)))
        return oom(err);
    if (m.runtime_corr && m.corr && m.runtime_corr != m.corr) {
        if (tr_vec_reserve(r->copies, r->copies.n + 1) < 0)
            return oom(err);
        r->copies.v[r->copies.n++] = (pending_copy){r->t->events.n - 1, m.corr, m.runtime_corr};
    }
    return TR_OK;
}

static tr_status read_memset(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_memset m;
    memcpy(&m, p, sizeof m);
    if (incomplete(r, m.flags, m.start, m.end))
        return TR_OK;
    uint32_t name = tr_str(r->t, "[CUDA memset]");
    tr_event *e = tr_add_event(r->t, TR_KIND_MEMSET);
    if (!e)
        return oom(err);
    e->name = name;
    if (tr_set_bytes(r->t, e, (int64_t)m.bytes) < 0)
        return oom(err);
    e->start = ts_of(r, m.start);
    e->end = ts_of(r, m.end);
    if (tr_set_correlation(r->t, e, m.corr) < 0)
        return oom(err);
    e->stream = stream_of(r, m.device, m.context, m.stream);
    return (e->detail = tr_add_memset_value(r->t, m.value)) ? TR_OK : oom(err);
}

static tr_status read_sync(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_sync s;
    memcpy(&s, p, sizeof s);
    if ((s.type & TR_RAW_SYNC_QUERY) || s.ret) {   /* polled or failed: nothing was waited for */
        r->not_waits++;
        return TR_OK;
    }
    uint32_t type = s.type & TR_RAW_SYNC_TYPE_MASK;
    uint32_t name = tr_enum_str(r->t, &tr_sync_names, type < 5 ? type : 0);
    tr_event *e = tr_add_event(r->t, TR_KIND_SYNC);
    if (!e)
        return oom(err);
    e->name = name;
    e->start = ts_of(r, s.start);
    e->end = ts_of(r, s.end);
    if (tr_set_correlation(r->t, e, s.corr) < 0)
        return oom(err);
    if (s.stream != NO_STREAM)
        return context_stream(r, r->t->events.n - 1, s.context, s.stream, err);
    return TR_OK;
}

/* A range's end: closes the range its id opened, if one is open. */
static void end_range(raw_reader *r, uint64_t id, int64_t ts, uint32_t thread)
{
    int64_t idx;
    if (!tr_i64map_get(&r->open_ranges, (int64_t)id, &idx)) {
        r->orphan_ends++;
        return;
    }
    tr_i64map_del(&r->open_ranges, (int64_t)id);
    tr_event *e = &r->t->events.v[idx];
    e->end = ts;
    if (e->thread != thread)
        e->flags |= TR_FLAG_ASYNC;
}

/* The event's text, or what an emit_nvtx annotation in it says: the op, its
 * shapes, sequence number and op id. */
static tr_status name_marker(raw_reader *r, tr_event *e, uint32_t raw, tr_error *err)
{
    const char *msg = tr_str_of(r->t, raw);
    tr_nvtx_annotation a;
    tr_nvtx_parse(r->nvtx, msg, strlen(msg), &a);
    if (!a.annotated) {
        e->name = raw;
        return TR_OK;
    }
    uint32_t name = tr_intern_add(&r->t->strings, a.name, a.name_len);
    uint32_t shape = 0;
    if (!name || (a.sizes && tr_shape_get(r->t, a.sizes, a.sizes_len, &shape) < 0))
        return oom(err);
    e->kind = TR_KIND_OP;
    e->name = name;
    tr_event_extra x = tr_extra(r->t, e);
    x.seq = a.seq;
    x.op_id = a.op_id;
    x.shape = shape;
    return tr_extra_set(r->t, e, &x) < 0 || tr_set_raw_name(r->t, e, raw) < 0 ? oom(err) : TR_OK;
}

static tr_status read_marker(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_marker m;
    memcpy(&m, p, sizeof m);
    int64_t ts = ts_of(r, m.ts);
    uint32_t thread = thread_of(r, m.tid);
    if (m.flags & TR_RAW_MK_END) {
        end_range(r, m.id, ts, thread);
        return TR_OK;
    }
    if (!(m.flags & (TR_RAW_MK_MARK | TR_RAW_MK_START)))
        return TR_OK;
    uint32_t raw = str_of(r, m.name_sid);
    if (!raw)
        raw = tr_str(r->t, "");
    tr_event *e = tr_add_event(r->t, (m.flags & TR_RAW_MK_START) ? TR_KIND_RANGE : TR_KIND_MARK);
    if (!e)
        return oom(err);
    e->start = e->end = ts;
    e->thread = thread;
    tr_status s = name_marker(r, e, raw, err);
    if (s != TR_OK || !(m.flags & TR_RAW_MK_START))
        return s;
    int64_t prev;
    if (tr_i64map_get(&r->open_ranges, (int64_t)m.id, &prev))
        r->restarted++;
    if (tr_i64map_put(&r->open_ranges, (int64_t)m.id, (int64_t)(r->t->events.n - 1)) < 0)
        return oom(err);
    return TR_OK;
}

static tr_status read_device(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_device d;
    memcpy(&d, p, sizeof d);
    uint32_t name = str_of(r, d.name_sid);
    uint32_t i = tr_device_get(r->t, r->source, d.id);
    if (!i)
        return oom(err);
    tr_device *dev = &r->t->devices.v[i];
    dev->name = name;
    dev->cc_major = (int32_t)d.cc_major;
    dev->cc_minor = (int32_t)d.cc_minor;
    dev->memory_bytes = (int64_t)d.global_memory;
    dev->sm_count = (int32_t)d.sm_count;
    return TR_OK;
}

static tr_status read_context(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_context c;
    memcpy(&c, p, sizeof c);
    return tr_i64map_put(&r->ctx_device, c.context, c.device) < 0 ? oom(err) : TR_OK;
}

static tr_status read_stream(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_stream s;
    memcpy(&s, p, sizeof s);
    return context_stream(r, NO_EVENT, s.context, s.stream, err);
}

static tr_status read_name(raw_reader *r, const unsigned char *p, tr_error *err)
{
    (void)err;
    tr_raw_name nm;
    memcpy(&nm, p, sizeof nm);
    uint32_t name = str_of(r, nm.name_sid);
    if (nm.object_kind == TR_RAW_OBJ_THREAD) {
        uint32_t th = thread_of(r, nm.id);
        if (th)
            r->t->threads.v[th].name = name;
    } else if (nm.object_kind == TR_RAW_OBJ_PROCESS) {
        r->t->processes.v[r->process].name = name;
    }
    return TR_OK;
}

/* Kept as they come; attach_stacks() joins them to the API calls at the end. */
static tr_status read_stackref(raw_reader *r, const unsigned char *p, tr_error *err)
{
    if (r->nrefs == r->cap_refs) {
        size_t nc = r->cap_refs ? r->cap_refs * 2 : 256;
        tr_raw_stackref *a = tr_spill_realloc(r->refs, r->cap_refs * sizeof *a, nc * sizeof *a);
        if (!a)
            return oom(err);
        r->refs = a;
        r->cap_refs = nc;
    }
    memcpy(&r->refs[r->nrefs++], p, sizeof(tr_raw_stackref));
    return TR_OK;
}

static tr_status read_overhead(raw_reader *r, const unsigned char *p, tr_error *err)
{
    tr_raw_overhead o;
    memcpy(&o, p, sizeof o);
    if (incomplete(r, 0, o.start, o.end))
        return TR_OK;
    uint32_t name = overhead_name(r, o.overhead_kind);
    tr_event *e = tr_add_event(r->t, TR_KIND_OVERHEAD);
    if (!e)
        return oom(err);
    e->name = name;
    e->start = ts_of(r, o.start);
    e->end = ts_of(r, o.end);
    if (tr_set_correlation(r->t, e, o.corr) < 0)
        return oom(err);
    /* the process's: on no thread, and out of the tree, as the nvprof reader's */
    e->thread = o.object_kind == TR_RAW_OBJ_THREAD ? thread_of(r, o.object_id) : 0;
    if (!e->thread)
        e->flags |= TR_FLAG_ASYNC;
    return TR_OK;
}

static const record_reader record_readers[TR_RAW_REC_COUNT_] = {
    [TR_RAW_REC_KERNEL] = read_kernel,     [TR_RAW_REC_API] = read_api,
    [TR_RAW_REC_MEMCPY] = read_memcpy,     [TR_RAW_REC_MEMSET] = read_memset,
    [TR_RAW_REC_SYNC] = read_sync,         [TR_RAW_REC_MARKER] = read_marker,
    [TR_RAW_REC_DEVICE] = read_device,     [TR_RAW_REC_CONTEXT] = read_context,
    [TR_RAW_REC_STREAM] = read_stream,     [TR_RAW_REC_NAME] = read_name,
    [TR_RAW_REC_STACKREF] = read_stackref, [TR_RAW_REC_OVERHEAD] = read_overhead,
};

static tr_status read_records(raw_reader *r, const unsigned char *p, size_t n, tr_error *err)
{
    if (n < 8)
        return TR_OK;
    unsigned kind = tr_raw_ld16(p);
    size_t rec_size = tr_raw_ld16(p + 2), count = tr_raw_ld32(p + 4);
    size_t need = tr_raw_rec_size(kind);
    record_reader read = need ? record_readers[kind] : NULL;
    if (!read) {
        r->unknown_kinds += count;
        return TR_OK;
    }
    if (rec_size < need || count > (n - 8) / rec_size) {
        r->short_records += count;
        return TR_OK;
    }
    for (size_t i = 0; i < count; i++) {
        tr_status s = read(r, p + 8 + i * rec_size, err);
        if (s != TR_OK)
            return s;
    }
    return TR_OK;
}

static tr_status read_stacks(raw_reader *r, const unsigned char *p, size_t n, tr_error *err)
{
    size_t off = 0;
    while (off + 8 <= n) {
        uint32_t id = tr_raw_ld32(p + off);
        size_t nf = tr_raw_ld16(p + off + 4);
        if (nf > (n - off - 8) / 8)
            break;
        if (r->nstack_pcs + nf + 1 > r->cap_stack_pcs) {
            size_t nc = r->cap_stack_pcs ? r->cap_stack_pcs : 1024;
            while (nc < r->nstack_pcs + nf + 1)
                nc *= 2;
            uint64_t *a = realloc(r->stack_pcs, nc * sizeof *a);
            if (!a)
                return oom(err);
            r->stack_pcs = a;
            r->cap_stack_pcs = nc;
        }
        if (tr_i64map_put(&r->stack_at, id, (int64_t)r->nstack_pcs) < 0)
            return oom(err);
        r->stack_pcs[r->nstack_pcs++] = nf;
        for (size_t i = 0; i < nf; i++)
            r->stack_pcs[r->nstack_pcs++] = tr_raw_ld64(p + off + 8 + 8 * i);
        off += 8 + 8 * nf;
    }
    return TR_OK;
}

#define MAX_FAILURE_LINES 3

/* Adds a failure's "what" to the list said in one line at the end. */
static void note_not_recorded(raw_reader *r, const char *what, size_t len)
{
    for (const char *p = r->not_recorded; p && *p;) {   /* each named once */
        const char *end = strstr(p, ", ");
        size_t l = end ? (size_t)(end - p) : strlen(p);
        if (l == len && !memcmp(p, what, len))
            return;
        p = end ? end + 2 : p + l;
    }
    char *a = realloc(r->not_recorded, r->n_not_recorded + len + 3);
    if (!a)
        return;
    r->not_recorded = a;
    if (r->n_not_recorded) {
        memcpy(a + r->n_not_recorded, ", ", 2);
        r->n_not_recorded += 2;
    }
    memcpy(a + r->n_not_recorded, what, len);
    r->n_not_recorded += len;
    a[r->n_not_recorded] = 0;
}

/* STATUS entries: failures and takeovers are warned about as they are read,
 * the first few failures in full, the rest by name at the end. */
static void read_status(raw_reader *r, const unsigned char *p, size_t n)
{
    for (size_t off = 0; off + sizeof(tr_raw_status) <= n;) {
        uint64_t ts = tr_raw_ld64(p + off);
        uint32_t result = tr_raw_ld32(p + off + 8);
        unsigned state = tr_raw_ld16(p + off + 12), len = tr_raw_ld16(p + off + 14);
        if (len > n - off - sizeof(tr_raw_status))
            break;
        const char *what = (const char *)p + off + sizeof(tr_raw_status);
        size_t wl = strnlen(what, len);
        const char *detail = wl < len ? what + wl + 1 : "";
        int dl = wl < len ? (int)(len - wl - 1) : 0;
        if (state == TR_RAW_ST_FAILED && r->failures++ < MAX_FAILURE_LINES)
            /* detail: the call, CUPTI's text, what follows */
            tr_ingest_warn(r->o, "%s: %.*s: %.*s", r->path, (int)wl, what, dl, detail);
        else if (state == TR_RAW_ST_FAILED)
            note_not_recorded(r, what, wl);
        else if (state == TR_RAW_ST_DROPPED)
            tr_ingest_warn(r->o, "%s: CUPTI dropped %u record(s) of %.*s", r->path, result, dl, detail);
        else if (state == TR_RAW_ST_TAKEN) {
            int64_t at;
            if (__builtin_add_overflow((int64_t)ts, r->shift, &at))
                at = 0;
            tr_ingest_warn(r->o, "%s: trace truncated at %.3f s: another CUPTI client took over "
                           "(%.*s)", r->path, (double)(at - (int64_t)r->t0_real) / 1e9, dl, detail);
        }
        off += tr_raw_pad8(sizeof(tr_raw_status) + len);
    }
}

/* Maps the correlations the copies and stacks ask for to their API calls: a
 * runtime call's, else the first driver call's or internal launch's.  Every
 * call has a correlation and few are asked for: a map from each call's (24 B
 * a slot, 768 MiB at 3x10^7 raw events, probed at random: a page fault a call
 * once in a file) cost more than listing the calls in order and reading the
 * list once. */
static int map_asked_correlations(raw_reader *r)
{
    for (size_t i = 0; i < r->copies.n; i++)
        if (tr_i64map_put(&r->api_corr, r->copies.v[i].runtime_corr, -1) < 0
            || tr_i64map_put(&r->api_corr, r->copies.v[i].driver_corr, -1) < 0)
            return -1;
    for (size_t i = 0; i < r->nrefs; i++)
        if (tr_i64map_put(&r->api_corr, r->refs[i].corr, -1) < 0)
            return -1;
    for (size_t i = 0; r->api_corr.n && i < r->api_calls.n; i++) {
        const api_call *c = &r->api_calls.v[i];
        int64_t ev;
        if (tr_i64map_get(&r->api_corr, c->corr, &ev) && (!c->weak || ev < 0)
            && tr_i64map_put(&r->api_corr, c->corr, (int64_t)c->event) < 0)
            return -1;
    }
    tr_spill_free(r->api_calls.v);
    memset(&r->api_calls, 0, sizeof r->api_calls);
    return 0;
}

static int api_event(const raw_reader *r, int64_t corr, int64_t *ev)
{
    return tr_i64map_get(&r->api_corr, corr, ev) && *ev >= 0;
}

/* Each copy with both ids joins to its runtime call if the file has it,
 * else to its driver call. */
static int join_copies(raw_reader *r)
{
    for (size_t i = 0; i < r->copies.n; i++) {
        const pending_copy *c = &r->copies.v[i];
        int64_t ev;
        if (!api_event(r, c->runtime_corr, &ev) && api_event(r, c->driver_corr, &ev)
            && tr_set_correlation(r->t, &r->t->events.v[c->event], c->driver_corr) < 0)
            return -1;
    }
    return 0;
}

static tr_status read_maps(raw_reader *r, const unsigned char *p, size_t n, tr_error *err)
{
    if (n < 16)
        return TR_OK;
    size_t len = tr_raw_ld32(p + 8);
    if (len > n - 16)
        len = n - 16;
    char *m = malloc(len + 1);
    if (!m)
        return oom(err);
    memcpy(m, p + 16, len);
    m[len] = 0;
    free(r->maps);
    r->maps = m;
    return TR_OK;
}

/* The last MODULES chunk: it was written with the last MAPS, which names the
 * files its addresses lie in. */
static tr_status read_modules(raw_reader *r, const unsigned char *p, size_t n, tr_error *err)
{
    unsigned char *m = malloc(n ? n : 1);
    if (!m)
        return oom(err);
    memcpy(m, p, n);
    free(r->modules);
    r->modules = m;
    r->nmodules = n;
    return TR_OK;
}

/* 1 if the frame at pc is the recorder's own or CUPTI's. */
static int recorder_frame(const tr_native_frames *nf, uint64_t pc)
{
    size_t len;
    const char *base = tr_native_frames_module(nf, pc, &len);
    return base && (memmem(base, len, "libtracekit-agent", 17) || memmem(base, len, "libcupti", 8));
}

/* The leaf node of a recorded stack, frames outermost first. */
static tr_status stack_leaf(raw_reader *r, tr_native_frames *nf, int64_t at, uint32_t **frames,
                            size_t *cap, uint32_t *leaf, tr_error *err)
{
    size_t depth = (size_t)r->stack_pcs[at];
    const uint64_t *pcs = r->stack_pcs + at + 1;   /* innermost first */
    /* the recorder's own and CUPTI's frames (innermost) dropped */
    size_t skip = 0;
    while (skip < depth && recorder_frame(nf, pcs[skip]))
        skip++;
    /* a return address is one past its call: pc - 1 lies in the calling
     * function even when the call is the function's last instruction;
     * a pc may give several frames (functions inlined there) */
    size_t k = 0;
    for (size_t j = depth; j-- > skip;) {
        const uint32_t *f;
        size_t n;
        tr_status s = tr_native_frames_name(nf, r->t, pcs[j] ? pcs[j] - (j > 0) : 0, &f, &n, err);
        if (s != TR_OK)
            return s;
        if (k + n > *cap) {
            size_t nc = *cap ? *cap : 64;
            while (nc < k + n)
                nc *= 2;
            uint32_t *a = realloc(*frames, nc * sizeof *a);
            if (!a)
                return oom(err);
            *frames = a;
            *cap = nc;
        }
        memcpy(*frames + k, f, n * sizeof *f);
        k += n;
    }
    *leaf = tr_stack_get(r->t, *frames, k);
    return !*leaf && k ? oom(err) : TR_OK;
}

static tr_status attach_stacks(raw_reader *r, tr_error *err)
{
    if (!r->nrefs)
        return TR_OK;
    size_t unmatched = 0;
    uint32_t *frames = NULL;
    size_t cap = 0;
    tr_native_frames *nf = NULL;
    tr_i64map leaves;          /* stack id -> leaf node: stacks repeat across launches */
    tr_i64map_init(&leaves);
    tr_status s = tr_native_frames_new(&nf, r->maps, r->modules, r->nmodules, err);
    for (size_t i = 0; i < r->nrefs && s == TR_OK; i++) {
        int64_t ev, at, leaf;
        if (!api_event(r, r->refs[i].corr, &ev)
            || !tr_i64map_get(&r->stack_at, r->refs[i].stack_id, &at)) {
            unmatched++;
            continue;
        }
        if (!tr_i64map_get(&leaves, r->refs[i].stack_id, &leaf)) {
            uint32_t l;
            if ((s = stack_leaf(r, nf, at, &frames, &cap, &l, err)) != TR_OK)
                break;
            leaf = l;
            if (tr_i64map_put(&leaves, r->refs[i].stack_id, leaf) < 0) {
                s = oom(err);
                break;
            }
        }
        r->t->events.v[ev].stack = (uint32_t)leaf;
    }
    if (s == TR_OK) {
        tr_native_frames_warn(nf, r->o, r->path);
        if (unmatched)
            tr_ingest_warn(r->o, "%s: %zu stack(s) without a matching API call ignored", r->path,
                           unmatched);
    }
    tr_native_frames_free(nf);
    tr_i64map_free(&leaves);
    free(frames);
    return s;
}

/* The input: a read-only mapping of a regular file, or (pipes, special
 * files) the bytes read into memory. */
typedef struct {
    const unsigned char *d;
    size_t len;
    size_t released;          /* mapped bytes before this were handed back */
    int mapped;
} raw_input;

static tr_status open_input(const char *path, raw_input *in, tr_error *err)
{
    memset(in, 0, sizeof *in);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tr_fail(err, TR_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0
        && (uint64_t)sb.st_size <= SIZE_MAX) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            close(fd);
            madvise(m, (size_t)sb.st_size, MADV_SEQUENTIAL);
            in->d = m;
            in->len = (size_t)sb.st_size;
            in->mapped = 1;
            return TR_OK;
        }
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return tr_fail(err, TR_ERR_RUNTIME, "cannot read %s: %s", path, strerror(errno));
    }
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            unsigned char *b = realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0)
            break;
    }
    int rerr = ferror(f);
    fclose(f);
    if (!buf)
        return oom(err);
    if (rerr) {
        free(buf);
        return tr_fail(err, TR_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    }
    in->d = buf;
    in->len = n;
    return TR_OK;
}

/* Hands back the mapped pages before off: read once, never needed again. */
static void release_before(raw_input *in, size_t off)
{
    /* the read file's pages count in the peak RSS beside the events: keep
     * few of them (a 64 MiB window was a quarter of the peak at 10^6 events) */
    const size_t window = 4u << 20;
    if (!in->mapped || off < in->released + window)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t upto = off / page * page;
    madvise((void *)(in->d + in->released), upto - in->released, MADV_DONTNEED);
    atomic_fetch_add_explicit(&tr_progress_mapped_bytes, upto - in->released, memory_order_relaxed);
    in->released = upto;
}

static void close_input(raw_input *in)
{
    if (in->mapped)
        munmap((void *)in->d, in->len);
    else
        free((void *)in->d);
}

/* 1 if a whole chunk starts at off: a header in sync and a payload (*pl
 * bytes) within the limit and the file.  Its CRC is not checked. */
static int whole_chunk(const unsigned char *d, size_t len, size_t off, size_t *pl)
{
    if (len - off < TR_RAW_CHUNK_HDR || tr_raw_ld32(d + off) != TR_RAW_CHUNK_SYNC)
        return 0;
    *pl = tr_raw_ld32(d + off + 8);
    return *pl <= TR_RAW_MAX_PAYLOAD && *pl <= len - off - TR_RAW_CHUNK_HDR;
}

/* 1 if a valid chunk (header + payload + CRC) starts at off. */
static int chunk_ok(const unsigned char *d, size_t len, size_t off)
{
    size_t pl;
    return whole_chunk(d, len, off, &pl)
           && crc_of(d + off + TR_RAW_CHUNK_HDR, pl) == tr_raw_ld32(d + off + 12);
}

/* ---- the chunks' CRCs, on a second thread ---------------------------------
 *
 * Checking each chunk's CRC was a seventh of the read, and the read runs on
 * one thread.  A helper walks the chain of chunks ahead of the reader (each
 * header gives the next one's offset) and computes the CRC of each payload;
 * the reader takes them in order, by offset and length, and computes any it
 * is not given itself: where the chain breaks (damaged data, a truncated
 * chunk) the helper stops, and the reader resynchronises on its own as
 * before.  The verdict on each chunk stays with the reader. */
#define CRC_AHEAD 16

typedef struct { size_t off, pl; uint32_t crc; } chunk_crc;

typedef struct {
    const unsigned char *d;
    size_t len, first;           /* the helper's first chunk */
    chunk_crc ring[CRC_AHEAD];
    size_t made, taken;          /* entry k is ring[k % CRC_AHEAD] */
    int done, stop, threaded;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
} crc_ahead;

static void *crc_thread(void *arg)
{
    crc_ahead *c = arg;
    size_t pl;
    for (size_t off = c->first; whole_chunk(c->d, c->len, off, &pl); off += TR_RAW_CHUNK_HDR + pl) {
        pthread_mutex_lock(&c->lock);
        while (!c->stop && c->made - c->taken == CRC_AHEAD)
            pthread_cond_wait(&c->changed, &c->lock);
        int stop = c->stop;
        pthread_mutex_unlock(&c->lock);
        if (stop)
            break;
        chunk_crc e = {off, pl, crc_of(c->d + off + TR_RAW_CHUNK_HDR, pl)};
        pthread_mutex_lock(&c->lock);
        c->ring[c->made % CRC_AHEAD] = e;
        c->made++;
        pthread_cond_broadcast(&c->changed);
        pthread_mutex_unlock(&c->lock);
    }
    pthread_mutex_lock(&c->lock);
    c->done = 1;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void crc_ahead_start(crc_ahead *c, const unsigned char *d, size_t len, size_t off)
{
    memset(c, 0, sizeof *c);
    c->d = d;
    c->len = len;
    c->first = off;
    pthread_mutex_init(&c->lock, NULL);
    pthread_cond_init(&c->changed, NULL);
    c->threaded = pthread_create(&c->thread, NULL, crc_thread, c) == 0;
}

static void crc_ahead_stop(crc_ahead *c)
{
    if (c->threaded) {
        pthread_mutex_lock(&c->lock);
        c->stop = 1;
        pthread_cond_broadcast(&c->changed);
        pthread_mutex_unlock(&c->lock);
        pthread_join(c->thread, NULL);
    }
    pthread_cond_destroy(&c->changed);
    pthread_mutex_destroy(&c->lock);
}

/* The CRC of the payload of the chunk at off: the helper's, when it made
 * the one for this chunk, else computed here. */
static uint32_t crc_at(crc_ahead *c, size_t off, const unsigned char *p, size_t pl)
{
    if (c->threaded) {
        pthread_mutex_lock(&c->lock);
        for (;;) {
            while (c->made == c->taken && !c->done)
                pthread_cond_wait(&c->changed, &c->lock);
            if (c->made == c->taken)
                break;   /* the helper has stopped */
            chunk_crc e = c->ring[c->taken % CRC_AHEAD];
            if (e.off > off)
                break;   /* past this chunk: the reader resynchronised behind it */
            c->taken++;
            pthread_cond_broadcast(&c->changed);
            if (e.off == off && e.pl == pl) {
                pthread_mutex_unlock(&c->lock);
                return e.crc;
            }
        }
        pthread_mutex_unlock(&c->lock);
    }
    return crc_of(p, pl);
}

/* The next 8-byte-aligned offset after off where a whole chunk checks out
 * (sync word, length, payload CRC), or len when there is none. */
static size_t resync(const unsigned char *d, size_t len, size_t off)
{
    size_t next = (off | 7) + 1;
    while (next < len && !chunk_ok(d, len, next))
        next += 8;
    return next < len ? next : len;
}

/* One chunk whose CRC checked out, by its type; unknown types are skipped. */
static tr_status read_chunk(raw_reader *r, unsigned type, const unsigned char *p, size_t pl, tr_error *err)
{
    switch (type) {
    case TR_RAW_CH_META: read_meta(r, p, pl); return TR_OK;
    case TR_RAW_CH_STRINGS: return read_strings(r, p, pl, err);
    case TR_RAW_CH_RECORDS: return read_records(r, p, pl, err);
    case TR_RAW_CH_STACKS: return read_stacks(r, p, pl, err);
    case TR_RAW_CH_MAPS: return read_maps(r, p, pl, err);
    case TR_RAW_CH_MODULES: return read_modules(r, p, pl, err);
    case TR_RAW_CH_STATUS: read_status(r, p, pl); return TR_OK;
    case TR_RAW_CH_STATS:
        if (pl >= 8) {
            size_t n = tr_raw_ld32(p);
            for (size_t i = 0; i < n && i < TR_RAW_STAT_COUNT_ && 8 + 8 * i + 8 <= pl; i++)
                r->stats[i] = tr_raw_ld64(p + 8 + 8 * i);
            r->have_stats = 1;
        }
        return TR_OK;
    case TR_RAW_CH_END: r->have_end = 1; return TR_OK;
    default: return TR_OK;
    }
}

typedef struct { size_t bad_crc, bad_crc_bytes, garbage, truncated; } chunk_damage;

static void warn_damage(raw_reader *r, const chunk_damage *dm)
{
    if (dm->truncated)
        tr_ingest_warn(r->o, "%s: file truncated: the last %zu byte(s) (1 partial chunk) lost",
                       r->path, dm->truncated);
    if (dm->bad_crc)
        tr_ingest_warn(r->o, "%s: %zu chunk(s) with a bad CRC skipped (%zu bytes lost)", r->path,
                       dm->bad_crc, dm->bad_crc_bytes);
    if (dm->garbage)
        tr_ingest_warn(r->o, "%s: %zu byte(s) of damaged data skipped between chunks", r->path,
                       dm->garbage);
    if (!r->have_end && !dm->truncated)
        tr_ingest_warn(r->o, "%s: no end marker: the process did not exit normally "
                       "(crash, _exit or kill); records after its last flush are lost", r->path);
}

/* The chunks from off on.  Damage is measured by the next chunk that checks
 * out: a payload CRC that fails, a length that is not a multiple of 8, or one
 * past the end of the file with good chunks after it may all be a damaged
 * length, which must not decide where reading goes on (it would skip good
 * chunks, or every chunk to the end). */
static tr_status read_chunks(raw_reader *r, raw_input *in, size_t off, tr_error *err)
{
    const unsigned char *d = in->d;
    size_t len = in->len;
    crc_ahead crcs;
    crc_ahead_start(&crcs, d, len, off);
    tr_status st = TR_OK;
    chunk_damage dm = {0, 0, 0, 0};
    while (off < len) {
        int sync = len - off >= TR_RAW_CHUNK_HDR && tr_raw_ld32(d + off) == TR_RAW_CHUNK_SYNC;
        size_t pl = sync ? tr_raw_ld32(d + off + 8) : 0;
        int sane = sync && pl <= TR_RAW_MAX_PAYLOAD && pl % 8 == 0;
        int whole = sane && pl <= len - off - TR_RAW_CHUNK_HDR;
        const unsigned char *p = d + off + TR_RAW_CHUNK_HDR;
        if (whole && crc_at(&crcs, off, p, pl) == tr_raw_ld32(d + off + 12)) {
            if ((st = read_chunk(r, tr_raw_ld16(d + off + 4), p, pl, err)) != TR_OK)
                break;
            off += TR_RAW_CHUNK_HDR + pl;
            release_before(in, off);
            continue;
        }
        size_t next = resync(d, len, off);
        if (whole) {
            dm.bad_crc++;   /* a whole chunk whose payload does not check out */
            dm.bad_crc_bytes += next - off;
        } else if (next == len) {
            dm.truncated = len - off;   /* nothing checks out after it: the file ends mid-chunk */
            break;
        } else {
            dm.garbage += next - off;
        }
        off = next;
    }
    crc_ahead_stop(&crcs);
    if (st == TR_OK)
        warn_damage(r, &dm);
    return st;
}

static void warn_summary(raw_reader *r)
{
    if (r->stats[TR_RAW_STAT_DROPPED])
        tr_ingest_warn(r->o, "%s: CUPTI dropped %llu activity record(s) (no buffer available; "
                       "try a larger --buffer-size)", r->path,
                       (unsigned long long)r->stats[TR_RAW_STAT_DROPPED]);
    if (r->stats[TR_RAW_STAT_POOL_EMPTY])
        tr_ingest_warn(r->o, "%s: %llu buffer request(s) refused: buffer pool exhausted",
                       r->path, (unsigned long long)r->stats[TR_RAW_STAT_POOL_EMPTY]);
    if (r->failures > MAX_FAILURE_LINES)
        tr_ingest_warn(r->o, "%s: %zu more CUPTI call(s) failed (the file's STATUS entries say why): %s",
                       r->path, r->failures - MAX_FAILURE_LINES,
                       r->not_recorded ? r->not_recorded : "");
    if (r->stats[TR_RAW_STAT_INVALID])
        tr_ingest_warn(r->o, "%s: %llu activity buffer(s) cut short by a record CUPTI could not "
                       "read: the records after it in each are lost", r->path,
                       (unsigned long long)r->stats[TR_RAW_STAT_INVALID]);
    if (r->stats[TR_RAW_STAT_QUERIES])
        tr_ingest_warn(r->o, "%s: %llu stream/event query record(s) folded: queries are not waits "
                       "(--kinds query records them)", r->path,
                       (unsigned long long)r->stats[TR_RAW_STAT_QUERIES]);
    if (r->not_waits)
        tr_ingest_warn(r->o, "%s: %zu sync record(s) of queries or failed calls not counted as waits",
                       r->path, r->not_waits);
    if (r->stats[TR_RAW_STAT_CAPTURE_NO_ID])
        tr_ingest_warn(r->o, "%s: %llu NVTX start/end capture range(s) ignored: CUPTI gave no range id",
                       r->path, (unsigned long long)r->stats[TR_RAW_STAT_CAPTURE_NO_ID]);
    if (r->incomplete)
        tr_ingest_warn(r->o, "%s: %zu GPU activit%s without timestamps (still running at exit) "
                       "skipped", r->path, r->incomplete, r->incomplete == 1 ? "y" : "ies");
    if (r->unknown_kinds)
        tr_ingest_warn(r->o, "%s: %zu record(s) of unknown kinds skipped", r->path,
                       r->unknown_kinds);
    if (r->short_records)
        tr_ingest_warn(r->o, "%s: %zu record(s) in malformed record chunks skipped", r->path,
                       r->short_records);
    if (r->orphan_ends)
        tr_ingest_warn(r->o, "%s: %zu NVTX range end(s) without a start ignored", r->path,
                       r->orphan_ends);
    if (r->restarted)
        tr_ingest_warn(r->o, "%s: %zu NVTX range id(s) started twice", r->path, r->restarted);
}

static void close_ranges(raw_reader *r)
{
    size_t unterminated = r->open_ranges.n;
    for (size_t i = 0; i < r->open_ranges.cap; i++) {
        tr_spill_tick();
        if (!r->open_ranges.slots[i].used)
            continue;
        tr_event *e = &r->t->events.v[r->open_ranges.slots[i].val];
        e->end = r->max_ts > e->start ? r->max_ts : e->start;
        e->flags |= TR_FLAG_UNTERMINATED;
    }
    if (unterminated)
        tr_ingest_warn(r->o, "%s: %zu NVTX range(s) never ended; closed at the last timestamp",
                       r->path, unterminated);
}

tr_status tr_raw_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err)
{
    raw_input in;
    tr_status s = open_input(path, &in, err);
    if (s != TR_OK)
        return s;
    const unsigned char *d = in.d;
    size_t len = in.len;
    raw_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.o = o;
    r.path = path;
    tr_i64map_init(&r.ctx_device);
    tr_i64map_init(&r.open_ranges);
    tr_i64map_init(&r.api_corr);
    tr_i64map_init(&r.stack_at);
    if (len < 8 || memcmp(d, TR_RAW_MAGIC, 8) != 0) {
        s = tr_fail(err, TR_ERR_INPUT, "%s: not a trace-record raw file (bad magic)", path);
        goto out;
    }
    if (len < TR_RAW_HEADER_LEN) {
        s = tr_fail(err, TR_ERR_INPUT, "%s: truncated in its header (%zu of %u bytes)", path,
                    len, TR_RAW_HEADER_LEN);
        goto out;
    }
    unsigned major = tr_raw_ld16(d + 8), minor = tr_raw_ld16(d + 10);
    if (major > TR_RAW_MAJOR) {
        s = tr_fail(err, TR_ERR_INPUT, "%s: raw format version %u.%u is newer than this reader "
                    "supports (%u.%u): use a newer trace-ingest", path, major, minor,
                    TR_RAW_MAJOR, TR_RAW_MINOR);
        goto out;
    }
    if (major < 1 || tr_raw_ld32(d + 16) != TR_RAW_ENDIAN_CHECK
        || crc_of(d, offsetof(tr_raw_header, header_crc))
               != tr_raw_ld32(d + offsetof(tr_raw_header, header_crc))) {
        s = tr_fail(err, TR_ERR_INPUT, "%s: corrupted header (bad CRC, version or byte order)",
                    path);
        goto out;
    }
    size_t hlen = tr_raw_ld32(d + 12);
    if (hlen < TR_RAW_HEADER_LEN || hlen > len || hlen % 8) {
        s = tr_fail(err, TR_ERR_INPUT, "%s: corrupted header (length %zu)", path, hlen);
        goto out;
    }
    uint32_t flags = tr_raw_ld32(d + 20);
    uint32_t pid = tr_raw_ld32(d + 32);
    uint64_t t0_real = tr_raw_ld64(d + 40), t0_mono = tr_raw_ld64(d + 48);
    uint64_t t0_cupti = tr_raw_ld64(d + offsetof(tr_raw_header, t0_cupti));
    r.t0_real = t0_real;
    if (flags & TR_RAW_HF_CLOCK_MONOTONIC)
        r.shift = (int64_t)(t0_real - t0_mono);
    else if ((flags & TR_RAW_HF_CLOCK_CUPTI) && t0_cupti)
        r.shift = (int64_t)(t0_real - t0_cupti);
    else
        r.shift = 0;   /* minor 0 and 1 files without the flag: CLOCK_REALTIME */
    char version[32];
    snprintf(version, sizeof version, "%u.%u", major, minor);
    size_t first_event = t->events.n;
    r.source = tr_add_source(t, path, "raw", version);
    r.process = r.source ? tr_process_get(t, r.source, pid) : 0;
    if (!r.process) {
        s = oom(err);
        goto out;
    }
    if ((s = tr_nvtx_parser_new(&r.nvtx, err)) != TR_OK)
        goto out;
    if ((s = read_chunks(&r, &in, hlen, err)) != TR_OK || (s = resolve_pending(&r, err)) != TR_OK)
        goto out;
    close_ranges(&r);
    if (map_asked_correlations(&r) < 0 || join_copies(&r) < 0) {
        s = oom(err);
        goto out;
    }
    if ((s = attach_stacks(&r, err)) != TR_OK)
        goto out;
    warn_summary(&r);
    t->sources.v[r.source].events = (int64_t)(t->events.n - first_event);
out:
    tr_nvtx_parser_free(r.nvtx);
    tr_i64map_free(&r.ctx_device);
    tr_i64map_free(&r.open_ranges);
    tr_i64map_free(&r.api_corr);
    tr_i64map_free(&r.stack_at);
    tr_spill_free(r.strs);
    tr_spill_free(r.kname);
    free(r.stack_pcs);
    tr_spill_free(r.refs);
    tr_spill_free(r.api_calls.v);
    free(r.maps);
    free(r.modules);
    tr_spill_free(r.pending.v);
    tr_spill_free(r.copies.v);
    free(r.not_recorded);
    close_input(&in);
    return s;
}
