/*
 * nsys.c - reader for Nsight Systems SQLite exports (export schema 2.9 .. 3.24).
 *
 * What is read: NVTX_EVENTS (push/pop and start/end ranges, marks; text inline
 * or through textId), CUDA kernels, runtime and driver API calls, memcpy,
 * memset and synchronisation activities, thread names (ThreadNames), process
 * names (PROCESSES when present) and GPUs (TARGET_INFO_GPU).  Columns are
 * looked up by name (ingest/sql_input.h), so extra or missing optional
 * columns are tolerated.  Timestamps are nsys's integer nanoseconds (relative
 * to the session start) and are kept as such.
 *
 * The CUPTI tables are nvprof's under nsys's column names: rows of ns_tables
 * below, read by the loops of cupti_tables.c; NVTX_EVENTS and the names are
 * read here.
 *
 * globalTid / globalPid pack the ids: pid = (g >> 24) & 0xFFFFFF,
 * tid = g & 0xFFFFFF.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/readers/cupti_tables.h"
#include "lib/spill.h"

#define WHAT "nsys export"

/* ENUM_NSYS_EVENT_TYPE */
enum { NSYS_NVTX_MARK = 34, NSYS_NVTX_PUSHPOP = 59, NSYS_NVTX_STARTEND = 60 };

int tr_nsys_probe(const char *path, const unsigned char *head, size_t headlen)
{
    tr_sql_input in;
    if (!ct_probe_open(&in, path, head, headlen, WHAT))
        return 0;
    int yes = tr_sql_has_table(&in, "StringIds")
              && (tr_sql_has_table(&in, "NVTX_EVENTS")
                  || tr_sql_has_table(&in, "CUPTI_ACTIVITY_KIND_KERNEL")
                  || tr_sql_has_table(&in, "CUPTI_ACTIVITY_KIND_RUNTIME"));
    tr_sql_close(&in);
    return yes;
}

static int64_t g_pid(int64_t g) { return (g >> 24) & 0xFFFFFF; }
static int64_t g_tid(int64_t g) { return g & 0xFFFFFF; }

/* Names go only to processes and threads that carry events. */
static tr_status read_names(ct_reader *r, const ct_table *table, tr_error *err)
{
    static const tr_col cols[] = {{"nameId", 1}, {"globalTid", 1}};
    const char *tab = table->name;
    sqlite3_stmt *st;
    tr_status s = tr_sql_select(&r->in, tab, cols, 2, NULL, &st, err);
    if (s != TR_OK)
        return s;
    tr_trace *t = r->t;
    int rc;
    tr_i64map th;   /* (pid << 24 | tid) -> thread index, for this source */
    tr_i64map_init(&th);
    for (size_t i = 1; i < t->threads.n; i++) {
        const tr_process *p = &t->processes.v[t->threads.v[i].process];
        if (p->source == r->source
            && tr_i64map_put(&th, (p->pid << 24) | (t->threads.v[i].tid & 0xFFFFFF), (int64_t)i) < 0) {
            sqlite3_finalize(st);
            tr_i64map_free(&th);
            return ct_oom(r, err);
        }
    }
    if (st) {
        while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
            int64_t g = sqlite3_column_int64(st, 1), idx;
            if (tr_i64map_get(&th, (g_pid(g) << 24) | g_tid(g), &idx))
                t->threads.v[idx].name = ct_string(r, st, 0);
        }
        sqlite3_finalize(st);
        if (rc < 0) {
            tr_i64map_free(&th);
            return err->status;
        }
    }
    tr_i64map_free(&th);

    static const tr_col pcols[] = {{"pid", 0}, {"name", 0}};
    tab = "PROCESSES";
    if ((s = tr_sql_select(&r->in, tab, pcols, 2, NULL, &st, err)) != TR_OK || !st)
        return s;
    while ((rc = tr_sql_next(&r->in, st, tab, err)) == 1) {
        if (sqlite3_column_type(st, 0) == SQLITE_NULL)
            continue;
        int64_t pid = sqlite3_column_int64(st, 0);
        const char *n = (const char *)sqlite3_column_text(st, 1);
        if (!n || !*n)
            continue;
        for (size_t p = 1; p < t->processes.n; p++)
            if (t->processes.v[p].source == r->source && t->processes.v[p].pid == pid)
                t->processes.v[p].name = tr_str(t, n);
    }
    sqlite3_finalize(st);
    return rc < 0 ? err->status : TR_OK;
}

