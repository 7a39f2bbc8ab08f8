/*
 * nvprof.c - reader for nvprof/nvvp SQLite databases (schema Version 8..26).
 *
 * What is read: kernels (CONCURRENT_KERNEL and KERNEL), runtime and driver API
 * calls with any callback id, memcpy (MEMCPY, MEMCPY2), memset,
 * synchronisation, CUDA events, OpenACC activity (DATA, LAUNCH, OTHER), the
 * profiler's overhead rows, NVTX markers (start/end pairs by id, instantaneous
 * marks), devices, contexts, streams, process names.  Every other non-empty
 * table is named, with its row count, in one warning.  nvprof timestamps are
 * absolute nanoseconds and are kept as such; a row without a usable start and
 * end is skipped and counted, never read as time 0.  docs/formats.md has the
 * whole mapping.
 *
 * The tables nvprof shares with nsys are rows of nv_tables below, read by the
 * loops of cupti_tables.c; the tables only nvprof has are read here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/readers/cupti_tables.h"
#include "lib/spill.h"

#define WHAT "nvprof database"

int tr_nvprof_probe(const char *path, const unsigned char *head, size_t headlen)
{
    tr_sql_input in;
    if (!ct_probe_open(&in, path, head, headlen, WHAT))
        return 0;
    int yes = tr_sql_has_table(&in, "StringTable")
              && tr_sql_int(&in, "SELECT count(*) FROM sqlite_master WHERE type='table' "
                                 "AND name LIKE 'CUPTI\\_ACTIVITY\\_KIND\\_%' ESCAPE '\\'", 0) > 0;
    tr_sql_close(&in);
    return yes;
}

/* An nvprof string as found by ct_string() and its kin, "" for 0 (nvprof's null) or unknown. */
static uint32_t or_empty(ct_reader *r, uint32_t s)
{
    return s ? s : tr_str(r->t, "");
}

/* CUpti_ActivityObjectKindId: {u32 processId; u32 threadId} for processes and threads. */
static void pid_tid_of(int kind, const unsigned char *b, int n, int64_t *pid, int64_t *tid)
{
    uint32_t v[2] = {0, 0};
    if (b && n >= 4)
        memcpy(&v[0], b, 4);
    if (b && n >= 8 && kind == 2)
        memcpy(&v[1], b + 4, 4);
    *pid = (kind == 1 || kind == 2) ? v[0] : 0;
    *tid = v[1];
}

static void object_pid_tid(sqlite3_stmt *st, int kind_col, int blob_col, int64_t *pid, int64_t *tid)
{
    int kind = sqlite3_column_int(st, kind_col);
    const unsigned char *b = sqlite3_column_blob(st, blob_col);
    pid_tid_of(kind, b, sqlite3_column_bytes(st, blob_col), pid, tid);
}

