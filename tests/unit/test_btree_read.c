/* lib/btree_read: the rows read from an SQLite file's pages against the rows
 * SQLite steps for the same statement, rowid by rowid and value by value
 * (type, integer, real bits, bytes), over page sizes 512 to 65536, reserved
 * bytes, one- to three-level trees, every stored integer width, reals (NaN
 * and infinities among them), texts, blobs, overflow chains on both sides of
 * the local-size boundaries, rowid gaps and extremes, deleted, updated and
 * altered rows, stored generated columns, STRICT tables, auto-vacuum and
 * WAL-mode files;
 * which statements make a plan and what it says; the files the reader
 * refuses; damaged files (no crash, an end within a bound, and no row that
 * differs from SQLite's); and lib/sql_ahead reading a file through it with
 * the cells that stepping gives, where it reads every row from the pages and
 * where it hands over to the statement midway. */
#include <fcntl.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/btree_read.h"
#include "lib/rundb.h"
#include "lib/sql_ahead.h"
#include "tests/unit/unit.h"

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/btr-%s.db", tr_unit_tmpdir(), name);
}

static int exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK)
        fprintf(stderr, "\n%.200s: %s\n", sql, msg ? msg : sqlite3_errstr(rc));
    sqlite3_free(msg);
    return rc == SQLITE_OK;
}

/* A new file at path of the page size, `reserve` bytes at the end of each page
 * unused, open to write; NULL on failure. */
static sqlite3 *create_db(const char *path, int page_size, int reserve)
{
    sqlite3 *db = NULL;
    char sql[160];
    remove(path);
    snprintf(sql, sizeof sql, "PRAGMA page_size=%d; PRAGMA journal_mode=MEMORY; PRAGMA synchronous=OFF",
             page_size);
    if (sqlite3_open(path, &db) != SQLITE_OK || !exec_ok(db, sql)
        || (reserve && sqlite3_file_control(db, "main", SQLITE_FCNTL_RESERVE_BYTES, &reserve) != SQLITE_OK)) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

/* Closes db; its file must have the page size and reserved bytes asked for,
 * or the layouts below would not be the ones they claim. */
static void close_checked(sqlite3 *db, const char *path, int page_size, int reserve)
{
    CU_ASSERT_EQUAL(sqlite3_close(db), SQLITE_OK);
    unsigned char h[24] = {0};
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fread(h, 1, sizeof h, f), sizeof h);
    fclose(f);
    unsigned ps = (unsigned)h[16] << 8 | h[17];
    CU_ASSERT_EQUAL(ps == 1 ? 65536 : ps, (unsigned)page_size);
    CU_ASSERT_EQUAL(h[20], reserve);
}

/* ---- reading both ways ---- */

/* 1 when v is what SQLite gives for column k of st's row; else 0, why in buf. */
static int same_value(sqlite3_stmt *st, int k, const tr_btree_value *v, char *why, size_t n)
{
    int type = sqlite3_column_type(st, k);
    if (v->type != type) {
        snprintf(why, n, "type %d, SQLite's %d", v->type, type);
        return 0;
    }
    if (type == SQLITE_INTEGER && v->i != sqlite3_column_int64(st, k)) {
        snprintf(why, n, "%lld, SQLite's %lld", (long long)v->i, (long long)sqlite3_column_int64(st, k));
        return 0;
    }
    if (type == SQLITE_FLOAT) {
        double r = sqlite3_column_double(st, k);
        if (memcmp(&r, &v->r, sizeof r) != 0) {   /* bits: -0.0 is not 0.0 */
            snprintf(why, n, "%.17g, SQLite's %.17g", v->r, r);
            return 0;
        }
    }
    if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
        const void *p = type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, k) : sqlite3_column_blob(st, k);
        int len = sqlite3_column_bytes(st, k);
        if (v->len != len || (len > 0 && (!v->p || memcmp(v->p, p, (size_t)len) != 0))) {
            snprintf(why, n, "%d bytes \"%.*s\", SQLite's %d \"%.*s\"", v->len, v->len > 40 ? 40 : v->len,
                     v->p ? (const char *)v->p : "", len, len > 40 ? 40 : len, p ? (const char *)p : "");
            return 0;
        }
    }
    return 1;
}

typedef struct {
    long rows;        /* rows the reader gave */
    int end;          /* its last result: 0 the end, -1 it gave up, 2 stopped at the cap */
    int opened;
    int differs;      /* a row unlike SQLite's at its position, one past SQLite's end, or an end before it */
    int sqlite_end;   /* SQLite's step after the rows compared (0: not stepped) */
} diff_result;

/* The plan's rows from the reader beside st's rows (st NULL: the reader's
 * alone), up to cap rows.  ids, where not NULL, steps each row's rowid in the
 * same order.  The first difference is printed under label. */
static diff_result diff_rows(const char *path, const tr_btree_plan *plan, sqlite3_stmt *st, sqlite3_stmt *ids,
                             long cap, const char *label)
{
    diff_result d = {0, -3, 0, 0, 0};
    tr_btree_reader *r = tr_btree_reader_open(path, plan);
    d.opened = r != NULL;
    if (!r)
        return d;
    tr_btree_value vals[TR_BTREE_READ_MAXCOLS];
    int live = st != NULL;   /* SQLite gives rows still */
    for (;;) {
        if (d.rows >= cap) {
            d.end = 2;
            break;
        }
        int64_t rowid = 0;
        int rc = tr_btree_reader_next(r, &rowid, vals);
        if (rc != 1) {
            d.end = rc;
            break;
        }
        d.rows++;
        char why[200] = "";
        int col = -1;
        for (int k = 0; k < plan->ncols; k++)
            if (plan->field[k] == TR_BTREE_ROWID && (vals[k].type != SQLITE_INTEGER || vals[k].i != rowid)) {
                snprintf(why, sizeof why, "a rowid column unlike the row's rowid");
                col = k;
            } else if (plan->field[k] == TR_BTREE_NULL && vals[k].type != SQLITE_NULL) {
                snprintf(why, sizeof why, "a NULL column of type %d", vals[k].type);
                col = k;
            }
        if (live) {
            int s = sqlite3_step(st);
            if (s != SQLITE_ROW) {
                live = 0;
                d.sqlite_end = s;
                if (s == SQLITE_DONE)
                    snprintf(why, sizeof why, "a row past SQLite's last");
            }
            for (int k = 0; live && col < 0 && k < plan->ncols; k++)
                if (!same_value(st, k, &vals[k], why, sizeof why))
                    col = k;
            if (live && ids && col < 0) {
                int s2 = sqlite3_step(ids);
                if (s2 != SQLITE_ROW || sqlite3_column_int64(ids, 0) != rowid)
                    snprintf(why, sizeof why, "rowid %lld, SQLite's %lld", (long long)rowid,
                             s2 == SQLITE_ROW ? (long long)sqlite3_column_int64(ids, 0) : -1LL);
            }
        }
        if (why[0] && !d.differs) {
            d.differs = 1;
            fprintf(stderr, "\n%s: row %ld (rowid %lld), column %d: %s\n", label, d.rows, (long long)rowid, col,
                    why);
        }
    }
    if (live)
        d.sqlite_end = sqlite3_step(st);
    if (live && d.end == 0 && d.sqlite_end == SQLITE_ROW && !d.differs) {
        d.differs = 1;   /* an end where SQLite has more rows would lose them */
        fprintf(stderr, "\n%s: the reader ended after %ld rows, SQLite has more\n", label, d.rows);
    }
    tr_btree_reader_close(r);
    return d;
}

/* sql over the file read both ways.  want_plan: 1 the statement must make a
 * plan (and the reader must open the file), 0 it must not, -1 either (where
 * it does, the rows must match).  A planned read must reach the end with
 * SQLite's rows and no more.  Returns the rows read; -1 without a plan. */
static long diff_sql(const char *path, const char *sql, const char *table, int want_plan)
{
    sqlite3 *db = NULL;
    CU_ASSERT_EQUAL_FATAL(tr_sqlite_open_ro(path, &db), SQLITE_OK);
    sqlite3_stmt *st = NULL, *ids = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "\n%s: %s\n", sql, sqlite3_errmsg(db));
        CU_FAIL("the statement prepares");
        sqlite3_close(db);
        return -1;
    }
    tr_btree_plan plan;
    int planned = tr_btree_plan_scan(st, sqlite3_column_count(st), &plan);
    if (want_plan >= 0 && planned != want_plan)
        fprintf(stderr, "\n%s: %s\n", sql, planned ? "made a plan" : "made no plan");
    CU_ASSERT(want_plan < 0 || planned == want_plan);
    long rows = -1;
    if (planned) {
        if (table) {
            char *q = sqlite3_mprintf("SELECT rowid FROM \"%w\" ORDER BY rowid", table);
            CU_ASSERT_EQUAL(sqlite3_prepare_v2(db, q, -1, &ids, NULL), SQLITE_OK);
            sqlite3_free(q);
        }
        diff_result d = diff_rows(path, &plan, st, ids, 50000000L, sql);
        if (want_plan > 0 && !d.opened)
            fprintf(stderr, "\n%s: the reader did not open %s\n", sql, path);
        CU_ASSERT(d.opened || want_plan < 0);
        if (d.opened) {
            if (d.end != 0)
                fprintf(stderr, "\n%s: the reader ended with %d after %ld rows\n", sql, d.end, d.rows);
            CU_ASSERT_EQUAL(d.end, 0);
            CU_ASSERT_FALSE(d.differs);
            CU_ASSERT_EQUAL(d.sqlite_end, SQLITE_DONE);
            rows = d.rows;
        }
    }
    sqlite3_finalize(ids);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

