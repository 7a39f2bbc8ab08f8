/*
 * chrome.c - chrome-trace JSON (object form) in PyTorch/Kineto's own layout,
 * for Perfetto UI, chrome://tracing and the tools that read Kineto traces
 * (HTA, TraceLens, our own trace-ingest).
 *
 * Streamed: top-level keys and metadata first, then one event per run.db
 * event in the order of the events table (viewers sort; --max-size parts go
 * in start order so each part is a time slice).  Nothing is held per event
 * (but the ids --include/--exclude select): escaped names, shapes and call
 * stacks are cached per string id.
 *
 * Layout, as Kineto writes it: categories cpu_op, user_annotation,
 * cuda_runtime, cuda_driver, cuda_sync, kernel, gpu_memcpy, gpu_memset,
 * python_function; [memory] and markers as thread-scoped instants
 * (cpu_instant_event); an ac2g flow (ph s on the launching call, ph f with
 * bp e on the GPU work) per launch.  Host events sit on (pid, tid); GPU work
 * on (pid = device, tid = stream), the device moved past the host pids when
 * an ordinal is also a host pid, so a process and a GPU never share a track.
 * ts/dur are µs after baseTimeNanoseconds with ns precision, so a reader
 * that adds baseTimeNanoseconds (Kineto's own rule) gets the original times.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "export/export.h"
#include "export/scan.h"
#include "lib/checked.h"
#include "lib/format.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/output.h"
#include "lib/rundb.h"
#include "lib/sql_ahead.h"

/* Names and shapes repeat in every event: one huge name must not multiply
 * into gigabytes (lib/escape.h, tr_name_cap).  Names up to NAME_SOFT bytes
 * (all real kernel names) are never cut, and are escaped once and cached. */
#define NAME_SOFT (8 * 1024)
#define NAME_HARD (64 * 1024)
#define NAME_BUDGET (64 * 1024 * 1024)

#define FLUSH_AT (1 << 20)

/* Kineto's sort index of a GPU's process (libkineto's kGpuSortIndexBase...). */
#define GPU_SORT_BASE 5000000

/* ---- growing byte buffers ------------------------------------------------ */

typedef struct {
    char *v;
    size_t n, cap;
    int oom;
} cbuf;

/* A trace is mostly short pieces (keys, numbers): the common case is inlined and
 * growing is out of line. */
static int cb_grow(cbuf *b, size_t extra)
{
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->n + extra)
        cap *= 2;
    char *v = realloc(b->v, cap);
    if (!v) {
        b->oom = 1;
        return 0;
    }
    b->v = v;
    b->cap = cap;
    return 1;
}

static inline int cb_reserve(cbuf *b, size_t extra)
{
    return b->n + extra <= b->cap || cb_grow(b, extra);
}

static inline void cb_put(cbuf *b, const void *p, size_t n)
{
    if (n && cb_reserve(b, n)) {   /* n == 0 on an empty buffer would offset NULL */
        memcpy(b->v + b->n, p, n);
        b->n += n;
    }
}

/* string literals only (sizeof) */
#define cb_lit(b, s) cb_put((b), "" s, sizeof(s) - 1)

static void cb_str(cbuf *b, const char *s) { cb_put(b, s, strlen(s)); }

static inline void cb_i64(cbuf *b, int64_t v)
{
    char num[24], *p = tr_i64_digits(num + sizeof num, v);
    cb_put(b, p, (size_t)(num + sizeof num - p));
}

/* ns as µs with three decimals: exact, and what Kineto's readers parse back. */
static inline void cb_us(cbuf *b, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char num[32], *end = num + sizeof num;
    unsigned f = (unsigned)(a % 1000);
    end[-1] = (char)('0' + f % 10);
    end[-2] = tr_digit_pairs[f / 10 * 2 + 1];
    end[-3] = (char)('0' + f / 100);
    end[-4] = '.';
    char *p = tr_u64_digits(end - 4, a / 1000);
    if (ns < 0)
        *--p = '-';
    cb_put(b, p, (size_t)(end - p));
}

/* ---- the output: plain or gzip, one file or numbered parts --------------
 *
 * The sink writes on a helper thread: the write(2)s (their copy into the page
 * cache was a third of a 10^7-event export) and gzip's deflate run beside the
 * rendering.  Full buffers are handed over whole (swapped with an empty one),
 * at most SINK_NBUF at a time; the first failure is kept and reported at the
 * next hand-over or at the close.  Without a thread the caller writes. */
#define SINK_NBUF 3

typedef struct {
    FILE *f;
    int gz;
    z_stream z;
    unsigned char *zout;
    uint64_t bytes;           /* uncompressed bytes of this file */
    uint64_t events;          /* trace events of this file (metadata included) */
    /* the helper */
    int threaded, stop, failed;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    cbuf queue[SINK_NBUF];    /* queue[k % SINK_NBUF] is the k-th buffer handed over */
    size_t handed, written;
    tr_error werr;            /* the helper's first failure */
} sink;

#define ZOUT (256 * 1024)

static tr_status sink_deflate(sink *s, const void *p, size_t n, int flush, tr_error *err)
{
    s->z.next_in = (unsigned char *)(uintptr_t)p;
    s->z.avail_in = (uInt)n;
    for (;;) {
        s->z.next_out = s->zout;
        s->z.avail_out = ZOUT;
        int rc = deflate(&s->z, flush);
        if (rc == Z_STREAM_ERROR)
            return tr_fail(err, TR_ERR_RUNTIME, "gzip: deflate failed");
        size_t have = ZOUT - s->z.avail_out;
        if (have && fwrite(s->zout, 1, have, s->f) != have)
            return tr_fail(err, TR_ERR_RUNTIME, "write error");
        if (flush == Z_FINISH ? rc == Z_STREAM_END : s->z.avail_out != 0)
            return TR_OK;
    }
}

/* Writes p[0..n) to the file, deflated for gzip. */
static tr_status sink_put(sink *s, const char *p, size_t n, tr_error *err)
{
    if (!s->gz) {
        if (n && fwrite(p, 1, n, s->f) != n)
            return tr_fail(err, TR_ERR_RUNTIME, "write error");
        return TR_OK;
    }
    /* avail_in is 32 bits: feed large buffers in pieces */
    while (n) {
        size_t k = n > (1u << 30) ? (1u << 30) : n;
        tr_status st = sink_deflate(s, p, k, Z_NO_FLUSH, err);
        if (st != TR_OK)
            return st;
        p += k;
        n -= k;
    }
    return TR_OK;
}

