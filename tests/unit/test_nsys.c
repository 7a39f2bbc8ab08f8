/* nsys reader: a hand-made export covering the column variants, probes, bad input. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "ingest/ingest.h"
#include "lib/model.h"
#include "tests/unit/unit.h"

static int make_db(const char *path, const char *sql)
{
    sqlite3 *db;
    remove(path);
    if (sqlite3_open(path, &db) != SQLITE_OK)
        return -1;
    int rc = sqlite3_exec(db, sql, NULL, NULL, NULL);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

static const char *tmp_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tr_unit_tmpdir(), name);
    return buf;
}

static int probe_file(int (*probe)(const char *, const unsigned char *, size_t), const char *path)
{
    unsigned char head[64] = {0};
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(head, 1, sizeof head, f) : 0;
    if (f)
        fclose(f);
    return probe(path, head, n);
}

#define G(pid, tid) "(((" #pid ") << 24) | (" #tid "))"

static void test_read(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nsys-unit.sqlite");
    const char *sql =
        "create table StringIds(id integer primary key, value text);"
        "insert into StringIds values (10, 'from id'), (11, 'cudaMemcpyAsync_v3020'), (12, 'kern'),"
        " (13, 'worker');"
        /* 3.x columns plus an unknown extra one */
        "create table NVTX_EVENTS(start integer, end integer, eventType integer, rangeId integer,"
        " text text, globalTid integer, endGlobalTid integer, textId integer, domainId integer, w_extra real);"
        "insert into NVTX_EVENTS values (10, 90, 60, 1, null, " G(100, 101) ", " G(100, 102) ", 10, 0, 1.5),"
        " (20, 30, 59, null, 'conv, seq = 4, sizes = [[1, 3]]', " G(100, 101) ", null, null, 0, null),"
        " (40, null, 34, null, 'tick', " G(100, 101) ", null, null, 0, null),"
        " (0, null, 39, null, 'thread name', " G(100, 101) ", null, null, 0, null);"
        "create table CUPTI_ACTIVITY_KIND_RUNTIME(start integer, end integer, eventClass integer,"
        " globalTid integer, correlationId integer, nameId integer, returnValue integer, callchainId integer);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (21, 25, 0, " G(100, 101) ", 5, 11, 0, null);"
        "create table CUPTI_ACTIVITY_KIND_MEMCPY(start integer, end integer, deviceId integer, contextId integer,"
        " streamId integer, correlationId integer, bytes integer, copyKind integer, srcKind integer, dstKind integer);"
        "insert into CUPTI_ACTIVITY_KIND_MEMCPY values (50, 60, 1, 1, 13, 5, 4096, 1, 0, 2);"
        "create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer, contextId integer,"
        " streamId integer, correlationId integer, demangledName integer, shortName integer, mangledName integer);"
        "create table ThreadNames(nameId integer, priority integer, globalTid integer);"
        "insert into ThreadNames values (13, 0, " G(100, 101) ");";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    CU_ASSERT(probe_file(tr_nsys_probe, path));
    CU_ASSERT(!probe_file(tr_nvprof_probe, path));
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nsys_read(&t, path, NULL, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 5);
    int seen = 0;
    for (size_t i = 0; i < t.events.n; i++) {
        const tr_event *e = &t.events.v[i];
        const char *name = tr_str_of(&t, e->name);
        if (e->kind == TR_KIND_RUNTIME) {
            CU_ASSERT_STRING_EQUAL(name, "cudaMemcpyAsync");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&t, tr_event_raw_name(&t, e)), "cudaMemcpyAsync_v3020");
            CU_ASSERT_EQUAL(tr_correlation(&t, e), 5);
            const tr_thread *th = &t.threads.v[e->thread];
            CU_ASSERT_EQUAL(th->tid, 101);
            CU_ASSERT_EQUAL(t.processes.v[th->process].pid, 100);
            CU_ASSERT_STRING_EQUAL(tr_str_of(&t, th->name), "worker");
            seen |= 1;
        } else if (e->kind == TR_KIND_RANGE) {
            CU_ASSERT_STRING_EQUAL(name, "from id");
            CU_ASSERT(e->flags & TR_FLAG_ASYNC);   /* ended on another thread */
            seen |= 2;
        } else if (e->kind == TR_KIND_OP) {
            CU_ASSERT_STRING_EQUAL(name, "conv");
            CU_ASSERT_EQUAL(tr_extra(&t, e).seq, 4);
            CU_ASSERT_STRING_EQUAL(tr_str_of(&t, tr_extra(&t, e).shape), "[[1, 3]]");
            seen |= 4;
        } else if (e->kind == TR_KIND_MARK) {
            CU_ASSERT_EQUAL(e->start, 40);
            CU_ASSERT_EQUAL(e->end, 40);
            seen |= 8;
        } else if (e->kind == TR_KIND_MEMCPY) {
            CU_ASSERT_STRING_EQUAL(name, "[CUDA memcpy HtoD]");
            CU_ASSERT_EQUAL(tr_extra(&t, e).bytes, 4096);
            CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.copies.v[e->detail].src_kind), "Pageable");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.copies.v[e->detail].dst_kind), "Device");
            seen |= 16;
        }
    }
    CU_ASSERT_EQUAL(seen, 31);
    tr_trace_free(&t);
}

