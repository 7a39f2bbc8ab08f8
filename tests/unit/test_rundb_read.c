/* Reading a run.db as untrusted input: saturating arithmetic, the open's checks,
 * and a table's scan from the file's pages against the same scan through SQLite. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/checked.h"
#include "lib/rundb.h"
#include "lib/rundb_scan.h"
#include "tests/unit/unit.h"

static void test_saturating(void)
{
    CU_ASSERT_EQUAL(tr_sat_add(INT64_MAX, 1), INT64_MAX);
    CU_ASSERT_EQUAL(tr_sat_add(INT64_MIN, -1), INT64_MIN);
    CU_ASSERT_EQUAL(tr_sat_add(INT64_MAX, INT64_MIN), -1);
    CU_ASSERT_EQUAL(tr_sat_sub(INT64_MAX, INT64_MIN), INT64_MAX);
    CU_ASSERT_EQUAL(tr_sat_sub(INT64_MIN, 1), INT64_MIN);
    CU_ASSERT_EQUAL(tr_sat_sub(5, 7), -2);
    int64_t acc = INT64_MAX - 1;
    tr_sat_acc(&acc, 5);
    CU_ASSERT_EQUAL(acc, INT64_MAX);
    CU_ASSERT(tr_times_ok(0, 0));
    CU_ASSERT(tr_times_ok(-TR_NS_TIME_MAX, TR_NS_TIME_MAX));
    CU_ASSERT(!tr_times_ok(5, 4));
    CU_ASSERT(!tr_times_ok(INT64_MIN, 0));
    CU_ASSERT(!tr_times_ok(0, INT64_MAX));
    CU_ASSERT(tr_ns_ok(0) && tr_ns_ok(TR_NS_SPAN_MAX));
    CU_ASSERT(!tr_ns_ok(-1) && !tr_ns_ok(TR_NS_SPAN_MAX + 1));
    CU_ASSERT(!tr_span_ok(INT64_MIN, INT64_MAX));
}

/* A run.db file `name` with an empty trace's schema, then sql applied; its path in path. */
static void make_rundb(char *path, size_t size, const char *name, const char *sql)
{
    snprintf(path, size, "%s/%s", tr_unit_tmpdir(), name);
    remove(path);
    sqlite3 *db = NULL;
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    CU_ASSERT_FATAL(tr_rundb_create_schema(db, &err) == TR_OK);
    if (sql)
        CU_ASSERT_FATAL(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
}

/* A run.db with an empty trace's schema, then sql applied; the open's status and message. */
static tr_status open_after(const char *name, const char *sql, char *msg, size_t n)
{
    char path[512];
    make_rundb(path, sizeof path, name, sql);
    sqlite3 *db = NULL;
    tr_error err;
    tr_error_clear(&err);
    tr_status st = tr_rundb_open(path, &db, &err);
    snprintf(msg, n, "%s", st == TR_OK ? "" : err.msg);
    CU_ASSERT((st == TR_OK) == (db != NULL));
    sqlite3_close(db);
    return st;
}

static void test_open_checks(void)
{
    char msg[1024];
    CU_ASSERT_EQUAL(open_after("ok.db", NULL, msg, sizeof msg), TR_OK);
    static const struct { const char *name, *sql, *says; } bad[] = {
        {"view.db", "DROP TABLE threads; CREATE VIEW threads AS SELECT 1 AS id", "threads is a view"},
        {"missing.db", "DROP TABLE kinds", "table kinds is missing"},
        {"column.db", "DROP VIEW IF EXISTS ops; DROP VIEW IF EXISTS kernel_launches; "
                       "DROP VIEW IF EXISTS steps; ALTER TABLE events DROP COLUMN depth", "no column depth"},
        {"generated.db", "ALTER TABLE strings ADD COLUMN g AS (1)", "generated column"},
        {"old.db", "PRAGMA user_version = 0", "schema version 0"},
        {"new.db", "PRAGMA user_version = 2", "newer than this tool reads"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(open_after(bad[i].name, bad[i].sql, msg, sizeof msg), TR_ERR_INPUT);
        if (!strstr(msg, bad[i].says) || !strstr(msg, bad[i].name))
            fprintf(stderr, "\n  %s: '%s' not in: %s", bad[i].name, bad[i].says, msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, bad[i].says));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, bad[i].name));
    }
}

static void test_open_special_files(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/fifo.db", tr_unit_tmpdir());
    remove(path);
    CU_ASSERT_FATAL(mkfifo(path, 0600) == 0);
    sqlite3 *db = NULL;
    tr_error err;
    tr_error_clear(&err);
    /* a FIFO without a writer would block a plain open: refused at once */
    CU_ASSERT_EQUAL(tr_rundb_open(path, &db, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "FIFO"));
    CU_ASSERT_FALSE(tr_file_is_sqlite(path));
    CU_ASSERT_EQUAL(tr_rundb_open(tr_unit_tmpdir(), &db, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "directory"));
    CU_ASSERT_EQUAL(tr_rundb_open("/dev/null", &db, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "device"));
    CU_ASSERT_PTR_NULL(db);
}