/* ---- the rows ---- */

static const int64_t widths[] = {
    0, 1, -1, 127, 128, -128, -129, 255, 32767, 32768, -32768, -32769, (1 << 23) - 1, 1 << 23,
    -(1 << 23) - 1, INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN, (int64_t)INT32_MIN - 1,
    ((int64_t)1 << 47) - 1, (int64_t)1 << 47, -((int64_t)1 << 47) - 1, (int64_t)1 << 55, INT64_MIN,
    INT64_MAX, INT64_MIN + 1, INT64_MAX - 1};
#define NWIDTHS ((int)(sizeof widths / sizeof widths[0]))

#define LONG_TEXT 70000
static char long_text[LONG_TEXT + 64];   /* texts start anywhere in the first 50 bytes */

static void make_long_text(void)
{
    for (int k = 0; k < LONG_TEXT + 64; k++)   /* letters, with two-byte UTF-8 now and then */
        long_text[k] = k % 53 == 51 ? (char)0xC3 : k % 53 == 52 ? (char)0xA9 : (char)('a' + (k * 7) % 26);
}

static int64_t row_id(int i, int n)
{
    if (i == 0)
        return INT64_MIN;
    if (i == n - 1)
        return INT64_MAX;
    if (i < n / 3)
        return -(int64_t)(n - i) * 1000;
    if (i < 2 * n / 3)
        return (int64_t)i * 3 + i % 2;
    return ((int64_t)1 << 40) + (int64_t)i * 7919;
}

/* n rows of t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c BLOB, d, e):
 * rowids from INT64_MIN to INT64_MAX with gaps, every integer width and
 * NULL in a, texts of 0..200 bytes (with long ones, 10,000 and 70,000 bytes,
 * where long_rows) in b, blobs of 0..59 bytes in c, and in d and e reals
 * (infinities, -0.0, denormals, integral ones), integers, texts and blobs. */
static int fill_t(sqlite3 *db, int n, int long_rows)
{
    static const double specials[] = {1e300, -1e-300, 0.0, -0.0, INFINITY, -INFINITY, DBL_MIN, 5e-324,
                                      DBL_MAX, 0.1};
    sqlite3_stmt *ins = NULL;
    int ok = exec_ok(db, "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c BLOB, d, e); BEGIN")
             && sqlite3_prepare_v2(db, "INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)", -1, &ins, NULL) == SQLITE_OK;
    for (int i = 0; ok && i < n; i++) {
        unsigned char blob[64];
        for (int k = 0; k < 64; k++)
            blob[k] = (unsigned char)(i * 31 + k * 7);
        sqlite3_bind_int64(ins, 1, row_id(i, n));
        if (i % 23 == 0)
            sqlite3_bind_null(ins, 2);
        else
            sqlite3_bind_int64(ins, 2, widths[i % NWIDTHS]);
        int blen = long_rows && i % 97 == 5 ? 10000 : long_rows && i % 389 == 7 ? LONG_TEXT : (i * 37) % 201;
        if (i % 13 == 0)
            sqlite3_bind_null(ins, 3);
        else
            sqlite3_bind_text(ins, 3, long_text + i % 50, blen, SQLITE_STATIC);
        if (i % 17 == 0)
            sqlite3_bind_null(ins, 4);
        else
            sqlite3_bind_blob(ins, 4, blob, i % 19 == 0 ? 0 : (i * 13) % 60, SQLITE_TRANSIENT);
        char text[32];
        snprintf(text, sizeof text, "d%d", i);
        switch (i % 8) {
        case 0: sqlite3_bind_double(ins, 5, i * 0.37 - 1000.125); break;
        case 1: sqlite3_bind_double(ins, 5, specials[(i / 8) % 10]); break;
        case 2: sqlite3_bind_int64(ins, 5, widths[(i / 8) % NWIDTHS]); break;
        case 3: sqlite3_bind_text(ins, 5, text, -1, SQLITE_TRANSIENT); break;
        case 4: sqlite3_bind_null(ins, 5); break;
        case 5: sqlite3_bind_blob(ins, 5, blob, 3, SQLITE_TRANSIENT); break;
        case 6: sqlite3_bind_double(ins, 5, 2.0); break;
        default: sqlite3_bind_int(ins, 5, i % 2); break;
        }
        if (i % 3)
            sqlite3_bind_int(ins, 6, i);
        else
            sqlite3_bind_double(ins, 6, i * 1.5);
        ok = sqlite3_step(ins) == SQLITE_DONE;
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    return ok && exec_ok(db, "COMMIT");
}

/* The statements every layout is read with: all columns, a subset out of
 * order, a NULL among fields, ORDER BY rowid, the rowid twice. */
static void diff_t(const char *path, int n)
{
    static const char *const sqls[] = {
        "SELECT * FROM t", "SELECT e, c, id, a FROM t", "SELECT a, NULL, c FROM t",
        "SELECT b, d FROM t ORDER BY rowid", "SELECT rowid, * FROM t"};
    for (size_t q = 0; q < sizeof sqls / sizeof sqls[0]; q++)
        CU_ASSERT_EQUAL(diff_sql(path, sqls[q], "t", 1), n);
}

static void test_layouts(void)
{
    static const int page_sizes[] = {512, 1024, 4096, 65536};
    static const int counts[] = {0, 1, 7, 400};
    make_long_text();
    for (size_t p = 0; p < sizeof page_sizes / sizeof page_sizes[0]; p++) {
        /* 33 bytes would leave a 512-byte page under SQLite's least usable size */
        int reserves[] = {0, 8, page_sizes[p] == 512 ? 32 : 33};
        for (size_t r = 0; r < 3; r++)
            for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
                char path[4096], name[64];
                snprintf(name, sizeof name, "layout-%d-%d-%d", page_sizes[p], reserves[r], counts[c]);
                path_of(path, sizeof path, name);
                sqlite3 *db = create_db(path, page_sizes[p], reserves[r]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(db);
                CU_ASSERT(fill_t(db, counts[c], page_sizes[p] <= 4096));
                close_checked(db, path, page_sizes[p], reserves[r]);
                diff_t(path, counts[c]);
                remove(path);
            }
    }
}

/* ---- the shape of a file, from its pages (fileformat2.html) ---- */

typedef struct {
    unsigned char *b;
    size_t len;
    unsigned ps, usable;
    uint32_t npages;
} image;

static unsigned get2(const unsigned char *p) { return (unsigned)p[0] << 8 | p[1]; }
static uint32_t get4(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static void put4(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16), p[2] = (unsigned char)(v >> 8),
    p[3] = (unsigned char)v;
}

static unsigned varint(const unsigned char *p, uint64_t *v)
{
    uint64_t x = 0;
    for (unsigned i = 0; i < 8; i++) {
        x = x << 7 | (p[i] & 0x7F);
        if (!(p[i] & 0x80)) {
            *v = x;
            return i + 1;
        }
    }
    *v = x << 8 | p[8];
    return 9;
}

static int load_image(const char *path, image *im)
{
    FILE *f = fopen(path, "rb");
    memset(im, 0, sizeof *im);
    if (!f)
        return 0;
    fseek(f, 0, SEEK_END);
    im->len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    im->b = malloc(im->len);
    int ok = im->b && fread(im->b, 1, im->len, f) == im->len;
    fclose(f);
    if (!ok)
        return 0;
    unsigned ps = get2(im->b + 16);
    im->ps = ps == 1 ? 65536 : ps;
    im->usable = im->ps - im->b[20];
    im->npages = (uint32_t)(im->len / im->ps);
    return 1;
}

static unsigned char *page_of(const image *im, uint32_t pgno) { return im->b + (size_t)(pgno - 1) * im->ps; }
static unsigned hdr_of(uint32_t pgno) { return pgno == 1 ? 100 : 0; }

/* Offset in its page of cell i of page pgno. */
static unsigned cell_of(const image *im, uint32_t pgno, unsigned i)
{
    const unsigned char *p = page_of(im, pgno) + hdr_of(pgno);
    return get2(p + (p[0] == 0x0D ? 8 : 12) + 2 * i);
}

/* How many of a table leaf cell's payload bytes stay on its page. */
static uint64_t local_of(unsigned usable, uint64_t payload)
{
    uint64_t max_local = usable - 35, min_local = (usable - 12) * 32 / 255 - 23;
    if (payload <= max_local)
        return payload;
    uint64_t k = min_local + (payload - min_local) % (usable - 4);
    return k <= max_local ? k : min_local;
}

/* What a walk of a table's tree found. */
typedef struct {
    int depth;
    uint32_t interior[64];   /* interior pages, root first */
    int ninterior;
    uint32_t leaf[4096];
    int nleaves;
    int freeblocks, fragmented;     /* leaves with a freeblock; with fragmented bytes */
    uint32_t ovf_leaf;              /* a leaf holding a cell with overflow pages */
    unsigned ovf_ptr;               /* offset in that leaf of the cell's overflow page number */
    uint32_t ovf_chain[2];          /* the first pages of two chains of two pages or more */
    int nchains;
} tree_shape;

static void walk(const image *im, uint32_t pgno, int depth, tree_shape *t)
{
    if (pgno < 1 || pgno > im->npages || depth > 20)
        return;
    const unsigned char *p = page_of(im, pgno) + hdr_of(pgno);
    unsigned n = get2(p + 3);
    if (depth > t->depth)
        t->depth = depth;
    if (p[0] == 0x05) {
        if (t->ninterior < 64)
            t->interior[t->ninterior++] = pgno;
        for (unsigned i = 0; i < n; i++)
            walk(im, get4(page_of(im, pgno) + cell_of(im, pgno, i)), depth + 1, t);
        walk(im, get4(p + 8), depth + 1, t);
        return;
    }
    if (p[0] != 0x0D || t->nleaves >= 4096)
        return;
    t->leaf[t->nleaves++] = pgno;
    t->freeblocks += get2(p + 1) != 0;
    t->fragmented += p[7] != 0;
    for (unsigned i = 0; i < n; i++) {
        unsigned off = cell_of(im, pgno, i);
        uint64_t size, rowid;
        unsigned k = varint(page_of(im, pgno) + off, &size);
        k += varint(page_of(im, pgno) + off + k, &rowid);
        uint64_t local = local_of(im->usable, size);
        if (local == size)
            continue;
        uint32_t first = get4(page_of(im, pgno) + off + k + local);
        if (!t->ovf_leaf) {
            t->ovf_leaf = pgno;
            t->ovf_ptr = off + k + (unsigned)local;
        }
        if (t->nchains < 2 && size - local > im->usable - 4)
            t->ovf_chain[t->nchains++] = first;
    }
}

static uint32_t root_of(const char *path, const char *table)
{
    sqlite3 *db = NULL;
    char sql[128];
    snprintf(sql, sizeof sql, "SELECT rootpage FROM sqlite_master WHERE name = '%s'", table);
    uint32_t root = 0;
    if (tr_sqlite_open_ro(path, &db) == SQLITE_OK)
        root = (uint32_t)tr_unit_query_int(db, sql);
    sqlite3_close(db);
    return root;
}

static int shape_of(const char *path, const char *table, tree_shape *t, image *im)
{
    memset(t, 0, sizeof *t);
    uint32_t root = root_of(path, table);
    if (!load_image(path, im) || root < 1)
        return 0;
    walk(im, root, 1, t);
    return 1;
}

/* ---- layouts ---- */

/* 50,000 small rows on 512-byte pages: a root over interior pages over leaves. */
static void test_three_levels(void)
{
    char path[4096];
    path_of(path, sizeof path, "deep");
    sqlite3 *db = create_db(path, 512, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "CREATE TABLE s(id INTEGER PRIMARY KEY, v INTEGER, w TEXT);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50000)"
                          " INSERT INTO s SELECT i * 2, i * i - 40000, substr('abcdefghij', 1, i % 11) FROM c"));
    close_checked(db, path, 512, 0);
    tree_shape t;
    image im;
    CU_ASSERT_FATAL(shape_of(path, "s", &t, &im));
    CU_ASSERT(t.depth >= 3);
    free(im.b);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM s", "s", 1), 50000);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT w, v FROM s ORDER BY rowid", "s", 1), 50000);
    remove(path);
}

