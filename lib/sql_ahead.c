#include "lib/sql_ahead.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/btree_read.h"

/* Rows come through a queue of TR_AHEAD_NBATCH batches of at most
 * TR_AHEAD_ROWS rows or TR_AHEAD_BYTES of text and blobs. */
#define TR_AHEAD_NBATCH 3
#define TR_AHEAD_ROWS 2048

#define TR_AHEAD_BYTES ((size_t)1 << 20)

typedef struct {
    tr_sql_cell *cells;   /* TR_AHEAD_ROWS rows of ncols */
    size_t n;
    int end_rc;           /* after these rows: 1 more to come, 0 the end, -1 an error */
    char *bytes;          /* the cells' text and blobs, each NUL-terminated */
    size_t nbytes, cap;
} ahead_batch;

struct tr_sql_ahead {
    sqlite3_stmt *st;
    char *what;
    tr_sql_range_fn next_range;
    void *range_ctx;
    int ncols;
    char bytes_of[64];      /* per column: 'i', 't' or 'b' */
    int any_bytes;
    tr_btree_reader *direct;   /* the rows from the file's pages, until it gives up */
    size_t direct_rows;        /* rows it gave: the statement skips them after */
    int skip_pending;
    ahead_batch batch[TR_AHEAD_NBATCH];
    tr_error step_err;
    size_t filled, taken;   /* batch k is batch[k % TR_AHEAD_NBATCH] */
    size_t row;             /* the caller's next row in batch[taken] */
    int threaded, stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
};

/* Copies len bytes at v into the batch, NUL-terminated (their offset in c->p
 * for now); 0 out of memory. */
static int append_bytes(ahead_batch *b, const void *v, int len, tr_sql_cell *c)
{
    if (b->nbytes + (size_t)len + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->nbytes + (size_t)len + 1)
            cap *= 2;
        char *nb = realloc(b->bytes, cap);
        if (!nb)
            return 0;
        b->bytes = nb;
        b->cap = cap;
    }
    if (len > 0)
        memcpy(b->bytes + b->nbytes, v, (size_t)len);
    b->bytes[b->nbytes + (size_t)len] = '\0';
    c->p = (const char *)(uintptr_t)(b->nbytes + 1);   /* 0 stays "no bytes" */
    c->len = len;
    b->nbytes += (size_t)len + 1;
    return 1;
}

/* The column's bytes, as sqlite3_column_text() or _blob() give them; 0 out of memory. */
static int keep_bytes(tr_sql_ahead *a, ahead_batch *b, int col, tr_sql_cell *c)
{
    const void *v = a->bytes_of[col] == 't' ? (const void *)sqlite3_column_text(a->st, col)
                                            : sqlite3_column_blob(a->st, col);
    int len = sqlite3_column_bytes(a->st, col);
    return !v || append_bytes(b, v, len, c);
}

static void fail_oom(tr_sql_ahead *a, ahead_batch *b)
{
    b->end_rc = -1;
    tr_fail(&a->step_err, TR_ERR_RUNTIME, "%s: out of memory", a->what);
}

/* ---- rows from the file's pages (lib/btree_read.h) ---- */

/* What sqlite3_value_int64() gives for a text or blob: the integer its bytes
 * begin with after SQLite's white space, 0 where they begin with no digit.
 * 0 (not decoded) for more than 18 significant digits, where SQLite's
 * overflow rules apply: the statement then reads the row. */
static int text_int64(const unsigned char *p, int len, int64_t *out)
{
    int k = 0, neg = 0;
    while (k < len && (p[k] == ' ' || (p[k] >= '\t' && p[k] <= '\r')))
        k++;
    if (k < len && (p[k] == '-' || p[k] == '+'))
        neg = p[k++] == '-';
    while (k < len && p[k] == '0')
        k++;
    int64_t v = 0;
    int digits = 0;
    for (; k < len && p[k] >= '0' && p[k] <= '9'; k++)
        if (++digits > 18)
            return 0;
        else
            v = v * 10 + (p[k] - '0');
    *out = neg ? -v : v;
    return 1;
}

/* The cell SQLite's column calls give for a stored value; 0 where this does
 * not (a real, or a text of many digits: the statement reads the row), or out
 * of memory (*oom). */
