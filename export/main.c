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
            "usage: trace-export --stacks|--flamegraph|--chrome|--html|--events [-o FILE] [options] run.db|TRACE\n"
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

/* The command line, as read. */
typedef struct {
    tr_export_opts o;
    const char *output, *step;
    const char *events_format;   /* the --events writer --format names */
    int selection;               /* an option that selects events */
    int chrome_only;             /* --min-dur or --max-size */
    int diff, diff_norm, no_cache, folded;
} export_args;

#define EXIT_NOW (-1)   /* --help or --version has been answered */

/* One output format option; 0 or TR_ERR_USAGE. */
static int set_format(export_args *a, const tr_export_format *f, const char *choices)
{
    if (a->o.format && a->o.format != f)
        return usage_error("%s", choices);
    a->o.format = f;
    return 0;
}

static int unknown_metric(const char *arg)
{
    char valid[512], hint[128];
    size_t n = 0;
    valid[0] = '\0';
    for (const tr_export_metric *m = tr_export_metrics; m->name && n < sizeof valid; m++)
        n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", n ? " " : "", m->name);
    fprintf(stderr, "trace-export: unknown metric '%s'%s (valid: %s)\n", arg,
            tr_suggest_hint(hint, sizeof hint, arg, strlen(arg), valid), valid);
    return TR_ERR_USAGE;
}

/* An option that selects events or shapes the output; 0, TR_ERR_USAGE, or -2 if c is not one. */
static int parse_selection(export_args *a, int c, const char *arg, tr_error *err)
{
    tr_export_opts *o = &a->o;
    long long v;
    switch (c) {
    case O_TIME:
        a->selection = 1;
        return tr_export_parse_time_range(o, arg, err) == TR_OK ? 0 : usage_error("%s", err->msg);
    case O_THREAD:
        o->has_thread = 1, a->selection = 1;
        if (!parse_long(arg, INT64_MIN, INT64_MAX, &v))
            return usage_error("invalid --thread '%s' (a thread id)", arg);
        o->thread_tid = v;
        return 0;
    case O_DEVICE:
        o->has_device = 1, a->selection = 1;
        if (!parse_long(arg, 0, INT64_MAX, &v))
            return usage_error("invalid --device '%s' (a device number)", arg);
        o->device = v;
        return 0;
    case O_RANK:
        a->selection = 1;
        return tr_rank_set_parse(&o->ranks, arg, err) == TR_OK ? 0 : usage_error("%s", err->msg);
    case O_INCLUDE: case O_EXCLUDE:
        a->selection = 1;
        return tr_export_set_regex(o, c == O_EXCLUDE, arg, err) == TR_OK ? 0 : usage_error("%s", err->msg);
    case O_STEP:
        a->step = arg, a->selection = 1;
        return 0;
    case O_MIN_DUR:
        a->chrome_only = 1;
        return tr_export_parse_dur(arg, &o->min_dur, err) == TR_OK ? 0 : usage_error("--min-dur: %s", err->msg);
    case O_MAX_SIZE:
        a->chrome_only = 1;
        return tr_export_parse_size(arg, &o->max_size, err) == TR_OK ? 0 : usage_error("--max-size: %s", err->msg);
    default:
        return -2;
    }
}

/* A flamegraph's drawing: title, width, minimum width, inverted. */
static int parse_drawing(export_args *a, int c, const char *arg)
{
    tr_export_opts *o = &a->o;
    long long v;
    char *end;
    switch (c) {
    case O_TITLE: o->title = arg; return 0;
    case O_WIDTH:
        if (!parse_long(arg, 100, 1000000, &v))
            return usage_error("invalid --width '%s' (pixels, 100..1000000)", arg);
        o->width = (int)v;
        return 0;
    case O_MINWIDTH:
        o->minwidth = strtod(arg, &end);
        if (!*arg || *end || !(o->minwidth >= 0 && o->minwidth <= 1e6))
            return usage_error("invalid --minwidth '%s' (pixels)", arg);
        return 0;
    case O_INVERTED: o->inverted = 1; return 0;
    default: return -2;
    }
}