/* Bytes of a record of one text or blob of len bytes after a NULL rowid alias. */
static uint64_t payload_of(uint64_t len)
{
    uint64_t type = 2 * len + 13, n = 1;
    while (type >>= 7)
        n++;
    return 2 + n + len;
}

/* Payloads on each side of where a leaf cell starts to spill, and of where
 * the bytes kept on the page change from the least to the remainder. */
static void check_overflow(int page_size, int reserve, int sweep)
{
    char path[4096], name[64];
    snprintf(name, sizeof name, "overflow-%d-%d", page_size, reserve);
    path_of(path, sizeof path, name);
    sqlite3 *db = create_db(path, page_size, reserve);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    sqlite3_stmt *ins = NULL;
    CU_ASSERT_FATAL(exec_ok(db, "CREATE TABLE ov(id INTEGER PRIMARY KEY, x); BEGIN"));
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "INSERT INTO ov(x) VALUES (?)", -1, &ins, NULL), SQLITE_OK);
    uint64_t u = (uint64_t)(page_size - reserve), x = u - 35, m = (u - 12) * 32 / 255 - 23;
    uint64_t bounds[6] = {x, m + (u - 4), x + (u - 4), m + 2 * (u - 4), x + 2 * (u - 4), 0};
    uint64_t hi = sweep ? x + 2 * (u - 4) + 40 : x + (u - 4) + 40;
    char *buf = malloc(hi + 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(buf);
    for (uint64_t k = 0; k <= hi; k++)
        buf[k] = (char)('A' + k % 26);
    int rows = 0;
    for (uint64_t len = x > 60 ? x - 60 : 0; len <= hi; len++) {
        uint64_t p = payload_of(len);
        int near = 0;
        for (int b = 0; b < 5; b++)
            near |= p + 3 >= bounds[b] && p <= bounds[b] + 3;
        if (!near && !(sweep && len % 3 == 0))
            continue;
        if (rows % 2)
            sqlite3_bind_blob(ins, 1, buf, (int)len, SQLITE_STATIC);
        else
            sqlite3_bind_text(ins, 1, buf, (int)len, SQLITE_STATIC);
        CU_ASSERT_EQUAL(sqlite3_step(ins), SQLITE_DONE);
        sqlite3_reset(ins);
        rows++;
    }
    sqlite3_finalize(ins);
    free(buf);
    CU_ASSERT(exec_ok(db, "COMMIT"));
    close_checked(db, path, page_size, reserve);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM ov", "ov", 1), rows);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT x FROM ov", "ov", 1), rows);
    remove(path);
}

static void test_overflow_bounds(void)
{
    check_overflow(512, 0, 1);
    check_overflow(512, 32, 1);
    check_overflow(1024, 33, 1);
    check_overflow(4096, 0, 0);
    check_overflow(65536, 0, 0);
}

/* Rows deleted and inserted again, shorter and longer: leaves with
 * freeblocks and fragments; with auto-vacuum, pages moved about. */
static void check_churn(int page_size, int auto_vacuum)
{
    char path[4096], name[64];
    snprintf(name, sizeof name, "churn-%d-%d", page_size, auto_vacuum);
    path_of(path, sizeof path, name);
    sqlite3 *db = create_db(path, page_size, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, auto_vacuum ? "PRAGMA auto_vacuum=FULL" : "PRAGMA auto_vacuum=NONE"));
    CU_ASSERT(exec_ok(
        db, "CREATE TABLE dl(id INTEGER PRIMARY KEY, s TEXT, v);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 3000)"
            " INSERT INTO dl SELECT i, substr(hex(randomblob(80)), 1, (i * 7) % 150), i FROM c;"
            "DELETE FROM dl WHERE id % 3 = 0;"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 1000)"
            " INSERT INTO dl SELECT 3000 + i, printf('%.*c', i % 40, 'n'), -i FROM c;"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)"
            " INSERT INTO dl SELECT i * 9, printf('%.*c', (i * 13) % 170, 'r'), NULL FROM c;"
            "UPDATE dl SET s = s || s WHERE id % 7 = 1; UPDATE dl SET s = substr(s, 1, 3) WHERE id % 11 = 2;"
            "DELETE FROM dl WHERE id BETWEEN 1200 AND 1500"));
    int64_t n = tr_unit_query_int(db, "SELECT count(*) FROM dl");
    close_checked(db, path, page_size, 0);
    tree_shape t;
    image im;
    CU_ASSERT_FATAL(shape_of(path, "dl", &t, &im));
    CU_ASSERT(t.freeblocks > 0);
    CU_ASSERT(t.depth >= 2);
    free(im.b);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM dl", "dl", 1), n);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT v, s FROM dl", "dl", 1), n);
    remove(path);
}

static void test_churn(void)
{
    check_churn(512, 0);
    check_churn(4096, 0);
    check_churn(1024, 1);
}

/* Rows written before ALTER TABLE ADD COLUMN lack the new fields: NULL, as
 * SQLite reads them where the column has no default. */
static void test_altered(void)
{
    char path[4096];
    path_of(path, sizeof path, "altered");
    sqlite3 *db = create_db(path, 512, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(
        db, "CREATE TABLE al(a INTEGER, b TEXT);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)"
            " INSERT INTO al SELECT i, 'old ' || i FROM c;"
            "ALTER TABLE al ADD COLUMN c; ALTER TABLE al ADD COLUMN d TEXT;"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 300)"
            " INSERT INTO al SELECT -i, 'new ' || i, i * 2, 'd' || i FROM c;"
            "UPDATE al SET b = b || '!' WHERE a % 10 = 3"));
    close_checked(db, path, 512, 0);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM al", "al", 1), 600);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT d, a, c FROM al", "al", 1), 600);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT rowid, d FROM al ORDER BY rowid", "al", 1), 600);
    remove(path);
}

/* Rowids from INT64_MIN to INT64_MAX with gaps, in a table without an alias
 * for them; and 70 columns, fields past 63 among them. */
