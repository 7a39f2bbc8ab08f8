/* Bulk-loaded b-trees (lib/btree_append.h): files SQLite's integrity_check
 * passes and reads back as the rows and index orders that INSERT and CREATE
 * INDEX give, across page sizes, row counts around page boundaries, rows left
 * out, rows on overflow pages, large rowids, the lock-byte page, and SQLite
 * writing on afterwards; the same bytes whichever way the pages reach the
 * file, whatever fails on the way; and the inputs the writer refuses. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/btree_append.h"
#include "tests/unit/unit.h"

#define TEXT_MAX 80   /* an index entry of (s, rowid) fits a 512-byte page */
#define T_COLS 6      /* t: id, a, s, x, b, c */

typedef struct {
    int64_t id, a;
    int a_null, kept;
    char s[TEXT_MAX + 1];
    size_t xlen;   /* x: a text of xlen bytes, on overflow pages past a page */
    int64_t b, c;  /* integers after the texts: a long x is followed by their stores */
} row;

typedef struct {
    row *rows;
    size_t *by_a, *by_s;   /* kept row indices in each index's order */
    size_t kept;
    char *x;               /* the bytes of every x */
} table;

#define X_MAX 70000

/* Integers of every stored width, 0 and 1, NULLs, text of 0..80 bytes, a
 * few rows 10 to 70,000 bytes long; every fifth row left out. */
static void make_row(row *r, size_t i, size_t n)
{
    r->kept = i % 5 != 3;
    r->xlen = i % 97 == 4 || i == 4 ? (i * 7919 + 1000) % X_MAX : 0;
    r->id = (int64_t)i * 3 + 1 + (i >= n / 2 ? ((int64_t)1 << 40) : 0);
    r->a_null = i % 7 == 0;
    r->b = ((int64_t)i << 41) + (int64_t)i;
    r->c = i % 3 == 0 ? (int64_t)(i % 2) : -(int64_t)i * 65537;
    switch (i % 7) {
    case 1: r->a = 0; break;
    case 2: r->a = 1; break;
    case 3: r->a = -(int64_t)i * 977; break;
    case 4: r->a = (int64_t)i << 33; break;
    case 5: r->a = INT64_MIN + (int64_t)(i % 5); break;
    default: r->a = INT64_MAX - (int64_t)(i % 3); break;
    }
    size_t len = (i * 37) % (TEXT_MAX + 1);
    for (size_t k = 0; k < len; k++)
        r->s[k] = (char)('a' + (i * 7 + k * 13) % 26);
    r->s[len] = '\0';
}

static const row *sort_rows;

static int cmp_a(const void *x, const void *y)
{
    const row *p = &sort_rows[*(const size_t *)x], *q = &sort_rows[*(const size_t *)y];
    if (p->a_null != q->a_null)
        return p->a_null ? -1 : 1;
    if (!p->a_null && p->a != q->a)
        return p->a < q->a ? -1 : 1;
    return (p->id > q->id) - (p->id < q->id);
}

static int cmp_s(const void *x, const void *y)
{
    const row *p = &sort_rows[*(const size_t *)x], *q = &sort_rows[*(const size_t *)y];
    int c = strcmp(p->s, q->s);
    return c ? c : (p->id > q->id) - (p->id < q->id);
}

static void table_make(table *t, size_t n)
{
    t->rows = calloc(n ? n : 1, sizeof *t->rows);
    t->by_a = calloc(n ? n : 1, sizeof *t->by_a);
    t->by_s = calloc(n ? n : 1, sizeof *t->by_s);
    t->x = malloc(X_MAX);
    for (size_t k = 0; k < X_MAX; k++)
        t->x[k] = (char)('A' + (k * 31 + k / 7) % 26);
    t->kept = 0;
    for (size_t i = 0; i < n; i++) {
        make_row(&t->rows[i], i, n);
        if (t->rows[i].kept)
            t->by_a[t->kept] = t->by_s[t->kept] = i, t->kept++;
    }
    sort_rows = t->rows;
    qsort(t->by_a, t->kept, sizeof *t->by_a, cmp_a);
    qsort(t->by_s, t->kept, sizeof *t->by_s, cmp_s);
}

