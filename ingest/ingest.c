#include "ingest/ingest.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/checked.h"
#include "lib/collectives.h"
#include "lib/output.h"
#include "lib/ranks.h"
#include "lib/rundb.h"
#include "lib/spill.h"
#include "lib/tree.h"

const tr_reader tr_readers[] = {
    {"nvprof", "nvprof/nvvp SQLite database (.nvvp, .prof, .sql)", tr_nvprof_probe, tr_nvprof_read},
    {"kineto", "PyTorch profiler / Kineto chrome trace (.json, .json.gz)", tr_kineto_probe, tr_kineto_read},
    {"nsys", "Nsight Systems SQLite export (.sqlite)", tr_nsys_probe, tr_nsys_read},
    {"raw", "trace-record raw file (.ctr; see docs/raw-format.md)", tr_raw_probe, tr_raw_read},
};
const size_t tr_nreaders = sizeof tr_readers / sizeof tr_readers[0];

void tr_ingest_warn(const tr_ingest_opts *o, const char *fmt, ...)
{
    if (!o || !o->warn)
        return;
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    o->warn(o->warn_ctx, buf);
}

static tr_status unrecognised(const char *path, const unsigned char *head, size_t n,
                              tr_error *err);

const tr_reader *tr_reader_by_name(const char *name)
{
    for (size_t i = 0; i < tr_nreaders; i++)
        if (strcmp(tr_readers[i].name, name) == 0)
            return &tr_readers[i];
    return NULL;
}

tr_status tr_reader_detect(const char *path, const tr_reader **out, tr_error *err)
{
    unsigned char head[4096];
    FILE *f = fopen(path, "rb");
    if (!f)
        return tr_fail(err, errno == ENOENT || errno == EACCES ? TR_ERR_INPUT : TR_ERR_RUNTIME,
                       "cannot open %s: %s", path, strerror(errno));
    size_t n = fread(head, 1, sizeof head, f);
    int rerr = ferror(f);
    fclose(f);
    if (rerr)
        return tr_fail(err, TR_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    for (size_t i = 0; i < tr_nreaders; i++) {
        if (tr_readers[i].probe(path, head, n)) {
            *out = &tr_readers[i];
            return TR_OK;
        }
    }
    return unrecognised(path, head, n, err);
}

static tr_status unrecognised(const char *path, const unsigned char *head, size_t n,
                              tr_error *err)
{
    if (n == 0)
        return tr_fail(err, TR_ERR_INPUT, "%s: empty file", path);
    int cut_short;
    if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0 && tr_sqlite_probe(path, &cut_short) && cut_short)
        return tr_fail(err, TR_ERR_INPUT, "%s: SQLite database cut short: its header counts more pages "
                       "than the file holds (a copy or download that did not finish?)", path);
    if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0)
        return tr_fail(err, TR_ERR_INPUT,
                       "%s: SQLite database of an unknown kind (not an nvprof export: no "
                       "StringTable and CUPTI_ACTIVITY_KIND_* tables; not an nsys export: no "
                       "StringIds with NVTX_EVENTS or CUPTI_ACTIVITY_KIND_* tables)", path);
    /* say why each reader turned it down, from what the header is */
    char json[96];
    size_t k = 0;
    while (k < n && (head[k] == ' ' || head[k] == '\t' || head[k] == '\r' || head[k] == '\n'))
        k++;
    if (n >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        snprintf(json, sizeof json, "gzip data that is not a JSON trace");
    else if (k < n && (head[k] == '{' || head[k] == '['))
        snprintf(json, sizeof json, "JSON naming no traceEvents, ph or schemaVersion in its first 4 KiB");
    else if (k == n)
        snprintf(json, sizeof json, "only white space in its first %zu bytes", n);
    else if (head[k] >= 0x20 && head[k] < 0x7f)
        snprintf(json, sizeof json, "not JSON: it starts with '%c'", head[k]);
    else
        snprintf(json, sizeof json, "not JSON: it starts with byte 0x%02x", k < n ? head[k] : 0);
    return tr_fail(err, TR_ERR_INPUT, "%s: unrecognised input format; tried nvprof and nsys (not an "
                   "SQLite file), kineto (%s), raw (no trace-record header)", path, json);
}

