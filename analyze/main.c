/* trace-analyze: PyTorch key_averages()-style tables from a run database. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "analyze/diff.h"
#include "analyze/list.h"
#include "analyze/report.h"
#include "ingest/any_input.h"
#include "lib/debuginfo.h"
#include "lib/escape.h"
#include "lib/output.h"
#include "lib/rundb.h"
#include "lib/suggest.h"
#include "lib/version.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-analyze [options] run.db|TRACE [run.db|TRACE...]\n"
            "       trace-analyze --diff [options] BASE.db NEW.db\n"
            "\n"
            "Prints the events grouped by name in the layout of PyTorch's\n"
            "prof.key_averages().table(), with correct numbers (docs/semantics.md).\n"
            "A TRACE (any input of trace-ingest) is ingested into a cache under\n"
            "$XDG_CACHE_HOME/tracekit (~/.cache/tracekit), reused while it is unchanged.\n"
            "\n"
            "Grouping and order:\n"
            "      --group-by-shape        group by name and input shapes\n"
            "      --group-by-stack N      group by name and the innermost N stack frames (recorded\n"
            "                              frames, or the range ancestry when there are none)\n"
            "      --stack-source S        auto|frames|tree (default auto; with --compat torch,\n"
            "                              frames, as PyTorch has no others)\n"
            "  -s, --sort KEY              sort descending by KEY (default self_cuda_time_total when\n"
            "                              the trace has GPU time, else self_cpu_time_total)\n"
            "  -n, --limit N               at most N rows (default 100; -1 = all)\n"
            "Selection (combined with AND):\n"
            "      --top-level             host events without a parent (device activities always count);\n"
            "                              with --compat torch, PyTorch's top_level_events_only: the\n"
            "                              names whose first event has no parent, with all their events\n"
            "      --include REGEX         only names matching REGEX (PCRE2; repeatable: any)\n"
            "      --exclude REGEX         not names matching REGEX (repeatable)\n"
            "      --kind K[,K...]         only these kinds: %s\n"
            "      --thread TID            host events of OS thread TID, and GPU work launched from it\n"
            "      --device N              GPU activities on device N\n"
            "      --stream S              GPU activities on stream S\n"
            "      --rank R[,R...]         events of those distributed ranks (ranges A-B too);\n"
            "                              --list ranks shows them (docs/diff.md)\n"
            "      --time-range START:END  events starting in [START, END) after the first event;\n"
            "                              units ns (default), us, ms, s; either end may be empty\n"
            "Output:\n"
            "      --format F              text (default) | csv | json | markdown; csv and json carry\n"
            "                              raw numbers (ns, bytes, counts)\n"
            "      --units U               auto|us|ms|s (text and markdown)\n"
            "      --stats                 add min, max, median and standard deviation of durations\n"
            "      --name-width N          cut names wider than N (default: what the terminal has room\n"
            "                              for, and 55 as PyTorch when not a terminal)\n"
            "      --short-names           C++ names without return type, parameters and deep template\n"
            "                              arguments, distinct in the table (csv/json keep full names)\n"
            "      --compat torch          PyTorch 1.13's own numbers, defects included (its memory\n"
            "                              and self-time rules, its frame filter; docs/semantics.md)\n"
            "      --report R[,R...]       timeline reports instead of the table; --report list names\n"
            "                              them (docs/reports.md); over several run.dbs, rows per rank\n"
            "      --step N|A-B            reports: only the windows of those ProfilerStep#N ranges\n"
            "      --list WHAT             what the run.db(s) hold to select from, with counts: %s\n"
            "                              (--list list describes them)\n"
            "Many runs (docs/diff.md, docs/scale-out.md):\n"
            "      run.db run.db...        one table of all of them, groups joined by name\n"
            "      --diff                  BASE.db NEW.db: the change of every group, largest first\n"
            "      --diff-normalize        with --diff: numbers in template arguments and\n"
            "                              ProfilerStep#N do not tell names apart\n"
            "      --no-cache              ingest a TRACE into a temporary file, removed afterwards\n"
            "  -h, --help                  this help\n"
            "      --version               print the version\n"
            "\n"
            "Sort keys:", tr_kind_choices(), tr_list_names());
    for (size_t i = 0; i < tr_nsort_keys; i++)
        fprintf(f, " %s%s%s%s", tr_sort_keys[i].name, *tr_sort_keys[i].aliases ? " (" : "",
                tr_sort_keys[i].aliases, *tr_sort_keys[i].aliases ? ")" : "");
    fprintf(f, "\n\nExit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad input.\n");
}

static int parse_long(const char *s, long min, long *out)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (!*s || *end || v < min)
        return 0;
    *out = v;
    return 1;
}

static int parse_i64(const char *s, int64_t *out)
{
    char *end;
    long long v = strtoll(s, &end, 0);
    if (!*s || *end)
        return 0;
    *out = v;
    return 1;
}

/* "unknown sort key 'x'; did you mean y? (valid: ...)": the aliases count
 * for the suggestion but the list shows the full names. */