static tr_status read_contexts(ct_reader *r, const ct_table *table, tr_error *err)
{
    const char *tab = table->name;
    static const tr_col cols[] = {{"contextId", 1}, {"deviceId", 1}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 2, NULL, &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1)
        if (tr_i64map_put(&r->ctx_device, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0) {
            sqlite3_finalize(st);
            return ct_oom(r, err);
        }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status read_names(ct_reader *r, const ct_table *table, tr_error *err)
{
    const char *tab = table->name;
    static const tr_col cols[] = {{"objectKind", 1}, {"objectId", 1}, {"name", 1}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 3, NULL, &st, err);
    if (s != TR_OK || !st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        int kind = sqlite3_column_int(st, 0);
        int64_t pid, tid;
        object_pid_tid(st, 0, 1, &pid, &tid);
        uint32_t name = or_empty(r, ct_string(r, st, 2));
        if (kind == 1) {
            uint32_t p = tr_process_get(r->t, r->source, pid);
            if (p)
                r->t->processes.v[p].name = name;
        } else if (kind == 2) {
            uint32_t th = ct_thread(r, pid, tid);
            if (th)
                r->t->threads.v[th].name = name;
        }
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

/* nvprof stores no time for a CUDA event (CUpti_ActivityCudaEvent has none): it is
 * placed, zero length, at the start of the API call with its correlation id, the
 * cudaEventRecord that recorded it (the runtime call when both exist, as the tree
 * prefers).  A first pass collects the correlation ids, so the lookup costs memory
 * in proportion to the CUDA events, not to the API calls. */
static tr_status read_cuda_events(ct_reader *r, const ct_table *table, tr_error *err)
{
    const char *tab = table->name;
    static const tr_col cols[] = {{"correlationId", 1}, {"contextId", 0}, {"streamId", 0},
                                  {"deviceId", 0}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 4, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    tr_i64map when;   /* correlation id -> the API call's start, INT64_MIN until found */
    tr_i64map_init(&when);
    size_t no_call = 0;
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1)
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER
            && tr_i64map_put(&when, sqlite3_column_int64(st, 0), INT64_MIN) < 0)
            goto nomem;
    if (rc < 0)
        goto out;
    for (size_t i = r->first_event; when.n && i < r->t->events.n; i++) {
        tr_spill_tick();
        const tr_event *a = &r->t->events.v[i];
        int64_t t;
        if (tr_kinds[a->kind].is_api && tr_i64map_get(&when, tr_correlation(r->t, a), &t) && t == INT64_MIN
            && tr_i64map_put(&when, tr_correlation(r->t, a), a->start) < 0)
            goto nomem;
    }
    sqlite3_reset(st);
    uint32_t name = tr_str(r->t, "[CUDA event]");
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        int64_t at = INT64_MIN;
        if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
            tr_i64map_get(&when, sqlite3_column_int64(st, 0), &at);
        if (at == INT64_MIN) {
            no_call++;
            continue;
        }
        tr_event *e = tr_add_event(r->t, TR_KIND_CUDA_EVENT);
        if (!e)
            goto nomem;
        e->name = name;
        e->start = e->end = at;
        if (tr_set_correlation(r->t, e, sqlite3_column_int64(st, 0)) < 0)
            goto nomem;
        int64_t ctx = tr_col_i64(st, 1, -1), device = tr_col_i64(st, 3, -1);
        if (device < 0 && !tr_i64map_get(&r->ctx_device, ctx, &device))
            device = 0;
        e->stream = ct_stream(r, device, ctx, tr_col_i64(st, 2, 0));
    }
out:
    sqlite3_finalize(st);
    tr_i64map_free(&when);
    if (no_call)
        tr_ingest_warn(r->o, "%s: table=%s: %zu CUDA event(s) skipped: no API call with their "
                       "correlation id to give them a time", r->in.path, tab, no_call);
    return rc < 0 ? err->status : TR_OK;
nomem:
    sqlite3_finalize(st);
    tr_i64map_free(&when);
    return ct_oom(r, err);
}

/* CUpti_OpenAccEventKind and CUpti_OpenAccConstructKind, named as nvprof names the
 * events ("acc_enqueue_launch") and as the directives are written ("enter data"). */
static const char *const acc_event_names[] = {
    NULL, "acc_device_init", "acc_device_shutdown", "acc_runtime_shutdown",
    "acc_enqueue_launch", "acc_enqueue_upload", "acc_enqueue_download", "acc_wait",
    "acc_implicit_wait", "acc_compute_construct", "acc_update", "acc_enter_data",
    "acc_exit_data", "acc_create", "acc_delete", "acc_alloc", "acc_free"};
static const char *const acc_construct_names[] = {
    NULL, "parallel", "kernels", "loop", "data", "enter data", "exit data", "host_data",
    "atomic", "declare", "init", "shutdown", "set", "update", "routine", "wait", "runtime api"};

/* "acc_enqueue_launch@jacobi.c:59 (main_59_gpu) [parallel]": nvprof's own name for
 * the event (event kind, source file and line, launched kernel or data variable),
 * then the construct it belongs to. */
static uint32_t acc_name(ct_reader *r, const ct_row *w)
{
    char ev[32];
    int64_t kind = ct_i64(w, CT_EVENT_KIND, 0), construct = ct_i64(w, CT_CONSTRUCT, 0);
    int64_t line = ct_i64(w, CT_LINE, 0);
    const char *event = kind > 0 && (uint64_t)kind < sizeof acc_event_names / sizeof acc_event_names[0]
                            ? acc_event_names[kind] : NULL;
    if (!event) {
        snprintf(ev, sizeof ev, "acc_event_%lld", (long long)kind);
        event = ev;
    }
    const char *file = tr_str_of(r->t, or_empty(r, ct_row_string(r, w, CT_SRC_FILE)));
    const char *detail = tr_str_of(r->t, or_empty(r, ct_row_string(r, w, CT_DETAIL)));
    const char *cons = construct > 0
                           && (uint64_t)construct < sizeof acc_construct_names / sizeof acc_construct_names[0]
                           ? acc_construct_names[construct] : NULL;
    char lbuf[32] = "";
    if (*file && line > 0)
        snprintf(lbuf, sizeof lbuf, ":%lld", (long long)line);
    size_t len = strlen(event) + strlen(file) + strlen(lbuf) + strlen(detail)
                 + (cons ? strlen(cons) : 0) + 8;
    char *buf = malloc(len);
    if (!buf)
        return 0;
    snprintf(buf, len, "%s%s%s%s%s%s%s%s%s%s", event, *file ? "@" : "", file, lbuf,
             *detail ? " (" : "", detail, *detail ? ")" : "", cons ? " [" : "", cons ? cons : "",
             cons ? "]" : "");
    uint32_t id = tr_str(r->t, buf);
    free(buf);
    return id;
}

/* OpenACC events run on a host thread and enclose the CUDA calls they make. */
static tr_status fill_openacc(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                              tr_error *err)
{
    (void)tab;
    if (!(e->name = acc_name(r, w)))
        return ct_oom(r, err);
    /* cuThreadId is the thread's id as the CUDA API tables give it; OpenACC's own
     * threadId only stands in when it is missing */
    int64_t tid = ct_i64(w, CT_TID, 0);
    e->thread = ct_thread(r, ct_i64(w, CT_PID, 0), tid ? tid : ct_i64(w, CT_HOST_TID, 0));
    return tr_set_bytes(r->t, e, ct_i64(w, CT_BYTES, 0)) < 0 ? ct_oom(r, err) : TR_OK;
}

static tr_status read_openacc(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, NULL, fill_openacc, err);
}

static uint32_t overhead_name(ct_reader *r, int64_t kind)
{
    char buf[64];
    tr_overhead_name(buf, sizeof buf, (int64_t)kind);
    return tr_str(r->t, buf);
}

/* API calls of this file that run on a thread, by start time. */
typedef struct {
    int64_t start, end;
    uint32_t thread;
} nv_call;

static int cmp_call(const void *pa, const void *pb)
{
    const nv_call *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return a->end > b->end ? -1 : a->end < b->end;
}

static nv_call *collect_calls(const ct_reader *r, size_t *n)
{
    size_t cap = 1;
    for (size_t i = r->first_event; i < r->t->events.n; i++) {
        tr_spill_tick();
        cap += tr_kinds[r->t->events.v[i].kind].is_api;
    }
    nv_call *c = tr_spill_calloc(cap, sizeof *c);
    if (!c)
        return NULL;
    *n = 0;
    for (size_t i = r->first_event; i < r->t->events.n; i++) {
        tr_spill_tick();
        const tr_event *e = &r->t->events.v[i];
        if (tr_kinds[e->kind].is_api && e->thread)
            c[(*n)++] = (nv_call){e->start, e->end, e->thread};
    }
    tr_spill_sort(c, *n, sizeof *c, cmp_call);
    return c;
}

/* The one thread of `process` whose API call encloses [start, end], or 0 when none
 * or several do.  Calls on a thread nest (driver calls inside runtime calls), so the
 * enclosing call is among the last few that started before `start`. */
static uint32_t enclosing_thread(const ct_reader *r, const nv_call *c, size_t n, uint32_t process,
                                 int64_t start, int64_t end)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (c[mid].start <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t found = 0;
    for (size_t k = lo, steps = 0; k-- > 0 && steps < 64; steps++) {
        if (c[k].end < end || r->t->threads.v[c[k].thread].process != process)
            continue;
        if (found && found != c[k].thread)
            return 0;
        found = c[k].thread;
    }
    return found;
}

/* The profiler's own time, on the thread it names.  A row that names only the
 * process (CUPTI's instrumentation of each launch, for one) goes to the thread
 * whose API call encloses it, where it nests and splits the call's own time
 * from the profiler's.  Failing that it stays off every thread and, flagged
 * async, out of the tree: it overlaps some thread's time that it cannot be
 * subtracted from, so it has no self time. */
static tr_status read_overhead(ct_reader *r, const ct_table *table, tr_error *err)
{
    const char *tab = table->name;
    nv_call *calls = NULL;
    size_t ncalls = 0;
    static const tr_col cols[] = {{"overheadKind", 0}, {"objectKind", 1}, {"objectId", 1},
                                  {"start", 1}, {"end", 1}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 5, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    ct_bad bad = {tab, 0, 0};
    int rc;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        int64_t start, end;
        if (!ct_interval(&bad, st, 3, 4, &start, &end))
            continue;
        if (start == 0 && end == 0) {   /* CUPTI's "no timestamp could be collected" */
            bad.no_time++;
            continue;
        }
        tr_event *e = tr_add_event(r->t, TR_KIND_OVERHEAD);
        if (!e) {
            sqlite3_finalize(st);
            tr_spill_free(calls);
            return ct_oom(r, err);
        }
        e->name = overhead_name(r, tr_col_i64(st, 0, 0));
        e->start = start;
        e->end = end;
        int64_t pid, tid;
        object_pid_tid(st, 1, 2, &pid, &tid);
        int object = sqlite3_column_int(st, 1);
        if (object == 2) {
            e->thread = ct_thread(r, pid, tid);
        } else if (object == 1) {
            if (!calls && !(calls = collect_calls(r, &ncalls))) {
                sqlite3_finalize(st);
                return ct_oom(r, err);
            }
            e->thread = enclosing_thread(r, calls, ncalls, tr_process_get(r->t, r->source, pid),
                                         start, end);
        }
        if (!e->thread)
            e->flags |= TR_FLAG_ASYNC;
        ct_note_ts(r, e->end);
    }
    sqlite3_finalize(st);
    tr_spill_free(calls);
    ct_report_bad(r, &bad);
    return rc < 0 ? err->status : TR_OK;
}

/* NVTX: flags 1 = instantaneous mark, 2 = range start, 4 = range end (name 0). */
/* The NVTX ranges open while the markers are read: marker id -> event index. */
typedef struct {
    tr_i64map open;
    size_t orphan_ends, restarted;
} marker_state;

/* A range's end: closes the range its id opened, if one is open and began before. */
static void end_marker(ct_reader *r, marker_state *m, ct_bad *bad, int64_t id, int64_t ts, uint32_t thread)
{
    int64_t idx;
    if (!tr_i64map_get(&m->open, id, &idx)) {
        m->orphan_ends++;
        return;
    }
    tr_event *e = &r->t->events.v[idx];
    if (ts < e->start) {
        bad->bad_span++;   /* the range stays open: closed at the last timestamp */
        return;
    }
    tr_i64map_del(&m->open, id);
    e->end = ts;
    if (e->thread != thread)
        e->flags |= TR_FLAG_ASYNC;
}

/* A mark (flags 1) or a range's start (flags 2), named by its text or what an
 * emit_nvtx annotation in it says.  0, or -1 out of memory. */
static int start_marker(ct_reader *r, marker_state *m, int64_t flags, int64_t id, int64_t ts, uint32_t thread,
                        const tr_sql_cell *name)
{
    tr_event *e = tr_add_event(r->t, (flags & 2) ? TR_KIND_RANGE : TR_KIND_MARK);
    if (!e)
        return -1;
    e->start = e->end = ts;
    e->thread = thread;
    uint32_t raw = or_empty(r, ct_cell_string(r, name));
    if (ct_nvtx_name(r, e, raw, 1) < 0)
        return -1;
    if (!(flags & 2))
        return 0;
    int64_t prev;
    if (tr_i64map_get(&m->open, id, &prev))
        m->restarted++;
    return tr_i64map_put(&m->open, id, (int64_t)(e - r->t->events.v)) < 0 ? -1 : 0;
}

/* Ranges never ended are closed at the last timestamp; then the warnings. */
static void finish_markers(ct_reader *r, marker_state *m, ct_bad *bad)
{
    size_t unterminated = m->open.n;
    for (size_t i = 0; i < m->open.cap; i++) {
        if (!m->open.slots[i].used)
            continue;
        tr_event *e = &r->t->events.v[m->open.slots[i].val];
        e->end = r->max_ts > e->start ? r->max_ts : e->start;
        e->flags |= TR_FLAG_UNTERMINATED;
    }
    ct_report_bad(r, bad);
    if (unterminated)
        tr_ingest_warn(r->o, "%s: %zu NVTX range(s) never ended; closed at the last timestamp",
                       r->in.path, unterminated);
    if (m->orphan_ends)
        tr_ingest_warn(r->o, "%s: %zu NVTX range end(s) without a start ignored", r->in.path,
                       m->orphan_ends);
    if (m->restarted)
        tr_ingest_warn(r->o, "%s: %zu NVTX range id(s) started twice", r->in.path, m->restarted);
}

static tr_status read_markers(ct_reader *r, const ct_table *table, tr_error *err)
{
    const char *tab = table->name;
    static const tr_col cols[] = {{"flags", 1}, {"timestamp", 1}, {"id", 1},
                                  {"objectKind", 1}, {"objectId", 1}, {"name", 1}};
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 6, " ORDER BY _id_", &st, err);
    if (s != TR_OK || !st)
        return s;
    /* read ahead on a second thread (lib/sql_ahead.h), objectId's bytes with them */
    tr_sql_ahead *ahead;
    if ((s = tr_sql_read_ahead(&ahead, &r->in, st, tab, 6, "iiiibi", err)) != TR_OK) {
        sqlite3_finalize(st);
        return s;
    }
    marker_state m = {.orphan_ends = 0};
    tr_i64map_init(&m.open);
    ct_bad bad = {tab, 0, 0};
    int rc, oom = 0;
    const tr_sql_cell *c;
    while (!oom && (c = tr_sql_ahead_next(ahead, &rc, err)) != NULL) {
        int64_t flags = c[0].i, ts = c[1].i, id = c[2].i;
        if (c[1].type != SQLITE_INTEGER) {
            bad.no_time++;
            continue;
        }
        if (!ct_time_ok(ts)) {
            bad.bad_span++;
            continue;
        }
        int64_t pid, tid;
        pid_tid_of((int)c[3].i, (const unsigned char *)c[4].p, c[4].len, &pid, &tid);
        uint32_t thread = ct_thread(r, pid, tid);
        ct_note_ts(r, ts);
        if (flags & 4)
            end_marker(r, &m, &bad, id, ts, thread);
        else if (flags & 3)   /* sync acquire/release markers carry no range */
            oom = start_marker(r, &m, flags, id, ts, thread, &c[5]) < 0;
    }
    tr_sql_ahead_stop(ahead);
    sqlite3_finalize(st);
    if (oom) {
        tr_i64map_free(&m.open);
        return ct_oom(r, err);
    }
    if (rc < 0) {
        tr_i64map_free(&m.open);
        return err->status;
    }
    finish_markers(r, &m, &bad);
    tr_i64map_free(&m.open);
    return TR_OK;
}

