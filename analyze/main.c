/* trace-analyze: PyTorch key_averages()-style tables from a run database. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "lib/rundb.h"
#include "lib/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-analyze [options] run.db\n"
            "\n"
            "Prints a table of the events grouped by name, in the layout of PyTorch's\n"
            "prof.key_averages().table().  Times are wall-clock durations.\n"
            "\n"
            "  -s, --sort KEY        sort descending by KEY (default: self_cuda_time_total when the\n"
            "                        trace has GPU time, else self_cpu_time_total)\n"
            "  -n, --limit N         at most N rows (default 100; -1 = all)\n"
            "      --group-by-shape  group by name and input shapes\n"
            "      --units U         auto|us|ms|s (default auto)\n"
            "  -h, --help            this help\n"
            "      --version         print the version\n"
            "\n"
            "Sort keys:");
    for (size_t i = 0; i < tr_nsort_keys; i++)
        fprintf(f, " %s%s%s%s", tr_sort_keys[i].name, *tr_sort_keys[i].aliases ? " (" : "",
                tr_sort_keys[i].aliases, *tr_sort_keys[i].aliases ? ")" : "");
    fprintf(f, "\n\nExit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad input.\n");
}

static int bad_usage(const char *fmt, const char *arg)
{
    fprintf(stderr, "trace-analyze: ");
    fprintf(stderr, fmt, arg);
    fputc('\n', stderr);
    return TR_ERR_USAGE;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"sort", required_argument, NULL, 's'},  {"limit", required_argument, NULL, 'n'},
        {"group-by-shape", no_argument, NULL, 'S'}, {"units", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    tr_analyze_opts o = {0, NULL, 100, TR_UNIT_AUTO};
    const char *sort_name = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "s:n:h", longopts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (!tr_sort_key_lookup(optarg)) {
                fprintf(stderr, "trace-analyze: unknown sort key '%s' (valid:", optarg);
                for (size_t i = 0; i < tr_nsort_keys; i++)
                    fprintf(stderr, " %s", tr_sort_keys[i].name);
                fprintf(stderr, ")\n");
                return TR_ERR_USAGE;
            }
            sort_name = optarg;
            break;
        case 'n': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (!*optarg || *end || v < -1)
                return bad_usage("invalid --limit '%s' (a row count, or -1 for all)", optarg);
            o.limit = v;
            break;
        }
        case 'S': o.group_by_shape = 1; break;
        case 'u':
            if (!strcmp(optarg, "auto")) o.unit = TR_UNIT_AUTO;
            else if (!strcmp(optarg, "us")) o.unit = TR_UNIT_US;
            else if (!strcmp(optarg, "ms")) o.unit = TR_UNIT_MS;
            else if (!strcmp(optarg, "s")) o.unit = TR_UNIT_S;
            else return bad_usage("unknown unit '%s' (valid: auto us ms s)", optarg);
            break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("trace-analyze %s\n", TR_VERSION); return 0;
        default: fprintf(stderr, "trace-analyze: try 'trace-analyze --help'\n"); return TR_ERR_USAGE;
        }
    }
    if (optind != argc - 1)
        return bad_usage("%s", optind >= argc ? "no run database given (try 'trace-analyze --help')"
                                              : "exactly one run database expected");
    tr_error err;
    tr_error_clear(&err);
    sqlite3 *db = NULL;
    tr_summary s;
    memset(&s, 0, sizeof s);
    tr_status st = tr_rundb_open(argv[optind], &db, &err);
    if (st == TR_OK)
        st = tr_summarize(db, &o, &s, &err);
    if (st == TR_OK) {
        o.sort = sort_name ? tr_sort_key_lookup(sort_name)
                           : tr_sort_key_lookup(s.has_gpu ? "self_cuda_time_total"
                                                          : "self_cpu_time_total");
        tr_summary_sort(&s, o.sort);
        if (s.n == 0)
            fprintf(stderr, "trace-analyze: %s: no events\n", argv[optind]);
        st = tr_print_table(stdout, &s, &o, &err);
    }
    tr_summary_free(&s);
    if (db)
        sqlite3_close(db);
    if (st == TR_OK && fflush(stdout) != 0)
        st = tr_fail(&err, TR_ERR_RUNTIME, "write error on standard output");
    if (st != TR_OK) {
        fprintf(stderr, "trace-analyze: %s\n", err.msg);
        return st;
    }
    return 0;
}