static void *sink_thread(void *arg)
{
    sink *s = arg;
    pthread_mutex_lock(&s->lock);
    for (;;) {
        while (!s->stop && s->written == s->handed)
            pthread_cond_wait(&s->changed, &s->lock);
        if (s->written == s->handed)
            break;   /* stopped, and all written */
        cbuf *b = &s->queue[s->written % SINK_NBUF];
        int failed = s->failed;
        pthread_mutex_unlock(&s->lock);
        tr_status st = failed ? TR_OK : sink_put(s, b->v, b->n, &s->werr);
        b->n = 0;
        pthread_mutex_lock(&s->lock);
        if (st != TR_OK)
            s->failed = 1;
        s->written++;
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    return NULL;
}

static tr_status sink_open(sink *s, FILE *f, int gz, tr_error *err)
{
    memset(s, 0, sizeof *s);
    s->f = f;
    s->gz = gz;
    if (gz) {
        s->zout = malloc(ZOUT);
        /* windowBits 15 + 16: a gzip member, as gzip(1) and zlib's gzread() expect */
        if (!s->zout || deflateInit2(&s->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
            free(s->zout);
            s->zout = NULL;
            s->gz = 0;
            return tr_fail(err, TR_ERR_RUNTIME, "out of memory (gzip)");
        }
    }
    pthread_mutex_init(&s->lock, NULL);
    pthread_cond_init(&s->changed, NULL);
    s->threaded = pthread_create(&s->thread, NULL, sink_thread, s) == 0;
    if (!s->threaded) {
        pthread_cond_destroy(&s->changed);
        pthread_mutex_destroy(&s->lock);
    }
    return TR_OK;
}

/* Hands b's bytes to the file; b comes back empty. */
static tr_status sink_write(sink *s, cbuf *b, tr_error *err)
{
    s->bytes += b->n;
    if (!s->threaded) {
        tr_status st = sink_put(s, b->v, b->n, err);
        b->n = 0;
        return st;
    }
    pthread_mutex_lock(&s->lock);
    while (s->handed - s->written == SINK_NBUF)
        pthread_cond_wait(&s->changed, &s->lock);
    int failed = s->failed;
    if (!failed) {
        cbuf *slot = &s->queue[s->handed % SINK_NBUF];   /* written: empty */
        cbuf t = *slot;
        *slot = *b;
        *b = t;
        s->handed++;
        pthread_cond_broadcast(&s->changed);
    }
    pthread_mutex_unlock(&s->lock);
    if (failed)
        return tr_error_copy(err, &s->werr);
    return TR_OK;
}

/* Waits for the helper to write what it was handed, and ends it. */
static void sink_join(sink *s)
{
    if (!s->threaded)
        return;
    pthread_mutex_lock(&s->lock);
    s->stop = 1;
    pthread_cond_broadcast(&s->changed);
    pthread_mutex_unlock(&s->lock);
    pthread_join(s->thread, NULL);
    s->threaded = 0;
    pthread_cond_destroy(&s->changed);
    pthread_mutex_destroy(&s->lock);
}

/* Ends the helper and frees; after a failure, the stream is given up. */
static void sink_free(sink *s)
{
    sink_join(s);
    for (int k = 0; k < SINK_NBUF; k++) {
        free(s->queue[k].v);
        s->queue[k] = (cbuf){0};
    }
    if (s->gz)
        deflateEnd(&s->z);
    free(s->zout);
    s->zout = NULL;
    s->gz = 0;
}

static tr_status sink_close(sink *s, tr_error *err)
{
    sink_join(s);
    tr_status st = s->failed ? tr_error_copy(err, &s->werr) : TR_OK;
    if (st == TR_OK && s->gz)
        st = sink_deflate(s, "", 0, Z_FINISH, err);
    sink_free(s);
    if (st == TR_OK && s->f && ferror(s->f))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error");
    return st;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

/* ---- the writer ---------------------------------------------------------- */

typedef struct { size_t off, len; } cspan;

#define D_MAX_COLS 10   /* columns of the widest detail table read beside the events (kernels) */

typedef struct {
    tr_scan sc;
    const tr_export_opts *o;
    tr_name_cap cap;
    FILE *scratch;            /* open_memstream: escaping through lib/escape.h */
    char *scratch_buf;
    size_t scratch_len;
    /* cached JSON of names/shapes (by strings.id) and call stacks (by stack_nodes.id) */
    cbuf arena;
    cspan *spans;
    size_t nspans, spancap;
    tr_i64map names, shapes, stacks;
    /* stack_nodes rows, for "Call stack" */
    tr_i64map frame_row;
    int64_t (*frames)[2];     /* parent_id, frame_id */
    size_t nframes;
    /* on_gpu of each kinds.id below 64 (the run.db's own table) */
    uint8_t on_gpu[64];
    /* device ordinal -> pid of its track: the ordinal, moved past the host pids on a clash */
    int64_t dev_shift;
    /* --include/--exclude: the ids the scan selected */
    int use_set;
    tr_i64map selected;
    /* output */
    cbuf head, ev, out;
    sink sk;
    size_t head_at;           /* where the metadata events begin in head */
    uint64_t head_events;
    const char *path;         /* --max-size: the output path the parts are numbered from */
    int nparts;
    tr_output part;
    int part_open;
    /* parts: the event render() left in ev, and its flow (ev from flow_at) */
    int64_t ev_start, flow_call_start;
    size_t flow_at;
    int has_flow;
    /* parts: where the current one starts, and where the one before it ended:
     * a flow starts on its launching call, which must be in the same part */
    int64_t part_first_start, prev_part_last_start, last_start;
    int part_has_event;
    tr_export_chrome_stats *stats;
    /* the detail tables read beside the events (see detail()) */
    int merge;
    sqlite3_stmt *side[4];
    int64_t side_id[4];
    int side_done[4];
    tr_sql_cell side_row[D_MAX_COLS];   /* the detail row detail() found */
    tr_i64map stream_ctx;     /* streams.id -> context */
    /* two ranks or more: each rank's processes and GPUs are Perfetto processes of
     * their own, so equal pids and device ordinals of two ranks never share a track */
    int multi_rank;
    tr_i64map thread_pid, stream_pid;   /* threads.id / streams.id -> pid of its track */
    /* a stream is named in each file that has its activities, after them, so that a
     * stream without any (nvprof's -1 of context-wide syncs) is no empty track */
    tr_i64map stream_named;   /* streams.id -> the file that names it (files) */
    cbuf tail;                /* the current file's stream names, written before its footer */
    uint64_t tail_events;
    int64_t files;
    /* the event render() left: on a stream's track, which */
    int ev_on_stream;
    int64_t ev_stream_id, ev_pid, ev_tid;
    /* names and shapes over NAME_SOFT bytes, not cached escaped (each use is cut by
     * what is left of the budget): their first bytes, so that each use does not read
     * the whole value from SQLite again, by id modulo the slots */
    struct { int64_t id; size_t len; char *head; } longs[8];
} chrome_ctx;

static tr_status nomem(tr_error *err) { return tr_fail(err, TR_ERR_RUNTIME, "out of memory"); }

/* The JSON string of s[0..len), cut by the name cap, into b. */
static void put_escaped(chrome_ctx *c, cbuf *b, const char *s, size_t len)
{
    rewind(c->scratch);
    tr_put_json_str_max(c->scratch, s, len, tr_name_cap_take(&c->cap, s, len));
    fflush(c->scratch);
    long n = ftell(c->scratch);
    if (n < 0 || !c->scratch_buf) {
        b->oom = 1;
        return;
    }
    cb_put(b, c->scratch_buf, (size_t)n);
}

static int span_add(chrome_ctx *c, tr_i64map *m, int64_t key, size_t off)
{
    if (c->nspans == c->spancap) {
        size_t ncap = c->spancap ? c->spancap * 2 : 256;
        cspan *ns = realloc(c->spans, ncap * sizeof *ns);
        if (!ns)
            return 0;
        c->spans = ns;
        c->spancap = ncap;
    }
    c->spans[c->nspans] = (cspan){off, c->arena.n - off};
    if (tr_i64map_put(m, key, (int64_t)c->nspans) < 0)
        return 0;
    c->nspans++;
    return 1;
}

static void put_span(chrome_ctx *c, cbuf *b, int64_t i)
{
    cb_put(b, c->arena.v + c->spans[i].off, c->spans[i].len);
}

/* String id's value, or for one longer than NAME_SOFT its first NAME_HARD + 4
 * bytes (all the name cap reads) with *len its whole length; NULL on OOM. */
static const char *string_of(chrome_ctx *c, int64_t id, size_t *len)
{
    size_t slot = (size_t)((uint64_t)id % (sizeof c->longs / sizeof c->longs[0]));
    if (c->longs[slot].head && c->longs[slot].id == id) {
        *len = c->longs[slot].len;
        return c->longs[slot].head;
    }
    const char *s = tr_scan_string(&c->sc, id, len);
    if (*len <= NAME_SOFT)
        return s;
    size_t keep = *len < NAME_HARD + 4 ? *len : NAME_HARD + 4;
    char *head = malloc(keep + 1);
    if (!head)
        return NULL;
    memcpy(head, s, keep);
    head[keep] = '\0';
    free(c->longs[slot].head);
    c->longs[slot].id = id;
    c->longs[slot].len = *len;
    c->longs[slot].head = head;
    return head;
}

/* The name of a string id as a JSON string; short names are escaped once. */
static void put_name(chrome_ctx *c, cbuf *b, int64_t id)
{
    int64_t i;
    if (tr_i64map_get(&c->names, id, &i)) {
        put_span(c, b, i);
        return;
    }
    size_t len;
    const char *s = string_of(c, id, &len);
    if (!s) {
        b->oom = 1;
        return;
    }
    if (len > NAME_SOFT) {
        put_escaped(c, b, s, len);   /* each use takes from the budget */
        return;
    }
    size_t off = c->arena.n;
    put_escaped(c, &c->arena, s, len);
    if (c->arena.oom || !span_add(c, &c->names, id, off)) {
        b->oom = 1;
        return;
    }
    put_span(c, b, c->nspans - 1);
}

/* A shape as PyTorch stores it, the Python repr of "Input Dims" ([[2, 3], []],
 * 'str', None, True), turned back into the JSON it was read from.  0 when it
 * is not such a repr (the shape is then written as a string). */
static int repr_to_json(cbuf *b, const char *s, size_t len)
{
    size_t i = 0;
    int depth = 0;
    while (i < len) {
        char ch = s[i];
        if (ch == '[') {
            depth++;
            cb_lit(b, "[");
            i++;
        } else if (ch == ']') {
            if (--depth < 0)
                return 0;
            cb_lit(b, "]");
            i++;
        } else if (ch == ',') {
            cb_lit(b, ",");
            i++;
        } else if (ch == ' ') {
            i++;
        } else if (ch == '\'') {
            /* repr does not escape: the string ends at a quote before , or ] */
            size_t j = i + 1;
            while (j < len && !(s[j] == '\'' && (j + 1 == len || s[j + 1] == ',' || s[j + 1] == ']')))
                j++;
            if (j >= len)
                return 0;
            /* strings inside shapes are short type names: escape plainly */
            cb_lit(b, "\"");
            for (size_t k = i + 1; k < j; k++) {
                unsigned char u = (unsigned char)s[k];
                if (u == '"' || u == '\\') {
                    char e[2] = {'\\', (char)u};
                    cb_put(b, e, 2);
                } else if (u < 0x20) {
                    return 0;
                } else {
                    cb_put(b, &s[k], 1);
                }
            }
            cb_lit(b, "\"");
            i = j + 1;
        } else {
            size_t j = i;
            while (j < len && s[j] != ',' && s[j] != ']' && s[j] != ' ')
                j++;
            size_t n = j - i;
            if (n == 4 && !memcmp(s + i, "None", 4))
                cb_lit(b, "null");
            else if (n == 4 && !memcmp(s + i, "True", 4))
                cb_lit(b, "true");
            else if (n == 5 && !memcmp(s + i, "False", 5))
                cb_lit(b, "false");
            else {
                for (size_t k = i; k < j; k++)
                    if (!strchr("0123456789+-.eE", s[k]))
                        return 0;
                if (n == 0 || !strchr("-0123456789", s[i]))
                    return 0;
                cb_put(b, s + i, n);
            }
            i = j;
        }
    }
    return depth == 0 && len > 0 && s[0] == '[';
}

static void put_shape(chrome_ctx *c, cbuf *b, int64_t id)
{
    int64_t i;
    if (!tr_i64map_get(&c->shapes, id, &i)) {
        size_t len;
        const char *s = string_of(c, id, &len);
        if (!s) {
            b->oom = 1;
            return;
        }
        size_t off = c->arena.n;
        if (len > NAME_SOFT || !repr_to_json(&c->arena, s, len)) {
            c->arena.n = off;
            if (len > NAME_SOFT) {
                cb_lit(b, "\"Input Dims\":");   /* not cached: see put_name */
                put_escaped(c, b, s, len);
                return;
            }
            cb_lit(&c->arena, "\"Input Dims\":");   /* shape of another writer: a string */
            put_escaped(c, &c->arena, s, len);
        } else {
            /* prefix the key: move the JSON right */
            size_t jl = c->arena.n - off;
            static const char key[] = "\"Input Dims\":";
            if (cb_reserve(&c->arena, sizeof key - 1)) {
                memmove(c->arena.v + off + sizeof key - 1, c->arena.v + off, jl);
                memcpy(c->arena.v + off, key, sizeof key - 1);
                c->arena.n += sizeof key - 1;
            }
        }
        if (c->arena.oom || !span_add(c, &c->shapes, id, off)) {
            b->oom = 1;
            return;
        }
        i = (int64_t)c->nspans - 1;
    }
    put_span(c, b, i);
}

/* "Call stack": frames innermost first, ';' between them (Kineto's with_stack). */
static int put_stack(chrome_ctx *c, cbuf *b, int64_t stack_id)
{
    int64_t i, row;
    if (!tr_i64map_get(&c->stacks, stack_id, &i)) {
        if (!tr_i64map_get(&c->frame_row, stack_id, &row))
            return 0;
        cbuf raw = {0};
        for (size_t hops = 0; hops <= c->nframes; hops++) {
            size_t len;
            const char *s = tr_scan_string(&c->sc, c->frames[row][1], &len);
            if (raw.n)
                cb_lit(&raw, ";");
            cb_put(&raw, s, len);
            if (!c->frames[row][0] || !tr_i64map_get(&c->frame_row, c->frames[row][0], &row))
                break;
        }
        size_t off = c->arena.n;
        cb_lit(&c->arena, "\"Call stack\":");
        put_escaped(c, &c->arena, raw.v ? raw.v : "", raw.n);
        int ok = !raw.oom && !c->arena.oom && span_add(c, &c->stacks, stack_id, off);
        free(raw.v);
        if (!ok) {
            b->oom = 1;
            return 1;
        }
        i = (int64_t)c->nspans - 1;
    }
    put_span(c, b, i);
    return 1;
}

static tr_status load_frames(chrome_ctx *c, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->sc.db, "SELECT id, parent_id, frame_id FROM stack_nodes", -1, &st, NULL)
        != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table stack_nodes: %s",
                       tr_rundb_name(c->sc.db), sqlite3_errmsg(c->sc.db));
    size_t cap = 0;
    tr_status s = TR_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (c->nframes == cap) {
            cap = cap ? cap * 2 : 1024;
            int64_t (*nf)[2] = realloc(c->frames, cap * sizeof *nf);
            if (!nf) {
                s = nomem(err);
                break;
            }
            c->frames = nf;
        }
        c->frames[c->nframes][0] = sqlite3_column_int64(st, 1);   /* NULL: 0, the root */
        c->frames[c->nframes][1] = sqlite3_column_int64(st, 2);
        if (tr_i64map_put(&c->frame_row, sqlite3_column_int64(st, 0), (int64_t)c->nframes) < 0) {
            s = nomem(err);
            break;
        }
        c->nframes++;
    }
    sqlite3_finalize(st);
    return s;
}