static int direct_cell(tr_sql_ahead *a, ahead_batch *b, int col, const tr_btree_value *v,
                       tr_sql_cell *c, int *oom)
{
    c->type = v->type;
    c->i = 0;
    c->p = NULL;
    c->len = 0;
    int bytes = a->bytes_of[col] != 'i';
    switch (v->type) {
    case SQLITE_NULL:
        return 1;
    case SQLITE_INTEGER:
        c->i = v->i;
        if (bytes) {
            char text[24];
            int n = snprintf(text, sizeof text, "%" PRId64, v->i);
            if (!append_bytes(b, text, n, c))
                return !(*oom = 1);
        }
        return 1;
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        if (!text_int64(v->p, v->len, &c->i))
            return 0;
        /* sqlite3_column_blob() gives no bytes for an empty value, _text() an empty string */
        if (bytes && (v->len > 0 || a->bytes_of[col] == 't') && !append_bytes(b, v->p, v->len, c))
            return !(*oom = 1);
        return 1;
    default:
        return 0;
    }
}

/* Fills the batch from the file's pages.  1 when the batch is done (full, the
 * end, or out of memory); 0 when the reader gave up, the batch holding the
 * rows before: the statement goes on from there. */
static int fill_direct(tr_sql_ahead *a, ahead_batch *b)
{
    tr_btree_value vals[TR_BTREE_READ_MAXCOLS];
    while (b->n < TR_AHEAD_ROWS && b->nbytes < TR_AHEAD_BYTES) {
        int64_t rowid;
        int rc = tr_btree_reader_next(a->direct, &rowid, vals);
        if (rc == 0) {
            b->end_rc = 0;
            return 1;
        }
        size_t mark = b->nbytes;
        tr_sql_cell *c = b->cells + b->n * (size_t)a->ncols;
        int oom = 0, ok = rc > 0;
        for (int i = 0; ok && i < a->ncols; i++)
            ok = direct_cell(a, b, i, &vals[i], &c[i], &oom);
        if (oom) {
            fail_oom(a, b);
            return 1;
        }
        if (!ok) {
            b->nbytes = mark;
            tr_btree_reader_close(a->direct);
            a->direct = NULL;
            a->skip_pending = 1;
            return 0;
        }
        b->n++;
        a->direct_rows++;
    }
    return 1;
}

/* Steps the statement past the rows the file's pages gave; 0 on its error. */
static int skip_direct_rows(tr_sql_ahead *a, ahead_batch *b)
{
    a->skip_pending = 0;
    for (size_t k = 0; k < a->direct_rows; k++) {
        int rc = sqlite3_step(a->st);
        if (rc == SQLITE_ROW)
            continue;
        b->end_rc = rc == SQLITE_DONE ? 0 : -1;
        if (rc != SQLITE_DONE)
            tr_fail(&a->step_err, rc == SQLITE_NOMEM ? TR_ERR_RUNTIME : TR_ERR_INPUT, "%s: %s",
                    a->what, sqlite3_errmsg(sqlite3_db_handle(a->st)));
        return 0;
    }
    return 1;
}

static void fill_batch(tr_sql_ahead *a, ahead_batch *b)
{
    b->n = b->nbytes = 0;
    b->end_rc = 1;
    if (a->direct && fill_direct(a, b))
        goto out;
    if (a->skip_pending && !skip_direct_rows(a, b))
        goto out;
    while (b->n < TR_AHEAD_ROWS && b->nbytes < TR_AHEAD_BYTES) {
        int rc = sqlite3_step(a->st);
        while (rc == SQLITE_DONE && a->next_range && a->next_range(a->range_ctx, a->st))
            rc = sqlite3_step(a->st);
        if (rc != SQLITE_ROW) {
            b->end_rc = rc == SQLITE_DONE ? 0 : -1;
            if (rc != SQLITE_DONE)
                tr_fail(&a->step_err, rc == SQLITE_NOMEM ? TR_ERR_RUNTIME : TR_ERR_INPUT, "%s: %s",
                        a->what, sqlite3_errmsg(sqlite3_db_handle(a->st)));
            break;
        }
        tr_sql_cell *c = b->cells + b->n++ * (size_t)a->ncols;
        for (int i = 0; i < a->ncols; i++) {
            /* one column call (each takes the connection's mutex and checks for a
             * failed allocation); the value calls are plain reads */
            sqlite3_value *v = sqlite3_column_value(a->st, i);
            c[i].type = sqlite3_value_type(v);
            c[i].i = c[i].type == SQLITE_NULL ? 0 : sqlite3_value_int64(v);
            c[i].p = NULL;
            c[i].len = 0;
            if (a->bytes_of[i] != 'i' && c[i].type != SQLITE_NULL && !keep_bytes(a, b, i, &c[i])) {
                fail_oom(a, b);
                b->n--;
                goto out;
            }
        }
    }
out:
    if (!a->any_bytes)
        return;
    for (size_t k = 0; k < b->n * (size_t)a->ncols; k++)
        if (b->cells[k].p)
            b->cells[k].p = b->bytes + ((uintptr_t)b->cells[k].p - 1);
}

