/*
 * diff.c - two runs side by side, and many runs folded into one summary.
 *
 * Both work on tr_summarize()'s groups, joined by a text key: a group's ids
 * are those of its own run.db's string table, so only the resolved text can
 * say that two groups of different files are the same.  The key is one byte
 * buffer, "<host/device>\0name\0shape\0frame\0frame...", which is unambiguous
 * because none of those strings holds a NUL; sorting the keys of both sides
 * puts equal groups next to each other.
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/diff.h"
#include "lib/checked.h"
#include "lib/escape.h"
#include "lib/model.h"
#include "lib/rundb.h"

#define US(ns) ((double)(ns) / 1000.0)
#define NAME_MAX_WIDTH 55
#define SHAPES_MAX_WIDTH 80

static tr_status nomem(tr_error *err) { return tr_fail(err, TR_ERR_RUNTIME, "out of memory"); }

/* ---- --diff-normalize ---- */

static int ident_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

char *tr_diff_normalize_name(const char *name)
{
    static const char step[] = "ProfilerStep#";
    size_t len = strlen(name);
    char *out = malloc(len + 2);   /* never longer, but "#1" -> "*" and "7" -> "N" keep it so */
    if (!out)
        return NULL;
    size_t o = 0;
    int depth = 0;
    for (size_t i = 0; i < len;) {
        char ch = name[i];
        if (strncmp(name + i, step, sizeof step - 1) == 0 && name[i + sizeof step - 1] >= '0'
            && name[i + sizeof step - 1] <= '9') {
            memcpy(out + o, "ProfilerStep*", 13);
            o += 13;
            for (i += sizeof step - 1; name[i] >= '0' && name[i] <= '9'; i++) {}
            continue;
        }
        if (ch == '<')
            depth++;
        else if (ch == '>' && depth > 0)
            depth--;
        /* a number inside <...>: its digits and any suffix or fraction (128u, 1.5f, 0x10) */
        if (depth > 0 && ch >= '0' && ch <= '9' && (i == 0 || !ident_char(name[i - 1]))) {
            out[o++] = 'N';
            for (i++; i < len && (ident_char(name[i]) || name[i] == '.'); i++) {}
            continue;
        }
        out[o++] = ch;
        i++;
    }
    out[o] = '\0';
    return out;
}

/* ---- join keys ---- */

typedef struct {
    char *key;
    size_t klen;
    int side;
    tr_group *g;
} entry;

static char *make_key(const tr_group *g, int normalize, size_t *klen)
{
    char *nm = normalize ? tr_diff_normalize_name(g->name) : NULL;
    if (normalize && !nm)
        return NULL;
    const char *name = nm ? nm : g->name;
    size_t len = 2 + strlen(name) + 1 + strlen(g->shape) + 1;
    char **fr = NULL;
    if (g->nframes && normalize) {
        fr = calloc(g->nframes, sizeof *fr);
        if (!fr) {
            free(nm);
            return NULL;
        }
    }
    int ok = 1;
    for (size_t f = 0; f < g->nframes; f++) {
        if (fr && !(fr[f] = tr_diff_normalize_name(g->frames[f])))
            ok = 0;
        len += strlen(fr && fr[f] ? fr[f] : g->frames[f]) + 1;
    }
    char *k = ok ? malloc(len) : NULL;
    if (k) {
        size_t o = 0;
        k[o++] = g->on_gpu ? 'g' : 'c';
        k[o++] = '\0';
        size_t n = strlen(name) + 1;
        memcpy(k + o, name, n);
        o += n;
        n = strlen(g->shape) + 1;
        memcpy(k + o, g->shape, n);
        o += n;
        for (size_t f = 0; f < g->nframes; f++) {
            const char *t = fr ? fr[f] : g->frames[f];
            n = strlen(t) + 1;
            memcpy(k + o, t, n);
            o += n;
        }
        *klen = o;
    }
    for (size_t f = 0; fr && f < g->nframes; f++)
        free(fr[f]);
    free(fr);
    free(nm);
    return k;
}

static int cmp_key(const char *a, size_t al, const char *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al > bl) - (al < bl);
}

static int cmp_entry(const void *pa, const void *pb)
{
    const entry *a = pa, *b = pb;
    int c = cmp_key(a->key, a->klen, b->key, b->klen);
    return c ? c : a->side - b->side;
}

/* The fields of a key: name, shape, then the frames (innermost first). */
static const char *key_field(const char *key, size_t klen, size_t idx)
{
    size_t o = 2;   /* past the host/device byte and its NUL */
    for (size_t i = 0; i < idx && o < klen; i++)
        o += strlen(key + o) + 1;
    return o < klen ? key + o : NULL;
}