static void test_rowids_and_width(void)
{
    char path[4096];
    path_of(path, sizeof path, "rowids");
    sqlite3 *db = create_db(path, 1024, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(
        db, "CREATE TABLE g(a, b);"
            "INSERT INTO g(rowid, a, b) VALUES (-9223372036854775808, 1, 'min'), (-5, 2, 'm5'), (0, 3, 'zero'),"
            " (1, 4, 'one'), (2147483648, 5, '2^31'), (1099511627776, 6, '2^40'), (4611686018427387904, 7, '2^62'),"
            " (9223372036854775807, 8, 'max');"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 800)"
            " INSERT INTO g(rowid, a, b) SELECT 1000 + i * i * 37, i, hex(i) FROM c"));
    char sql[4096];
    int w = snprintf(sql, sizeof sql, "CREATE TABLE wide(");
    for (int k = 0; k < 70; k++)
        w += snprintf(sql + w, sizeof sql - (size_t)w, "%sc%d", k ? ", " : "", k);
    snprintf(sql + w, sizeof sql - (size_t)w, ")");
    CU_ASSERT(exec_ok(db, sql));
    CU_ASSERT(exec_ok(db, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 50)"
                          " INSERT INTO wide(c0, c1, c35, c63, c64, c69) SELECT i, 'x' || i, i * 3, 'f63', i, 'last' FROM c"));
    close_checked(db, path, 1024, 0);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT rowid, a, b FROM g", "g", 1), 808);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM g ORDER BY rowid", "g", 1), 808);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT c63, c0, c35 FROM wide", "wide", 1), 50);
    /* a field past the 64th: the reader may decline the file, not misread it */
    long r = diff_sql(path, "SELECT c69, c0, c64 FROM wide", "wide", -1);
    CU_ASSERT(r == -1 || r == 50);
    /* 70 result columns: more than a plan holds */
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM wide", "wide", 0), -1);
    remove(path);
}

/* The schema table itself (root page 1, behind the file header) over many
 * pages; generated columns (virtual ones are not in the record, so a stored
 * field's number is not its column's); a WAL-mode file whose newest rows are
 * only in its -wal, which an immutable read does not see. */
static void test_special_tables(void)
{
    char path[4096];
    path_of(path, sizeof path, "schema");
    sqlite3 *db = create_db(path, 512, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "BEGIN"));
    for (int k = 0; k < 150; k++) {
        char sql[160];
        snprintf(sql, sizeof sql, "CREATE TABLE tab%d(a INTEGER, b TEXT, c%d)", k, k);
        CU_ASSERT(exec_ok(db, sql));
    }
    CU_ASSERT(exec_ok(db, "COMMIT;"
                          "CREATE TABLE gc(a INTEGER, v INTEGER AS (a * 2) VIRTUAL, b TEXT,"
                          " s INTEGER AS (a + 1) STORED, c);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200)"
                          " INSERT INTO gc(a, b, c) SELECT i, 'b' || i, -i FROM c;"
                          "CREATE TABLE st(id INTEGER PRIMARY KEY, i INTEGER, r REAL, t TEXT, b BLOB, a ANY) STRICT;"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 200)"
                          " INSERT INTO st SELECT i, i * 7, i / 4, 'st' || i, zeroblob(i % 3),"
                          " CASE i % 3 WHEN 0 THEN i WHEN 1 THEN i / 3.0 ELSE 'a' || i END FROM c"));
    close_checked(db, path, 512, 0);
    long r = diff_sql(path, "SELECT * FROM sqlite_master", NULL, -1);
    CU_ASSERT(r == -1 || r == 152);   /* 150 tables, gc and st */
    diff_sql(path, "SELECT name, rootpage, sql FROM sqlite_schema", NULL, -1);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT a, b, c, s FROM gc", "gc", 1), 200);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT c FROM gc", "gc", 1), 200);
    diff_sql(path, "SELECT * FROM gc", "gc", -1);
    diff_sql(path, "SELECT v FROM gc", "gc", 0);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT a, t, b, i FROM st", "st", 1), 200);   /* STRICT */
    diff_sql(path, "SELECT r FROM st", "st", 0);   /* integers stored for REAL read as reals */
    remove(path);

    path_of(path, sizeof path, "wal");
    db = create_db(path, 1024, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0;"
                          "CREATE TABLE w(id INTEGER PRIMARY KEY, x);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100)"
                          " INSERT INTO w SELECT i, 'in the file' FROM c;"
                          "PRAGMA wal_checkpoint(TRUNCATE);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 100)"
                          " INSERT INTO w SELECT 100 + i, 'only in the wal' FROM c;"
                          "UPDATE w SET x = 'changed in the wal' WHERE id < 50"));
    r = diff_sql(path, "SELECT * FROM w", "w", -1);
    CU_ASSERT(r == -1 || r == 100);
    sqlite3_close(db);
    char side[4200];
    snprintf(side, sizeof side, "%s-wal", path);
    remove(side);
    snprintf(side, sizeof side, "%s-shm", path);
    remove(side);
    remove(path);
}

/* NaN bits in a stored real read as NULL, as in SQLite. */
static void test_nan(void)
{
    char path[4096];
    path_of(path, sizeof path, "nan");
    sqlite3 *db = create_db(path, 1024, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "CREATE TABLE nr(id INTEGER PRIMARY KEY, x, y);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60)"
                          " INSERT INTO nr SELECT i, CASE WHEN i % 3 = 0 THEN 1234.5678 ELSE i * 0.5 END, 9e999 FROM c"));
    close_checked(db, path, 1024, 0);
    image im;
    CU_ASSERT_FATAL(load_image(path, &im));
    double mark = 1234.5678;
    uint64_t bits;
    memcpy(&bits, &mark, sizeof bits);
    static const uint64_t nans[] = {0x7FF8000000000000ull, 0xFFF8000000000000ull, 0x7FF0000000000001ull,
                                    0xFFFFFFFFFFFFFFFFull};
    int patched = 0;
    for (size_t off = 0; off + 8 <= im.len; off++) {
        uint64_t v = 0;
        for (int k = 0; k < 8; k++)
            v = v << 8 | im.b[off + (size_t)k];
        if (v != bits)
            continue;
        for (int k = 0; k < 8; k++)
            im.b[off + (size_t)k] = (unsigned char)(nans[patched % 4] >> (56 - 8 * k));
        patched++;
    }
    CU_ASSERT_EQUAL(patched, 20);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(im.b, 1, im.len, f), im.len);
    fclose(f);
    free(im.b);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT * FROM nr", "nr", 1), 60);
    sqlite3 *ro = NULL;
    CU_ASSERT_EQUAL(tr_sqlite_open_ro(path, &ro), SQLITE_OK);
    CU_ASSERT_EQUAL(tr_unit_query_int(ro, "SELECT count(*) FROM nr WHERE x IS NULL"), 20);
    sqlite3_close(ro);
    remove(path);
}

/* ---- plans ---- */

static int plan_for(sqlite3 *db, const char *sql, int ncols, tr_btree_plan *plan)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "\n%s: %s\n", sql, sqlite3_errmsg(db));
        return -1;
    }
    int ok = tr_btree_plan_scan(st, ncols < 0 ? sqlite3_column_count(st) : ncols, plan);
    sqlite3_finalize(st);
    return ok;
}

