/* nvprof reader: hand-made databases for OpenACC, CUDA events, overhead rows,
 * unusable times, missing launch fields and the tables left unread. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "ingest/ingest.h"
#include "lib/model.h"
#include "lib/rundb.h"
#include "lib/tree.h"
#include "tests/unit/unit.h"

static int make_db(const char *path, const char *sql)
{
    sqlite3 *db;
    remove(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    if (rc != SQLITE_OK)
        fprintf(stderr, "\n  fixture: %s\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tr_unit_tmpdir(), name);
    return buf;
}

typedef struct {
    char all[4096];
    int n;
} warnings;

static void collect(void *ctx, const char *msg)
{
    warnings *w = ctx;
    size_t len = strlen(w->all);
    snprintf(w->all + len, sizeof w->all - len, "%s\n", msg);
    w->n++;
}

/* The tables every fixture has: pid 100, tid 7, device 0 in context 1. */
#define BASE                                                                                       \
    "create table Version(version integer); insert into Version values (12);"                     \
    "create table StringTable(_id_ integer primary key, value text);"                             \
    "insert into StringTable values (0, '-- null --'), (1, 'jacobi.c'), (2, 'main'),"             \
    " (3, 'main_59_gpu'), (4, 'A'), (5, '_Z3fooi');"                                               \
    "create table CUPTI_ACTIVITY_KIND_CONTEXT(contextId integer, deviceId integer);"              \
    "insert into CUPTI_ACTIVITY_KIND_CONTEXT values (1, 0);"                                       \
    "create table CUPTI_ACTIVITY_KIND_RUNTIME(_id_ integer primary key, cbid integer,"            \
    " start integer, end integer, processId integer, threadId integer, correlationId integer,"    \
    " returnValue integer);"

/* The OpenACC tables as nvprof creates them (Version 12). */
#define ACC_COMMON                                                                                 \
    "_id_ INTEGER PRIMARY KEY AUTOINCREMENT, eventKind INT NOT NULL, parentConstruct INT NOT NULL," \
    " version INT NOT NULL, implicit INT NOT NULL, deviceType INT NOT NULL,"                       \
    " deviceNumber INT NOT NULL, threadId INT NOT NULL, async INT NOT NULL, asyncMap INT NOT NULL," \
    " lineNo INT NOT NULL, endLineNo INT NOT NULL, funcLineNo INT NOT NULL,"                       \
    " funcEndLineNo INT NOT NULL, start INT NOT NULL, end INT NOT NULL, cuDeviceId INT NOT NULL,"  \
    " cuContextId INT NOT NULL, cuStreamId INT NOT NULL, cuProcessId INT NOT NULL,"                \
    " cuThreadId INT NOT NULL, externalId INT NOT NULL, srcFile INT NOT NULL, funcName INT NOT NULL"

static const tr_event *find(const tr_trace *t, int kind, const char *name)
{
    for (size_t i = 0; i < t->events.n; i++)
        if (t->events.v[i].kind == kind && (!name || !strcmp(tr_str_of(t, t->events.v[i].name), name)))
            return &t->events.v[i];
    return NULL;
}

static size_t count(const tr_trace *t, int kind)
{
    size_t n = 0;
    for (size_t i = 0; i < t->events.n; i++)
        n += t->events.v[i].kind == kind;
    return n;
}