static void table_free(table *t)
{
    free(t->rows);
    free(t->by_a);
    free(t->by_s);
    free(t->x);
}

static int fill_row(const void *ctx, size_t i, tr_cell *c)
{
    const table *t = ctx;
    const row *r = &t->rows[i];
    if (!r->kept)
        return 0;
    tr_cell_int(&c[0], r->id);
    if (r->a_null)
        tr_cell_null(&c[1]);
    else
        tr_cell_int(&c[1], r->a);
    tr_cell_text(&c[2], r->s, -1);
    tr_cell_text(&c[3], t->x, (int)r->xlen);
    tr_cell_int(&c[4], r->b);
    tr_cell_int(&c[5], r->c);
    return 1;
}

static int fill_by_a(const void *ctx, size_t k, tr_cell *c)
{
    const table *t = ctx;
    const row *r = &t->rows[t->by_a[k]];
    if (r->a_null)
        tr_cell_null(&c[0]);
    else
        tr_cell_int(&c[0], r->a);
    tr_cell_int(&c[1], r->id);
    return 1;
}

static int fill_by_s(const void *ctx, size_t k, tr_cell *c)
{
    const table *t = ctx;
    const row *r = &t->rows[t->by_s[k]];
    tr_cell_text(&c[0], r->s, -1);
    tr_cell_int(&c[1], r->id);
    return 1;
}

static char *query_text(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    char *v = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = strdup(sqlite3_column_text(st, 0) ? (const char *)sqlite3_column_text(st, 0) : "");
    sqlite3_finalize(st);
    return v;
}

static const char *schema =
    "CREATE TABLE filler(x TEXT);"
    "WITH RECURSIVE c(k) AS (SELECT 1 UNION ALL SELECT k + 1 FROM c WHERE k < 40) "
    "INSERT INTO filler SELECT printf('%.*c', 100, 'x') FROM c;"
    "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, s TEXT, x TEXT, b INTEGER, c INTEGER);"
    "CREATE INDEX t_a ON t(a); CREATE INDEX t_s ON t(s)";

/* A database with the schema above and t empty, `reserve` bytes at the end
 * of each page: the roots of t, t_a, t_s. */
static int make_empty_reserved(const char *path, int page_size, int reserve, const char *mode,
                               uint32_t root[3])
{
    sqlite3 *db = NULL;
    remove(path);
    char sql[256];
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d; PRAGMA journal_mode=%s; PRAGMA encoding='%s'",
             page_size, mode, strcmp(mode, "UTF16") == 0 ? "UTF-16" : "UTF-8");
    if (strcmp(mode, "UTF16") == 0)
        mode = "OFF";
    int ok = sqlite3_open(path, &db) == SQLITE_OK && sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK
             && (!reserve || sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) == SQLITE_OK)
             && sqlite3_exec(db, schema, NULL, NULL, NULL) == SQLITE_OK;
    const char *names[] = {"t", "t_a", "t_s"};
    for (int i = 0; ok && i < 3; i++) {
        snprintf(sql, sizeof sql, "SELECT rootpage FROM sqlite_schema WHERE name = '%s'", names[i]);
        root[i] = (uint32_t)tr_unit_query_int(db, sql);
    }
    return sqlite3_close(db) == SQLITE_OK && ok;
}

static int make_empty(const char *path, int page_size, const char *mode, uint32_t root[3])
{
    return make_empty_reserved(path, page_size, 0, mode, root);
}