static void test_bad(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nsys-bad.sqlite");
    /* an nvprof-style database is not claimed, and reading it as nsys fails cleanly */
    CU_ASSERT_EQUAL_FATAL(make_db(path, "create table StringTable(_id_ integer, value text);"
                                        "create table CUPTI_ACTIVITY_KIND_RUNTIME(x integer);"), 0);
    CU_ASSERT(!probe_file(tr_nsys_probe, path));
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_nsys_read(&t, path, NULL, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "StringIds"));
    /* required column missing */
    CU_ASSERT_EQUAL_FATAL(make_db(path, "create table StringIds(id integer, value text);"
                                        "create table CUPTI_ACTIVITY_KIND_KERNEL(start integer);"), 0);
    CU_ASSERT(probe_file(tr_nsys_probe, path));
    tr_error_clear(&err);
    CU_ASSERT_EQUAL(tr_nsys_read(&t, path, NULL, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "CUPTI_ACTIVITY_KIND_KERNEL"));
    tr_trace_free(&t);
}

/* nsys exports carry nvprof's CUPTI tables under other names and numbers: the same
 * activity, written once in each format, reads as the same events.  nvprof names the
 * sync's device through its context and numbers memory kinds from Unknown = 0; nsys
 * gives the device and numbers them from Pageable = 0. */
