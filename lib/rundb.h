/*
 * rundb.h - the run database (run.db): schema v1, writing a trace into it,
 * and opening one for analysis.
 *
 * The schema lives in one place (rundb_schema[] in rundb.c) and is described
 * column by column in docs/schema.md; a unit test keeps the two in agreement.
 * Every time is integer nanoseconds.
 *
 * Writing is atomic: the database is built in a temporary file beside the
 * destination and renamed over it only when complete, so a failure never
 * leaves a half-written run.db.
 *
 * Ownership: tr_rundb_open() hands back an sqlite3 handle the caller closes
 * with sqlite3_close().
 */
#ifndef TR_LIB_RUNDB_H
#define TR_LIB_RUNDB_H

#include <sqlite3.h>

#include "lib/model.h"

#define TR_RUNDB_SCHEMA_VERSION 1

/* The tables and columns of schema v1, for the documentation test. */
typedef struct {
    const char *table;
    const char *ddl;
    int optional;   /* a run.db from an earlier build may lack it: readers then do without */
} tr_rundb_table;
extern const tr_rundb_table tr_rundb_tables[];
extern const size_t tr_rundb_ntables;
/* The convenience views (ops, kernel_launches, steps; docs/schema.md), made
 * with the tables: for queries by hand, never read by the tools. */
extern const tr_rundb_table tr_rundb_views[];
extern const size_t tr_rundb_nviews;

typedef struct {
    const char *key, *value;
} tr_meta_kv;

/* Creates the schema (tables and views) in an open, empty database. */
tr_status tr_rundb_create_schema(sqlite3 *db, tr_error *err);

/* Writes the (tree-built) trace to path atomically; extra meta rows may be NULL. */
tr_status tr_rundb_write(const tr_trace *t, const char *path,
                         const tr_meta_kv *meta, size_t nmeta, tr_error *err);

/* The same in two parts, so that the first can run on another thread while
 * tr_tree_build() runs: tr_rundb_write_begin() creates the temporary file and
 * writes what the tree leaves unchanged (the strings interned so far, the
 * threads, devices, streams, stack nodes and detail tables), reading of the
 * events only their kind and detail.  Until it returns, the trace may change
 * in nothing it reads: no events, strings, detail rows or stack nodes added.
 * tr_rundb_write_end() writes the rest (strings added since included),
 * commits and renames; tr_rundb_write_abort() removes the temporary file.
 * Either frees the writer. */
typedef struct tr_rundb_writer tr_rundb_writer;
tr_status tr_rundb_write_begin(tr_rundb_writer **w, const tr_trace *t, const char *path,
                               tr_error *err);
tr_status tr_rundb_write_end(tr_rundb_writer *w, const tr_trace *t, const tr_meta_kv *meta,
                             size_t nmeta, tr_error *err);
void tr_rundb_write_abort(tr_rundb_writer *w);

/* Opens a run.db read-only after checking it is one and of a version we read.
 * The file is treated as hostile: it must be a regular file; every table the
 * tools read must be a plain table with the schema's columns; views and
 * triggers never run (SQLITE_DBCONFIG_DEFENSIVE, trusted_schema off); and
 * queries stop with SQLITE_INTERRUPT after a wall-clock limit (60 s plus 1 s
 * per 8 MiB of file, or TRACEKIT_QUERY_TIMEOUT seconds, 0 for none). */
tr_status tr_rundb_open(const char *path, sqlite3 **db, tr_error *err);

/* Opens any SQLite input read-only and immutable: no locks, and no journal, -wal or
 * -shm file read or made beside it (a WAL-mode file would otherwise get both created
 * next to it).  Returns SQLite's result code; close *db with sqlite3_close(). */
int tr_sqlite_open_ro(const char *path, sqlite3 **db);

/* Opens up to n more read-only connections to the file of the open run.db db,
 * for helper threads (a connection is used by one thread at a time); returns how
 * many were opened into out[], 0 when db is not a file or TR_ONE_THREAD is set
 * (to 1: the callers then do their work on one thread); the slots of out[n]
 * not filled are set to NULL.  Close each with sqlite3_close(). */
int tr_rundb_open_peers(sqlite3 *db, sqlite3 **out, int n);

/* The first and last id of the events table; 0 when it is empty or cannot be read. */
int tr_rundb_event_ids(sqlite3 *db, int64_t *min_id, int64_t *max_id);

/* The file name of an open run.db, for error messages. */
const char *tr_rundb_name(sqlite3 *db);

/* True when the file is a regular file that starts with the SQLite header
 * (never blocks: FIFOs, devices and directories are not SQLite files). */
int tr_file_is_sqlite(const char *path);
/* The same, with *cut_short set when the file is shorter than its header says
 * (the page count, where the header keeps one, times the page size): a copy
 * that did not finish.  One open and one read. */
int tr_sqlite_probe(const char *path, int *cut_short);

#endif
