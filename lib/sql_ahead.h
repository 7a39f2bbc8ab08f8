/*
 * sql_ahead.h - stepping an SQLite statement on a helper thread, a few
 * batches of rows ahead of the caller.
 *
 * Stepping SQLite and decoding its columns is most of the work of a loop
 * over a large table (an nvprof or nsys table in the ingest, the events
 * table in the chrome export); the loop's own work runs on the caller's
 * core meanwhile.  The helper keeps each row's cells in a bounded queue of
 * batches.  A cell holds the column's type and what sqlite3_column_int64()
 * gives for it and, for the columns `bytes` marks 't' (text) or 'b' (blob),
 * what sqlite3_column_text() or _blob() and _bytes() give.
 *
 * Ownership: the caller keeps the statement and finalizes it after
 * tr_sql_ahead_stop().  A row's cells, and their bytes, live until the next
 * tr_sql_ahead_next().  While the helper runs, nothing else may use the
 * statement's connection (connections are opened without SQLite's mutex):
 * a caller that needs its connection meanwhile reads ahead on a second one.
 * Without a thread (threaded = 0, or pthread_create() failing) the caller's
 * thread steps the statement itself, batch by batch, with the same results.
 */
#ifndef TR_LIB_SQL_AHEAD_H
#define TR_LIB_SQL_AHEAD_H

#include <sqlite3.h>
#include <stdint.h>

#include "lib/error.h"

typedef struct {
    int type;    /* SQLITE_INTEGER, SQLITE_NULL, ... */
    int len;     /* bytes of p */
    int64_t i;
    const char *p;   /* NULL for NULL, or where bytes were not asked for */
} tr_sql_cell;

typedef struct tr_sql_ahead tr_sql_ahead;

/* bytes: one letter per column ('i' integer only, 't' text, 'b' blob), or NULL for all 'i';
 * at most 64 columns.  what names the rows in messages: a step's failure reads
 * "<what>: <SQLite's message>". */
tr_status tr_sql_ahead_start(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols, const char *bytes,
                             const char *what, int threaded, tr_error *err);
/* As tr_sql_ahead_start(), for a statement read over several ranges: each time
 * it is done, next_range(range_ctx, st) resets it, binds the next range and
 * returns 1, or returns 0 after the last. */
typedef int (*tr_sql_range_fn)(void *ctx, sqlite3_stmt *st);
tr_status tr_sql_ahead_start_ranges(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols,
                                    const char *bytes, const char *what, int threaded,
                                    tr_sql_range_fn next_range, void *range_ctx, tr_error *err);

/* As tr_sql_ahead_start(), for a statement over a database file that nothing
 * writes while it is read (opened immutable), at path: where the statement is
 * a plain rowid-order scan of one table (lib/btree_read.h), the rows are
 * decoded from the file's pages instead of stepped, with the same cells; where
 * that reader gives up, the statement goes on from the next row. */
tr_status tr_sql_ahead_start_file(tr_sql_ahead **ahead, sqlite3_stmt *st, int ncols,
                                  const char *bytes, const char *what, const char *path,
                                  int threaded, tr_error *err);
/* How many of the rows so far came from the file's pages (tests). */
size_t tr_sql_ahead_direct_rows(const tr_sql_ahead *ahead);

/* The next row's ncols cells; NULL at the end (*rc 0) or on error (*rc -1, err filled). */
const tr_sql_cell *tr_sql_ahead_next(tr_sql_ahead *ahead, int *rc, tr_error *err);
/* The cells of the row k rows after the one tr_sql_ahead_next() last gave,
 * while that row is already at hand (in the same batch); NULL otherwise.
 * They live as the last row's do.  For a loop that asks for memory ahead of
 * the rows it will read. */
const tr_sql_cell *tr_sql_ahead_peek(const tr_sql_ahead *ahead, size_t k);
/* Stops the helper (it may be ahead of the caller) and frees; st stays the caller's. */
void tr_sql_ahead_stop(tr_sql_ahead *ahead);

/* Rows of n read-aheads (at most TR_SQL_MERGE_MAX) whose statements give
 * disjoint rows, each in ascending order of the integer column key, merged
 * into one stream in that order: several threads step one query, each over
 * its share of the rows.  The merge owns the read-aheads from start on and
 * stops them in tr_sql_merge_stop(); a row lives until the next call. */
#define TR_SQL_MERGE_MAX 4
typedef struct {
    int n, key, last, failed;
    tr_sql_ahead *ahead[TR_SQL_MERGE_MAX];
    const tr_sql_cell *head[TR_SQL_MERGE_MAX];
} tr_sql_merge;

tr_status tr_sql_merge_start(tr_sql_merge *m, tr_sql_ahead *const *ahead, int n, int key,
                             tr_error *err);
/* As tr_sql_ahead_next(). */
const tr_sql_cell *tr_sql_merge_next(tr_sql_merge *m, int *rc, tr_error *err);
void tr_sql_merge_stop(tr_sql_merge *m);

/* Reader k of n over the ids [min_id, max_id] of a rowid table, in blocks: its
 * statement's ?1 and ?2 are the first and last id of a block ("id BETWEEN ?1
 * AND ?2"), blocks k, k + n, k + 2n... of `block` ids each, so the readers'
 * rows are disjoint, each in id order, and together every row.
 * tr_id_blocks_first() binds the first block (0: the reader has none; its
 * statement then gives no row); tr_id_blocks_next() is the tr_sql_range_fn. */
typedef struct {
    int64_t min;
    uint64_t span, off, block, step;
    int done;
} tr_id_blocks;

int tr_id_blocks_first(tr_id_blocks *b, sqlite3_stmt *st, int64_t min_id, int64_t max_id,
                       int64_t block, int k, int n);
int tr_id_blocks_next(void *ctx, sqlite3_stmt *st);

static inline int64_t tr_cell_i64(const tr_sql_cell *c, int64_t def)
{
    return c->type == SQLITE_NULL ? def : c->i;
}

#endif