/* ---- inputs that are streams ---- */

/* How long a FIFO may stay silent before its first byte when nothing has
 * written to it yet: a named FIFO that no process opens would otherwise
 * leave the reader waiting for ever. */
#define FIFO_WAIT_MS 5000

typedef struct {
    char path[4200];   /* the spool file, "" when the input is read in place */
    int slot;
} spool;

static ssize_t read_full(int fd, unsigned char *buf, size_t n)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (ssize_t)got;
}

static int write_full(int fd, const unsigned char *buf, size_t n)
{
    while (n) {
        ssize_t w = write(fd, buf, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        buf += w, n -= (size_t)w;
    }
    return 0;
}

/* 1 when head starts a format some reader takes (SQLite files are probed
 * by their tables, which a head alone does not hold). */
static int known_head(const char *path, const unsigned char *head, size_t n)
{
    if (n >= 16 && memcmp(head, "SQLite format 3", 16) == 0)
        return 1;
    for (size_t i = 0; i < tr_nreaders; i++)
        if (tr_readers[i].probe(path, head, n))
            return 1;
    return 0;
}

/* The readers open their file by name, probe it and read it again, and
 * SQLite seeks: a pipe (/dev/stdin, <(...), a named FIFO) is copied to a
 * temporary file under $TMPDIR first, once its first bytes show a known
 * format, so endless junk is refused rather than stored.  Other files that
 * are not regular are refused: a device never ends, a directory is no trace. */
static tr_status spool_stream(const char *path, int forced, spool *sp, tr_error *err)
{
    sp->path[0] = '\0';
    sp->slot = -1;
    struct stat sb, in0;
    if (stat(path, &sb) != 0 || S_ISREG(sb.st_mode))
        return TR_OK;   /* missing files are reported by the reader's open */
    if (S_ISDIR(sb.st_mode))
        return tr_fail(err, TR_ERR_INPUT, "%s: a directory, not a trace file", path);
    if (S_ISCHR(sb.st_mode) && isatty(0) && fstat(0, &in0) == 0 && in0.st_rdev == sb.st_rdev)
        return tr_fail(err, TR_ERR_INPUT, "%s: standard input is a terminal, not a trace "
                       "(pipe a file into it)", path);
    if (!S_ISFIFO(sb.st_mode))
        return tr_fail(err, TR_ERR_INPUT, "%s: not a regular file or a pipe (a %s)", path,
                       S_ISCHR(sb.st_mode) ? "character device"
                       : S_ISBLK(sb.st_mode) ? "block device" : "socket");
    /* our own stdin is read as it is; anything else is opened without
     * waiting for a writer, which FIFO_WAIT_MS then bounds */
    int fd = fstat(0, &in0) == 0 && in0.st_dev == sb.st_dev && in0.st_ino == sb.st_ino
                 ? 0 : open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return tr_fail(err, TR_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    if (fd)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    enum { BUF = 1 << 18 };
    unsigned char *buf = malloc(BUF);
    tr_status st = buf ? TR_OK : tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    ssize_t n = st == TR_OK ? read_full(fd, buf, 4096) : 0;
    if (st == TR_OK && n == 0) {
        struct pollfd p = {fd, POLLIN, 0};
        if (poll(&p, 1, FIFO_WAIT_MS) > 0)
            n = read_full(fd, buf, 4096);
    }
    int out = -1;
    if (st == TR_OK && n < 0)
        st = tr_fail(err, TR_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    else if (st == TR_OK && !forced && !known_head(path, buf, (size_t)n))
        st = unrecognised(path, buf, (size_t)n, err);
    else if (st == TR_OK
             && (out = tr_output_mktemp(sp->path, sizeof sp->path, "trace-ingest-input",
                                        &sp->slot, err)) < 0)
        st = TR_ERR_RUNTIME;
    while (st == TR_OK && n > 0) {
        if (write_full(out, buf, (size_t)n) != 0)
            st = tr_fail(err, TR_ERR_RUNTIME, "cannot copy %s to %s: %s", path, sp->path,
                         strerror(errno));
        else if ((n = read_full(fd, buf, BUF)) < 0)
            st = tr_fail(err, TR_ERR_INPUT, "cannot read %s: %s", path, strerror(errno));
    }
    if (out >= 0 && close(out) != 0 && st == TR_OK)
        st = tr_fail(err, TR_ERR_RUNTIME, "cannot copy %s to %s: %s", path, sp->path,
                     strerror(errno));
    if (st != TR_OK && sp->path[0] && out < 0)
        sp->path[0] = '\0';   /* mktemp failed: nothing to remove */
    free(buf);
    if (fd > 0)
        close(fd);
    return st;
}

static void spool_remove(spool *sp)
{
    if (sp->path[0]) {
        unlink(sp->path);
        tr_output_unregister(sp->slot);
        sp->path[0] = '\0';
    }
}

/* Messages and recorded source paths name the input, never the spool. */
static void replace_in(char *msg, size_t size, const char *from, const char *to)
{
    char *hit = strstr(msg, from);
    if (!hit || !*from)
        return;
    char rest[1024];
    snprintf(rest, sizeof rest, "%s", hit + strlen(from));
    snprintf(hit, size - (size_t)(hit - msg), "%s%s", to, rest);
}

typedef struct {
    const tr_ingest_opts *outer;
    const char *from, *to;
} spool_warn_ctx;

static void spool_warn(void *ctx, const char *msg)
{
    const spool_warn_ctx *c = ctx;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", msg);
    replace_in(buf, sizeof buf, c->from, c->to);
    c->outer->warn(c->outer->warn_ctx, buf);
}

static uint64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
}

/* Reads path, the i-th of n inputs, into t. */
static tr_status read_one(tr_trace *t, const char *path, size_t i, size_t n,
                          const tr_ingest_opts *o, tr_error *err)
{
    /* "-" is read as /dev/stdin is, and named as standard input */
    int is_stdin = strcmp(path, TR_INGEST_STDIN) == 0;
    const char *shown = is_stdin ? TR_INGEST_STDIN_NAME : path;
    path = is_stdin ? "/dev/stdin" : path;
    tr_progress *pg = o ? o->progress : NULL;
    char label[600];
    /* the file's own name: a long directory would push the numbers off the line */
    const char *base = strrchr(shown, '/');
    snprintf(label, sizeof label, "reading %s", base && base[1] ? base + 1 : shown);
    if (n > 1)
        snprintf(label + strlen(label), sizeof label - strlen(label), " (%zu/%zu)", i + 1, n);
    tr_progress_phase(pg, label, 0);
    spool sp;
    tr_status st = spool_stream(path, o && o->force_format, &sp, err);
    if (st != TR_OK) {
        spool_remove(&sp);
        if (is_stdin && err)
            replace_in(err->msg, sizeof err->msg, path, shown);
        return st;
    }
    const char *name = sp.path[0] ? sp.path : path;
    int renamed = strcmp(name, shown) != 0;
    tr_ingest_opts local;
    spool_warn_ctx wc = {o, name, shown};
    if (renamed && o && o->warn) {
        local = *o;
        local.warn = spool_warn;
        local.warn_ctx = &wc;
        o = &local;
    }
    tr_progress_phase(pg, label, file_size(name));
    size_t nsources = t->sources.n;
    const tr_reader *r = NULL;
    if (o && o->force_format) {
        r = tr_reader_by_name(o->force_format);
        if (!r)
            st = tr_fail(err, TR_ERR_USAGE, "unknown input format '%s'", o->force_format);
    } else {
        st = tr_reader_detect(name, &r, err);
    }
    if (st == TR_OK)
        st = r->read(t, name, o, err);
    if (renamed) {
        if (st != TR_OK && err)
            replace_in(err->msg, sizeof err->msg, name, shown);
        for (size_t k = nsources; k < t->sources.n; k++)
            if (k > 0)
                t->sources.v[k].path = tr_str(t, shown);
    }
    spool_remove(&sp);
    return st;
}

static void warn_rank(void *ctx, const char *msg)
{
    tr_ingest_warn(ctx, "%s", msg);
}

/* Two inputs claiming one rank, or a world size the inputs do not fill: warned
 * about, never refused (lib/ranks.h).  Sources without a rank count by their order. */
static void check_ranks(const tr_trace *t, const tr_ingest_opts *o)
{
    size_t n = t->sources.n ? t->sources.n - 1 : 0;
    if (!o || !o->warn || n < 2)
        return;
    tr_source_rank *v = calloc(n, sizeof *v);
    const char **label = calloc(n, sizeof *label);
    for (size_t i = 0; v && label && i < n; i++) {
        const tr_source *s = &t->sources.v[i + 1];
        v[i] = (tr_source_rank){(int64_t)i + 1, s->rank >= 0 ? s->rank : (int64_t)i, s->world_size, s->rank >= 0};
        label[i] = tr_str_of(t, s->path);
    }
    if (v && label)
        tr_ranks_check(v, label, n, warn_rank, (void *)o);
    free(v);
    free(label);
}

/* The meta rows of an ingest: the generator, and `time_base_ns.N` for each
 * Kineto source: the ns its times were shifted by (baseTimeNanoseconds, 0
 * when the file has none), from which gpu-time recomputes the file's own
 * float microseconds as TraceLens reads them.  Ends the write w began (and
 * frees it). */
static tr_status write_db(tr_rundb_writer *w, const tr_trace *t, tr_error *err)
{
    size_t nsrc = t->sources.n ? t->sources.n - 1 : 0;
    tr_meta_kv *meta = calloc(1 + 2 * nsrc, sizeof *meta);
    char (*kv)[2][48] = calloc(nsrc ? 2 * nsrc : 1, sizeof *kv);
    if (!meta || !kv) {
        free(meta);
        free(kv);
        tr_rundb_write_abort(w);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    size_t n = 0;
    meta[n++] = (tr_meta_kv){"generator", "trace-ingest"};
    for (size_t i = 1; i < t->sources.n; i++) {
        if (strcmp(tr_str_of(t, t->sources.v[i].format), "kineto") != 0)
            continue;
        snprintf(kv[i - 1][0], sizeof kv[i - 1][0], "time_base_ns.%zu", i);
        snprintf(kv[i - 1][1], sizeof kv[i - 1][1], "%lld", (long long)t->sources.v[i].time_base_ns);
        meta[n++] = (tr_meta_kv){kv[i - 1][0], kv[i - 1][1]};
    }
    /* `world_size.N`: the world size source N gives (distributedInfo), for the
     * rank-count checks (lib/ranks.h); a meta row, so older run.dbs read as they are */
    for (size_t i = 1; i < t->sources.n; i++) {
        if (t->sources.v[i].world_size <= 0)
            continue;
        char (*ws)[48] = kv[nsrc + i - 1];
        snprintf(ws[0], sizeof ws[0], "world_size.%zu", i);
        snprintf(ws[1], sizeof ws[1], "%lld", (long long)t->sources.v[i].world_size);
        meta[n++] = (tr_meta_kv){ws[0], ws[1]};
    }
    tr_status st = tr_rundb_write_end(w, t, meta, n, err);
    free(meta);
    free(kv);
    return st;
}

/* The part of run.db the call tree leaves unchanged is written on a second
 * thread while the tree is built (lib/rundb.h says what it reads). */
typedef struct {
    const tr_trace *t;
    const char *out;
    tr_rundb_writer *w;
    tr_status st;
    tr_error err;
} early_write;

static void *write_early(void *arg)
{
    early_write *e = arg;
    e->st = tr_rundb_write_begin(&e->w, e->t, e->out, &e->err);
    return NULL;
}

static tr_status build_and_write(tr_trace *t, const char *out, tr_progress *pg, tr_error *err)
{
    early_write ew = {.t = t, .out = out};
    pthread_t th;
    int threaded = pthread_create(&th, NULL, write_early, &ew) == 0;
    if (!threaded)
        write_early(&ew);
    tr_progress_phase(pg, "building the call tree", 0);
    tr_status st = tr_tree_build(t, err);
    if (threaded)
        pthread_join(th, NULL);
    if (st == TR_OK && ew.st != TR_OK)
        st = tr_error_copy(err, &ew.err);
    if (st == TR_OK)
        st = tr_coll_ingest(t, err);   /* collectives onto their kernels; clock offsets */
    if (st != TR_OK) {
        tr_rundb_write_abort(ew.w);
        return st;
    }
    char label[600];
    snprintf(label, sizeof label, "writing %s", strcmp(out, "-") == 0 ? "the run database" : out);
    tr_progress_phase(pg, label, 0);
    return write_db(ew.w, t, err);
}

/* Large arrays spill beside the output (lib/spill.h): a directory that takes a
 * run.db of the trace's size is on a disk, where /tmp may be memory. */
static void spill_beside(const char *out)
{
    if (strcmp(out, "-") == 0)
        return;
    const char *slash = strrchr(out, '/');
    if (!slash) {
        tr_spill_set_dir(".");
        return;
    }
    size_t len = slash == out ? 1 : (size_t)(slash - out);
    char *dir = malloc(len + 1);
    if (!dir)
        return;
    memcpy(dir, out, len);
    dir[len] = '\0';
    tr_spill_set_dir(dir);
    free(dir);
}

tr_status tr_ingest_files(const char *const *paths, size_t npaths, const char *out,
                          const tr_ingest_opts *o, size_t *nevents, tr_error *err)
{
    if (nevents)
        *nevents = 0;
    /* standard input is checked as the file it is, never as a file named "-" */
    const char **check = calloc(npaths ? npaths : 1, sizeof *check);
    if (!check)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < npaths; i++)
        check[i] = strcmp(paths[i], TR_INGEST_STDIN) == 0 ? "/dev/stdin" : paths[i];
    tr_status st = tr_output_check_inputs(out, check, npaths, err);
    free(check);
    if (st != TR_OK)
        return st;
    spill_beside(out);
    tr_trace t;
    st = tr_trace_init(&t, err);
    if (st != TR_OK)
        return st;
    tr_progress *pg = o ? o->progress : NULL;
    for (size_t i = 0; i < npaths && st == TR_OK; i++) {
        size_t first = t.sources.n ? t.sources.n : 1;
        st = read_one(&t, paths[i], i, npaths, o, err);
        /* --rank N: N for the first input, N + i for the i-th, where the file gives none */
        for (size_t k = first; st == TR_OK && o && o->has_rank && k < t.sources.n; k++)
            if (t.sources.v[k].rank < 0)
                t.sources.v[k].rank = tr_sat_add(o->rank, (int64_t)i);
    }
    if (st == TR_OK)
        check_ranks(&t, o);
    /* the readers' lookups are over: the tree's peak need not hold the index */
    tr_intern_drop_index(&t.strings);
    if (st == TR_OK)
        st = build_and_write(&t, out, pg, err);
    if (nevents)
        *nevents = t.events.n;
    if (st == TR_OK && o && o->done)
        o->done(o->done_ctx, &t);
    tr_trace_free(&t);
    tr_spill_set_dir(NULL);
    return st;
}