static void test_same_as_nvprof(void)
{
    char nv[512], ns[512];
    tmp_path(nv, sizeof nv, "cupti-same.nvvp");
    tmp_path(ns, sizeof ns, "cupti-same.sqlite");
    CU_ASSERT_EQUAL_FATAL(make_db(nv,
        "create table StringTable(_id_ integer primary key, value text);"
        "insert into StringTable values (0, '-- null --'), (1, '_Z1kIiEvi');"
        "create table CUPTI_ACTIVITY_KIND_CONTEXT(contextId integer, deviceId integer);"
        "insert into CUPTI_ACTIVITY_KIND_CONTEXT values (7, 2);"
        "create table CUPTI_ACTIVITY_KIND_RUNTIME(_id_ integer primary key, cbid integer, start integer,"
        " end integer, processId integer, threadId integer, correlationId integer, returnValue integer);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 211, 100, 180, 40, 41, 9, 0);"
        "create table CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ integer primary key, start integer,"
        " end integer, deviceId integer, contextId integer, streamId integer, correlationId integer,"
        " name integer, gridX integer, blockX integer);"
        "insert into CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL values (1, 200, 260, 2, 7, 13, 9, 1, 64, 256);"
        "create table CUPTI_ACTIVITY_KIND_MEMCPY(_id_ integer primary key, copyKind integer,"
        " srcKind integer, dstKind integer, bytes integer, start integer, end integer,"
        " deviceId integer, contextId integer, streamId integer, correlationId integer);"
        "insert into CUPTI_ACTIVITY_KIND_MEMCPY values (1, 1, 1, 3, 4096, 300, 320, 2, 7, 13, 10);"
        "create table CUPTI_ACTIVITY_KIND_MEMSET(_id_ integer primary key, value integer, bytes integer,"
        " start integer, end integer, deviceId integer, contextId integer, streamId integer,"
        " correlationId integer);"
        "insert into CUPTI_ACTIVITY_KIND_MEMSET values (1, 255, 512, 330, 335, 2, 7, 13, 11);"
        "create table CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(_id_ integer primary key, type integer,"
        " start integer, end integer, correlationId integer, contextId integer, streamId integer);"
        "insert into CUPTI_ACTIVITY_KIND_SYNCHRONIZATION values (1, 3, 340, 400, 12, 7, 13);"), 0);
    CU_ASSERT_EQUAL_FATAL(make_db(ns,
        "create table StringIds(id integer primary key, value text);"
        "insert into StringIds values (1, '_Z1kIiEvi'), (2, 'cudaLaunchKernel_v7000');"
        "create table CUPTI_ACTIVITY_KIND_RUNTIME(start integer, end integer, globalTid integer,"
        " correlationId integer, nameId integer);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (100, 180, " G(40, 41) ", 9, 2);"
        "create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer,"
        " contextId integer, streamId integer, correlationId integer, mangledName integer,"
        " gridX integer, blockX integer);"
        "insert into CUPTI_ACTIVITY_KIND_KERNEL values (200, 260, 2, 7, 13, 9, 1, 64, 256);"
        "create table CUPTI_ACTIVITY_KIND_MEMCPY(start integer, end integer, deviceId integer,"
        " contextId integer, streamId integer, correlationId integer, bytes integer,"
        " copyKind integer, srcKind integer, dstKind integer);"
        "insert into CUPTI_ACTIVITY_KIND_MEMCPY values (300, 320, 2, 7, 13, 10, 4096, 1, 0, 2);"
        "create table CUPTI_ACTIVITY_KIND_MEMSET(start integer, end integer, deviceId integer,"
        " contextId integer, streamId integer, correlationId integer, value integer, bytes integer);"
        "insert into CUPTI_ACTIVITY_KIND_MEMSET values (330, 335, 2, 7, 13, 11, 255, 512);"
        "create table CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start integer, end integer, deviceId integer,"
        " contextId integer, streamId integer, correlationId integer, syncType integer);"
        "insert into CUPTI_ACTIVITY_KIND_SYNCHRONIZATION values (340, 400, 2, 7, 13, 12, 3);"), 0);
    tr_trace a, b;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&a, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&b, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nvprof_read(&a, nv, NULL, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nsys_read(&b, ns, NULL, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(a.events.n, 5);
    CU_ASSERT_EQUAL_FATAL(b.events.n, a.events.n);
    for (size_t i = 0; i < a.events.n; i++) {
        const tr_event *x = &a.events.v[i], *y = &b.events.v[i];
        CU_ASSERT_EQUAL(x->kind, y->kind);
        CU_ASSERT_STRING_EQUAL(tr_str_of(&a, x->name), tr_str_of(&b, y->name));
        CU_ASSERT_EQUAL(x->start, y->start);
        CU_ASSERT_EQUAL(x->end, y->end);
        CU_ASSERT_EQUAL(tr_extra(&a, x).bytes, tr_extra(&b, y).bytes);
        CU_ASSERT_EQUAL(tr_correlation(&a, x), tr_correlation(&b, y));
        CU_ASSERT_EQUAL(!x->thread, !y->thread);
        CU_ASSERT_EQUAL(!x->stream, !y->stream);
        if (x->stream && y->stream) {
            const tr_stream *sx = &a.streams.v[x->stream], *sy = &b.streams.v[y->stream];
            CU_ASSERT_EQUAL(a.devices.v[sx->device].device, 2);
            CU_ASSERT_EQUAL(b.devices.v[sy->device].device, 2);
            CU_ASSERT_EQUAL(sx->stream, sy->stream);
            CU_ASSERT_EQUAL(sx->context, sy->context);
        }
        if (x->kind == TR_KIND_KERNEL) {
            CU_ASSERT_STRING_EQUAL(tr_str_of(&a, x->name), "void k<int>(int)");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&b, tr_event_raw_name(&b, y)), "_Z1kIiEvi");
            CU_ASSERT_EQUAL(a.kernels.v[x->detail].grid[0], b.kernels.v[y->detail].grid[0]);
            CU_ASSERT_EQUAL(b.kernels.v[y->detail].block[0], 256);
            CU_ASSERT_EQUAL(b.kernels.v[y->detail].grid[1], -1);
        } else if (x->kind == TR_KIND_MEMCPY) {
            const tr_copy_detail *cx = &a.copies.v[x->detail], *cy = &b.copies.v[y->detail];
            CU_ASSERT_STRING_EQUAL(tr_str_of(&a, cx->src_kind), "Pageable");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&b, cy->src_kind), "Pageable");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&a, cx->dst_kind), "Device");
            CU_ASSERT_STRING_EQUAL(tr_str_of(&b, cy->dst_kind), "Device");
        } else if (x->kind == TR_KIND_MEMSET) {
            CU_ASSERT_EQUAL(a.memset_values.v[x->detail], b.memset_values.v[y->detail]);
        }
    }
    tr_trace_free(&a);
    tr_trace_free(&b);
}

