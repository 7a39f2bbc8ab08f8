/* trace-ingest: reads traces (nvprof databases, ...) into a run database. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "ingest/ingest.h"
#include "lib/debuginfo.h"
#include "lib/escape.h"
#include "lib/format.h"
#include "lib/output.h"
#include "lib/progress.h"
#include "lib/ranks.h"
#include "lib/spill.h"
#include "lib/suggest.h"
#include "lib/tree.h"
#include "lib/version.h"

#define PROG "trace-ingest"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: trace-ingest [-o run.db] [--format NAME] [-q] FILE...\n"
            "\n"
            "Reads GPU traces into one run database (SQLite; see docs/schema.md).\n"
            "A FILE of '-' is standard input.  On a terminal a progress line is shown\n"
            "(TR_PROGRESS=1 forces it, TR_PROGRESS=0 hides it); a summary ends the run.\n"
            "\n"
            "  -o, --output FILE   run database to write (default run.db); written atomically;\n"
            "                      '-' writes it to standard output\n"
            "      --format NAME   skip detection and read every FILE as NAME\n"
            "      --rank N        rank of the first FILE (N+1 of the next, ...) where the\n"
            "                      file gives none (Kineto's distributedInfo); without it,\n"
            "                      the order of the inputs (docs/diff.md)\n"
            "      --max-memory SIZE\n"
            "                      keep resident memory under SIZE (256M, 4G; default\n"
            "                      256M, or half the machine's memory if less): past it,\n"
            "                      the large arrays move to files beside the output\n"
            "                      (docs/ingest.md)\n"
            "  -q, --quiet         no progress, no summary and no warnings on stderr\n"
            "  -h, --help          this help\n"
            "      --version       print the version\n"
            "\n"
            "Formats:\n");
    for (size_t i = 0; i < tr_nreaders; i++)
        fprintf(f, "  %-10s %s\n", tr_readers[i].name, tr_readers[i].description);
    fprintf(f, "\nExit status: 0 ok, 1 runtime failure, 2 usage error, 3 bad or unsupported input.\n");
}

/* ---- warnings: printed as they come, grouped in the summary ---- */

/* Warnings that differ only in their numbers and in the file they name are
 * one group: "3 NVTX range(s) never ended" from each of eight recorded
 * processes is one line of the summary, with the numbers summed. */
typedef struct {
    char *key;       /* the message without its file and with every number as '#' */
    char *first;     /* the first such message, without its file */
    size_t count;
    double sum;      /* of the message's only number, when it has exactly one */
    int summable;
} warn_group;

typedef struct {
    tr_progress *progress;
    const char *const *inputs;
    size_t ninputs;
    warn_group *v;
    size_t n, cap, total;
    int oom;
} warn_log;

/* The message after "FILE: " when it starts with one of the inputs. */
static const char *without_file(const warn_log *w, const char *msg)
{
    for (size_t i = 0; i < w->ninputs; i++) {
        const char *in = strcmp(w->inputs[i], TR_INGEST_STDIN) == 0 ? TR_INGEST_STDIN_NAME
                                                                      : w->inputs[i];
        size_t l = strlen(in);
        if (strncmp(msg, in, l) == 0 && msg[l] == ':' && msg[l + 1] == ' ')
            return msg + l + 2;
    }
    return msg;
}

/* key <- msg with digit runs (and their decimals) as '#'; returns how many. */
static int number_key(const char *msg, char *key, size_t size, double *only)
{
    int nums = 0;
    size_t o = 0;
    for (const char *s = msg; *s && o + 2 < size;) {
        if (isdigit((unsigned char)*s)) {
            char *end;
            *only = strtod(s, &end);
            s = end > s ? end : s + 1;
            key[o++] = '#';
            nums++;
        } else {
            key[o++] = *s++;
        }
    }
    key[o] = '\0';
    return nums;
}

static void warn_stderr(void *ctx, const char *msg)
{
    warn_log *w = ctx;
    char line[1200];
    snprintf(line, sizeof line, PROG ": warning: %s", msg);
    tr_progress_puts(w->progress, line);
    w->total++;
    const char *text = without_file(w, msg);
    char key[1100];
    double num = 0;
    int summable = number_key(text, key, sizeof key, &num) == 1;
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->v[i].key, key) == 0) {
            w->v[i].count++;
            w->v[i].sum += num;
            return;
        }
    if (w->oom)
        return;
    if (w->n == w->cap) {
        size_t ncap = w->cap ? w->cap * 2 : 8;
        warn_group *nv = realloc(w->v, ncap * sizeof *nv);
        if (!nv) {
            w->oom = 1;
            return;
        }
        w->v = nv, w->cap = ncap;
    }
    warn_group g = {strdup(key), strdup(text), 1, num, summable};
    if (!g.key || !g.first) {
        free(g.key), free(g.first);
        w->oom = 1;
        return;
    }
    w->v[w->n++] = g;
}