static tr_status collect(entry **out, size_t *n, tr_summary *s, int side, int normalize, tr_error *err)
{
    entry *e = realloc(*out, (*n + s->n + 1) * sizeof *e);
    if (!e)
        return nomem(err);
    *out = e;
    for (size_t i = 0; i < s->n; i++) {
        entry *x = &e[(*n)++];
        x->side = side;
        x->g = &s->groups[i];
        if (!(x->key = make_key(x->g, normalize, &x->klen))) {
            (*n)--;
            return nomem(err);
        }
    }
    return TR_OK;
}

static void entries_free(entry *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(e[i].key);
    free(e);
}

/* Adds src's numbers to dst's; durations move only when both lists are given. */
static tr_status add_group(tr_group *dst, tr_group *src, int move_durations, tr_error *err)
{
    if (tr_group_first_before(src, dst)) {
        dst->first_start = src->first_start;
        dst->first_end = src->first_end;
        dst->first_id = src->first_id;
        dst->is_async = src->is_async;
        dst->hidden = src->hidden;   /* the first event decides, as in one run */
    }
    dst->count += src->count;
    tr_sat_acc(&dst->cpu_total, src->cpu_total);
    tr_sat_acc(&dst->cpu_self, src->cpu_self);
    tr_sat_acc(&dst->gpu_total, src->gpu_total);
    tr_sat_acc(&dst->gpu_self, src->gpu_self);
    tr_sat_acc(&dst->cpu_mem, src->cpu_mem);
    tr_sat_acc(&dst->cpu_mem_self, src->cpu_mem_self);
    tr_sat_acc(&dst->gpu_mem, src->gpu_mem);
    tr_sat_acc(&dst->gpu_mem_self, src->gpu_mem_self);
    tr_sat_acc(&dst->flops, src->flops);
    if (move_durations && src->ndur) {
        if (dst->ndur + src->ndur > dst->capdur) {
            size_t nc = dst->ndur + src->ndur;
            int64_t *nd = realloc(dst->durations, nc * sizeof *nd);
            if (!nd)
                return nomem(err);
            dst->durations = nd;
            dst->capdur = nc;
        }
        memcpy(dst->durations + dst->ndur, src->durations, src->ndur * sizeof *src->durations);
        dst->ndur += src->ndur;
    }
    return TR_OK;
}

/* ---- many runs as one ---- */

static void group_strings_free(tr_group *g)
{
    free(g->name);
    free(g->shape);
    for (size_t j = 0; j < g->nframes; j++)
        free(g->frames[j]);
    free(g->frames);
    free(g->durations);
}

tr_status tr_summary_merge(tr_summary *dst, tr_summary *src, tr_error *err)
{
    entry *e = NULL;
    size_t n = 0;
    tr_status st = collect(&e, &n, dst, 0, 0, err);
    if (st == TR_OK)
        st = collect(&e, &n, src, 1, 0, err);
    tr_group *out = st == TR_OK ? calloc(n ? n : 1, sizeof *out) : NULL;
    if (st == TR_OK && !out)
        st = nomem(err);
    if (st != TR_OK) {
        entries_free(e, n);
        return st;
    }
    qsort(e, n, sizeof *e, cmp_entry);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        tr_group *g = &out[k++];
        *g = *e[i].g;             /* takes the first one's strings and durations */
        memset(e[i].g, 0, sizeof *e[i].g);
        size_t j = i + 1;
        for (; j < n && !cmp_key(e[i].key, e[i].klen, e[j].key, e[j].klen); j++) {
            if (st == TR_OK)
                st = add_group(g, e[j].g, 1, err);
            group_strings_free(e[j].g);
            memset(e[j].g, 0, sizeof *e[j].g);
        }
        i = j;
    }
    entries_free(e, n);
    free(dst->groups);
    free(src->groups);
    dst->groups = out;
    dst->n = dst->cap = k;
    dst->events += src->events;
    dst->skipped += src->skipped;
    /* the host time a filtered selection covers is a union per thread, and
     * threads of different files are different threads: the unions add */
    tr_sat_acc(&dst->sum_gpu_self_host, src->sum_gpu_self_host);
    tr_sat_acc(&dst->cpu_covered, src->cpu_covered);
    dst->unattributed += src->unattributed;
    tr_sat_acc(&dst->unattributed_ns, src->unattributed_ns);
    dst->unattributed_no_corr += src->unattributed_no_corr;
    dst->unattributed_before += src->unattributed_before;
    dst->unattributed_not_found += src->unattributed_not_found;
    dst->filtered |= src->filtered;
    if (!dst->stack_source)
        dst->stack_source = src->stack_source;
    src->groups = NULL;
    src->n = src->cap = 0;
    tr_summary_totals(dst);
    tr_summary_sort(dst, NULL);
    return st;
}

/* ---- the diff ---- */

typedef struct {
    const char *path;
    tr_summary s;
    int64_t first, last, busy;   /* the span, and the union of GPU activity in it */
    int has_span;
} run_info;

typedef struct {
    const char *key;
    size_t klen;
    tr_group v[2];   /* numbers only: base, new */
    int in[2];
    double delta, pct;
} drow;