static void list_choices(FILE *f, const char *what, const char *got)
{
    char valid[1024], all[2048];
    size_t n = 0, m = 0;
    valid[0] = all[0] = '\0';
    if (!strcmp(what, "sort key"))
        for (size_t i = 0; i < tr_nsort_keys; i++) {
            n += (size_t)snprintf(valid + n, n < sizeof valid ? sizeof valid - n : 0, " %s", tr_sort_keys[i].name);
            m += (size_t)snprintf(all + m, m < sizeof all ? sizeof all - m : 0, " %s %s", tr_sort_keys[i].name,
                                  tr_sort_keys[i].aliases);
        }
    else if (!strcmp(what, "list")) {
        snprintf(valid, sizeof valid, " %s", tr_list_names());
        snprintf(all, sizeof all, "list %s", tr_list_names());
    }
    else
        for (size_t i = 0; i < tr_noutput_formats; i++)
            n += (size_t)snprintf(valid + n, n < sizeof valid ? sizeof valid - n : 0, " %s",
                                  tr_output_formats[i].name);
    char hint[128];
    tr_suggest_hint(hint, sizeof hint, got, strlen(got), all[0] ? all : valid);
    fprintf(f, "trace-analyze: unknown %s '%s'%s (valid:%s)\n", what, got, hint, valid);
}

/* The rank checks' warnings (lib/ranks.h): one line each. */
static void warn_line(void *ctx, const char *msg)
{
    (void)ctx;
    fputs("trace-analyze: warning: ", stderr);
    tr_put_line(stderr, msg);
}

/* --diff, and more than one run.db: the same selection and formats, one output. */
static int run_many(char **args, int n, int diff, int diff_norm, int no_cache, const tr_analyze_opts *o,
                    const tr_sort_key *sort, tr_report_opts *reports, tr_selection *sel, const tr_list *list)
{
    tr_error err;
    tr_error_clear(&err);
    tr_status st = TR_OK;
    /* traces among the inputs: their run databases, ingested or cached */
    tr_input_warnings w = {"trace-analyze", 0};
    tr_ingest_opts io = {.warn = tr_input_warn_stderr, .warn_ctx = &w};
    tr_input_db *in = calloc((size_t)n, sizeof *in);
    char **paths = calloc((size_t)n, sizeof *paths);
    int64_t *bases = calloc((size_t)n, sizeof *bases);
    if (!in || !paths || !bases)
        st = tr_fail(&err, TR_ERR_RUNTIME, "out of memory");
    for (int i = 0; i < n && st == TR_OK; i++)
        if ((st = tr_input_open(args[i], no_cache, &io, &in[i], &err)) == TR_OK)
            paths[i] = in[i].path;
    if (st != TR_OK) {
        /* err says which input could not be read */
    } else if (diff_norm && !diff)
        st = tr_fail(&err, TR_ERR_USAGE, "--diff-normalize goes with --diff");
    else if (diff && n != 2)
        st = tr_fail(&err, TR_ERR_USAGE, "--diff takes two run databases: BASE.db NEW.db");
    else if (reports->n && diff)
        st = tr_fail(&err, TR_ERR_USAGE, "--report does not go with --diff");
    else if (list && diff)
        st = tr_fail(&err, TR_ERR_USAGE, "--list does not go with --diff");
    else if ((st = tr_list_check_selection_any((const char *const *)paths, (const char *const *)args, n, sel,
                                               &err)) != TR_OK) {
        /* err names what the first file has */
    } else if ((st = tr_ranks_prepare((const char *const *)paths, (const char *const *)args, (size_t)n, diff,
                                      &sel->ranks, bases, warn_line, NULL, &err)) != TR_OK) {
        /* err names the ranks the inputs have */
    } else if (list) {
        st = tr_list_print_many((const char *const *)paths, (const char *const *)args, bases, (size_t)n, list, sel,
                                o->format->name, stdout, &err);
    } else if (reports->n) {
        st = tr_report_run_paths((const char *const *)paths, (const char *const *)args, (size_t)n, reports, o,
                                 stdout, stderr, &err);
    } else if (diff) {
        tr_diff_opts d = {paths[0], paths[1], diff_norm, sort};
        st = tr_diff_run(&d, o, stdout, stderr, &err);
    } else {
        st = tr_analyze_merged(paths, (size_t)n, o, sort, stdout, stderr, &err);
    }
    tr_report_opts_free(reports);
    tr_selection_free(sel);
    for (int i = 0; in && i < n; i++)
        tr_input_release(&in[i]);
    free(in);
    free(paths);
    free(bases);
    if (st == TR_OK && fflush(stdout) != 0)
        st = tr_fail(&err, TR_ERR_RUNTIME, "write error on standard output");
    if (st != TR_OK && err.msg[0]) {
        fputs("trace-analyze: ", stderr);
        tr_put_line(stderr, err.msg);
    }
    return st;
}