/* The tables read, in order: the shared families by their columns, nvprof's own by
 * its loops.  Markers come last: unterminated ranges close at the last timestamp of
 * anything. */
static const ct_col string_cols[] = {{CT_ID, "_id_", 1}, {CT_TEXT, "value", 1}};
static const ct_col device_cols[] = {
    {CT_DEVICE, "id", 1}, {CT_NAME, "name", 0}, {CT_CC_MAJOR, "computeCapabilityMajor", 0},
    {CT_CC_MINOR, "computeCapabilityMinor", 0}, {CT_MEMORY, "globalMemorySize", 0},
    {CT_SM_COUNT, "numMultiprocessors", 0}};
static const ct_col api_cols[] = {
    {CT_CBID, "cbid", 1}, {CT_START, "start", 1}, {CT_END, "end", 1}, {CT_PID, "processId", 0},
    {CT_TID, "threadId", 0}, {CT_CORRELATION, "correlationId", 0}, {CT_RETURN, "returnValue", 0}};
static const ct_col kernel_cols[] = {
    {CT_START, "start", 1}, {CT_END, "end", 1}, {CT_DEVICE, "deviceId", 0},
    {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 0}, {CT_CORRELATION, "correlationId", 0},
    {CT_MANGLED, "name", 1}, {CT_GRID_X, "gridX", 0}, {CT_GRID_Y, "gridY", 0},
    {CT_GRID_Z, "gridZ", 0}, {CT_BLOCK_X, "blockX", 0}, {CT_BLOCK_Y, "blockY", 0},
    {CT_BLOCK_Z, "blockZ", 0}, {CT_REGISTERS, "registersPerThread", 0},
    {CT_STATIC_SMEM, "staticSharedMemory", 0}, {CT_DYNAMIC_SMEM, "dynamicSharedMemory", 0}};
