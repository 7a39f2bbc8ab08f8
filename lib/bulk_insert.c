#include "lib/bulk_insert.h"

#include <stdio.h>
#include <string.h>

#include "lib/spill.h"

#define BULK_MODULE "tr_bulk_rows"

typedef struct {
    int ncols;
    size_t nrows;
    tr_row_fill fill;
    const void *ctx;
} bulk_job;

typedef struct {
    sqlite3_vtab base;
    const bulk_job *job;
} bulk_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    const bulk_job *job;
    size_t row;          /* current row; == nrows at the end */
    tr_cell cells[];     /* the current row, filled once by advance() */
} bulk_cursor;

void tr_cell_text(tr_cell *c, const char *s, int len)
{
    if (!s) {
        c->type = TR_CELL_NULL;
        return;
    }
    c->type = TR_CELL_TEXT;
    c->s = s;
    c->len = len < 0 ? (int)strlen(s) : len;
}

static int bulk_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **out, char **errmsg)
{
    (void)argc;
    (void)argv;
    (void)errmsg;
    const bulk_job *job = aux;
    /* column names only matter to SELECT *; they are c0, c1, ... */
    char ddl[64 + 8 * 64];
    if (job->ncols < 1 || job->ncols > 64)
        return SQLITE_ERROR;
    int at = snprintf(ddl, sizeof ddl, "CREATE TABLE x(");
    for (int i = 0; i < job->ncols; i++)
        at += snprintf(ddl + at, sizeof ddl - (size_t)at, "%sc%d", i ? "," : "", i);
    snprintf(ddl + at, sizeof ddl - (size_t)at, ")");
    int rc = sqlite3_declare_vtab(db, ddl);
    if (rc != SQLITE_OK)
        return rc;
    bulk_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->job = job;
    *out = &v->base;
    return SQLITE_OK;
}

static int bulk_disconnect(sqlite3_vtab *v)
{
    sqlite3_free(v);
    return SQLITE_OK;
}

static int bulk_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
    info->estimatedRows = (sqlite3_int64)((bulk_vtab *)v)->job->nrows;
    info->estimatedCost = (double)info->estimatedRows;
    return SQLITE_OK;
}

static int bulk_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
    const bulk_job *job = ((bulk_vtab *)v)->job;
    bulk_cursor *c = sqlite3_malloc64(sizeof *c + (size_t)job->ncols * sizeof(tr_cell));
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->job = job;
    *out = &c->base;
    return SQLITE_OK;
}

static int bulk_close(sqlite3_vtab_cursor *c)
{
    sqlite3_free(c);
    return SQLITE_OK;
}

/* Moves to the next kept row at or after c->row and fills its cells. */
static void advance(bulk_cursor *c)
{
    const bulk_job *job = c->job;
    while (c->row < job->nrows && !job->fill(job->ctx, c->row, c->cells))
        c->row++;
}

static int bulk_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
                       sqlite3_value **argv)
{
    (void)idx;
    (void)idxstr;
    (void)argc;
    (void)argv;
    bulk_cursor *c = (bulk_cursor *)cur;
    c->row = 0;
    advance(c);
    return SQLITE_OK;
}

static int bulk_next(sqlite3_vtab_cursor *cur)
{
    bulk_cursor *c = (bulk_cursor *)cur;
    c->row++;
    tr_spill_tick();   /* the rows may be spilled arrays (lib/spill.h) */
    advance(c);
    return SQLITE_OK;
}

static int bulk_eof(sqlite3_vtab_cursor *cur)
{
    bulk_cursor *c = (bulk_cursor *)cur;
    return c->row >= c->job->nrows;
}

static int bulk_column(sqlite3_vtab_cursor *cur, sqlite3_context *out, int col)
{
    const tr_cell *cell = &((bulk_cursor *)cur)->cells[col];
    switch (cell->type) {
    case TR_CELL_INT: sqlite3_result_int64(out, cell->i); break;
    case TR_CELL_TEXT: sqlite3_result_text(out, cell->s, cell->len, SQLITE_STATIC); break;
    case TR_CELL_NULL: break;   /* a result left unset is NULL */
    }
    return SQLITE_OK;
}

static int bulk_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = (sqlite3_int64)((bulk_cursor *)cur)->row;
    return SQLITE_OK;
}

static const sqlite3_module bulk_module = {
    .iVersion = 0,
    .xCreate = bulk_connect,
    .xConnect = bulk_connect,
    .xBestIndex = bulk_best_index,
    .xDisconnect = bulk_disconnect,
    .xDestroy = bulk_disconnect,
    .xOpen = bulk_open,
    .xClose = bulk_close,
    .xFilter = bulk_filter,
    .xNext = bulk_next,
    .xEof = bulk_eof,
    .xColumn = bulk_column,
    .xRowid = bulk_rowid,
};

static tr_status exec(sqlite3 *db, const char *sql, const char *table, tr_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) == SQLITE_OK)
        return TR_OK;
    tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table %s)", msg ? msg : sqlite3_errmsg(db),
            table);
    sqlite3_free(msg);
    return TR_ERR_RUNTIME;
}

tr_status tr_bulk_insert(sqlite3 *db, const char *table, int ncols, size_t nrows,
                         tr_row_fill fill, const void *ctx, tr_error *err)
{
    const bulk_job job = {ncols, nrows, fill, ctx};
    if (sqlite3_create_module_v2(db, BULK_MODULE, &bulk_module, (void *)&job, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table %s)", sqlite3_errmsg(db),
                       table);
    char sql[256];
    tr_status st = exec(db, "CREATE VIRTUAL TABLE temp.bulk_rows USING " BULK_MODULE, table, err);
    if (st == TR_OK) {
        snprintf(sql, sizeof sql, "INSERT INTO main.%s SELECT * FROM temp.bulk_rows", table);
        st = exec(db, sql, table, err);
        tr_status drop = exec(db, "DROP TABLE temp.bulk_rows", table, st == TR_OK ? err : NULL);
        if (st == TR_OK)
            st = drop;
    }
    /* the job lives on this stack frame: unregister before returning */
    sqlite3_create_module_v2(db, BULK_MODULE, NULL, NULL, NULL);
    return st;
}
