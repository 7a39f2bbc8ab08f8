#include "lib/rundb_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/btree_read.h"
#include "lib/rundb.h"

static int page_read_off(void)
{
    const char *e = getenv("TR_NO_PAGE_READ");
    return e && *e && strcmp(e, "0") != 0;
}

void tr_rundb_scan_stop(tr_rundb_scan *s)
{
    tr_sql_ahead_stop(s->ahead);
    sqlite3_finalize(s->st);
    sqlite3_close(s->peer);
    memset(s, 0, sizeof *s);
}

tr_status tr_rundb_scan_start(tr_rundb_scan *s, sqlite3 *db, const char *sql, int ncols,
                              const char *table, int pages_only, int *started, tr_error *err)
{
    memset(s, 0, sizeof *s);
    *started = 0;
    const char *path = sqlite3_db_filename(db, "main");
    int pages = path && *path && !page_read_off();
    if (pages_only && !pages)
        return TR_OK;
    const char *name = tr_rundb_name(db);
    char *what = malloc(strlen(name) + strlen(table) + 32);
    if (!what)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    sprintf(what, "%s: cannot read table %s", name, table);
    int threaded = tr_rundb_open_peers(db, &s->peer, 1) == 1;
    sqlite3 *qdb = threaded ? s->peer : db;
    tr_status rc = TR_OK;
    tr_btree_plan plan;
    if (sqlite3_prepare_v2(qdb, sql, -1, &s->st, NULL) != SQLITE_OK)
        rc = tr_fail(err, TR_ERR_INPUT, "%s: %s", what, sqlite3_errmsg(qdb));
    else if (pages_only && !tr_btree_plan_scan(s->st, ncols, &plan))
        pages = 0;
    else
        rc = tr_sql_ahead_start_file(&s->ahead, s->st, ncols, NULL, what, pages ? path : NULL,
                                     threaded, err);
    free(what);
    if (rc == TR_OK && (pages || !pages_only))
        *started = 1;
    else
        tr_rundb_scan_stop(s);
    return rc;
}