static void warn_log_free(warn_log *w)
{
    for (size_t i = 0; i < w->n; i++)
        free(w->v[i].key), free(w->v[i].first);
    free(w->v);
}

/* ---- the summary ---- */

static const char *count_str(char *buf, size_t n, long long v)
{
    tr_progress_fmt_count(buf, n, v < 0 ? 0 : (uint64_t)v);
    return buf;
}

typedef struct {
    const char *out;
    size_t nfiles;
    double t0;
    warn_log *warnings;
    char *text;      /* the summary, printed once the progress line is gone */
    size_t len;
} summary_ctx;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* "1, 2 and 3"-style lists are built in a line buffer; this appends. */
#define APPEND(buf, ...)                                                                 \
    do {                                                                                 \
        size_t l_ = strlen(buf);                                                         \
        if (l_ < sizeof(buf))                                                            \
            snprintf((buf) + l_, sizeof(buf) - l_, __VA_ARGS__);                         \
    } while (0)

static void print_warnings(FILE *f, const warn_log *w)
{
    enum { MAX_GROUPS = 5 };
    char a[32], b[32];
    if (!w->total)
        return;
    fprintf(f, "  warnings  %s", count_str(a, sizeof a, (long long)w->total));
    if (w->n > 1)
        fprintf(f, " of %zu kinds", w->n);
    fputs(" (above)\n", f);
    for (size_t i = 0; i < w->n && i < MAX_GROUPS; i++) {
        const warn_group *g = &w->v[i];
        char line[1300] = "";
        if (g->count > 1 && g->summable && g->sum < 9e18) {
            /* the message with its one number replaced by the sum over the group */
            const char *p = g->first;
            while (*p && !isdigit((unsigned char)*p))
                p++;
            char *end;
            (void)strtod(p, &end);
            APPEND(line, "%.*s%s%s, in %s warnings", (int)(p - g->first), g->first,
                   count_str(a, sizeof a, (long long)g->sum), end,
                   count_str(b, sizeof b, (long long)g->count));
        } else if (g->count > 1) {
            APPEND(line, "%s (and %s more like it)", g->first,
                   count_str(a, sizeof a, (long long)g->count - 1));
        } else {
            APPEND(line, "%s", g->first);
        }
        fputs("    ", f);
        tr_put_line(f, line);
    }
    if (w->n > MAX_GROUPS)
        fprintf(f, "    and %zu more kinds of warning\n", w->n - MAX_GROUPS);
}

/* Per kind, and per source (each source has its own clock): the counts, the
 * GPU activities among them, and each source's first start and last end
 * (lo, hi: nsrc + 1 entries, or NULL when they could not be had). */
static void event_census(const tr_trace *t, size_t per_kind[TR_KIND_COUNT_], size_t *on_gpu, int64_t *lo,
                         int64_t *hi, size_t nsrc)
{
    for (size_t s = 0; lo && hi && s <= nsrc; s++)
        lo[s] = INT64_MAX, hi[s] = INT64_MIN;
    for (size_t i = 0; i < t->events.n; i++) {
        tr_spill_tick();
        const tr_event *e = &t->events.v[i];
        if (e->kind >= TR_KIND_COUNT_)
            continue;
        per_kind[e->kind]++;
        if (tr_kinds[e->kind].on_gpu)
            (*on_gpu)++;
        uint32_t s = tr_event_source(t, e);
        if (!s && nsrc == 1)
            s = 1;   /* on no thread or stream (an overhead row), but there is one source */
        if (!lo || !hi || s > nsrc || e->end < e->start)
            continue;
        lo[s] = e->start < lo[s] ? e->start : lo[s];
        hi[s] = e->end > hi[s] ? e->end : hi[s];
    }
}