static void test_openacc(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nvprof-acc.nvvp");
    const char *sql = BASE
        "create table CUPTI_ACTIVITY_KIND_OPENACC_DATA(" ACC_COMMON ", bytes INT NOT NULL,"
        " hostPtr INT NOT NULL, devicePtr INT NOT NULL, varName INT NOT NULL);"
        "create table CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH(" ACC_COMMON ", numGangs INT NOT NULL,"
        " numWorkers INT NOT NULL, vectorLength INT NOT NULL, kernelName INT NOT NULL);"
        "create table CUPTI_ACTIVITY_KIND_OPENACC_OTHER(" ACC_COMMON ");"
        "create table CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ integer primary key, start integer,"
        " end integer, deviceId integer, contextId integer, streamId integer, correlationId integer,"
        " name integer);"
        /* compute construct [100, 1000) holding a launch [200, 500) holding cudaLaunchKernel */
        "insert into CUPTI_ACTIVITY_KIND_OPENACC_OTHER(eventKind, parentConstruct, version, implicit,"
        " deviceType, deviceNumber, threadId, async, asyncMap, lineNo, endLineNo, funcLineNo,"
        " funcEndLineNo, start, end, cuDeviceId, cuContextId, cuStreamId, cuProcessId, cuThreadId,"
        " externalId, srcFile, funcName) values (9, 1, 0, 0, 4, 0, 7, 0, 0, 59, 70, 40, 90, 100,"
        " 1000, 0, 1, 13, 100, 7, 1, 1, 2);"
        "insert into CUPTI_ACTIVITY_KIND_OPENACC_LAUNCH(eventKind, parentConstruct, version, implicit,"
        " deviceType, deviceNumber, threadId, async, asyncMap, lineNo, endLineNo, funcLineNo,"
        " funcEndLineNo, start, end, cuDeviceId, cuContextId, cuStreamId, cuProcessId, cuThreadId,"
        " externalId, srcFile, funcName, numGangs, numWorkers, vectorLength, kernelName)"
        " values (4, 1, 0, 0, 4, 0, 7, 0, 0, 59, 70, 40, 90, 200, 500, 0, 1, 13, 100, 7, 2, 1, 2,"
        " 64, 1, 128, 3);"
        /* an upload of A, 4096 bytes; then an event of a kind this reader has no name for,
         * no source file, and on OpenACC's own thread id only */
        "insert into CUPTI_ACTIVITY_KIND_OPENACC_DATA(eventKind, parentConstruct, version, implicit,"
        " deviceType, deviceNumber, threadId, async, asyncMap, lineNo, endLineNo, funcLineNo,"
        " funcEndLineNo, start, end, cuDeviceId, cuContextId, cuStreamId, cuProcessId, cuThreadId,"
        " externalId, srcFile, funcName, bytes, hostPtr, devicePtr, varName)"
        " values (5, 4, 0, 0, 4, 0, 7, 0, 0, 55, 0, 40, 90, 1100, 1200, 0, 1, 13, 100, 7, 3, 1, 2,"
        " 4096, 0, 0, 4),"
        " (99, 0, 0, 0, 4, 0, 7, 0, 0, 0, 0, 0, 0, 1300, 1400, 0, 1, 13, 100, 0, 4, 0, 0, 0, 0, 0, 0);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 211, 300, 400, 100, 7, 77, 0);"
        "insert into CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL values (1, 450, 950, 0, 1, 13, 77, 3);";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    tr_trace t;
    tr_error err;
    warnings w = {{0}, 0};
    tr_ingest_opts o = {collect, &w, NULL};
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nvprof_read(&t, path, &o, &err), TR_OK);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_OPENACC_OTHER), 1);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_OPENACC_LAUNCH), 1);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_OPENACC_DATA), 2);
    const tr_event *cc = find(&t, TR_KIND_OPENACC_OTHER, "acc_compute_construct@jacobi.c:59 [parallel]");
    const tr_event *launch = find(&t, TR_KIND_OPENACC_LAUNCH, "acc_enqueue_launch@jacobi.c:59 (main_59_gpu) [parallel]");
    const tr_event *up = find(&t, TR_KIND_OPENACC_DATA, "acc_enqueue_upload@jacobi.c:55 (A) [data]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(cc);
    CU_ASSERT_PTR_NOT_NULL_FATAL(launch);
    CU_ASSERT_PTR_NOT_NULL_FATAL(up);
    CU_ASSERT_PTR_NOT_NULL(find(&t, TR_KIND_OPENACC_DATA, "acc_event_99"));
    CU_ASSERT_EQUAL(tr_extra(&t, up).bytes, 4096);
    CU_ASSERT_EQUAL(tr_extra(&t, launch).bytes, 0);
    CU_ASSERT_EQUAL(cc->start, 100);
    CU_ASSERT_EQUAL(cc->end, 1000);
    /* the CUDA thread ids, as the API tables give them */
    const tr_event *api = find(&t, TR_KIND_RUNTIME, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(api);
    CU_ASSERT_EQUAL(launch->thread, api->thread);
    CU_ASSERT_EQUAL(t.threads.v[cc->thread].tid, 7);
    CU_ASSERT_EQUAL(t.processes.v[t.threads.v[cc->thread].process].pid, 100);
    CU_ASSERT_EQUAL(find(&t, TR_KIND_OPENACC_DATA, "acc_event_99")->thread, api->thread);
    CU_ASSERT_EQUAL(w.n, 0);
    /* the launch nests in the construct and takes the kernel's GPU time as a range does */
    CU_ASSERT_EQUAL_FATAL(tr_tree_build(&t, &err), TR_OK);
    size_t icc = (size_t)(cc - t.events.v), ilaunch = (size_t)(launch - t.events.v);
    CU_ASSERT_EQUAL(launch->parent, (int64_t)icc);
    CU_ASSERT_EQUAL(api->parent, (int64_t)ilaunch);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, launch), 500);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, cc), 0);
    CU_ASSERT_EQUAL(tr_gpu_total(&t, cc), 500);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, cc), 900 - 300);
    tr_trace_free(&t);
}

