/*
 * bulk_insert.h - appends rows held in memory to an SQLite table in one
 * INSERT ... SELECT, through a transient virtual table over the caller's rows.
 *
 * Binding each value and stepping a prepared INSERT once per row costs about
 * a third more CPU than letting one statement pull the rows: the per-row
 * reset, the per-value bind checks and the statement restart go away.  The
 * run database's large tables go in as pages instead (lib/btree_append.h);
 * its strings interned after the first part of the write come this way.
 *
 * The caller describes its rows with a fill function that writes one row's
 * cells; it may skip rows (returning 0), so a detail table can be written
 * straight from the event array.  Text cells point into memory the caller
 * keeps alive for the duration of the call.
 *
 * Ownership: nothing is retained after tr_bulk_insert() returns; the virtual
 * table and its module are removed from the connection again.
 */
#ifndef TR_LIB_BULK_INSERT_H
#define TR_LIB_BULK_INSERT_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

typedef enum { TR_CELL_NULL, TR_CELL_INT, TR_CELL_TEXT } tr_cell_type;

typedef struct {
    tr_cell_type type;
    int len;              /* text length in bytes */
    int64_t i;
    const char *s;
} tr_cell;

static inline void tr_cell_int(tr_cell *c, int64_t v) { c->type = TR_CELL_INT; c->i = v; }
static inline void tr_cell_null(tr_cell *c) { c->type = TR_CELL_NULL; }
/* An integer, or NULL where it equals `none`. */
static inline void tr_cell_opt(tr_cell *c, int64_t v, int64_t none)
{
    c->type = v == none ? TR_CELL_NULL : TR_CELL_INT;
    c->i = v;
}
/* Text (NULL pointer: SQL NULL); len < 0 means NUL-terminated. */
void tr_cell_text(tr_cell *c, const char *s, int len);

/* Writes row `row` into cells[0..ncols); returns 0 to leave the row out. */
typedef int (*tr_row_fill)(const void *ctx, size_t row, tr_cell *cells);

/* Appends the kept rows among 0..nrows-1 to `table` (all its columns, in
 * declaration order; ncols of them).  Runs inside the caller's transaction. */
tr_status tr_bulk_insert(sqlite3 *db, const char *table, int ncols, size_t nrows,
                         tr_row_fill fill, const void *ctx, tr_error *err);

/* As tr_bulk_insert(), for rows that are all kept and whose first cell is the
 * table's INTEGER PRIMARY KEY, numbered on from first_id (first_id, first_id
 * + 1, ...).  SQLite numbers them itself (a NULL key becomes the largest in
 * the table plus one), which spares the seek it makes to check a given key:
 * about a sixth of building a row.  Where the table's largest key is not
 * first_id - 1, the first row is inserted with its key; where the keys are
 * taken, the rows go in as tr_bulk_insert() would put them (and fail).  A row
 * that fill leaves out, or whose key is not the next number, fails the
 * insert. */
tr_status tr_bulk_append(sqlite3 *db, const char *table, int ncols, size_t nrows, int64_t first_id,
                         tr_row_fill fill, const void *ctx, tr_error *err);

#endif