/* The same rows through INSERT, the indexes through CREATE INDEX. */
static int make_reference(const char *path, const table *t, size_t n)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    remove(path);
    int ok = sqlite3_open(path, &db) == SQLITE_OK
             && sqlite3_exec(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, s TEXT, x TEXT, b INTEGER,"
                             " c INTEGER); BEGIN",
                             NULL, NULL, NULL) == SQLITE_OK
             && sqlite3_prepare_v2(db, "INSERT INTO t VALUES(?, ?, ?, ?, ?, ?)", -1, &st, NULL) == SQLITE_OK;
    for (size_t i = 0; ok && i < n; i++) {
        const row *r = &t->rows[i];
        if (!r->kept)
            continue;
        sqlite3_bind_text(st, 4, t->x, (int)r->xlen, SQLITE_STATIC);
        sqlite3_bind_int64(st, 1, r->id);
        if (r->a_null)
            sqlite3_bind_null(st, 2);
        else
            sqlite3_bind_int64(st, 2, r->a);
        sqlite3_bind_text(st, 3, r->s, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 5, r->b);
        sqlite3_bind_int64(st, 6, r->c);
        ok = sqlite3_step(st) == SQLITE_DONE && sqlite3_reset(st) == SQLITE_OK;
    }
    sqlite3_finalize(st);
    ok = ok && sqlite3_exec(db, "COMMIT; CREATE INDEX t_a ON t(a); CREATE INDEX t_s ON t(s)",
                            NULL, NULL, NULL) == SQLITE_OK;
    return sqlite3_close(db) == SQLITE_OK && ok;
}

static int load(const char *path, const table *t, size_t n, const uint32_t root[3], tr_error *err)
{
    tr_btree_file *f = NULL;
    tr_status st = tr_btree_open(&f, path, err);
    if (st == TR_OK && (st = tr_btree_table(f, root[0], T_COLS, n, fill_row, t, err)) == TR_OK
        && (st = tr_btree_index(f, root[1], 2, t->kept, fill_by_a, t, err)) == TR_OK
        && (st = tr_btree_index(f, root[2], 2, t->kept, fill_by_s, t, err)) == TR_OK)
        return tr_btree_close(f, err) == TR_OK;
    tr_btree_abort(f);
    return 0;
}

static int integrity_ok(sqlite3 *db)
{
    char *r = query_text(db, "PRAGMA integrity_check");
    int ok = r && strcmp(r, "ok") == 0;
    if (!ok)
        fprintf(stderr, "integrity_check: %.300s\n", r ? r : "(none)");
    free(r);
    return ok;
}

