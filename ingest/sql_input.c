#include "ingest/sql_input.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rundb.h"

tr_status tr_sql_open(tr_sql_input *in, const char *path, const char *what, tr_error *err)
{
    in->db = NULL;
    in->path = path;
    in->what = what;
    int cut_short;
    if (!tr_sqlite_probe(path, &cut_short))
        return tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": not an SQLite database",
                       what, path);
    if (cut_short)
        return tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": the file is cut short (its header "
                       "counts more pages than it holds)", what, path);
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

/* 1 when every value of the column, in rowid order, is an integer no smaller
 * than the one before; 0 otherwise, and when the scan fails (a table without
 * rowids, a missing column): the caller then sorts, as it always could.  The
 * values come from the file's pages where they can (lib/sql_ahead.h). */
static int in_order(tr_sql_input *in, const char *table, const char *column)
{
    char *sql = sqlite3_mprintf("SELECT \"%w\" FROM \"%w\" ORDER BY rowid", column, table);
    sqlite3_stmt *st = NULL;
    tr_sql_ahead *ahead = NULL;
    tr_error err;
    tr_error_clear(&err);
    int ok = sql && sqlite3_prepare_v2(in->db, sql, -1, &st, NULL) == SQLITE_OK
             && tr_sql_ahead_start_file(&ahead, st, 1, NULL, table, in->path, 0, &err) == TR_OK;
    sqlite3_free(sql);
    int64_t last = INT64_MIN;
    int rc = 0;
    const tr_sql_cell *c;
    while (ok && (c = tr_sql_ahead_next(ahead, &rc, &err)) != NULL) {
        ok = c->type == SQLITE_INTEGER && c->i >= last;
        last = c->i;
    }
    tr_sql_ahead_stop(ahead);
    sqlite3_finalize(st);
    return ok && rc == 0;
}

const char *tr_sql_order_by(tr_sql_input *in, const char *table, const char *column, char *buf,
                            size_t size)
{
    if (in_order(in, table, column))
        snprintf(buf, size, " ORDER BY rowid");
    else
        snprintf(buf, size, " ORDER BY \"%s\"", column);
    return buf;
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

tr_status tr_sql_read_ahead(tr_sql_ahead **ahead, tr_sql_input *in, sqlite3_stmt *st,
                            const char *table, int ncols, const char *bytes, tr_error *err)
{
    char what[8192];
    snprintf(what, sizeof what, "Cannot read %s: path=\"%s\", table=%s", in->what, in->path, table);
    return tr_sql_ahead_start_file(ahead, st, ncols, bytes, what, in->path, 1, err);
}
