#include "lib/bulk_insert.h"

#include <stdio.h>
#include <string.h>

#include "lib/spill.h"

#define BULK_MODULE "tr_bulk_rows"

typedef struct {
    int ncols;
    size_t first_row, nrows;   /* rows first_row .. first_row + nrows - 1 of fill */
    tr_row_fill fill;
    const void *ctx;
    int64_t first_id;          /* > 0: every row kept, with cell 0 = first_id, first_id + 1, ... */
} bulk_job;

typedef struct {
    sqlite3_vtab base;
    const bulk_job *job;
} bulk_vtab;

typedef struct {
    sqlite3_vtab_cursor base;
    const bulk_job *job;
    size_t row;          /* current row, counted from job->first_row; == nrows at the end */
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

/* Moves to the next kept row at or after c->row and fills its cells.  Rows
 * that SQLite numbers (tr_bulk_append()) must be kept and carry the key it
 * gives them; SQLITE_ERROR otherwise. */
static int advance(bulk_cursor *c)
{
    const bulk_job *job = c->job;
    if (job->first_id > 0) {
        if (c->row >= job->nrows)
            return SQLITE_OK;
        if (job->fill(job->ctx, job->first_row + c->row, c->cells) && c->cells[0].type == TR_CELL_INT
            && c->cells[0].i == job->first_id + (int64_t)c->row)
            return SQLITE_OK;
        sqlite3_free(c->base.pVtab->zErrMsg);
        c->base.pVtab->zErrMsg = sqlite3_mprintf("row %lld is out of sequence",
                                                 (long long)(job->first_row + c->row));
        return SQLITE_ERROR;
    }
    while (c->row < job->nrows && !job->fill(job->ctx, job->first_row + c->row, c->cells))
        c->row++;
    return SQLITE_OK;
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
    return advance(c);
}

static int bulk_next(sqlite3_vtab_cursor *cur)
{
    bulk_cursor *c = (bulk_cursor *)cur;
    c->row++;
    tr_spill_tick();   /* the rows may be spilled arrays (lib/spill.h) */
    return advance(c);
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

/* Inserts the job's rows into table, selecting `columns` of them. */
static tr_status run_job(sqlite3 *db, const char *table, const bulk_job *job, const char *columns,
                         tr_error *err)
{
    if (sqlite3_create_module_v2(db, BULK_MODULE, &bulk_module, (void *)job, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table %s)", sqlite3_errmsg(db),
                       table);
    tr_status st = exec(db, "CREATE VIRTUAL TABLE temp.bulk_rows USING " BULK_MODULE, table, err);
    if (st == TR_OK) {
        char *sql = sqlite3_mprintf("INSERT INTO main.%s SELECT %s FROM temp.bulk_rows", table, columns);
        st = sql ? exec(db, sql, table, err) : tr_fail(err, TR_ERR_RUNTIME, "out of memory");
        sqlite3_free(sql);
        tr_status drop = exec(db, "DROP TABLE temp.bulk_rows", table, st == TR_OK ? err : NULL);
        if (st == TR_OK)
            st = drop;
    }
    /* the job lives on the caller's stack frame: unregister before returning */
    sqlite3_create_module_v2(db, BULK_MODULE, NULL, NULL, NULL);
    return st;
}

tr_status tr_bulk_insert(sqlite3 *db, const char *table, int ncols, size_t nrows,
                         tr_row_fill fill, const void *ctx, tr_error *err)
{
    const bulk_job job = {ncols, 0, nrows, fill, ctx, 0};
    return run_job(db, table, &job, "*", err);
}

/* The table's largest rowid (0 when empty) in *last. */
static tr_status last_rowid(sqlite3 *db, const char *table, int64_t *last, tr_error *err)
{
    char *sql = sqlite3_mprintf("SELECT coalesce(max(rowid), 0) FROM main.%s", table);
    sqlite3_stmt *st = NULL;
    int rc = sql ? sqlite3_prepare_v2(db, sql, -1, &st, NULL) : SQLITE_NOMEM;
    sqlite3_free(sql);
    if (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        *last = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? TR_OK
                            : tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing table %s)",
                                      sqlite3_errmsg(db), table);
}

tr_status tr_bulk_append(sqlite3 *db, const char *table, int ncols, size_t nrows, int64_t first_id,
                         tr_row_fill fill, const void *ctx, tr_error *err)
{
    int64_t last = 0;
    tr_status st;
    if (nrows == 0 || ncols < 2 || ncols > 64 || first_id < 1)
        return tr_bulk_insert(db, table, ncols, nrows, fill, ctx, err);
    if ((st = last_rowid(db, table, &last, err)) != TR_OK)
        return st;
    if (last >= first_id)   /* the keys are taken: fails as the plain insert does */
        return tr_bulk_insert(db, table, ncols, nrows, fill, ctx, err);
    size_t given = 0;
    if (last != first_id - 1) {
        /* SQLite numbers on from the largest key: the first row sets it */
        const bulk_job first = {ncols, 0, 1, fill, ctx, first_id};
        if ((st = run_job(db, table, &first, "*", err)) != TR_OK)
            return st;
        given = 1;
    }
    char columns[8 + 64 * 5];
    int at = snprintf(columns, sizeof columns, "NULL");
    for (int i = 1; i < ncols; i++)
        at += snprintf(columns + at, sizeof columns - (size_t)at, ",c%d", i);
    const bulk_job rest = {ncols, given, nrows - given, fill, ctx, first_id + (int64_t)given};
    return run_job(db, table, &rest, columns, err);
}