static void test_cuda_events_and_overhead(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nvprof-cev.nvvp");
    const char *sql = BASE
        "create table CUPTI_ACTIVITY_KIND_DRIVER(_id_ integer primary key, cbid integer,"
        " start integer, end integer, processId integer, threadId integer, correlationId integer,"
        " returnValue integer);"
        "create table CUPTI_ACTIVITY_KIND_CUDA_EVENT(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,"
        " correlationId INT NOT NULL, contextId INT NOT NULL, streamId INT NOT NULL, eventId INT NOT NULL);"
        "create table CUPTI_ACTIVITY_KIND_OVERHEAD(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,"
        " overheadKind INT NOT NULL, objectKind INT NOT NULL, objectId BLOB NOT NULL,"
        " start INT NOT NULL, end INT NOT NULL);"
        /* cudaEventRecord (cbid 135) as runtime and driver call; a second thread's call */
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 135, 1000, 1100, 100, 7, 5, 0),"
        " (2, 211, 2000, 3000, 100, 7, 6, 0), (3, 211, 4000, 5000, 100, 8, 9, 0),"
        " (4, 211, 4100, 4900, 100, 7, 10, 0);"
        "insert into CUPTI_ACTIVITY_KIND_DRIVER values (1, 300, 1010, 1090, 100, 7, 5, 0);"
        "insert into CUPTI_ACTIVITY_KIND_CUDA_EVENT(correlationId, contextId, streamId, eventId)"
        " values (5, 1, 13, 1), (42, 1, 13, 2);"
        /* on thread 7 (pid 100 = 0x64); on the process inside a call of thread 7 only;
         * on the process inside calls of two threads; no timestamps (0, 0); kind unknown */
        "insert into CUPTI_ACTIVITY_KIND_OVERHEAD(overheadKind, objectKind, objectId, start, end)"
        " values (196608, 2, x'640000000700000000000000', 2100, 2200),"
        " (131072, 1, x'640000000000000000000000', 2300, 2400),"
        " (131072, 1, x'640000000000000000000000', 4200, 4300),"
        " (65536, 2, x'640000000700000000000000', 0, 0),"
        " (12345, 2, x'640000000700000000000000', 6000, 6100);";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    tr_trace t;
    tr_error err;
    warnings w = {{0}, 0};
    tr_ingest_opts o = {collect, &w, NULL};
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nvprof_read(&t, path, &o, &err), TR_OK);
    /* CUDA events: at the start of the runtime call that recorded them, on their stream */
    CU_ASSERT_EQUAL(count(&t, TR_KIND_CUDA_EVENT), 1);
    const tr_event *ev = find(&t, TR_KIND_CUDA_EVENT, "[CUDA event]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(ev);
    CU_ASSERT_EQUAL(ev->start, 1000);
    CU_ASSERT_EQUAL(ev->end, 1000);
    CU_ASSERT_EQUAL(tr_correlation(&t, ev), 5);
    CU_ASSERT_EQUAL(ev->thread, 0);
    CU_ASSERT_EQUAL_FATAL(ev->stream != 0, 1);
    CU_ASSERT_EQUAL(t.streams.v[ev->stream].stream, 13);
    CU_ASSERT_EQUAL(t.streams.v[ev->stream].context, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "1 CUDA event(s) skipped: no API call"));
    /* overhead */
    CU_ASSERT_EQUAL(count(&t, TR_KIND_OVERHEAD), 4);
    const tr_event *res = find(&t, TR_KIND_OVERHEAD, "[overhead: CUPTI resource]");
    const tr_event *unk = find(&t, TR_KIND_OVERHEAD, "[overhead: kind 12345]");
    CU_ASSERT_PTR_NOT_NULL_FATAL(res);
    CU_ASSERT_PTR_NOT_NULL_FATAL(unk);
    const tr_event *call7 = find(&t, TR_KIND_RUNTIME, NULL);
    CU_ASSERT_EQUAL(res->thread, call7->thread);
    CU_ASSERT_EQUAL(res->flags & TR_FLAG_ASYNC, 0);
    int placed = 0, unplaced = 0;
    for (size_t i = 0; i < t.events.n; i++) {
        const tr_event *e = &t.events.v[i];
        if (e->kind != TR_KIND_OVERHEAD || strcmp(tr_str_of(&t, e->name), "[overhead: CUPTI instrumentation]"))
            continue;
        if (e->start == 2300) {
            placed++;
            CU_ASSERT_EQUAL(e->thread, call7->thread);   /* inside thread 7's call [2000, 3000) */
            CU_ASSERT_EQUAL(e->flags & TR_FLAG_ASYNC, 0);
        } else if (e->start == 4200) {
            unplaced++;   /* calls of threads 7 and 8 both enclose it */
            CU_ASSERT_EQUAL(e->thread, 0);
            CU_ASSERT_EQUAL(e->flags & TR_FLAG_ASYNC, TR_FLAG_ASYNC);
        }
    }
    CU_ASSERT_EQUAL(placed, 1);
    CU_ASSERT_EQUAL(unplaced, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_OVERHEAD: 1 row(s) without a start or end time skipped"));
    /* the placed row nests in the call and takes its time from the call's own */
    CU_ASSERT_EQUAL_FATAL(tr_tree_build(&t, &err), TR_OK);
    const tr_event *call = NULL;
    for (size_t i = 0; i < t.events.n; i++)
        if (t.events.v[i].kind == TR_KIND_RUNTIME && t.events.v[i].start == 2000)
            call = &t.events.v[i];
    CU_ASSERT_PTR_NOT_NULL_FATAL(call);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, call), 1000 - 100 - 100);
    CU_ASSERT_EQUAL(ev->parent, (int64_t)(call7 - t.events.v));
    tr_trace_free(&t);
}