static void test_plans(void)
{
    char path[4096];
    path_of(path, sizeof path, "plans");
    sqlite3 *db = create_db(path, 1024, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(
        db, "CREATE TABLE s(x, y); INSERT INTO s VALUES (1, 2);"
            "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, r REAL, f FLOAT, u);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 60)"
            " INSERT INTO t SELECT i, i % 7, 'b' || i, i / 2.0, i / 4.0, i * 3 FROM c;"
            "CREATE INDEX t_a ON t(a);"
            "ALTER TABLE t ADD COLUMN d DEFAULT 5; ALTER TABLE t ADD COLUMN e TEXT DEFAULT '';"
            "ALTER TABLE t ADD COLUMN n; ALTER TABLE t ADD COLUMN z REAL;"
            "INSERT INTO t(id, a, b, u, d, e, n, z) VALUES (100, 1, 'late', 4, 6, 'e', 'n', 2);"
            "CREATE VIEW v AS SELECT u, b FROM t;"
            "CREATE TABLE w(k INTEGER PRIMARY KEY, v) WITHOUT ROWID; INSERT INTO w VALUES (1, 2);"));
    close_checked(db, path, 1024, 0);
    sqlite3 *ro = NULL;
    CU_ASSERT_EQUAL_FATAL(tr_sqlite_open_ro(path, &ro), SQLITE_OK);
    uint32_t root = root_of(path, "t");
    CU_ASSERT(root > 1);

    /* columns: id 0 (the rowid), a 1, b 2, r 3, f 4, u 5, d 6, e 7, n 8, z 9 */
    tr_btree_plan p;
    memset(&p, 0x55, sizeof p);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT id, a, b, u FROM t", 4, &p), 1);
    CU_ASSERT_EQUAL(p.root, root);
    CU_ASSERT_EQUAL(p.ncols, 4);
    CU_ASSERT(p.field[0] == TR_BTREE_ROWID && p.field[1] == 1 && p.field[2] == 2 && p.field[3] == 5);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT u, NULL, b FROM t ORDER BY rowid", 3, &p), 1);
    CU_ASSERT(p.root == root && p.ncols == 3 && p.field[0] == 5 && p.field[1] == TR_BTREE_NULL && p.field[2] == 2);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT NULL, u FROM t", 2, &p), 1);
    CU_ASSERT(p.ncols == 2 && p.field[0] == TR_BTREE_NULL && p.field[1] == 5);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT n, rowid, _rowid_ FROM t", 3, &p), 1);
    CU_ASSERT(p.field[0] == 8 && p.field[1] == TR_BTREE_ROWID && p.field[2] == TR_BTREE_ROWID);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT x, y FROM s", 2, &p), 1);
    CU_ASSERT(p.root == root_of(path, "s") && p.field[0] == 0 && p.field[1] == 1);

    /* a count of columns other than the statement's */
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT id, a, b, u FROM t", 3, &p), 0);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT id, a, b, u FROM t", 5, &p), 0);
    CU_ASSERT_EQUAL(plan_for(ro, "SELECT id, a, b, u FROM t", 0, &p), 0);
    sqlite3_close(ro);

    /* not a plain scan in rowid order of stored fields */
    static const char *const rejected[] = {
        "SELECT u FROM t ORDER BY b",            /* a sort */
        "SELECT u FROM t ORDER BY a",            /* the index's order */
        "SELECT u FROM t ORDER BY rowid DESC",
        "SELECT u FROM t WHERE u > 1",
        "SELECT u FROM t WHERE rowid > 5",       /* rowid order, from a seek */
        "SELECT u FROM t WHERE ?1",
        "SELECT t.u, s.x FROM t, s",
        "SELECT u + 1 FROM t",
        "SELECT 1, u FROM t",
        "SELECT 'x', u FROM t",
        "SELECT u FROM t LIMIT 3",
        "SELECT u FROM t LIMIT -1 OFFSET 2",
        "SELECT DISTINCT u FROM t",
        "SELECT count(*) FROM t",
        "SELECT (SELECT max(x) FROM s), u FROM t",
        "SELECT u FROM t UNION ALL SELECT x FROM s",
        "SELECT d FROM t",                       /* a default for rows without the field */
        "SELECT r FROM t",                       /* REAL affinity: integers read as reals */
        "SELECT f FROM t",
        "SELECT z FROM t",
        "SELECT k, v FROM w",                    /* WITHOUT ROWID */
        "SELECT CAST(u AS TEXT) FROM t",
        "SELECT u FROM tt",                      /* the temp database's table */
        "SELECT name FROM sqlite_temp_master",
    };
    for (size_t i = 0; i < sizeof rejected / sizeof rejected[0]; i++) {
        sqlite3 *c = NULL;
        CU_ASSERT_EQUAL_FATAL(tr_sqlite_open_ro(path, &c), SQLITE_OK);
        CU_ASSERT(exec_ok(c, "CREATE TEMP TABLE tt(u); INSERT INTO tt VALUES (1)"));
        int got = plan_for(c, rejected[i], -1, &p);
        if (got != 0)
            fprintf(stderr, "\n%s: %s\n", rejected[i], got > 0 ? "made a plan" : "did not prepare");
        CU_ASSERT_EQUAL(got, 0);
        sqlite3_close(c);
    }

    /* plans or not, but where they are, SQLite's rows */
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT id, a, b, u FROM t", "t", 1), 61);
    CU_ASSERT_EQUAL(diff_sql(path, "SELECT n, u, NULL FROM t ORDER BY rowid", "t", 1), 61);
    diff_sql(path, "SELECT a FROM t", NULL, -1);          /* SQLite reads the covering index */
    diff_sql(path, "SELECT rowid, a FROM t", NULL, -1);
    diff_sql(path, "SELECT * FROM v", NULL, -1);          /* a view over one table */
    diff_sql(path, "SELECT u, u, b FROM t", "t", -1);
    diff_sql(path, "SELECT e FROM t", "t", -1);           /* DEFAULT '': old rows read '' */
    diff_sql(path, "SELECT e, n, id FROM t", "t", -1);
    diff_sql(path, "SELECT * FROM t", "t", -1);
    diff_sql(path, "SELECT u, b FROM t ORDER BY id", "t", -1);   /* the rowid's alias */
    remove(path);
}

/* ---- files the reader does not take ---- */

static void test_refused(void)
{
    char path[4096];
    static const char *const encodings[] = {"UTF-16le", "UTF-16be"};
    for (int e = 0; e < 2; e++) {
        path_of(path, sizeof path, encodings[e]);
        remove(path);
        sqlite3 *db = NULL;
        char sql[128];
        snprintf(sql, sizeof sql, "PRAGMA encoding='%s'; CREATE TABLE t(a INTEGER, b TEXT);"
                                  "INSERT INTO t VALUES (1, 'text'), (2, 'more')", encodings[e]);
        CU_ASSERT_EQUAL_FATAL(sqlite3_open(path, &db), SQLITE_OK);
        CU_ASSERT(exec_ok(db, sql));
        sqlite3_close(db);
        tr_btree_plan p = {root_of(path, "t"), 2, {0, 1}};
        CU_ASSERT(p.root > 1);
        tr_btree_reader *r = tr_btree_reader_open(path, &p);
        CU_ASSERT_PTR_NULL(r);
        tr_btree_reader_close(r);
        /* what the statement's plan would be, if it is one */
        CU_ASSERT_EQUAL(diff_sql(path, "SELECT a, b FROM t", "t", -1), -1);
        remove(path);
    }
    tr_btree_plan p = {2, 1, {0}};
    path_of(path, sizeof path, "does-not-exist");
    remove(path);
    CU_ASSERT_PTR_NULL(tr_btree_reader_open(path, &p));
    CU_ASSERT_PTR_NULL(tr_btree_reader_open(tr_unit_tmpdir(), &p));   /* a directory */
    static const char *const junk[] = {"", "not an SQLite file at all, just words"};
    for (int j = 0; j < 2; j++) {
        path_of(path, sizeof path, "junk");
        FILE *f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        fputs(junk[j], f);
        fclose(f);
        CU_ASSERT_PTR_NULL(tr_btree_reader_open(path, &p));
        remove(path);
    }
}

/* ---- damaged files ---- */

typedef struct {
    const char *path;
    const tr_btree_plan *plan;
    long cap;
    int runs, compared;   /* runs; runs where SQLite read the same table with the same plan */
} damage_ctx;

/* The file at dc->path as it is now, read by the reader (with the intact
 * file's plan) and by SQLite: the reader must end within the cap, and give
 * no row unlike SQLite's at the same position while SQLite gives rows. */
static void read_damaged(damage_ctx *dc, const char *what, long at)
{
    char label[160];
    snprintf(label, sizeof label, "damage %s at %ld", what, at);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    tr_btree_plan p2;
    if (tr_sqlite_open_ro(dc->path, &db) != SQLITE_OK
        || sqlite3_prepare_v2(db, "SELECT * FROM t", -1, &st, NULL) != SQLITE_OK
        || !tr_btree_plan_scan(st, sqlite3_column_count(st), &p2) || p2.root != dc->plan->root
        || p2.ncols != dc->plan->ncols) {
        sqlite3_finalize(st);
        st = NULL;
    }
    dc->runs++;
    dc->compared += st != NULL;
    alarm(60);   /* a reader that never returns ends the run here rather than never */
    diff_result d = diff_rows(dc->path, dc->plan, st, NULL, dc->cap, label);
    alarm(0);
    if (d.end == 2)
        fprintf(stderr, "\n%s: more than %ld rows\n", label, dc->cap);
    CU_ASSERT(d.end != 2);
    CU_ASSERT_FALSE(d.differs);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void patch(int fd, size_t off, const void *bytes, size_t n)
{
    CU_ASSERT_EQUAL(pwrite(fd, bytes, n, (off_t)off), (ssize_t)n);
}

/* A reserved serial type (10, 11) in a field after the last the plan reads,
 * in place of one whose value takes no bytes (NULL, 0, 1), so the lengths
 * still fill the record: the reader reads the whole header and gives up there,
 * as SQLite does when it reads a header to its end. */
static void test_reserved_type_past_plan(void)
{
    char path[4096];
    path_of(path, sizeof path, "reserved-type");
    sqlite3 *db = create_db(path, 4096, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "CREATE TABLE t(a INTEGER, b INTEGER, c INTEGER);"
                          "INSERT INTO t VALUES (-7, NULL, 5), (300, 0, 6), (70000, 1, 7)"));
    close_checked(db, path, 4096, 0);
    image im;
    CU_ASSERT_FATAL(load_image(path, &im));
    uint32_t root = root_of(path, "t");
    CU_ASSERT_FATAL(root > 1 && root <= im.npages);
    const tr_btree_plan plan = {root, 1, {0}};
    for (unsigned row = 0; row < 3; row++) {
        for (unsigned char type = 10; type <= 11; type++) {
            /* the cell: payload size, rowid, then the record: its header size, a's type, b's type */
            unsigned off = cell_of(&im, root, row);
            uint64_t v;
            off += varint(page_of(&im, root) + off, &v);
            off += varint(page_of(&im, root) + off, &v);
            size_t at = (size_t)(root - 1) * im.ps + off + 2;
            CU_ASSERT_FATAL(im.b[at] <= 9);
            int fd = open(path, O_RDWR);
            CU_ASSERT_FATAL(fd >= 0);
            patch(fd, at, &type, 1);
            tr_btree_reader *r = tr_btree_reader_open(path, &plan);
            CU_ASSERT_PTR_NOT_NULL_FATAL(r);
            tr_btree_value vals[TR_BTREE_READ_MAXCOLS];
            int64_t rowid;
            static const int64_t a[] = {-7, 300, 70000};
            for (unsigned k = 0; k < row; k++) {
                CU_ASSERT_EQUAL(tr_btree_reader_next(r, &rowid, vals), 1);
                CU_ASSERT(vals[0].type == SQLITE_INTEGER && vals[0].i == a[k]);
            }
            CU_ASSERT_EQUAL(tr_btree_reader_next(r, &rowid, vals), -1);
            tr_btree_reader_close(r);
            patch(fd, at, &im.b[at], 1);
            close(fd);
        }
    }
    free(im.b);
    remove(path);
}