typedef struct {
    const tr_diff_opts *d;
    const tr_analyze_opts *o;
    const tr_sort_key *key;      /* whose change is the delta */
    int key_is_time;
    run_info run[2];
    drow *rows;
    size_t nrows;
    int has_gpu;
    int name_width, shapes_width;
} diff_ctx;

static tr_status span_error(sqlite3 *db, tr_error *err)
{
    return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(db),
                   sqlite3_errmsg(db));
}

/* The events' rank is selected (always, with no --rank; m is NULL then). */
static int rank_kept(const tr_rank_map *m, sqlite3_stmt *st)
{
    if (!m)
        return 1;
    int64_t th = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 2);
    int64_t sr = sqlite3_column_type(st, 3) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 3);
    return tr_rank_map_ok(m, th, sr);
}

/* The whole run's span and GPU busy time, whatever the selection: they say how
 * the two runs compare as a whole.  With --rank (m), the run is those ranks. */
static tr_status run_span(sqlite3 *db, const tr_rank_map *m, run_info *r, tr_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT start_ns, end_ns, thread_id, stream_id FROM events", -1, &st, NULL)
        != SQLITE_OK)
        return span_error(db, err);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        if (!tr_times_ok(s, e) || !rank_kept(m, st))
            continue;
        if (!r->has_span || s < r->first)
            r->first = s;
        if (!r->has_span || e > r->last)
            r->last = e;
        r->has_span = 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return span_error(db, err);
    if (sqlite3_prepare_v2(db, "SELECT e.start_ns, e.end_ns, e.thread_id, e.stream_id FROM events e "
                           "JOIN kinds k ON k.id = e.kind WHERE k.on_gpu = 1 ORDER BY e.start_ns", -1, &st, NULL)
        != SQLITE_OK)
        return span_error(db, err);
    int64_t cs = 0, ce = 0;
    int open = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        if (!tr_times_ok(s, e) || !rank_kept(m, st))
            continue;
        if (open && s <= ce) {
            if (e > ce)
                ce = e;
            continue;
        }
        if (open)
            tr_sat_acc(&r->busy, ce - cs);
        cs = s;
        ce = e;
        open = 1;
    }
    if (open)
        tr_sat_acc(&r->busy, ce - cs);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? TR_OK : span_error(db, err);
}

/* tr_summarize with --rank resolved against this run.db, whose sources
 * without a stored rank are counted from base (lib/ranks.h); with r, also the
 * run's span and GPU busy time over those ranks. */
static tr_status summarize_ranked(sqlite3 *db, const tr_analyze_opts *o, int64_t base, tr_summary *s,
                                  run_info *r, tr_error *err)
{
    if (!o->select || !o->select->ranks.n) {
        tr_status st = tr_summarize(db, o, s, err);
        return st == TR_OK && r ? run_span(db, NULL, r, err) : st;
    }
    tr_selection sel = *o->select;
    tr_analyze_opts oo = *o;
    sel.rank_base = base;
    oo.select = &sel;
    tr_status st = tr_selection_bind(&sel, db, err);
    if (st == TR_OK)
        st = tr_summarize(db, &oo, s, err);
    if (st == TR_OK && r)
        st = run_span(db, sel.rank_map, r, err);
    tr_selection_unbind(&sel);
    return st;
}

static tr_status load_run(run_info *r, const char *path, const tr_analyze_opts *o, FILE *warn, tr_error *err)
{
    sqlite3 *db = NULL;
    r->path = path;
    tr_status st = tr_rundb_open(path, &db, err);
    /* each side of a diff is a run of its own: its ranks count from 0 */
    if (st == TR_OK)
        st = summarize_ranked(db, o, 0, &r->s, r, err);
    if (db)
        sqlite3_close(db);
    if (st == TR_OK && r->s.skipped && warn) {
        fputs("trace-analyze: ", warn);
        char line[1200];
        snprintf(line, sizeof line, "%s: warning: %lld event(s) with impossible times left out", path,
                 (long long)r->s.skipped);
        tr_put_line(warn, line);
    }
    return st;
}

static const tr_sort_key *sort_key;

static double row_value(const drow *r)
{
    const tr_group *g = r->in[1] ? &r->v[1] : &r->v[0];
    return sort_key && sort_key->value ? fabs(sort_key->value(g)) : 0;
}

static int cmp_row(const void *pa, const void *pb)
{
    const drow *a = pa, *b = pb;
    if (sort_key && sort_key->value) {
        double x = fabs(a->delta), y = fabs(b->delta);
        if (x != y)
            return x > y ? -1 : 1;
        /* a group that came or went is a change even where the key's value is 0 */
        int ca = !a->in[0] || !a->in[1], cb = !b->in[0] || !b->in[1];
        if (ca != cb)
            return cb - ca;
        x = row_value(a);
        y = row_value(b);
        if (x != y)
            return x > y ? -1 : 1;
    }
    return cmp_key(a->key, a->klen, b->key, b->klen);
}