/* One NVTX_EVENTS row: a mark or a range; the naming rows are skipped.
 * c: start, end, eventType, text, textId, globalTid, endGlobalTid. */
static tr_status add_nvtx_event(ct_reader *r, const tr_sql_cell *c, size_t *unterminated, ct_bad *bad,
                                tr_error *err)
{
    int64_t type = c[2].i;
    if (type != NSYS_NVTX_MARK && type != NSYS_NVTX_PUSHPOP && type != NSYS_NVTX_STARTEND)
        return TR_OK;   /* domain/category/thread naming rows carry no time span */
    /* times as the activity tables' are checked; a mark, or a range whose end was
     * never recorded, has its start checked alone */
    int has_end = type != NSYS_NVTX_MARK && c[1].type != SQLITE_NULL;
    const tr_sql_cell *end = has_end ? &c[1] : &c[0];
    int64_t start, stop;
    if (!ct_interval_of(bad, c[0].type, c[0].i, end->type, end->i, &start, &stop))
        return TR_OK;
    tr_event *e = tr_add_event(r->t, type == NSYS_NVTX_MARK ? TR_KIND_MARK : TR_KIND_RANGE);
    if (!e)
        return ct_oom(r, err);
    e->start = c[0].i;
    if (type == NSYS_NVTX_MARK) {
        e->end = e->start;
    } else if (c[1].type == SQLITE_NULL) {
        e->end = -1;   /* closed at the end of the read */
        (*unterminated)++;
    } else {
        e->end = c[1].i;
    }
    int64_t gtid = tr_cell_i64(&c[5], 0);
    e->thread = ct_thread(r, g_pid(gtid), g_tid(gtid));
    if (c[6].type != SQLITE_NULL && c[6].i != gtid)
        e->flags |= TR_FLAG_ASYNC;
    uint32_t raw;
    if (c[3].type != SQLITE_NULL)
        raw = tr_intern_add(&r->t->strings, c[3].p ? c[3].p : "", c[3].p ? (size_t)c[3].len : 0);
    else
        raw = ct_cell_string(r, &c[4]);
    if (!raw)
        raw = tr_str(r->t, "");
    if (ct_nvtx_name(r, e, raw, type != NSYS_NVTX_MARK) < 0)
        return ct_oom(r, err);
    ct_note_ts(r, e->end > e->start ? e->end : e->start);
    return TR_OK;
}

/* How many rows ahead of the one being added a text's slot is asked for. */
#define NVTX_FETCH_AHEAD 8

/* NVTX_EVENTS, read ahead on a second thread (lib/sql_ahead.h) like the
 * activity tables: on an export of PyTorch's emit_nvtx ranges, stepping it
 * on the reading thread made that thread the busy one (docs/ingest.md). */