static const ct_col memcpy_cols[] = {
    {CT_COPY_KIND, "copyKind", 1}, {CT_SRC_KIND, "srcKind", 0}, {CT_DST_KIND, "dstKind", 0},
    {CT_BYTES, "bytes", 1}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_DEVICE, "deviceId", 0}, {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 0},
    {CT_CORRELATION, "correlationId", 0}};
static const ct_col memset_cols[] = {
    {CT_VALUE, "value", 0}, {CT_BYTES, "bytes", 1}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_DEVICE, "deviceId", 0}, {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 0},
    {CT_CORRELATION, "correlationId", 0}};
/* no deviceId: the device is the context's (CONTEXT table) */
static const ct_col sync_cols[] = {
    {CT_SYNC_TYPE, "type", 0}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_CORRELATION, "correlationId", 0}, {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 0}};

/* The OpenACC tables differ in the one string that tells their events apart (OTHER has
 * none) and in bytes, which only data events move. */
#define ACC_COLS {CT_EVENT_KIND, "eventKind", 1}, {CT_CONSTRUCT, "parentConstruct", 0}, \
    {CT_START, "start", 1}, {CT_END, "end", 1}, {CT_PID, "cuProcessId", 0}, \
    {CT_TID, "cuThreadId", 0}, {CT_HOST_TID, "threadId", 0}, {CT_SRC_FILE, "srcFile", 0}, \
    {CT_LINE, "lineNo", 0}
