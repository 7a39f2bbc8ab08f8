/* events.c - the events table as JSON Lines or CSV, with stable, documented
 * columns (docs/events.md), for Spark, Trino, DuckDB or pandas over many ranks. */
#include <stdio.h>
#include <string.h>

#include "export/export.h"
#include "lib/format.h"
#include "lib/rundb.h"
#include "lib/sql_ahead.h"

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

/* A decimal integer, as "%lld" writes it: printf's parsing of its format was
 * most of the export's time. */
static void put_i64(FILE *out, int64_t v)
{
    char buf[24], *p = tr_i64_digits(buf + sizeof buf, v);
    fwrite_unlocked(p, 1, (size_t)(buf + sizeof buf - p), out);
}

/* ,"name": of each column of a JSON line (the first without its comma) */
typedef struct { char key[NCOLS][48]; } jsonl_keys;

static void make_keys(jsonl_keys *k)
{
    for (size_t i = 0; i < NCOLS; i++)
        snprintf(k->key[i], sizeof k->key[i], "%s\"%s\":", i ? "," : "", event_cols[i].name);
}

static void put_jsonl(FILE *out, const tr_sql_cell *c, int64_t rank, const jsonl_keys *k)
{
    putc_unlocked('{', out);
    for (size_t i = 0; i < NCOLS; i++) {
        fputs_unlocked(k->key[i], out);
        if (event_cols[i].type == COL_RANK)
            put_i64(out, rank);
        else if (c[i].type == SQLITE_NULL)
            fputs_unlocked("null", out);
        else if (event_cols[i].type == COL_INT)
            put_i64(out, c[i].i);
        else
            tr_put_json_str(out, c[i].p ? c[i].p : "", (size_t)c[i].len);
    }
    fputs_unlocked("}\n", out);
}

static void put_csv(FILE *out, const tr_sql_cell *c, int64_t rank, const jsonl_keys *k)
{
    (void)k;
    for (size_t i = 0; i < NCOLS; i++) {
        if (i)
            putc_unlocked(',', out);
        if (event_cols[i].type == COL_RANK)
            put_i64(out, rank);
        else if (c[i].type == SQLITE_NULL)
            continue;   /* empty field: NULL */
        else if (event_cols[i].type == COL_INT)
            put_i64(out, c[i].i);
        else
            tr_put_csv_field(out, c[i].p ? c[i].p : "", (size_t)c[i].len);
    }
    putc_unlocked('\n', out);
}

/* The rows are stepped ahead on a helper thread (lib/sql_ahead.h), on a
 * connection of its own when the run.db is a file; this thread formats. */
static tr_status write_events(sqlite3 *db, const tr_export_opts *o, FILE *out, int csv, tr_error *err)
{
    char sql[2048];
    size_t n = (size_t)snprintf(sql, sizeof sql, "SELECT ");
    for (size_t i = 0; i < NCOLS; i++)
        n += (size_t)snprintf(sql + n, sizeof sql - n, "%s%s", i ? ", " : "", event_cols[i].sql);
    n += (size_t)snprintf(sql + n, sizeof sql - n, "%s", events_rank_cols);
    snprintf(sql + n, sizeof sql - n, "%s", events_from);
    tr_rank_map m;
    tr_status s = tr_rank_map_load(&m, db, 0, &o->ranks, err);
    if (s != TR_OK) {
        tr_rank_map_free(&m);
        return s;
    }
    sqlite3 *own;
    int threaded = tr_rundb_open_peers(db, &own, 1) == 1;
    sqlite3 *qdb = threaded ? own : db;
    sqlite3_stmt *st = NULL;
    tr_sql_ahead *ahead = NULL;
    char bytes[NCOLS + 3];
    for (size_t i = 0; i < NCOLS + 2; i++)
        bytes[i] = i < NCOLS && event_cols[i].type == COL_TEXT ? 't' : 'i';
    bytes[NCOLS + 2] = '\0';
    char what[4200];
    snprintf(what, sizeof what, "%s: cannot read table events", tr_rundb_name(db));
    if (sqlite3_prepare_v2(qdb, sql, -1, &st, NULL) != SQLITE_OK)
        s = tr_fail(err, TR_ERR_INPUT, "%s: %s", what, sqlite3_errmsg(qdb));
    else
        s = tr_sql_ahead_start(&ahead, st, (int)NCOLS + 2, bytes, what, threaded, err);
    jsonl_keys keys;
    make_keys(&keys);
    if (s == TR_OK && csv) {
        for (size_t i = 0; i < NCOLS; i++)
            fprintf(out, "%s%s", i ? "," : "", event_cols[i].name);
        putc('\n', out);
    }
    const tr_sql_cell *c;
    int rc = 0;
    while (s == TR_OK && (c = tr_sql_ahead_next(ahead, &rc, err)) != NULL) {
        int64_t rank = tr_rank_map_event(&m, c[NCOLS].i, c[NCOLS + 1].i);
        if (tr_rank_set_has(&o->ranks, rank))   /* --rank */
            (csv ? put_csv : put_jsonl)(out, c, rank, &keys);
    }
    if (s == TR_OK && rc < 0)
        s = err->status;
    tr_sql_ahead_stop(ahead);
    sqlite3_finalize(st);
    sqlite3_close(own);
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
