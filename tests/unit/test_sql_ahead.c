/* lib/sql_ahead: rows read ahead on a helper thread, and several read-aheads
 * merged by id, against stepping the statement directly: every row, in order,
 * with the same cells, however the ids are split; a failing step is reported. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "lib/sql_ahead.h"
#include "tests/unit/unit.h"

/* A file of n rows (id, v, t): ids 1..n with gaps every 7th, v = id * 3 or NULL
 * every 5th, t a text of the id; two connections on it. */
static void open_table(int n, sqlite3 **db, sqlite3 **peer)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/ahead-%d.db", tr_unit_tmpdir(), n);
    remove(path);
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, db), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(*db, "CREATE TABLE r(id INTEGER PRIMARY KEY, v INTEGER, t TEXT);"
                                            "BEGIN", NULL, NULL, NULL), SQLITE_OK);
    sqlite3_stmt *ins;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(*db, "INSERT INTO r VALUES (?, ?, ?)", -1, &ins, NULL), SQLITE_OK);
    for (int i = 1; i <= n; i++) {
        if (i % 7 == 0)
            continue;
        char t[32];
        snprintf(t, sizeof t, "row %d", i);
        sqlite3_bind_int(ins, 1, i);
        if (i % 5 == 0)
            sqlite3_bind_null(ins, 2);
        else
            sqlite3_bind_int64(ins, 2, (int64_t)i * 3);
        sqlite3_bind_text(ins, 3, t, -1, SQLITE_TRANSIENT);
        CU_ASSERT_EQUAL(sqlite3_step(ins), SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    CU_ASSERT_EQUAL_FATAL(sqlite3_exec(*db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(path, peer, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
}

/* Reads the merge to its end, checking each row against the table. */
static void expect_rows(tr_sql_merge *m, int n)
{
    int rc, id = 0, rows = 0;
    tr_error err;
    const tr_sql_cell *c;
    while ((c = tr_sql_merge_next(m, &rc, &err)) != NULL) {
        CU_ASSERT_EQUAL(rc, 1);
        CU_ASSERT(c[0].i > id);   /* ascending, none twice */
        id = (int)c[0].i;
        CU_ASSERT(id % 7 != 0);
        if (id % 5 == 0) {
            CU_ASSERT_EQUAL(c[1].type, SQLITE_NULL);
            CU_ASSERT_EQUAL(c[1].i, 0);
        } else {
            CU_ASSERT_EQUAL(c[1].type, SQLITE_INTEGER);
            CU_ASSERT_EQUAL(c[1].i, (int64_t)id * 3);
        }
        char t[32];
        snprintf(t, sizeof t, "row %d", id);
        CU_ASSERT_PTR_NOT_NULL_FATAL(c[2].p);
        CU_ASSERT_EQUAL(c[2].len, (int)strlen(t));
        CU_ASSERT_STRING_EQUAL(c[2].p, t);
        rows++;
    }
    CU_ASSERT_EQUAL(rc, 0);
    CU_ASSERT_EQUAL(rows, n - n / 7);
}

/* n rows split over `readers` statements by blocks of `block` ids (tr_id_blocks), read
 * with and without threads. */
static void check_split(int n, int readers, int block, int threaded)
{
    sqlite3 *db, *peer[3] = {NULL, NULL, NULL};
    open_table(n, &db, &peer[0]);
    for (int k = 1; k < readers; k++)
        CU_ASSERT_EQUAL_FATAL(sqlite3_open_v2(sqlite3_db_filename(db, "main"), &peer[k], SQLITE_OPEN_READONLY,
                                              NULL), SQLITE_OK);
    sqlite3_stmt *st[3] = {NULL, NULL, NULL};
    tr_sql_ahead *a[3] = {NULL, NULL, NULL};
    tr_id_blocks b[3];
    tr_error err;
    for (int k = 0; k < readers; k++) {
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(peer[k], "SELECT id, v, t FROM r WHERE id BETWEEN ?1 AND ?2",
                                                 -1, &st[k], NULL), SQLITE_OK);
        tr_id_blocks_first(&b[k], st[k], 1, n, block, k, readers);
        CU_ASSERT_EQUAL_FATAL(tr_sql_ahead_start_ranges(&a[k], st[k], 3, "iit", "rows", threaded,
                                                        tr_id_blocks_next, &b[k], &err), TR_OK);
    }
    tr_sql_merge m;
    CU_ASSERT_EQUAL_FATAL(tr_sql_merge_start(&m, a, readers, 0, &err), TR_OK);
    expect_rows(&m, n);
    tr_sql_merge_stop(&m);
    for (int k = 0; k < readers; k++) {
        sqlite3_finalize(st[k]);
        sqlite3_close(peer[k]);
    }
    sqlite3_close(db);
}

static void test_merge(void)
{
    for (int threaded = 0; threaded < 2; threaded++) {
        check_split(0, 1, 1, threaded);          /* nothing at all */
        check_split(10, 2, 4096, threaded);      /* the second reader has no block */
        check_split(20000, 1, 20000, threaded);  /* one reader, several batches */
        check_split(20000, 2, 7, threaded);      /* thousands of alternations */
        check_split(20000, 3, 4096, threaded);
        check_split(20000, 2, 1, threaded);
    }
}

/* The blocks of ids at the ends of int64: every id in exactly one block, no overflow. */
static void test_blocks_edges(void)
{
    sqlite3 *db;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &db), SQLITE_OK);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT ?1, ?2", -1, &st, NULL), SQLITE_OK);
    static const int64_t spans[][2] = {{INT64_MIN, INT64_MIN + 10}, {INT64_MAX - 10, INT64_MAX},
                                       {INT64_MIN, INT64_MAX}, {-5, 5}, {3, 3}};
    for (size_t i = 0; i < sizeof spans / sizeof spans[0]; i++) {
        for (int n = 1; n <= 3; n++) {
            uint64_t covered = 0;
            for (int k = 0; k < n; k++) {
                tr_id_blocks b;
                int64_t block = i == 2 ? INT64_MAX / 2 : 4;
                int more = tr_id_blocks_first(&b, st, spans[i][0], spans[i][1], block, k, n);
                for (int guard = 0; more && guard < 100; guard++) {
                    CU_ASSERT_EQUAL_FATAL(sqlite3_step(st), SQLITE_ROW);
                    int64_t lo = sqlite3_column_int64(st, 0), hi = sqlite3_column_int64(st, 1);
                    CU_ASSERT(lo <= hi && lo >= spans[i][0] && hi <= spans[i][1]);
                    covered += (uint64_t)hi - (uint64_t)lo + 1;
                    more = tr_id_blocks_next(&b, st);
                }
            }
            /* the whole span, once (wraps to 0 for the full int64 range) */
            CU_ASSERT_EQUAL(covered, (uint64_t)spans[i][1] - (uint64_t)spans[i][0] + 1);
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* A step that fails (here: an interrupted statement) ends the rows with -1 and
 * the caller's words before SQLite's message. */
static int interrupt_now(void *arg)
{
    (void)arg;
    return 1;
}

static void test_failure(void)
{
    sqlite3 *db, *peer;
    open_table(5000, &db, &peer);
    sqlite3_progress_handler(peer, 100, interrupt_now, NULL);
    sqlite3_stmt *st;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(peer, "SELECT id, v, t FROM r ORDER BY t", -1, &st, NULL), SQLITE_OK);
    tr_sql_ahead *a;
    tr_error err;
    memset(&err, 0, sizeof err);
    CU_ASSERT_EQUAL_FATAL(tr_sql_ahead_start(&a, st, 3, "iit", "cannot read r", 1, &err), TR_OK);
    tr_sql_merge m;
    tr_status s = tr_sql_merge_start(&m, &a, 1, 0, &err);
    CU_ASSERT_EQUAL(s, TR_ERR_INPUT);
    int rc;
    CU_ASSERT_PTR_NULL(tr_sql_merge_next(&m, &rc, &err));
    CU_ASSERT_EQUAL(rc, -1);
    CU_ASSERT_EQUAL(strncmp(err.msg, "cannot read r: interrupted", 26), 0);
    tr_sql_merge_stop(&m);
    sqlite3_finalize(st);
    sqlite3_close(peer);
    sqlite3_close(db);
}

/* A peek k rows ahead shows the row that next() gives k rows later, with its
 * text, or nothing when that row is not yet at hand; it never moves the rows. */
static void test_peek(void)
{
    enum { N = 20000, ROWS = N - N / 7 };
    static const size_t ks[] = {0, 1, 8, 3000};
    for (int threaded = 0; threaded < 2; threaded++) {
        sqlite3 *db, *peer;
        open_table(N, &db, &peer);
        sqlite3_stmt *st;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(peer, "SELECT id, v, t FROM r", -1, &st, NULL), SQLITE_OK);
        tr_sql_ahead *a;
        tr_error err;
        CU_ASSERT_EQUAL_FATAL(tr_sql_ahead_start(&a, st, 3, "iit", "rows", threaded, &err), TR_OK);
        CU_ASSERT_PTR_NULL(tr_sql_ahead_peek(a, 0));   /* no row given yet */
        static int64_t ids[ROWS], seen[ROWS][4];
        int rc, rows = 0, wrong = 0, shown[4] = {0}, hidden[4] = {0};
        const tr_sql_cell *c;
        while ((c = tr_sql_ahead_next(a, &rc, &err)) != NULL && rows < ROWS) {
            ids[rows] = c[0].i;
            for (int j = 0; j < 4; j++) {
                const tr_sql_cell *p = tr_sql_ahead_peek(a, ks[j]);
                seen[rows][j] = p ? p[0].i : -1;
                if (!p) {
                    hidden[j]++;
                    continue;
                }
                shown[j]++;
                char t[32];
                snprintf(t, sizeof t, "row %d", (int)p[0].i);
                wrong += j == 0 && p != c;
                wrong += !p[2].p || strcmp(p[2].p, t) != 0;
            }
            rows++;
        }
        CU_ASSERT_EQUAL(rc, 0);
        CU_ASSERT_EQUAL(rows, ROWS);
        for (int r = 0; r < rows; r++)
            for (int j = 0; j < 4; j++)
                wrong += seen[r][j] != -1 && (r + ks[j] >= (size_t)rows || seen[r][j] != ids[r + ks[j]]);
        CU_ASSERT_EQUAL(wrong, 0);
        CU_ASSERT_EQUAL(shown[0], ROWS);   /* the row itself: always at hand */
        CU_ASSERT(shown[2] > ROWS / 2 && hidden[2] > 0);   /* eight ahead: but at a batch's end */
        CU_ASSERT(hidden[3] > 0);
        CU_ASSERT_PTR_NULL(tr_sql_ahead_peek(a, (size_t)-1));
        tr_sql_ahead_stop(a);
        sqlite3_finalize(st);
        sqlite3_close(peer);
        sqlite3_close(db);
    }
}

TR_SUITE(sql_ahead, {"merged read-aheads give every row in order", test_merge},
         {"blocks of ids cover the span once, at the ends of int64", test_blocks_edges},
         {"a failing step is reported", test_failure},
         {"a peek ahead shows the row next() gives later", test_peek});