/* One option from getopt_long(); 0, TR_ERR_USAGE or EXIT_NOW. */
static int parse_option(export_args *a, int c, const char *arg, tr_error *err)
{
    static const char *const format_of[] = {[O_STACKS - O_STACKS] = "stacks",
                                            [O_FLAME - O_STACKS] = "flamegraph",
                                            [O_CHROME - O_STACKS] = "chrome"};
    tr_export_opts *o = &a->o;
    int rc = parse_selection(a, c, arg, err);
    if (rc == -2)
        rc = parse_drawing(a, c, arg);
    if (rc != -2)
        return rc;
    switch (c) {
    case O_STACKS: case O_FLAME: case O_CHROME:
        return set_format(a, tr_export_format_lookup(format_of[c - O_STACKS]),
                          "choose one of --stacks, --flamegraph, --chrome");
    case O_HTML:
        return set_format(a, &tr_export_html_format, "choose one output: --stacks, --flamegraph, --chrome or --html");
    case O_EVENTS:
        return set_format(a, tr_export_format_lookup(a->events_format),
                          "choose one of --stacks, --flamegraph, --chrome, --events");
    case O_EVENTS_FORMAT:
        if (!strcmp(arg, "jsonl")) a->events_format = "events";
        else if (!strcmp(arg, "csv")) a->events_format = "events-csv";
        else rc = usage_error("unknown --format '%s' (valid: jsonl csv; goes with --events)", arg);
        if (o->format && !strncmp(o->format->name, "events", 6))
            o->format = tr_export_format_lookup(a->events_format);
        return rc == -2 ? 0 : rc;
    case 'o':
        a->output = arg;
        return *arg ? 0 : usage_error("%s", "empty output file name (-o - is standard output)");
    case O_METRIC:
        return (o->metric = tr_export_metric_lookup(arg)) ? 0 : unknown_metric(arg);
    case O_SOURCE:
        if (!strcmp(arg, "frames")) o->source = TR_SRC_FRAMES;
        else if (!strcmp(arg, "tree")) o->source = TR_SRC_TREE;
        else return usage_error("unknown stack source '%s' (valid: frames tree)", arg);
        return 0;
    case O_COMPAT:
        o->compat_torch = 1;
        return strcmp(arg, "torch") ? usage_error("unknown --compat '%s' (valid: torch)", arg) : 0;
    case O_DIFF: a->diff = 1; return 0;
    case O_DIFF_NORM: a->diff_norm = 1; return 0;
    case O_NO_CACHE: a->no_cache = 1; return 0;
    case O_FOLDED: a->folded = 1; return 0;
    case 'h': usage(stdout); return EXIT_NOW;
    case O_VERSION: printf("trace-export %s\n", TR_VERSION); return EXIT_NOW;
    default: return usage_error("%s", "try 'trace-export --help'");
    }
}

/* The options that do not go together, and the run databases given (nargs of them). */
static int check_args(const export_args *a, int nargs)
{
    const tr_export_opts *o = &a->o;
    if (a->diff_norm && !a->diff)
        return usage_error("%s", "--diff-normalize goes with --diff");
    if (a->diff && (nargs != 2 || o->compat_torch || o->format == tr_export_format_lookup("chrome")
                    || o->format == &tr_export_html_format))
        return usage_error("%s", "--diff takes BASE.db NEW.db, with --stacks or --flamegraph");
    if (!a->diff && nargs != 1)
        return usage_error("%s", nargs < 1 ? "no run database given" : "exactly one run database expected");
    if (o->compat_torch && (o->format != tr_export_format_lookup("stacks") || a->selection))
        return usage_error("%s", "--compat torch goes with --stacks only, without selection options");
    if (a->chrome_only && o->format != tr_export_format_lookup("chrome"))
        return usage_error("%s", "--min-dur and --max-size go with --chrome");
    if (a->step && (o->has_time_range || a->diff))
        return usage_error("%s", "--step and --time-range (or --diff) do not go together");
    if (o->max_size && (!a->output || !strcmp(a->output, "-")))
        return usage_error("%s", "--max-size writes numbered files: give -o FILE");
    return 0;
}

/* On a terminal, a progress line: the run.db read so far, and its rate. */
static tr_progress *start_progress(const tr_export_opts *o, const char *path)
{
    tr_progress *prog = NULL;
    if (tr_progress_wanted() && (prog = tr_progress_start("trace-export", NULL, NULL))) {
        struct stat sb;
        char label[128];
        snprintf(label, sizeof label, "writing %s", o->format ? o->format->name : "the export");
        tr_progress_phase(prog, label, stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0);
    }
    return prog;
}

/* Writes the export of db (or of the two runs of --diff) to the output. */
static tr_status write_export(export_args *a, sqlite3 *db, const tr_input_db *in, tr_error *err)
{
    if (a->o.max_size)
        return tr_export_chrome_parts(db, &a->o, a->output, err);
    tr_output of;
    FILE *out = tr_output_fopen(&of, a->output ? a->output : "-", err);
    if (!out)
        return err->status ? err->status : TR_ERR_RUNTIME;
    tr_status st = a->diff ? tr_export_diff(in[0].path, in[1].path, a->diff_norm, &a->o, out, err)
                           : tr_export_run(db, &a->o, out, err);
    if (st == TR_OK)
        st = tr_output_commit(&of, err);
    else
        tr_output_abort(&of);
    return st;
}

