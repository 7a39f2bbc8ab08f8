#include "ingest/sql_input.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rundb.h"

tr_status tr_sql_open(tr_sql_input *in, const char *path, const char *what, tr_error *err)
{
    in->db = NULL;
    in->path = path;
    in->what = what;
    if (!tr_file_is_sqlite(path))
        return tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": not an SQLite database",
                       what, path);
    if (tr_sqlite_open_ro(path, &in->db) != SQLITE_OK) {
        tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": %s", what, path,
                in->db ? sqlite3_errmsg(in->db) : "out of memory");
        sqlite3_close(in->db);
        in->db = NULL;
        return TR_ERR_INPUT;
    }
    /* Touch the schema now so a damaged header fails here, with a clear message. */
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(in->db, "SELECT count(*) FROM sqlite_master", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW) {
        tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": %s", what, path,
                sqlite3_errmsg(in->db));
        tr_sql_close(in);
        return TR_ERR_INPUT;
    }
    return TR_OK;
}

void tr_sql_close(tr_sql_input *in)
{
    if (in->db)
        sqlite3_close(in->db);
    in->db = NULL;
}

int tr_sql_has_table(tr_sql_input *in, const char *table)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(in->db, "SELECT 1 FROM sqlite_master WHERE type='table' AND name=?",
                           -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

int64_t tr_sql_int(tr_sql_input *in, const char *sql, int64_t def)
{
    sqlite3_stmt *st = NULL;
    int64_t v = def;
    if (sqlite3_prepare_v2(in->db, sql, -1, &st, NULL) == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static int has_column(sqlite3 *db, const char *table, const char *col)
{
    sqlite3_stmt *st = NULL;
    int found = 0;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info(?) WHERE name=?", -1, &st, NULL)
        == SQLITE_OK) {
        sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, col, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
    }
    sqlite3_finalize(st);
    return found;
}

tr_status tr_sql_select(tr_sql_input *in, const char *table, const tr_col *cols, size_t ncols,
                        const char *tail, sqlite3_stmt **out, tr_error *err)
{
    *out = NULL;
    if (!tr_sql_has_table(in, table))
        return TR_OK;
    size_t cap = 64 + strlen(table) + (tail ? strlen(tail) : 0);
    for (size_t i = 0; i < ncols; i++)
        cap += strlen(cols[i].name) + 8;
    char *sql = malloc(cap);
    if (!sql)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    size_t len = (size_t)snprintf(sql, cap, "SELECT ");
    for (size_t i = 0; i < ncols; i++) {
        int present = has_column(in->db, table, cols[i].name);
        if (!present && cols[i].required) {
            free(sql);
            return tr_fail(err, TR_ERR_INPUT,
                           "Cannot read %s: path=\"%s\", table=%s: missing column '%s'",
                           in->what, in->path, table, cols[i].name);
        }
        if (present)
            len += (size_t)snprintf(sql + len, cap - len, "%s\"%s\"", i ? ", " : "", cols[i].name);
        else
            len += (size_t)snprintf(sql + len, cap - len, "%sNULL", i ? ", " : "");
    }
    snprintf(sql + len, cap - len, " FROM \"%s\"%s", table, tail ? tail : "");
    int rc = sqlite3_prepare_v2(in->db, sql, -1, out, NULL);
    free(sql);
    if (rc != SQLITE_OK) {
        *out = NULL;
        return tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\", table=%s: %s", in->what,
                       in->path, table, sqlite3_errmsg(in->db));
    }
    return TR_OK;
}

int tr_sql_next(tr_sql_input *in, sqlite3_stmt *st, const char *table, tr_error *err)
{
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    tr_fail(err, rc == SQLITE_NOMEM ? TR_ERR_RUNTIME : TR_ERR_INPUT,
            "Cannot read %s: path=\"%s\", table=%s: %s", in->what, in->path, table,
            sqlite3_errmsg(in->db));
    return -1;
}

/* ---- reading ahead ----
 *
 * SQLite's stepping and column decoding were most of reading an nvprof or
 * nsys table, and ran on the core that also builds the model.  Rows now
 * come through a queue of TR_AHEAD_NBATCH batches of TR_AHEAD_ROWS rows. */
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
    tr_sql_input *in;
    sqlite3_stmt *st;
    const char *table;
    int ncols;
    char bytes_of[64];      /* per column: 'i', 't' or 'b' */
    int any_bytes;
    ahead_batch batch[TR_AHEAD_NBATCH];
    tr_error step_err;
    size_t filled, taken;   /* batch k is batch[k % TR_AHEAD_NBATCH] */
    size_t row;             /* the caller's next row in batch[taken] */
    int threaded, stop;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
};

