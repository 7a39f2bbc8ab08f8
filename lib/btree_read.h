/*
 * btree_read.h - the rows of one rowid table of an SQLite database file, in
 * rowid order, decoded straight from the file's pages
 * (https://www.sqlite.org/fileformat2.html, "B-tree Pages", "Record Format").
 *
 * An ingest reads each large table of an nvprof or nsys export once, from
 * start to end; SQLite's stepping and column calls were most of that read.
 * This reader walks the table's b-tree itself, a page at a time (pread: the
 * file is not mapped, so the resident memory stays a few pages), for a file
 * that nothing writes while it is read, as SQLite's immutable mode reads it.
 *
 * Which statements: tr_btree_plan_scan() asks SQLite how it runs a statement
 * (EXPLAIN) and accepts only a plain scan of one table in rowid order whose
 * result columns are the rowid, fields of the record without a default
 * value, or NULL; it says which for each column.  Anything else (a sort, an
 * index, a join, an affinity to apply, an opcode it does not know) is not
 * a plan, and the caller steps SQLite as before.
 *
 * Bad files are normal: every page number, offset, length and count is
 * checked against the page and the file, no walk goes deeper than SQLite's
 * own limit, and no page is read more often than the file has pages, so the
 * work is bounded by the file's size.  Where a page or a record is not
 * as SQLite writes it, or holds what this reader does not decode, the
 * reader gives up (tr_btree_reader_next() returns -1) after the rows it
 * gave, all of which are right: the caller goes on with SQLite, skipping
 * those rows, and SQLite has the last word on whatever this reader does
 * not fully understand.
 *
 * Ownership: the reader owns its descriptor and buffers until
 * tr_btree_reader_close(); a row's text and blob bytes live until the next
 * call.
 */
#ifndef TR_LIB_BTREE_READ_H
#define TR_LIB_BTREE_READ_H

#include <sqlite3.h>
#include <stdint.h>

#define TR_BTREE_READ_MAXCOLS 64
#define TR_BTREE_ROWID (-1)     /* the column is the row's rowid */
#define TR_BTREE_NULL (-2)      /* the column is the constant NULL */

typedef struct {
    uint32_t root;               /* the table's root page */
    int ncols;
    int16_t field[TR_BTREE_READ_MAXCOLS];   /* record field, TR_BTREE_ROWID or TR_BTREE_NULL */
} tr_btree_plan;

/* A stored value as SQLite returns it from such a scan: type is SQLITE_INTEGER
 * (i), SQLITE_FLOAT (r; a NaN reads as NULL, as in SQLite), SQLITE_TEXT or
 * SQLITE_BLOB (p, len; not NUL-terminated), or SQLITE_NULL. */
typedef struct {
    int type;
    int len;
    int64_t i;
    double r;
    const unsigned char *p;
} tr_btree_value;

typedef struct tr_btree_reader tr_btree_reader;

/* 1 and the plan when st (prepared, not yet stepped) is a plain rowid-order
 * scan of one table with ncols result columns as above; 0 otherwise. */
int tr_btree_plan_scan(sqlite3_stmt *st, int ncols, tr_btree_plan *plan);

/* A reader of the plan's table in the database file at path, or NULL where it
 * cannot read the file (not UTF-8, a header it does not accept, no memory):
 * the caller then reads through SQLite. */
tr_btree_reader *tr_btree_reader_open(const char *path, const tr_btree_plan *plan);

/* The next row: 1 (its rowid, and plan->ncols values), 0 at the end, -1 when
 * the reader gave up (and from then on). */
int tr_btree_reader_next(tr_btree_reader *r, int64_t *rowid, tr_btree_value *vals);

void tr_btree_reader_close(tr_btree_reader *r);

#endif
