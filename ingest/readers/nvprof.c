/*
 * nvprof.c - reader for nvprof/nvvp SQLite databases (schema Version 8..26).
 *
 * What is read: kernels (CONCURRENT_KERNEL and KERNEL), runtime and driver API
 * calls with any callback id, memcpy (MEMCPY, MEMCPY2), memset,
 * synchronisation, NVTX markers (start/end pairs by id, instantaneous marks),
 * devices, contexts, streams, process names.  nvprof timestamps are absolute
 * nanoseconds and are kept as such.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/ingest.h"
#include "ingest/sql_input.h"
#include "lib/cuda_enums.h"
#include "lib/i64map.h"
#include "lib/names.h"

#define WHAT "nvprof database"

typedef struct {
    tr_trace *t;
    tr_sql_input in;
    const tr_ingest_opts *o;
    uint32_t source;
    /* StringTable: nvprof id -> our string id, sorted by nvprof id */
    int64_t *str_ids;
    uint32_t *str_raw;
    uint32_t *str_kernel;   /* demangled display name, lazily */
    size_t nstr;
    tr_i64map ctx_device;   /* contextId -> deviceId */
    uint32_t api_names[2][1024];
    int64_t max_ts;
    tr_nvtx_parser *nvtx;
} nv_reader;

static tr_status oom(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while reading an nvprof database");
}

int tr_nvprof_probe(const char *path, const unsigned char *head, size_t headlen)
{
    if (headlen < 16 || memcmp(head, "SQLite format 3", 16) != 0)
        return 0;
    tr_sql_input in;
    if (tr_sql_open(&in, path, WHAT, NULL) != TR_OK)
        return 0;
    int yes = tr_sql_has_table(&in, "StringTable")
              && tr_sql_int(&in, "SELECT count(*) FROM sqlite_master WHERE type='table' "
                                 "AND name LIKE 'CUPTI\\_ACTIVITY\\_KIND\\_%' ESCAPE '\\'", 0) > 0;
    tr_sql_close(&in);
    return yes;
}

static ssize_t str_index(const nv_reader *r, int64_t nv_id)
{
    size_t lo = 0, hi = r->nstr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->str_ids[mid] < nv_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nstr && r->str_ids[lo] == nv_id ? (ssize_t)lo : -1;
}

static tr_status load_strings(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {{"_id_", 1}, {"value", 1}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, "StringTable", cols, 2, " ORDER BY _id_", &st, err);
    if (s != TR_OK)
        return s;
    size_t cap = 0;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, "StringTable", err)) == 1) {
        if (r->nstr == cap) {
            cap = cap ? cap * 2 : 256;
            int64_t *ni = realloc(r->str_ids, cap * sizeof *ni);
            if (ni)
                r->str_ids = ni;
            uint32_t *nr = realloc(r->str_raw, cap * sizeof *nr);
            if (nr)
                r->str_raw = nr;
            if (!ni || !nr) {
                sqlite3_finalize(st);
                return oom(err);
            }
        }
        const char *v = (const char *)sqlite3_column_text(st, 1);
        int len = sqlite3_column_bytes(st, 1);
        r->str_ids[r->nstr] = sqlite3_column_int64(st, 0);
        r->str_raw[r->nstr] = tr_intern_add(&r->t->strings, v ? v : "", v ? (size_t)len : 0);
        if (!r->str_raw[r->nstr]) {
            sqlite3_finalize(st);
            return oom(err);
        }
        r->nstr++;
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return err->status;
    r->str_kernel = calloc(r->nstr ? r->nstr : 1, sizeof *r->str_kernel);
    return r->str_kernel ? TR_OK : oom(err);
}

/* Raw string for an nvprof string id; "" for 0 / unknown. */
static uint32_t raw_string(nv_reader *r, int64_t nv_id)
{
    ssize_t i = nv_id > 0 ? str_index(r, nv_id) : -1;
    return i >= 0 ? r->str_raw[i] : tr_str(r->t, "");
}