/* Reads every row of sql through s into sum (a hash of the cells, in order);
 * the row count, -1 on an error. */
static long scan_rows(sqlite3 *db, const char *sql, int ncols, int pages_only, int *started,
                      size_t *direct, uint64_t *sum)
{
    tr_rundb_scan s;
    tr_error err;
    tr_error_clear(&err);
    *direct = 0;
    *sum = 1469598103934665603u;
    if (tr_rundb_scan_start(&s, db, sql, ncols, "events", pages_only, started, &err) != TR_OK)
        return -1;
    if (!*started)
        return 0;
    long n = 0;
    int rc = 0;
    const tr_sql_cell *c;
    while ((c = tr_rundb_scan_next(&s, &rc, &err)) != NULL) {
        for (int i = 0; i < ncols; i++)
            *sum = (*sum ^ (uint64_t)c[i].i ^ ((uint64_t)c[i].type << 60)) * 1099511628211u;
        n++;
    }
    *direct = tr_sql_ahead_direct_rows(s.ahead);
    tr_rundb_scan_stop(&s);
    return rc < 0 ? -1 : n;
}

static void test_scan_from_pages(void)
{
    char path[512];
    /* NULL parents, negative and wide integers, and a text where an integer belongs */
    make_rundb(path, sizeof path, "pages.db",
        "INSERT INTO strings(id, value) VALUES (1, 'k');"
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) "
        "INSERT INTO events(id, kind, name_id, start_ns, end_ns, parent_id, depth, flags, cpu_total_ns, "
        "cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self) "
        "SELECT i * 3, 1 + i % 9, 1, i * 1000000007, i * 1000000007 + i, CASE WHEN i % 7 THEN i - 1 END, "
        "i % 5, CASE WHEN i = 77 THEN '32 and more' ELSE i % 64 END, i, 0, -i, 0, 0, 0, 0, 0 FROM n");
    sqlite3 *db = NULL;
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_FATAL(tr_rundb_open(path, &db, &err) == TR_OK);
    const char *sql = "SELECT id, kind, parent_id, start_ns, end_ns, flags, gpu_total_ns FROM events";
    int started;
    size_t direct;
    uint64_t pages_sum, step_sum;
    CU_ASSERT_EQUAL(scan_rows(db, sql, 7, 1, &started, &direct, &pages_sum), 5000);
    CU_ASSERT(started);
    CU_ASSERT_EQUAL(direct, 5000);
    /* TR_NO_PAGE_READ: not from the pages; stepped by SQLite, the same cells */
    setenv("TR_NO_PAGE_READ", "1", 1);
    CU_ASSERT_EQUAL(scan_rows(db, sql, 7, 1, &started, &direct, &step_sum), 0);
    CU_ASSERT(!started);
    CU_ASSERT_EQUAL(scan_rows(db, sql, 7, 0, &started, &direct, &step_sum), 5000);
    CU_ASSERT(started);
    CU_ASSERT_EQUAL(direct, 0);
    CU_ASSERT_EQUAL(step_sum, pages_sum);
    unsetenv("TR_NO_PAGE_READ");
    /* no plain scan (a WHERE), pages_only: left to the caller; otherwise stepped */
    const char *where = "SELECT id, kind, parent_id, start_ns, end_ns, flags, gpu_total_ns FROM events "
                        "WHERE kind > 0";
    CU_ASSERT_EQUAL(scan_rows(db, where, 7, 1, &started, &direct, &step_sum), 0);
    CU_ASSERT(!started);
    CU_ASSERT_EQUAL(scan_rows(db, where, 7, 0, &started, &direct, &step_sum), 5000);
    CU_ASSERT_EQUAL(direct, 0);
    CU_ASSERT_EQUAL(step_sum, pages_sum);
    /* a statement SQLite refuses: the table and the run.db named */
    tr_rundb_scan s;
    CU_ASSERT_EQUAL(tr_rundb_scan_start(&s, db, "SELECT nope FROM events", 1, "events", 0, &started, &err),
                    TR_ERR_INPUT);
    CU_ASSERT(!started);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "pages.db: cannot read table events: no such column"));
    sqlite3_close(db);
    /* a database in no file: never from the pages */
    CU_ASSERT_FATAL(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CU_ASSERT_FATAL(tr_rundb_create_schema(db, &err) == TR_OK);
    CU_ASSERT_EQUAL(scan_rows(db, sql, 7, 1, &started, &direct, &step_sum), 0);
    CU_ASSERT(!started);
    CU_ASSERT_EQUAL(scan_rows(db, sql, 7, 0, &started, &direct, &step_sum), 0);
    CU_ASSERT(started);
    sqlite3_close(db);
}

TR_SUITE(rundb_read,
         {"saturating and checked arithmetic", test_saturating},
         {"open refuses views, missing tables and columns, versions", test_open_checks},
         {"open refuses FIFOs, directories and devices without blocking", test_open_special_files},
         {"a table's scan from the pages gives SQLite's cells, and only where it may", test_scan_from_pages})