static tr_status build_rows(diff_ctx *c, entry **pe, size_t *pn, tr_error *err)
{
    tr_status st = collect(pe, pn, &c->run[0].s, 0, c->d->normalize, err);
    if (st == TR_OK)
        st = collect(pe, pn, &c->run[1].s, 1, c->d->normalize, err);
    if (st != TR_OK)
        return st;
    entry *e = *pe;
    size_t n = *pn;
    qsort(e, n, sizeof *e, cmp_entry);
    c->rows = calloc(n ? n : 1, sizeof *c->rows);
    if (!c->rows)
        return nomem(err);
    for (size_t i = 0; i < n;) {
        drow *r = &c->rows[c->nrows++];
        r->key = e[i].key;
        r->klen = e[i].klen;
        size_t j = i;
        for (; j < n && !cmp_key(e[i].key, e[i].klen, e[j].key, e[j].klen); j++) {
            tr_group *v = &r->v[e[j].side];
            if (!r->in[e[j].side]) {
                *v = *e[j].g;
                v->name = v->shape = NULL;
                v->frames = NULL;
                v->nframes = 0;
                v->durations = NULL;
                v->ndur = v->capdur = 0;
                r->in[e[j].side] = 1;
            } else {
                add_group(v, e[j].g, 0, err);   /* normalised names that meet in one run */
            }
        }
        double b = c->key->value(&r->v[0]), nw = c->key->value(&r->v[1]);
        r->delta = nw - b;
        r->pct = b != 0 ? r->delta * 100.0 / b : NAN;
        i = j;
    }
    sort_key = c->d->sort ? c->d->sort : c->key;
    qsort(c->rows, c->nrows, sizeof *c->rows, cmp_row);
    return TR_OK;
}

/* ---- columns ---- */

typedef enum { F_NAME, F_DEVICE, F_SHAPE, F_STACK, F_VAL, F_DELTA, F_PCT, F_CHANGE } ftype;

typedef struct {
    const char *header, *key;
    ftype type;
    int side;            /* F_VAL: 0 base, 1 new */
    size_t off;          /* F_VAL: an int64_t field of tr_group */
    int time;            /* F_VAL: ns */
    int (*shown)(const diff_ctx *c);   /* NULL: machine formats only */
} dcol;

static int always(const diff_ctx *c) { (void)c; return 1; }
static int with_gpu(const diff_ctx *c) { return c->has_gpu; }
static int with_shapes(const diff_ctx *c) { return c->o->group_by_shape; }
static int with_stack(const diff_ctx *c) { return c->o->group_by_stack > 0; }

#define VAL(h, k, side, field, t, shown) {h, k, F_VAL, side, offsetof(tr_group, field), t, shown}
static const dcol dcols[] = {
    {"Name", "name", F_NAME, 0, 0, 0, always},
    {NULL, "device", F_DEVICE, 0, 0, 0, NULL},
    VAL("Calls base", "base_calls", 0, count, 0, always),
    VAL("Calls new", "new_calls", 1, count, 0, always),
    VAL("Self CPU base", "base_self_cpu_ns", 0, cpu_self, 1, always),
    VAL("Self CPU new", "new_self_cpu_ns", 1, cpu_self, 1, always),
    VAL("CPU total base", "base_cpu_total_ns", 0, cpu_total, 1, always),
    VAL("CPU total new", "new_cpu_total_ns", 1, cpu_total, 1, always),
    VAL("Self CUDA base", "base_self_gpu_ns", 0, gpu_self, 1, with_gpu),
    VAL("Self CUDA new", "new_self_gpu_ns", 1, gpu_self, 1, with_gpu),
    VAL("CUDA total base", "base_gpu_total_ns", 0, gpu_total, 1, with_gpu),
    VAL("CUDA total new", "new_gpu_total_ns", 1, gpu_total, 1, with_gpu),
    {"Delta", "delta", F_DELTA, 0, 0, 0, always},
    {"Delta %", "delta_pct", F_PCT, 0, 0, 0, always},
    {"Change", "change", F_CHANGE, 0, 0, 0, always},
    {"Input Shapes", "input_shapes", F_SHAPE, 0, 0, 0, with_shapes},
    {"Stack", "stack", F_STACK, 0, 0, 0, with_stack},
};
#define NDCOLS (sizeof dcols / sizeof dcols[0])

static int64_t field_of(const drow *r, const dcol *col)
{
    int64_t v;
    memcpy(&v, (const char *)&r->v[col->side] + col->off, sizeof v);
    return v;
}

static const char *change_of(const drow *r)
{
    return !r->in[0] ? "new" : !r->in[1] ? "gone" : "";
}