/* ---- metadata ------------------------------------------------------------ */

/* Every event starts with ",\n"; the first of a file drops the comma (put_event). */
static void meta(cbuf *b, const char *what, int64_t pid, int64_t tid, const char *key)
{
    cb_lit(b, ",\n{\"name\":\"");
    cb_str(b, what);
    cb_lit(b, "\",\"ph\":\"M\",\"ts\":0,\"pid\":");
    cb_i64(b, pid);
    cb_lit(b, ",\"tid\":");
    cb_i64(b, tid);
    cb_lit(b, ",\"args\":{\"");
    cb_str(b, key);
    cb_lit(b, "\":");
}

static void meta_name(chrome_ctx *c, cbuf *b, const char *what, int64_t pid, int64_t tid, const char *name)
{
    meta(b, what, pid, tid, "name");
    put_escaped(c, b, name, strlen(name));
    cb_lit(b, "}}");
}

static void meta_int(cbuf *b, const char *what, int64_t pid, int64_t tid, const char *key, int64_t v)
{
    meta(b, what, pid, tid, key);
    cb_i64(b, v);
    cb_lit(b, "}}");
}

/* A stream's track name and order ("stream S", by S), into b. */
static void stream_meta(chrome_ctx *c, cbuf *b, int64_t pid, int64_t tid)
{
    char buf[48];
    snprintf(buf, sizeof buf, "stream %lld", (long long)tid);
    meta_name(c, b, "thread_name", pid, tid, buf);
    meta_int(b, "thread_sort_index", pid, tid, "sort_index", tid);
}

/* ---- ranks as processes ---- */

typedef struct {
    int64_t rank_at;          /* the rank's place among the run's ranks: the sort's first key */
    int gpu;                  /* host processes before GPUs */
    int64_t pid;              /* the track's pid */
    int kind;                 /* 0 process, 1 thread, 2 device, 3 stream */
    int64_t tid;              /* thread id or stream number */
    int64_t rank, orig;       /* the rank; a process's real pid, a GPU's ordinal */
    int64_t name_id;          /* strings.id, 0 = none */
    int selected;             /* of a rank --rank selects */
} rmeta;

static int cmp_rmeta(const void *a, const void *b)
{
    const rmeta *x = a, *y = b;
    int64_t kx[5] = {x->rank_at, x->gpu, x->pid, x->kind, x->tid};
    int64_t ky[5] = {y->rank_at, y->gpu, y->pid, y->kind, y->tid};
    for (int i = 0; i < 5; i++)
        if (kx[i] != ky[i])
            return kx[i] < ky[i] ? -1 : 1;
    return 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static int64_t rank_at(const int64_t *ranks, size_t n, int64_t r)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ranks[mid] < r)
            lo = mid + 1;
        else
            hi = mid;
    }
    return (int64_t)lo;
}

/* A process, thread, device or stream of a multi-rank run.db, as read. */
typedef struct { int kind; int64_t id, num, rank, name, owner; } track_row;

typedef struct {
    track_row *v;
    size_t n;
    int64_t maxpid, maxdev;   /* the largest pid and device ordinal */
} track_rows;

/* Every process, thread, device and stream with its rank, in the order
 * kind (0 processes, 1 threads, 2 devices, 3 streams), then id: a thread's
 * or stream's owner (process or device) is read before it. */
static tr_status track_rows_load(track_rows *t, sqlite3 *db, const tr_rank_map *m, tr_error *err)
{
    static const char sql[] =
        "SELECT 0, p.id, p.pid, p.source_id, p.name_id, p.id FROM processes p "
        "UNION ALL SELECT 1, t.id, t.tid, p.source_id, t.name_id, p.id FROM threads t "
        "JOIN processes p ON p.id = t.process_id "
        "UNION ALL SELECT 2, d.id, d.device, d.source_id, d.name_id, d.id FROM devices d "
        "UNION ALL SELECT 3, s.id, s.stream, d.source_id, NULL, d.id FROM streams s "
        "JOIN devices d ON d.id = s.device_id ORDER BY 1, 2";
    memset(t, 0, sizeof *t);
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read threads: %s", tr_rundb_name(db), sqlite3_errmsg(db));
    tr_status st = TR_OK;
    size_t cap = 0;
    int step_rc;
    while ((step_rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (t->n == cap) {
            cap = cap ? 2 * cap : 64;
            track_row *nv = realloc(t->v, cap * sizeof *nv);
            if (!nv) {
                st = nomem(err);
                break;
            }
            t->v = nv;
        }
        track_row *r = &t->v[t->n++];
        r->kind = sqlite3_column_int(q, 0);
        r->id = sqlite3_column_int64(q, 1);
        r->num = sqlite3_column_int64(q, 2);
        r->rank = tr_rank_map_source(m, sqlite3_column_int64(q, 3));
        r->name = sqlite3_column_int64(q, 4);
        r->owner = sqlite3_column_int64(q, 5);
        if (r->kind == 0 && r->num > t->maxpid)
            t->maxpid = r->num;
        if (r->kind == 2 && r->num > t->maxdev)
            t->maxdev = r->num;
    }
    if (st == TR_OK && step_rc != SQLITE_DONE)
        st = tr_fail(err, TR_ERR_INPUT, "%s: cannot read threads: %s", tr_rundb_name(db), sqlite3_errmsg(db));
    sqlite3_finalize(q);
    return st;
}

/* pid -> its rank, or -1 for a pid two ranks have. */
static tr_status pid_ranks(const track_rows *t, tr_i64map *pid_rank, tr_error *err)
{
    for (size_t i = 0; i < t->n; i++) {
        int64_t had;
        if (t->v[i].kind != 0)
            continue;
        if (!tr_i64map_get(pid_rank, t->v[i].num, &had))
            had = t->v[i].rank;
        else if (had != t->v[i].rank)
            had = -1;
        if (tr_i64map_put(pid_rank, t->v[i].num, had) < 0)
            return nomem(err);
    }
    return TR_OK;
}

/* Gives every row the pid of its track (keeping the thread and stream maps
 * render() reads) and lists the tracks' metadata rows in *out. */
static tr_status assign_track_pids(chrome_ctx *c, const track_rows *t, const int64_t *ranks, size_t nr,
                                   rmeta **out, size_t *nout, tr_error *err)
{
    /* pids and ordinals no trace has would overflow the blocks of ids per rank:
     * then every process and GPU gets the next id instead (its name still says
     * its pid or device), so no two ranks' tracks can share one */
    int dense = t->maxpid >= INT32_MAX || t->maxdev >= 1 << 20;
    int64_t maxpid = dense ? 0 : t->maxpid, maxdev = dense ? 0 : t->maxdev, next_id = 0;
    int64_t gpu_base = (maxpid + 1) * ((int64_t)nr + 1);
    /* processes.id / devices.id -> the pid of its track */
    tr_i64map pid_rank, proc_pid, dev_pid;
    tr_i64map_init(&pid_rank);
    tr_i64map_init(&proc_pid);
    tr_i64map_init(&dev_pid);
    rmeta *v = t->n ? malloc(t->n * sizeof *v) : NULL;
    tr_status st = t->n && !v ? nomem(err) : pid_ranks(t, &pid_rank, err);
    for (size_t i = 0; st == TR_OK && i < t->n; i++) {
        const track_row *r = &t->v[i];
        int64_t at = rank_at(ranks, nr, r->rank), pid = 0, sole = 0;
        tr_i64map *own = r->kind == 0 ? &proc_pid : r->kind == 1 ? &c->thread_pid
                         : r->kind == 2 ? &dev_pid : &c->stream_pid;
        if (r->kind == 0) {
            tr_i64map_get(&pid_rank, r->num, &sole);
            pid = dense ? ++next_id : sole >= 0 ? r->num : (maxpid + 1) * (at + 1) + r->num;
        } else if (r->kind == 2) {
            pid = dense ? ++next_id : gpu_base + at * (maxdev + 1) + r->num;
        } else {   /* a thread or a stream: its owner's track */
            tr_i64map_get(r->kind == 1 ? &proc_pid : &dev_pid, r->owner, &pid);
        }
        if (tr_i64map_put(own, r->id, pid) < 0)
            st = nomem(err);
        v[i] = (rmeta){at, r->kind >= 2, pid, r->kind, r->kind == 1 || r->kind == 3 ? r->num : 0,
                       r->rank, r->num, r->name,
                       !c->sc.has_ranks || tr_rank_set_has(&c->o->ranks, r->rank)};
    }
    tr_i64map_free(&pid_rank);
    tr_i64map_free(&proc_pid);
    tr_i64map_free(&dev_pid);
    if (st != TR_OK) {
        free(v);
        return st;
    }
    *out = v;
    *nout = t->n;
    return TR_OK;
}

/* A process's or GPU's name and labels ("rank R" / "rank R,GPU D") and its
 * place in the order of the tracks. */
static void process_track_meta(chrome_ctx *c, const rmeta *e, const char *name, const char *labels,
                               int64_t order)
{
    cbuf *h = &c->head;
    meta_name(c, &c->head, "process_name", e->pid, 0, name);
    meta(h, "process_labels", e->pid, 0, "labels");
    put_escaped(c, h, labels, strlen(labels));
    cb_lit(h, "}}");
    meta_int(h, "process_sort_index", e->pid, 0, "sort_index", order);
}

/* The metadata of one track of the selected ranks. */
static void track_meta(chrome_ctx *c, const rmeta *e, int64_t *order)
{
    char buf[512], labels[64];
    size_t len = 0;
    const char *name = e->name_id ? tr_scan_string(&c->sc, e->name_id, &len) : "";
    int has = len > 0;
    switch (e->kind) {
    case 0:
        if (has)
            snprintf(buf, sizeof buf, "rank %lld: %.*s (pid %lld)", (long long)e->rank, (int)len, name,
                     (long long)e->orig);
        else
            snprintf(buf, sizeof buf, "rank %lld: process %lld", (long long)e->rank, (long long)e->orig);
        snprintf(labels, sizeof labels, "rank %lld", (long long)e->rank);
        process_track_meta(c, e, buf, labels, (*order)++);
        break;
    case 1:
        if (has) {
            snprintf(buf, sizeof buf, "%.*s", (int)len, name);
            meta_name(c, &c->head, "thread_name", e->pid, e->tid, buf);
        }
        meta_int(&c->head, "thread_sort_index", e->pid, e->tid, "sort_index", e->tid);
        break;
    case 2:
        snprintf(buf, sizeof buf, "rank %lld: GPU %lld%s%.*s", (long long)e->rank, (long long)e->orig,
                 has ? ": " : "", (int)len, name);
        snprintf(labels, sizeof labels, "rank %lld,GPU %lld", (long long)e->rank, (long long)e->orig);
        process_track_meta(c, e, buf, labels, (*order)++);
        break;
    default:
        break;   /* named in the files that have its activities (name_stream()) */
    }
}

/* The distinct ranks of the map's sources, ascending, in *out (*nr of them). */
static tr_status distinct_ranks(const tr_rank_map *m, int64_t **out, size_t *nr, tr_error *err)
{
    int64_t *ranks = malloc((m->nsrc ? m->nsrc : 1) * sizeof *ranks);
    if (!ranks)
        return nomem(err);
    for (size_t i = 0; i < m->nsrc; i++)
        ranks[i] = m->src[i].rank;
    qsort(ranks, m->nsrc, sizeof *ranks, cmp_i64);
    size_t n = 0;
    for (size_t i = 0; i < m->nsrc; i++)
        if (!n || ranks[n - 1] != ranks[i])
            ranks[n++] = ranks[i];
    *out = ranks;
    *nr = n;
    return TR_OK;
}

/* A run.db of two ranks or more (lib/ranks.h): host pids stay when one rank
 * alone has them, else move to (maxpid + 1) * (rank's place + 1) + pid; each
 * rank's GPUs come after all of those, one block of device ordinals per rank.
 * Processes are named "rank R: NAME (pid P)" and "rank R: GPU D: NAME" and
 * sorted by rank, host processes before GPUs.  Writes the metadata of the
 * selected ranks and the maps render() reads the pids from. */
static tr_status ranked_meta(chrome_ctx *c, tr_error *err)
{
    tr_rank_map m;
    tr_status st = tr_rank_map_load(&m, c->sc.db, 0, NULL, err);
    if (st != TR_OK || m.nranks < 2) {
        tr_rank_map_free(&m);
        return st;
    }
    c->multi_rank = 1;
    int64_t *ranks = NULL;
    size_t nr = 0, n = 0;
    track_rows rows = {0};
    rmeta *v = NULL;
    st = distinct_ranks(&m, &ranks, &nr, err);
    if (st == TR_OK)
        st = track_rows_load(&rows, c->sc.db, &m, err);
    if (st == TR_OK)
        st = assign_track_pids(c, &rows, ranks, nr, &v, &n, err);
    if (st == TR_OK) {
        qsort(v, n, sizeof *v, cmp_rmeta);
        int64_t order = 0;
        for (size_t i = 0; i < n; i++)
            /* one track per (pid, tid) even when several rows map to it */
            if (v[i].selected && !(i && v[i].kind == v[i - 1].kind && v[i].pid == v[i - 1].pid
                                   && v[i].tid == v[i - 1].tid))
                track_meta(c, &v[i], &order);
    }
    free(v);
    free(rows.v);
    free(ranks);
    tr_rank_map_free(&m);
    return st;
}

/* One rank: Kineto's own tracks, processes by pid and GPUs by device number. */
static tr_status kineto_meta(chrome_ctx *c, tr_error *err)
{
    sqlite3 *db = c->sc.db;
    cbuf *h = &c->head;
    sqlite3_stmt *st = NULL;
    static const char sql[] =
        "SELECT 0, p.pid, 0, s.value FROM processes p LEFT JOIN strings s ON s.id = p.name_id "
        "UNION ALL SELECT 1, p.pid, t.tid, s.value FROM threads t "
        "LEFT JOIN processes p ON p.id = t.process_id LEFT JOIN strings s ON s.id = t.name_id "
        "UNION ALL SELECT 2, d.device, 0, s.value FROM devices d LEFT JOIN strings s ON s.id = d.name_id "
        "ORDER BY 1, 2, 3";   /* streams: name_stream() */
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read threads: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    char buf[512];
    int64_t last_kind = -1, last_a = 0, last_b = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int kind = sqlite3_column_int(st, 0);
        int64_t a = sqlite3_column_int64(st, 1), b = sqlite3_column_int64(st, 2);
        const char *name = (const char *)sqlite3_column_text(st, 3);
        if (kind == last_kind && a == last_a && b == last_b)
            continue;   /* one track per (pid, tid) even when several rows map to it */
        last_kind = kind, last_a = a, last_b = b;
        int has = name && *name;
        switch (kind) {
        case 0:
            if (has)
                snprintf(buf, sizeof buf, "%s", name);
            else
                snprintf(buf, sizeof buf, "process %lld", (long long)a);
            meta_name(c, &c->head, "process_name", a, 0, buf);
            meta(h, "process_labels", a, 0, "labels");
            cb_lit(h, "\"CPU\"}}");
            meta_int(h, "process_sort_index", a, 0, "sort_index", a);
            break;
        case 1:
            /* an unnamed thread stays unnamed: viewers show its tid */
            if (has)
                meta_name(c, &c->head, "thread_name", a, b, name);
            meta_int(h, "thread_sort_index", a, b, "sort_index", b);
            break;
        case 2:
            snprintf(buf, sizeof buf, "GPU %lld%s%s", (long long)a, has ? ": " : "", has ? name : "");
            meta_name(c, &c->head, "process_name", tr_sat_add(a, c->dev_shift), 0, buf);
            snprintf(buf, sizeof buf, "GPU %lld", (long long)a);
            meta(h, "process_labels", tr_sat_add(a, c->dev_shift), 0, "labels");
            put_escaped(c, h, buf, strlen(buf));
            cb_lit(h, "}}");
            meta_int(h, "process_sort_index", tr_sat_add(a, c->dev_shift), 0, "sort_index",
                     tr_sat_add(GPU_SORT_BASE, a));
            break;
        }
    }
    sqlite3_finalize(st);
    return TR_OK;
}