static const ct_col acc_data_cols[] = {ACC_COLS, {CT_DETAIL, "varName", 0}, {CT_BYTES, "bytes", 0}};
static const ct_col acc_launch_cols[] = {ACC_COLS, {CT_DETAIL, "kernelName", 0}};
static const ct_col acc_other_cols[] = {ACC_COLS};

#define BY_ID " ORDER BY _id_"
static const ct_table nv_tables[] = {
    {"Version", NULL, 0, NULL, 0, NULL},
    {"StringTable", ct_read_strings, 0, CT_COLS(string_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_DEVICE", ct_read_devices, 0, CT_COLS(device_cols), " ORDER BY id"},
    {"CUPTI_ACTIVITY_KIND_CONTEXT", read_contexts, 0, NULL, 0, NULL},
    {"CUPTI_ACTIVITY_KIND_NAME", read_names, 0, NULL, 0, NULL},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", ct_read_api, TR_KIND_RUNTIME, CT_COLS(api_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_DRIVER", ct_read_api, TR_KIND_DRIVER, CT_COLS(api_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL", ct_read_kernels, TR_KIND_KERNEL, CT_COLS(kernel_cols),
     BY_ID},
    {"CUPTI_ACTIVITY_KIND_KERNEL", ct_read_kernels, TR_KIND_KERNEL, CT_COLS(kernel_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", ct_read_memcpy, TR_KIND_MEMCPY, CT_COLS(memcpy_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_MEMCPY2", ct_read_memcpy, TR_KIND_MEMCPY, CT_COLS(memcpy_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_MEMSET", ct_read_memset, TR_KIND_MEMSET, CT_COLS(memset_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", ct_read_sync, TR_KIND_SYNC, CT_COLS(sync_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_CUDA_EVENT", read_cuda_events, 0, NULL, 0, NULL},   /* after the API calls */
    {"CUPTI_ACTIVITY_KIND_OPENACC_DATA", read_openacc, TR_KIND_OPENACC_DATA, CT_COLS(acc_data_cols),
     BY_ID},
    {"CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH", read_openacc, TR_KIND_OPENACC_LAUNCH,
     CT_COLS(acc_launch_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_OPENACC_OTHER", read_openacc, TR_KIND_OPENACC_OTHER,
     CT_COLS(acc_other_cols), BY_ID},
    {"CUPTI_ACTIVITY_KIND_OVERHEAD", read_overhead, 0, NULL, 0, NULL},
    {"CUPTI_ACTIVITY_KIND_MARKER", read_markers, 0, NULL, 0, NULL},
};

static int table_is_read(const char *name)
{
    for (size_t i = 0; i < sizeof nv_tables / sizeof nv_tables[0]; i++)
        if (strcmp(nv_tables[i].name, name) == 0)
            return 1;
    return strncmp(name, "sqlite_", 7) == 0;   /* SQLite's own */
}

/* Nothing is dropped without a word: one warning names every other table that has
 * rows (CUPTI_ACTIVITY_KIND_ left off the names) with its row count. */
static tr_status report_unread(ct_reader *r, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(r->in.db, "SELECT name FROM sqlite_master WHERE type='table' ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "Cannot read " WHAT ": path=\"%s\": %s", r->in.path,
                       sqlite3_errmsg(r->in.db));
    static const char prefix[] = "CUPTI_ACTIVITY_KIND_";
    char list[800];
    size_t len = 0, ntables = 0, left_off = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        if (!name || table_is_read(name))
            continue;
        char *sql = sqlite3_mprintf("SELECT count(*) FROM \"%w\"", name);
        if (!sql) {
            sqlite3_finalize(st);
            return ct_oom(r, err);
        }
        int64_t rows = tr_sql_int(&r->in, sql, -1);
        sqlite3_free(sql);
        if (rows == 0)
            continue;
        ntables++;
        const char *shown = strncmp(name, prefix, sizeof prefix - 1) == 0 ? name + sizeof prefix - 1 : name;
        char item[160];
        if (rows < 0)
            snprintf(item, sizeof item, "%s%.100s (unreadable)", len ? ", " : "", shown);
        else
            snprintf(item, sizeof item, "%s%.100s %lld", len ? ", " : "", shown, (long long)rows);
        if (len + strlen(item) < sizeof list - 32) {
            memcpy(list + len, item, strlen(item) + 1);
            len += strlen(item);
        } else {
            left_off++;
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return tr_fail(err, TR_ERR_INPUT, "Cannot read " WHAT ": path=\"%s\": %s", r->in.path,
                       sqlite3_errmsg(r->in.db));
    if (left_off)
        snprintf(list + len, sizeof list - len, ", and %zu more", left_off);
    if (ntables)
        tr_ingest_warn(r->o, "%s: %zu table(s) not read (rows): %s", r->in.path, ntables, list);
    return TR_OK;
}

static void nv_version(ct_reader *r, char *buf, size_t size)
{
    snprintf(buf, size, "%lld", (long long)tr_sql_int(&r->in, "SELECT max(version) FROM Version", -1));
}

static const ct_format nvprof_format = {
    .what = WHAT,
    .format = "nvprof",
    .strings = "StringTable",
    .not_this = "an nvprof export",
    .memory_kinds = &tr_memory_kinds,
    .flags = CT_CHECK_TIMES | CT_ZERO_ID_NULL | CT_KERNEL_ID,
    .tables = nv_tables,
    .ntables = sizeof nv_tables / sizeof nv_tables[0],
    .version = nv_version,
    .finish = report_unread,
};

tr_status tr_nvprof_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err)
{
    return ct_read_file(t, path, o, &nvprof_format, err);
}