/* Kernel names: demangled for display, the mangled one kept as raw_name. */
static void kernel_name(nv_reader *r, int64_t nv_id, tr_event *e)
{
    ssize_t i = nv_id > 0 ? str_index(r, nv_id) : -1;
    if (i < 0) {
        char buf[48];
        snprintf(buf, sizeof buf, "[unknown kernel %lld]", (long long)nv_id);
        e->name = tr_str(r->t, buf);
        return;
    }
    if (!r->str_kernel[i]) {
        char *d = tr_demangle(tr_str_of(r->t, r->str_raw[i]));
        r->str_kernel[i] = d ? tr_str(r->t, d) : r->str_raw[i];
        free(d);
    }
    e->name = r->str_kernel[i];
    if (e->name != r->str_raw[i]) {
        e->raw_name = r->str_raw[i];
        e->flags |= TR_FLAG_DEMANGLED;
    }
}

static void note_ts(nv_reader *r, int64_t ts)
{
    if (ts > r->max_ts)
        r->max_ts = ts;
}

static uint32_t thread_of(nv_reader *r, int64_t pid, int64_t tid)
{
    uint32_t p = tr_process_get(r->t, r->source, (uint32_t)pid);
    return p ? tr_thread_get(r->t, p, (uint32_t)tid) : 0;
}

static uint32_t stream_of(nv_reader *r, int64_t device, int64_t context, int64_t stream)
{
    uint32_t d = tr_device_get(r->t, r->source, device);
    return d ? tr_stream_get(r->t, d, context, stream) : 0;
}

/* CUpti_ActivityObjectKindId: {u32 processId; u32 threadId} for processes and threads. */
static void object_pid_tid(sqlite3_stmt *st, int kind_col, int blob_col, int64_t *pid, int64_t *tid)
{
    int kind = sqlite3_column_int(st, kind_col);
    const unsigned char *b = sqlite3_column_blob(st, blob_col);
    int n = sqlite3_column_bytes(st, blob_col);
    uint32_t v[2] = {0, 0};
    if (b && n >= 4)
        memcpy(&v[0], b, 4);
    if (b && n >= 8 && kind == 2)
        memcpy(&v[1], b + 4, 4);
    *pid = (kind == 1 || kind == 2) ? v[0] : 0;
    *tid = v[1];
}