/* Frames innermost first, " <- " between them; the caller frees it. */
static char *stack_text(const drow *r)
{
    size_t len = 1;
    for (size_t f = 2; key_field(r->key, r->klen, f); f++)
        len += strlen(key_field(r->key, r->klen, f)) + 4;
    char *t = malloc(len);
    if (!t)
        return NULL;
    t[0] = '\0';
    for (size_t f = 2; key_field(r->key, r->klen, f); f++) {
        if (f > 2)
            strcat(t, " <- ");
        strcat(t, key_field(r->key, r->klen, f));
    }
    return t;
}

static void fmt_time_signed(char *b, size_t n, double ns, const diff_ctx *c, int sign)
{
    char t[64];
    tr_fmt_time(t, sizeof t, US(fabs(ns)), c->o->unit);
    snprintf(b, n, "%s%s", ns < 0 ? "-" : sign && ns > 0 ? "+" : "", t);
}

/* The human cell of a column; a string that only lives until the next call. */
static const char *human_cell(char *b, size_t n, const drow *r, const dcol *col, const diff_ctx *c)
{
    switch (col->type) {
    case F_NAME: return key_field(r->key, r->klen, 0);
    case F_DEVICE: return r->key[0] == 'g' ? "gpu" : "cpu";
    case F_SHAPE: {
        const char *s = key_field(r->key, r->klen, 1);
        return *s ? s : "[]";
    }
    case F_STACK: return NULL;   /* allocated by the caller */
    case F_CHANGE: return change_of(r);
    case F_VAL:
        if (!r->in[col->side])
            return "-";
        if (col->time)
            fmt_time_signed(b, n, (double)field_of(r, col), c, 0);
        else
            snprintf(b, n, "%lld", (long long)field_of(r, col));
        return b;
    case F_DELTA:
        if (r->delta == 0)
            return "0";
        if (c->key_is_time)
            fmt_time_signed(b, n, r->delta, c, 1);
        else
            snprintf(b, n, "%+.6g", r->delta);
        return b;
    case F_PCT:
        if (isnan(r->pct))
            return "--";
        snprintf(b, n, "%+.2f%%", r->pct);
        return b;
    }
    return "";
}

static size_t cps_of(const char *s) { return tr_utf8_len(s, strlen(s)); }

static void prepare(diff_ctx *c)
{
    size_t max_name = 4, max_shape = 12;
    for (size_t i = 0; i < c->nrows; i++) {
        const char *nm = key_field(c->rows[i].key, c->rows[i].klen, 0);
        const char *sh = key_field(c->rows[i].key, c->rows[i].klen, 1);
        if (cps_of(nm) > max_name)
            max_name = cps_of(nm);
        if (cps_of(sh) > max_shape)
            max_shape = cps_of(sh);
    }
    c->name_width = (int)(max_name + 2 < NAME_MAX_WIDTH ? max_name + 2 : NAME_MAX_WIDTH);
    c->shapes_width = (int)(max_shape + 2 < SHAPES_MAX_WIDTH ? max_shape + 2 : SHAPES_MAX_WIDTH);
}

static int width_of(const dcol *col, const diff_ctx *c)
{
    switch (col->type) {
    case F_NAME: return c->name_width;
    case F_SHAPE: return c->shapes_width;
    case F_STACK: return 0;
    case F_CHANGE: return 6;
    default: return 15;
    }
}

static size_t human_columns(const diff_ctx *c, const dcol **shown)
{
    size_t n = 0;
    for (size_t i = 0; i < NDCOLS; i++)
        if (dcols[i].shown && dcols[i].shown(c))
            shown[n++] = &dcols[i];
    return n;
}

static size_t limit_rows(const diff_ctx *c)
{
    return c->o->limit >= 0 && (size_t)c->o->limit < c->nrows ? (size_t)c->o->limit : c->nrows;
}

/* The GPU total of a run's table footer (tr_summary_gpu_base()). */
static int64_t gpu_total(const tr_summary *s, const tr_analyze_opts *o)
{
    return tr_summary_gpu_base(s, o->compat_torch, NULL);
}

/* The line that compares the runs as a whole. */
static void put_totals(FILE *out, const diff_ctx *c)
{
    char a[64], b[64];
    const run_info *r = c->run;
    static const char *const labels[] = {"Self CPU time total", "Self CUDA time total", "Span"};
    for (int k = 0; k < 3; k++) {
        int64_t x = k == 0 ? r[0].s.sum_cpu_self : k == 1 ? gpu_total(&r[0].s, c->o) : r[0].last - r[0].first;
        int64_t y = k == 0 ? r[1].s.sum_cpu_self : k == 1 ? gpu_total(&r[1].s, c->o) : r[1].last - r[1].first;
        tr_fmt_time(a, sizeof a, US(x), c->o->unit);
        tr_fmt_time(b, sizeof b, US(y), c->o->unit);
        fprintf(out, "%s: %s -> %s; ", labels[k], a, b);
    }
    for (int k = 0; k < 2; k++) {
        int64_t span = r[k].last - r[k].first;
        if (span > 0)
            snprintf(k ? b : a, 64, "%.2f%%", (double)r[k].busy * 100.0 / (double)span);
        else
            snprintf(k ? b : a, 64, "--");
    }
    fprintf(out, "GPU busy: %s -> %s\n", a, b);
}