static void test_bad_times(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nvprof-times.nvvp");
    const char *sql = BASE
        "create table CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ integer primary key, start integer,"
        " end integer, deviceId integer, contextId integer, streamId integer, correlationId integer,"
        " name integer);"
        "create table CUPTI_ACTIVITY_KIND_MEMCPY(_id_ integer primary key, copyKind integer,"
        " bytes integer, start integer, end integer, deviceId integer, contextId integer,"
        " streamId integer, correlationId integer);"
        "create table CUPTI_ACTIVITY_KIND_MARKER(_id_ integer primary key, flags integer,"
        " timestamp integer, id integer, objectKind integer, objectId blob, name integer);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 211, 100, 200, 100, 7, 1, 0),"
        " (2, 211, null, 300, 100, 7, 2, 0), (3, 211, 400, 350, 100, 7, 3, 0),"
        " (4, 211, 500, 'late', 100, 7, 4, 0);"
        /* a good kernel, one without a start, one without an end, one ending before it starts,
         * one whose duration overflows */
        "insert into CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL values (1, 150, 190, 0, 1, 13, 1, 5),"
        " (2, null, 1000, 0, 1, 13, 2, 5), (3, 1000, null, 0, 1, 13, 3, 5),"
        " (4, 2000, 1000, 0, 1, 13, 4, 5), (5, -9223372036854775807, 9223372036854775807, 0, 1, 13, 4, 5);"
        "insert into CUPTI_ACTIVITY_KIND_MEMCPY values (1, 1, 64, 700, 600, 0, 1, 13, 1);"
        /* a range whose end has no timestamp: closed at the last timestamp, flagged */
        "insert into CUPTI_ACTIVITY_KIND_MARKER values (1, 2, 100, 1, 2, x'6400000007000000', 4),"
        " (2, 4, null, 1, 2, x'6400000007000000', 0), (3, 1, null, 2, 2, x'6400000007000000', 4);";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    tr_trace t;
    tr_error err;
    warnings w = {{0}, 0};
    tr_ingest_opts o = {collect, &w, NULL};
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nvprof_read(&t, path, &o, &err), TR_OK);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_RUNTIME), 1);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_KERNEL), 1);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_MEMCPY), 0);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_MARK), 0);
    CU_ASSERT_EQUAL(count(&t, TR_KIND_RANGE), 1);
    int64_t ksum = 0;
    for (size_t i = 0; i < t.events.n; i++) {
        const tr_event *e = &t.events.v[i];
        CU_ASSERT(e->start > 0 && e->end >= e->start);
        if (e->kind == TR_KIND_KERNEL)
            ksum += e->end - e->start;
    }
    CU_ASSERT_EQUAL(ksum, 40);
    const tr_event *range = find(&t, TR_KIND_RANGE, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(range);
    CU_ASSERT_EQUAL(range->end, 200);   /* the last timestamp read */
    CU_ASSERT(range->flags & TR_FLAG_UNTERMINATED);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_RUNTIME: 2 row(s) without a start or end time skipped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_RUNTIME: 1 row(s) ending before they start"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: 2 row(s) without a start or end time skipped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: 2 row(s) ending before they start"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_MEMCPY: 1 row(s) ending before they start"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "table=CUPTI_ACTIVITY_KIND_MARKER: 2 row(s) without a start or end time skipped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "1 NVTX range(s) never ended"));
    tr_trace_free(&t);
}

