/* events.c - the events table as JSON Lines or CSV, with stable, documented
 * columns (docs/events.md), for Spark, Trino, DuckDB or pandas over many ranks. */
#include <string.h>

#include "export/export.h"
#include "lib/rundb.h"

typedef enum { COL_INT, COL_TEXT, COL_RANK } col_type;

/* One output column: its name, its type and the SQL expression that gives it.
 * Appending a column is adding a row; renaming or removing one breaks readers. */
typedef struct {
    const char *name;
    col_type type;
    const char *sql;
} event_col;

static const event_col event_cols[] = {
    {"id", COL_INT, "e.id"},
    {"kind", COL_TEXT, "k.name"},
    {"name", COL_TEXT, "sn.value"},
    {"start_ns", COL_INT, "e.start_ns"},
    {"end_ns", COL_INT, "e.end_ns"},
    {"dur_ns", COL_INT, "e.end_ns - e.start_ns"},
    /* stored, else the source's order: from the rank map (lib/ranks.h) */
    {"rank", COL_RANK, "NULL"},
    {"source", COL_TEXT, "coalesce(sp.path, sd.path)"},
    {"pid", COL_INT, "p.pid"},
    {"tid", COL_INT, "t.tid"},
    {"device", COL_INT, "d.device"},
    {"stream", COL_INT, "s.stream"},
    {"correlation", COL_INT, "e.correlation"},
    {"parent_id", COL_INT, "e.parent_id"},
    {"depth", COL_INT, "e.depth"},
    {"shape", COL_TEXT, "sh.value"},
    {"seq", COL_INT, "e.seq"},
    {"bytes", COL_INT, "e.bytes"},
    {"flags", COL_INT, "e.flags"},
    {"cpu_self_ns", COL_INT, "e.cpu_self_ns"},
    {"gpu_self_ns", COL_INT, "e.gpu_self_ns"},
    {"gpu_total_ns", COL_INT, "e.gpu_total_ns"},
    {"cpu_mem_self", COL_INT, "e.cpu_mem_self"},
    {"gpu_mem_self", COL_INT, "e.gpu_mem_self"},
};
#define NCOLS (sizeof event_cols / sizeof event_cols[0])

static const char events_from[] =
    " FROM events e JOIN kinds k ON k.id = e.kind JOIN strings sn ON sn.id = e.name_id"
    " LEFT JOIN strings sh ON sh.id = e.shape_id"
    " LEFT JOIN threads t ON t.id = e.thread_id LEFT JOIN processes p ON p.id = t.process_id"
    " LEFT JOIN sources sp ON sp.id = p.source_id"
    " LEFT JOIN streams s ON s.id = e.stream_id LEFT JOIN devices d ON d.id = s.device_id"
    " LEFT JOIN sources sd ON sd.id = d.source_id"
    " ORDER BY e.id";
/* after the columns: what the rank map reads */
static const char events_rank_cols[] = ", coalesce(e.thread_id, -1), coalesce(e.stream_id, -1)";

static int64_t row_rank(const tr_rank_map *m, sqlite3_stmt *st)
{
    return tr_rank_map_event(m, sqlite3_column_int64(st, (int)NCOLS), sqlite3_column_int64(st, (int)NCOLS + 1));
}

static void put_jsonl(FILE *out, sqlite3_stmt *st, const tr_rank_map *m)
{
    putc('{', out);
    for (size_t i = 0; i < NCOLS; i++) {
        fprintf(out, "%s\"%s\":", i ? "," : "", event_cols[i].name);
        if (event_cols[i].type == COL_RANK)
            fprintf(out, "%lld", (long long)row_rank(m, st));
        else if (sqlite3_column_type(st, (int)i) == SQLITE_NULL)
            fputs("null", out);
        else if (event_cols[i].type == COL_INT)
            fprintf(out, "%lld", (long long)sqlite3_column_int64(st, (int)i));
        else
            tr_put_json_str(out, (const char *)sqlite3_column_text(st, (int)i),
                            (size_t)sqlite3_column_bytes(st, (int)i));
    }
    fputs("}\n", out);
}

static void put_csv(FILE *out, sqlite3_stmt *st, const tr_rank_map *m)
{
    for (size_t i = 0; i < NCOLS; i++) {
        if (i)
            putc(',', out);
        if (event_cols[i].type == COL_RANK)
            fprintf(out, "%lld", (long long)row_rank(m, st));
        else if (sqlite3_column_type(st, (int)i) == SQLITE_NULL)
            continue;   /* empty field: NULL */
        if (event_cols[i].type == COL_INT)
            fprintf(out, "%lld", (long long)sqlite3_column_int64(st, (int)i));
        else
            tr_put_csv_field(out, (const char *)sqlite3_column_text(st, (int)i),
                             (size_t)sqlite3_column_bytes(st, (int)i));
    }
    putc('\n', out);
}

static tr_status write_events(sqlite3 *db, const tr_export_opts *o, FILE *out, int csv, tr_error *err)
{
    char sql[2048];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    for (size_t i = 0; i < NCOLS; i++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", i ? ", " : "", event_cols[i].sql);
    n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", events_rank_cols);
    snprintf(sql + n, sizeof sql - n, "%s", events_from);
    tr_rank_map m;
    tr_status ms = tr_rank_map_load(&m, db, 0, &o->ranks, err);
    if (ms != TR_OK) {
        tr_rank_map_free(&m);
        return ms;
    }
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        tr_rank_map_free(&m);
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    }
    if (csv) {
        for (size_t i = 0; i < NCOLS; i++)
            fprintf(out, "%s%s", i ? "," : "", event_cols[i].name);
        putc('\n', out);
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        if (tr_rank_set_has(&o->ranks, row_rank(&m, st)))   /* --rank */
            (csv ? put_csv : put_jsonl)(out, st, &m);
    tr_status s = rc == SQLITE_DONE ? TR_OK
                                    : tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s",
                                              tr_rundb_name(db), sqlite3_errmsg(db));
    sqlite3_finalize(st);
    tr_rank_map_free(&m);
    return s;
}

tr_status tr_export_events_jsonl(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    return write_events(db, o, out, 0, err);
}

tr_status tr_export_events_csv(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    return write_events(db, o, out, 1, err);
}