/* Copies the column's bytes into the batch (their offset in c->p for now); 0 out of memory. */
static int keep_bytes(tr_sql_ahead *a, ahead_batch *b, int col, tr_sql_cell *c)
{
    const void *v = a->bytes_of[col] == 't' ? (const void *)sqlite3_column_text(a->st, col)
                                            : sqlite3_column_blob(a->st, col);
    int len = sqlite3_column_bytes(a->st, col);
    if (!v)
        return 1;
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
    memcpy(b->bytes + b->nbytes, v, (size_t)len);
    b->bytes[b->nbytes + (size_t)len] = '\0';
    c->p = (const char *)(uintptr_t)(b->nbytes + 1);   /* 0 stays "no bytes" */
    c->len = len;
    b->nbytes += (size_t)len + 1;
    return 1;
}

static void fill_batch(tr_sql_ahead *a, ahead_batch *b)
{
    b->n = b->nbytes = 0;
    b->end_rc = 1;
    while (b->n < TR_AHEAD_ROWS && b->nbytes < TR_AHEAD_BYTES) {
        int rc = tr_sql_next(a->in, a->st, a->table, &a->step_err);
        if (rc != 1) {
            b->end_rc = rc;
            break;
        }
        tr_sql_cell *c = b->cells + b->n++ * (size_t)a->ncols;
        for (int i = 0; i < a->ncols; i++) {
            c[i].type = sqlite3_column_type(a->st, i);
            c[i].i = c[i].type == SQLITE_NULL ? 0 : sqlite3_column_int64(a->st, i);
            c[i].p = NULL;
            c[i].len = 0;
            if (a->bytes_of[i] != 'i' && c[i].type != SQLITE_NULL && !keep_bytes(a, b, i, &c[i])) {
                b->end_rc = -1;
                tr_fail(&a->step_err, TR_ERR_RUNTIME, "out of memory while reading %s", a->in->what);
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

tr_status tr_sql_ahead_start(tr_sql_ahead **ahead, tr_sql_input *in, sqlite3_stmt *st,
                             const char *table, int ncols, const char *bytes, tr_error *err)
{
    if (ncols < 0 || ncols > (int)sizeof ((tr_sql_ahead *)0)->bytes_of)
        return tr_fail(err, TR_ERR_RUNTIME, "reading %s: %d columns", table, ncols);
    tr_sql_ahead *a = calloc(1, sizeof *a);
    int ok = a != NULL;
    for (int i = 0; ok && i < TR_AHEAD_NBATCH; i++)
        ok = (a->batch[i].cells = malloc(TR_AHEAD_ROWS * (size_t)(ncols > 0 ? ncols : 1)
                                         * sizeof(tr_sql_cell))) != NULL;
    if (!ok) {
        for (int i = 0; a && i < TR_AHEAD_NBATCH; i++)
            free(a->batch[i].cells);
        free(a);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory while reading %s", in->what);
    }
    a->in = in;
    a->st = st;
    a->table = table;
    a->ncols = ncols;
    for (int i = 0; i < ncols; i++) {
        a->bytes_of[i] = bytes && (bytes[i] == 't' || bytes[i] == 'b') ? bytes[i] : 'i';
        a->any_bytes |= a->bytes_of[i] != 'i';
    }
    pthread_mutex_init(&a->lock, NULL);
    pthread_cond_init(&a->changed, NULL);
    a->threaded = pthread_create(&a->thread, NULL, ahead_thread, a) == 0;
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
    free(a);
}