static int same_text(sqlite3 *db, const char *sql_main, const char *sql_ref)
{
    char *a = query_text(db, sql_main), *b = query_text(db, sql_ref);
    int same = a && b && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

/* Loads n rows into a file of the page size (reserve bytes of each unused),
 * then checks it against the reference and writes on it with SQLite. */
static void check_load_reserved(int page_size, int reserve, size_t n)
{
    char path[512], ref[512];
    snprintf(path, sizeof path, "%s/btree-%d-%zu.db", tr_unit_tmpdir(), page_size, n);
    snprintf(ref, sizeof ref, "%s/btree-ref.db", tr_unit_tmpdir());
    table t;
    table_make(&t, n);
    uint32_t root[3];
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_FATAL(make_empty_reserved(path, page_size, reserve, "OFF", root));
    CU_ASSERT_FATAL(make_reference(ref, &t, n));
    int loaded = load(path, &t, n, root, &err);
    if (!loaded)
        fprintf(stderr, "page size %d, %zu rows: %s\n", page_size, n, err.msg);
    CU_ASSERT_FATAL(loaded);

    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    char attach[600];
    snprintf(attach, sizeof attach, "ATTACH '%s' AS ref", ref);
    CU_ASSERT_FATAL(sqlite3_exec(db, attach, NULL, NULL, NULL) == SQLITE_OK);
    CU_ASSERT(integrity_ok(db));
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM main.t"), (int64_t)t.kept);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM (SELECT id, a, s, x, b, c, typeof(a), typeof(c) FROM main.t "
                                  "EXCEPT SELECT id, a, s, x, b, c, typeof(a), typeof(c) FROM ref.t)"), 0);
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM (SELECT * FROM ref.t EXCEPT SELECT * FROM main.t)"), 0);
    /* each index in its order, and lookups through it */
    CU_ASSERT(same_text(db, "SELECT group_concat(id) FROM (SELECT id FROM main.t INDEXED BY t_a ORDER BY a, id)",
                        "SELECT group_concat(id) FROM (SELECT id FROM ref.t INDEXED BY t_a ORDER BY a, id)"));
    CU_ASSERT(same_text(db, "SELECT group_concat(id) FROM (SELECT id FROM main.t INDEXED BY t_s ORDER BY s, id)",
                        "SELECT group_concat(id) FROM (SELECT id FROM ref.t INDEXED BY t_s ORDER BY s, id)"));
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM main.t INDEXED BY t_a WHERE a = 0"),
                    tr_unit_query_int(db, "SELECT count(*) FROM ref.t WHERE a = 0"));
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT count(*) FROM main.t INDEXED BY t_a WHERE a IS NULL"),
                    tr_unit_query_int(db, "SELECT count(*) FROM ref.t WHERE a IS NULL"));
    for (size_t i = 0; i < n; i += 1 + n / 7) {
        char sql[256];
        snprintf(sql, sizeof sql, "SELECT coalesce(a, 0) FROM main.t WHERE id = %lld", (long long)t.rows[i].id);
        CU_ASSERT_EQUAL(tr_unit_query_int(db, sql), !t.rows[i].kept ? -1 : t.rows[i].a_null ? 0 : t.rows[i].a);
    }
    CU_ASSERT_EQUAL(tr_unit_query_int(db, "SELECT sum(length(x)) FROM main.t"), tr_unit_query_int(db, "SELECT sum(length(x)) FROM ref.t"));
    /* SQLite writes on: rows into the loaded trees and pages past them */
    CU_ASSERT(sqlite3_exec(db, "DETACH ref; BEGIN; INSERT INTO t(a, s) VALUES(5, 'new'), (NULL, 'zz');"
                           "INSERT INTO filler SELECT s FROM t LIMIT 3000; DELETE FROM t WHERE id % 5 = 0; "
                           "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    CU_ASSERT(integrity_ok(db));
    sqlite3_close(db);
    remove(path);
    table_free(&t);
}

static void check_load(int page_size, size_t n)
{
    check_load_reserved(page_size, 0, n);
}

static void test_btree_loads(void)
{
    static const int page_sizes[] = {512, 1024, 4096, 16384, 65536};
    /* 121 and 205 at 512-byte pages, 408 at 1024 leave one child for the last
     * interior page of a level, which must take one from the page before */
    static const size_t counts[] = {0, 1, 2, 3, 9, 10, 11, 57, 121, 205, 300, 408, 1201, 20000};
    for (size_t p = 0; p < sizeof page_sizes / sizeof page_sizes[0]; p++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            check_load(page_sizes[p], counts[c]);
    /* bytes reserved at each page's end: a usable size of 480 (SQLite's least) and 992 */
    check_load_reserved(512, 32, 1201);
    check_load_reserved(1024, 32, 1201);
}

/* The page holding the pending byte is skipped, as SQLite skips it. */
static void test_btree_lock_page(void)
{
    int old = sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, 0x8000);
    tr_btree_set_pending_byte(0x8000);
    check_load(512, 20000);    /* page 65, past the filler table: inside the load */
    check_load(1024, 3000);
    sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, old);
    tr_btree_set_pending_byte(0x40000000u);
}

/* The indexes built apart (on another thread, in rundb.c), then appended
 * after the table: the file's bytes are those of the load in place. */
static int load_apart(const char *path, const table *t, size_t n, const uint32_t root[3], tr_error *err)
{
    tr_btree_file *a = NULL, *s = NULL, *f = NULL;
    tr_status st = tr_btree_open_apart(&a, path, err);
    if (st == TR_OK && (st = tr_btree_index(a, root[1], 2, t->kept, fill_by_a, t, err)) == TR_OK
        && (st = tr_btree_open_apart(&s, path, err)) == TR_OK
        && (st = tr_btree_index(s, root[2], 2, t->kept, fill_by_s, t, err)) == TR_OK
        && (st = tr_btree_open(&f, path, err)) == TR_OK
        && (st = tr_btree_table(f, root[0], T_COLS, n, fill_row, t, err)) == TR_OK) {
        st = tr_btree_append_apart(f, a, err);
        a = NULL;
        if (st == TR_OK)
            st = tr_btree_append_apart(f, s, err);
        s = NULL;
        if (st == TR_OK) {
            st = tr_btree_close(f, err);
            f = NULL;
        }
    }
    tr_btree_abort(a);
    tr_btree_abort(s);
    tr_btree_abort(f);
    return st == TR_OK;
}

