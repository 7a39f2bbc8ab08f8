/* trace-export: folded stacks, a flamegraph SVG or a chrome trace from a run database. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/list.h"
#include "export/diff.h"
#include "export/export.h"
#include "export/html.h"
#include "ingest/any_input.h"
#include "lib/debuginfo.h"
#include "lib/escape.h"
#include "lib/output.h"
#include "lib/rundb.h"
#include "lib/progress.h"
#include "lib/suggest.h"
#include "lib/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-export --stacks|--flamegraph|--chrome [-o FILE] [options] run.db|TRACE\n"
            "       trace-export --stacks|--flamegraph --diff [-o FILE] [options] BASE.db NEW.db\n"
            "       trace-export --flamegraph|--stacks --folded [--diff] [-o FILE] FOLDED [NEW.folded]\n"
            "\n"
            "  --stacks              folded stacks 'root;...;leaf VALUE', one line per stack\n"
            "  --flamegraph          an interactive flamegraph SVG (self-contained)\n"
            "  --chrome              chrome trace JSON for Perfetto UI / chrome://tracing\n"
            "  --events              the events table, one row per event, for Spark, Trino or\n"
            "                        pandas (docs/events.md); --format jsonl (default) | csv\n"
            "  -o, --output FILE     write FILE atomically; '-' or none: standard output;\n"
            "                        --chrome gzips a FILE ending in .gz\n"
            "  --metric M            value of a stack (default self_cpu; self_gpu when the\n"
            "                        trace has GPU time but no CPU time)\n"
            "  --stack-source S      frames (recorded call stacks) or tree (range ancestry);\n"
            "                        default: frames when the run.db has them\n"
            "  --compat torch        --stacks exactly as PyTorch 1.13's export_stacks()\n"
            "  --time-range A:B      events starting in [A, B) ns after the trace start\n"
            "                        ('@A:B': absolute ns; either side may be empty)\n"
            "  --thread TID          events of one CPU thread (and the GPU work it launched)\n"
            "  --device N            GPU activities of device N only\n"
            "  --rank R[,R...]       events of those distributed ranks (ranges A-B too);\n"
            "                        --chrome shows each rank apart (docs/diff.md)\n"
            "  --include REGEX       stacks with a frame matching REGEX (PCRE2)\n"
            "  --exclude REGEX       drop stacks with a frame matching REGEX\n"
            "  --title T, --width PX, --minwidth PX, --inverted   flamegraph layout\n"
            "  --diff                two run.dbs, BASE.db NEW.db: --stacks writes 'stack BASE NEW'\n"
            "                        lines, --flamegraph the new widths, red grown, blue shrunk\n"
            "  --diff-normalize      numbers in template arguments and ProfilerStep#N do not\n"
            "                        tell frames apart (docs/diff.md)\n"
            "  --folded              the input is folded stacks ('frame;frame;... COUNT' lines,\n"
            "                        as --stacks and flamegraph.pl's stackcollapse scripts write):\n"
            "                        --flamegraph draws them; with --diff, BASE NEW folded files\n"
            "                        are joined as difffolded.pl joins them\n"
            "  --step N|A-B          the time of those ProfilerStep#N ranges (as --time-range)\n"
            "  --min-dur DUR         --chrome: leave out slices shorter than DUR (10us, 1ms)\n"
            "  --max-size SIZE       --chrome: numbered parts FILE.1.json, FILE.2.json ... of at\n"
            "                        most SIZE uncompressed bytes each (200MB, 1GiB)\n"
            "  --html                one self-contained HTML report: summary, GPU time per device\n"
            "                        and step, top kernels and ops, timeline, tables (docs/reports.md)\n"
            "  --no-cache            a trace given instead of a run.db is ingested into a\n"
            "                        temporary file, not the cache under $XDG_CACHE_HOME/tracekit\n"
            "  -h, --help, --version\n"
            "\nMetrics:");
    for (const tr_export_metric *m = tr_export_metrics; m->name; m++)
        fprintf(f, " %s", m->name);
    fprintf(f, "\n\nExit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad input.\n");
}

static int usage_error(const char *msg, const char *arg)
{
    fprintf(stderr, "trace-export: ");
    fprintf(stderr, msg, arg);
    fputc('\n', stderr);
    return TR_ERR_USAGE;
}

static int parse_long(const char *s, long long lo, long long hi, long long *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno || x < lo || x > hi)
        return 0;
    *v = x;
    return 1;
}

enum { O_STACKS = 256, O_FLAME, O_CHROME, O_METRIC, O_SOURCE, O_COMPAT, O_TIME, O_THREAD,
       O_DEVICE, O_INCLUDE, O_EXCLUDE, O_TITLE, O_WIDTH, O_MINWIDTH, O_INVERTED, O_VERSION };
enum { O_DIFF = 512, O_DIFF_NORM };
enum { O_HTML = 700 };
enum { O_MIN_DUR = 800, O_MAX_SIZE, O_STEP };
enum { O_EVENTS = 600, O_EVENTS_FORMAT };
enum { O_RANK = 1000 };

/* The rank checks' warnings (lib/ranks.h): one line each. */
static void warn_line(void *ctx, const char *msg)
{
    (void)ctx;
    fputs("trace-export: warning: ", stderr);
    tr_put_line(stderr, msg);
}
enum { O_NO_CACHE = 900, O_FOLDED };

