/*
 * kineto.c - reader for PyTorch profiler / Kineto chrome traces (.json, .json.gz).
 *
 * Streaming: each element of the traceEvents array is cut out of the document
 * and parsed alone, on a second thread (see "the traceEvents array" below):
 * by json_subset.h where the element lies whole in the input buffer and in
 * the subset of JSON it takes, otherwise cut out by a small tokenizer
 * (string/escape state and bracket depth only) and parsed by cJSON.  Memory is bounded by the largest event and the
 * model, never by the file.  Both the {"traceEvents": [...]} wrapper and the
 * bare top-level array of the 2020 era are read; other top-level values
 * (deviceProperties, baseTimeNanoseconds, schemaVersion) are parsed one by one.
 *
 * Times: ts and dur are microseconds in every era (displayTimeUnit only changes
 * how viewers display them); they are converted from the number's text to
 * integer ns.  baseTimeNanoseconds, when present, is added to every event of
 * the file once the whole document has been read (it may follow the events).
 *
 * docs/formats.md lists how each category maps to the model and what is skipped.
 */
#include <ctype.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "ingest/ingest.h"
#include "ingest/kineto.h"
#include "ingest/readers/json_subset.h"
#include "lib/i64map.h"
#include "lib/names.h"
#include "lib/spill.h"

#define WHAT "Kineto trace"
#define KIN_BUFSZ (256 * 1024)
#define KIN_MAX_ELEMENT ((size_t)512 * 1024 * 1024)

/* cJSON's type tests, inline: the library's are calls into the shared
 * library, made for every key handle_event() reads. */
static inline int j_type(const cJSON *j)
{
    return j ? j->type & 0xFF : cJSON_Invalid;
}
static inline int j_number(const cJSON *j) { return j_type(j) == cJSON_Number; }
static inline int j_string(const cJSON *j) { return j_type(j) == cJSON_String; }
static inline int j_array(const cJSON *j) { return j_type(j) == cJSON_Array; }
static inline int j_object(const cJSON *j) { return j_type(j) == cJSON_Object; }
static inline int j_true(const cJSON *j) { return j_type(j) == cJSON_True; }
static inline int j_bool(const cJSON *j) { return j && (j->type & (cJSON_True | cJSON_False)) != 0; }

/* ---- input: a gzFile (plain or gzip) or a memory buffer ---------------- */

typedef struct {
    gzFile gz;
    const unsigned char *buf;
    unsigned char *own;
    size_t pos, len;
    uint64_t base;          /* offset of buf[0] in the (uncompressed) document */
    int eof;
    int failed;             /* read error: err already filled */
} kin_in;

typedef struct {
    char *v;
    size_t n, cap;
} kin_buf;

typedef struct arena_block { struct arena_block *next; size_t cap; max_align_t data[]; } arena_block;
/* See arena_alloc(): the blocks in the order they are used, the current one
 * (the blocks after it are unused since the last reset) and its free bytes. */
typedef struct { tr_json_region free; arena_block *head, *cur; } kin_arena;

typedef struct { int64_t pid, tid; uint32_t name; } kin_tname;
/* The keys an event is read by, and those of its args (kin_ev_keys[] and
 * kin_arg_keys[] name them). */
typedef enum { K_PH, K_NAME, K_CAT, K_PID, K_TID, K_ARGS, K_S, K_ID, K_NKEYS } kin_ev_key;
typedef enum {
    A_CORRELATION, A_DEVICE, A_STREAM, A_CONTEXT, A_KIND, A_NAME, A_CBID,
    A_INPUT_DIMS, A_INPUT_DIMS_LOWER, A_SEQUENCE, A_RECORD_FUNCTION, A_FLOPS, A_ASYNC,
    A_SCOPE, A_FWD_THREAD, A_CALL_STACK,
    A_GRID, A_BLOCK, A_REGISTERS, A_SHARED_MEMORY, A_DYNAMIC_SHARED_MEMORY,
    A_BYTES, A_BYTES_UPPER, A_DEVICE_TYPE, A_PYTHON_ID, A_PYTHON_PARENT,
    A_COLLECTIVE, A_PG_NAME, A_PG_DESCRIPTION, A_PG_RANKS, A_DTYPE, A_SEQ_UPPER, A_SEQ,
    A_IN_NELEMS, A_OUT_NELEMS, A_GROUP_SIZE,
    A_NKEYS
} kin_arg_key;

/* ts and dur as read from an event's text (read_item_times()), judged by
 * event_times() once the event's phase says whether dur counts. */
enum { TIME_TS = 1, TIME_DUR = 2 };
typedef struct {
    unsigned found;   /* TIME_*: present and converted */
    unsigned bad;     /* TIME_*: present but not a number of ns in range */
    int64_t ts, dur;  /* ns */
} kin_times;

/* One parsed trace event, its text (ts and dur are read from the text; of
 * an event parse_in_place() took, only their digits) and the values under
 * its keys and its args' (NULL where absent; see find_keys()). */
typedef struct {
    const cJSON *ev;
    uint64_t off;
    const char *text;
    size_t len;
    int escaped;   /* its text has a backslash in a string: it may hold \u0000 */
    const cJSON *key[K_NKEYS];
    const cJSON *arg[A_NKEYS];
    /* where its ts and dur are in its text, when parse_in_place() found them
     * (time_spans; bit k of time_found: time_keys[k] is there); else the
     * text is scanned for them */
    int time_spans;
    unsigned time_found;
    size_t time_off[2], time_len[2];
    kin_times times;
} kin_item;
typedef struct { int64_t pyid, parent; size_t event; } kin_py;

typedef struct {
    tr_trace *t;
    const char *path;
    const tr_ingest_opts *o;
    tr_error *err;
    kin_in in;
    kin_buf el;             /* the current element */
    size_t escapes;         /* backslashes met inside strings so far */
    kin_buf tmp;            /* shape strings */
    kin_arena arena;        /* cJSON's nodes of the top-level values */
    uint32_t source;
    size_t first_event;
    size_t nevents_seen;
    int64_t base_ns;
    int have_base;
    /* names from metadata events, applied at the end */
    TR_VEC(kin_tname) pnames;
    TR_VEC(kin_tname) tnames;
    /* python_function events: id, parent id and event index */
    TR_VEC(kin_py) py;
    TR_VEC(uint32_t) frames;
    /* one-entry thread cache */
    int64_t c_pid, c_tid;
    uint32_t c_thread;
    size_t unknown, unknown_first_len;
    char unknown_first[64];
    size_t no_ts, overhead;
    size_t legacy;          /* events in the autograd profiler's own layout */
    tr_i64map async_open;   /* async_key() of a slice begun ("b") -> its event, until its "e" */
} kin_reader;

static tr_status oom(kin_reader *r)
{
    return tr_fail(r->err, TR_ERR_RUNTIME, "out of memory while reading " WHAT " %s", r->path);
}

static uint64_t in_offset(const kin_in *in)
{
    return in->base + in->pos;
}

static tr_status bad_at(tr_error *err, const char *path, uint64_t off, const char *fmt,
                        const char *arg)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, arg ? arg : "");
    return tr_fail(err, TR_ERR_INPUT, "Cannot read " WHAT ": path=\"%s\", offset=%llu: %s", path,
                   (unsigned long long)off, msg);
}

static tr_status bad(kin_reader *r, uint64_t off, const char *fmt, const char *arg)
{
    return bad_at(r->err, r->path, off, fmt, arg);
}

/* Refills the buffer; 1 if bytes are available, 0 at end, -1 on error. */
static int in_fill(kin_reader *r)
{
    kin_in *in = &r->in;
    if (in->pos < in->len)
        return 1;
    if (in->eof || !in->gz)
        return in->failed ? -1 : 0;
    in->base += in->len;
    in->pos = in->len = 0;
    int n = gzread(in->gz, in->own, KIN_BUFSZ);
    if (n > 0) {
        in->len = (size_t)n;
        return 1;
    }
    int errnum = Z_OK;
    const char *msg = gzerror(in->gz, &errnum);
    in->eof = 1;
    if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
        in->failed = 1;
        bad(r, in->base, "%s",
            errnum == Z_BUF_ERROR ? "truncated gzip stream (unexpected end of file)"
            : errnum == Z_ERRNO  ? "read error"
                                 : msg);
        return -1;
    }
    return 0;
}

static inline int in_peek(kin_reader *r)
{
    if (r->in.pos < r->in.len)
        return r->in.buf[r->in.pos];
    int f = in_fill(r);
    return f > 0 ? r->in.buf[r->in.pos] : f < 0 ? -2 : -1;
}

static int skip_ws(kin_reader *r)
{
    for (;;) {
        int c = in_peek(r);
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
            r->in.pos++;
        else
            return c;
    }
}

/* Room for n more bytes and a NUL; 0 ok, -1 out of memory. */
static int buf_reserve(kin_buf *b, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *v = realloc(b->v, cap);
        if (!v)
            return -1;
        b->v = v;
        b->cap = cap;
    }
    return 0;
}

static int buf_add(kin_buf *b, const void *p, size_t n)
{
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->v + b->n, p, n);
    b->n += n;
    b->v[b->n] = 0;
    return 0;
}

static tr_status eof_error(kin_reader *r, const char *what)
{
    if (r->in.failed)
        return TR_ERR_INPUT;
    return bad(r, in_offset(&r->in), "unexpected end of input inside %s (truncated file?)", what);
}

/* Appends one JSON value (object, array, string or scalar) to out, tracking
 * string/escape state and bracket depth; cJSON validates it later. */
