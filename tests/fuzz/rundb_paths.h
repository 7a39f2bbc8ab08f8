/*
 * rundb_paths.h - the read paths of trace-analyze and trace-export over one
 * run.db, run in-process as the tools run them, for the run.db fuzz targets.
 * Any outcome but a crash, a hang or a leak is fine; a failure must come
 * with a message that names the file.
 */
#ifndef TR_TESTS_FUZZ_RUNDB_PATHS_H
#define TR_TESTS_FUZZ_RUNDB_PATHS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
/* analyze.h and export.h each name their own stack-source enum tr_stack_source */
#define tr_stack_source tr_export_stack_source
#include "export/export.h"
#undef tr_stack_source
#include "lib/rundb.h"

/* A hostile file must not hold the fuzzer for long: one second of queries per open. */
static void rundb_paths_init(void)
{
    setenv("TRACEKIT_QUERY_TIMEOUT", "1", 1);
}

static void rundb_paths_check(tr_status st, const tr_error *err)
{
    if (st != TR_OK && err->msg[0] == '\0')
        abort();   /* failures must say why */
}

static void rundb_paths_run(const char *path)
{
    FILE *null = fopen("/dev/null", "w");
    if (!null)
        return;
    static const struct { int shape; long stack; tr_stack_source src; int stats; const char *fmt; }
        analyses[] = {
            {0, 0, TR_STACK_AUTO, 0, "text"},
            {1, 3, TR_STACK_AUTO, 1, "json"},
            {0, 2, TR_STACK_TREE, 0, "csv"},
            {0, 5, TR_STACK_FRAMES, 1, "markdown"},
        };
    for (size_t i = 0; i < sizeof analyses / sizeof analyses[0]; i++) {
        sqlite3 *db = NULL;
        tr_error err;
        tr_error_clear(&err);
        tr_status st = tr_rundb_open(path, &db, &err);
        rundb_paths_check(st, &err);
        if (st != TR_OK)
            break;   /* the open fails the same way every time */
        tr_analyze_opts o;
        memset(&o, 0, sizeof o);
        o.limit = 100;
        o.group_by_shape = analyses[i].shape;
        o.group_by_stack = analyses[i].stack;
        o.stack_source = analyses[i].src;
        o.stats = analyses[i].stats;
        o.format = tr_output_format_lookup(analyses[i].fmt);
        if (!o.format)
            o.format = &tr_output_formats[0];
        tr_summary s;
        st = tr_summarize(db, &o, &s, &err);
        if (st == TR_OK) {
            o.sort = tr_sort_key_lookup(s.has_gpu ? "self_cuda_time_total" : "self_cpu_time_total");
            tr_summary_sort(&s, o.sort);
            st = o.format->write(null, &s, &o, &err);
        }
        rundb_paths_check(st, &err);
        tr_summary_free(&s);
        sqlite3_close(db);
    }
    static const struct { const char *fmt, *metric; tr_export_stack_source src; int torch; } exports[] = {
        {"stacks", NULL, TR_SRC_AUTO, 0},
        {"stacks", "self_gpu", TR_SRC_TREE, 0},
        {"stacks", NULL, TR_SRC_FRAMES, 1},
        {"flamegraph", "cpu_total", TR_SRC_AUTO, 0},
        {"chrome", NULL, TR_SRC_AUTO, 0},
    };
    for (size_t i = 0; i < sizeof exports / sizeof exports[0]; i++) {
        sqlite3 *db = NULL;
        tr_error err;
        tr_error_clear(&err);
        tr_status st = tr_rundb_open(path, &db, &err);
        if (st != TR_OK)
            break;
        tr_export_opts o;
        tr_export_opts_init(&o);
        o.format = tr_export_format_lookup(exports[i].fmt);
        o.metric = exports[i].metric ? tr_export_metric_lookup(exports[i].metric) : NULL;
        o.source = exports[i].src;
        o.compat_torch = exports[i].torch;
        size_t skipped = 0;
        o.skipped = &skipped;
        if (i == 1)
            st = tr_export_set_regex(&o, 0, "a|c", &err);
        if (st == TR_OK)
            st = tr_export_run(db, &o, null, &err);
        rundb_paths_check(st, &err);
        tr_export_opts_free(&o);
        sqlite3_close(db);
    }
    fclose(null);
}

#endif
