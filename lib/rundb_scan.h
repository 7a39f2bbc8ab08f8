/*
 * rundb_scan.h - reading one table of an open run.db, start to end, a few
 * batches of rows ahead of the caller.
 *
 * The readers of every event (trace-analyze's tables, trace-export's stacks)
 * spent most of their time in SQLite's stepping and column calls.  Here the
 * statement runs on a helper thread, on a connection of its own where one
 * opens (lib/sql_ahead.h), and where it is a plain scan in rowid order of a
 * run.db in a file, its rows are decoded from the file's pages instead
 * (lib/btree_read.h, which leaves to SQLite whatever it does not fully
 * understand).  The cells are what SQLite's column calls give.
 *
 * TR_NO_PAGE_READ=1 has every row stepped by SQLite (tests compare the two).
 *
 * Ownership: the scan owns its connection, statement and read-ahead until
 * tr_rundb_scan_stop(); a row's cells live until the next tr_rundb_scan_next().
 */
#ifndef TR_LIB_RUNDB_SCAN_H
#define TR_LIB_RUNDB_SCAN_H

#include <sqlite3.h>

#include "lib/error.h"
#include "lib/sql_ahead.h"

typedef struct {
    sqlite3 *peer;
    sqlite3_stmt *st;
    tr_sql_ahead *ahead;
} tr_rundb_scan;

/* Starts s on sql, a query of db's table `table` with ncols integer columns (a
 * failure reads "<run.db>: cannot read table <table>: <SQLite's message>").  With pages_only,
 * *started stays 0 (and TR_OK) where the rows would not come from the pages:
 * a run.db in no file, a statement that is no plain scan, TR_NO_PAGE_READ; the
 * caller then reads them its own way.  Otherwise *started is 1 on TR_OK. */
tr_status tr_rundb_scan_start(tr_rundb_scan *s, sqlite3 *db, const char *sql, int ncols,
                              const char *table, int pages_only, int *started, tr_error *err);

/* The next row's ncols cells; NULL at the end (*rc 0) or on error (*rc -1, err filled). */
static inline const tr_sql_cell *tr_rundb_scan_next(tr_rundb_scan *s, int *rc, tr_error *err)
{
    return tr_sql_ahead_next(s->ahead, rc, err);
}

/* Stops and frees what s holds; s may be zeroed or stopped already. */
void tr_rundb_scan_stop(tr_rundb_scan *s);

#endif