static tr_status scan_value_into(kin_reader *r, kin_buf *out)
{
    size_t from = out->n;
    int c = in_peek(r);
    if (c < 0)
        return eof_error(r, "a value");
    kin_in *in = &r->in;
    if (c == '{' || c == '[' || c == '"') {
        long depth = 0;
        int in_str = 0, esc = 0, started = 0;
        for (;;) {
            if (in_peek(r) < 0)
                return eof_error(r, c == '"' ? "a string" : "an object or array");
            const unsigned char *p = in->buf + in->pos, *end = in->buf + in->len;
            const unsigned char *q = p;
            int done = 0;
            while (q < end) {
                if (in_str) {
                    if (esc) {
                        esc = 0;
                        q++;
                        continue;
                    }
                    q = tr_json_string_special(q, end);
                    if (q == end)
                        break;
                    if (*q++ == '\\') {
                        esc = 1;
                        r->escapes++;
                        continue;
                    }
                    in_str = 0;   /* the closing '"' */
                    if (depth == 0) {
                        done = 1;
                        break;
                    }
                    continue;
                }
                unsigned char ch = *q++;
                if (ch == '"') {
                    if (started && depth == 0) {   /* cannot happen: a value ended */
                        done = 1;
                        q--;
                        break;
                    }
                    in_str = 1;
                    started = 1;
                } else if (ch == '{' || ch == '[') {
                    depth++;
                    started = 1;
                } else if (ch == '}' || ch == ']') {
                    if (--depth <= 0) {
                        done = 1;
                        break;
                    }
                }
            }
            if (buf_add(out, p, (size_t)(q - p)) < 0)
                return oom(r);
            in->pos += (size_t)(q - p);
            if (done)
                return TR_OK;
            if (out->n - from > KIN_MAX_ELEMENT)
                return bad(r, in_offset(in), "%s", "a single JSON value larger than 512 MiB");
        }
    }
    /* scalar: up to a delimiter */
    for (;;) {
        c = in_peek(r);
        if (c == -2)
            return TR_ERR_INPUT;
        if (c < 0 || c == ',' || c == ']' || c == '}' || c == ' ' || c == '\n' || c == '\r'
            || c == '\t')
            return TR_OK;
        char ch = (char)c;
        if (buf_add(out, &ch, 1) < 0)
            return oom(r);
        in->pos++;
        if (out->n - from > 4096)
            return bad(r, in_offset(in), "%s", "invalid JSON value");
    }
}

/* One value into r->el, alone. */
static tr_status scan_value(kin_reader *r)
{
    r->el.n = 0;
    return scan_value_into(r, &r->el);
}

/* ---- cJSON's memory: arenas emptied in bulk --------------------------------
 *
 * cJSON allocates every node and string of an event separately; malloc and
 * free were a sixth of the read time.  While a document is read, cJSON's
 * (process-wide) hooks point at a bump allocator.  Each thread allocates from
 * its own current arena (a thread-local pointer): the top-level values from
 * the reader's arena, emptied after each value; the events from the arena of
 * the batch that holds them (see "the traceEvents array" below), emptied when
 * the batch is refilled.  Nothing parsed outlives its arena.  One document is
 * read at a time in a process, like the rest of the ingest.  The current
 * block's free bytes are a tr_json_region, so json_subset.h takes its nodes
 * and strings from them without a call. */
#define KIN_ARENA_BLOCK ((size_t)256 * 1024)


static _Thread_local kin_arena *cur_arena;

/* The next block (one kept from before the last reset, else a new one) made
 * current, with n bytes taken from it. */
static void *arena_next_block(kin_arena *a, size_t n)
{
    arena_block *b = a->cur ? a->cur->next : a->head;
    if (!b || n > b->cap) {
        size_t cap = n > KIN_ARENA_BLOCK ? n : KIN_ARENA_BLOCK;
        b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->cap = cap;
        b->next = a->cur ? a->cur->next : a->head;
        if (a->cur)
            a->cur->next = b;
        else
            a->head = b;
    }
    a->cur = b;
    a->free.next = (char *)b->data + n;
    a->free.end = (char *)b->data + b->cap;
    return b->data;
}

/* json_subset.h takes what fits in the current block's free bytes itself
 * (tr_json_subset_parse_prefix_in()), and calls this past them. */
static void *arena_alloc(size_t n)
{
    kin_arena *a = cur_arena;
    void *p = tr_json_region_take(&a->free, n);
    return p ? p : arena_next_block(a, tr_json_region_size(n));
}

static void arena_free_one(void *p) { (void)p; }

/* Empties the arena; keeps its standard-size blocks for reuse and frees the
 * larger ones a huge value needed. */
static void arena_reset(kin_arena *a)
{
    arena_block **link = &a->head;
    while (*link) {
        arena_block *b = *link;
        if (b->cap > KIN_ARENA_BLOCK) {
            *link = b->next;
            free(b);
            continue;
        }
        link = &b->next;
    }
    a->cur = NULL;
    a->free.next = a->free.end = NULL;
}

static void arena_free(kin_arena *a)
{
    while (a->head) {
        arena_block *next = a->head->next;
        free(a->head);
        a->head = next;
    }
    a->cur = NULL;
    a->free.next = a->free.end = NULL;
}

static void arena_begin(kin_arena *a)
{
    cur_arena = a;
    cJSON_Hooks hooks = {arena_alloc, arena_free_one};
    cJSON_InitHooks(&hooks);
}

static void arena_end(kin_arena *a)
{
    cJSON_InitHooks(NULL);
    arena_free(a);
    cur_arena = NULL;
}

/* A NUL escaped inside a string (\u0000) would end the C string cJSON hands
 * back, cutting the name and every "Call stack" frame after it: keep it as
 * the visible text \u0000 instead.  0 ok, -1 out of memory. */
static int has_nul_escape(const char *text, size_t n)
{
    return text && memmem(text, n, "u0000", 5) != NULL;
}

/* Writes text with each \u0000 as \\u0000 to out (when not NULL); returns the
 * length written. */
static size_t escape_nuls(const char *text, size_t n, char *out)
{
    size_t len = 0, from = 0;
    for (size_t i = 0; i + 5 < n; i++) {
        if (text[i] != '\\')
            continue;
        if (memcmp(text + i + 1, "u0000", 5) == 0) {
            if (out)
                memcpy(out + len, text + from, i + 1 - from);
            len += i + 1 - from;
            from = i;   /* the backslash again: \u0000 becomes \\u0000 */
        }
        i++;   /* the escaped character */
    }
    if (out)
        memcpy(out + len, text + from, n - from);
    return len + n - from;
}

static int keep_nul_escapes(kin_reader *r)
{
    if (!has_nul_escape(r->el.v, r->el.n))
        return 0;
    size_t n = escape_nuls(r->el.v, r->el.n, NULL);
    r->tmp.n = 0;
    if (buf_reserve(&r->tmp, n) < 0)
        return -1;
    r->tmp.n = escape_nuls(r->el.v, r->el.n, r->tmp.v);
    r->tmp.v[r->tmp.n] = '\0';
    kin_buf swap = r->el;
    r->el = r->tmp;
    r->tmp = swap;
    return 0;
}

/* Parses one value's text (len bytes, NUL-terminated) into the current
 * arena, by json_subset.h where it can and by cJSON otherwise; NULL with err
 * filled if it is not exactly one JSON value.  Touches no reader state, so
 * the producer thread can run it. */
static cJSON *parse_text(const char *path, const char *text, size_t len, uint64_t start,
                         tr_error *err)
{
    cJSON *j = tr_json_subset_parse(text, len, arena_alloc);
    if (j)
        return j;
    const char *end = NULL;
    j = cJSON_ParseWithLengthOpts(text ? text : "", len, &end, 0);
    if (j && (!end || (size_t)(end - text) >= len))
        return j;
    /* on failure cJSON leaves `end` at the error (its global error pointer
     * is shared by every thread, so it is not read) */
    uint64_t off = start;
    if (end && text && end >= text && end <= text + len)
        off += (uint64_t)(end - text);
    bad_at(err, path, off, "%s", "invalid JSON");
    return NULL;
}

static cJSON *parse_el(kin_reader *r, uint64_t start)
{
    if (keep_nul_escapes(r) < 0) {
        oom(r);
        return NULL;
    }
    return parse_text(r->path, r->el.v, r->el.n, start, r->err);
}

/* ---- numbers and strings ------------------------------------------------ */

int tr_kineto_us_to_ns(const char *s, size_t n, int64_t *out)
{
    size_t i = 0;
    int neg = 0;
    while (i < n && s[i] == ' ')
        i++;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    uint64_t m = 0;
    long scale = 3;     /* microseconds -> nanoseconds */
    int ndig = 0;
    while (i < n && isdigit((unsigned char)s[i])) {
        if (m <= 1844674407370955160ULL)
            m = m * 10 + (uint64_t)(s[i] - '0');
        else
            scale++;
        i++;
        ndig++;
    }
    if (i < n && s[i] == '.') {
        i++;
        while (i < n && isdigit((unsigned char)s[i])) {
            if (m <= 1844674407370955160ULL) {
                m = m * 10 + (uint64_t)(s[i] - '0');
                scale--;
            }
            i++;
            ndig++;
        }
    }
    if (!ndig)
        return -1;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        int eneg = 0;
        if (i < n && (s[i] == '-' || s[i] == '+'))
            eneg = s[i++] == '-';
        long e = 0;
        int edig = 0;
        while (i < n && isdigit((unsigned char)s[i])) {
            if (e < 100000)
                e = e * 10 + (s[i] - '0');
            i++;
            edig++;
        }
        if (!edig)
            return -1;
        scale += eneg ? -e : e;
    }
    while (i < n && s[i] == ' ')
        i++;
    if (i != n)
        return -1;
    if (m == 0) {
        *out = 0;
        return 0;
    }
    if (scale >= 0) {
        for (long k = 0; k < scale; k++) {
            if (m > (uint64_t)INT64_MAX / 10)
                return -1;
            m *= 10;
        }
    } else if (scale < -19) {
        m = 0;
    } else {
        uint64_t p = 1;
        for (long k = 0; k < -scale; k++)
            p *= 10;
        uint64_t q = m / p, rem = m % p;
        if (rem >= p - rem)
            q++;
        m = q;
    }
    if (m > (uint64_t)INT64_MAX)
        return -1;
    *out = neg ? -(int64_t)m : (int64_t)m;
    return 0;
}

/* The keys an event's times are under, in kin_times' order (TIME_TS, TIME_DUR). */
static const char *const time_keys[2] = {"ts", "dur"};

/* The texts of numbers (or numeric strings) stored under keys[0..nkeys) at
 * the top level of the object in buf, found in one scan so that no precision
 * is lost to a double.  Returns a bitmask of the keys found; vs[k]/vn[k] are
 * set for each. */