static int same_bytes(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    int same = fa && fb;
    while (same) {
        int ca = getc(fa), cb = getc(fb);
        same = ca == cb;
        if (ca == EOF)
            break;
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

static void check_apart(int page_size, size_t n)
{
    char in_place[512], apart[512];
    snprintf(in_place, sizeof in_place, "%s/btree-in-place.db", tr_unit_tmpdir());
    snprintf(apart, sizeof apart, "%s/btree-apart.db", tr_unit_tmpdir());
    table t;
    table_make(&t, n);
    uint32_t root[3], root2[3];
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_FATAL(make_empty(in_place, page_size, "OFF", root) && make_empty(apart, page_size, "OFF", root2));
    CU_ASSERT_FATAL(same_bytes(in_place, apart));
    CU_ASSERT_FATAL(load(in_place, &t, n, root, &err));
    int loaded = load_apart(apart, &t, n, root, &err);
    if (!loaded)
        fprintf(stderr, "apart, page size %d, %zu rows: %s\n", page_size, n, err.msg);
    CU_ASSERT(loaded);
    int same = same_bytes(in_place, apart);
    if (!same)
        fprintf(stderr, "apart, page size %d, %zu rows: not the same bytes\n", page_size, n);
    CU_ASSERT(same);
    sqlite3 *db = NULL;
    CU_ASSERT_FATAL(sqlite3_open(apart, &db) == SQLITE_OK);
    CU_ASSERT(integrity_ok(db));
    sqlite3_close(db);
    remove(in_place);
    remove(apart);
    table_free(&t);
}

static void test_btree_apart(void)
{
    static const int page_sizes[] = {512, 4096, 65536};
    static const size_t counts[] = {0, 1, 121, 1201, 20000};
    for (size_t p = 0; p < sizeof page_sizes / sizeof page_sizes[0]; p++)
        for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++)
            check_apart(page_sizes[p], counts[c]);
    /* at 512-byte pages the table is pages 16-13000, t_a 13001-13442, t_s
     * 13443-15165: the lock-byte page in the table, at the first page after
     * it, within t_a, within t_s */
    static const uint32_t pending[] = {0x8000, 13000 * 512, 13200 * 512, 14000 * 512};
    int old = sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, 0x8000);
    for (size_t i = 0; i < sizeof pending / sizeof pending[0]; i++) {
        sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, pending[i]);
        tr_btree_set_pending_byte(pending[i]);
        check_apart(512, 20000);
    }
    sqlite3_test_control(SQLITE_TESTCTRL_PENDING_BYTE, old);
    tr_btree_set_pending_byte(0x40000000u);
}

/* Writes and reads past the page cache that fail or come short, on a
 * descriptor opened without O_DIRECT so that any file system runs them.
 * The direct writes run on the writers' threads, several at once. */
#define LAST_WRITE -2   /* the last direct write, as counted in a run where none fails */
enum { FAKE_PASS, FAKE_FAIL, FAKE_SHORT, FAKE_SHORT_ODD, FAKE_ALWAYS_EIO, FAKE_READ_FAIL, FAKE_READ_SHORT };
static struct {
    int mode, at;               /* what goes wrong, at which call */
    atomic_int writes, reads;   /* direct calls so far */
    atomic_int cached;          /* writes through the page cache */
    atomic_size_t direct_bytes, cached_bytes;
    atomic_int hit;             /* times it went wrong */
    /* how much slower each way is made: each cached write by cached_charge
     * ns of the writer's clock (fake_now(): no time passes), the first
     * direct_slow_calls direct writes by direct_delay µs of sleep */
    atomic_llong clock_ahead;
    long long cached_charge;
    useconds_t direct_delay;
    int direct_slow_calls;
} fake;