static tr_status read_nvtx(ct_reader *r, const ct_table *table, tr_error *err)
{
    static const tr_col cols[] = {{"start", 1}, {"end", 0}, {"eventType", 1}, {"text", 0},
                                  {"textId", 0}, {"globalTid", 0}, {"endGlobalTid", 0}};
    const char *tab = table->name;
    sqlite3_stmt *st;
    char tail[128];
    tr_status s = tr_sql_select(&r->in, tab, cols, 7, tr_sql_order_by(&r->in, tab, "start", tail, sizeof tail),
                                &st, err);
    if (s != TR_OK || !st)
        return s;
    tr_sql_ahead *ahead;
    if ((s = tr_sql_read_ahead(&ahead, &r->in, st, tab, 7, "iiitiii", err)) != TR_OK) {
        sqlite3_finalize(st);
        return s;
    }
    size_t unterminated = 0;
    ct_bad bad = {tab, 0, 0};
    const tr_sql_cell *c;
    int rc = 0;
    while (s == TR_OK && (c = tr_sql_ahead_next(ahead, &rc, err)) != NULL) {
        /* an export of PyTorch's emit_nvtx ranges has a new text a range: its
         * slot in the string table asked for a few rows ahead of its add */
        const tr_sql_cell *soon = tr_sql_ahead_peek(ahead, NVTX_FETCH_AHEAD);
        if (soon && soon[3].p)
            tr_intern_prefetch(&r->t->strings, soon[3].p, (size_t)soon[3].len);
        s = add_nvtx_event(r, c, &unterminated, &bad, err);
    }
    tr_sql_ahead_stop(ahead);
    sqlite3_finalize(st);
    if (s != TR_OK)
        return s;
    if (rc < 0)
        return err->status;
    ct_report_bad(r, &bad);
    if (unterminated) {
        for (size_t i = 0; i < r->t->events.n; i++) {
            tr_spill_tick();
            tr_event *e = &r->t->events.v[i];
            if (e->end == -1 && (e->kind == TR_KIND_RANGE || e->kind == TR_KIND_OP)
                && i >= r->first_event) {
                e->end = r->max_ts > e->start ? r->max_ts : e->start;
                e->flags |= TR_FLAG_UNTERMINATED;
            }
        }
        tr_ingest_warn(r->o, "%s: %zu NVTX range(s) never ended; closed at the last timestamp",
                       r->in.path, unterminated);
    }
    return TR_OK;
}

/* ENUM_CUDA_MEM_KIND: nsys numbers memory kinds from Pageable = 0, unlike CUPTI. */
static const char *const nsys_memory_kind_names[] = {"Pageable", "Pinned", "Device", "Array", "Managed",
                                                     "DeviceStatic", "ManagedStatic", "Unknown"};
static const tr_enum_names nsys_memory_kinds = {nsys_memory_kind_names, 8};

static const ct_col string_cols[] = {{CT_ID, "id", 1}, {CT_TEXT, "value", 1}};
/* id is nsys's own; cuDevice, where present, is the CUDA ordinal the activities name */
static const ct_col gpu_cols[] = {
    {CT_ID, "id", 1}, {CT_DEVICE, "cuDevice", 0}, {CT_TEXT, "name", 0}, {CT_MEMORY, "totalMemory", 0},
    {CT_SM_COUNT, "smCount", 0}, {CT_CC_MAJOR, "computeMajor", 0}, {CT_CC_MINOR, "computeMinor", 0}};
/* no callback id: named by nameId, without API detail */
static const ct_col api_cols[] = {
    {CT_START, "start", 1}, {CT_END, "end", 1}, {CT_GTID, "globalTid", 1},
    {CT_CORRELATION, "correlationId", 1}, {CT_NAME, "nameId", 1}};
static const ct_col kernel_cols[] = {
    {CT_START, "start", 1}, {CT_END, "end", 1}, {CT_DEVICE, "deviceId", 1},
    {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 1}, {CT_CORRELATION, "correlationId", 0},
    {CT_DEMANGLED, "demangledName", 0}, {CT_SHORT, "shortName", 0}, {CT_MANGLED, "mangledName", 0},
    {CT_GRID_X, "gridX", 0}, {CT_GRID_Y, "gridY", 0}, {CT_GRID_Z, "gridZ", 0},
    {CT_BLOCK_X, "blockX", 0}, {CT_BLOCK_Y, "blockY", 0}, {CT_BLOCK_Z, "blockZ", 0},
    {CT_REGISTERS, "registersPerThread", 0}, {CT_STATIC_SMEM, "staticSharedMemory", 0},
    {CT_DYNAMIC_SMEM, "dynamicSharedMemory", 0}};
static const ct_col memcpy_cols[] = {
    {CT_COPY_KIND, "copyKind", 1}, {CT_SRC_KIND, "srcKind", 0}, {CT_DST_KIND, "dstKind", 0},
    {CT_BYTES, "bytes", 1}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_DEVICE, "deviceId", 1}, {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 1},
    {CT_CORRELATION, "correlationId", 0}};