static unsigned top_numbers(const char *buf, size_t n, const char *const *keys, int nkeys,
                            const char **vs, size_t *vn)
{
    unsigned found = 0, seen = 0, all = (1u << nkeys) - 1;
    long depth = 0;
    for (size_t i = 0; i < n && seen != all; i++) {
        char c = buf[i];
        if (c == '"') {
            size_t s = ++i;
            const unsigned char *u = (const unsigned char *)buf;
            while (i < n) {   /* to the closing quote, over escaped characters */
                i = (size_t)(tr_json_string_special(u + i, u + n) - u);
                if (i >= n || buf[i] == '"')
                    break;
                i += 2;
            }
            if (i >= n)
                return found;
            if (depth != 1)
                continue;
            size_t e = i, j = i + 1;
            while (j < n && isspace((unsigned char)buf[j]))
                j++;
            if (j >= n || buf[j] != ':')
                continue;
            int k = 0;
            while (k < nkeys && (seen >> k & 1 || strlen(keys[k]) != e - s
                                 || memcmp(buf + s, keys[k], e - s) != 0))
                k++;
            if (k == nkeys)
                continue;
            seen |= 1u << k;   /* the first occurrence decides, as in cJSON */
            j++;
            while (j < n && isspace((unsigned char)buf[j]))
                j++;
            int quoted = j < n && buf[j] == '"';
            if (quoted)
                j++;
            size_t v = j;
            while (j < n && (isdigit((unsigned char)buf[j]) || buf[j] == '.' || buf[j] == '-'
                             || buf[j] == '+' || buf[j] == 'e' || buf[j] == 'E'))
                j++;
            if (j == v)
                continue;
            vs[k] = buf + v;
            vn[k] = j - v;
            found |= 1u << k;
        } else if (c == '{' || c == '[') {
            depth++;
        } else if (c == '}' || c == ']') {
            depth--;
        }
    }
    return found;
}

/* cJSON_GetObjectItemCaseSensitive with the first byte compared inline: an
 * event's keys mostly differ there, and the strcmp calls were a tenth of the
 * read time. */
static const cJSON *jget(const cJSON *o, const char *key)
{
    if (!o)
        return NULL;
    for (const cJSON *c = o->child; c; c = c->next)
        if (c->string && c->string[0] == key[0] && strcmp(c->string, key) == 0)
            return c;
    return NULL;
}

static const char *str_of(const cJSON *j)
{
    return j_string(j) ? j->valuestring : NULL;
}

static const char *jstr(const cJSON *o, const char *key)
{
    return str_of(jget(o, key));
}

/* An integer value (number or numeric string); def when absent. */
static int64_t int_of(const cJSON *j, int64_t def)
{
    if (j_number(j)) {
        double d = j->valuedouble;
        return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : def;
    }
    if (j_string(j) && j->valuestring[0]) {
        char *end;
        long long v = strtoll(j->valuestring, &end, 0);
        if (*end == 0)
            return v;
    }
    return def;
}

static int64_t jint(const cJSON *o, const char *key, int64_t def)
{
    return int_of(jget(o, key), def);
}

/* ---- the keys an event is read by --------------------------------------------
 *
 * cJSON's objects are lists, and an event was read by a dozen lookups, each a
 * walk over its keys or its args' from the start, over nodes the producer
 * thread had just written (cache misses on the reading thread).  The producer
 * finds them all in one pass over each object, while its nodes are hot, keeping the
 * first of a repeated key as a lookup does; the reading thread reads them by
 * index. */
static const char *const kin_ev_keys[K_NKEYS] = {
    [K_PH] = "ph", [K_NAME] = "name", [K_CAT] = "cat", [K_PID] = "pid", [K_TID] = "tid",
    [K_ARGS] = "args", [K_S] = "s", [K_ID] = "id",
};
static const char *const kin_arg_keys[A_NKEYS] = {
    [A_CORRELATION] = "correlation", [A_DEVICE] = "device", [A_STREAM] = "stream",
    [A_CONTEXT] = "context", [A_KIND] = "kind", [A_NAME] = "name", [A_CBID] = "cbid",
    [A_INPUT_DIMS] = "Input Dims", [A_INPUT_DIMS_LOWER] = "Input dims",
    [A_SEQUENCE] = "Sequence number", [A_RECORD_FUNCTION] = "Record function id",
    [A_FLOPS] = "flops", [A_ASYNC] = "Async", [A_SCOPE] = "Scope", [A_FWD_THREAD] = "Fwd thread id",
    [A_CALL_STACK] = "Call stack", [A_GRID] = "grid", [A_BLOCK] = "block",
    [A_REGISTERS] = "registers per thread", [A_SHARED_MEMORY] = "shared memory",
    [A_DYNAMIC_SHARED_MEMORY] = "dynamic shared memory", [A_BYTES] = "bytes",
    [A_BYTES_UPPER] = "Bytes", [A_DEVICE_TYPE] = "Device Type", [A_PYTHON_ID] = "Python id",
    [A_PYTHON_PARENT] = "Python parent id", [A_COLLECTIVE] = "Collective name",
    [A_PG_NAME] = "Process Group Name", [A_PG_DESCRIPTION] = "Process Group Description",
    [A_PG_RANKS] = "Process Group Ranks", [A_DTYPE] = "dtype", [A_SEQ_UPPER] = "Seq",
    [A_SEQ] = "seq", [A_IN_NELEMS] = "In msg nelems", [A_OUT_NELEMS] = "Out msg nelems",
    [A_GROUP_SIZE] = "Group size",
};

/* A hash table of a list of names: slot -> index + 1 (0 empty), built once;
 * a NULL name is left out.  A lookup hashes the name once and compares it
 * inline with the candidates of its length.  (The lookups of every event's
 * keys, a strcmp call each, and a loop of strcmp calls over the categories
 * and over the op names PyTorch leaves out, were 15% of the samples of an
 * ingest of 10^6 Kineto events; with this table 13%, most of it the first
 * read of each key's bytes.) */
#define KIN_KEY_SLOTS 128
typedef struct {
    const char *const *names;
    int n;                            /* < KIN_KEY_SLOTS */
    unsigned char slot[KIN_KEY_SLOTS];
    size_t len[KIN_KEY_SLOTS];        /* of names[i] */
} kin_key_table;

static kin_key_table ev_key_table = {kin_ev_keys, K_NKEYS, {0}, {0}};
static kin_key_table arg_key_table = {kin_arg_keys, A_NKEYS, {0}, {0}};
static pthread_once_t key_tables_once = PTHREAD_ONCE_INIT;

/* Of the length and three bytes, not of every byte: a byte-serial hash of
 * each op name (to find the few PyTorch leaves out) cost more than the
 * lookups it serves.  Names that collide are told apart by the compare. */
static uint32_t key_hash(const char *s, size_t *len)
{
    size_t n = strlen(s);
    *len = n;
    if (!n)
        return 0;
    uint32_t h = (uint32_t)n * 0x9e3779b1u ^ (unsigned char)s[0] * 0x85ebca77u
                 ^ (unsigned char)s[n - 1] * 0xc2b2ae3du ^ (unsigned char)s[n / 2] * 0x27d4eb2fu;
    return (h ^ h >> 15) & (KIN_KEY_SLOTS - 1);
}

static void key_table_build(kin_key_table *t)
{
    for (int i = 0; i < t->n; i++) {
        if (!t->names[i])
            continue;
        uint32_t h = key_hash(t->names[i], &t->len[i]);
        while (t->slot[h])
            h = (h + 1) & (KIN_KEY_SLOTS - 1);
        t->slot[h] = (unsigned char)(i + 1);
    }
}

static int key_index(const kin_key_table *t, const char *s)
{
    size_t n;
    for (uint32_t h = key_hash(s, &n); t->slot[h]; h = (h + 1) & (KIN_KEY_SLOTS - 1)) {
        int i = t->slot[h] - 1;
        if (t->len[i] != n)
            continue;
        const char *name = t->names[i];
        size_t k = 0;
        while (k < n && name[k] == s[k])
            k++;
        if (k == n)
            return i;
    }
    return -1;
}

/* out[k]: the first child of o under key k of t, as jget() finds it. */
static void find_keys(const kin_key_table *t, const cJSON *o, const cJSON **out)
{
    memset(out, 0, (size_t)t->n * sizeof *out);
    for (const cJSON *c = o ? o->child : NULL; c; c = c->next) {
        int k = c->string ? key_index(t, c->string) : -1;
        if (k >= 0 && !out[k])
            out[k] = c;
    }
}

/* ts and dur from the event's text, so that no precision is lost to a
 * double: where the parse found them, else in one scan of the text. */
static void read_item_times(kin_item *it)
{
    const char *tv[2];
    size_t tn[2];
    kin_times *t = &it->times;
    *t = (kin_times){0, 0, 0, 0};
    unsigned have = it->time_found;
    if (it->time_spans) {
        for (int k = 0; k < 2; k++) {
            tv[k] = it->text + it->time_off[k];
            tn[k] = it->time_len[k];
        }
    } else {
        have = top_numbers(it->text, it->len, time_keys, 2, tv, tn);
    }
    for (int k = 0; k < 2; k++) {
        if (!(have >> k & 1))
            continue;
        if (tr_kineto_us_to_ns(tv[k], tn[k], k ? &t->dur : &t->ts) == 0)
            t->found |= 1u << k;
        else
            t->bad |= 1u << k;
    }
}

/* Done by whichever thread would otherwise wait (see KEYS_LEFT). */
static void find_item_keys(kin_item *it)
{
    find_keys(&ev_key_table, it->ev, it->key);
    find_keys(&arg_key_table, it->key[K_ARGS], it->arg);
    read_item_times(it);
}

/* pid/tid: numbers or strings ("4093687616", "stream 7", "Spans"). */
static int64_t id_of(kin_reader *r, const cJSON *j)
{
    if (j_number(j)) {
        double d = j->valuedouble;
        return d >= -9.2e18 && d <= 9.2e18 ? (int64_t)d : 0;
    }
    if (j_string(j)) {
        const char *s = j->valuestring;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end != s && *end == 0)
            return v;
        if (strncmp(s, "stream ", 7) == 0) {
            v = strtoll(s + 7, &end, 10);
            if (end != s + 7)
                return v;
        }
        /* a label: a stable negative id */
        return -(int64_t)tr_str(r->t, s) - 1000000000;
    }
    return 0;
}

static uint32_t thread_of(kin_reader *r, int64_t pid, int64_t tid)
{
    if (r->c_thread && r->c_pid == pid && r->c_tid == tid)
        return r->c_thread;
    uint32_t p = tr_process_get(r->t, r->source, pid);
    uint32_t th = p ? tr_thread_get(r->t, p, tid) : 0;
    r->c_pid = pid;
    r->c_tid = tid;
    r->c_thread = th;
    return th;
}