/* An unknown report name in a --report list gets the closest one suggested
 * (the message is otherwise report.c's own). */
static void report_hint(tr_error *err, const char *spec)
{
    char names[512] = "list";
    size_t k = strlen(names);
    for (size_t i = 0; i < tr_nreports && k < sizeof names; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, " %s", tr_reports[i].name);
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ","), nn = strcspn(p, ",:"), i = 0;
        while (i < tr_nreports && (strlen(tr_reports[i].name) != nn || strncmp(tr_reports[i].name, p, nn)))
            i++;
        char hint[128];
        if (i == tr_nreports && !(nn == 4 && !strncmp(p, "list", 4))
            && *tr_suggest_hint(hint, sizeof hint, p, nn, names)) {
            tr_fail(err, TR_ERR_USAGE, "unknown report '%.*s'%s (valid: %s)", (int)nn, p, hint, names + 5);
            return;
        }
        p += n;
        p += *p == ',';
    }
}

enum { O_SHAPE = 256, O_STACK, O_STACK_SRC, O_TOP, O_INCLUDE, O_EXCLUDE, O_KIND, O_THREAD, O_DEVICE,
       O_STREAM, O_TIME, O_FORMAT, O_UNITS, O_STATS, O_VERSION, O_RANK };
enum { O_REPORT = 512, O_COMPAT };
enum { O_STEP = 600 };
enum { O_DIFF = 800, O_DIFF_NORM };
enum { O_LIST = 700 };
enum { O_NAME_WIDTH = 900, O_SHORT_NAMES, O_NO_CACHE };

static const struct option longopts[] = {
    {"sort", required_argument, NULL, 's'},           {"limit", required_argument, NULL, 'n'},
    {"group-by-shape", no_argument, NULL, O_SHAPE},   {"group-by-stack", required_argument, NULL, O_STACK},
    {"stack-source", required_argument, NULL, O_STACK_SRC}, {"top-level", no_argument, NULL, O_TOP},
    {"include", required_argument, NULL, O_INCLUDE},  {"exclude", required_argument, NULL, O_EXCLUDE},
    {"kind", required_argument, NULL, O_KIND},        {"thread", required_argument, NULL, O_THREAD},
    {"device", required_argument, NULL, O_DEVICE},    {"stream", required_argument, NULL, O_STREAM},
    {"rank", required_argument, NULL, O_RANK},
    {"time-range", required_argument, NULL, O_TIME},  {"format", required_argument, NULL, O_FORMAT},
    {"units", required_argument, NULL, O_UNITS},      {"stats", no_argument, NULL, O_STATS},
    {"help", no_argument, NULL, 'h'},                 {"version", no_argument, NULL, O_VERSION},
    {"report", required_argument, NULL, O_REPORT},
    {"step", required_argument, NULL, O_STEP},
    {"diff", no_argument, NULL, O_DIFF},              {"diff-normalize", no_argument, NULL, O_DIFF_NORM},
    {"list", required_argument, NULL, O_LIST},
    {"compat", required_argument, NULL, O_COMPAT},
    {"name-width", required_argument, NULL, O_NAME_WIDTH}, {"short-names", no_argument, NULL, O_SHORT_NAMES},
    {"no-cache", no_argument, NULL, O_NO_CACHE},
    {NULL, 0, NULL, 0}};