/* The top-level keys and the metadata events, written again at the top of every part. */
static tr_status build_head(chrome_ctx *c, tr_error *err)
{
    sqlite3 *db = c->sc.db;
    cbuf *h = &c->head;
    sqlite3_stmt *st = NULL;
    /* host pids: a device ordinal that is also one moves its GPUs past them all */
    int64_t maxpid = -1;
    int clash = 0;
    if (sqlite3_prepare_v2(db, "SELECT max(pid), EXISTS(SELECT 1 FROM processes p JOIN devices d "
                           "ON d.device = p.pid) FROM processes", -1, &st, NULL) == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW) {
        maxpid = sqlite3_column_int64(st, 0);
        clash = sqlite3_column_int(st, 1);
    }
    sqlite3_finalize(st);
    c->dev_shift = clash && maxpid >= 0 && maxpid < INT32_MAX ? maxpid + 1 : 0;

    cb_lit(h, "{\"schemaVersion\":1,\"deviceProperties\":[");
    if (sqlite3_prepare_v2(db, "SELECT d.device, s.value, d.compute_major, d.compute_minor, "
                           "d.memory_bytes, d.sm_count FROM devices d LEFT JOIN strings s ON "
                           "s.id = d.name_id GROUP BY d.device ORDER BY d.device", -1, &st, NULL)
        != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table devices: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    static const char *const dev_keys[] = {NULL, NULL, "computeMajor", "computeMinor",
                                           "totalGlobalMem", "numSms"};
    int firstdev = 1;
    while (sqlite3_step(st) == SQLITE_ROW) {
        cb_str(h, firstdev ? "\n{\"id\":" : ",\n{\"id\":");
        firstdev = 0;
        cb_i64(h, sqlite3_column_int64(st, 0));
        const char *name = (const char *)sqlite3_column_text(st, 1);
        if (name) {
            cb_lit(h, ",\"name\":");
            put_escaped(c, h, name, strlen(name));
        }
        for (int k = 2; k < 6; k++)
            if (sqlite3_column_type(st, k) != SQLITE_NULL && sqlite3_column_int64(st, k) >= 0) {
                cb_lit(h, ",\"");
                cb_str(h, dev_keys[k]);
                cb_lit(h, "\":");
                cb_i64(h, sqlite3_column_int64(st, k));
            }
        cb_lit(h, "}");
    }
    sqlite3_finalize(st);
    cb_lit(h, "],\n\"displayTimeUnit\":\"ns\",\"baseTimeNanoseconds\":");
    cb_i64(h, c->sc.trace_start);
    cb_lit(h, ",\"otherData\":{\"generator\":\"trace-export\",\"time_origin\":\"ts is in "
              "microseconds after baseTimeNanoseconds\"},\n\"traceEvents\":[");
    c->head_at = h->n;
    tr_status rs = ranked_meta(c, err);
    if (rs == TR_OK && !c->multi_rank)
        rs = kineto_meta(c, err);
    if (rs != TR_OK)
        return rs;
    for (size_t i = c->head_at; i + 1 < h->n; i++)
        c->head_events += h->v[i] == '\n' && h->v[i + 1] == '{';
    if (h->n > c->head_at)
        memmove(h->v + c->head_at, h->v + c->head_at + 1, --h->n - c->head_at);   /* first comma */
    return h->oom ? nomem(err) : TR_OK;
}

/* ---- events --------------------------------------------------------------- */

/* Kineto's category of each kind, and whether it is an instant ("i") event.
 * The kinds Kineto has no category for keep ours (trace-ingest skips them). */
typedef struct { const char *cat; size_t cat_len; int instant; } kind_style;
#define KS(cat, instant) {cat, sizeof(cat) - 1, instant}

static const kind_style kind_styles[TR_KIND_COUNT_] = {
    [0] = KS("unknown", 0),
    [TR_KIND_RANGE] = KS("user_annotation", 0),
    [TR_KIND_OP] = KS("cpu_op", 0),
    [TR_KIND_MARK] = KS("cpu_instant_event", 1),
    [TR_KIND_RUNTIME] = KS("cuda_runtime", 0),
    [TR_KIND_DRIVER] = KS("cuda_driver", 0),
    [TR_KIND_SYNC] = KS("cuda_sync", 0),
    [TR_KIND_KERNEL] = KS("kernel", 0),
    [TR_KIND_MEMCPY] = KS("gpu_memcpy", 0),
    [TR_KIND_MEMSET] = KS("gpu_memset", 0),
    [TR_KIND_MEMORY] = KS("cpu_instant_event", 1),
    [TR_KIND_PYTHON] = KS("python_function", 0),
    [TR_KIND_OPENACC_DATA] = KS("openacc_data", 0),
    [TR_KIND_OPENACC_LAUNCH] = KS("openacc_launch", 0),
    [TR_KIND_OPENACC_OTHER] = KS("openacc_other", 0),
    [TR_KIND_CUDA_EVENT] = KS("cuda_event", 0),
    [TR_KIND_OVERHEAD] = KS("overhead", 0),
};

enum {
    C_ID, C_KIND, C_NAME, C_START, C_END, C_THREAD, C_STREAM, C_CORR, C_BYTES, C_SHAPE,
    C_STACK, C_SEQ, C_OPID, C_FLOPS, C_FLAGS, C_CPU_SELF, C_CPU_TOTAL, C_GPU_SELF, C_GPU_TOTAL,
    C_P_ID, C_P_KIND, C_P_THREAD, C_P_START, C_P_END, C_P_PARENT, C_PP_KIND,
    C_KN, C_GRID, C_BLOCK = C_GRID + 3, C_REGS = C_BLOCK + 3, C_SMEM, C_DSMEM, C_CP, C_COPY,
    C_MS, C_MSV, C_AC, C_CBID
};

/* The detail tables, keyed by event_id, their columns in the same order as in events_sql
 * after their event_id column. */
enum { D_KN, D_CP, D_MS, D_AC, D_N };
static const int d_base[D_N] = {C_KN, C_CP, C_MS, C_AC};
static const char *const d_sql[D_N] = {
    ("SELECT event_id, grid_x, grid_y, grid_z, block_x, block_y, block_z, registers_per_thread, "
     "static_shared_bytes, dynamic_shared_bytes FROM kernels ORDER BY event_id"),
    "SELECT event_id, copy_kind FROM copies ORDER BY event_id",
    "SELECT event_id, value FROM memsets ORDER BY event_id",
    "SELECT event_id, cbid FROM api_calls ORDER BY event_id"};

/* pp, the launching call's parent, gives GPU work (kinds 7, 8, 9, 15: lib/model.c) its op. */
static const char events_sql[] =
    "SELECT e.id, e.kind, e.name_id, e.start_ns, e.end_ns, e.thread_id, e.stream_id, "
    "e.correlation, e.bytes, e.shape_id, e.stack_id, e.seq, e.op_id, e.flops, e.flags, "
    "e.cpu_self_ns, e.cpu_total_ns, e.gpu_self_ns, e.gpu_total_ns, "
    "p.id, p.kind, p.thread_id, p.start_ns, p.end_ns, p.parent_id, pp.kind"
    "%s FROM events e LEFT JOIN events p ON p.id = e.parent_id "
    "LEFT JOIN events pp ON pp.id = p.parent_id AND e.kind IN (7, 8, 9, 15)%s ORDER BY %s";
/* In id order the detail tables are read beside the events, row for row (a merge join,
 * no lookup per event); in start order (--max-size) they are joined. */
static const char details_cols[] =
    ", kn.event_id, kn.grid_x, kn.grid_y, kn.grid_z, kn.block_x, kn.block_y, kn.block_z, "
    "kn.registers_per_thread, kn.static_shared_bytes, kn.dynamic_shared_bytes, cp.event_id, "
    "cp.copy_kind, ms.event_id, ms.value, ac.event_id, ac.cbid";
static const char details_joins[] =
    " LEFT JOIN kernels kn ON kn.event_id = e.id LEFT JOIN copies cp ON cp.event_id = e.id "
    "LEFT JOIN memsets ms ON ms.event_id = e.id LEFT JOIN api_calls ac ON ac.event_id = e.id";

/* The cells of a statement's current row, as lib/sql_ahead.h makes them: column
 * text_col (-1: none) with its text. */
static void stmt_cells(sqlite3_stmt *q, tr_sql_cell *out, int n, int text_col)
{
    for (int i = 0; i < n; i++) {
        tr_sql_cell *d = &out[i];
        d->type = sqlite3_column_type(q, i);
        d->i = d->type == SQLITE_NULL ? 0 : sqlite3_column_int64(q, i);
        d->p = i == text_col && d->type != SQLITE_NULL ? (const char *)sqlite3_column_text(q, i) : NULL;
        d->len = d->p ? sqlite3_column_bytes(q, i) : 0;
    }
}

/* The row of detail table `which` of event id, its event_id cell first, the others
 * after it as in details_cols; NULL when the event has none. */
static const tr_sql_cell *detail(chrome_ctx *c, const tr_sql_cell *row, int which, int64_t id)
{
    if (!c->merge)
        return row[d_base[which]].type != SQLITE_NULL ? row + d_base[which] : NULL;
    sqlite3_stmt *q = c->side[which];
    while (!c->side_done[which] && c->side_id[which] < id) {
        if (sqlite3_step(q) == SQLITE_ROW) {
            c->side_id[which] = sqlite3_column_int64(q, 0);
        } else {
            c->side_done[which] = 1;
        }
    }
    if (c->side_done[which] || c->side_id[which] != id)
        return NULL;
    int n = sqlite3_column_count(q);
    stmt_cells(q, c->side_row, n < D_MAX_COLS ? n : D_MAX_COLS, which == D_CP ? 1 : -1);
    return c->side_row;
}

static int is_gpu_kind(const chrome_ctx *c, int64_t kind)
{
    return kind >= 0 && kind < 64 && c->on_gpu[kind];
}

static int is_instant(int64_t kind)
{
    return kind > 0 && kind < TR_KIND_COUNT_ && kind_styles[kind].instant;
}

/* The selection of a host event (the scan's rules, then --min-dur). */
static int host_selected(const chrome_ctx *c, int64_t id, int64_t kind, int64_t start, int64_t end,
                         int64_t thread_id)
{
    const tr_export_opts *o = c->o;
    if (!is_instant(kind) && end - start < o->min_dur)
        return 0;
    if (c->use_set) {
        int64_t v;
        return tr_i64map_get(&c->selected, id, &v);
    }
    if (o->has_time_range) {
        int64_t t = o->time_absolute ? start : start - c->sc.trace_start;
        if (t < o->t_start || t >= o->t_end)
            return 0;
    }
    if (o->has_thread) {
        int64_t pid, tid;
        if (!tr_scan_thread(&c->sc, thread_id, &pid, &tid) || tid != o->thread_tid)
            return 0;
    }
    return 1;
}

/* One row of events_sql, decoded: the event, its launching call and its track. */
typedef struct {
    const tr_sql_cell *r;
    int64_t id, kind, start, end, flags, thread_id, stream_id, p_id, p_kind;
    int gpu;
    int has_launch;              /* GPU work whose parent is a host event: its launching call */
    int launch_sel;              /* ... and that call is written: a flow joins them */
    int64_t l_thread, l_start, l_end;
    int has_stream, on_stream;
    int64_t dev, stream, pid, tid;
} ev_row;

/* 0 for a row whose times no trace can hold (counted, as the scan counts them). */
static int decode_row(chrome_ctx *c, const tr_sql_cell *r, ev_row *e)
{
    e->r = r;
    e->id = r[C_ID].i, e->kind = r[C_KIND].i;
    e->start = r[C_START].i, e->end = r[C_END].i;
    if (!tr_times_ok(e->start, e->end) || !tr_ns_ok(r[C_CPU_SELF].i) || !tr_ns_ok(r[C_CPU_TOTAL].i)
        || !tr_ns_ok(r[C_GPU_SELF].i) || !tr_ns_ok(r[C_GPU_TOTAL].i)) {
        c->sc.nbad++;
        return 0;
    }
    e->flags = r[C_FLAGS].i;
    e->thread_id = tr_cell_i64(&r[C_THREAD], -1), e->stream_id = tr_cell_i64(&r[C_STREAM], -1);
    e->p_id = tr_cell_i64(&r[C_P_ID], -1), e->p_kind = tr_cell_i64(&r[C_P_KIND], 0);
    e->gpu = is_gpu_kind(c, e->kind);
    int has_l_thread = r[C_P_THREAD].type != SQLITE_NULL;
    e->l_thread = has_l_thread ? r[C_P_THREAD].i : -1;
    e->has_launch = e->gpu && e->p_id >= 0 && !is_gpu_kind(c, e->p_kind) && has_l_thread;
    e->l_start = r[C_P_START].i, e->l_end = r[C_P_END].i;
    e->launch_sel = e->has_launch && tr_times_ok(e->l_start, e->l_end)
                    && host_selected(c, e->p_id, e->p_kind, e->l_start, e->l_end, e->l_thread);
    e->dev = e->stream = 0;
    e->has_stream = e->stream_id >= 0 && tr_scan_stream(&c->sc, e->stream_id, &e->dev, &e->stream);
    /* a host wait that names its stream stays on its thread's track */
    e->on_stream = e->has_stream && (e->gpu || e->thread_id < 0);
    return 1;
}

/* GPU work: --min-dur, --device, then the selection of the scan (--include/--exclude)
 * or the window, which also keeps the work a shown call launched. */
static int gpu_selected(const chrome_ctx *c, const ev_row *e)
{
    const tr_export_opts *o = c->o;
    if (e->end - e->start < o->min_dur)
        return 0;
    if (o->has_device && (!e->on_stream || e->dev != o->device))
        return 0;
    if (c->use_set) {
        int64_t v;
        return tr_i64map_get(&c->selected, e->id, &v);
    }
    int in_range = 1;
    if (o->has_time_range) {
        int64_t t = o->time_absolute ? e->start : e->start - c->sc.trace_start;
        in_range = t >= o->t_start && t < o->t_end;
    }
    if (!(in_range || (e->launch_sel && !o->has_thread)))
        return 0;
    if (o->has_thread) {
        int64_t lp, lt;
        if (!e->has_launch || !tr_scan_thread(&c->sc, e->l_thread, &lp, &lt) || lt != o->thread_tid)
            return 0;
    }
    return 1;
}

static int row_selected(chrome_ctx *c, const ev_row *e)
{
    if (c->sc.has_ranks && !tr_rank_map_ok(&c->sc.ranks, e->thread_id, e->stream_id))
        return 0;   /* --rank */
    return e->gpu ? gpu_selected(c, e) : host_selected(c, e->id, e->kind, e->start, e->end, e->thread_id);
}

/* pid and tid of the event's track: its device and stream, or its process and thread. */
static void find_track(const chrome_ctx *c, ev_row *e)
{
    e->pid = e->tid = 0;
    if (e->on_stream) {
        e->pid = tr_sat_add(e->dev, c->dev_shift);
        e->tid = e->stream;
        if (c->multi_rank)
            tr_i64map_get(&c->stream_pid, e->stream_id, &e->pid);
    } else {
        tr_scan_thread(&c->sc, e->thread_id, &e->pid, &e->tid);
        if (c->multi_rank)
            tr_i64map_get(&c->thread_pid, e->thread_id, &e->pid);
    }
}

/* "key": in the args object that began at args_at, a comma before all but the first */
#define ARG(key)                              \
    do {                                      \
        if (b->n == args_at)                  \
            cb_lit(b, "\"" key "\":");        \
        else                                  \
            cb_lit(b, ",\"" key "\":");       \
    } while (0)

/* External id: what ties a launch and its GPU work to the op that made them */
static void put_external_id(cbuf *b, size_t args_at, const ev_row *e)
{
    int64_t ext = -1;
    if (e->kind == TR_KIND_OP || e->kind == TR_KIND_RANGE)
        ext = e->id;
    else if (e->p_kind == TR_KIND_OP || e->p_kind == TR_KIND_RANGE)
        ext = e->p_id;
    else if (e->has_launch) {
        int64_t pp_kind = e->r[C_PP_KIND].i;   /* NULL: 0, no kind */
        if (pp_kind == TR_KIND_OP || pp_kind == TR_KIND_RANGE)
            ext = tr_cell_i64(&e->r[C_P_PARENT], -1);
    }
    if (ext >= 0 && e->kind != TR_KIND_MEMORY && e->kind != TR_KIND_PYTHON) {
        ARG("External id");
        cb_i64(b, ext);
    }
}

/* An op's or a range's own args, as PyTorch writes them. */
static void put_op_args(chrome_ctx *c, cbuf *b, size_t args_at, const ev_row *e)
{
    const tr_sql_cell *r = e->r;
    int64_t seq = tr_cell_i64(&r[C_SEQ], -1), opid = r[C_OPID].i;
    int64_t flops = tr_cell_i64(&r[C_FLOPS], -1);
    if (seq >= 0) {
        ARG("Sequence number");
        cb_i64(b, seq);
    }
    if (opid > 0) {
        ARG("Record function id");
        cb_i64(b, opid);
    }
    if (flops >= 0) {
        ARG("flops");
        cb_i64(b, flops);
    }
    if (e->flags & TR_FLAG_ASYNC) {
        ARG("Async");
        cb_lit(b, "1");
    }
    /* RecordScope: BACKWARD_FUNCTION is 1; 0 stops readers guessing from the name */
    if (e->kind == TR_KIND_OP) {
        ARG("Scope");
        cb_put(b, (e->flags & TR_FLAG_BACKWARD) ? "1" : "0", 1);
    }
    if (r[C_SHAPE].i) {
        if (b->n != args_at)
            cb_lit(b, ",");
        put_shape(c, b, r[C_SHAPE].i);
    }
    if (r[C_STACK].type != SQLITE_NULL) {
        size_t at = b->n;
        if (b->n != args_at)
            cb_lit(b, ",");
        if (!put_stack(c, b, r[C_STACK].i))
            b->n = at;   /* a dangling stack id: no frames */
    }
}

/* A kernel's launch configuration; a field the source did not give stays absent
 * (NULL in the run.db).  d[C_X - C_KN] is column C_X of events_sql. */
static void put_launch_args(cbuf *b, size_t args_at, const tr_sql_cell *d)
{
    if (d[C_REGS - C_KN].type != SQLITE_NULL) {
        ARG("registers per thread");
        cb_i64(b, d[C_REGS - C_KN].i);
    }
    /* Kineto's "shared memory" is static + dynamic, as HTA and TraceLens read it;
     * "dynamic shared memory" keeps the split for trace-ingest */
    int has_static = d[C_SMEM - C_KN].type != SQLITE_NULL, has_dynamic = d[C_DSMEM - C_KN].type != SQLITE_NULL;
    if (has_static || has_dynamic) {
        ARG("shared memory");
        cb_i64(b, tr_sat_add(has_static ? d[C_SMEM - C_KN].i : 0, has_dynamic ? d[C_DSMEM - C_KN].i : 0));
    }
    if (has_dynamic) {
        ARG("dynamic shared memory");
        cb_i64(b, d[C_DSMEM - C_KN].i);
    }
    for (int g = 0; g < 2; g++) {
        if (d[(g ? C_BLOCK : C_GRID) - C_KN].type == SQLITE_NULL)
            continue;
        if (g == 0)
            ARG("grid");
        else
            ARG("block");
        for (int k = 0; k < 3; k++) {
            cb_put(b, k ? "," : "[", 1);
            cb_i64(b, d[(g ? C_BLOCK : C_GRID) - C_KN + k].i);
        }
        cb_lit(b, "]");
    }
}

/* The args object's members, in Kineto's order. */
static void put_args(chrome_ctx *c, cbuf *b, const ev_row *e)
{
    size_t args_at = b->n;
    const tr_sql_cell *r = e->r, *d;
    put_external_id(b, args_at, e);
    if (e->kind == TR_KIND_OP || e->kind == TR_KIND_RANGE)
        put_op_args(c, b, args_at, e);
    if (e->kind == TR_KIND_PYTHON) {
        ARG("Python id");
        cb_i64(b, e->id);
        ARG("Python parent id");
        if (e->p_kind == TR_KIND_PYTHON)
            cb_i64(b, e->p_id);
        else
            cb_lit(b, "null");
    }
    if (e->kind == TR_KIND_MEMORY) {
        ARG("Bytes");
        cb_i64(b, r[C_BYTES].i);
        /* c10::DeviceType: CPU 0, CUDA 1 */
        ARG("Device Type");
        cb_put(b, (e->flags & TR_FLAG_GPU_MEMORY) ? "1" : "0", 1);
    }
    if ((d = detail(c, r, D_AC, e->id)) != NULL) {
        ARG("cbid");
        cb_i64(b, d[1].i);
    }
    if (e->has_stream) {
        ARG("device");
        cb_i64(b, e->dev);
        int64_t ctx;
        if (tr_i64map_get(&c->stream_ctx, e->stream_id, &ctx)) {
            ARG("context");
            cb_i64(b, ctx);
        }
        ARG("stream");
        cb_i64(b, e->stream);
    }
    if (r[C_CORR].type != SQLITE_NULL) {
        ARG("correlation");
        cb_i64(b, r[C_CORR].i);
    }
    if ((d = detail(c, r, D_KN, e->id)) != NULL)
        put_launch_args(b, args_at, d);
    if (e->kind == TR_KIND_MEMCPY || e->kind == TR_KIND_MEMSET) {
        ARG("bytes");
        cb_i64(b, r[C_BYTES].i);
    }
    if ((d = detail(c, r, D_CP, e->id)) != NULL && d[1].type != SQLITE_NULL) {
        const char *k = d[1].p ? d[1].p : "";
        ARG("kind");
        put_escaped(c, b, k, strlen(k));
    }
    if ((d = detail(c, r, D_MS, e->id)) != NULL && d[1].type != SQLITE_NULL) {
        ARG("value");
        cb_i64(b, d[1].i);
    }
}
#undef ARG

/* ac2g, as Kineto draws it, from the launching call to the GPU work; the id is the
 * activity's, unique even when one launch (a graph) starts many. */
static void put_flow(chrome_ctx *c, cbuf *b, const ev_row *e)
{
    int64_t lpid = 0, ltid = 0;
    tr_scan_thread(&c->sc, e->l_thread, &lpid, &ltid);
    if (c->multi_rank)
        tr_i64map_get(&c->thread_pid, e->l_thread, &lpid);
    for (int f = 0; f < 2; f++) {
        cb_str(b, f ? ",\n{\"ph\":\"f\",\"bp\":\"e\"" : ",\n{\"ph\":\"s\"");
        cb_lit(b, ",\"cat\":\"ac2g\",\"name\":\"ac2g\",\"id\":");
        cb_i64(b, e->id);
        cb_lit(b, ",\"pid\":");
        cb_i64(b, f ? e->pid : lpid);
        cb_lit(b, ",\"tid\":");
        cb_i64(b, f ? e->tid : ltid);
        cb_lit(b, ",\"ts\":");
        cb_us(b, (f ? e->start : e->l_start) - c->sc.trace_start);
        cb_lit(b, "}");
    }
}

/* Appends b's bytes [from, to) to b itself (reserved first: the copy's
 * source moves when the buffer grows). */
static void cb_again(cbuf *b, size_t from, size_t to)
{
    if (to > from && cb_reserve(b, to - from)) {
        memcpy(b->v + b->n, b->v + from, to - from);
        b->n += to - from;
    }
}

/* The end ("e") of an async slice whose begin ("b") is in b: the begin's
 * category, name and id (its bytes [cat_at, ts_at)), the end time, and the
 * begin's track (its bytes [track_at, track_end)). */
static void put_async_end(chrome_ctx *c, cbuf *b, size_t cat_at, size_t ts_at, size_t track_at,
                          size_t track_end, int64_t end)
{
    cb_lit(b, ",\n{\"ph\":\"e\"");
    cb_again(b, cat_at, ts_at);
    cb_lit(b, ",\"ts\":");
    cb_us(b, end - c->sc.trace_start);
    cb_again(b, track_at, track_end);
    cb_lit(b, "}");
}

/* One run.db event (with its flow arrows) appended to c->out, or into c->ev for parts;
 * *nev trace events; 0 when left out (nothing written). */
static int render(chrome_ctx *c, const tr_sql_cell *r, int64_t *nev)
{
    /* one file: straight into the output buffer; parts: apart, to see if it fits */
    cbuf *b = c->merge ? &c->out : &c->ev;
    if (!c->merge)
        b->n = 0;
    *nev = 0;
    ev_row e;
    if (!decode_row(c, r, &e) || !row_selected(c, &e))
        return 0;
    find_track(c, &e);
    const kind_style *ks = &kind_styles[e.kind > 0 && e.kind < TR_KIND_COUNT_ ? e.kind : 0];
    /* an event that does not nest on its track: an async slice, as the format
     * asks (a viewer drops a complete event that ends after the one it starts in) */
    int async = !ks->instant && (e.flags & (TR_FLAG_ASYNC | TR_FLAG_UNNESTED));
    if (ks->instant)
        cb_lit(b, ",\n{\"ph\":\"i\"");
    else if (async)
        cb_lit(b, ",\n{\"ph\":\"b\"");
    else
        cb_lit(b, ",\n{\"ph\":\"X\"");
    size_t cat_at = b->n;
    cb_lit(b, ",\"cat\":\"");
    cb_put(b, ks->cat, ks->cat_len);
    cb_lit(b, "\",\"name\":");
    if (e.kind == TR_KIND_MEMORY)
        cb_lit(b, "\"[memory]\"");   /* the name Kineto's readers key memory events on */
    else
        put_name(c, b, r[C_NAME].i);
    if (async) {
        cb_lit(b, ",\"id\":");
        cb_i64(b, e.id);
    }
    size_t ts_at = b->n;
    cb_lit(b, ",\"ts\":");
    cb_us(b, e.start - c->sc.trace_start);
    if (ks->instant) {
        cb_lit(b, ",\"s\":\"t\"");
    } else if (!async) {
        cb_lit(b, ",\"dur\":");
        cb_us(b, e.end - e.start);
    }
    size_t track_at = b->n;
    cb_lit(b, ",\"pid\":");
    cb_i64(b, e.pid);
    cb_lit(b, ",\"tid\":");
    cb_i64(b, e.tid);
    size_t track_end = b->n;
    cb_lit(b, ",\"args\":{");
    put_args(c, b, &e);
    cb_lit(b, "}}");
    *nev = 1;
    if (async) {
        put_async_end(c, b, cat_at, ts_at, track_at, track_end, e.end);
        *nev = 2;
    }
    c->ev_start = e.start;
    c->ev_on_stream = e.on_stream;
    c->ev_stream_id = e.stream_id;
    c->ev_pid = e.pid;
    c->ev_tid = e.tid;
    /* no arrow to an activity drawn apart: a viewer binds a flow's end to the
     * slice open on the stream's track, the longer activity it overlapped */
    int flow = e.launch_sel && !(async && e.on_stream);
    c->has_flow = flow;
    if (flow) {
        c->flow_at = b->n;
        c->flow_call_start = e.l_start;
        put_flow(c, b, &e);
        *nev += 2;
    }
    return 1;
}

/* ---- files and parts ------------------------------------------------------ */

static const char footer[] = "\n]}\n";

static tr_status flush_out(chrome_ctx *c, tr_error *err)
{
    return sink_write(&c->sk, &c->out, err);
}

static void note_file(chrome_ctx *c)
{
    tr_export_chrome_stats *s = c->stats;
    if (!s)
        return;
    s->files++;
    s->events += c->sk.events;
    s->bytes += c->sk.bytes;
    if (c->sk.bytes > s->max_file_bytes)
        s->max_file_bytes = c->sk.bytes;
    if (c->sk.events > s->max_file_events)
        s->max_file_events = c->sk.events;
}

static tr_status begin_file(chrome_ctx *c, FILE *f, tr_error *err)
{
    int gz = c->path ? ends_with(c->path, ".gz") : c->o->gzip;
    tr_status st = sink_open(&c->sk, f, gz, err);
    if (st != TR_OK)
        return st;
    c->sk.events = c->head_events;
    c->files++;
    c->tail.n = 0;
    c->tail_events = 0;
    cb_put(&c->out, c->head.v, c->head.n);
    return c->out.oom ? nomem(err) : TR_OK;
}

/* Is the rendered event off the streams, or its stream named in this file? */
static int stream_named_here(const chrome_ctx *c)
{
    int64_t file;
    return !c->ev_on_stream || (tr_i64map_get(&c->stream_named, c->ev_stream_id, &file) && file == c->files);
}

/* The event just written is on a stream's track: the stream is named in this
 * file, once. */
static void name_stream(chrome_ctx *c)
{
    if (stream_named_here(c))
        return;
    if (tr_i64map_put(&c->stream_named, c->ev_stream_id, c->files) < 0) {
        c->tail.oom = 1;
        return;
    }
    stream_meta(c, &c->tail, c->ev_pid, c->ev_tid);
    c->tail_events += 2;
}

/* What naming the rendered event's stream would add to the current file: at
 * most this, when it is not named there yet. */
#define STREAM_META_MAX 256

static size_t stream_meta_pending(const chrome_ctx *c)
{
    return stream_named_here(c) ? 0 : STREAM_META_MAX;
}

static tr_status end_file(chrome_ctx *c, tr_error *err)
{
    cb_put(&c->out, c->tail.v, c->tail.n);
    c->sk.events += c->tail_events;
    if (c->tail.oom)
        return nomem(err);
    cb_put(&c->out, footer, sizeof footer - 1);
    tr_status st = c->out.oom ? nomem(err) : flush_out(c, err);
    tr_status st2 = sink_close(&c->sk, err);
    if (st == TR_OK)
        st = st2;
    if (st == TR_OK)
        note_file(c);
    return st;
}

/* "x.json" -> "x.N.json", "x.json.gz" -> "x.N.json.gz", "x" -> "x.N". */
static void part_path(char *buf, size_t size, const char *path, int n)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *ext = NULL;
    static const char *const exts[] = {".json.gz", ".json", ".gz"};
    for (size_t i = 0; i < sizeof exts / sizeof exts[0] && !ext; i++)
        if (ends_with(base, exts[i]) && strlen(base) > strlen(exts[i]))
            ext = base + strlen(base) - strlen(exts[i]);
    if (!ext)
        ext = base + strlen(base);
    snprintf(buf, size, "%.*s.%d%s", (int)(ext - path), path, n, ext);
}