/* Python repr of a JSON value: [[1, 512], []], 'str', None, True. */
static int repr(kin_buf *b, const cJSON *j, int depth)
{
    char num[40];
    if (depth > 64)
        return buf_add(b, "...", 3);
    if (j_array(j)) {
        if (buf_add(b, "[", 1) < 0)
            return -1;
        int first = 1;
        for (const cJSON *c = j->child; c; c = c->next) {
            if (!first && buf_add(b, ", ", 2) < 0)
                return -1;
            first = 0;
            if (repr(b, c, depth + 1) < 0)
                return -1;
        }
        return buf_add(b, "]", 1);
    }
    if (j_number(j)) {
        double d = j->valuedouble;
        if (d > -9e15 && d < 9e15 && d == (double)(long long)d) {
            /* integers by hand: snprintf was most of the cost of a shape */
            long long v = (long long)d;
            unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
            char *p = num + sizeof num;
            do
                *--p = (char)('0' + u % 10);
            while (u /= 10);
            if (v < 0)
                *--p = '-';
            return buf_add(b, p, (size_t)(num + sizeof num - p));
        } else
            snprintf(num, sizeof num, "%.17g", d);
        return buf_add(b, num, strlen(num));
    }
    if (j_string(j)) {
        return buf_add(b, "'", 1) < 0 || buf_add(b, j->valuestring, strlen(j->valuestring)) < 0
                       || buf_add(b, "'", 1) < 0
                   ? -1
                   : 0;
    }
    if (j_bool(j))
        return j_true(j) ? buf_add(b, "True", 4) : buf_add(b, "False", 5);
    return buf_add(b, "None", 4);
}

/* 0, or -1 out of memory */
static int set_name(kin_reader *r, tr_event *e, const char *name)
{
    e->name = tr_str(r->t, name);
    if (!e->name)
        return -1;
    if (name[0] == '_' && name[1] == 'Z') {
        char *d = tr_demangle(name);
        if (d) {
            uint32_t raw = e->name;
            e->name = tr_str(r->t, d);
            e->flags |= TR_FLAG_DEMANGLED;
            free(d);
            if (!e->name || tr_set_raw_name(r->t, e, raw) < 0)
                return -1;
        }
    }
    return 0;
}

/* "Call stack": frames separated by ';', innermost first. */
static uint32_t call_stack(kin_reader *r, const char *s)
{
    r->frames.n = 0;
    while (*s) {
        const char *e = strchr(s, ';');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len) {
            if (tr_vec_reserve(r->frames, r->frames.n + 1) < 0)
                return 0;
            r->frames.v[r->frames.n++] = tr_intern_add(&r->t->strings, s, len);
        }
        s += len + (e ? 1 : 0);
    }
    for (size_t i = 0; i < r->frames.n / 2; i++) {
        uint32_t x = r->frames.v[i];
        r->frames.v[i] = r->frames.v[r->frames.n - 1 - i];
        r->frames.v[r->frames.n - 1 - i] = x;
    }
    return r->frames.n ? tr_stack_get(r->t, r->frames.v, r->frames.n) : 0;
}

/* Ops PyTorch itself leaves out of its event list (SEMANTICS.md 1.4). */
static const char *const skipped_names[] = {
    "profiler::_record_function_enter", "profiler::_record_function_enter_new",
    "profiler::_record_function_exit", "aten::is_leaf", "aten::output_nr", "aten::_version"};
static kin_key_table skipped_table = {skipped_names, sizeof skipped_names / sizeof skipped_names[0], {0}, {0}};

static int skipped_name(const char *n)
{
    return key_index(&skipped_table, n) >= 0;
}

static uint32_t gpu_stream(kin_reader *r, const kin_item *it)
{
    int64_t device = int_of(it->arg[A_DEVICE], id_of(r, it->key[K_PID]));
    int64_t stream = int_of(it->arg[A_STREAM], id_of(r, it->key[K_TID]));
    int64_t ctx = int_of(it->arg[A_CONTEXT], -1);
    uint32_t d = tr_device_get(r->t, r->source, device);
    return d ? tr_stream_get(r->t, d, ctx, stream) : 0;
}

/* "Memcpy HtoD (Pageable -> Device)" -> HtoD, Pageable, Device */
static void copy_detail(kin_reader *r, const char *name, const cJSON *const *a, tr_copy_detail *d)
{
    memset(d, 0, sizeof *d);
    const char *k = str_of(a[A_KIND]);
    if (strncmp(name, "Memcpy ", 7) == 0) {
        const char *s = name + 7, *e = s;
        while (*e && *e != ' ')
            e++;
        if (e > s)
            d->copy_kind = tr_intern_add(&r->t->strings, s, (size_t)(e - s));
        const char *lp = strchr(e, '('), *ar = strstr(e, " -> ");
        const char *rp = ar ? strchr(ar, ')') : NULL;
        if (lp && ar && rp && lp < ar) {
            d->src_kind = tr_intern_add(&r->t->strings, lp + 1, (size_t)(ar - lp - 1));
            d->dst_kind = tr_intern_add(&r->t->strings, ar + 4, (size_t)(rp - ar - 4));
        }
    }
    if (!d->copy_kind && k)
        d->copy_kind = tr_str(r->t, k);
}

static tr_status add_meta_name(kin_reader *r, const kin_item *it, int thread)
{
    const char *n = str_of(it->arg[A_NAME]);
    if (!n)
        return TR_OK;
    kin_tname tn = {id_of(r, it->key[K_PID]), id_of(r, it->key[K_TID]), tr_str(r->t, n)};
    if (thread) {
        if (tr_vec_reserve(r->tnames, r->tnames.n + 1) < 0)
            return oom(r);
        r->tnames.v[r->tnames.n++] = tn;
    } else {
        if (tr_vec_reserve(r->pnames, r->pnames.n + 1) < 0)
            return oom(r);
        r->pnames.v[r->pnames.n++] = tn;
    }
    return TR_OK;
}

/* ---- the args of each kind ------------------------------------------------ */

/* Each reads what its kind keeps from an event's args into event `idx`
 * (which it may move: adding strings or details can grow the arrays). */
/* a: the event's args by key (kin_item.arg) */
typedef tr_status (*kin_args_fn)(kin_reader *r, size_t idx, const char *name, const cJSON *const *a);

/* An autograd backward function (RecordScope BACKWARD_FUNCTION): named by a
 * "Scope" arg where the writer keeps it.  Kineto writes none, but records a
 * forward thread only for the engine's calls, whose evaluate_function
 * wrappers are not themselves the backward function; and autograd's own
 * nodes (AccumulateGrad, CopySlices, ...) run with no forward thread. */
static int is_backward_function(const char *name, const cJSON *const *a)
{
    const cJSON *scope = a[A_SCOPE];
    if (scope)
        return j_number(scope) && scope->valuedouble == 1;
    if (strncmp(name, "torch::autograd::", 17) == 0)
        return 1;
    return int_of(a[A_FWD_THREAD], 0) > 0
           && strncmp(name, "autograd::engine::evaluate_function:", 36) != 0;
}

static tr_status op_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    tr_event *e = &r->t->events.v[idx];
    tr_event_extra x = tr_extra(r->t, e);
    const cJSON *dims = a[A_INPUT_DIMS];
    if (!dims)
        dims = a[A_INPUT_DIMS_LOWER];
    if (j_array(dims)) {
        r->tmp.n = 0;
        if (repr(&r->tmp, dims, 0) < 0)
            return oom(r);
        if (tr_shape_get(r->t, r->tmp.v, r->tmp.n, &x.shape) < 0)
            return oom(r);
    }
    x.seq = int_of(a[A_SEQUENCE], -1);
    int64_t rf = int_of(a[A_RECORD_FUNCTION], -1);
    x.op_id = rf > 0 ? rf : -1;
    x.flops = int_of(a[A_FLOPS], -1);
    if (tr_extra_set(r->t, e, &x) < 0)
        return oom(r);
    if (int_of(a[A_ASYNC], 0) == 1)
        e->flags |= TR_FLAG_ASYNC;   /* began and ended on different threads */
    if (is_backward_function(name, a)) {
        e->flags |= TR_FLAG_BACKWARD;
        if (tr_vec_reserve(r->t->backward, r->t->backward.n + 1) < 0)
            return oom(r);
        r->t->backward.v[r->t->backward.n++] =
            (tr_backward_link){idx, int_of(a[A_FWD_THREAD], 0)};
    }
    const char *cs = str_of(a[A_CALL_STACK]);
    if (cs) {
        uint32_t st = call_stack(r, cs);
        r->t->events.v[idx].stack = st;
    }
    return TR_OK;
}

static tr_status api_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    (void)name;
    int64_t cbid = int_of(a[A_CBID], -1);
    if (cbid >= 0) {
        tr_api_detail d = {(int32_t)cbid, 0};
        if (!(r->t->events.v[idx].detail = tr_add_api_detail(r->t, &d)))
            return oom(r);
    }
    return TR_OK;
}

static tr_status kernel_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    (void)name;
    tr_kernel_detail d;   /* -1: not in the trace, NULL in run.db */
    const cJSON *g = a[A_GRID];
    const cJSON *b = a[A_BLOCK];
    for (int k = 0; k < 3; k++) {
        const cJSON *gk = cJSON_GetArrayItem(g, k), *bk = cJSON_GetArrayItem(b, k);
        d.grid[k] = j_number(gk) ? (int32_t)gk->valueint : -1;
        d.block[k] = j_number(bk) ? (int32_t)bk->valueint : -1;
    }
    d.registers = (int32_t)int_of(a[A_REGISTERS], -1);
    /* Kineto writes static and dynamic shared memory as one sum, kept as static;
     * our own export adds the dynamic part, which splits it again */
    int64_t total = int_of(a[A_SHARED_MEMORY], -1), dynamic = int_of(a[A_DYNAMIC_SHARED_MEMORY], -1);
    if (dynamic >= 0 && total >= dynamic)
        total -= dynamic;
    d.static_smem = (int32_t)total;
    d.dynamic_smem = (int32_t)dynamic;
    return (r->t->events.v[idx].detail = tr_add_kernel_detail(r->t, &d)) ? TR_OK : oom(r);
}

static tr_status set_bytes(kin_reader *r, tr_event *e, int64_t bytes)
{
    return tr_set_bytes(r->t, e, bytes) < 0 ? oom(r) : TR_OK;
}

static tr_status memcpy_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    tr_copy_detail d;
    copy_detail(r, name, a, &d);
    tr_event *e = &r->t->events.v[idx];
    if (!(e->detail = tr_add_copy_detail(r->t, &d)))
        return oom(r);
    return set_bytes(r, e, int_of(a[A_BYTES], 0));
}

static tr_status memset_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    (void)name;
    return set_bytes(r, &r->t->events.v[idx], int_of(a[A_BYTES], 0));
}

