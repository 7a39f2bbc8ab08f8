/*
 * cupti_tables.c - the loops over CUPTI activity tables that the nvprof and
 * nsys readers share; each reads one family of tables for any format, from
 * the format's ct_table row (cupti_tables.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ingest/readers/cupti_tables.h"
#include "lib/checked.h"
#include "lib/spill.h"

tr_status ct_oom(const ct_reader *r, tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while reading an %s", r->fmt->what);
}

int ct_time_ok(int64_t v)
{
    return v >= -TR_NS_SPAN_MAX && v <= TR_NS_SPAN_MAX;
}

int ct_interval_of(ct_bad *b, int stype, int64_t s, int etype, int64_t e, int64_t *start, int64_t *end)
{
    if (stype != SQLITE_INTEGER || etype != SQLITE_INTEGER) {
        b->no_time++;
        return 0;
    }
    *start = s;
    *end = e;
    if (!ct_time_ok(*start) || !ct_time_ok(*end) || !tr_span_ok(*start, *end)) {
        b->bad_span++;
        return 0;
    }
    return 1;
}

int ct_interval(ct_bad *b, sqlite3_stmt *st, int cs, int ce, int64_t *start, int64_t *end)
{
    return ct_interval_of(b, sqlite3_column_type(st, cs), sqlite3_column_int64(st, cs),
                       sqlite3_column_type(st, ce), sqlite3_column_int64(st, ce), start, end);
}

void ct_report_bad(const ct_reader *r, const ct_bad *b)
{
    if (b->no_time)
        tr_ingest_warn(r->o, "%s: table=%s: %zu row(s) without a start or end time skipped",
                       r->in.path, b->table, b->no_time);
    if (b->bad_span)
        tr_ingest_warn(r->o, "%s: table=%s: %zu row(s) ending before they start (or with "
                       "impossible times) skipped", r->in.path, b->table, b->bad_span);
}

void ct_note_ts(ct_reader *r, int64_t ts)
{
    if (ts > r->max_ts)
        r->max_ts = ts;
}

uint32_t ct_thread(ct_reader *r, int64_t pid, int64_t tid)
{
    /* CUPTI's ids are unsigned 32-bit; nvprof stores some as negative SQLite integers */
    pid = (uint32_t)pid;
    tid = (uint32_t)tid;
    if (r->last_thread.thread && r->last_thread.pid == pid && r->last_thread.tid == tid)
        return r->last_thread.thread;
    uint32_t p = tr_process_get(r->t, r->source, pid);
    uint32_t th = p ? tr_thread_get(r->t, p, tid) : 0;
    r->last_thread.pid = pid;
    r->last_thread.tid = tid;
    r->last_thread.thread = th;
    return th;
}

uint32_t ct_stream(ct_reader *r, int64_t device, int64_t context, int64_t stream)
{
    if (r->last_stream.id && r->last_stream.device == device && r->last_stream.context == context
        && r->last_stream.stream == stream)
        return r->last_stream.id;
    uint32_t d = tr_device_get(r->t, r->source, device);
    uint32_t id = d ? tr_stream_get(r->t, d, context, stream) : 0;
    r->last_stream.device = device;
    r->last_stream.context = context;
    r->last_stream.stream = stream;
    r->last_stream.id = id;
    return id;
}