/* The writer's clock: the real one, put ahead by the cached writes' charges. */
static double fake_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec + (double)atomic_load(&fake.clock_ahead);
}

static void fake_reset(int mode, int at)
{
    fake.mode = mode;
    fake.at = at;
    fake.cached_charge = 0;
    fake.direct_delay = 0;
    fake.direct_slow_calls = 0;
    atomic_store(&fake.writes, 0);
    atomic_store(&fake.reads, 0);
    atomic_store(&fake.cached, 0);
    atomic_store(&fake.direct_bytes, 0);
    atomic_store(&fake.cached_bytes, 0);
    atomic_store(&fake.hit, 0);
}

static ssize_t fake_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    int k = fake.writes++;
    if (fake.mode == FAKE_ALWAYS_EIO || (fake.mode == FAKE_FAIL && k == fake.at)) {
        fake.hit++;
        errno = fake.mode == FAKE_FAIL ? EINVAL : EIO;
        return -1;
    }
    if (k == fake.at && (fake.mode == FAKE_SHORT || fake.mode == FAKE_SHORT_ODD)) {
        fake.hit++;
        n = fake.mode == FAKE_SHORT_ODD ? (n > 100 ? 100 : n) : n > 512 ? n / 1024 * 512 : n;
    }
    return pwrite(fd, buf, n, off);
}

/* The way the writer is not to pick is made far slower than the other, so
 * that a loaded machine's delays cannot blur the choice: a cached write by
 * a charge to the clock, which costs the test no time; a direct write by a
 * real sleep (it costs the writer only its wait for it, beside the next
 * buffer), longer than a buffer takes to make even under a sanitizer. */
static void fake_slower(long long cached_charge_ns, useconds_t direct_delay, int direct_slow_calls)
{
    fake.cached_charge = cached_charge_ns;
    fake.direct_delay = direct_delay;
    fake.direct_slow_calls = direct_slow_calls;
}

static ssize_t counted_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    atomic_fetch_add(&fake.clock_ahead, fake.cached_charge);
    fake.cached++;
    fake.cached_bytes += n;
    return pwrite(fd, buf, n, off);
}

static ssize_t counted_direct_pwrite(int fd, const void *buf, size_t n, off_t off)
{
    if (fake.writes++ < fake.direct_slow_calls)
        usleep(fake.direct_delay);
    fake.direct_bytes += n;
    return pwrite(fd, buf, n, off);
}

static ssize_t fake_pread(int fd, void *buf, size_t n, off_t off)
{
    int k = fake.reads++;
    if (k == fake.at && fake.mode == FAKE_READ_FAIL) {
        fake.hit++;
        errno = EIO;
        return -1;
    }
    if (k == fake.at && fake.mode == FAKE_READ_SHORT && n > 512) {
        fake.hit++;
        n /= 2;
    }
    return pread(fd, buf, n, off);
}

/* A fresh file of the schema, loaded in place or with its indexes apart. */
static int load_fresh(const char *path, int page_size, const table *t, size_t n, int apart)
{
    uint32_t root[3];
    tr_error err;
    tr_error_clear(&err);
    int ok = make_empty(path, page_size, "OFF", root)
             && (apart ? load_apart(path, t, n, root, &err) : load(path, t, n, root, &err));
    if (!ok)
        fprintf(stderr, "page size %d, %zu rows%s: %s\n", page_size, n, apart ? ", apart" : "", err.msg);
    return ok;
}

/* The bytes of a load through the page cache whatever happens past it: with
 * O_DIRECT where the test directory's file system takes it, and with every
 * kind of failed or short direct call, after which the writer goes on
 * through the page cache and calls past it no more. */