static tr_status memory_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    (void)name;
    tr_event *e = &r->t->events.v[idx];
    tr_status s = set_bytes(r, e, int_of(a[A_BYTES_UPPER], 0));
    if (s != TR_OK)
        return s;
    int64_t dt = int_of(a[A_DEVICE_TYPE], 0);
    if (dt == 1 || dt == 6)   /* c10::DeviceType CUDA, HIP */
        e->flags |= TR_FLAG_GPU_MEMORY;
    return TR_OK;
}

static tr_status python_args(kin_reader *r, size_t idx, const char *name, const cJSON *const *a)
{
    (void)name;
    const cJSON *pid = a[A_PYTHON_ID];
    if (j_number(pid)) {
        if (tr_vec_reserve(r->py, r->py.n + 1) < 0)
            return oom(r);
        r->py.v[r->py.n++] = (kin_py){int_of(pid, -1), int_of(a[A_PYTHON_PARENT], -1), idx};
    }
    return TR_OK;
}

/* ---- categories ------------------------------------------------------------ */

enum { KIN_KEEP, KIN_DROP_OPS, KIN_SKIP, KIN_SKIP_OVERHEAD };

/* The categories of complete events: Kineto's name, the 2020 pre-release's,
 * the kind it becomes, whether it runs on a device stream, and the args it keeps. */
typedef struct {
    const char *cat, *alt;
    tr_kind kind;
    int on_gpu;
    int keep;
    kin_args_fn args;
} kin_category;

static const kin_category kin_categories[] = {
    {"cpu_op", "Operator", TR_KIND_OP, 0, KIN_DROP_OPS, op_args},
    {"user_annotation", NULL, TR_KIND_RANGE, 0, KIN_KEEP, op_args},
    /* the GPU-side span of a user annotation: it would count the GPU time twice */
    {"gpu_user_annotation", NULL, 0, 0, KIN_SKIP, NULL},
    {"cuda_runtime", "Runtime", TR_KIND_RUNTIME, 0, KIN_KEEP, api_args},
    {"cuda_driver", "Driver", TR_KIND_DRIVER, 0, KIN_KEEP, api_args},
    {"cuda_sync", NULL, TR_KIND_SYNC, 1, KIN_KEEP, NULL},
    {"kernel", "Kernel", TR_KIND_KERNEL, 1, KIN_KEEP, kernel_args},
    {"gpu_memcpy", "Memcpy", TR_KIND_MEMCPY, 1, KIN_KEEP, memcpy_args},
    {"gpu_memset", "Memset", TR_KIND_MEMSET, 1, KIN_KEEP, memset_args},
    {"python_function", NULL, TR_KIND_PYTHON, 0, KIN_KEEP, python_args},
    /* kinds Kineto has no category for, as trace-export --chrome writes them */
    {"openacc_data", NULL, TR_KIND_OPENACC_DATA, 0, KIN_KEEP, NULL},
    {"openacc_launch", NULL, TR_KIND_OPENACC_LAUNCH, 0, KIN_KEEP, NULL},
    {"openacc_other", NULL, TR_KIND_OPENACC_OTHER, 0, KIN_KEEP, NULL},
    {"cuda_event", NULL, TR_KIND_CUDA_EVENT, 1, KIN_KEEP, NULL},
    /* the profiler's own span */
    {"Trace", NULL, 0, 0, KIN_SKIP, NULL},
    /* its overhead (CUPTI's buffer flushes; nvprof's and nsys's overhead rows as
     * trace-export writes them): not in PyTorch's tables, left out, and said so */
    {"overhead", NULL, 0, 0, KIN_SKIP_OVERHEAD, NULL},
};

/* Each category's "cat" at 2i, its other name (or NULL) at 2i + 1. */
#define KIN_NCATEGORIES (sizeof kin_categories / sizeof kin_categories[0])
static const char *category_names[2 * KIN_NCATEGORIES];
static kin_key_table category_table = {category_names, 2 * KIN_NCATEGORIES, {0}, {0}};

static void category_table_build(void)
{
    for (size_t i = 0; i < KIN_NCATEGORIES; i++) {
        category_names[2 * i] = kin_categories[i].cat;
        category_names[2 * i + 1] = kin_categories[i].alt;
    }
    key_table_build(&category_table);
}

_Static_assert(K_NKEYS < KIN_KEY_SLOTS && A_NKEYS < KIN_KEY_SLOTS && 2 * KIN_NCATEGORIES < KIN_KEY_SLOTS,
               "each key table keeps an empty slot, where a lookup of a name not in it stops");

static void key_tables_build(void)
{
    key_table_build(&ev_key_table);
    key_table_build(&arg_key_table);
    key_table_build(&skipped_table);
    category_table_build();
}

/* PyTorch's autograd profiler without Kineto writes no "cat": host events
 * under pid "CPU functions", and (before 1.9) kernels under "CUDA functions". */
static const kin_category legacy_host = {NULL, NULL, TR_KIND_OP, 0, KIN_DROP_OPS, NULL};
static const kin_category legacy_device = {NULL, NULL, TR_KIND_KERNEL, 1, KIN_KEEP, NULL};

static const kin_category *category_of(kin_reader *r, const kin_item *it, const char *cat)
{
    if (!cat) {
        const char *pid = str_of(it->key[K_PID]);
        if (!pid)
            return NULL;
        r->legacy++;
        return strcmp(pid, "CUDA functions") == 0 ? &legacy_device : &legacy_host;
    }
    int k = key_index(&category_table, cat);
    return k >= 0 ? &kin_categories[k / 2] : NULL;
}

static const kin_category instant_memory = {NULL, NULL, TR_KIND_MEMORY, 0, KIN_KEEP, memory_args};
static const kin_category instant_mark = {NULL, NULL, TR_KIND_MARK, 0, KIN_KEEP, NULL};

/* The category of event `ev`, or NULL when it is not one we keep. */
static const kin_category *classify(kin_reader *r, const kin_item *it, const char *ph,
                                    const char *cat, const char *name)
{
    /* an async slice's begin ("b") is read as a complete event its end ("e") closes */
    int complete = (ph[0] == 'X' || ph[0] == 'b') && !ph[1];
    int instant = (ph[0] == 'i' || ph[0] == 'I') && !ph[1];
    if (instant) {
        const char *scope = str_of(it->key[K_S]);
        if (scope && (scope[0] == 'g' || scope[0] == 'p'))
            return NULL;   /* global/process markers such as "Iteration Start" */
        return strcmp(name, "[memory]") == 0 ? &instant_memory : &instant_mark;
    }
    if (!complete)
        return NULL;   /* flows (s/t/f), counters, async b/e, ... */
    if (ph[0] == 'b' && !cat)
        return NULL;   /* other tools' async slices, as before */
    const kin_category *c = category_of(r, it, cat);
    if (!c && ph[0] == 'b')
        return NULL;
    if (!c) {
        if (!r->unknown++)
            snprintf(r->unknown_first, sizeof r->unknown_first, "%s", cat ? cat : "(none)");
        return NULL;
    }
    if (c->keep == KIN_SKIP_OVERHEAD)
        r->overhead++;
    if (c->keep == KIN_SKIP || c->keep == KIN_SKIP_OVERHEAD
        || (c->keep == KIN_DROP_OPS && skipped_name(name)))
        return NULL;
    return c;
}

/* ts and dur in ns; 0 = skip the event (counted), or an error status. */
static tr_status event_times(kin_reader *r, const kin_item *it, int complete, int64_t *ts,
                             int64_t *dur, int *ok)
{
    const kin_times *t = &it->times;
    *ts = *dur = 0;
    *ok = 0;
    if (!(t->found & TIME_TS)) {
        r->no_ts++;
        return TR_OK;
    }
    *ts = t->ts;
    if (complete && ((t->bad & TIME_DUR) || ((t->found & TIME_DUR) && t->dur < 0)))
        return bad(r, it->off, "%s", "bad event duration");
    if (complete && (t->found & TIME_DUR))
        *dur = t->dur;
    if (*ts > INT64_MAX - *dur)
        return bad(r, it->off, "%s", "event time out of range");
    *ok = 1;
    return TR_OK;
}

/* ---- collectives ----------------------------------------------------------- */

/* A string or numeric argument as a string id (0 when absent). */
static uint32_t comm_str(kin_reader *r, const cJSON *j)
{
    if (j_string(j))
        return tr_str(r->t, j->valuestring);
    if (j_number(j)) {
        char b[32];
        snprintf(b, sizeof b, "%lld", (long long)int_of(j, 0));
        return tr_str(r->t, b);
    }
    return 0;
}

/* The parameters PyTorch's ParamCommsDebugInfo writes on record_param_comms
 * (and, since 2.1, on the NCCL kernel itself): kept for the collectives table.
 * Older traces (before 2.0) have none; lib/collectives.c then goes by the
 * kernel's name. */
static tr_status comm_args(kin_reader *r, size_t idx, const cJSON *const *a)
{
    if (!a[A_COLLECTIVE] && !a[A_PG_NAME] && !a[A_IN_NELEMS])
        return TR_OK;
    if (tr_vec_reserve(r->t->comms, r->t->comms.n + 1) < 0)
        return oom(r);
    tr_comm_info ci = {idx, comm_str(r, a[A_COLLECTIVE]), comm_str(r, a[A_PG_NAME]),
                       comm_str(r, a[A_PG_DESCRIPTION]), comm_str(r, a[A_PG_RANKS]),
                       comm_str(r, a[A_DTYPE]), -1, -1, -1, -1};
    ci.seq = int_of(a[A_SEQ_UPPER], int_of(a[A_SEQ], -1));
    ci.in_nelems = int_of(a[A_IN_NELEMS], -1);
    ci.out_nelems = int_of(a[A_OUT_NELEMS], -1);
    ci.group_size = int_of(a[A_GROUP_SIZE], -1);
    r->t->comms.v[r->t->comms.n++] = ci;
    return TR_OK;
}

/* An async slice's begin and end pair by their id within one of Kineto's
 * categories (other tools number theirs from 0 in categories of their own);
 * -1 for an event without an id or a category of that list. */
static int64_t async_key(kin_reader *r, const kin_item *it, const kin_category *c)
{
    size_t ncat = sizeof kin_categories / sizeof kin_categories[0];
    for (size_t i = 0; it->key[K_ID] && i < ncat; i++)
        if (c == &kin_categories[i])
            return (int64_t)(((uint64_t)id_of(r, it->key[K_ID]) * ncat + i) & INT64_MAX);
    return -1;
}

/* The end ("e") of an async slice that a "b" began: trace-export --chrome
 * writes so an event that does not nest on its thread (TR_FLAG_UNNESTED) or
 * crosses threads.  An end without its begin is left, as any event we do not
 * read. */