static tr_status read_devices(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {
        {"id", 1}, {"name", 0}, {"computeCapabilityMajor", 0}, {"computeCapabilityMinor", 0},
        {"globalMemorySize", 0}, {"numMultiprocessors", 0}};
    const char *tab = "CUPTI_ACTIVITY_KIND_DEVICE";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 6, " ORDER BY id", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        uint32_t d = tr_device_get(r->t, r->source, sqlite3_column_int64(st, 0));
        if (!d) {
            sqlite3_finalize(st);
            return oom(err);
        }
        tr_device *dev = &r->t->devices.v[d];
        dev->name = sqlite3_column_type(st, 1) == SQLITE_NULL ? 0 : raw_string(r, sqlite3_column_int64(st, 1));
        dev->cc_major = (int32_t)tr_col_i64(st, 2, -1);
        dev->cc_minor = (int32_t)tr_col_i64(st, 3, -1);
        dev->memory_bytes = tr_col_i64(st, 4, -1);
        dev->sm_count = (int32_t)tr_col_i64(st, 5, -1);
    }
    sqlite3_finalize(st);
    if (rc < 0)
        return err->status;

    static const tr_col ccols[] = {{"contextId", 1}, {"deviceId", 1}};
    tab = "CUPTI_ACTIVITY_KIND_CONTEXT";
    if ((s = tr_sql_select(&r->in, tab, ccols, 2, NULL, &st, err)) != TR_OK || !st)
        return s;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1)
        if (tr_i64map_put(&r->ctx_device, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0) {
            sqlite3_finalize(st);
            return oom(err);
        }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_names(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {{"objectKind", 1}, {"objectId", 1}, {"name", 1}};
    const char *tab = "CUPTI_ACTIVITY_KIND_NAME";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 3, NULL, &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        int kind = sqlite3_column_int(st, 0);
        int64_t pid, tid;
        object_pid_tid(st, 0, 1, &pid, &tid);
        uint32_t name = raw_string(r, sqlite3_column_int64(st, 2));
        if (kind == 1) {
            uint32_t p = tr_process_get(r->t, r->source, pid);
            if (p)
                r->t->processes.v[p].name = name;
        } else if (kind == 2) {
            uint32_t th = thread_of(r, pid, tid);
            if (th)
                r->t->threads.v[th].name = name;
        }
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static uint32_t api_name(nv_reader *r, int driver, int cbid)
{
    if (cbid > 0 && cbid < 1024 && r->api_names[driver][cbid])
        return r->api_names[driver][cbid];
    const char *known = driver ? tr_driver_cbid_name(cbid) : tr_runtime_cbid_name(cbid);
    char buf[64];
    if (!known) {
        snprintf(buf, sizeof buf, "%s API cbid %d", driver ? "driver" : "runtime", cbid);
        known = buf;
    }
    uint32_t id = tr_str(r->t, known);
    if (cbid > 0 && cbid < 1024)
        r->api_names[driver][cbid] = id;
    return id;
}

static tr_status read_api(nv_reader *r, int driver, tr_error *err)
{
    static const tr_col cols[] = {{"cbid", 1}, {"start", 1}, {"end", 1}, {"processId", 0},
                                  {"threadId", 0}, {"correlationId", 0}, {"returnValue", 0}};
    const char *tab = driver ? "CUPTI_ACTIVITY_KIND_DRIVER" : "CUPTI_ACTIVITY_KIND_RUNTIME";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 7, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        tr_event *e = tr_add_event(r->t, driver ? TR_KIND_DRIVER : TR_KIND_RUNTIME);
        if (!e) {
            sqlite3_finalize(st);
            return oom(err);
        }
        int cbid = sqlite3_column_int(st, 0);
        e->name = api_name(r, driver, cbid);
        e->start = sqlite3_column_int64(st, 1);
        e->end = sqlite3_column_int64(st, 2);
        e->thread = thread_of(r, tr_col_i64(st, 3, 0), tr_col_i64(st, 4, 0));
        e->correlation = tr_col_i64(st, 5, -1);
        tr_api_detail d = {cbid, tr_col_i64(st, 6, 0)};
        e->detail = tr_add_api_detail(r->t, &d);
        note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_kernels(nv_reader *r, const char *tab, tr_error *err)
{
    static const tr_col cols[] = {
        {"start", 1}, {"end", 1}, {"deviceId", 0}, {"contextId", 0}, {"streamId", 0},
        {"correlationId", 0}, {"name", 1}, {"gridX", 0}, {"gridY", 0}, {"gridZ", 0},
        {"blockX", 0}, {"blockY", 0}, {"blockZ", 0}, {"registersPerThread", 0},
        {"staticSharedMemory", 0}, {"dynamicSharedMemory", 0}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, sizeof cols / sizeof cols[0],
                                " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        tr_event *e = tr_add_event(r->t, TR_KIND_KERNEL);
        if (!e) {
            sqlite3_finalize(st);
            return oom(err);
        }
        e->start = sqlite3_column_int64(st, 0);
        e->end = sqlite3_column_int64(st, 1);
        e->stream = stream_of(r, tr_col_i64(st, 2, 0), tr_col_i64(st, 3, -1), tr_col_i64(st, 4, 0));
        e->correlation = tr_col_i64(st, 5, -1);
        kernel_name(r, sqlite3_column_int64(st, 6), e);
        tr_kernel_detail d;
        for (int j = 0; j < 3; j++) {
            d.grid[j] = (int32_t)tr_col_i64(st, 7 + j, 0);
            d.block[j] = (int32_t)tr_col_i64(st, 10 + j, 0);
        }
        d.registers = (int32_t)tr_col_i64(st, 13, 0);
        d.static_smem = (int32_t)tr_col_i64(st, 14, 0);
        d.dynamic_smem = (int32_t)tr_col_i64(st, 15, 0);
        e->detail = tr_add_kernel_detail(r->t, &d);
        note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_memcpy(nv_reader *r, const char *tab, tr_error *err)
{
    static const tr_col cols[] = {{"copyKind", 1}, {"srcKind", 0}, {"dstKind", 0}, {"bytes", 1},
                                  {"start", 1}, {"end", 1}, {"deviceId", 0}, {"contextId", 0},
                                  {"streamId", 0}, {"correlationId", 0}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 10, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        tr_event *e = tr_add_event(r->t, TR_KIND_MEMCPY);
        if (!e) {
            sqlite3_finalize(st);
            return oom(err);
        }
        int64_t kind = sqlite3_column_int64(st, 0);
        tr_copy_detail d = {tr_enum_str(r->t, &tr_copy_kinds, kind),
                            sqlite3_column_type(st, 1) == SQLITE_NULL ? 0
                                : tr_enum_str(r->t, &tr_memory_kinds, sqlite3_column_int64(st, 1)),
                            sqlite3_column_type(st, 2) == SQLITE_NULL ? 0
                                : tr_enum_str(r->t, &tr_memory_kinds, sqlite3_column_int64(st, 2))};
        e->name = tr_memcpy_name(r->t, d.copy_kind);
        e->bytes = sqlite3_column_int64(st, 3);
        e->start = sqlite3_column_int64(st, 4);
        e->end = sqlite3_column_int64(st, 5);
        e->stream = stream_of(r, tr_col_i64(st, 6, 0), tr_col_i64(st, 7, -1), tr_col_i64(st, 8, 0));
        e->correlation = tr_col_i64(st, 9, -1);
        e->detail = tr_add_copy_detail(r->t, &d);
        note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_memset(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {{"value", 0}, {"bytes", 1}, {"start", 1}, {"end", 1},
                                  {"deviceId", 0}, {"contextId", 0}, {"streamId", 0},
                                  {"correlationId", 0}};
    const char *tab = "CUPTI_ACTIVITY_KIND_MEMSET";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 8, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    uint32_t name = tr_str(r->t, "[CUDA memset]");
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        tr_event *e = tr_add_event(r->t, TR_KIND_MEMSET);
        if (!e) {
            sqlite3_finalize(st);
            return oom(err);
        }
        e->name = name;
        e->detail = tr_add_memset_value(r->t, tr_col_i64(st, 0, 0));
        e->bytes = sqlite3_column_int64(st, 1);
        e->start = sqlite3_column_int64(st, 2);
        e->end = sqlite3_column_int64(st, 3);
        e->stream = stream_of(r, tr_col_i64(st, 4, 0), tr_col_i64(st, 5, -1), tr_col_i64(st, 6, 0));
        e->correlation = tr_col_i64(st, 7, -1);
        note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_sync(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {{"type", 0}, {"start", 1}, {"end", 1}, {"correlationId", 0},
                                  {"contextId", 0}, {"streamId", 0}};
    const char *tab = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 6, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        tr_event *e = tr_add_event(r->t, TR_KIND_SYNC);
        if (!e) {
            sqlite3_finalize(st);
            return oom(err);
        }
        int64_t type = tr_col_i64(st, 0, 0);
        e->name = tr_enum_str(r->t, &tr_sync_names, type >= 0 && type < 5 ? type : 0);
        e->start = sqlite3_column_int64(st, 1);
        e->end = sqlite3_column_int64(st, 2);
        e->correlation = tr_col_i64(st, 3, -1);
        /* The wait happens on the calling thread (found through the correlation
         * id at tree build); the stream says what was waited for. */
        int64_t ctx = tr_col_i64(st, 4, -1), device = 0;
        tr_i64map_get(&r->ctx_device, ctx, &device);
        e->stream = stream_of(r, device, ctx, tr_col_i64(st, 5, -1));
        note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

/* NVTX: flags 1 = instantaneous mark, 2 = range start, 4 = range end (name 0). */
static tr_status read_markers(nv_reader *r, tr_error *err)
{
    static const tr_col cols[] = {{"flags", 1}, {"timestamp", 1}, {"id", 1},
                                  {"objectKind", 1}, {"objectId", 1}, {"name", 1}};
    const char *tab = "CUPTI_ACTIVITY_KIND_MARKER";
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 6, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    tr_i64map open;
    tr_i64map_init(&open);
    size_t orphan_ends = 0, restarted = 0;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        int64_t flags = sqlite3_column_int64(st, 0);
        int64_t ts = sqlite3_column_int64(st, 1);
        int64_t id = sqlite3_column_int64(st, 2);
        int64_t pid, tid;
        object_pid_tid(st, 3, 4, &pid, &tid);
        uint32_t thread = thread_of(r, pid, tid);
        note_ts(r, ts);
        if (flags & 4) {
            int64_t idx;
            if (!tr_i64map_get(&open, id, &idx)) {
                orphan_ends++;
                continue;
            }
            tr_i64map_del(&open, id);
            tr_event *e = &r->t->events.v[idx];
            e->end = ts;
            if (e->thread != thread)
                e->flags |= TR_FLAG_ASYNC;
            continue;
        }
        if (!(flags & 3))
            continue;   /* sync acquire/release markers carry no range */
        tr_event *e = tr_add_event(r->t, (flags & 2) ? TR_KIND_RANGE : TR_KIND_MARK);
        if (!e)
            goto nomem;
        e->start = e->end = ts;
        e->thread = thread;
        uint32_t raw = raw_string(r, sqlite3_column_int64(st, 5));
        const char *msg = tr_str_of(r->t, raw);
        tr_nvtx_annotation a;
        tr_nvtx_parse(r->nvtx, msg, strlen(msg), &a);
        if (a.annotated) {
            e->kind = TR_KIND_OP;
            e->name = tr_intern_add(&r->t->strings, a.name, a.name_len);
            e->raw_name = raw;
            e->seq = a.seq;
            e->op_id = a.op_id;
            if (a.sizes)
                e->shape = tr_intern_add(&r->t->strings, a.sizes, a.sizes_len);
        } else {
            e->name = raw;
        }
        if (flags & 2) {
            int64_t prev;
            if (tr_i64map_get(&open, id, &prev))
                restarted++;
            if (tr_i64map_put(&open, id, (int64_t)(e - r->t->events.v)) < 0)
                goto nomem;
        }
    }
    sqlite3_finalize(st);
    st = NULL;
    if (rc < 0) {
        tr_i64map_free(&open);
        return err->status;
    }
    size_t unterminated = open.n;
    for (size_t i = 0; i < open.cap; i++) {
        if (!open.slots[i].used)
            continue;
        tr_event *e = &r->t->events.v[open.slots[i].val];
        e->end = r->max_ts > e->start ? r->max_ts : e->start;
        e->flags |= TR_FLAG_UNTERMINATED;
    }
    tr_i64map_free(&open);
    if (unterminated)
        tr_ingest_warn(r->o, "%s: %zu NVTX range(s) never ended; closed at the last timestamp",
                       r->in.path, unterminated);
    if (orphan_ends)
        tr_ingest_warn(r->o, "%s: %zu NVTX range end(s) without a start ignored", r->in.path,
                       orphan_ends);
    if (restarted)
        tr_ingest_warn(r->o, "%s: %zu NVTX range id(s) started twice", r->in.path, restarted);
    return TR_OK;
nomem:
    sqlite3_finalize(st);
    tr_i64map_free(&open);
    return oom(err);
}

tr_status tr_nvprof_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err)
{
    nv_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.o = o;
    tr_i64map_init(&r.ctx_device);
    tr_status s = tr_sql_open(&r.in, path, WHAT, err);
    if (s != TR_OK)
        return s;
    if (!tr_sql_has_table(&r.in, "StringTable")) {
        s = tr_fail(err, TR_ERR_INPUT, "Cannot read " WHAT ": path=\"%s\": no StringTable table "
                    "(not an nvprof export)", path);
        goto out;
    }
    char version[32];
    snprintf(version, sizeof version, "%lld",
             (long long)tr_sql_int(&r.in, "SELECT max(version) FROM Version", -1));
    size_t first_event = t->events.n;
    r.source = tr_add_source(t, path, "nvprof", version);
    if (!r.source || (s = tr_nvtx_parser_new(&r.nvtx, err)) != TR_OK) {
        s = r.source ? s : oom(err);
        goto out;
    }
    /* Markers last: unterminated ranges close at the last timestamp of anything. */
    if ((s = load_strings(&r, err)) != TR_OK || (s = read_devices(&r, err)) != TR_OK
        || (s = read_names(&r, err)) != TR_OK || (s = read_api(&r, 0, err)) != TR_OK
        || (s = read_api(&r, 1, err)) != TR_OK
        || (s = read_kernels(&r, "CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", err)) != TR_OK
        || (s = read_kernels(&r, "CUPTI_ACTIVITY_KIND_KERNEL", err)) != TR_OK
        || (s = read_memcpy(&r, "CUPTI_ACTIVITY_KIND_MEMCPY", err)) != TR_OK
        || (s = read_memcpy(&r, "CUPTI_ACTIVITY_KIND_MEMCPY2", err)) != TR_OK
        || (s = read_memset(&r, err)) != TR_OK || (s = read_sync(&r, err)) != TR_OK
        || (s = read_markers(&r, err)) != TR_OK)
        goto out;
    t->sources.v[r.source].events = (int64_t)(t->events.n - first_event);
out:
    tr_nvtx_parser_free(r.nvtx);
    tr_sql_close(&r.in);
    tr_i64map_free(&r.ctx_device);
    free(r.str_ids);
    free(r.str_raw);
    free(r.str_kernel);
    return s;
}