static tr_status open_part(chrome_ctx *c, tr_error *err)
{
    char name[4096];
    part_path(name, sizeof name, c->path, ++c->nparts);
    FILE *f = tr_output_fopen(&c->part, name, err);
    if (!f)
        return err->status ? err->status : TR_ERR_RUNTIME;
    c->part_open = 1;
    return begin_file(c, f, err);
}

static tr_status close_part(chrome_ctx *c, tr_error *err)
{
    tr_status st = end_file(c, err);
    c->part_open = 0;
    if (st == TR_OK)
        return tr_output_commit(&c->part, err);
    tr_output_abort(&c->part);
    return st;
}

/* Is the launching call of the event in ev, which starts at call_start, in the
 * part being written?  Parts are in start order: a call that started after the
 * part's first event is; one that started with it is unless the part before
 * ended at that same time (the cut may have fallen between them).  A call that
 * starts after its GPU work (clocks apart) comes next, in this part but for a cut
 * in between. */
static int call_in_part(const chrome_ctx *c, int64_t call_start)
{
    if (c->nparts <= 1 || call_start > c->part_first_start)
        return 1;
    return call_start == c->part_first_start && c->prev_part_last_start < c->part_first_start;
}

static tr_status put_event(chrome_ctx *c, const char *p, size_t n, int64_t nevents, tr_error *err)
{
    tr_status st;
    uint64_t max = c->o->max_size;
    if (max && c->sk.events > c->head_events
        && c->sk.bytes + c->out.n + n + c->tail.n + stream_meta_pending(c) + sizeof footer - 1 > max) {
        if ((st = close_part(c, err)) != TR_OK || (st = open_part(c, err)) != TR_OK)
            return st;
        c->prev_part_last_start = c->last_start;
        c->part_has_event = 0;
    }
    if (!c->part_has_event) {
        c->part_first_start = c->ev_start;
        c->part_has_event = 1;
    }
    c->last_start = c->ev_start;
    if (c->has_flow && !call_in_part(c, c->flow_call_start)) {
        n = c->flow_at;   /* the call is in a part before: neither end of its flow here */
        nevents -= 2;
    }
    if (c->sk.events == 0)
        p++, n--;   /* the first event of the array: no comma */
    c->sk.events += (uint64_t)nevents;
    cb_put(&c->out, p, n);
    name_stream(c);
    if (c->out.oom)
        return nomem(err);
    return c->out.n >= FLUSH_AT ? flush_out(c, err) : TR_OK;
}