/* Opens the inputs (a trace instead of a run.db: its cached or temporary run
 * database), checks the selection against them and writes the export. */
static tr_status run_export(export_args *a, char **paths, tr_input_db in[2], tr_error *err)
{
    tr_export_opts *o = &a->o;
    int n = 1 + a->diff;
    sqlite3 *db = NULL;
    /* no -o: standard output, as documented */
    tr_status st = tr_output_check_inputs(a->output, (const char *const *)paths, n, err);
    tr_input_warnings w = {"trace-export", 0};
    tr_ingest_opts io = {.warn = tr_input_warn_stderr, .warn_ctx = &w};
    for (int i = 0; i < n && st == TR_OK; i++)
        st = tr_input_open(paths[i], a->no_cache, &io, &in[i], err);
    if (st == TR_OK)
        st = tr_rundb_open(in[0].path, &db, err);
    if (st == TR_OK && o->has_thread)
        st = tr_list_check_filter(db, paths[0], "thread", o->thread_tid, err);
    if (st == TR_OK && o->has_device)
        st = tr_list_check_filter(db, paths[0], "device", o->device, err);
    /* --diff: each run's ranks count from 0 (as trace-analyze --diff) */
    int64_t bases[2];
    const char *ipaths[2] = {in[0].path, in[1].path};
    if (st == TR_OK)
        st = tr_ranks_prepare(ipaths, (const char *const *)paths, (size_t)n, a->diff, &o->ranks, bases,
                              warn_line, NULL, err);
    if (st == TR_OK && a->step)
        st = tr_export_step_window(db, a->step, o, err);
    tr_progress *prog = st == TR_OK ? start_progress(o, in[0].path) : NULL;
    if (st == TR_OK)
        st = write_export(a, db, in, err);
    tr_progress_stop(prog);
    if (db)
        sqlite3_close(db);
    return st;
}

int main(int argc, char **argv)
{
    export_args a = {.events_format = "events"};
    tr_export_opts_init(&a.o);
    tr_error err;
    tr_error_clear(&err);
    tr_output_handle_signals();
    tr_debuginfo_stay_offline();
    int c, rc = 0;
    while (rc == 0 && (c = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1)
        rc = parse_option(&a, c, optarg, &err);
    int nargs = argc - optind;
    if (rc == 0 && !a.o.format)
        rc = usage_error("%s", "choose an output: --stacks, --flamegraph or --chrome "
                               "(try 'trace-export --help')");
    else if (rc == 0 && a.folded) {
        rc = folded_usage(&a.o, nargs, a.diff, a.diff_norm, a.selection || a.step || a.chrome_only || a.no_cache);
        if (rc == 0)
            rc = run_folded(argv + optind, nargs, a.diff_norm, a.output, &a.o);
        tr_export_opts_free(&a.o);
        return rc;
    } else if (rc == 0)
        rc = check_args(&a, nargs);
    if (rc) {
        tr_export_opts_free(&a.o);
        return rc == EXIT_NOW ? 0 : rc;
    }
    size_t skipped = 0;
    int no_frames = 0;
    tr_export_chrome_stats cstats = {0};
    a.o.skipped = &skipped;
    a.o.no_frames = &no_frames;
    a.o.chrome_stats = &cstats;
    a.o.gzip = a.output && strlen(a.output) > 3 && !strcmp(a.output + strlen(a.output) - 3, ".gz");
    tr_input_db in[2] = {{0}, {0}};
    tr_status st = run_export(&a, argv + optind, in, &err);
    tr_input_release(&in[0]);
    tr_input_release(&in[1]);
    tr_export_opts_free(&a.o);
    if (st != TR_OK) {
        fputs("trace-export: ", stderr);
        tr_put_line(stderr, err.msg);
        return st;
    }
    if (skipped)
        fprintf(stderr, "trace-export: %s: warning: %zu event(s) with impossible times "
                "(an end before the start, or out of range) left out\n", argv[optind], skipped);
    if (no_frames)
        fprintf(stderr, "trace-export: %s: warning: no event has recorded frames, so the stacks are "
                "empty (PyTorch's export_stacks() needs a profile recorded with with_stack=True)\n",
                argv[optind]);
    tr_export_chrome_warn(stderr, &cstats);
    return 0;
}