/* The index of the file's string id in r->str, or -1. */
static ssize_t str_index(const ct_reader *r, int64_t id)
{
    if (r->str_dense) {   /* ids str[0].id, str[0].id + 1, ...: no search */
        uint64_t i = (uint64_t)id - (uint64_t)r->str[0].id;
        return i < r->nstr ? (ssize_t)i : -1;
    }
    size_t lo = 0, hi = r->nstr;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->str[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < r->nstr && r->str[lo].id == id ? (ssize_t)lo : -1;
}

/* The index of string id `id` (of SQLite type `type`), or -1 when NULL, null or unknown. */
static ssize_t string_index(const ct_reader *r, int type, int64_t id)
{
    if (type == SQLITE_NULL)
        return -1;
    if (id <= 0 && (r->fmt->flags & CT_ZERO_ID_NULL))
        return -1;
    return str_index(r, id);
}

uint32_t ct_string(const ct_reader *r, sqlite3_stmt *st, int col)
{
    ssize_t i = col < 0 ? -1 : string_index(r, sqlite3_column_type(st, col),
                                            sqlite3_column_int64(st, col));
    return i < 0 ? 0 : r->str[i].raw;
}

int ct_nvtx_name(ct_reader *r, tr_event *e, uint32_t raw, int op_ok)
{
    const char *msg = tr_str_of(r->t, raw);
    tr_nvtx_annotation a;
    tr_nvtx_parse(r->nvtx, msg, strlen(msg), &a);
    if (a.annotated && op_ok) {
        e->kind = TR_KIND_OP;
        e->name = tr_intern_add(&r->t->strings, a.name, a.name_len);
        tr_event_extra x = tr_no_extra;
        x.seq = a.seq;
        x.op_id = a.op_id;
        if (a.sizes)
            (void)tr_shape_get(r->t, a.sizes, a.sizes_len, &x.shape);   /* 0 on OOM: no shape */
        if (tr_extra_set(r->t, e, &x) < 0 || tr_set_raw_name(r->t, e, raw) < 0)
            return -1;
    } else {
        e->name = raw;
    }
    return 0;
}

int ct_probe_open(tr_sql_input *in, const char *path, const unsigned char *head, size_t headlen,
                  const char *what)
{
    return headlen >= 16 && memcmp(head, "SQLite format 3", 16) == 0
           && tr_sql_open(in, path, what, NULL) == TR_OK;
}

/* ---- one table's rows, by field ---- */

/* Selects the table's columns in the row's order; w->st is NULL when the file lacks the table. */
static tr_status select_row(ct_reader *r, const ct_table *tab, ct_row *w, tr_error *err)
{
    tr_col cols[CT_NFIELDS];
    w->cells = NULL;
    for (int f = 0; f < CT_NFIELDS; f++)
        w->col[f] = -1;
    for (size_t i = 0; i < tab->ncols; i++) {
        cols[i] = (tr_col){tab->cols[i].name, tab->cols[i].required};
        w->col[tab->cols[i].field] = (int)i;
    }
    char tail[128];
    const char *by = tab->order ? tr_sql_order_by(&r->in, tab->name, tab->order, tail, sizeof tail)
                         : tab->tail;
    return tr_sql_select(&r->in, tab->name, cols, tab->ncols, by, &w->st, err);
}

static ssize_t row_string_index(const ct_reader *r, const ct_row *w, int col)
{
    return string_index(r, ct_row_type(w, col), ct_row_int(w, col));
}

uint32_t ct_cell_string(const ct_reader *r, const tr_sql_cell *c)
{
    ssize_t i = string_index(r, c->type, c->i);
    return i < 0 ? 0 : r->str[i].raw;
}

uint32_t ct_row_string(const ct_reader *r, const ct_row *w, ct_field f)
{
    ssize_t i = row_string_index(r, w, w->col[f]);
    return i < 0 ? 0 : r->str[i].raw;
}

/* The row's start and end; 0 (counted in bad) when the format checks them and they are unusable. */
static int row_times(const ct_reader *r, const ct_row *w, ct_bad *bad, int64_t *start, int64_t *end)
{
    int cs = w->col[CT_START], ce = w->col[CT_END];
    if (r->fmt->flags & CT_CHECK_TIMES)
        return ct_interval_of(bad, ct_row_type(w, cs), ct_row_int(w, cs), ct_row_type(w, ce), ct_row_int(w, ce),
                           start, end);
    *start = ct_row_int(w, cs);
    *end = ct_row_int(w, ce);
    return 1;
}

/* The host thread: a packed globalTid where the format has one, else pid and tid. */
static uint32_t row_thread(ct_reader *r, const ct_row *w)
{
    if (w->col[CT_GTID] >= 0) {
        int64_t g = ct_i64(w, CT_GTID, 0);
        return ct_thread(r, (g >> 24) & 0xFFFFFF, g & 0xFFFFFF);
    }
    return ct_thread(r, ct_i64(w, CT_PID, 0), ct_i64(w, CT_TID, 0));
}

/* The stream of a GPU activity; 0 for a missing device or stream id. */
static uint32_t row_stream(ct_reader *r, const ct_row *w)
{
    return ct_stream(r, ct_i64(w, CT_DEVICE, 0), ct_i64(w, CT_CONTEXT, -1), ct_i64(w, CT_STREAM, 0));
}

static tr_status finish(ct_reader *r, ct_row *w, const ct_bad *bad, int rc, tr_error *err)
{
    sqlite3_finalize(w->st);
    if (bad)
        ct_report_bad(r, bad);
    return rc < 0 ? err->status : TR_OK;
}

static tr_status fail_oom(ct_reader *r, ct_row *w, tr_error *err)
{
    sqlite3_finalize(w->st);
    return ct_oom(r, err);
}

/* Selects the table and starts reading its rows ahead on a second thread
 * (lib/sql_ahead.h): stepping SQLite was most of each loop.  Text columns
 * come with their bytes.  *a is NULL (and TR_OK) when the file lacks the table. */
static tr_status select_ahead(ct_reader *r, const ct_table *tab, ct_row *w, tr_sql_ahead **a,
                              tr_error *err)
{
    *a = NULL;
    tr_status s = select_row(r, tab, w, err);
    if (s != TR_OK || !w->st)
        return s;
    char bytes[CT_NFIELDS + 1] = "";
    for (size_t i = 0; i < tab->ncols && i < CT_NFIELDS; i++)
        bytes[i] = tab->cols[i].field == CT_TEXT ? 't' : 'i';
    s = tr_sql_read_ahead(a, &r->in, w->st, tab->name, (int)tab->ncols, bytes, err);
    if (s != TR_OK) {
        sqlite3_finalize(w->st);
        *a = NULL;
    }
    return s;
}

/* Ends a loop of select_ahead(); status as finish(). */
static tr_status end_ahead(ct_reader *r, ct_row *w, tr_sql_ahead *a, const ct_bad *bad, int rc,
                           tr_error *err)
{
    tr_sql_ahead_stop(a);
    return finish(r, w, bad, rc, err);
}

static tr_status ahead_oom(ct_reader *r, ct_row *w, tr_sql_ahead *a, tr_error *err)
{
    tr_sql_ahead_stop(a);
    return fail_oom(r, w, err);
}

static int cmp_string(const void *pa, const void *pb)
{
    const struct ct_string *a = pa, *b = pb;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    return (a->kernel > b->kernel) - (a->kernel < b->kernel);
}

/* Rows out of id order are sorted; of rows with one id the last read stands. */
static void sort_strings(ct_reader *r)
{
    for (size_t i = 0; i < r->nstr; i++)
        r->str[i].kernel = (uint32_t)i;   /* the row's place, to keep the last of equal ids */
    tr_spill_sort(r->str, r->nstr, sizeof r->str[0], cmp_string);
    size_t n = 0;
    for (size_t i = 0; i < r->nstr; i++) {
        if (n && r->str[n - 1].id == r->str[i].id)
            n--;
        r->str[n++] = r->str[i];
    }
    r->nstr = n;
    for (size_t i = 0; i < n; i++) {
        tr_spill_tick();
        r->str[i].kernel = 0;
    }
}

/* A string table's texts, interned a batch at a time (tr_intern_add_many()):
 * in a large trace most kernel and marker names are new, and a batch lets
 * each one's slot come from memory while those before it are added.  The
 * texts are copied, since a row's cells last only until the next row. */
typedef struct {
    char bytes[16384];
    size_t used, n;
    const char *s[TR_INTERN_MANY];
    uint32_t len[TR_INTERN_MANY], ids[TR_INTERN_MANY];
    size_t at[TR_INTERN_MANY];   /* the row's place in r->str */
} text_batch;

static int intern_texts(ct_reader *r, text_batch *b)
{
    int rc = tr_intern_add_many(&r->t->strings, b->n, b->s, b->len, b->ids);
    for (size_t i = 0; rc == 0 && i < b->n; i++)
        r->str[b->at[i]].raw = b->ids[i];
    b->n = b->used = 0;
    return rc;
}

/* Queues the text of r->str[at]; -1 on out-of-memory. */
static int queue_text(ct_reader *r, text_batch *b, size_t at, const char *v, size_t len)
{
    if (b->n == TR_INTERN_MANY || sizeof b->bytes - b->used < len)
        if (intern_texts(r, b) < 0)
            return -1;
    if (len > sizeof b->bytes)
        return (r->str[at].raw = tr_intern_add(&r->t->strings, v, len)) ? 0 : -1;
    memcpy(b->bytes + b->used, v, len);
    b->s[b->n] = b->bytes + b->used;
    b->len[b->n] = (uint32_t)len;
    b->at[b->n++] = at;
    b->used += len;
    return 0;
}

tr_status ct_read_strings(ct_reader *r, const ct_table *tab, tr_error *err)
{
    ct_row w;
    tr_sql_ahead *a;
    tr_status s = select_ahead(r, tab, &w, &a, err);
    if (s != TR_OK || !a)
        return s;
    int rc, vc = w.col[CT_TEXT], sorted = 1;
    size_t cap = r->nstr;
    text_batch texts;
    texts.n = texts.used = 0;
    while ((w.cells = tr_sql_ahead_next(a, &rc, err)) != NULL) {
        tr_spill_tick();
        if (r->nstr == cap) {
            size_t ncap = cap ? cap * 2 : 256;
            /* one a distinct string of the trace: 16 bytes each, spilled
             * with the other large arrays (lib/spill.h) */
            struct ct_string *n = tr_spill_realloc(r->str, cap * sizeof *n, ncap * sizeof *n);
            if (!n)
                return ahead_oom(r, &w, a, err);
            r->str = n;
            cap = ncap;
        }
        const char *v = w.cells[vc].p;
        int len = w.cells[vc].len;
        struct ct_string *x = &r->str[r->nstr];
        x->id = ct_row_int(&w, w.col[CT_ID]);
        x->raw = 0;
        x->kernel = 0;
        if (queue_text(r, &texts, r->nstr, v ? v : "", v ? (size_t)len : 0) < 0)
            return ahead_oom(r, &w, a, err);
        if (r->nstr && x[-1].id >= x->id)
            sorted = 0;
        r->nstr++;
    }
    if (intern_texts(r, &texts) < 0)
        return ahead_oom(r, &w, a, err);
    if (!sorted)
        sort_strings(r);
    r->str_dense = r->nstr && (uint64_t)r->str[r->nstr - 1].id - (uint64_t)r->str[0].id == r->nstr - 1;
    return end_ahead(r, &w, a, NULL, rc, err);
}

/* A device's number is its CUDA ordinal where the format gives one apart from the row id. */
tr_status ct_read_devices(ct_reader *r, const ct_table *tab, tr_error *err)
{
    ct_row w;
    tr_status s = select_row(r, tab, &w, err);
    if (s != TR_OK || !w.st)
        return s;
    int rc;
    while ((rc = tr_sql_next(&r->in, w.st, tab->name, err)) == 1) {
        uint32_t d = tr_device_get(r->t, r->source, ct_i64(&w, CT_DEVICE, ct_i64(&w, CT_ID, 0)));
        if (!d)
            return fail_oom(r, &w, err);
        tr_device *dev = &r->t->devices.v[d];
        if (w.col[CT_NAME] >= 0) {
            uint32_t n = ct_string(r, w.st, w.col[CT_NAME]);
            dev->name = sqlite3_column_type(w.st, w.col[CT_NAME]) == SQLITE_NULL ? 0
                        : n ? n : tr_str(r->t, "");
        } else if (w.col[CT_TEXT] >= 0) {
            const char *n = (const char *)sqlite3_column_text(w.st, w.col[CT_TEXT]);
            if (n)
                dev->name = tr_str(r->t, n);
        }
        dev->cc_major = (int32_t)ct_i64(&w, CT_CC_MAJOR, -1);
        dev->cc_minor = (int32_t)ct_i64(&w, CT_CC_MINOR, -1);
        dev->memory_bytes = ct_i64(&w, CT_MEMORY, -1);
        dev->sm_count = (int32_t)ct_i64(&w, CT_SM_COUNT, -1);
    }
    return finish(r, &w, NULL, rc, err);
}

tr_status ct_read_events(ct_reader *r, const ct_table *tab, const char *name, ct_fill_fn fill,
                         tr_error *err)
{
    ct_row w;
    tr_sql_ahead *a;
    tr_status s = select_ahead(r, tab, &w, &a, err);
    if (s != TR_OK || !a)
        return s;
    ct_bad bad = {tab->name, 0, 0};
    uint32_t name_id = name ? tr_str(r->t, name) : 0;
    int rc;
    while ((w.cells = tr_sql_ahead_next(a, &rc, err)) != NULL) {
        int64_t start, end;
        if (!row_times(r, &w, &bad, &start, &end))
            continue;
        tr_event *e = tr_add_event(r->t, tab->kind);
        if (!e)
            return ahead_oom(r, &w, a, err);
        e->name = name_id;
        e->start = start;
        e->end = end;
        /* -1 where the table has no correlation column */
        if (tr_set_correlation(r->t, e, ct_i64(&w, CT_CORRELATION, -1)) < 0)
            return ahead_oom(r, &w, a, err);
        if ((s = fill(r, tab, &w, e, err)) != TR_OK) {
            end_ahead(r, &w, a, NULL, 0, err);
            return s;
        }
        ct_note_ts(r, e->end);
    }
    return end_ahead(r, &w, a, &bad, rc, err);
}

/* By callback id, as CUPTI names it ("cudaLaunchKernel"), cached per id. */
static uint32_t cbid_name(ct_reader *r, int driver, int cbid)
{
    if (cbid > 0 && cbid < 1024 && r->api_names[driver][cbid])
        return r->api_names[driver][cbid];
    const char *known = driver ? tr_driver_cbid_name(cbid) : tr_runtime_cbid_name(cbid);
    char buf[64];
    if (!known) {
        snprintf(buf, sizeof buf, "%s API cbid %d", driver ? "driver" : "runtime", cbid);
        known = buf;
    }
    uint32_t id = tr_str(r->t, known);
    if (cbid > 0 && cbid < 1024)
        r->api_names[driver][cbid] = id;
    return id;
}

/* By name string: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (raw kept).
 * 0, or -1 out of memory. */
static int versioned_name(ct_reader *r, uint32_t raw, tr_event *e)
{
    const char *s = tr_str_of(r->t, raw);
    const char *v = strrchr(s, '_');
    if (v && v > s && v[1] == 'v' && v[2] && strspn(v + 2, "0123456789") == strlen(v + 2)) {
        e->name = tr_intern_add(&r->t->strings, s, (size_t)(v - s));
        return tr_set_raw_name(r->t, e, raw);
    }
    e->name = raw && *s ? raw : tr_str(r->t, "[unknown API]");
    return 0;
}

/* API calls are named by callback id where the format has one (and then carry it and
 * the return value as detail), else by their name string. */
static tr_status fill_api(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                          tr_error *err)
{
    int cbc = w->col[CT_CBID];
    int cbid = cbc >= 0 ? (int)ct_row_int(w, cbc) : 0;
    if (cbc >= 0)
        e->name = cbid_name(r, tab->kind == TR_KIND_DRIVER, cbid);
    else if (versioned_name(r, ct_row_string(r, w, CT_NAME), e) < 0)
        return ct_oom(r, err);
    e->thread = row_thread(r, w);
    if (cbc >= 0) {
        tr_api_detail d = {cbid, ct_i64(w, CT_RETURN, 0)};
        if (!(e->detail = tr_add_api_detail(r->t, &d)))
            return ct_oom(r, err);
    }
    return TR_OK;
}

/* The display name: the format's demangled or short name, else the mangled one
 * demangled here (once per name); the mangled name is kept as raw_name. */
static tr_status kernel_name(ct_reader *r, const ct_row *w, tr_event *e, tr_error *err)
{
    ssize_t m = row_string_index(r, w, w->col[CT_MANGLED]);
    uint32_t mang = m < 0 ? 0 : r->str[m].raw;
    uint32_t name = ct_row_string(r, w, CT_DEMANGLED);
    if (!name)
        name = ct_row_string(r, w, CT_SHORT);
    if (!name && mang) {
        if (!r->str[m].kernel) {
            char *d = tr_demangle(tr_str_of(r->t, mang));
            r->str[m].kernel = d ? tr_str(r->t, d) : mang;
            free(d);
            if (!r->str[m].kernel)
                return ct_oom(r, err);
        }
        name = r->str[m].kernel;
    }
    if (!name) {
        char buf[48] = "[unknown kernel]";
        if (r->fmt->flags & CT_KERNEL_ID)
            snprintf(buf, sizeof buf, "[unknown kernel %lld]",
                     (long long)ct_row_int(w, w->col[CT_MANGLED]));
        name = tr_str(r->t, buf);
    }
    e->name = name;
    if (mang && mang != name) {
        e->flags |= TR_FLAG_DEMANGLED;
        if (tr_set_raw_name(r->t, e, mang) < 0)
            return ct_oom(r, err);
    }
    return TR_OK;
}

static tr_status fill_kernel(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                             tr_error *err)
{
    (void)tab;
    e->stream = row_stream(r, w);
    if (kernel_name(r, w, e, err) != TR_OK)
        return err->status;
    /* a launch field the table lacks, or holds as NULL, is unknown (-1: NULL in run.db), not 0 */
    tr_kernel_detail d;
    for (int j = 0; j < 3; j++) {
        d.grid[j] = (int32_t)ct_i64(w, (ct_field)(CT_GRID_X + j), -1);
        d.block[j] = (int32_t)ct_i64(w, (ct_field)(CT_BLOCK_X + j), -1);
    }
    d.registers = (int32_t)ct_i64(w, CT_REGISTERS, -1);
    d.static_smem = (int32_t)ct_i64(w, CT_STATIC_SMEM, -1);
    d.dynamic_smem = (int32_t)ct_i64(w, CT_DYNAMIC_SMEM, -1);
    return (e->detail = tr_add_kernel_detail(r->t, &d)) ? TR_OK : ct_oom(r, err);
}

/* A memory kind; 0 (unknown) for NULL, by the format's own numbering. */
static uint32_t memory_kind(ct_reader *r, const ct_row *w, ct_field f)
{
    int c = w->col[f];
    return ct_row_type(w, c) == SQLITE_NULL ? 0 : tr_enum_str(r->t, r->fmt->memory_kinds, ct_row_int(w, c));
}

static tr_status fill_memcpy(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                             tr_error *err)
{
    (void)tab;
    tr_copy_detail d = {tr_enum_str(r->t, &tr_copy_kinds, ct_i64(w, CT_COPY_KIND, 0)),
                        memory_kind(r, w, CT_SRC_KIND), memory_kind(r, w, CT_DST_KIND)};
    e->name = tr_memcpy_name(r->t, d.copy_kind);
    if (tr_set_bytes(r->t, e, ct_i64(w, CT_BYTES, 0)) < 0)
        return ct_oom(r, err);
    e->stream = row_stream(r, w);
    return (e->detail = tr_add_copy_detail(r->t, &d)) ? TR_OK : ct_oom(r, err);
}

static tr_status fill_memset(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                             tr_error *err)
{
    (void)tab;
    if (!(e->detail = tr_add_memset_value(r->t, ct_i64(w, CT_VALUE, 0))))
        return ct_oom(r, err);
    if (tr_set_bytes(r->t, e, ct_i64(w, CT_BYTES, 0)) < 0)
        return ct_oom(r, err);
    e->stream = row_stream(r, w);
    return TR_OK;
}

/* The wait happens on the calling thread (found through the correlation id at tree
 * build); the stream says what was waited for.  Without a device column the device
 * is the context's, from the format's context table. */
static tr_status fill_sync(ct_reader *r, const ct_table *tab, const ct_row *w, tr_event *e,
                           tr_error *err)
{
    (void)tab, (void)err;
    int64_t type = ct_i64(w, CT_SYNC_TYPE, 0);
    e->name = tr_enum_str(r->t, &tr_sync_names, type >= 0 && (uint64_t)type < tr_sync_names.n ? type : 0);
    int64_t ctx = ct_i64(w, CT_CONTEXT, -1), device = 0;
    if (w->col[CT_DEVICE] >= 0)
        device = ct_i64(w, CT_DEVICE, 0);
    else
        tr_i64map_get(&r->ctx_device, ctx, &device);
    e->stream = ct_stream(r, device, ctx, ct_i64(w, CT_STREAM, -1));
    return TR_OK;
}

tr_status ct_read_api(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, NULL, fill_api, err);
}

