/* Reading a run.db as untrusted input: saturating arithmetic, and the open's checks. */
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/checked.h"
#include "lib/rundb.h"
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

/* A run.db with an empty trace's schema, then sql applied; the open's status and message. */
static tr_status open_after(const char *name, const char *sql, char *msg, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", tr_unit_tmpdir(), name);
    remove(path);
    sqlite3 *db = NULL;
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    CU_ASSERT_FATAL(tr_rundb_create_schema(db, &err) == TR_OK);
    if (sql)
        CU_ASSERT(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    db = NULL;
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

TR_SUITE(rundb_read,
         {"saturating and checked arithmetic", test_saturating},
         {"open refuses views, missing tables and columns, versions", test_open_checks},
         {"open refuses FIFOs, directories and devices without blocking", test_open_special_files})