/* Each byte of [from, to) of page pgno set to 0, 0xFF and itself with the low bit flipped, in turn. */
static void sweep_bytes(damage_ctx *dc, int fd, const image *im, uint32_t pgno, unsigned from, unsigned to,
                        const char *what)
{
    const unsigned char *pg = page_of(im, pgno);
    for (unsigned off = from; off < to && off < im->ps; off++) {
        unsigned char vals[3] = {0x00, 0xFF, (unsigned char)(pg[off] ^ 0x01)};
        for (int v = 0; v < 3; v++) {
            if (vals[v] == pg[off])
                continue;
            patch(fd, (size_t)(pgno - 1) * im->ps + off, &vals[v], 1);
            read_damaged(dc, what, (long)off);
            patch(fd, (size_t)(pgno - 1) * im->ps + off, &pg[off], 1);
        }
    }
}

/* A four-byte page number at off set to each of vals in turn. */
static void try_pointers(damage_ctx *dc, int fd, const image *im, size_t off, const uint32_t *vals, int n,
                         const char *what)
{
    for (int k = 0; k < n; k++) {
        unsigned char b[4];
        put4(b, vals[k]);
        patch(fd, off, b, 4);
        read_damaged(dc, what, (long)vals[k]);
        patch(fd, off, im->b + off, 4);
    }
}

/* The base: a three-level table on 512-byte pages, some rows on overflow chains. */
static void make_damage_base(const char *path, int page_size, int reserve, int n)
{
    sqlite3 *db = create_db(path, page_size, reserve);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    char sql[600];
    snprintf(sql, sizeof sql,
             "CREATE TABLE t(id INTEGER PRIMARY KEY, a INTEGER, b TEXT, c BLOB);"
             "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < %d)"
             " INSERT INTO t SELECT i * 5 - 40, CASE i %% 4 WHEN 0 THEN i WHEN 1 THEN -i * 100000 WHEN 2 THEN NULL"
             " ELSE i * 4294967296 END, CASE WHEN i %% 60 = 7 THEN printf('%%.*c', %d, 'o')"
             " ELSE printf('%%.*c', 40 + i %% 40, 'x') END, CASE WHEN i %% 5 THEN randomblob(i %% 9) END FROM c",
             n, page_size * 3);
    CU_ASSERT(exec_ok(db, sql));
    close_checked(db, path, page_size, reserve);
}

static void check_damage(int page_size, int reserve, int n, int sweeps)
{
    char path[4096], base[4096], name[64];
    snprintf(name, sizeof name, "damage-base-%d", page_size);
    path_of(base, sizeof base, name);
    snprintf(name, sizeof name, "damaged-%d", page_size);
    path_of(path, sizeof path, name);
    make_damage_base(base, page_size, reserve, n);
    tree_shape t;
    image im;
    CU_ASSERT_FATAL(shape_of(base, "t", &t, &im));
    CU_ASSERT_FATAL(t.depth >= 3 && t.ninterior >= 3 && t.ovf_leaf && t.nchains == 2);
    /* the root, its first child and another of its children, all interior pages */
    uint32_t root = t.interior[0], inner = t.interior[1], inner2 = 0, leaf = t.ovf_leaf;
    unsigned nroot = get2(page_of(&im, root) + 3);
    CU_ASSERT_FATAL(get4(page_of(&im, root) + cell_of(&im, root, 0)) == inner);
    inner2 = get4(page_of(&im, root) + (nroot > 1 ? cell_of(&im, root, 1) : 8));
    CU_ASSERT_FATAL(inner2 >= 1 && inner2 <= im.npages && page_of(&im, inner2)[0] == 0x05);

    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    tr_btree_plan plan;
    CU_ASSERT_EQUAL_FATAL(tr_sqlite_open_ro(base, &db), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT * FROM t", -1, &st, NULL), SQLITE_OK);
    CU_ASSERT_FATAL(tr_btree_plan_scan(st, 4, &plan));
    sqlite3_finalize(st);
    sqlite3_close(db);
    CU_ASSERT_EQUAL(diff_sql(base, "SELECT * FROM t", "t", 1), n);

    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(im.b, 1, im.len, f), im.len);
    fclose(f);
    int fd = open(path, O_RDWR);
    CU_ASSERT_FATAL(fd >= 0);
    damage_ctx dc = {path, &plan, 20L * n + 1000, 0, 0};
    read_damaged(&dc, "none", 0);

    if (sweeps) {
        sweep_bytes(&dc, fd, &im, inner, 0, im.ps, "interior page byte");
        sweep_bytes(&dc, fd, &im, leaf, 0, im.ps, "leaf page byte");
        sweep_bytes(&dc, fd, &im, root, 0, 12 + 2 * nroot, "root header or cell pointer");
        sweep_bytes(&dc, fd, &im, root, get2(page_of(&im, root) + 5), im.usable, "root cell");
        sweep_bytes(&dc, fd, &im, t.ovf_chain[0], 0, 8, "overflow page");
    }

    /* child pointers: to the page itself, page 1, the root, the last page, past the end, 0, a leaf
     * elsewhere, an overflow page */
    uint32_t kids[] = {inner, 1, root, im.npages, im.npages + 1, 0xFFFFFFFFu, 0, t.leaf[t.nleaves - 1],
                       t.ovf_chain[1], inner2};
    int nk = (int)(sizeof kids / sizeof kids[0]);
    try_pointers(&dc, fd, &im, (size_t)(inner - 1) * im.ps + cell_of(&im, inner, 0), kids, nk, "first child");
    try_pointers(&dc, fd, &im, (size_t)(inner - 1) * im.ps + 8, kids, nk, "right child");
    try_pointers(&dc, fd, &im, (size_t)(root - 1) * im.ps + cell_of(&im, root, 0), kids, nk, "root's child");
    try_pointers(&dc, fd, &im, (size_t)(root - 1) * im.ps + 8, kids, nk, "root's right child");

    /* a cycle: the root's first child leads to another child of the root, which leads back */
    {
        unsigned char b[4];
        uint32_t first = get4(page_of(&im, root) + cell_of(&im, root, 0));
        put4(b, inner2);
        patch(fd, (size_t)(first - 1) * im.ps + 8, b, 4);
        put4(b, first);
        patch(fd, (size_t)(inner2 - 1) * im.ps + cell_of(&im, inner2, 0), b, 4);
        read_damaged(&dc, "cycle", 0);
        patch(fd, (size_t)(first - 1) * im.ps + 8, page_of(&im, first) + 8, 4);
        patch(fd, (size_t)(inner2 - 1) * im.ps + cell_of(&im, inner2, 0),
              page_of(&im, inner2) + cell_of(&im, inner2, 0), 4);
    }

    /* many paths to one page: every child of the root at one interior page, every child of that
     * at another, every child of that at one leaf; the walk must stay within the file's pages */
    {
        uint32_t to[3] = {inner, inner2, t.leaf[0]}, from[3] = {root, inner, inner2};
        for (int lv = 0; lv < 3; lv++) {
            const unsigned char *pg = page_of(&im, from[lv]);
            unsigned char b[4];
            put4(b, to[lv]);
            for (unsigned i = 0; i < get2(pg + 3); i++)
                patch(fd, (size_t)(from[lv] - 1) * im.ps + cell_of(&im, from[lv], i), b, 4);
            patch(fd, (size_t)(from[lv] - 1) * im.ps + 8, b, 4);
        }
        read_damaged(&dc, "fan-in", 0);
        for (int lv = 0; lv < 3; lv++)
            patch(fd, (size_t)(from[lv] - 1) * im.ps, page_of(&im, from[lv]), im.ps);
    }

    /* overflow pointers: from the cell and from the chain's first page */
    uint32_t ovf[] = {0, 1, leaf, root, im.npages, im.npages + 1, 0xFFFFFFFFu, t.ovf_chain[1],
                      get4(page_of(&im, t.ovf_chain[0]))};
    int no = (int)(sizeof ovf / sizeof ovf[0]);
    try_pointers(&dc, fd, &im, (size_t)(leaf - 1) * im.ps + t.ovf_ptr, ovf, no, "overflow pointer");
    uint32_t next[] = {0, t.ovf_chain[0], 1, im.npages + 1, t.ovf_chain[1], root};
    try_pointers(&dc, fd, &im, (size_t)(t.ovf_chain[0] - 1) * im.ps, next, 6, "next overflow page");

    /* payload sizes no page holds */
    {
        static const unsigned char huge[][9] = {{0x83, 0xDC, 0xEB, 0x94, 0x00}, {0xFF, 0xFF, 0xFF, 0xFF, 0x7F},
                                                {0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}};
        size_t cell = (size_t)(leaf - 1) * im.ps + cell_of(&im, leaf, 0);
        for (int k = 0; k < 3; k++) {
            patch(fd, cell, huge[k], 9);
            read_damaged(&dc, "payload size", k);
            patch(fd, cell, im.b + cell, 9);
        }
    }

    /* the file header: page size, reserved bytes, payload fractions, formats, page count, encoding */
    struct { size_t off; unsigned n; uint32_t v; } head[] = {
        {16, 2, 0}, {16, 2, 1}, {16, 2, 256}, {16, 2, 511}, {16, 2, 513}, {16, 2, 1024}, {16, 2, 2048},
        {16, 2, 32768}, {16, 2, 0xFFFF}, {20, 1, 1}, {20, 1, 32}, {20, 1, 33}, {20, 1, 255}, {21, 1, 63},
        {22, 1, 0}, {18, 1, 2}, {19, 1, 2}, {18, 1, 3}, {28, 4, 0}, {28, 4, 1}, {28, 4, im.npages - 1},
        {28, 4, im.npages + 1}, {28, 4, 0xFFFFFFFFu}, {24, 4, 12345}, {56, 4, 0}, {56, 4, 2}, {56, 4, 3},
        {56, 4, 5}, {92, 4, 777}};
    for (size_t k = 0; k < sizeof head / sizeof head[0]; k++) {
        unsigned char b[4];
        put4(b, head[k].v << (8 * (4 - head[k].n)));
        patch(fd, head[k].off, b, head[k].n);
        read_damaged(&dc, "header field", (long)head[k].off);
        patch(fd, head[k].off, im.b + head[k].off, head[k].n);
    }
    close(fd);

    /* cut short, or longer than its header says */
    size_t lens[] = {0, 50, 100, 512, (size_t)im.ps, im.len / 2, im.len - im.ps, im.len - im.ps + 1, im.len - 1,
                     im.len + 1, im.len + im.ps};
    for (size_t k = 0; k < sizeof lens / sizeof lens[0]; k++) {
        f = fopen(path, "wb");
        CU_ASSERT_PTR_NOT_NULL_FATAL(f);
        size_t keep = lens[k] < im.len ? lens[k] : im.len;
        CU_ASSERT_EQUAL(fwrite(im.b, 1, keep, f), keep);
        for (size_t z = keep; z < lens[k]; z++)
            fputc(z % 3 ? 0 : 0x0D, f);
        fclose(f);
        read_damaged(&dc, "length", (long)lens[k]);
    }
    /* the reader read the rows of most of them beside SQLite */
    CU_ASSERT(dc.compared > dc.runs / 2);
    free(im.b);
    remove(path);
    remove(base);
}

