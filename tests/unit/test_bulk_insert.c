/* Bulk insert through the transient virtual table: kept and skipped rows,
 * NULL and text cells, errors from SQLite, and the connection left clean. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "lib/bulk_insert.h"
#include "tests/unit/unit.h"

static const char *const words[] = {"alpha", NULL, "g\xc3\xa4mma", "delta with\nnewline"};

/* Row i keeps every third row out; column 1 is NULL on odd rows. */
static int fill_rows(const void *ctx, size_t i, tr_cell *c)
{
    (void)ctx;
    if (i % 3 == 2)
        return 0;
    tr_cell_int(&c[0], (int64_t)i * 10);
    tr_cell_opt(&c[1], (int64_t)i, (i % 2) ? (int64_t)i : -1);
    tr_cell_text(&c[2], words[i % 4], -1);
    return 1;
}

static void test_bulk_rows(void)
{
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER, s TEXT)",
                           NULL, NULL, NULL) == SQLITE_OK);
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 3, 3000, fill_rows, NULL, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t"), 2000);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE n IS NULL"), 1000);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE s IS NULL"), 500);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE (id / 10) % 3 = 2"), 0);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT length(s) FROM t WHERE id = 60"), 5);   /* UTF-8 text */
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT instr(s, char(10)) FROM t WHERE id = 30"), 11);
    /* the virtual table and its module are gone: a second call works the same */
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0);
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 3, 0, fill_rows, NULL, &err), TR_OK);
    /* a clash with an existing row fails with SQLite's message and the table's name */
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 3, 3, fill_rows, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "UNIQUE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "table t"));
    /* a column count that does not match the table */
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 2, 3, fill_rows, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t"), 2000);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0);
    sqlite3_close(db);
}

/* Row i: key ctx[0] + i, or ctx[1] + i from row ctx[2] on (a key out of
 * sequence); row ctx[3] is left out when ctx[3] >= 0. */
static int fill_numbered(const void *ctx, size_t i, tr_cell *c)
{
    const int64_t *k = ctx;
    if ((int64_t)i == k[3])
        return 0;
    tr_cell_int(&c[0], ((int64_t)i < k[2] ? k[0] : k[1]) + (int64_t)i);
    tr_cell_int(&c[1], (int64_t)i * 7);
    tr_cell_text(&c[2], words[i % 4], -1);
    return 1;
}

static void test_bulk_append(void)
{
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(":memory:", &db) == SQLITE_OK);
    CU_ASSERT(sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, n INTEGER NOT NULL, s TEXT)",
                           NULL, NULL, NULL) == SQLITE_OK);
    tr_error err;
    tr_error_clear(&err);
    /* an empty table numbers from 1: the first row goes in with its key */
    int64_t k[4] = {101, 101, 1 << 30, -1};
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 1000, 101, fill_numbered, k, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t"), 1000);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT min(id) FROM t"), 101);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT max(id) FROM t"), 1100);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE n != (id - 101) * 7"), 0);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE s IS NULL"), 250);
    /* rows that follow on from the largest key are numbered by SQLite */
    k[0] = k[1] = 1101;
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 500, 1101, fill_numbered, k, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t"), 1500);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t WHERE id > 1100 AND n != (id - 1101) * 7"), 0);
    /* a gap after the largest key */
    k[0] = k[1] = 5001;
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 3, 5001, fill_numbered, k, &err), TR_OK);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT sum(id) FROM t WHERE id > 1600"), 5001 + 5002 + 5003);
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 0, 9000, fill_numbered, k, &err), TR_OK);
    /* keys already taken fail as the plain insert does */
    k[0] = k[1] = 1000;
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 3, 1000, fill_numbered, k, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "UNIQUE"));
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM t"), 1503);
    /* a key out of sequence, and a row left out, fail the insert */
    int64_t skew[4] = {6001, 7001, 5, -1};
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 10, 6001, fill_numbered, skew, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "row 5 is out of sequence"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "table t"));
    int64_t hole[4] = {8001, 8001, 1 << 30, 0};
    CU_ASSERT_EQUAL(tr_bulk_append(db, "t", 3, 10, 8001, fill_numbered, hole, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "row 0 is out of sequence"));
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0);
    sqlite3_close(db);
}

/* Keys in runs of consecutive ids with gaps, a row left out, keys below the
 * largest (3, then 4: one above the last row, not above the largest) and
 * negative ones: each row keeps its own key and values. */
TR_SUITE(bulk_insert, {"rows, NULLs, text, skips and errors", test_bulk_rows},
         {"rows numbered by SQLite", test_bulk_append})