static const ct_col memset_cols[] = {
    {CT_VALUE, "value", 0}, {CT_BYTES, "bytes", 1}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_DEVICE, "deviceId", 1}, {CT_CONTEXT, "contextId", 0}, {CT_STREAM, "streamId", 1},
    {CT_CORRELATION, "correlationId", 0}};
static const ct_col sync_cols[] = {
    {CT_SYNC_TYPE, "syncType", 0}, {CT_START, "start", 1}, {CT_END, "end", 1},
    {CT_CORRELATION, "correlationId", 0}, {CT_DEVICE, "deviceId", 0}, {CT_CONTEXT, "contextId", 0},
    {CT_STREAM, "streamId", 0}};

/* The tables read, in order.  Names come last: they go only to processes and
 * threads that carry events. */
#define BY_START NULL, "start"
static const ct_table ns_tables[] = {
    {"StringIds", ct_read_strings, 0, CT_COLS(string_cols), NULL},
    {"TARGET_INFO_GPU", ct_read_devices, 0, CT_COLS(gpu_cols), NULL},
    {"CUPTI_ACTIVITY_KIND_RUNTIME", ct_read_api, TR_KIND_RUNTIME, CT_COLS(api_cols), BY_START},
    {"CUPTI_ACTIVITY_KIND_DRIVER", ct_read_api, TR_KIND_DRIVER, CT_COLS(api_cols), BY_START},
    {"CUPTI_ACTIVITY_KIND_KERNEL", ct_read_kernels, TR_KIND_KERNEL, CT_COLS(kernel_cols), BY_START},
    {"CUPTI_ACTIVITY_KIND_MEMCPY", ct_read_memcpy, TR_KIND_MEMCPY, CT_COLS(memcpy_cols), BY_START},
    {"CUPTI_ACTIVITY_KIND_MEMSET", ct_read_memset, TR_KIND_MEMSET, CT_COLS(memset_cols), BY_START},
    {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", ct_read_sync, TR_KIND_SYNC, CT_COLS(sync_cols), BY_START},
    {"NVTX_EVENTS", read_nvtx, 0, NULL, 0, NULL},
    {"ThreadNames", read_names, 0, NULL, 0, NULL},
};

/* "major.minor.micro" of the export schema, from whichever metadata table the export has. */
static void ns_version(ct_reader *r, char *buf, size_t size)
{
    const char *meta = tr_sql_has_table(&r->in, "META_DATA_EXPORT") ? "META_DATA_EXPORT"
                       : tr_sql_has_table(&r->in, "EXPORT_META_DATA") ? "EXPORT_META_DATA"
                                                                     : NULL;
    if (meta) {
        char sql[160];
        sqlite3_stmt *st = NULL;
        snprintf(sql, sizeof sql, "SELECT value FROM %s WHERE name='EXPORT_SCHEMA_VERSION_MAJOR' "
                 "OR name='EXPORT_SCHEMA_VERSION_MINOR' OR name='EXPORT_SCHEMA_VERSION_MICRO'", meta);
        if (sqlite3_prepare_v2(r->in.db, sql, -1, &st, NULL) == SQLITE_OK) {
            while (sqlite3_step(st) == SQLITE_ROW) {
                const char *v = (const char *)sqlite3_column_text(st, 0);
                size_t n = strlen(buf);
                snprintf(buf + n, size - n, "%s%s", n ? "." : "", v ? v : "");
            }
        }
        sqlite3_finalize(st);
    }
}

static const ct_format nsys_format = {
    .what = WHAT,
    .format = "nsys",
    .strings = "StringIds",
    .not_this = "an Nsight Systems SQLite export",
    .memory_kinds = &nsys_memory_kinds,
    .flags = CT_CHECK_TIMES,
    .tables = ns_tables,
    .ntables = sizeof ns_tables / sizeof ns_tables[0],
    .version = ns_version,
    .finish = NULL,
};

tr_status tr_nsys_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err)
{
    return ct_read_file(t, path, o, &nsys_format, err);
}