static void test_damaged(void)
{
    check_damage(512, 0, 700, 1);
    check_damage(1024, 33, 4000, 0);
}

/* ---- lib/sql_ahead over a file ---- */

/* sql on two connections to path, read ahead with tr_sql_ahead_start_file()
 * (the file at file_path) and with tr_sql_ahead_start(): the same cells, row
 * by row, to the same end, want_rc (0, or -1 where SQLite fails).  Returns
 * the rows; *direct the rows that came from the file's pages. */
static long ahead_diff(const char *path, const char *file_path, const char *sql, const char *bytes, int threaded,
                       int want_rc, long *direct)
{
    sqlite3 *db[2] = {NULL, NULL};
    sqlite3_stmt *st[2] = {NULL, NULL};
    tr_sql_ahead *a[2] = {NULL, NULL};
    tr_error err[2];
    for (int k = 0; k < 2; k++) {
        tr_error_clear(&err[k]);
        CU_ASSERT_EQUAL_FATAL(tr_sqlite_open_ro(path, &db[k]), SQLITE_OK);
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db[k], sql, -1, &st[k], NULL), SQLITE_OK);
    }
    int ncols = sqlite3_column_count(st[0]);
    CU_ASSERT_EQUAL_FATAL(tr_sql_ahead_start_file(&a[0], st[0], ncols, bytes, "file", file_path, threaded, &err[0]),
                          TR_OK);
    CU_ASSERT_EQUAL_FATAL(tr_sql_ahead_start(&a[1], st[1], ncols, bytes, "steps", threaded, &err[1]), TR_OK);
    long rows = 0;
    int rc[2], bad = 0;
    for (;;) {
        const tr_sql_cell *c0 = tr_sql_ahead_next(a[0], &rc[0], &err[0]);
        const tr_sql_cell *c1 = tr_sql_ahead_next(a[1], &rc[1], &err[1]);
        if (!c0 || !c1) {
            CU_ASSERT(!c0 && !c1);
            break;
        }
        rows++;
        for (int k = 0; k < ncols && !bad; k++) {
            const tr_sql_cell *x = &c0[k], *y = &c1[k];
            int same = x->type == y->type && x->i == y->i && x->len == y->len && !x->p == !y->p
                       && (!x->p || !x->len || memcmp(x->p, y->p, (size_t)x->len) == 0);
            if (!same) {
                fprintf(stderr, "\n%s [%s]: row %ld, column %d: type %d i %lld len %d p %s \"%.*s\";"
                                " stepping: type %d i %lld len %d p %s \"%.*s\"\n",
                        sql, bytes ? bytes : "all i", rows, k, x->type, (long long)x->i, x->len,
                        x->p ? "set" : "NULL", x->p ? (x->len > 40 ? 40 : x->len) : 0, x->p ? x->p : "", y->type,
                        (long long)y->i, y->len, y->p ? "set" : "NULL", y->p ? (y->len > 40 ? 40 : y->len) : 0,
                        y->p ? y->p : "");
                bad = 1;
            }
        }
    }
    CU_ASSERT_FALSE(bad);
    CU_ASSERT_EQUAL(rc[0], want_rc);
    CU_ASSERT_EQUAL(rc[1], want_rc);
    if (want_rc < 0)   /* the failure in the caller's words, as stepping reports it */
        CU_ASSERT(strncmp(err[0].msg, "file: ", 6) == 0 && strcmp(err[0].msg + 6, err[1].msg + 7) == 0);
    *direct = (long)tr_sql_ahead_direct_rows(a[0]);
    for (int k = 0; k < 2; k++) {
        tr_sql_ahead_stop(a[k]);
        sqlite3_finalize(st[k]);
        sqlite3_close(db[k]);
    }
    return rows;
}

/* rows from sql, all from the pages (want_direct -2), none (-1), or that many. */
static void expect_ahead(const char *path, const char *sql, const char *bytes, long want_rows, long want_direct)
{
    for (int threaded = 0; threaded < 2; threaded++) {
        long direct = -9;
        long rows = ahead_diff(path, path, sql, bytes, threaded, 0, &direct);
        long want = want_direct == -2 ? rows : want_direct == -1 ? 0 : want_direct;
        if (rows != want_rows || direct != want)
            fprintf(stderr, "\n%s [%s], threaded %d: %ld rows, %ld from the pages; wanted %ld, %ld\n", sql,
                    bytes ? bytes : "all i", threaded, rows, direct, want_rows, want);
        CU_ASSERT_EQUAL(rows, want_rows);
        CU_ASSERT_EQUAL(direct, want);
    }
}