/* The event render() appended to c->out at `at`. */
static tr_status put_direct(chrome_ctx *c, size_t at, int64_t nevents, tr_error *err)
{
    if (c->sk.events == 0) {   /* the first event of the array: no comma */
        memmove(c->out.v + at, c->out.v + at + 1, c->out.n - at - 1);
        c->out.n--;
    }
    c->sk.events += (uint64_t)nevents;
    name_stream(c);
    return c->out.n >= FLUSH_AT ? flush_out(c, err) : TR_OK;
}

/* --include/--exclude need the frame tree: the scan decides, its choice is kept by id. */
static tr_status remember_selected(tr_scan *sc, tr_xrow *r, void *vctx, tr_error *err)
{
    (void)sc;
    chrome_ctx *c = vctx;
    if (r->selected && tr_i64map_put(&c->selected, r->id, 1) < 0)
        return nomem(err);
    return TR_OK;
}

static tr_status load_stream_ctx(chrome_ctx *c, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    tr_status s = TR_OK;
    if (sqlite3_prepare_v2(c->sc.db, "SELECT id, context FROM streams WHERE context IS NOT NULL",
                           -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table streams: %s",
                       tr_rundb_name(c->sc.db), sqlite3_errmsg(c->sc.db));
    while (s == TR_OK && sqlite3_step(st) == SQLITE_ROW)
        if (tr_i64map_put(&c->stream_ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0)
            s = nomem(err);
    sqlite3_finalize(st);
    return s;
}

static tr_status load_kinds(chrome_ctx *c, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->sc.db, "SELECT id, on_gpu FROM kinds", -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table kinds: %s", tr_rundb_name(c->sc.db),
                       sqlite3_errmsg(c->sc.db));
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t k = sqlite3_column_int64(st, 0);
        if (k >= 0 && k < 64)
            c->on_gpu[k] = sqlite3_column_int(st, 1) != 0;
    }
    sqlite3_finalize(st);
    return TR_OK;
}