/* A line a source, at most a few, then a count. */
static void print_sources(FILE *f, const tr_trace *t, const int64_t *lo, const int64_t *hi, size_t nsrc)
{
    enum { MAX_SOURCES = 4 };
    char a[32], line[2048];
    for (size_t s = 1; s <= nsrc && s <= MAX_SOURCES; s++) {
        const tr_source *src = &t->sources.v[s];
        const char *ver = tr_str_of(t, src->format_version);
        char span[32] = "-";
        if (lo && hi && hi[s] >= lo[s])
            /* in double: hostile times may span more than int64_t holds */
            tr_fmt_time(span, sizeof span, ((double)hi[s] - (double)lo[s]) / 1000.0, TR_UNIT_AUTO);
        snprintf(line, sizeof line, "  source    %s: %s%s%s, %s events, span %s",
                 tr_str_of(t, src->path), tr_str_of(t, src->format), ver && *ver ? " " : "",
                 ver ? ver : "", count_str(a, sizeof a, (long long)src->events), span);
        tr_put_line(f, line);
    }
    if (nsrc > MAX_SOURCES)
        fprintf(f, "  source    and %zu more\n", nsrc - MAX_SOURCES);
}

/* The events per kind, most first. */
static void print_kinds(FILE *f, const size_t per_kind[TR_KIND_COUNT_])
{
    char a[32], line[2048];
    int order[TR_KIND_COUNT_], nk = 0;
    for (int k = 1; k < TR_KIND_COUNT_; k++)
        if (per_kind[k]) {
            int j = nk++;
            for (; j > 0 && per_kind[order[j - 1]] < per_kind[k]; j--)
                order[j] = order[j - 1];
            order[j] = k;
        }
    line[0] = '\0';
    for (int j = 0; j < nk; j++)
        APPEND(line, "%s%s %s", j ? ", " : "", tr_kinds[order[j]].name,
               count_str(a, sizeof a, (long long)per_kind[order[j]]));
    fprintf(f, "  events    %s\n", line);
}

/* GPU activities tr_tree_build() found no API call to hang under, by reason: the
 * reasons the tables' "[no launching call]" footer gives too. */
static void print_unlinked(FILE *f, const tr_trace *t, size_t on_gpu)
{
    static const char *const why[] = {"with no correlation id in the source",
                                      "launched before the capture window",
                                      "whose correlation id no API call has"};
    char a[32], b[32], line[2048];
    size_t unlinked = 0;
    line[0] = '\0';
    for (int r = 0; r < 3; r++) {
        size_t n = t->gpu_unlaunched[r];
        if (!n)
            continue;
        APPEND(line, "%s%s %s", unlinked ? ", " : "", count_str(a, sizeof a, (long long)n), why[r]);
        unlinked += n;
    }
    if (unlinked)
        fprintf(f, "  unlinked  %s of %s GPU activities have no launching call: %s\n",
                count_str(a, sizeof a, (long long)unlinked), count_str(b, sizeof b, (long long)on_gpu), line);
}

static void print_summary(void *ctx, const tr_trace *t)
{
    summary_ctx *c = ctx;
    char a[32], line[2048];
    size_t nsrc = t->sources.n ? t->sources.n - 1 : 0;
    if (t->events.n == 0)
        return;   /* main says "no events" */
    FILE *f = open_memstream(&c->text, &c->len);
    if (!f)
        return;   /* a summary is not worth failing the run */
    size_t per_kind[TR_KIND_COUNT_] = {0}, on_gpu = 0;
    int64_t *lo = malloc((nsrc + 1) * sizeof *lo), *hi = malloc((nsrc + 1) * sizeof *hi);
    event_census(t, per_kind, &on_gpu, lo, hi, nsrc);

    struct stat sb;
    line[0] = '\0';
    if (strcmp(c->out, "-") != 0 && stat(c->out, &sb) == 0) {
        char mem[32];
        tr_progress_fmt_bytes(mem, sizeof mem, (uint64_t)sb.st_size);
        APPEND(line, ", %s", mem);
    }
    fprintf(f, PROG ": %s: %s events from %zu file(s)%s in %.1f s\n",
            strcmp(c->out, "-") == 0 ? "standard output" : c->out,
            count_str(a, sizeof a, (long long)t->events.n), c->nfiles, line, now_s() - c->t0);
    print_sources(f, t, lo, hi, nsrc);
    free(lo);
    free(hi);
    print_kinds(f, per_kind);
    size_t np = t->processes.n ? t->processes.n - 1 : 0, nt = t->threads.n ? t->threads.n - 1 : 0;
    size_t nd = t->devices.n ? t->devices.n - 1 : 0, ns = t->streams.n ? t->streams.n - 1 : 0;
    fprintf(f, "  threads   %zu in %zu process(es); %zu stream(s) on %zu device(s)\n", nt, np, ns, nd);
    print_unlinked(f, t, on_gpu);
    print_warnings(f, c->warnings);
    if (fclose(f) != 0) {
        free(c->text);
        c->text = NULL;
    }
}