static void put_key_note(FILE *out, const diff_ctx *c)
{
    fprintf(out, "Delta: new - base of %s; rows by its absolute value, largest first\n", c->key->name);
}

static tr_status write_text(FILE *out, diff_ctx *c, tr_error *err)
{
    put_totals(out, c);
    const dcol *shown[NDCOLS];
    size_t ncols = human_columns(c, shown), nrows = limit_rows(c);
    if (!c->nrows)
        return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
    size_t line_len = 0;
    for (size_t i = 0; i < ncols; i++)
        line_len += (size_t)width_of(shown[i], c) + 2;
    char buf[8192];
    for (int pass = 0; pass < 2; pass++) {
        for (size_t i = 0; i < ncols; i++) {
            int w = width_of(shown[i], c);
            const char *h = shown[i]->header;
            if (pass == 0) {
                int pad = w > (int)strlen(h) ? w - (int)strlen(h) : 0;
                if (shown[i]->type == F_NAME || !w)
                    fprintf(out, "%s%*s  ", h, pad, "");
                else
                    fprintf(out, "%*s%s  ", pad, "", h);
            } else {
                for (int k = 0; k < (w ? w : (int)strlen(h)); k++)
                    fputc('-', out);
                fputs("  ", out);
            }
        }
        fputc('\n', out);
    }
    for (size_t r = 0; r < nrows; r++) {
        const drow *row = &c->rows[r];
        for (size_t i = 0; i < ncols; i++) {
            int w = width_of(shown[i], c);
            char *own = NULL;
            const char *cell;
            if (shown[i]->type == F_STACK) {
                if (!(own = stack_text(row)))
                    return nomem(err);
                cell = own;
            } else {
                cell = human_cell(buf, sizeof buf, row, shown[i], c);
            }
            size_t len = strlen(cell);
            if ((shown[i]->type == F_NAME || shown[i]->type == F_SHAPE) && cps_of(cell) > (size_t)w) {
                /* cut names are marked, as the table does */
                size_t keep = tr_utf8_prefix(cell, len, (size_t)(w > 3 ? w - 3 : 0));
                tr_put_text_cell(out, cell, keep);
                fputs("...  ", out);
                free(own);
                continue;
            }
            int pad = w > (int)tr_text_width(cell, len) ? w - (int)tr_text_width(cell, len) : 0;
            int left = shown[i]->type == F_NAME || shown[i]->type == F_SHAPE || shown[i]->type == F_STACK
                       || shown[i]->type == F_CHANGE;
            if (!left)
                fprintf(out, "%*s", pad, "");
            tr_put_text_cell(out, cell, len);
            fprintf(out, "%*s  ", left ? pad : 0, "");
            free(own);
        }
        fputc('\n', out);
    }
    for (size_t i = 0; i < line_len; i++)
        fputc('-', out);
    fputc('\n', out);
    put_key_note(out, c);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

static tr_status write_markdown(FILE *out, diff_ctx *c, tr_error *err)
{
    put_totals(out, c);
    fputc('\n', out);
    const dcol *shown[NDCOLS];
    size_t ncols = human_columns(c, shown), nrows = limit_rows(c);
    if (c->nrows) {
        fputc('|', out);
        for (size_t i = 0; i < ncols; i++) {
            fputc(' ', out);
            tr_put_md_cell(out, shown[i]->header, strlen(shown[i]->header));
            fputs(" |", out);
        }
        fputs("\n|", out);
        for (size_t i = 0; i < ncols; i++)
            fputs(shown[i]->type == F_VAL || shown[i]->type == F_DELTA || shown[i]->type == F_PCT
                  ? "---:|" : ":---|", out);
        fputc('\n', out);
    }
    char buf[8192];
    for (size_t r = 0; r < nrows; r++) {
        fputc('|', out);
        for (size_t i = 0; i < ncols; i++) {
            char *own = NULL;
            const char *cell = shown[i]->type == F_STACK ? (own = stack_text(&c->rows[r]))
                                                         : human_cell(buf, sizeof buf, &c->rows[r], shown[i], c);
            if (!cell)
                return nomem(err);
            fputc(' ', out);
            tr_put_md_cell(out, cell, strlen(cell));
            fputs(" |", out);
            free(own);
        }
        fputc('\n', out);
    }
    fputc('\n', out);
    put_key_note(out, c);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

static size_t machine_columns(const diff_ctx *c, const dcol **shown)
{
    size_t n = 0;
    for (size_t i = 0; i < NDCOLS; i++)
        if (!dcols[i].shown || dcols[i].shown(c))
            shown[n++] = &dcols[i];
    return n;
}

static void put_number(FILE *out, double v)
{
    if (isnan(v))
        fputs("null", out);
    else if (v == floor(v) && fabs(v) < 9e15)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.15g", v);
}

/* A machine cell: raw numbers (0 for a run without the group), text escaped by put_str. */
static tr_status machine_cell(FILE *out, const drow *r, const dcol *col, int json, tr_error *err)
{
    void (*put_str)(FILE *, const char *, size_t) = json ? tr_put_json_str : tr_put_csv_field;
    switch (col->type) {
    case F_NAME: case F_DEVICE: case F_SHAPE: case F_CHANGE: {
        char b[8];
        const char *t = human_cell(b, sizeof b, r, col, NULL);
        put_str(out, t, strlen(t));
        return TR_OK;
    }
    case F_STACK:
        if (json) {
            fputc('[', out);
            for (size_t f = 2; key_field(r->key, r->klen, f); f++) {
                if (f > 2)
                    fputc(',', out);
                tr_put_json_str(out, key_field(r->key, r->klen, f), strlen(key_field(r->key, r->klen, f)));
            }
            fputc(']', out);
        } else {
            char *t = stack_text(r);
            if (!t)
                return nomem(err);
            put_str(out, t, strlen(t));
            free(t);
        }
        return TR_OK;
    case F_VAL: fprintf(out, "%lld", (long long)field_of(r, col)); return TR_OK;
    case F_DELTA: put_number(out, r->delta); return TR_OK;
    case F_PCT:
        if (!json && isnan(r->pct))
            return TR_OK;
        put_number(out, isnan(r->pct) ? NAN : round(r->pct * 1e4) / 1e4);
        return TR_OK;
    }
    return TR_OK;
}

static tr_status write_csv(FILE *out, diff_ctx *c, tr_error *err)
{
    const dcol *shown[NDCOLS];
    size_t ncols = machine_columns(c, shown), nrows = limit_rows(c);
    for (size_t i = 0; i < ncols; i++)
        fprintf(out, "%s%s", i ? "," : "", shown[i]->key);
    fputc('\n', out);
    tr_status st = TR_OK;
    for (size_t r = 0; r < nrows && st == TR_OK; r++) {
        for (size_t i = 0; i < ncols && st == TR_OK; i++) {
            if (i)
                fputc(',', out);
            st = machine_cell(out, &c->rows[r], shown[i], 0, err);
        }
        fputc('\n', out);
    }
    if (st == TR_OK && ferror(out))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error on output");
    return st;
}

static void json_run(FILE *out, const char *label, const run_info *r)
{
    int64_t span = r->last - r->first;
    fprintf(out, "\"%s\":{\"file\":", label);
    tr_put_json_str(out, r->path, strlen(r->path));
    fprintf(out, ",\"events\":%lld,\"self_cpu_total_ns\":%lld,\"self_gpu_total_ns\":%lld,"
            "\"span_ns\":%lld,\"gpu_busy_ns\":%lld,\"gpu_busy_pct\":",
            (long long)r->s.events, (long long)r->s.sum_cpu_self, (long long)r->s.sum_gpu_self_device,
            (long long)span, (long long)r->busy);
    put_number(out, span > 0 ? round((double)r->busy * 1e6 / (double)span) / 1e4 : NAN);
    fputc('}', out);
}

static tr_status write_json(FILE *out, diff_ctx *c, tr_error *err)
{
    const dcol *shown[NDCOLS];
    size_t ncols = machine_columns(c, shown), nrows = limit_rows(c);
    fprintf(out, "{\"time_unit\":\"ns\",\"delta_of\":\"%s\",\"normalized\":%s,", c->key->name,
            c->d->normalize ? "true" : "false");
    json_run(out, "base", &c->run[0]);
    fputc(',', out);
    json_run(out, "new", &c->run[1]);
    fputs(",\"rows\":[", out);
    tr_status st = TR_OK;
    for (size_t r = 0; r < nrows && st == TR_OK; r++) {
        fputs(r ? ",\n{" : "\n{", out);
        for (size_t i = 0; i < ncols && st == TR_OK; i++) {
            fprintf(out, "%s\"%s\":", i ? "," : "", shown[i]->key);
            st = machine_cell(out, &c->rows[r], shown[i], 1, err);
        }
        fputc('}', out);
    }
    fputs("\n]}\n", out);
    if (st == TR_OK && ferror(out))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error on output");
    return st;
}

/* The diff's writers, by the name of the table's format. */
static const struct {
    const char *name;
    tr_status (*write)(FILE *out, diff_ctx *c, tr_error *err);
} writers[] = {
    {"text", write_text},
    {"csv", write_csv},
    {"json", write_json},
    {"markdown", write_markdown},
};

/* The units of the sort keys whose change is a time (the others are counts, bytes, flops). */
static int key_is_time(const tr_sort_key *k)
{
    return strstr(k->name, "time") != NULL;
}

tr_status tr_diff_run(const tr_diff_opts *d, const tr_analyze_opts *o, FILE *out, FILE *warn,
                      tr_error *err)
{
    diff_ctx c;
    memset(&c, 0, sizeof c);
    c.d = d;
    c.o = o;
    entry *e = NULL;
    size_t ne = 0;
    tr_status st = load_run(&c.run[0], d->base, o, warn, err);
    if (st == TR_OK)
        st = load_run(&c.run[1], d->new_, o, warn, err);
    if (st == TR_OK) {
        c.has_gpu = c.run[0].s.has_gpu || c.run[1].s.has_gpu;
        c.key = d->sort && d->sort->value ? d->sort
                : tr_sort_key_lookup(c.has_gpu ? "self_cuda_time_total" : "self_cpu_time_total");
        c.key_is_time = key_is_time(c.key);
        st = build_rows(&c, &e, &ne, err);
    }
    if (st == TR_OK) {
        prepare(&c);
        size_t w = 0;
        while (w < sizeof writers / sizeof writers[0] && strcmp(writers[w].name, o->format->name) != 0)
            w++;
        st = w < sizeof writers / sizeof writers[0]
             ? writers[w].write(out, &c, err)
             : tr_fail(err, TR_ERR_USAGE, "--diff has no format '%s'", o->format->name);
    }
    entries_free(e, ne);
    free(c.rows);
    tr_summary_free(&c.run[0].s);
    tr_summary_free(&c.run[1].s);
    return st;
}

tr_status tr_analyze_merged(char *const *paths, size_t n, const tr_analyze_opts *o,
                            const tr_sort_key *sort, FILE *out, FILE *warn, tr_error *err)
{
    tr_summary all, one;
    memset(&all, 0, sizeof all);
    tr_analyze_opts oo = *o;
    tr_status st = TR_OK;
    if (o->group_by_stack > 0 && o->stack_source == TR_STACK_AUTO) {
        /* one stack source for all: recorded frames when any file has them,
         * as one run.db of all the files would */
        oo.stack_source = TR_STACK_TREE;
        for (size_t i = 0; i < n && st == TR_OK; i++) {
            sqlite3 *db = NULL;
            sqlite3_stmt *q = NULL;
            st = tr_rundb_open(paths[i], &db, err);
            if (st == TR_OK && sqlite3_prepare_v2(db, "SELECT 1 FROM stack_nodes LIMIT 1", -1, &q, NULL) == SQLITE_OK
                && sqlite3_step(q) == SQLITE_ROW)
                oo.stack_source = TR_STACK_FRAMES;
            sqlite3_finalize(q);
            sqlite3_close(db);
        }
    }
    int64_t id_base = 0, rank_base = 0;
    for (size_t i = 0; i < n && st == TR_OK; i++) {
        sqlite3 *db = NULL;
        st = tr_rundb_open(paths[i], &db, err);
        if (st == TR_OK)
            st = summarize_ranked(db, &oo, rank_base, i ? &one : &all, NULL, err);
        /* event ids continue from file to file, as trace-ingest numbers the
         * files it is given together, so first-appearance ties break the same way */
        sqlite3_stmt *q = NULL;
        if (st == TR_OK) {
            tr_summary *s = i ? &one : &all;
            for (size_t k = 0; k < s->n; k++)
                s->groups[k].first_id = tr_sat_add(s->groups[k].first_id, id_base);
            if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM events", -1, &q, NULL) == SQLITE_OK
                && sqlite3_step(q) == SQLITE_ROW)
                id_base = tr_sat_add(id_base, sqlite3_column_int64(q, 0));
            sqlite3_finalize(q);
            /* the next file's sources without a rank come after this one's (lib/ranks.h) */
            q = NULL;
            if (sqlite3_prepare_v2(db, "SELECT count(*) FROM sources", -1, &q, NULL) == SQLITE_OK
                && sqlite3_step(q) == SQLITE_ROW)
                rank_base = tr_sat_add(rank_base, sqlite3_column_int64(q, 0));
            sqlite3_finalize(q);
        }
        if (db)
            sqlite3_close(db);
        if (st == TR_OK && i) {
            st = tr_summary_merge(&all, &one, err);
            tr_summary_free(&one);
        }
    }
    if (st == TR_OK) {
        oo.sort = sort ? sort : tr_sort_key_lookup(all.has_gpu ? "self_cuda_time_total" : "self_cpu_time_total");
        tr_summary_sort(&all, oo.sort);
        if (all.skipped && warn)
            fprintf(warn, "trace-analyze: warning: %lld event(s) with impossible times "
                    "(an end before the start, or out of range) left out\n", (long long)all.skipped);
        if (all.n == 0 && !all.skipped && warn)
            fprintf(warn, "trace-analyze: no events in %zu run databases\n", n);
        st = oo.format->write(out, &all, &oo, err);
    }
    tr_summary_free(&all);
    return st;
}