/* A kernel table without launch columns, and one with NULLs in them: NULL in run.db. */
static void test_missing_launch_fields(void)
{
    char path[512], out[512];
    tmp_path(path, sizeof path, "nvprof-launch.nvvp");
    tmp_path(out, sizeof out, "nvprof-launch.db");
    const char *sql = BASE
        "create table CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ integer primary key, start integer,"
        " end integer, deviceId integer, contextId integer, streamId integer, correlationId integer,"
        " name integer);"
        "create table CUPTI_ACTIVITY_KIND_KERNEL(_id_ integer primary key, start integer,"
        " end integer, deviceId integer, contextId integer, streamId integer, correlationId integer,"
        " name integer, gridX integer, gridY integer, gridZ integer, blockX integer, blockY integer,"
        " blockZ integer, registersPerThread integer, staticSharedMemory integer,"
        " dynamicSharedMemory integer);"
        "insert into CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL values (1, 100, 200, 0, 1, 13, 1, 5);"
        "insert into CUPTI_ACTIVITY_KIND_KERNEL values (1, 300, 400, 0, 1, 13, 2, 5, 8, 1, 1,"
        " 256, 1, 1, null, 0, 1024);";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    const char *paths[] = {path};
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_ingest_files(paths, 1, out, NULL, NULL, &err), TR_OK);
    sqlite3 *db;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(out, &db), SQLITE_OK);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db,
        "SELECT e.start_ns, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, k.block_z,"
        " k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes"
        " FROM kernels k JOIN events e ON e.id = k.event_id ORDER BY e.start_ns", -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    for (int c = 1; c < 10; c++)
        CU_ASSERT_EQUAL(sqlite3_column_type(st, c), SQLITE_NULL);
    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 1), 8);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 4), 256);
    CU_ASSERT_EQUAL(sqlite3_column_type(st, 7), SQLITE_NULL);
    CU_ASSERT_EQUAL(sqlite3_column_type(st, 8), SQLITE_INTEGER);   /* a real 0 stays 0 */
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 8), 0);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 9), 1024);
    CU_ASSERT_EQUAL(sqlite3_step(st), SQLITE_DONE);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_unread_tables(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nvprof-unread.nvvp");
    const char *sql = BASE
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 211, 100, 200, 100, 7, 1, 0);"
        "create table CUPTI_ACTIVITY_KIND_PCIE(_id_ integer primary key, type integer);"
        "insert into CUPTI_ACTIVITY_KIND_PCIE(type) values (1), (2);"
        "create table CUPTI_ACTIVITY_KIND_NVLINK(_id_ integer primary key, flag integer);"
        "insert into CUPTI_ACTIVITY_KIND_NVLINK(flag) values (1);"
        "create table CUPTI_ACTIVITY_KIND_METRIC(_id_ integer primary key, value integer);"
        "create table \"odd \"\"name\"(x integer); insert into \"odd \"\"name\" values (1);"
        "create view CUPTI_ACTIVITY_KIND_ENVIRONMENT as select 1;";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    tr_trace t;
    tr_error err;
    warnings w = {{0}, 0};
    tr_ingest_opts o = {collect, &w, NULL};
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nvprof_read(&t, path, &o, &err), TR_OK);
    CU_ASSERT_EQUAL(w.n, 1);
    /* empty tables and the tables read are not named */
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, ": 3 table(s) not read (rows): NVLINK 1, PCIE 2, odd \"name 1\n"));
    tr_trace_free(&t);
}

TR_SUITE(nvprof,
         {"OpenACC tables: kinds, names, threads, nesting", test_openacc},
         {"CUDA events and overhead rows", test_cuda_events_and_overhead},
         {"NULL and backwards times are skipped and counted", test_bad_times},
         {"missing launch fields are NULL in run.db", test_missing_launch_fields},
         {"tables not read are named with their row counts", test_unread_tables})