static const struct option longopts[] = {
    {"output", required_argument, NULL, 'o'}, {"format", required_argument, NULL, 'F'},
    {"quiet", no_argument, NULL, 'q'},        {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},      {"rank", required_argument, NULL, 'R'},
    {"max-memory", required_argument, NULL, 'M'}, {NULL, 0, NULL, 0}};

#define EXIT_NOW (-1)   /* --help or --version has been answered */

static int unknown_format(const char *arg)
{
    char valid[256], hint[128];
    size_t n = 0;
    valid[0] = '\0';
    for (size_t i = 0; i < tr_nreaders && n < sizeof valid; i++)
        n += (size_t)snprintf(valid + n, sizeof valid - n, "%s%s", i ? " " : "", tr_readers[i].name);
    fprintf(stderr, "trace-ingest: unknown format '%s'%s (valid: %s)\n", arg,
            tr_suggest_hint(hint, sizeof hint, arg, strlen(arg), valid), valid);
    return TR_ERR_USAGE;
}

/* One option from getopt_long(); 0, EXIT_NOW, or TR_ERR_USAGE (said on stderr). */
static int parse_option(int c, const char *arg, const char **out, int *quiet, tr_ingest_opts *opts)
{
    tr_error rerr;
    size_t limit;
    switch (c) {
    case 'o':
        *out = arg;
        if (!*arg) {
            fprintf(stderr, "trace-ingest: empty output file name (try 'trace-ingest --help')\n");
            return TR_ERR_USAGE;
        }
        return 0;
    case 'F':
        if (!tr_reader_by_name(arg))
            return unknown_format(arg);
        opts->force_format = arg;
        return 0;
    case 'q': *quiet = 1; opts->warn = NULL; return 0;
    case 'R':
        tr_error_clear(&rerr);
        if (tr_rank_parse(arg, &opts->rank, &rerr) != TR_OK) {
            fprintf(stderr, "trace-ingest: %s\n", rerr.msg);
            return TR_ERR_USAGE;
        }
        opts->has_rank = 1;
        return 0;
    case 'M':
        if (tr_spill_parse_size(arg, &limit) < 0) {
            fprintf(stderr, "trace-ingest: --max-memory '%s' is not a size such as 256M or 4G\n", arg);
            return TR_ERR_USAGE;
        }
        tr_spill_set_limit(limit);
        return 0;
    case 'h': usage(stdout); return EXIT_NOW;
    case 'V': printf("trace-ingest %s\n", TR_VERSION); return EXIT_NOW;
    default:
        fprintf(stderr, "trace-ingest: try 'trace-ingest --help'\n");
        return TR_ERR_USAGE;
    }
}

int main(int argc, char **argv)
{
    const char *out = "run.db";
    int quiet = 0, c, rc = 0;
    warn_log warnings = {0};
    tr_ingest_opts opts = {warn_stderr, &warnings, NULL};
    tr_output_handle_signals();
    tr_debuginfo_stay_offline();
    while (rc == 0 && (c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1)
        rc = parse_option(c, optarg, &out, &quiet, &opts);
    if (rc)
        return rc == EXIT_NOW ? 0 : rc;
    if (optind >= argc) {
        fprintf(stderr, "trace-ingest: no input file (try 'trace-ingest --help')\n");
        return TR_ERR_USAGE;
    }
    const char *const *inputs = (const char *const *)argv + optind;
    size_t ninputs = (size_t)(argc - optind);
    warnings.inputs = inputs;
    warnings.ninputs = ninputs;
    summary_ctx sum = {out, ninputs, now_s(), &warnings, NULL, 0};
    if (!quiet) {
        opts.done = print_summary;
        opts.done_ctx = &sum;
        if (tr_progress_wanted())
            opts.progress = warnings.progress = tr_progress_start(PROG, &tr_events_added, "events");
    }
    tr_error err;
    tr_error_clear(&err);
    size_t nevents = 0;
    tr_status st = tr_ingest_files(inputs, ninputs, out, &opts, &nevents, &err);
    /* the line is cleared before the summary or the error is printed */
    tr_progress_stop(opts.progress);
    warnings.progress = opts.progress = NULL;
    if (st != TR_OK) {
        free(sum.text);
        warn_log_free(&warnings);
        fputs("trace-ingest: ", stderr);
        tr_put_line(stderr, err.msg);
        return st;
    }
    if (sum.text)
        fwrite(sum.text, 1, sum.len, stderr);
    free(sum.text);
    if (!quiet && nevents == 0)
        fprintf(stderr, "trace-ingest: %s: no events in the input (profiling never started?)\n",
                out);
    warn_log_free(&warnings);
    return 0;
}