static void *ahead_thread(void *arg)
{
    tr_sql_ahead *a = arg;
    pthread_mutex_lock(&a->lock);
    for (;;) {
        while (!a->stop && a->filled - a->taken == TR_AHEAD_NBATCH)
            pthread_cond_wait(&a->changed, &a->lock);
        if (a->stop)
            break;
        ahead_batch *b = &a->batch[a->filled % TR_AHEAD_NBATCH];
        pthread_mutex_unlock(&a->lock);
        fill_batch(a, b);
        pthread_mutex_lock(&a->lock);
        a->filled++;
        pthread_cond_broadcast(&a->changed);
        if (b->end_rc != 1)
            break;
    }
    pthread_mutex_unlock(&a->lock);
    return NULL;
}

static tr_status start(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols, const char *bytes,
                       const char *what, int threaded, tr_sql_range_fn next_range, void *range_ctx,
                       const char *path, tr_error *err);

tr_status tr_sql_ahead_start(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols, const char *bytes,
                             const char *what, int threaded, tr_error *err)
{
    return start(ahead, st, ncols, bytes, what, threaded, NULL, NULL, NULL, err);
}

tr_status tr_sql_ahead_start_ranges(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols,
                                    const char *bytes, const char *what, int threaded,
                                    tr_sql_range_fn next_range, void *range_ctx, tr_error *err)
{
    return start(ahead, st, ncols, bytes, what, threaded, next_range, range_ctx, NULL, err);
}

tr_status tr_sql_ahead_start_file(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols,
                                  const char *bytes, const char *what, const char *path,
                                  int threaded, tr_error *err)
{
    return start(ahead, st, ncols, bytes, what, threaded, NULL, NULL, path, err);
}

size_t tr_sql_ahead_direct_rows(const tr_sql_ahead *ahead)
{
    return ahead->direct_rows;
}

static tr_status start(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols, const char *bytes,
                       const char *what, int threaded, tr_sql_range_fn next_range, void *range_ctx,
                       const char *path, tr_error *err)
{
    *ahead = NULL;
    if (ncols < 0 || ncols > (int)sizeof ((tr_sql_ahead *)0)->bytes_of)
        return tr_fail(err, TR_ERR_RUNTIME, "%s: %d columns", what, ncols);
    tr_sql_ahead *a = calloc(1, sizeof *a);
    int ok = a != NULL && (a->what = strdup(what)) != NULL;
    for (int i = 0; ok && i < TR_AHEAD_NBATCH; i++)
        ok = (a->batch[i].cells = malloc(TR_AHEAD_ROWS * (size_t)(ncols > 0 ? ncols : 1)
                                         * sizeof(tr_sql_cell))) != NULL;
    if (!ok) {
        for (int i = 0; a && i < TR_AHEAD_NBATCH; i++)
            free(a->batch[i].cells);
        if (a)
            free(a->what);
        free(a);
        return tr_fail(err, TR_ERR_RUNTIME, "%s: out of memory", what);
    }
    a->st = st;
    a->next_range = next_range;
    a->range_ctx = range_ctx;
    a->ncols = ncols;
    for (int i = 0; i < ncols; i++) {
        a->bytes_of[i] = bytes && (bytes[i] == 't' || bytes[i] == 'b') ? bytes[i] : 'i';
        a->any_bytes |= a->bytes_of[i] != 'i';
    }
    tr_btree_plan plan;
    if (path && tr_btree_plan_scan(st, ncols, &plan))
        a->direct = tr_btree_reader_open(path, &plan);
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    a->threaded = threaded && pthread_create(&a->thread, NULL, ahead_thread, a) == 0;
    *ahead = a;
    return TR_OK;
}

/* Waits until batch[taken] is filled (fills it here without a thread). */
static void wait_filled(tr_sql_ahead *a, ahead_batch *b)
{
    if (!a->threaded) {
        if (a->filled == a->taken) {
            fill_batch(a, b);
            a->filled++;
        }
        return;
    }
    pthread_mutex_lock(&a->lock);
    while (a->filled == a->taken)
        pthread_cond_wait(&a->changed, &a->lock);
    pthread_mutex_unlock(&a->lock);
}

const tr_sql_cell *tr_sql_ahead_next(tr_sql_ahead *a, int *rc, tr_error *err)
{
    for (;;) {
        ahead_batch *b = &a->batch[a->taken % TR_AHEAD_NBATCH];
        /* once a batch is seen filled it stays as it is until taken moves on
         * (the helper fills only the batches after it), so only its first row
         * waits, and takes the lock */
        if (a->row == 0)
            wait_filled(a, b);
        if (a->row < b->n) {
            *rc = 1;
            return b->cells + a->row++ * (size_t)a->ncols;
        }
        if (b->end_rc != 1) {
            *rc = b->end_rc;
            if (b->end_rc < 0)
                tr_error_copy(err, &a->step_err);
            return NULL;
        }
        a->row = 0;
        pthread_mutex_lock(&a->lock);
        a->taken++;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
    }
}