/* --folded: what goes with it. */
static int folded_usage(const tr_export_opts *o, int ninputs, int diff, int diff_norm, int other)
{
    if (diff_norm && !diff)
        return usage_error("%s", "--diff-normalize goes with --diff");
    if (o->format != tr_export_format_lookup("stacks") && o->format != tr_export_format_lookup("flamegraph"))
        return usage_error("%s", "--folded goes with --flamegraph or --stacks");
    if (other || o->compat_torch || o->has_thread || o->has_device || o->include_re || o->exclude_re)
        return usage_error("%s", "--folded reads stacks, not events: no selection, --step or --compat");
    if (ninputs != 1 + diff)
        return usage_error("%s", diff ? "--folded --diff takes BASE NEW, two folded files"
                                      : "--folded takes one folded file ('-': standard input)");
    return 0;
}

/* --folded: folded-stack text in, a flamegraph or merged stacks out. */
static int run_folded(char **paths, int n, int normalize, const char *output, const tr_export_opts *o)
{
    tr_error err;
    tr_error_clear(&err);
    FILE *in[2] = {NULL, NULL};
    const char *names[2] = {NULL, NULL};
    tr_status st = tr_output_check_inputs(output, (const char *const *)paths, n, &err);
    for (int i = 0; i < n && st == TR_OK; i++) {
        names[i] = strcmp(paths[i], "-") ? paths[i] : "standard input";
        in[i] = strcmp(paths[i], "-") ? fopen(paths[i], "r") : stdin;
        if (!in[i])
            st = tr_fail(&err, errno == ENOENT || errno == EACCES || errno == EISDIR ? TR_ERR_INPUT : TR_ERR_RUNTIME,
                         "cannot open %s: %s", paths[i], strerror(errno));
    }
    if (st == TR_OK) {
        tr_output of;
        FILE *out = tr_output_fopen(&of, output ? output : "-", &err);
        if (!out)
            st = err.status ? err.status : TR_ERR_RUNTIME;
        else if ((st = tr_export_folded(in, names, n, normalize, o, out, &err)) == TR_OK)
            st = tr_output_commit(&of, &err);
        else
            tr_output_abort(&of);
    }
    for (int i = 0; i < n; i++)
        if (in[i] && in[i] != stdin)
            fclose(in[i]);
    if (st != TR_OK) {
        fputs("trace-export: ", stderr);
        tr_put_line(stderr, err.msg);
    }
    return st;
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"stacks", no_argument, NULL, O_STACKS},     {"flamegraph", no_argument, NULL, O_FLAME},
        {"chrome", no_argument, NULL, O_CHROME},     {"output", required_argument, NULL, 'o'},
        {"metric", required_argument, NULL, O_METRIC},
        {"stack-source", required_argument, NULL, O_SOURCE},
        {"compat", required_argument, NULL, O_COMPAT},
        {"time-range", required_argument, NULL, O_TIME},
        {"thread", required_argument, NULL, O_THREAD},
        {"device", required_argument, NULL, O_DEVICE},
        {"include", required_argument, NULL, O_INCLUDE},
        {"exclude", required_argument, NULL, O_EXCLUDE},
        {"title", required_argument, NULL, O_TITLE}, {"width", required_argument, NULL, O_WIDTH},
        {"minwidth", required_argument, NULL, O_MINWIDTH},
        {"inverted", no_argument, NULL, O_INVERTED}, {"help", no_argument, NULL, 'h'},
        {"events", no_argument, NULL, O_EVENTS},     {"format", required_argument, NULL, O_EVENTS_FORMAT},
        {"html", no_argument, NULL, O_HTML},
        {"diff", no_argument, NULL, O_DIFF},         {"diff-normalize", no_argument, NULL, O_DIFF_NORM},
        {"min-dur", required_argument, NULL, O_MIN_DUR},
        {"max-size", required_argument, NULL, O_MAX_SIZE},
        {"step", required_argument, NULL, O_STEP},
        {"no-cache", no_argument, NULL, O_NO_CACHE},
        {"rank", required_argument, NULL, O_RANK},
        {"folded", no_argument, NULL, O_FOLDED},
        {"version", no_argument, NULL, O_VERSION},   {NULL, 0, NULL, 0}};
    static const char *const format_of[] = {[O_STACKS - O_STACKS] = "stacks",
                                            [O_FLAME - O_STACKS] = "flamegraph",
                                            [O_CHROME - O_STACKS] = "chrome"};
    tr_export_opts o;
    tr_export_opts_init(&o);
    tr_error err;
    tr_error_clear(&err);
    const char *output = NULL;
    int c, rc = 0, selection = 0, diff = 0, diff_norm = 0, chrome_only = 0, no_cache = 0, folded = 0;
    const char *step = NULL;
    tr_export_chrome_stats cstats = {0};
    const char *events_format = "events";
    long long v;
    tr_output_handle_signals();
    tr_debuginfo_stay_offline();
    while (rc == 0 && (c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
        switch (c) {
        case O_STACKS: case O_FLAME: case O_CHROME: {
            const tr_export_format *f = tr_export_format_lookup(format_of[c - O_STACKS]);
            if (o.format && o.format != f)
                rc = usage_error("%s", "choose one of --stacks, --flamegraph, --chrome");
            o.format = f;
            break;
        }
        case 'o':
            output = optarg;
            if (!*output)
                rc = usage_error("%s", "empty output file name (-o - is standard output)");
            break;
        case O_METRIC:
            if (!(o.metric = tr_export_metric_lookup(optarg))) {
                char valid[512], hint[128];
                size_t n = 0;
                valid[0] = '\0';
                for (const tr_export_metric *m = tr_export_metrics; m->name && n < sizeof valid; m++)
                    n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", n ? " " : "", m->name);
                fprintf(stderr, "trace-export: unknown metric '%s'%s (valid: %s)\n", optarg,
                        tr_suggest_hint(hint, sizeof hint, optarg, strlen(optarg), valid), valid);
                rc = TR_ERR_USAGE;
            }
            break;
        case O_SOURCE:
            if (!strcmp(optarg, "frames")) o.source = TR_SRC_FRAMES;
            else if (!strcmp(optarg, "tree")) o.source = TR_SRC_TREE;
            else rc = usage_error("unknown stack source '%s' (valid: frames tree)", optarg);
            break;
        case O_COMPAT:
            if (strcmp(optarg, "torch") != 0)
                rc = usage_error("unknown --compat '%s' (valid: torch)", optarg);
            o.compat_torch = 1;
            break;
        case O_TIME:
            if (tr_export_parse_time_range(&o, optarg, &err) != TR_OK)
                rc = usage_error("%s", err.msg);
            selection = 1;
            break;
        case O_THREAD:
            if (!parse_long(optarg, INT64_MIN, INT64_MAX, &v))
                rc = usage_error("invalid --thread '%s' (a thread id)", optarg);
            o.has_thread = 1, o.thread_tid = v, selection = 1;
            break;
        case O_DEVICE:
            if (!parse_long(optarg, 0, INT64_MAX, &v))
                rc = usage_error("invalid --device '%s' (a device number)", optarg);
            o.has_device = 1, o.device = v, selection = 1;
            break;
        case O_RANK:
            if (tr_rank_set_parse(&o.ranks, optarg, &err) != TR_OK)
                rc = usage_error("%s", err.msg);
            selection = 1;
            break;
        case O_INCLUDE: case O_EXCLUDE:
            if (tr_export_set_regex(&o, c == O_EXCLUDE, optarg, &err) != TR_OK)
                rc = usage_error("%s", err.msg);
            selection = 1;
            break;
        case O_TITLE: o.title = optarg; break;
        case O_WIDTH:
            if (!parse_long(optarg, 100, 1000000, &v))
                rc = usage_error("invalid --width '%s' (pixels, 100..1000000)", optarg);
            o.width = (int)v;
            break;
        case O_MINWIDTH: {
            char *end;
            o.minwidth = strtod(optarg, &end);
            if (!*optarg || *end || !(o.minwidth >= 0 && o.minwidth <= 1e6))
                rc = usage_error("invalid --minwidth '%s' (pixels)", optarg);
            break;
        }
        case O_INVERTED: o.inverted = 1; break;
        case O_HTML:
            if (o.format && o.format != &tr_export_html_format)
                rc = usage_error("%s", "choose one output: --stacks, --flamegraph, --chrome or --html");
            o.format = &tr_export_html_format;
            break;
        case O_EVENTS:
            if (o.format && o.format != tr_export_format_lookup(events_format))
                rc = usage_error("%s", "choose one of --stacks, --flamegraph, --chrome, --events");
            o.format = tr_export_format_lookup(events_format);
            break;
        case O_EVENTS_FORMAT:
            if (!strcmp(optarg, "jsonl")) events_format = "events";
            else if (!strcmp(optarg, "csv")) events_format = "events-csv";
            else rc = usage_error("unknown --format '%s' (valid: jsonl csv; goes with --events)", optarg);
            if (o.format && !strncmp(o.format->name, "events", 6))
                o.format = tr_export_format_lookup(events_format);
            break;
        case O_DIFF: diff = 1; break;
        case O_DIFF_NORM: diff_norm = 1; break;
        case O_MIN_DUR:
            if (tr_export_parse_dur(optarg, &o.min_dur, &err) != TR_OK)
                rc = usage_error("--min-dur: %s", err.msg);
            chrome_only = 1;
            break;
        case O_MAX_SIZE:
            if (tr_export_parse_size(optarg, &o.max_size, &err) != TR_OK)
                rc = usage_error("--max-size: %s", err.msg);
            chrome_only = 1;
            break;
        case O_STEP: step = optarg; selection = 1; break;
        case O_NO_CACHE: no_cache = 1; break;
        case O_FOLDED: folded = 1; break;
        case 'h': usage(stdout); tr_export_opts_free(&o); return 0;
        case O_VERSION: printf("trace-export %s\n", TR_VERSION); tr_export_opts_free(&o); return 0;
        default: rc = usage_error("%s", "try 'trace-export --help'");
        }
    }
    if (rc == 0 && !o.format)
        rc = usage_error("%s", "choose an output: --stacks, --flamegraph or --chrome "
                               "(try 'trace-export --help')");
    else if (rc == 0 && folded) {
        int rc2 = folded_usage(&o, argc - optind, diff, diff_norm, selection || step || chrome_only || no_cache);
        if (rc2 == 0)
            rc2 = run_folded(argv + optind, argc - optind, diff_norm, output, &o);
        tr_export_opts_free(&o);
        return rc2;
    }
    else if (rc == 0 && diff_norm && !diff)
        rc = usage_error("%s", "--diff-normalize goes with --diff");
    else if (rc == 0 && diff && (argc - optind != 2 || o.compat_torch || o.format == tr_export_format_lookup("chrome")
                                 || o.format == &tr_export_html_format))
        rc = usage_error("%s", "--diff takes BASE.db NEW.db, with --stacks or --flamegraph");
    else if (rc == 0 && !diff && optind != argc - 1)
        rc = usage_error("%s", optind >= argc ? "no run database given" : "exactly one run database expected");
    else if (rc == 0 && o.compat_torch && (o.format != tr_export_format_lookup("stacks") || selection))
        rc = usage_error("%s", "--compat torch goes with --stacks only, without selection options");
    else if (rc == 0 && chrome_only && o.format != tr_export_format_lookup("chrome"))
        rc = usage_error("%s", "--min-dur and --max-size go with --chrome");
    else if (rc == 0 && step && (o.has_time_range || diff))
        rc = usage_error("%s", "--step and --time-range (or --diff) do not go together");
    else if (rc == 0 && o.max_size && (!output || !strcmp(output, "-")))
        rc = usage_error("%s", "--max-size writes numbered files: give -o FILE");
    if (rc) {
        tr_export_opts_free(&o);
        return rc;
    }
    sqlite3 *db = NULL;
    size_t skipped = 0;
    o.skipped = &skipped;
    o.chrome_stats = &cstats;
    o.gzip = output && strlen(output) > 3 && !strcmp(output + strlen(output) - 3, ".gz");
    /* no -o: standard output, as documented */
    tr_status st = tr_output_check_inputs(output, (const char *const *)argv + optind, 1 + diff, &err);
    /* a trace instead of a run.db: its cached (or temporary) run database */
    tr_input_db in[2] = {{0}, {0}};
    tr_input_warnings w = {"trace-export", 0};
    tr_ingest_opts io = {.warn = tr_input_warn_stderr, .warn_ctx = &w};
    for (int i = 0; i <= diff && st == TR_OK; i++)
        st = tr_input_open(argv[optind + i], no_cache, &io, &in[i], &err);
    if (st == TR_OK)
        st = tr_rundb_open(in[0].path, &db, &err);
    if (st == TR_OK && o.has_thread)
        st = tr_list_check_filter(db, argv[optind], "thread", o.thread_tid, &err);
    if (st == TR_OK && o.has_device)
        st = tr_list_check_filter(db, argv[optind], "device", o.device, &err);
    /* --diff: each run's ranks count from 0 (as trace-analyze --diff) */
    int64_t bases[2];
    const char *ipaths[2] = {in[0].path, in[1].path};
    if (st == TR_OK)
        st = tr_ranks_prepare(ipaths, (const char *const *)argv + optind, (size_t)(1 + diff), diff, &o.ranks, bases,
                              warn_line, NULL, &err);
    if (st == TR_OK && step)
        st = tr_export_step_window(db, step, &o, &err);
    /* on a terminal, a progress line: the run.db read so far, and its rate */
    tr_progress *prog = NULL;
    if (st == TR_OK && tr_progress_wanted() && (prog = tr_progress_start("trace-export", NULL, NULL))) {
        struct stat sb;
        char label[128];
        snprintf(label, sizeof label, "writing %s", o.format ? o.format->name : "the export");
        tr_progress_phase(prog, label, stat(in[0].path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
    }
    if (st == TR_OK && o.max_size) {
        st = tr_export_chrome_parts(db, &o, output, &err);
    } else if (st == TR_OK) {
        tr_output of;
        FILE *out = tr_output_fopen(&of, output ? output : "-", &err);
        if (!out) {
            st = err.status ? err.status : TR_ERR_RUNTIME;
        } else {
            st = diff ? tr_export_diff(in[0].path, in[1].path, diff_norm, &o, out, &err)
                      : tr_export_run(db, &o, out, &err);
            if (st == TR_OK)
                st = tr_output_commit(&of, &err);
            else
                tr_output_abort(&of);
        }
    }
    tr_progress_stop(prog);
    if (db)
        sqlite3_close(db);
    tr_input_release(&in[0]);
    tr_input_release(&in[1]);
    tr_export_opts_free(&o);
    if (st != TR_OK) {
        fputs("trace-export: ", stderr);
        tr_put_line(stderr, err.msg);
        return st;
    }
    if (skipped)
        fprintf(stderr, "trace-export: %s: warning: %zu event(s) with impossible times "
                "(an end before the start, or out of range) left out\n", argv[optind], skipped);
    tr_export_chrome_warn(stderr, &cstats);
    return 0;
}