tr_status ct_read_kernels(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, NULL, fill_kernel, err);
}

tr_status ct_read_memcpy(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, NULL, fill_memcpy, err);
}

tr_status ct_read_memset(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, "[CUDA memset]", fill_memset, err);
}

tr_status ct_read_sync(ct_reader *r, const ct_table *tab, tr_error *err)
{
    return ct_read_events(r, tab, NULL, fill_sync, err);
}

/* The file is read as it stands (immutable: no lock, no journal), as a profiler
 * leaves it.  A write-ahead log beside it holds changes a writer has not put
 * into the file: they are not read, and that is said. */
static void warn_unread_journal(const ct_reader *r, const char *path)
{
    char wal[4200];
    struct stat sb;
    if (snprintf(wal, sizeof wal, "%s-wal", path) < (int)sizeof wal && stat(wal, &sb) == 0 && sb.st_size > 0)
        tr_ingest_warn(r->o, "%s: %s holds %lld bytes of changes not written into the database; they are "
                       "not read (open it once with sqlite3 to fold them in)", path, wal, (long long)sb.st_size);
}

tr_status ct_read_file(tr_trace *t, const char *path, const tr_ingest_opts *o, const ct_format *fmt,
                       tr_error *err)
{
    ct_reader r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.o = o;
    r.fmt = fmt;
    tr_i64map_init(&r.ctx_device);
    tr_status s = tr_sql_open(&r.in, path, fmt->what, err);
    if (s != TR_OK)
        return s;
    warn_unread_journal(&r, path);
    if (!tr_sql_has_table(&r.in, fmt->strings)) {
        s = tr_fail(err, TR_ERR_INPUT, "Cannot read %s: path=\"%s\": no %s table (not %s)", fmt->what,
                    path, fmt->strings, fmt->not_this);
        goto out;
    }
    char version[64] = "";
    fmt->version(&r, version, sizeof version);
    r.first_event = t->events.n;
    r.source = tr_add_source(t, path, fmt->format, version);
    if (!r.source || (s = tr_nvtx_parser_new(&r.nvtx, err)) != TR_OK) {
        s = r.source ? s : ct_oom(&r, err);
        goto out;
    }
    for (size_t i = 0; i < fmt->ntables && s == TR_OK; i++)
        if (fmt->tables[i].read)
            s = fmt->tables[i].read(&r, &fmt->tables[i], err);
    if (s == TR_OK && fmt->finish)
        s = fmt->finish(&r, err);
    if (s == TR_OK)
        t->sources.v[r.source].events = (int64_t)(t->events.n - r.first_event);
out:
    tr_nvtx_parser_free(r.nvtx);
    tr_sql_close(&r.in);
    tr_spill_free(r.str);
    tr_i64map_free(&r.ctx_device);
    return s;
}