const tr_sql_cell *tr_sql_ahead_peek(const tr_sql_ahead *a, size_t k)
{
    const ahead_batch *b = &a->batch[a->taken % TR_AHEAD_NBATCH];
    /* a->row > 0: next() gave a row of this batch, which it waited to be filled */
    if (a->row == 0 || k >= b->n - (a->row - 1))
        return NULL;
    return b->cells + (a->row - 1 + k) * (size_t)a->ncols;
}

void tr_sql_ahead_stop(tr_sql_ahead *a)
{
    if (!a)
        return;
    if (a->threaded) {
        pthread_mutex_lock(&a->lock);
        a->stop = 1;
        pthread_cond_broadcast(&a->changed);
        pthread_mutex_unlock(&a->lock);
        pthread_join(a->thread, NULL);
    }
    pthread_cond_destroy(&a->changed);
    pthread_mutex_destroy(&a->lock);
    for (int i = 0; i < TR_AHEAD_NBATCH; i++) {
        free(a->batch[i].cells);
        free(a->batch[i].bytes);
    }
    tr_btree_reader_close(a->direct);
    free(a->what);
    free(a);
}

/* ---- merging read-aheads ---- */

/* Moves reader k to its next row; 0 on its error (err filled). */
static int merge_advance(tr_sql_merge *m, int k, tr_error *err)
{
    int rc;
    m->head[k] = tr_sql_ahead_next(m->ahead[k], &rc, err);
    if (rc < 0)
        m->failed = 1;
    return rc >= 0;
}

tr_status tr_sql_merge_start(tr_sql_merge *m, tr_sql_ahead *const *ahead, int n, int key,
                             tr_error *err)
{
    memset(m, 0, sizeof *m);
    if (n > TR_SQL_MERGE_MAX) {
        for (int k = 0; k < n; k++)
            tr_sql_ahead_stop(ahead[k]);
        m->failed = 1;
        return tr_fail(err, TR_ERR_RUNTIME, "%d readers to merge, at most %d", n, TR_SQL_MERGE_MAX);
    }
    m->n = n;
    m->key = key;
    m->last = -1;
    for (int k = 0; k < m->n; k++)
        m->ahead[k] = ahead[k];
    for (int k = 0; k < m->n; k++)
        if (!merge_advance(m, k, err))
            return err->status;
    return TR_OK;
}

const tr_sql_cell *tr_sql_merge_next(tr_sql_merge *m, int *rc, tr_error *err)
{
    if (m->failed || (m->last >= 0 && !merge_advance(m, m->last, err))) {
        *rc = -1;
        return NULL;
    }
    int best = -1;
    for (int k = 0; k < m->n; k++)
        if (m->head[k] && (best < 0 || m->head[k][m->key].i < m->head[best][m->key].i))
            best = k;
    m->last = best;
    *rc = best >= 0;
    return best >= 0 ? m->head[best] : NULL;
}

void tr_sql_merge_stop(tr_sql_merge *m)
{
    for (int k = 0; k < m->n; k++)
        tr_sql_ahead_stop(m->ahead[k]);
    m->n = 0;
}

/* ---- blocks of ids ---- */

int tr_id_blocks_first(tr_id_blocks *b, sqlite3_stmt *st, int64_t min_id, int64_t max_id,
                       int64_t block, int k, int n)
{
    memset(b, 0, sizeof *b);
    b->min = min_id;
    b->done = max_id < min_id || block <= 0 || n <= 0 || k < 0 || k >= n;
    b->span = (uint64_t)max_id - (uint64_t)min_id;   /* unsigned: any two int64 ids */
    b->block = (uint64_t)block;
    b->step = (uint64_t)block * (uint64_t)n;
    b->off = (uint64_t)block * (uint64_t)k;
    return tr_id_blocks_next(b, st);
}

int tr_id_blocks_next(void *ctx, sqlite3_stmt *st)
{
    tr_id_blocks *b = ctx;
    sqlite3_reset(st);
    if (b->done || b->off > b->span)
        return 0;
    uint64_t last = b->off + (b->block - 1);
    if (last > b->span || last < b->off)
        last = b->span;
    /* two's complement: min + an offset within the span is an int64 between min and max */
    sqlite3_bind_int64(st, 1, (int64_t)((uint64_t)b->min + b->off));
    sqlite3_bind_int64(st, 2, (int64_t)((uint64_t)b->min + last));
    if (b->off + b->step < b->off)
        b->done = 1;
    else
        b->off += b->step;
    return 1;
}