static void test_btree_direct_io(void)
{
    static const int page_sizes[] = {512, 16384};
    static const struct { int mode, at; } cases[] = {
        {FAKE_PASS, -1}, {FAKE_FAIL, 0}, {FAKE_FAIL, 2}, {FAKE_FAIL, LAST_WRITE}, {FAKE_SHORT, 0}, {FAKE_SHORT, 1},
        {FAKE_SHORT_ODD, 1}, {FAKE_ALWAYS_EIO, 0}, {FAKE_READ_FAIL, 0}, {FAKE_READ_FAIL, 1},
        {FAKE_READ_SHORT, 0}};
    char ref[512], path[512];
    snprintf(ref, sizeof ref, "%s/btree-buffered.db", tr_unit_tmpdir());
    snprintf(path, sizeof path, "%s/btree-direct.db", tr_unit_tmpdir());
    const size_t n = 20000;
    table t;
    table_make(&t, n);
    for (size_t p = 0; p < sizeof page_sizes / sizeof page_sizes[0]; p++) {
        int ps = page_sizes[p];
        tr_btree_set_io(&(tr_btree_io){0, NULL, NULL, pwrite});
        CU_ASSERT_FATAL(load_fresh(ref, ps, &t, n, 0));
        /* the real thing, and each way made the slower */
        for (int apart = 0; apart <= 1; apart++) {
            tr_btree_set_io(NULL);
            CU_ASSERT(load_fresh(path, ps, &t, n, apart) && same_bytes(ref, path));
            tr_btree_set_io(&(tr_btree_io){0, counted_direct_pwrite, pread, counted_pwrite, fake_now});
            fake_reset(FAKE_PASS, -1);
            fake_slower(0, 50000, INT_MAX);
            CU_ASSERT(load_fresh(path, ps, &t, n, apart) && same_bytes(ref, path));
            /* at 16 KiB pages a writer has a few flushes, two of them direct
             * before the first is timed (the second's wait) */
            CU_ASSERT(fake.writes >= 1 && fake.direct_bytes * (ps == 512 ? 2 : 1) < fake.cached_bytes);
            fake_reset(FAKE_PASS, -1);
            fake_slower(50000000, 0, 0);
            CU_ASSERT(load_fresh(path, ps, &t, n, apart) && same_bytes(ref, path));
            CU_ASSERT(fake.cached >= 1 && fake.cached_bytes * 2 < fake.direct_bytes);
            if (ps == 512) {   /* enough flushes to see the change */
                /* direct slow at first (another job on the disk), then fast */
                fake_reset(FAKE_PASS, -1);
                fake_slower(20000000, 50000, 2);
                CU_ASSERT(load_fresh(path, ps, &t, n, apart) && same_bytes(ref, path));
                CU_ASSERT(fake.writes > 2 && fake.cached_bytes * 2 < fake.direct_bytes);
            }
        }
        int pass_writes[2] = {0, 0};
        for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
            for (int apart = 0; apart <= 1; apart++) {
                fake_reset(cases[c].mode, cases[c].at == LAST_WRITE ? pass_writes[apart] - 1 : cases[c].at);
                fake_slower(50000000, 0, 0);   /* the direct way taken but for the probes */
                tr_btree_set_io(&(tr_btree_io){0, fake_pwrite, fake_pread, counted_pwrite, fake_now});
                int same = load_fresh(path, ps, &t, n, apart) && same_bytes(ref, path);
                if (!same)
                    fprintf(stderr, "direct I/O case %zu, page size %d%s: not the same bytes\n", c, ps,
                            apart ? ", apart" : "");
                CU_ASSERT(same);
                int reading = fake.mode == FAKE_READ_FAIL || fake.mode == FAKE_READ_SHORT;
                int failing = fake.mode == FAKE_FAIL || fake.mode == FAKE_ALWAYS_EIO;
                CU_ASSERT(fake.hit == (fake.mode == FAKE_PASS || (reading && !apart) ? 0
                                       : fake.mode == FAKE_ALWAYS_EIO            ? fake.writes
                                                                                 : 1));
                if (!failing)   /* every buffer past the page cache */
                    CU_ASSERT(fake.writes > 2 && (!apart || fake.reads > 0));
                if (fake.mode == FAKE_PASS)
                    pass_writes[apart] = fake.writes;
                if (failing && !apart)   /* one writer: no direct call after its failure */
                    CU_ASSERT_EQUAL(fake.writes, fake.mode == FAKE_FAIL ? fake.at + 1 : 1);
            }
        }
    }
    tr_btree_set_io(NULL);
    remove(ref);
    remove(path);
    table_free(&t);
}