static void test_ahead(void)
{
    char path[4096];
    path_of(path, sizeof path, "ahead");
    sqlite3 *db = create_db(path, 4096, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    /* f: 10,000 rows that read from the pages throughout, several batches of them;
     * m: 6,000 rows with, in one column each, a real in row 1, 2049 (a batch's first),
     * 3000 or 6000 (the last), and a text of 20 digits in row 3000 */
    CU_ASSERT(exec_ok(
        db, "CREATE TABLE f(id INTEGER PRIMARY KEY, a INTEGER, s TEXT, b BLOB, n);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10000)"
            " INSERT INTO f SELECT i * 3, CASE WHEN i % 9 = 0 THEN NULL ELSE (i - 5000) * 1234567 END,"
            " CASE WHEN i % 11 = 0 THEN NULL WHEN i % 503 = 1 THEN printf('%.*c', 9000, 's')"
            " ELSE 'text ' || i END, CASE WHEN i % 7 = 0 THEN NULL ELSE randomblob(1 + i % 20) END,"
            " CASE i % 3 WHEN 0 THEN i WHEN 1 THEN 'n' || i ELSE x'3132' END FROM c;"
            "CREATE TABLE m(id INTEGER PRIMARY KEY, s TEXT, r1, r2049, r3000, r6000, d3000);"
            "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 6000)"
            " INSERT INTO m SELECT i, 'row ' || i, CASE WHEN i = 1 THEN 0.5 ELSE i END,"
            " CASE WHEN i = 2049 THEN 2.5 ELSE i END, CASE WHEN i = 3000 THEN -3.25 ELSE i END,"
            " CASE WHEN i = 6000 THEN 1e10 ELSE i END,"
            " CASE WHEN i = 3000 THEN '12345678901234567890' ELSE i END FROM c;"));
    /* texts read as integers, as SQLite reads them */
    static const char *const texts[] = {"abc", "  42xyz", "-7", "+3", "0009", "", " ", "-", "+", "- 5", "+-5",
                                        "\t\n\v\f\r 12", "12.9", "1e5", "0x1F", "999999999999999999",
                                        "-999999999999999999", "000000000000000000000000001", "-0", "1 2",
                                        "\xc3\xa9", "42\xc3\xa9", "7\x01"};
    int ntexts = (int)(sizeof texts / sizeof texts[0]);
    CU_ASSERT(exec_ok(db, "CREATE TABLE cv(id INTEGER PRIMARY KEY, x); CREATE TABLE cvb(id INTEGER PRIMARY KEY, x);"
                          "CREATE TABLE odd(id INTEGER PRIMARY KEY, x)"));
    sqlite3_stmt *ins = NULL;
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "INSERT INTO cv(x) VALUES (?)", -1, &ins, NULL), SQLITE_OK);
    for (int k = 0; k < ntexts; k++) {
        sqlite3_bind_text(ins, 1, texts[k], -1, SQLITE_STATIC);
        CU_ASSERT_EQUAL(sqlite3_step(ins), SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "INSERT INTO cvb(x) VALUES (?)", -1, &ins, NULL), SQLITE_OK);
    for (int k = 0; k < ntexts; k++) {   /* the same bytes as blobs, none empty */
        if (!texts[k][0])
            continue;
        sqlite3_bind_blob(ins, 1, texts[k], (int)strlen(texts[k]), SQLITE_STATIC);
        CU_ASSERT_EQUAL(sqlite3_step(ins), SQLITE_DONE);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    /* texts of 19 digits or more, each after rows read from the pages: where the reader goes on past
     * them, it must clamp as SQLite does */
    static const char *const digits[] = {"1234567890123456789", "9223372036854775807", "9223372036854775808",
                                         "-9223372036854775808", "-9223372036854775809", "18446744073709551616",
                                         "99999999999999999999999", "0000000000000000000009223372036854775808"};
    int ndigits = (int)(sizeof digits / sizeof digits[0]);
    for (int k = 0; k < ndigits; k++) {
        char sql[300];
        snprintf(sql, sizeof sql, "CREATE TABLE dg%d(x); INSERT INTO dg%d VALUES ('a'), (12), ('%s'), ('5 ')",
                 k, k, digits[k]);
        CU_ASSERT(exec_ok(db, sql));
    }
    /* values SQLite converts by its own rules: reals, long digit strings, empty texts and blobs */
    CU_ASSERT(exec_ok(db, "INSERT INTO odd(x) VALUES (1.5), (-1.5), (1e20), (-1e20), (9.2233720368547758e18),"
                          " (0.1), (-0.0), (123456789012345680000.0), ('9223372036854775807'),"
                          " ('9223372036854775808'), ('-9223372036854775808'), ('-9223372036854775809'),"
                          " ('99999999999999999999999'), ('1234567890123456789'), (''), (x''), (x'00'),"
                          " (0), (1), (-1), (9223372036854775807), (-9223372036854775808)"));
    close_checked(db, path, 4096, 0);

    expect_ahead(path, "SELECT id, a, s, b, n FROM f", "iitbi", 10000, -2);
    expect_ahead(path, "SELECT n, s, b, a FROM f ORDER BY rowid", "tbtt", 10000, -2);
    expect_ahead(path, "SELECT s, NULL, n FROM f", NULL, 10000, -2);

    expect_ahead(path, "SELECT r1, s FROM m", "it", 6000, 0);
    expect_ahead(path, "SELECT r2049, s FROM m", "it", 6000, 2048);
    expect_ahead(path, "SELECT r3000, s FROM m", "it", 6000, 2999);
    expect_ahead(path, "SELECT r6000, s FROM m", "it", 6000, 5999);
    expect_ahead(path, "SELECT d3000, s FROM m", "it", 6000, 2999);
    expect_ahead(path, "SELECT id, s FROM m", "it", 6000, -2);   /* the odd columns unread */

    expect_ahead(path, "SELECT x FROM cv", "i", ntexts, -2);
    expect_ahead(path, "SELECT x, id FROM cv", "ti", ntexts, -2);
    expect_ahead(path, "SELECT x FROM cvb", "i", ntexts - 1, -2);
    expect_ahead(path, "SELECT x FROM cvb", "t", ntexts - 1, -2);
    expect_ahead(path, "SELECT x FROM cvb", "b", ntexts - 1, -2);
    expect_ahead(path, "SELECT x FROM cv WHERE x <> ''", "b", ntexts - 1, -1);
    long direct;
    for (int k = 0; k < ndigits; k++) {
        char sql[64];
        snprintf(sql, sizeof sql, "SELECT x, x FROM dg%d", k);
        CU_ASSERT_EQUAL(ahead_diff(path, path, sql, "it", k % 2, 0, &direct), 4);
        CU_ASSERT(direct >= 2);
    }
    for (int threaded = 0; threaded < 2; threaded++) {
        static const char *const kinds[] = {"i", "t", "b"};
        for (int k = 0; k < 3; k++)
            CU_ASSERT_EQUAL(ahead_diff(path, path, "SELECT x FROM odd", kinds[k], threaded, 0, &direct), 22);
        /* an empty text, an empty blob: what sqlite3_column_blob() gives for them */
        CU_ASSERT_EQUAL(ahead_diff(path, path, "SELECT x FROM cv", "b", threaded, 0, &direct), ntexts);
        /* not a plan; a file the reader does not take */
        CU_ASSERT_EQUAL(ahead_diff(path, path, "SELECT s, n FROM f ORDER BY s", "ti", threaded, 0, &direct), 10000);
        CU_ASSERT_EQUAL(direct, 0);
        char missing[4096];
        path_of(missing, sizeof missing, "no-such-file");
        CU_ASSERT_EQUAL(ahead_diff(path, missing, "SELECT s, n FROM f", "ti", threaded, 0, &direct), 10000);
        CU_ASSERT_EQUAL(direct, 0);
    }
    remove(path);
}

/* The leaf page and the offset in it of the cell of rowid; 0 where none. */
static uint32_t find_cell(const image *im, const tree_shape *t, int64_t rowid, unsigned *off)
{
    for (int l = 0; l < t->nleaves; l++)
        for (unsigned i = 0; i < get2(page_of(im, t->leaf[l]) + 3); i++) {
            uint64_t size, id;
            *off = cell_of(im, t->leaf[l], i);
            varint(page_of(im, t->leaf[l]) + *off + varint(page_of(im, t->leaf[l]) + *off, &size), &id);
            if ((int64_t)id == rowid)
                return t->leaf[l];
        }
    return 0;
}

static void write_image(const char *path, const image *im)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(im->b, 1, im->len, f), im->len);
    fclose(f);
}

/* sql_ahead over a damaged file: where the reader gives up on a record SQLite
 * reads (serial type 10, a NULL to SQLite), the statement gives that row and
 * the rest; where SQLite fails too (a leaf that is no b-tree page), both reads
 * give the same rows and then the same failure. */
static void test_ahead_damaged(void)
{
    char path[4096];
    path_of(path, sizeof path, "ahead-damaged");
    sqlite3 *db = create_db(path, 1024, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    CU_ASSERT(exec_ok(db, "CREATE TABLE f2(id INTEGER PRIMARY KEY, v, s);"
                          "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 6000)"
                          " INSERT INTO f2 SELECT i, CASE WHEN i = 3000 THEN 0 ELSE i END, 'row ' || i FROM c"));
    close_checked(db, path, 1024, 0);
    tree_shape t;
    image im;
    CU_ASSERT_FATAL(shape_of(path, "f2", &t, &im));
    unsigned off;
    uint32_t pg = find_cell(&im, &t, 3000, &off);
    CU_ASSERT_FATAL(pg != 0);
    /* payload size, rowid (2 bytes), header size, then the types of id (0), v (8: the integer 0) */
    unsigned char *type = page_of(&im, pg) + off + 1 + 2 + 1 + 1;
    CU_ASSERT_EQUAL_FATAL(*type, 8);
    *type = 10;
    write_image(path, &im);
    *type = 8;
    long direct;
    for (int threaded = 0; threaded < 2; threaded++) {
        CU_ASSERT_EQUAL(ahead_diff(path, path, "SELECT id, v, s FROM f2", "iit", threaded, 0, &direct), 6000);
        CU_ASSERT_EQUAL(direct, 2999);
    }
    pg = find_cell(&im, &t, 4000, &off);
    CU_ASSERT_FATAL(pg != 0);
    uint64_t size, first;   /* the first rowid on that leaf */
    unsigned first_off = cell_of(&im, pg, 0);
    varint(page_of(&im, pg) + first_off + varint(page_of(&im, pg) + first_off, &size), &first);
    page_of(&im, pg)[0] = 0;
    write_image(path, &im);
    for (int threaded = 0; threaded < 2; threaded++) {
        CU_ASSERT_EQUAL(ahead_diff(path, path, "SELECT id, v, s FROM f2", "iit", threaded, -1, &direct),
                        (long)first - 1);
        CU_ASSERT_EQUAL(direct, (long)first - 1);
    }
    free(im.b);
    remove(path);
}

TR_SUITE(btree_read, {"every layout reads as SQLite reads it", test_layouts},
         {"a three-level tree", test_three_levels},
         {"payloads around the overflow boundaries", test_overflow_bounds},
         {"deleted, reinserted and updated rows; auto-vacuum", test_churn},
         {"rows older than ALTER TABLE ADD COLUMN", test_altered},
         {"extreme rowids; fields past the 64th", test_rowids_and_width},
         {"the schema table, generated columns, a WAL-mode file", test_special_tables},
         {"NaN reads as NULL", test_nan},
         {"which statements are a plan, and what it says", test_plans},
         {"files the reader does not open", test_refused},
         {"a reserved serial type past the fields read", test_reserved_type_past_plan},
         {"damaged files: no crash, no endless walk, no wrong row", test_damaged},
         {"sql_ahead over a file gives stepping's cells", test_ahead},
         {"sql_ahead over a damaged file", test_ahead_damaged});