/* ---- the events' rows ----------------------------------------------------
 *
 * Stepping SQLite and decoding its rows is two thirds of the export, the
 * rendering one third.  The rows are stepped ahead on helper threads
 * (lib/sql_ahead.h), each on a connection of its own, so the scan's stays
 * this thread's (the strings, the detail tables).  In id order two readers
 * take alternate blocks of ids and their rows are merged back by id; in
 * start order (--max-size) one reader keeps SQLite's own sort. */
#define EV_READERS 2
#define EV_BLOCK 4096   /* ids a block: each reader's pages stay its own */

typedef struct {
    int n;
    sqlite3 *db[EV_READERS];   /* NULL: the scan's connection, stepped on this thread */
    sqlite3_stmt *q[EV_READERS];
    tr_id_blocks blocks[EV_READERS];
    tr_sql_merge rows;
} ev_readers;

static void events_close(ev_readers *ev)
{
    tr_sql_merge_stop(&ev->rows);
    for (int k = 0; k < EV_READERS; k++) {
        sqlite3_finalize(ev->q[k]);
        sqlite3_close(ev->db[k]);
    }
}

static tr_status events_open(chrome_ctx *c, ev_readers *ev, tr_error *err)
{
    sqlite3 *db = c->sc.db;
    memset(ev, 0, sizeof *ev);
    /* TR_EXPORT_READ_BLOCK: ids a block, 0 for one reader (the tests compare them) */
    const char *env = getenv("TR_EXPORT_READ_BLOCK");
    long long block = env && *env ? atoll(env) : EV_BLOCK;
    int64_t min_id = 0, max_id = 0;
    int split = c->merge && block > 0 && tr_rundb_event_ids(db, &min_id, &max_id);
    ev->n = tr_rundb_open_peers(db, ev->db, split ? EV_READERS : 1);
    int threaded = ev->n > 0;
    if (!threaded)
        ev->n = 1;
    char what[4200];
    snprintf(what, sizeof what, "%s: cannot read table events", tr_rundb_name(db));
    char text_cols[C_CBID + 2];   /* copy_kind is the one text column */
    memset(text_cols, 'i', C_CBID + 1);
    text_cols[C_COPY] = 't';
    text_cols[C_CBID + 1] = '\0';
    tr_sql_ahead *ahead[EV_READERS] = {NULL};
    tr_status st = TR_OK;
    for (int k = 0; k < ev->n && st == TR_OK; k++) {
        const char *where = ev->n > 1 ? " WHERE e.id BETWEEN ?1 AND ?2" : "";
        char sql[sizeof events_sql + sizeof details_cols + sizeof details_joins + 128];
        snprintf(sql, sizeof sql, events_sql, c->merge ? "" : details_cols,
                 c->merge ? where : details_joins, c->merge ? "e.id" : "e.start_ns, e.id");
        sqlite3 *qdb = ev->db[k] ? ev->db[k] : db;
        if (sqlite3_prepare_v2(qdb, sql, -1, &ev->q[k], NULL) != SQLITE_OK)
            st = tr_fail(err, TR_ERR_INPUT, "%s: %s", what, sqlite3_errmsg(qdb));
        else if (ev->n == 1)
            st = tr_sql_ahead_start(&ahead[k], ev->q[k], c->merge ? C_PP_KIND + 1 : C_CBID + 1,
                                    text_cols, what, threaded, err);
        else {
            tr_id_blocks_first(&ev->blocks[k], ev->q[k], min_id, max_id, block, k, ev->n);
            st = tr_sql_ahead_start_ranges(&ahead[k], ev->q[k], C_PP_KIND + 1, text_cols, what, threaded,
                                           tr_id_blocks_next, &ev->blocks[k], err);
        }
    }
    if (st != TR_OK) {
        for (int k = 0; k < EV_READERS; k++)
            tr_sql_ahead_stop(ahead[k]);
        return st;
    }
    /* one reader: its own order (start order for parts); two: merged by id */
    return tr_sql_merge_start(&ev->rows, ahead, ev->n, C_ID, err);
}