/* The command line, as read. */
typedef struct {
    tr_analyze_opts o;
    tr_selection sel;
    tr_report_opts reports;
    const tr_sort_key *sort;   /* NULL: by self GPU time when there is some, else self CPU */
    const tr_list *list;
    int list_names;            /* --list list */
    int diff, diff_norm, no_cache;
    int done;                  /* --help or --version has been answered */
} analyze_args;

/* A usage error already printed (a list of choices): no message of its own. */
static tr_status printed_usage(tr_error *err)
{
    err->msg[0] = '\0';
    return TR_ERR_USAGE;
}

/* An option that selects events: 1 with its status in *st, or 0 if c is not one. */
static int parse_selection(analyze_args *a, int c, const char *arg, tr_error *err, tr_status *st)
{
    tr_selection *sel = &a->sel;
    switch (c) {
    case O_TOP: sel->top_level = 1; break;
    case O_INCLUDE: *st = tr_selection_add_regex(sel, 0, arg, err); break;
    case O_EXCLUDE: *st = tr_selection_add_regex(sel, 1, arg, err); break;
    case O_KIND: *st = tr_selection_parse_kinds(sel, arg, err); break;
    case O_THREAD:
        sel->has_thread = 1;
        if (!parse_i64(arg, &sel->thread))
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --thread '%s' (an OS thread id)", arg);
        break;
    case O_DEVICE:
        sel->has_device = 1;
        if (!parse_i64(arg, &sel->device))
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --device '%s' (a device ordinal)", arg);
        break;
    case O_STREAM:
        sel->has_stream = 1;
        if (!parse_i64(arg, &sel->stream))
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --stream '%s' (a stream id)", arg);
        break;
    case O_RANK: *st = tr_rank_set_parse(&sel->ranks, arg, err); break;
    case O_TIME:
        sel->has_time = 1;
        *st = tr_parse_time_range(arg, &sel->time_start, &sel->time_end, err);
        break;
    default: return 0;
    }
    return 1;
}

/* A choice among words: sets *v to the value of the word arg is, else fails with
 * "unknown WHAT 'ARG' (valid: ...)". */
typedef struct { const char *word; int value; } word_choice;

static tr_status choose(const word_choice *w, size_t n, const char *what, const char *arg, int *v, tr_error *err)
{
    char valid[128];
    size_t k = 0;
    valid[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(arg, w[i].word)) {
            *v = w[i].value;
            return TR_OK;
        }
        k += (size_t)snprintf(valid + k, sizeof valid - k, "%s%s", i ? " " : "", w[i].word);
    }
    return tr_fail(err, TR_ERR_USAGE, "unknown %s '%s' (valid: %s)", what, arg, valid);
}

/* An option that shapes the table (sorting, grouping, units, format): 1 with
 * its status in *st, or 0 if c is not one. */