/* StringIds without a primary key may come in any order, with gaps and an id twice:
 * each id still finds its string, the last row of an id standing. */
static void test_string_order(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nsys-strings.sqlite");
    CU_ASSERT_EQUAL_FATAL(make_db(path,
        "create table StringIds(id integer, value text);"
        "insert into StringIds values (40, 'cudaFree_v3020'), (7, 'stale'), (1000, 'kernB'),"
        " (7, 'cudaMalloc_v3020'), (3, 'kernA');"
        "create table CUPTI_ACTIVITY_KIND_RUNTIME(start integer, end integer, globalTid integer,"
        " correlationId integer, nameId integer);"
        "insert into CUPTI_ACTIVITY_KIND_RUNTIME values (1, 2, " G(1, 1) ", 1, 7),"
        " (3, 4, " G(1, 1) ", 2, 40), (5, 6, " G(1, 1) ", 3, 8);"
        "create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer,"
        " streamId integer, shortName integer);"
        "insert into CUPTI_ACTIVITY_KIND_KERNEL values (10, 20, 0, 7, 1000), (30, 40, 0, 7, 3);"), 0);
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nsys_read(&t, path, NULL, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 5);
    static const char *const want[] = {"cudaMalloc", "cudaFree", "[unknown API]", "kernB", "kernA"};
    for (size_t i = 0; i < 5; i++)
        CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.events.v[i].name), want[i]);
    tr_trace_free(&t);
}

static void collect_warning(void *ctx, const char *msg)
{
    char *all = ctx;
    size_t len = strlen(all);
    snprintf(all + len, 4096 - len, "%s\n", msg);
}

/* A CUPTI row without a start, or ending before it starts, is skipped and
 * counted as nvprof's are, not stored at time 0 or with a negative length. */
static void test_bad_times(void)
{
    char path[512];
    tmp_path(path, sizeof path, "nsys-times.sqlite");
    const char *sql =
        "create table StringIds(id integer primary key, value text);"
        "insert into StringIds values (12, 'kern');"
        "create table CUPTI_ACTIVITY_KIND_KERNEL(start integer, end integer, deviceId integer, contextId integer,"
        " streamId integer, correlationId integer, demangledName integer, shortName integer, mangledName integer);"
        "insert into CUPTI_ACTIVITY_KIND_KERNEL values (100, 200, 0, 1, 7, 1, 12, 12, 12),"
        " (null, 300, 0, 1, 7, 2, 12, 12, 12), (500, 400, 0, 1, 7, 3, 12, 12, 12);";
    CU_ASSERT_EQUAL_FATAL(make_db(path, sql), 0);
    tr_trace t;
    tr_error err;
    char warned[4096] = "";
    tr_ingest_opts o = {collect_warning, warned, NULL};
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_nsys_read(&t, path, &o, &err), TR_OK);
    CU_ASSERT_EQUAL(t.events.n, 1);
    if (t.events.n)
        CU_ASSERT_EQUAL(t.events.v[0].start, 100);
    CU_ASSERT_PTR_NOT_NULL(strstr(warned, "1 row(s) without a start or end time skipped"));
    CU_ASSERT_PTR_NOT_NULL(strstr(warned, "1 row(s) ending before they start"));
    tr_trace_free(&t);
}

TR_SUITE(nsys,
         {"rows with unusable times are skipped and counted", test_bad_times},
         {"read a hand-made export", test_read},
         {"bad exports", test_bad},
         {"the same CUPTI rows read alike as nvprof and nsys", test_same_as_nvprof},
         {"string ids in any order, with gaps and repeats", test_string_order})