static tr_status end_async(kin_reader *r, const kin_item *it)
{
    const char *cat = str_of(it->key[K_CAT]);
    const kin_category *c = cat ? category_of(r, it, cat) : NULL;
    int64_t key = c ? async_key(r, it, c) : -1, idx, ts, dur;
    int ok;
    if (key < 0 || !tr_i64map_get(&r->async_open, key, &idx))
        return TR_OK;
    tr_status s = event_times(r, it, 0, &ts, &dur, &ok);
    if (s != TR_OK || !ok)
        return s;
    tr_event *e = &r->t->events.v[idx];
    if (ts > e->start)
        e->end = ts;
    tr_i64map_del(&r->async_open, key);
    return TR_OK;
}

static tr_status handle_event(kin_reader *r, const kin_item *it)
{
    r->nevents_seen++;
    const char *ph = str_of(it->key[K_PH]);
    const char *name = str_of(it->key[K_NAME]);
    if (!ph)
        return TR_OK;   /* e.g. the empty {} some writers end the array with */
    if (!name)
        name = "";
    if (ph[0] == 'M' && !ph[1]) {
        if (strcmp(name, "process_name") == 0)
            return add_meta_name(r, it, 0);
        if (strcmp(name, "thread_name") == 0)
            return add_meta_name(r, it, 1);
        return TR_OK;
    }
    if (ph[0] == 'e' && !ph[1])
        return end_async(r, it);
    const kin_category *c = classify(r, it, ph, str_of(it->key[K_CAT]), name);
    if (!c)
        return TR_OK;
    int64_t ts, dur;
    int ok;
    tr_status s = event_times(r, it, ph[0] == 'X', &ts, &dur, &ok);
    if (s != TR_OK || !ok)
        return s;

    tr_event *e = tr_add_event(r->t, c->kind);
    if (!e)
        return oom(r);
    size_t idx = r->t->events.n - 1;
    e->start = ts;
    e->end = ts + dur;
    if (set_name(r, e, name) < 0)
        return oom(r);
    if (c->on_gpu) {
        uint32_t stream = gpu_stream(r, it);
        r->t->events.v[idx].stream = stream;
    } else {
        uint32_t thread = thread_of(r, id_of(r, it->key[K_PID]), id_of(r, it->key[K_TID]));
        r->t->events.v[idx].thread = thread;
    }
    if (tr_set_correlation(r->t, &r->t->events.v[idx], int_of(it->arg[A_CORRELATION], -1)) < 0)
        return oom(r);
    int64_t akey = ph[0] == 'b' ? async_key(r, it, c) : -1;
    if (akey >= 0 && tr_i64map_put(&r->async_open, akey, (int64_t)idx) < 0)
        return oom(r);
    tr_status as = c->args ? c->args(r, idx, name, it->arg) : TR_OK;
    return as == TR_OK && it->key[K_ARGS] ? comm_args(r, idx, it->arg) : as;
}

/* ---- the document -------------------------------------------------------- */

/* ---- the traceEvents array: cut and parsed on a second thread -----------------
 *
 * Reading the file, cutting each event out of the document and parsing it are
 * one half of reading a Kineto trace; handle_event() (the model, in document
 * order) is the other.  So a producer thread reads ahead: it cuts batches of
 * events, copying their texts, and parses each batch into the batch's own
 * arena (after keeping the \u0000 escapes in their texts); the reading thread
 * handles the batches in order, while the producer fills the next.  The queue
 * holds KIN_NBATCH batches of at most KIN_BATCH_EVENTS events and about
 * KIN_BATCH_BYTES of text each: a few MB whatever the file.
 *
 * The producer reads through its own copy of the reader (kin_pipe.cutter):
 * of it, the cutting uses only the input, the count of escapes, the path and
 * the error, which is the pipe's cut_err.  The reader's own input is not
 * touched meanwhile, and takes the copy's state back once the producer has
 * stopped, to read the rest of the document.
 *
 * Errors surface in document order, as when one thread did it all: a cutting
 * error (truncated input, bad separator) ends its batch and is reported after
 * the batch's events are handled; a parse error stops its batch at the event
 * that failed.  Without a second thread (pthread_create failed), the reading
 * thread cuts and parses each batch itself. */
#define KIN_NBATCH 4
/* A batch's keys (find_item_keys()) are found by the reading thread as it
 * handles its events, unless the producer, finding every slot full, took
 * them first: so whichever thread would otherwise wait does that work. */
enum { KEYS_LEFT, KEYS_TAKEN, KEYS_FOUND };
#define KIN_BATCH_EVENTS 512
#define KIN_BATCH_BYTES ((size_t)1024 * 1024)

typedef struct {
    kin_item items[KIN_BATCH_EVENTS];
    size_t text_at[KIN_BATCH_EVENTS];   /* each item's offset in `text` */
    size_t n;            /* events cut */
    size_t parsed;       /* events parsed: n, or the index of the one that failed */
    kin_buf text;
    kin_arena arena;     /* the parsed values */
    int last;            /* the array ended, or cutting failed, after these events */
    int keys;            /* KEYS_*: who finds its events' keys (p->lock) */
    tr_status cut_status;
} kin_batch;

typedef struct {
    kin_reader cutter;   /* the producer's copy of the reader: see above */
    kin_batch batch[KIN_NBATCH];
    tr_error cut_err, parse_err;   /* the first of each */
    int opened;          /* the array's '[' has been consumed */
    int parse_failed;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    size_t ready, handled;   /* batch k is batch[k % KIN_NBATCH] */
    int ended;           /* the last batch is ready: the array ended or an error stopped it */
    int stop;            /* the producer is no longer needed */
} kin_pipe;

/* The object at the read position, parsed where it lies when the whole of it
 * is in the buffer and json_subset.h takes it: it->ev set, and appended to
 * out what the reading thread reads of its text: the digits of its ts and
 * dur, with where they are (kin_item.time_spans), or, where one of them is
 * not a number, the whole text.  Otherwise nothing is consumed and it->ev
 * stays NULL.  Parsing it here spares a second pass over its bytes: cutting
 * and parsing are the same work, and so is finding the times. */
static tr_status parse_in_place(kin_reader *r, kin_buf *out, kin_item *it)
{
    kin_in *in = &r->in;
    size_t used;
    tr_json_member_numbers times = {.keys = time_keys, .nkeys = 2};
    cJSON *j = tr_json_subset_parse_prefix_members((const char *)in->buf + in->pos,
                                                   in->len - in->pos, &cur_arena->free,
                                                   arena_alloc, &used, &times);
    if (!j)
        return TR_OK;
    /* a first ts or dur that is not a number (a numeric string) is the scan's to read */
    it->time_spans = !times.other;
    it->time_found = times.number;
    if (!it->time_spans && buf_add(out, in->buf + in->pos, used) < 0)
        return oom(r);
    size_t base = out->n;
    for (int k = 0; k < 2 && it->time_spans; k++) {
        it->time_off[k] = out->n - base;
        it->time_len[k] = times.number >> k & 1 ? times.len[k] : 0;
        if (buf_add(out, in->buf + in->pos + times.off[k], it->time_len[k]) < 0)
            return oom(r);
    }
    in->pos += used;
    it->ev = j;
    return TR_OK;
}

/* The item for the element at off, its fields set as cutting begins.  Its
 * key and arg arrays, a few hundred bytes, are left as they are: find_keys()
 * fills them before any read (zeroing every item on the parsing thread was
 * 1% of its instructions, and its stores). */
static kin_item *item_start(kin_item *it, uint64_t off)
{
    it->ev = NULL;
    it->off = off;
    it->text = NULL;
    it->len = 0;
    it->escaped = 0;
    it->time_spans = 0;
    it->time_found = 0;
    return it;
}

/* Cuts the next element into b (parsed already when parse_in_place() takes
 * it); *end = 1 after the closing ']'. */
static tr_status cut_element(kin_reader *r, kin_batch *b, int *end)
{
    int c = skip_ws(r);
    if (c < 0)
        return eof_error(r, "the traceEvents array");
    uint64_t start = in_offset(&r->in);
    if (c != '{')
        return bad(r, start, "%s", "trace event is not a JSON object");
    size_t at = b->text.n, escapes = r->escapes;
    kin_item *it = item_start(&b->items[b->n], start);
    tr_status s = parse_in_place(r, &b->text, it);
    if (s == TR_OK && !it->ev)
        s = scan_value_into(r, &b->text);
    if (s != TR_OK)
        return s;
    it->len = b->text.n - at;
    it->escaped = r->escapes != escapes;
    if (buf_add(&b->text, "", 1) < 0)
        return oom(r);
    b->text_at[b->n++] = at;
    c = skip_ws(r);
    if (c == ',') {
        r->in.pos++;
        return TR_OK;
    }
    if (c == ']') {
        r->in.pos++;
        *end = 1;
        return TR_OK;
    }
    if (c < 0)
        return eof_error(r, "the traceEvents array");
    return bad(r, in_offset(&r->in), "%s", "invalid JSON: expected ',' or ']' after an event");
}

/* Cuts the next batch through r, the pipe's cutter, whose error is p->cut_err. */
static void cut_batch(kin_reader *r, kin_pipe *p, kin_batch *b)
{
    b->n = b->parsed = b->text.n = 0;
    b->cut_status = TR_OK;
    int end = 0;
    if (!p->opened) {
        p->opened = 1;
        r->in.pos++;   /* '[' */
        if (skip_ws(r) == ']') {
            r->in.pos++;
            end = 1;
        }
    }
    while (!end && b->n < KIN_BATCH_EVENTS && b->text.n < KIN_BATCH_BYTES) {
        b->cut_status = cut_element(r, b, &end);
        if (b->cut_status != TR_OK)
            end = 1;
    }
    b->last = end;
    for (size_t i = 0; i < b->n; i++)
        b->items[i].text = b->text.v + b->text_at[i];
}

/* The event's text with its \u0000 escapes kept (keep_nul_escapes()), in the
 * batch's arena; 0 ok, -1 out of memory.  Only an event whose cutting met a
 * backslash in a string is searched. */
static int keep_item_nul_escapes(kin_item *it)
{
    if (!it->escaped || !has_nul_escape(it->text, it->len))
        return 0;
    size_t n = escape_nuls(it->text, it->len, NULL);
    char *v = arena_alloc(n + 1);
    if (!v)
        return -1;
    escape_nuls(it->text, it->len, v);
    v[n] = '\0';
    it->text = v;
    it->len = n;
    return 0;
}

