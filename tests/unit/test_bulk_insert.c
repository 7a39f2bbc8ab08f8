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

static int64_t query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
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
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM t"), 2000);
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM t WHERE n IS NULL"), 1000);
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM t WHERE s IS NULL"), 500);
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM t WHERE (id / 10) % 3 = 2"), 0);
    CU_ASSERT_EQUAL(query_int(db, "SELECT length(s) FROM t WHERE id = 60"), 5);   /* UTF-8 text */
    CU_ASSERT_EQUAL(query_int(db, "SELECT instr(s, char(10)) FROM t WHERE id = 30"), 11);
    /* the virtual table and its module are gone: a second call works the same */
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0);
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 3, 0, fill_rows, NULL, &err), TR_OK);
    /* a clash with an existing row fails with SQLite's message and the table's name */
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 3, 3, fill_rows, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "UNIQUE"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "table t"));
    /* a column count that does not match the table */
    CU_ASSERT_EQUAL(tr_bulk_insert(db, "t", 2, 3, fill_rows, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM t"), 2000);
    CU_ASSERT_EQUAL(query_int(db, "SELECT count(*) FROM temp.sqlite_master"), 0);
    sqlite3_close(db);
}

TR_SUITE(bulk_insert, {"rows, NULLs, text, skips and errors", test_bulk_rows})