static int parse_table(analyze_args *a, int c, const char *arg, tr_error *err, tr_status *st)
{
    static const word_choice sources[] = {
        {"auto", TR_STACK_AUTO}, {"frames", TR_STACK_FRAMES}, {"tree", TR_STACK_TREE}};
    static const word_choice units[] = {
        {"auto", TR_UNIT_AUTO}, {"us", TR_UNIT_US}, {"ms", TR_UNIT_MS}, {"s", TR_UNIT_S}};
    tr_analyze_opts *o = &a->o;
    long w = 0;
    int v = 0;
    switch (c) {
    case 's':
        if (!(a->sort = tr_sort_key_lookup(arg))) {
            list_choices(stderr, "sort key", arg);
            *st = printed_usage(err);
        }
        break;
    case 'n':
        if (!parse_long(arg, -1, &o->limit))
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --limit '%s' (a row count, or -1 for all)", arg);
        break;
    case O_SHAPE: o->group_by_shape = 1; break;
    case O_STACK:
        if (!parse_long(arg, 1, &o->group_by_stack))
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --group-by-stack '%s' (a frame count >= 1)", arg);
        break;
    case O_STACK_SRC:
        if ((*st = choose(sources, sizeof sources / sizeof sources[0], "stack source", arg, &v, err)) == TR_OK)
            o->stack_source = v;
        break;
    case O_FORMAT:
        if (!(o->format = tr_output_format_lookup(arg))) {
            list_choices(stderr, "format", arg);
            *st = printed_usage(err);
        }
        break;
    case O_UNITS:
        if ((*st = choose(units, sizeof units / sizeof units[0], "unit", arg, &v, err)) == TR_OK)
            o->unit = v;
        break;
    case O_STATS: o->stats = 1; break;
    case O_NAME_WIDTH:
        if (!parse_long(arg, 8, &w) || w > 100000)
            *st = tr_fail(err, TR_ERR_USAGE, "invalid --name-width '%s' (columns, 8 or more)", arg);
        o->name_width = (int)w;
        break;
    case O_SHORT_NAMES: o->short_names = 1; break;
    case O_COMPAT:
        o->compat_torch = 1;
        if (strcmp(arg, "torch") != 0)
            *st = tr_fail(err, TR_ERR_USAGE, "unknown --compat '%s' (valid: torch)", arg);
        break;
    default: return 0;
    }
    return 1;
}

/* One option from getopt_long(). */
static tr_status parse_option(analyze_args *a, int c, const char *arg, tr_error *err)
{
    tr_status st = TR_OK;
    if (parse_selection(a, c, arg, err, &st) || parse_table(a, c, arg, err, &st))
        return st;
    switch (c) {
    case O_NO_CACHE: a->no_cache = 1; break;
    case O_REPORT:
        if ((st = tr_report_opts_add(&a->reports, arg, err)) == TR_ERR_USAGE)
            report_hint(err, arg);
        break;
    case O_STEP: st = tr_report_opts_step(&a->reports, arg, err); break;
    case O_DIFF: a->diff = 1; break;
    case O_DIFF_NORM: a->diff_norm = 1; break;
    case O_LIST:
        if (!strcmp(arg, "list"))
            a->list_names = 1;
        else if (!(a->list = tr_list_lookup(arg))) {
            list_choices(stderr, "list", arg);
            st = printed_usage(err);
        }
        break;
    case 'h': usage(stdout); a->done = 1; break;
    case O_VERSION: printf("trace-analyze %s\n", TR_VERSION); a->done = 1; break;
    default:
        st = tr_fail(err, TR_ERR_USAGE, "try 'trace-analyze --help'");
    }
    return st;
}

/* The key_averages table of the selected events (tr_summarize()), with its warnings. */
static tr_status write_table(analyze_args *a, sqlite3 *db, const char *name, tr_error *err)
{
    tr_analyze_opts *o = &a->o;
    const tr_selection *sel = &a->sel;
    tr_summary s;
    memset(&s, 0, sizeof s);
    tr_status st = tr_summarize(db, o, &s, err);
    if (st == TR_OK) {
        o->sort = a->sort ? a->sort : tr_sort_key_lookup(s.has_gpu ? "self_cuda_time_total" : "self_cpu_time_total");
        tr_summary_sort(&s, o->sort);
        if (s.skipped)
            fprintf(stderr, "trace-analyze: %s: warning: %lld event(s) with impossible times "
                    "(an end before the start, or out of range) left out\n", name, (long long)s.skipped);
        if (s.n == 0 && !s.skipped)   /* the warning above already says why */
            fprintf(stderr, "trace-analyze: %s: no events%s\n", name,
                    s.events == 0 && (sel->kind_mask || sel->include || sel->exclude || sel->has_thread
                                      || sel->has_device || sel->has_stream || sel->has_time || sel->top_level
                                      || sel->ranks.n)
                        ? " selected" : "");
        int alike = 0;
        o->names_alike = &alike;
        st = o->format->write(stdout, &s, o, err);
        if (st == TR_OK && alike && isatty(STDOUT_FILENO))   /* a hint for the person reading */
            fprintf(stderr, "trace-analyze: some names read alike once cut: --short-names tells them apart\n");
    }
    tr_summary_free(&s);
    return st;
}

