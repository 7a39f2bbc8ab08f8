/*
 * libFuzzer target: lib/btree_read against SQLite on arbitrary bytes
 * presented as an SQLite file.  For each of the first tables the schema
 * names whose "SELECT *" is a plan, the reader's rows are read beside
 * SQLite's (opened immutable and read-only, as the ingest opens its inputs);
 * a row the reader gives that differs from the row SQLite gives at the same
 * position aborts, and so does the reader's end where SQLite reads another
 * row.  Giving up, SQLite's errors or end first, and refusing the file are
 * all fine; a crash, a hang or a leak is not.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_btree_read tests/fuzz/corpus/btree_read
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/btree_read.h"
#include "lib/rundb.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_TABLES 4
#define MAX_ROWS 100000

/* 1 when v is what SQLite gives for column k of st's current row. */
static int same_value(sqlite3_stmt *st, int k, const tr_btree_value *v)
{
    int type = sqlite3_column_type(st, k);
    if (v->type != type)
        return 0;
    switch (type) {
    case SQLITE_INTEGER:
        return v->i == sqlite3_column_int64(st, k);
    case SQLITE_FLOAT: {
        double r = sqlite3_column_double(st, k);
        return memcmp(&r, &v->r, sizeof r) == 0;
    }
    case SQLITE_TEXT:
    case SQLITE_BLOB: {
        const void *p = type == SQLITE_TEXT ? (const void *)sqlite3_column_text(st, k) : sqlite3_column_blob(st, k);
        int len = sqlite3_column_bytes(st, k);
        return v->len == len && (len == 0 || (v->p && memcmp(v->p, p, (size_t)len) == 0));
    }
    default:
        return 1;
    }
}

/* The table's rows both ways, while both give rows. */
static void compare_table(sqlite3 *db, const char *path, const char *name)
{
    char *sql = sqlite3_mprintf("SELECT * FROM \"%w\"", name);
    sqlite3_stmt *st = NULL;
    tr_btree_plan plan;
    if (!sql || sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || !st
        || sqlite3_column_count(st) > TR_BTREE_READ_MAXCOLS
        || !tr_btree_plan_scan(st, sqlite3_column_count(st), &plan)) {
        sqlite3_finalize(st);
        sqlite3_free(sql);
        return;
    }
    sqlite3_free(sql);
    tr_btree_reader *r = tr_btree_reader_open(path, &plan);
    tr_btree_value vals[TR_BTREE_READ_MAXCOLS];
    for (long n = 0; r && n < MAX_ROWS; n++) {
        int64_t rowid;
        int rc = tr_btree_reader_next(r, &rowid, vals);
        if (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
            /* an end where SQLite reads on: the caller would lose those rows */
            fprintf(stderr, "fuzz_btree_read: table %s: the reader ended after %ld rows, SQLite has more\n", name,
                    n);
            abort();
        }
        if (rc != 1 || sqlite3_step(st) != SQLITE_ROW)
            break;
        for (int k = 0; k < plan.ncols; k++) {
            if (plan.field[k] == TR_BTREE_ROWID && vals[k].i != rowid) {
                fprintf(stderr, "fuzz_btree_read: table %s, row %ld: column %d is not the rowid\n", name, n, k);
                abort();
            }
            if (!same_value(st, k, &vals[k])) {
                fprintf(stderr, "fuzz_btree_read: table %s, row %ld (rowid %lld), column %d (field %d):"
                                " type %d, SQLite's %d\n",
                        name, n, (long long)rowid, k, plan.field[k], vals[k].type, sqlite3_column_type(st, k));
                abort();
            }
        }
    }
    tr_btree_reader_close(r);
    sqlite3_finalize(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz-btree-read.XXXXXX";
    if (!fuzz_write_file(path, data, size))
        return 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *names = NULL;
    char *table[MAX_TABLES] = {NULL};
    int ntables = 0;
    if (tr_sqlite_open_ro(path, &db) == SQLITE_OK
        && sqlite3_prepare_v2(db, "SELECT name FROM sqlite_master WHERE type = 'table'", -1, &names, NULL)
               == SQLITE_OK) {
        while (ntables < MAX_TABLES && sqlite3_step(names) == SQLITE_ROW) {
            const char *n = (const char *)sqlite3_column_text(names, 0);
            if (n && (table[ntables] = strdup(n)) != NULL)
                ntables++;
        }
    }
    sqlite3_finalize(names);
    if (db)
        compare_table(db, path, "sqlite_master");   /* root page 1, behind the file header */
    for (int k = 0; k < ntables; k++)
        compare_table(db, path, table[k]);
    for (int k = 0; k < ntables; k++)
        free(table[k]);
    sqlite3_close(db);
    unlink(path);
    return 0;
}