/* Parses the events cutting left unparsed. */
static void parse_batch(kin_pipe *p, kin_batch *b)
{
    tr_error err;
    b->keys = KEYS_LEFT;
    for (b->parsed = 0; b->parsed < b->n; b->parsed++) {
        kin_item *it = &b->items[b->parsed];
        if (it->ev)
            continue;
        if (keep_item_nul_escapes(it) < 0)
            tr_fail(&err, TR_ERR_RUNTIME, "out of memory while reading " WHAT " %s", p->cutter.path);
        else if ((it->ev = parse_text(p->cutter.path, it->text, it->len, it->off, &err)) != NULL)
            continue;
        if (!p->parse_failed)   /* batches are parsed in order: the first is the earliest */
            p->parse_err = err;
        p->parse_failed = 1;
        break;
    }
}

/* Cuts and parses the next batch into its slot, its values into its arena. */
static kin_batch *produce_batch(kin_pipe *p)
{
    kin_batch *b = &p->batch[p->ready % KIN_NBATCH];
    kin_arena *saved = cur_arena;
    cur_arena = &b->arena;
    arena_reset(&b->arena);
    cut_batch(&p->cutter, p, b);
    parse_batch(p, b);
    cur_arena = saved;
    return b;
}

/* With every slot full, the keys of the newest batch the reading thread has
 * not come to yet, if any is left to it: 1 when some were found.  Called and
 * returns with p->lock held. */
static int find_keys_ahead(kin_pipe *p)
{
    for (size_t k = p->ready; k-- > p->handled + 1;) {
        kin_batch *b = &p->batch[k % KIN_NBATCH];
        if (b->keys != KEYS_LEFT)
            continue;
        b->keys = KEYS_TAKEN;
        pthread_mutex_unlock(&p->lock);
        for (size_t i = 0; i < b->parsed; i++)
            find_item_keys(&b->items[i]);
        pthread_mutex_lock(&p->lock);
        b->keys = KEYS_FOUND;
        pthread_cond_broadcast(&p->changed);
        return 1;
    }
    return 0;
}

static void *producer_thread(void *arg)
{
    kin_pipe *p = arg;
    pthread_mutex_lock(&p->lock);
    for (;;) {
        while (!p->stop && !p->ended && p->ready - p->handled >= KIN_NBATCH)
            if (!find_keys_ahead(p))
                pthread_cond_wait(&p->changed, &p->lock);
        if (p->stop || p->ended)
            break;
        pthread_mutex_unlock(&p->lock);   /* batch `ready` was handled: its slot is free */
        kin_batch *b = produce_batch(p);
        pthread_mutex_lock(&p->lock);
        p->ready++;
        p->ended = b->last || b->parsed < b->n;
        pthread_cond_broadcast(&p->changed);
    }
    pthread_mutex_unlock(&p->lock);
    return NULL;
}

/* The next batch in order, once ready (here, without a producer thread). */
static kin_batch *next_ready(kin_pipe *p, int threaded)
{
    if (!threaded) {
        kin_batch *b = produce_batch(p);
        p->ready++;
        return b;
    }
    pthread_mutex_lock(&p->lock);
    kin_batch *b;
    while (p->ready == p->handled || (b = &p->batch[p->handled % KIN_NBATCH])->keys == KEYS_TAKEN)
        pthread_cond_wait(&p->changed, &p->lock);
    if (b->keys == KEYS_LEFT)
        b->keys = KEYS_TAKEN;   /* by this thread, as it handles the events */
    pthread_mutex_unlock(&p->lock);
    return b;
}

static tr_status handle_batches(kin_reader *r, kin_pipe *p, int threaded)
{
    for (;;) {
        kin_batch *b = next_ready(p, threaded);
        for (size_t i = 0; i < b->parsed; i++) {
            if (b->keys != KEYS_FOUND)
                find_item_keys(&b->items[i]);
            tr_status s = handle_event(r, &b->items[i]);
            if (s != TR_OK)
                return s;
        }
        if (b->parsed < b->n)
            return tr_error_copy(r->err, &p->parse_err);
        if (b->cut_status != TR_OK)
            return tr_error_copy(r->err, &p->cut_err);
        if (b->last)
            return TR_OK;
        pthread_mutex_lock(&p->lock);
        p->handled++;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
    }
}

static tr_status read_events(kin_reader *r)
{
    kin_pipe *p = calloc(1, sizeof *p);
    if (!p)
        return oom(r);
    p->cutter = *r;
    p->cutter.err = &p->cut_err;
    pthread_once(&key_tables_once, key_tables_build);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->changed, NULL);
    pthread_t th;
    int threaded = pthread_create(&th, NULL, producer_thread, p) == 0;
    tr_status s = handle_batches(r, p, threaded);
    if (threaded) {
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        pthread_cond_broadcast(&p->changed);
        pthread_mutex_unlock(&p->lock);
        pthread_join(th, NULL);
    }
    r->in = p->cutter.in;
    r->escapes = p->cutter.escapes;
    for (int i = 0; i < KIN_NBATCH; i++) {
        free(p->batch[i].text.v);
        arena_free(&p->batch[i].arena);
    }
    pthread_cond_destroy(&p->changed);
    pthread_mutex_destroy(&p->lock);
    free(p);
    return s;
}

static tr_status top_value(kin_reader *r, const char *key, cJSON *v)
{
    if (strcmp(key, "baseTimeNanoseconds") == 0) {
        int64_t ns;
        const char *p = r->el.v;
        size_t n = r->el.n;
        if (n >= 2 && p[0] == '"') {
            p++;
            n -= 2;
        }
        /* integer nanoseconds: parsed from the text, not through a double */
        char *end;
        long long b = strtoll(p, &end, 10);
        if (end != p && (size_t)(end - p) == n) {
            ns = b;
            r->base_ns = ns;
            r->have_base = 1;
        }
    } else if (strcmp(key, "distributedInfo") == 0 && j_object(v)) {
        int64_t rank = jint(v, "rank", -1), world = jint(v, "world_size", 0);
        if (rank < -1 || world < 0) {
            /* no rank rather than one the tools would refuse or misplace */
            tr_ingest_warn(r->o, "%s: distributedInfo gives rank %lld of world size %lld: ignored", r->path,
                           (long long)rank, (long long)world);
            rank = -1, world = 0;
        }
        r->t->sources.v[r->source].rank = rank;
        r->t->sources.v[r->source].world_size = world;
    } else if (strcmp(key, "schemaVersion") == 0 && j_number(v)) {
        char buf[32];
        snprintf(buf, sizeof buf, "schema %d", v->valueint);
        r->t->sources.v[r->source].format_version = tr_str(r->t, buf);
    } else if (strcmp(key, "deviceProperties") == 0 && j_array(v)) {
        for (const cJSON *d = v->child; d; d = d->next) {
            const cJSON *id = jget(d, "id");
            if (!j_number(id))
                continue;
            uint32_t di = tr_device_get(r->t, r->source, (int64_t)id->valuedouble);
            if (!di)
                return oom(r);
            tr_device *dev = &r->t->devices.v[di];
            const char *n = jstr(d, "name");
            if (n)
                dev->name = tr_str(r->t, n);
            dev->cc_major = (int32_t)jint(d, "computeMajor", -1);
            dev->cc_minor = (int32_t)jint(d, "computeMinor", -1);
            dev->memory_bytes = jint(d, "totalGlobalMem", -1);
            dev->sm_count = (int32_t)jint(d, "numSms", -1);
        }
    }
    return TR_OK;
}

static tr_status read_document(kin_reader *r)
{
    int c = skip_ws(r);
    if (c == 0xEF) {   /* UTF-8 byte order mark */
        r->in.pos++;
        if (in_peek(r) == 0xBB) {
            r->in.pos++;
            if (in_peek(r) == 0xBF)
                r->in.pos++;
        }
        c = skip_ws(r);
    }
    if (c == -2)
        return TR_ERR_INPUT;
    if (c == -1)
        return bad(r, 0, "%s", "empty document");
    tr_status s;
    if (c == '[') {
        r->t->sources.v[r->source].format_version = tr_str(r->t, "array");
        if ((s = read_events(r)) != TR_OK)
            return s;
    } else if (c == '{') {
        int seen = 0;
        r->in.pos++;
        c = skip_ws(r);
        if (c == '}')
            r->in.pos++;
        else
            for (;;) {
                c = skip_ws(r);
                uint64_t koff = in_offset(&r->in);
                if (c < 0)
                    return eof_error(r, "the top-level object");
                if (c != '"')
                    return bad(r, koff, "%s", "invalid JSON: expected a key");
                if ((s = scan_value(r)) != TR_OK)
                    return s;
                char key[32];
                size_t kl = r->el.n >= 2 ? r->el.n - 2 : 0;
                snprintf(key, sizeof key, "%.*s", (int)(kl < sizeof key - 1 ? kl : sizeof key - 1),
                         r->el.v + 1);
                if (kl >= sizeof key)
                    key[0] = 0;
                c = skip_ws(r);
                if (c != ':')
                    return c < 0 ? eof_error(r, "the top-level object")
                                 : bad(r, in_offset(&r->in), "%s", "invalid JSON: expected ':'");
                r->in.pos++;
                c = skip_ws(r);
                uint64_t voff = in_offset(&r->in);
                if (strcmp(key, "traceEvents") == 0 && c == '[') {
                    if ((s = read_events(r)) != TR_OK)
                        return s;
                    seen = 1;
                } else {
                    if (c < 0)
                        return eof_error(r, "the top-level object");
                    if ((s = scan_value(r)) != TR_OK)
                        return s;
                    cJSON *v = parse_el(r, voff);
                    if (!v)
                        return TR_ERR_INPUT;
                    s = top_value(r, key, v);
                    arena_reset(&r->arena);
                    if (s != TR_OK)
                        return s;
                }
                c = skip_ws(r);
                if (c == ',') {
                    r->in.pos++;
                    continue;
                }
                if (c == '}') {
                    r->in.pos++;
                    break;
                }
                if (c < 0)
                    return eof_error(r, "the top-level object");
                return bad(r, in_offset(&r->in), "%s", "invalid JSON: expected ',' or '}'");
            }
        if (!seen)
            return bad(r, 0, "%s", "not a Kineto/Chrome trace: no traceEvents array");
    } else {
        return bad(r, in_offset(&r->in), "%s",
                   "not a Kineto/Chrome trace: expected a JSON object or array");
    }
    c = skip_ws(r);
    if (c == -2)
        return TR_ERR_INPUT;
    if (c != -1)
        return bad(r, in_offset(&r->in), "%s", "invalid JSON: data after the document");
    return TR_OK;
}

/* ---- after the document --------------------------------------------------- */