/* One run database (or a trace: its cached or temporary run database): the
 * --list, the reports, or the table. */
static tr_status analyze_one(analyze_args *a, const char *path, tr_error *err)
{
    sqlite3 *db = NULL;
    tr_input_db in = {0};
    tr_input_warnings w = {"trace-analyze", 0};
    tr_ingest_opts io = {.warn = tr_input_warn_stderr, .warn_ctx = &w};
    tr_status st = tr_input_open(path, a->no_cache, &io, &in, err);
    if (st == TR_OK)
        st = tr_rundb_open(in.path, &db, err);
    if (st == TR_OK)
        st = tr_list_check_selection(db, path, &a->sel, err);
    int64_t base = 0;
    if (st == TR_OK)
        st = tr_ranks_prepare((const char *const *)&in.path, &path, 1, 0, &a->sel.ranks, &base, warn_line, NULL,
                              err);
    if (st == TR_OK)
        st = tr_selection_bind(&a->sel, db, err);
    if (st == TR_OK && a->list)
        st = tr_list_print(db, path, a->list, &a->sel, a->o.format->name, stdout, err);
    else if (st == TR_OK && a->reports.n)
        st = tr_report_run(db, &a->reports, &a->o, stdout, stderr, err);
    else if (st == TR_OK)
        st = write_table(a, db, path, err);
    if (db)
        sqlite3_close(db);
    tr_input_release(&in);
    return st;
}

static void args_free(analyze_args *a)
{
    tr_report_opts_free(&a->reports);
    tr_selection_free(&a->sel);
}

int main(int argc, char **argv)
{
    /* a closed pipe (trace-analyze | head) ends the tool quietly, the same way
     * whatever SIGPIPE disposition it inherited */
    tr_output_handle_signals();
    tr_debuginfo_stay_offline();
    analyze_args a;
    memset(&a, 0, sizeof a);
    a.o.limit = 100;
    a.o.select = &a.sel;
    a.o.format = &tr_output_formats[0];
    tr_error err;
    tr_error_clear(&err);
    tr_status st = TR_OK;
    int c;
    while (st == TR_OK && !a.done && (c = getopt_long(argc, argv, "s:n:h", longopts, NULL)) != -1)
        st = parse_option(&a, c, optarg, &err);
    int nargs = argc - optind;
    if (st == TR_OK && !a.done && a.reports.has_step && !a.reports.n && !a.reports.list)
        st = tr_fail(&err, TR_ERR_USAGE, "--step applies to --report (the key_averages table does not take it yet)");
    if (st == TR_OK && !a.done && (a.reports.list || a.list_names)) {
        if (a.reports.list)
            tr_report_print_list(stdout);
        else
            tr_list_print_choices(stdout);
        a.done = 1;
    }
    if (a.done) {
        args_free(&a);
        return 0;
    }
    if (st == TR_OK && (a.diff || a.diff_norm || nargs > 1))
        return run_many(argv + optind, nargs, a.diff, a.diff_norm, a.no_cache, &a.o, a.sort, &a.reports, &a.sel,
                        a.list);
    if (st == TR_OK && nargs != 1)
        st = tr_fail(&err, TR_ERR_USAGE, "%s", nargs < 1
                     ? "no run database given (try 'trace-analyze --help')"
                     : "exactly one run database expected");
    if (st == TR_OK)
        st = analyze_one(&a, argv[optind], &err);
    args_free(&a);
    if (st == TR_OK && fflush(stdout) != 0)
        st = tr_fail(&err, TR_ERR_RUNTIME, "write error on standard output");
    if (st != TR_OK) {
        if (err.msg[0]) {
            fputs("trace-analyze: ", stderr);
            tr_put_line(stderr, err.msg);   /* one line, whatever the file name holds */
        }
        return st;
    }
    return 0;
}