static int fill_reversed(const void *ctx, size_t i, tr_cell *c)
{
    (void)ctx;
    tr_cell_int(&c[0], 10 - (int64_t)i);
    tr_cell_null(&c[1]);
    tr_cell_null(&c[2]);
    return 1;
}

static int fill_entries_reversed(const void *ctx, size_t i, tr_cell *c)
{
    (void)ctx;
    tr_cell_null(&c[0]);
    tr_cell_int(&c[1], 10 - (int64_t)i);
    return 1;
}

static int fill_entry_long(const void *ctx, size_t i, tr_cell *c)
{
    static char text[200];
    (void)ctx;
    memset(text, 'x', sizeof text - 1);
    tr_cell_text(&c[0], text, -1);
    tr_cell_int(&c[1], (int64_t)i + 1);
    return 1;
}

static void test_btree_refusals(void)
{
    char path[512];
    snprintf(path, sizeof path, "%s/btree-bad.db", tr_unit_tmpdir());
    uint32_t root[3];
    tr_error err;
    tr_error_clear(&err);
    tr_btree_file *f = NULL;
    table t;
    table_make(&t, 50);
    /* rowids out of order, an index out of order, a row needing overflow pages */
    CU_ASSERT_FATAL(make_empty(path, 512, "OFF", root));
    CU_ASSERT_FATAL(tr_btree_open(&f, path, &err) == TR_OK);
    CU_ASSERT_EQUAL(tr_btree_table(f, root[0], 3, 5, fill_reversed, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not ascending"));
    CU_ASSERT_EQUAL(tr_btree_index(f, root[1], 2, 5, fill_entries_reversed, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "out of order"));
    /* an entry longer than a quarter page */
    CU_ASSERT_EQUAL(tr_btree_index(f, root[1], 2, 1, fill_entry_long, NULL, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "does not fit"));
    /* a root that is not an empty leaf of its kind */
    CU_ASSERT_EQUAL(tr_btree_index(f, root[0], 2, 50, fill_by_a, &t, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not an empty index"));
    CU_ASSERT_EQUAL(tr_btree_table(f, 1, T_COLS, 50, fill_row, &t, &err), TR_ERR_RUNTIME);
    tr_btree_abort(f);
    /* a loaded table cannot be loaded again */
    CU_ASSERT_FATAL(make_empty(path, 512, "OFF", root));
    CU_ASSERT_FATAL(load(path, &t, 50, root, &err));
    CU_ASSERT_FATAL(tr_btree_open(&f, path, &err) == TR_OK);
    CU_ASSERT_EQUAL(tr_btree_table(f, root[0], T_COLS, 50, fill_row, &t, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not an empty table"));
    tr_btree_abort(f);
    /* text in UTF-16 */
    CU_ASSERT_FATAL(make_empty(path, 4096, "UTF16", root));
    CU_ASSERT_EQUAL(tr_btree_open(&f, path, &err), TR_ERR_RUNTIME);
    /* files it does not write: WAL mode, not a database, no file */
    CU_ASSERT_FATAL(make_empty(path, 4096, "WAL", root));
    CU_ASSERT_EQUAL(tr_btree_open(&f, path, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "can append to"));
    FILE *fp = fopen(path, "w");
    CU_ASSERT_FATAL(fp != NULL);
    fputs("not a database\n", fp);
    fclose(fp);
    CU_ASSERT_EQUAL(tr_btree_open(&f, path, &err), TR_ERR_RUNTIME);
    remove(path);
    CU_ASSERT_EQUAL(tr_btree_open(&f, path, &err), TR_ERR_RUNTIME);
    CU_ASSERT_PTR_NULL(f);
    table_free(&t);
}

TR_SUITE(btree_append, {"loads checked against INSERT and CREATE INDEX", test_btree_loads},
         {"the lock-byte page is skipped", test_btree_lock_page},
         {"indexes built apart: the bytes of the load in place", test_btree_apart},
         {"pages past the page cache, failing or short: the same bytes", test_btree_direct_io},
         {"refused inputs", test_btree_refusals})