static int py_cmp(const void *a, const void *b)
{
    int64_t x = ((const kin_py *)a)->pyid, y = ((const kin_py *)b)->pyid;
    return x < y ? -1 : x > y;
}

/* Stack nodes for python_function events from Python id / parent id, in any order. */
static tr_status python_stacks(kin_reader *r)
{
    if (!r->py.n)
        return TR_OK;
    tr_spill_sort(r->py.v, r->py.n, sizeof *r->py.v, py_cmp);
    tr_i64map idx;   /* python id -> index into r->py */
    tr_i64map_init(&idx);
    uint32_t *node = tr_spill_calloc(r->py.n, sizeof *node);
    size_t *chain = tr_spill_calloc(r->py.n, sizeof *chain);
    tr_status s = TR_OK;
    if (!node || !chain)
        goto nomem;
    for (size_t i = 0; i < r->py.n; i++) {
        tr_spill_tick();
        if (tr_i64map_put(&idx, r->py.v[i].pyid, (int64_t)i) < 0)
            goto nomem;
    }
    size_t missing = 0;
    for (size_t i = 0; i < r->py.n; i++) {
        tr_spill_tick();
        if (node[i])
            continue;
        /* walk up to a resolved ancestor or the root */
        size_t n = 0, k = i;
        uint32_t base = 0;
        for (;;) {
            chain[n++] = k;
            int64_t p;
            if (r->py.v[k].parent < 0 || !tr_i64map_get(&idx, r->py.v[k].parent, &p)) {
                if (r->py.v[k].parent >= 0)
                    missing++;
                break;
            }
            if (node[p]) {
                base = node[p];
                break;
            }
            if (n >= r->py.n)   /* a cycle */
                break;
            k = (size_t)p;
        }
        while (n) {
            k = chain[--n];
            /* one frame below base: linear in the nesting depth, not quadratic */
            base = tr_stack_child(r->t, base, r->t->events.v[r->py.v[k].event].name);
            if (!base)
                goto nomem;
            node[k] = base;
            r->t->events.v[r->py.v[k].event].stack = base;
        }
    }
    if (missing)
        tr_ingest_warn(r->o, "%s: %zu python_function event(s) name a parent that is not in the "
                       "trace; treated as outermost frames", r->path, missing);
    goto out;
nomem:
    s = oom(r);
out:
    tr_i64map_free(&idx);
    tr_spill_free(node);
    tr_spill_free(chain);
    return s;
}

typedef struct { uint32_t thread; int64_t start, end; uint8_t py; size_t i; } kin_span;

static int span_cmp(const void *a, const void *b)
{
    const kin_span *x = a, *y = b;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    if (x->py != y->py)
        return x->py ? -1 : 1;
    if (x->end != y->end)
        return x->end > y->end ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* CPU events without their own stack get the stack of the innermost
 * python_function enclosing them on their thread. */
static tr_status inherit_stacks(kin_reader *r)
{
    if (!r->py.n)
        return TR_OK;
    tr_trace *t = r->t;
    size_t n = 0;
    for (size_t i = r->first_event; i < t->events.n; i++) {
        tr_spill_tick();
        if (t->events.v[i].thread && (t->events.v[i].kind == TR_KIND_PYTHON || !t->events.v[i].stack))
            n++;
    }
    kin_span *sp = tr_spill_calloc(n ? n : 1, sizeof *sp);
    size_t *open = tr_spill_calloc(n ? n : 1, sizeof *open);
    if (!sp || !open) {
        tr_spill_free(sp);
        tr_spill_free(open);
        return oom(r);
    }
    n = 0;
    for (size_t i = r->first_event; i < t->events.n; i++) {
        tr_spill_tick();
        const tr_event *e = &t->events.v[i];
        if (e->thread && (e->kind == TR_KIND_PYTHON || !e->stack))
            sp[n++] = (kin_span){e->thread, e->start, e->end, e->kind == TR_KIND_PYTHON, i};
    }
    tr_spill_sort(sp, n, sizeof *sp, span_cmp);
    size_t depth = 0;
    uint32_t thread = 0;
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        if (sp[k].thread != thread) {
            depth = 0;
            thread = sp[k].thread;
        }
        while (depth && t->events.v[open[depth - 1]].end <= sp[k].start)
            depth--;
        tr_event *e = &t->events.v[sp[k].i];
        if (sp[k].py) {
            if (e->end > e->start)
                open[depth++] = sp[k].i;
        } else if (depth) {
            e->stack = t->events.v[open[depth - 1]].stack;
        }
    }
    tr_spill_free(sp);
    tr_spill_free(open);
    return TR_OK;
}

static void apply_names(kin_reader *r)
{
    tr_trace *t = r->t;
    for (size_t i = 0; i < r->pnames.n; i++)
        for (size_t p = 1; p < t->processes.n; p++)
            if (t->processes.v[p].source == r->source && t->processes.v[p].pid == r->pnames.v[i].pid)
                t->processes.v[p].name = r->pnames.v[i].name;
    for (size_t i = 0; i < r->tnames.n; i++)
        for (size_t th = 1; th < t->threads.n; th++) {
            const tr_thread *x = &t->threads.v[th];
            const tr_process *p = &t->processes.v[x->process];
            if (p->source == r->source && p->pid == r->tnames.v[i].pid && x->tid == r->tnames.v[i].tid)
                t->threads.v[th].name = r->tnames.v[i].name;
        }
}

static tr_status finish(kin_reader *r)
{
    tr_trace *t = r->t;
    if (r->have_base && r->base_ns) {
        for (size_t i = r->first_event; i < t->events.n; i++) {
            tr_spill_tick();
            tr_event *e = &t->events.v[i];
            if ((r->base_ns > 0 && e->end > INT64_MAX - r->base_ns)
                || (r->base_ns < 0 && e->start < INT64_MIN - r->base_ns))
                return bad(r, 0, "%s", "baseTimeNanoseconds puts events out of range");
            e->start += r->base_ns;
            e->end += r->base_ns;
        }
        /* kept so that the file's own float microseconds can be recomputed (gpu-time) */
        t->sources.v[r->source].time_base_ns = r->base_ns;
    }
    tr_status s = python_stacks(r);
    if (s == TR_OK)
        s = inherit_stacks(r);
    if (s != TR_OK)
        return s;
    apply_names(r);
    t->sources.v[r->source].events = (int64_t)(t->events.n - r->first_event);
    if (t->events.n == r->first_event && r->unknown) {
        char msg[160];
        snprintf(msg, sizeof msg, "%zu events, none of a known category (first: '%s')",
                 r->unknown, r->unknown_first);
        return bad(r, 0, "%s", msg);
    }
    if (r->unknown)
        tr_ingest_warn(r->o, "%s: %zu event(s) of unknown category skipped (first: '%s')", r->path,
                       r->unknown, r->unknown_first);
    if (r->no_ts)
        tr_ingest_warn(r->o, "%s: %zu event(s) without a usable ts skipped", r->path, r->no_ts);
    if (r->overhead)
        tr_ingest_warn(r->o, "%s: %zu profiler overhead slice(s) (cat overhead) left out, as PyTorch's "
                       "tables leave them out", r->path, r->overhead);
    return TR_OK;
}

static tr_status read_common(kin_reader *r)
{
    r->first_event = r->t->events.n;
    r->source = tr_add_source(r->t, r->path, "kineto", "");
    if (!r->source)
        return oom(r);
    arena_begin(&r->arena);
    tr_status s = read_document(r);
    arena_end(&r->arena);
    if (s == TR_OK)
        s = finish(r);
    return s;
}

static void reader_free(kin_reader *r)
{
    tr_i64map_free(&r->async_open);
    free(r->el.v);
    free(r->tmp.v);
    tr_spill_free(r->pnames.v);
    tr_spill_free(r->tnames.v);
    tr_spill_free(r->py.v);
    tr_spill_free(r->frames.v);
}

tr_status tr_kineto_read_mem(tr_trace *t, const char *name, const void *data, size_t len,
                             const tr_ingest_opts *o, tr_error *err)
{
    kin_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.path = name;
    r.o = o;
    r.err = err;
    r.in.buf = data;
    r.in.len = len;
    r.in.eof = 1;
    tr_status s = read_common(&r);
    reader_free(&r);
    return s;
}

tr_status tr_kineto_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err)
{
    kin_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.path = path;
    r.o = o;
    r.err = err;
    r.in.gz = gzopen(path, "rb");
    if (!r.in.gz)
        return tr_fail(err, TR_ERR_INPUT, "Cannot read " WHAT ": path=\"%s\": cannot open", path);
    gzbuffer(r.in.gz, 128 * 1024);
    r.in.own = malloc(KIN_BUFSZ);
    tr_status s;
    if (!r.in.own) {
        s = oom(&r);
    } else {
        r.in.buf = r.in.own;
        s = read_common(&r);
    }
    gzclose(r.in.gz);
    free(r.in.own);
    reader_free(&r);
    return s;
}

/* gzip magic, or JSON text that starts like a trace. */
int tr_kineto_probe(const char *path, const unsigned char *head, size_t headlen)
{
    unsigned char text[4096];
    size_t n = 0;
    if (headlen >= 2 && head[0] == 0x1f && head[1] == 0x8b) {
        z_stream z;
        memset(&z, 0, sizeof z);
        if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
            return 0;
        z.next_in = (unsigned char *)head;
        z.avail_in = (uInt)headlen;
        z.next_out = text;
        z.avail_out = sizeof text - 1;
        int rc = inflate(&z, Z_SYNC_FLUSH);
        n = sizeof text - 1 - z.avail_out;
        inflateEnd(&z);
        if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR)
            return 0;
    } else {
        n = headlen < sizeof text - 1 ? headlen : sizeof text - 1;
        memcpy(text, head, n);
    }
    text[n] = 0;
    size_t i = 0;
    if (n >= 3 && text[0] == 0xEF && text[1] == 0xBB && text[2] == 0xBF)
        i = 3;
    while (i < n && isspace(text[i]))
        i++;
    if (i >= n || (text[i] != '{' && text[i] != '['))
        return 0;
    if (headlen >= 2 && head[0] == 0x1f && head[1] == 0x8b)
        return 1;   /* gzip-compressed JSON: only this reader reads it */
    const char *s = (const char *)text + i;
    if (strstr(s, "\"traceEvents\"") || strstr(s, "\"ph\"") || strstr(s, "\"schemaVersion\""))
        return 1;
    size_t pl = strlen(path);
    return pl >= 5 && strcmp(path + pl - 5, ".json") == 0;
}
