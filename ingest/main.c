/* trace-ingest: reads traces (nvprof databases, ...) into a run database. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingest/ingest.h"
#include "lib/escape.h"
#include "lib/output.h"
#include "lib/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-ingest [-o run.db] [--format NAME] [-q] FILE...\n"
            "\n"
            "Reads GPU traces into one run database (SQLite; see docs/schema.md).\n"
            "\n"
            "  -o, --output FILE   run database to write (default run.db); written atomically;\n"
            "                      '-' writes it to standard output\n"
            "      --format NAME   skip detection and read every FILE as NAME\n"
            "  -q, --quiet         no summary and no warnings on stderr\n"
            "  -h, --help          this help\n"
            "      --version       print the version\n"
            "\n"
            "Formats:\n");
    for (size_t i = 0; i < tr_nreaders; i++)
        fprintf(f, "  %-10s %s\n", tr_readers[i].name, tr_readers[i].description);
    fprintf(f, "\nExit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad or unsupported input.\n");
}

static void warn_stderr(void *ctx, const char *msg)
{
    (void)ctx;
    fprintf(stderr, "trace-ingest: warning: %s\n", msg);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'F'},
        {"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},      {NULL, 0, NULL, 0}};
    const char *out = "run.db";
    int quiet = 0, c;
    tr_ingest_opts opts = {warn_stderr, NULL, NULL};
    tr_output_handle_signals();
    while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            if (!*out) {
                fprintf(stderr, "trace-ingest: empty output file name (try 'trace-ingest --help')\n");
                return TR_ERR_USAGE;
            }
            break;
        case 'F':
            if (!tr_reader_by_name(optarg)) {
                fprintf(stderr, "trace-ingest: unknown format '%s' (valid:", optarg);
                for (size_t i = 0; i < tr_nreaders; i++)
                    fprintf(stderr, " %s", tr_readers[i].name);
                fprintf(stderr, ")\n");
                return TR_ERR_USAGE;
            }
            opts.force_format = optarg;
            break;
        case 'q': quiet = 1; opts.warn = NULL; break;
        case 'h': usage(stdout); return 0;
        case 'V': printf("trace-ingest %s\n", TR_VERSION); return 0;
        default:
            fprintf(stderr, "trace-ingest: try 'trace-ingest --help'\n");
            return TR_ERR_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "trace-ingest: no input file (try 'trace-ingest --help')\n");
        return TR_ERR_USAGE;
    }
    tr_error err;
    tr_error_clear(&err);
    size_t nevents = 0;
    tr_status st = tr_ingest_files((const char *const *)argv + optind, (size_t)(argc - optind),
                                   out, &opts, &nevents, &err);
    if (st != TR_OK) {
        fputs("trace-ingest: ", stderr);
        tr_put_line(stderr, err.msg);
        return st;
    }
    if (!quiet) {
        if (nevents == 0)
            fprintf(stderr, "trace-ingest: %s: no events in the input (profiling never started?)\n",
                    out);
        else
            fprintf(stderr, "trace-ingest: %s: %zu events from %d file(s)\n", out, nevents,
                    argc - optind);
    }
    return 0;
}