static tr_status prepare_details(chrome_ctx *c, tr_error *err)
{
    sqlite3 *db = c->sc.db;
    for (int k = 0; k < D_N && c->merge; k++) {
        c->side_id[k] = INT64_MIN;
        if (sqlite3_prepare_v2(db, d_sql[k], -1, &c->side[k], NULL) != SQLITE_OK)
            return tr_fail(err, TR_ERR_INPUT, "%s: cannot read the launch details: %s",
                           tr_rundb_name(db), sqlite3_errmsg(db));
    }
    return TR_OK;
}

static tr_status run(chrome_ctx *c, FILE *out, tr_error *err)
{
    tr_status st;
    tr_scan_trace_start(&c->sc);
    if ((st = load_kinds(c, err)) != TR_OK || (st = load_frames(c, err)) != TR_OK
        || (st = load_stream_ctx(c, err)) != TR_OK
        || (st = build_head(c, err)) != TR_OK)
        return st;
    if (c->o->include_re || c->o->exclude_re) {
        c->use_set = 1;
        /* all, as the merged redispatches are written too */
        if ((st = tr_scan_run(&c->sc, TR_SCAN_ALL, remember_selected, c, err)) != TR_OK)
            return st;
        c->sc.nbad = 0;   /* counted again below */
    }
    /* parts are time slices: they need start order; one file takes the table's order */
    c->merge = !c->o->max_size;
    ev_readers ev;
    st = events_open(c, &ev, err);
    if (st == TR_OK)
        st = prepare_details(c, err);
    if (st == TR_OK)
        st = c->path ? open_part(c, err) : begin_file(c, out, err);
    const tr_sql_cell *row;
    int rc = 0;
    while (st == TR_OK && (row = tr_sql_merge_next(&ev.rows, &rc, err)) != NULL) {
        int64_t nev;
        size_t at = c->out.n;
        if (!render(c, row, &nev))
            continue;
        if (c->ev.oom || c->out.oom)
            st = nomem(err);
        else if (c->merge)
            st = put_direct(c, at, nev, err);
        else
            st = put_event(c, c->ev.v, c->ev.n, nev, err);
    }
    if (st == TR_OK && rc < 0)
        st = err->status;
    events_close(&ev);
    if (st == TR_OK)
        st = c->path ? close_part(c, err) : end_file(c, err);
    if (st != TR_OK) {
        sink_free(&c->sk);
        if (c->path && c->part_open)
            tr_output_abort(&c->part), c->part_open = 0;
    }
    return st;
}

static tr_status chrome(sqlite3 *db, const tr_export_opts *o, FILE *out, const char *path,
                        tr_error *err)
{
    chrome_ctx *c = calloc(1, sizeof *c);
    if (!c)
        return nomem(err);
    c->o = o;
    c->cap = (tr_name_cap){NAME_SOFT, NAME_HARD, NAME_BUDGET};
    c->path = path;
    c->stats = o->chrome_stats;
    tr_i64map_init(&c->names);
    tr_i64map_init(&c->shapes);
    tr_i64map_init(&c->stacks);
    tr_i64map_init(&c->frame_row);
    tr_i64map_init(&c->selected);
    tr_i64map_init(&c->stream_ctx);
    tr_i64map_init(&c->thread_pid);
    tr_i64map_init(&c->stream_pid);
    tr_i64map_init(&c->stream_named);
    c->scratch = open_memstream(&c->scratch_buf, &c->scratch_len);
    tr_status st = c->scratch ? tr_scan_init(&c->sc, db, o, err) : nomem(err);
    if (st == TR_OK)
        st = run(c, out, err);
    if (c->sc.db)
        tr_scan_free(&c->sc);   /* adds the events left out to *o->skipped */
    if (c->scratch)
        fclose(c->scratch);
    free(c->scratch_buf);
    free(c->arena.v);
    free(c->spans);
    free(c->frames);
    free(c->head.v);
    free(c->ev.v);
    free(c->out.v);
    free(c->tail.v);
    tr_i64map_free(&c->names);
    tr_i64map_free(&c->shapes);
    tr_i64map_free(&c->stacks);
    tr_i64map_free(&c->frame_row);
    tr_i64map_free(&c->selected);
    tr_i64map_free(&c->stream_ctx);
    tr_i64map_free(&c->thread_pid);
    tr_i64map_free(&c->stream_pid);
    tr_i64map_free(&c->stream_named);
    for (size_t k = 0; k < sizeof c->longs / sizeof c->longs[0]; k++)
        free(c->longs[k].head);
    for (int k = 0; k < D_N; k++)
        sqlite3_finalize(c->side[k]);
    free(c);
    return st;
}

tr_status tr_export_chrome(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    return chrome(db, o, out, NULL, err);
}

tr_status tr_export_chrome_parts(sqlite3 *db, const tr_export_opts *o, const char *path,
                                 tr_error *err)
{
    if (!path || !strcmp(path, "-"))
        return tr_fail(err, TR_ERR_USAGE, "--max-size writes numbered files: give -o FILE");
    return chrome(db, o, NULL, path, err);
}

/* "10us", "1.5ms", "250" (ns): a duration in ns. */
tr_status tr_export_parse_dur(const char *s, int64_t *ns, tr_error *err)
{
    static const struct { const char *unit; double ns; } units[] = {
        {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}, {"", 1}};
    char *end;
    double v = strtod(s, &end);
    if (end != s && v >= 0)
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(end, units[i].unit) && v * units[i].ns < 9e18) {
                *ns = (int64_t)(v * units[i].ns + 0.5);
                return TR_OK;
            }
    return tr_fail(err, TR_ERR_USAGE, "invalid duration '%s' (a number with ns, us, ms or s)", s);
}

/* "200MB", "1.5G", "4096" (bytes): decimal or binary units. */
tr_status tr_export_parse_size(const char *s, uint64_t *bytes, tr_error *err)
{
    static const struct { const char *unit; double mult; } units[] = {
        {"", 1}, {"B", 1}, {"k", 1e3}, {"K", 1e3}, {"kB", 1e3}, {"KB", 1e3}, {"M", 1e6},
        {"MB", 1e6}, {"G", 1e9}, {"GB", 1e9}, {"KiB", 1024.0}, {"MiB", 1048576.0},
        {"GiB", 1073741824.0}};
    char *end;
    double v = strtod(s, &end);
    if (end != s && v > 0)
        for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
            if (!strcmp(end, units[i].unit) && v * units[i].mult >= 4096 && v * units[i].mult < 1e18) {
                *bytes = (uint64_t)(v * units[i].mult);
                return TR_OK;
            }
    return tr_fail(err, TR_ERR_USAGE, "invalid size '%s' (bytes, at least 4096; units k, M, G, "
                   "KiB, MiB, GiB)", s);
}

tr_status tr_export_step_window(sqlite3 *db, const char *spec, tr_export_opts *o, tr_error *err)
{
    char *end;
    long long a = strtoll(spec, &end, 10), b = a;
    if (end != spec && *end == '-')
        b = strtoll(end + 1, &end, 10);
    if (end == spec || *end || a < 0 || b < a)
        return tr_fail(err, TR_ERR_USAGE, "invalid --step '%s' (a step number N or a range A-B)", spec);
    /* the steps view's rule (lib/rundb.c): ProfilerStep#N ranges or ops, N all digits */
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT min(e.start_ns), max(e.end_ns), "
                           "(SELECT group_concat(substr(value, 14), ' ') FROM strings WHERE value GLOB "
                           "'ProfilerStep#[0-9]*' AND substr(value, 14) NOT GLOB '*[^0-9]*') "
                           "FROM events e JOIN strings s ON s.id = e.name_id WHERE e.kind IN (1, 2) "
                           "AND s.value GLOB 'ProfilerStep#[0-9]*' AND substr(s.value, 14) NOT GLOB "
                           "'*[^0-9]*' AND CAST(substr(s.value, 14) AS INTEGER) BETWEEN ?1 AND ?2",
                           -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read the steps: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, a);
    sqlite3_bind_int64(st, 2, b);
    tr_status s = TR_OK;
    if (sqlite3_step(st) != SQLITE_ROW || sqlite3_column_type(st, 0) == SQLITE_NULL) {
        const char *have = (const char *)sqlite3_column_text(st, 2);
        s = tr_fail(err, TR_ERR_INPUT, "--step %s: no such ProfilerStep#N range (steps: %.200s)", spec,
                    have ? have : "none");
    } else {
        o->has_time_range = 1;
        o->time_absolute = 1;
        o->t_start = sqlite3_column_int64(st, 0);
        int64_t e = sqlite3_column_int64(st, 1);
        o->t_end = e < INT64_MAX ? e + 1 : e;
    }
    sqlite3_finalize(st);
    return s;
}

/* What chrome://tracing and the Perfetto UI are known to hold (docs/export.md). */
#define TRACING_MAX_BYTES ((uint64_t)256 * 1000 * 1000)
#define TRACING_MAX_EVENTS ((uint64_t)1000 * 1000)
#define PERFETTO_MAX_BYTES ((uint64_t)2000 * 1000 * 1000)

void tr_export_chrome_warn(FILE *f, const tr_export_chrome_stats *s)
{
    if (!s->files || (s->max_file_bytes <= TRACING_MAX_BYTES && s->max_file_events <= TRACING_MAX_EVENTS))
        return;
    fprintf(f, "trace-export: warning: %s %.0f MB and %llu events (uncompressed): %s; "
            "cut it with --time-range, --step, --min-dur or split it with --max-size\n",
            s->files > 1 ? "the largest part is" : "the trace is", (double)s->max_file_bytes / 1e6,
            (unsigned long long)s->max_file_events,
            s->max_file_bytes > PERFETTO_MAX_BYTES
                ? "too large for the Perfetto UI (about 2 GB) and chrome://tracing (about 256 MB, "
                  "1M events)"
                : "chrome://tracing stops near 256 MB or 1M events (the Perfetto UI holds about 2 GB)");
}
