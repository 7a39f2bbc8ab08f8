/*
 * sql_input.h - reading tables of a third-party SQLite export (nvprof, nsys)
 * whose columns vary between versions.
 *
 * tr_sql_select() builds "SELECT <cols> FROM <table>" from a column list in
 * which optional columns that the file lacks read as NULL, and reports a
 * missing table or a missing required column as bad input with the path and
 * table named.  tr_sql_read_ahead() reads a statement's rows on a helper
 * thread, a few batches ahead of the caller, straight from the file's pages
 * where the statement is a plain scan of a table (lib/btree_read.h).  Ownership: the caller finalizes
 * the returned statement, after tr_sql_ahead_stop() where it was read ahead.
 */
#ifndef TR_INGEST_SQL_INPUT_H
#define TR_INGEST_SQL_INPUT_H

#include <sqlite3.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/sql_ahead.h"

typedef struct {
    const char *name;
    int required;
} tr_col;

typedef struct {
    sqlite3 *db;
    const char *path;
    const char *what;   /* "nvprof database", used in messages */
} tr_sql_input;

/* Opens path read-only; fails with TR_ERR_INPUT if it is not a readable SQLite file. */
tr_status tr_sql_open(tr_sql_input *in, const char *path, const char *what, tr_error *err);
void tr_sql_close(tr_sql_input *in);

int tr_sql_has_table(tr_sql_input *in, const char *table);

/* *st = NULL (and TR_OK) when the table does not exist.  `tail` is appended
 * verbatim (e.g. " ORDER BY start"), may be NULL. */
tr_status tr_sql_select(tr_sql_input *in, const char *table, const tr_col *cols, size_t ncols,
                        const char *tail, sqlite3_stmt **st, tr_error *err);

/* The tail that reads the table's rows in the order of `column`, ties in
 * rowid order: " ORDER BY rowid" when the column's values, in rowid order,
 * are integers that never decrease (nsys sorts its exports, so sorting them
 * again is work for nothing), else " ORDER BY \"column\"".  SQLite's sort
 * keeps the rows of equal keys in the order it scans them, the rowid's, so
 * both give the same rows in the same order.  buf holds the tail. */
const char *tr_sql_order_by(tr_sql_input *in, const char *table, const char *column, char *buf,
                            size_t size);

/* sqlite3_step() with errors turned into a bad-input failure naming the table.
 * Returns 1 for a row, 0 at the end, -1 on error (err filled). */
int tr_sql_next(tr_sql_input *in, sqlite3_stmt *st, const char *table, tr_error *err);

/* Runs a single-value query; returns def when there is no row or on error. */
int64_t tr_sql_int(tr_sql_input *in, const char *sql, int64_t def);

static inline int64_t tr_col_i64(sqlite3_stmt *st, int i, int64_t def)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? def : sqlite3_column_int64(st, i);
}

/* Reads st's rows ahead on a helper thread (lib/sql_ahead.h), a step's failure
 * reported as tr_sql_next() reports it. */
tr_status tr_sql_read_ahead(tr_sql_ahead **ahead, tr_sql_input *in, sqlite3_stmt *st,
                            const char *table, int ncols, const char *bytes, tr_error *err);

#endif
