/*
 * table.c - the columns of a summary and the output formats that print them.
 *
 * Each column is a row of columns[]: its PyTorch header, its key in csv/json,
 * its width and alignment in the text table, when it is shown, its formatted
 * cell and its raw value (ns, bytes, counts) for machine-readable formats.
 * The text format reproduces PyTorch 1.13's key_averages().table() layout.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "analyze/analyze.h"
#include "lib/escape.h"
#include "lib/names.h"

#define US(ns) ((double)(ns) / 1000.0)
#define NAME_MAX_WIDTH 55
#define SHAPES_MAX_WIDTH 80
#define SOURCE_MAX_WIDTH 75
#define SOURCE_EXTRA_FRAMES 4   /* PyTorch 1.13 prints the first frame and at most 4 more */

typedef struct {
    const tr_summary *s;
    const tr_analyze_opts *o;
    int name_width, shapes_width, source_width;
    int name_cap;           /* names wider than this are cut */
    size_t max_name;        /* widest name shown, in columns */
    char **display;         /* --short-names: each group's shown name, or NULL */
    double flops_scale;
    const char *flops_header;
    tr_group_stats stats;   /* of the row being printed */
} table_ctx;

typedef enum { RAW_INT, RAW_REAL, RAW_STRING, RAW_FRAMES } raw_type;

typedef struct {
    const char *header;
    const char *key;
    int width;          /* 0: computed (name, shapes, source location) */
    int left;
    int (*shown)(const table_ctx *c);
    void (*cell)(char *buf, size_t n, const tr_group *g, const table_ctx *c);
    raw_type raw;
    double (*value)(const tr_group *g, const table_ctx *c);   /* RAW_INT / RAW_REAL */
    const char *(*text)(const tr_group *g);                   /* RAW_STRING */
} column;

static int always(const table_ctx *c) { (void)c; return 1; }
static int with_gpu(const table_ctx *c) { return c->s->has_gpu; }
static int with_mem(const table_ctx *c) { return c->s->has_mem; }
static int with_gpu_mem(const table_ctx *c) { return c->s->has_mem && c->s->has_gpu_mem; }
static int with_shapes(const table_ctx *c) { return c->o->group_by_shape && c->s->has_shapes; }
static int with_source(const table_ctx *c) { return c->s->has_frames; }
static int with_flops(const table_ctx *c) { return c->s->has_flops; }
static int with_stats(const table_ctx *c) { return c->o->stats; }

static double r_count(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->count; }
static double r_cpu_self(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->cpu_self; }
static double r_cpu_total(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->cpu_total; }
static double r_cpu_avg(const tr_group *g, const table_ctx *c) { (void)c; return g->count ? (double)g->cpu_total / (double)g->count : 0; }
static double r_gpu_self(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->gpu_self; }
static double r_gpu_total(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->gpu_total; }
static double r_gpu_avg(const tr_group *g, const table_ctx *c) { (void)c; return g->count ? (double)g->gpu_total / (double)g->count : 0; }
static double r_cpu_mem(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->cpu_mem; }
static double r_cpu_mem_self(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->cpu_mem_self; }
static double r_gpu_mem(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->gpu_mem; }
static double r_gpu_mem_self(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->gpu_mem_self; }
static double r_flops(const tr_group *g, const table_ctx *c) { (void)c; return (double)g->flops; }
static double r_min(const tr_group *g, const table_ctx *c) { (void)g; return (double)c->stats.min; }
static double r_max(const tr_group *g, const table_ctx *c) { (void)g; return (double)c->stats.max; }
static double r_median(const tr_group *g, const table_ctx *c) { (void)g; return c->stats.median; }
static double r_stddev(const tr_group *g, const table_ctx *c) { (void)g; return c->stats.stddev; }
/* The denominators.  PyTorch's (--compat torch): the shown rows' self CPU time for both
 * CPU shares, the device rows' time for Self CUDA % (NaN when there are none).  Ours: a
 * filtered table's CPU total % is a share of the host time its events cover, and its
 * Self CUDA % of the GPU time its host rows launched when it has no device rows; a
 * share is then never NaN and never over 100%. */
static double cpu_total_base(const table_ctx *c)
{
    const tr_summary *s = c->s;
    if (c->o->compat_torch || !s->filtered)
        return (double)s->sum_cpu_self;
    return (double)(s->cpu_covered > s->sum_cpu_self ? s->cpu_covered : s->sum_cpu_self);
}
static double gpu_self_base(const table_ctx *c)
{
    return (double)tr_summary_gpu_base(c->s, c->o->compat_torch, NULL);
}
static double share(double x, double total, const table_ctx *c)
{
    if (total == 0)
        return c->o->compat_torch ? NAN : 0;
    double v = x * 100.0 / total;
    return !c->o->compat_torch && v > 100.0 ? 100.0 : v;
}
static double r_self_cpu_pct(const tr_group *g, const table_ctx *c)
{ return share((double)g->cpu_self, (double)c->s->sum_cpu_self, c); }
static double r_cpu_total_pct(const tr_group *g, const table_ctx *c)
{ return share((double)g->cpu_total, cpu_total_base(c), c); }
static double r_self_gpu_pct(const tr_group *g, const table_ctx *c)
{ return share((double)g->gpu_self, gpu_self_base(c), c); }
static void fmt_pct(char *b, size_t n, double v)
{
    if (isnan(v))
        snprintf(b, n, "NaN");
    else
        snprintf(b, n, "%.2f%%", v);
}
static const char *t_name(const tr_group *g) { return g->name; }
static const char *t_shape(const tr_group *g) { return g->shape_id ? g->shape : "[]"; }
static const char *t_device(const tr_group *g) { return g->on_gpu ? "gpu" : "cpu"; }

static void c_name(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (c->display) {   /* already cut to fit, and distinct */
        snprintf(b, n, "%s", c->display[g - c->s->groups]);
        return;
    }
    size_t len = strlen(g->name);
    size_t keep = c->name_cap > 3 ? (size_t)c->name_cap - 3 : 0;
    /* PyTorch also appends "..." to a name of exactly 52 characters; only cut names are
     * marked, except under --compat torch */
    size_t chars = tr_utf8_len(g->name, len);
    if (chars > keep || (c->o->compat_torch && chars == keep))
        snprintf(b, n, "%.*s...", (int)tr_utf8_prefix(g->name, len, keep), g->name);
    else
        snprintf(b, n, "%s", g->name);
}
static void c_time_of(char *b, size_t n, double ns, const table_ctx *c) { tr_fmt_time(b, n, US(ns), c->o->unit); }
static void c_self_cpu_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (c->o->compat_torch)
        tr_fmt_share(b, n, US(g->cpu_self), US(c->s->sum_cpu_self));
    else
        fmt_pct(b, n, r_self_cpu_pct(g, c));
}
static void c_self_cpu(char *b, size_t n, const tr_group *g, const table_ctx *c) { c_time_of(b, n, (double)g->cpu_self, c); }
/* PyTorch prints a bare 0 for an async span: it has no share of the self time */
static void c_cpu_total_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (g->is_async)
        snprintf(b, n, "0");
    else if (c->o->compat_torch)
        tr_fmt_share(b, n, US(g->cpu_total), US(c->s->sum_cpu_self));
    else
        fmt_pct(b, n, r_cpu_total_pct(g, c));
}
static void c_cpu_total(char *b, size_t n, const tr_group *g, const table_ctx *c) { c_time_of(b, n, (double)g->cpu_total, c); }
static void c_cpu_avg(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, g->count ? US(g->cpu_total) / (double)g->count : 0, c->o->unit); }
static void c_self_gpu(char *b, size_t n, const tr_group *g, const table_ctx *c) { c_time_of(b, n, (double)g->gpu_self, c); }
static void c_self_gpu_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (c->o->compat_torch)
        tr_fmt_share(b, n, US(g->gpu_self), US(c->s->sum_gpu_self_device));
    else
        fmt_pct(b, n, r_self_gpu_pct(g, c));
}
static void c_gpu_total(char *b, size_t n, const tr_group *g, const table_ctx *c) { c_time_of(b, n, (double)g->gpu_total, c); }
static void c_gpu_avg(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, g->count ? US(g->gpu_total) / (double)g->count : 0, c->o->unit); }
static void c_cpu_mem(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)c; tr_fmt_mem(b, n, g->cpu_mem); }
static void c_cpu_mem_self(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)c; tr_fmt_mem(b, n, g->cpu_mem_self); }
static void c_gpu_mem(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)c; tr_fmt_mem(b, n, g->gpu_mem); }
static void c_gpu_mem_self(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)c; tr_fmt_mem(b, n, g->gpu_mem_self); }
static void c_calls(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)c; snprintf(b, n, "%lld", (long long)g->count); }
static void c_min(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)g; c_time_of(b, n, (double)c->stats.min, c); }
static void c_max(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)g; c_time_of(b, n, (double)c->stats.max, c); }
static void c_median(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)g; c_time_of(b, n, c->stats.median, c); }
static void c_stddev(char *b, size_t n, const tr_group *g, const table_ctx *c) { (void)g; c_time_of(b, n, c->stats.stddev, c); }
static void c_shapes(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    const char *v = t_shape(g);
    snprintf(b, n, "%.*s", (int)tr_utf8_prefix(v, strlen(v), (size_t)c->shapes_width), v);
}
/* PyTorch's trim: keep the last W characters and mark the cut with "...". */
static void trim_frame(char *b, size_t n, const char *f, int width)
{
    size_t len = strlen(f), cps = tr_utf8_len(f, len);
    if (cps <= (size_t)width) {
        snprintf(b, n, "%s", f);
        return;
    }
    const char *tail = f + tr_utf8_prefix(f, len, cps - (size_t)width);
    if (width > 3)
        snprintf(b, n, "...%s", tail + tr_utf8_prefix(tail, strlen(tail), 3));
    else
        snprintf(b, n, "%s", tail);
}
static void c_source(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (g->nframes)
        trim_frame(b, n, g->frames[0], c->source_width);
    else
        b[0] = '\0';
}
static void c_flops(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    if (g->flops <= 0)
        snprintf(b, n, "--");
    else
        snprintf(b, n, "%8.3f", (double)g->flops * c->flops_scale);
}

static const column columns[] = {
    {"Name", "name", 0, 0, always, c_name, RAW_STRING, NULL, t_name},
    {NULL, "device", 0, 0, NULL, NULL, RAW_STRING, NULL, t_device},   /* machine formats only */
    {"Self CPU %", "self_cpu_pct", 12, 0, always, c_self_cpu_pct, RAW_REAL, r_self_cpu_pct, NULL},
    {"Self CPU", "self_cpu_ns", 12, 0, always, c_self_cpu, RAW_INT, r_cpu_self, NULL},
    {"CPU total %", "cpu_total_pct", 12, 0, always, c_cpu_total_pct, RAW_REAL, r_cpu_total_pct, NULL},
    {"CPU total", "cpu_total_ns", 12, 0, always, c_cpu_total, RAW_INT, r_cpu_total, NULL},
    {"CPU time avg", "cpu_avg_ns", 12, 0, always, c_cpu_avg, RAW_REAL, r_cpu_avg, NULL},
    {"Self CUDA", "self_gpu_ns", 12, 0, with_gpu, c_self_gpu, RAW_INT, r_gpu_self, NULL},
    {"Self CUDA %", "self_gpu_pct", 12, 0, with_gpu, c_self_gpu_pct, RAW_REAL, r_self_gpu_pct, NULL},
    {"CUDA total", "gpu_total_ns", 12, 0, with_gpu, c_gpu_total, RAW_INT, r_gpu_total, NULL},
    {"CUDA time avg", "gpu_avg_ns", 12, 0, with_gpu, c_gpu_avg, RAW_REAL, r_gpu_avg, NULL},
    {"CPU Mem", "cpu_mem_bytes", 12, 0, with_mem, c_cpu_mem, RAW_INT, r_cpu_mem, NULL},
    {"Self CPU Mem", "self_cpu_mem_bytes", 12, 0, with_mem, c_cpu_mem_self, RAW_INT, r_cpu_mem_self, NULL},
    {"CUDA Mem", "gpu_mem_bytes", 12, 0, with_gpu_mem, c_gpu_mem, RAW_INT, r_gpu_mem, NULL},
    {"Self CUDA Mem", "self_gpu_mem_bytes", 12, 0, with_gpu_mem, c_gpu_mem_self, RAW_INT, r_gpu_mem_self, NULL},
    {"# of Calls", "calls", 12, 0, always, c_calls, RAW_INT, r_count, NULL},
    {"Min", "min_ns", 12, 0, with_stats, c_min, RAW_INT, r_min, NULL},
    {"Max", "max_ns", 12, 0, with_stats, c_max, RAW_INT, r_max, NULL},
    {"Median", "median_ns", 12, 0, with_stats, c_median, RAW_REAL, r_median, NULL},
    {"Std Dev", "stddev_ns", 12, 0, with_stats, c_stddev, RAW_REAL, r_stddev, NULL},
    {"Input Shapes", "input_shapes", 0, 0, with_shapes, c_shapes, RAW_STRING, NULL, t_shape},
    {"Source Location", "stack", 0, 1, with_source, c_source, RAW_FRAMES, NULL, NULL},
    {"Total FLOPs", "flops", 12, 0, with_flops, c_flops, RAW_INT, r_flops, NULL},
};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

static int width_of(const column *col, const table_ctx *c)
{
    if (col->cell == c_name)
        return c->name_width;
    if (col->cell == c_shapes)
        return c->shapes_width;
    if (col->cell == c_source)
        return c->source_width;
    return col->width;
}

static size_t cps_of(const char *s) { return tr_text_width(s, strlen(s)); }   /* as put_cell pads */

static void prepare(table_ctx *c, const tr_summary *s, const tr_analyze_opts *o)
{
    memset(c, 0, sizeof *c);
    c->s = s;
    c->o = o;
    size_t max_name = 0, max_shape = 0, max_frame = 0;
    int64_t min_flops = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tr_group *g = &s->groups[i];
        if (cps_of(g->name) > max_name)
            max_name = cps_of(g->name);
        if (cps_of(t_shape(g)) > max_shape)
            max_shape = cps_of(t_shape(g));
        for (size_t j = 0; j < g->nframes; j++)
            if (cps_of(g->frames[j]) > max_frame)
                max_frame = cps_of(g->frames[j]);
        if (g->flops > 0 && (!min_flops || g->flops < min_flops))
            min_flops = g->flops;
    }
    c->max_name = max_name;
    c->name_cap = o->name_width > 0 ? o->name_width : NAME_MAX_WIDTH;
    c->name_width = (int)(max_name + 4 < (size_t)c->name_cap ? max_name + 4 : (size_t)c->name_cap);
    c->shapes_width = (int)(max_shape + 4 < SHAPES_MAX_WIDTH ? max_shape + 4 : SHAPES_MAX_WIDTH);
    c->source_width = (int)(max_frame + 4 < SOURCE_MAX_WIDTH ? max_frame + 4 : SOURCE_MAX_WIDTH);
    /* PyTorch's unit: that of the smallest positive value */
    static const char *const units[] = {"Total FLOPs", "Total KFLOPs", "Total MFLOPs",
                                        "Total GFLOPs", "Total TFLOPs", "Total PFLOPs"};
    int u = 0;
    if (min_flops > 0) {
        double lu = log10((double)min_flops) / 3.0;
        u = lu < 0 ? 0 : lu > 5 ? 5 : (int)floor(lu);
    }
    c->flops_header = units[u];
    c->flops_scale = pow(10, (double)u * -3.0);
}

/* ---- --short-names: shown names that fit and stay distinct ---- */

typedef struct { const char *shown, *full; size_t i; } name_ref;

static int cmp_ref(const void *a, const void *b)
{
    const name_ref *x = a, *y = b;
    int r = strcmp(x->shown, y->shown);
    return r ? r : strcmp(x->full, y->full);
}

/* Flags the groups whose shown name is that of a group with another full name
 * (rows of one name, by shape or stack, share it rightly); -1 on out of memory. */
static long find_clashes(char **shown, const tr_summary *s, unsigned char *clash)
{
    name_ref *r = malloc(s->n * sizeof *r);
    if (!r)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        r[i] = (name_ref){shown[i], s->groups[i].name, i};
    qsort(r, s->n, sizeof *r, cmp_ref);
    long n = 0;
    memset(clash, 0, s->n);
    for (size_t a = 0, b; a < s->n; a = b) {
        int mixed = 0;
        for (b = a + 1; b < s->n && !strcmp(r[b].shown, r[a].shown); b++)
            mixed |= strcmp(r[b].full, r[a].full) != 0;
        for (size_t k = a; mixed && k < b; k++, n++)
            clash[r[k].i] = 1;
    }
    free(r);
    return n;
}

static void free_display(table_ctx *c)
{
    if (!c->display)
        return;
    for (size_t i = 0; i < c->s->n; i++)
        free(c->display[i]);
    free(c->display);
    c->display = NULL;
}

static tr_status names_nomem(table_ctx *c, tr_error *err)
{
    free_display(c);
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory while shortening names");
}

/* Each group's short name, one level of template detail more wherever two
 * names would read the same; the full name where even that cannot tell them
 * apart (overloads differ only in their parameters). */
static tr_status short_names(table_ctx *c, tr_error *err)
{
    const tr_summary *s = c->s;
    c->display = calloc(s->n ? s->n : 1, sizeof *c->display);
    int *level = calloc(s->n ? s->n : 1, sizeof *level);
    unsigned char *clash = malloc(s->n ? s->n : 1);
    if (!c->display || !level || !clash) {
        free(level);
        free(clash);
        return names_nomem(c, err);
    }
    tr_status st = TR_OK;
    for (size_t i = 0; i < s->n && st == TR_OK; i++)
        if (!(c->display[i] = tr_short_name(s->groups[i].name, 0)))
            st = names_nomem(c, err);
    long n = 0;
    int full = 0;
    for (int round = 0; st == TR_OK && (n = find_clashes(c->display, s, clash)) > 0; round++) {
        int changed = 0;
        full |= round >= 16;
        for (size_t i = 0; i < s->n && st == TR_OK; i++) {
            if (!clash[i])
                continue;
            char *t = full ? strdup(s->groups[i].name) : tr_short_name(s->groups[i].name, ++level[i]);
            if (!t) {
                st = names_nomem(c, err);
                break;
            }
            changed |= strcmp(t, c->display[i]) != 0;
            free(c->display[i]);
            c->display[i] = t;
        }
        if (!changed && full)
            break;
        full |= !changed;
    }
    if (st == TR_OK && n < 0)
        st = names_nomem(c, err);
    if (st == TR_OK) {
        c->max_name = 0;
        for (size_t i = 0; i < s->n; i++)
            if (cps_of(c->display[i]) > c->max_name)
                c->max_name = cps_of(c->display[i]);
    }
    free(level);
    free(clash);
    return st;
}

static const char ellipsis[] = "\xe2\x80\xa6";   /* one column where "..." takes three */

/* s cut to `head` code points, the ellipsis, the last `tail` code points and a suffix. */
static char *cut_name(const char *s, size_t head, size_t tail, const char *suffix)
{
    size_t len = strlen(s), cps = tr_utf8_len(s, len);
    size_t hb = tr_utf8_prefix(s, len, head);
    size_t tb = tail < cps ? tr_utf8_prefix(s, len, cps - tail) : 0;
    size_t n = hb + sizeof ellipsis + (len - tb) + strlen(suffix);
    char *out = malloc(n);
    if (out)
        snprintf(out, n, "%.*s%s%s%s", (int)hb, s, ellipsis, s + tb, suffix);
    return out;
}

/* Names wider than the column lose their end; those that would then read the
 * same keep both ends instead, and any still alike are numbered. */
static tr_status fit_names(table_ctx *c, tr_error *err)
{
    const tr_summary *s = c->s;
    size_t w = (size_t)(c->name_cap > 8 ? c->name_cap : 8);
    char **cut = calloc(s->n ? s->n : 1, sizeof *cut);
    unsigned char *clash = malloc(s->n ? s->n : 1);
    tr_status st = cut && clash ? TR_OK : TR_ERR_RUNTIME;
    for (size_t i = 0; i < s->n && st == TR_OK; i++) {
        const char *d = c->display[i];
        if (!(cut[i] = cps_of(d) > w ? cut_name(d, w - 1, 0, "") : strdup(d)))
            st = TR_ERR_RUNTIME;
    }
    for (int pass = 1; pass <= 2 && st == TR_OK; pass++) {
        long n = find_clashes(cut, s, clash);
        if (n <= 0) {
            st = n < 0 ? TR_ERR_RUNTIME : TR_OK;
            break;
        }
        size_t ord = 0;
        for (size_t i = 0; i < s->n && st == TR_OK; i++) {
            if (!clash[i] || cps_of(c->display[i]) <= w)
                continue;
            char num[32] = "";
            if (pass == 2)
                snprintf(num, sizeof num, "~%zu", ++ord);
            size_t room = w - 1 - strlen(num);
            char *t = cut_name(c->display[i], (room + 1) / 2, room / 2, num);
            if (!t)
                st = TR_ERR_RUNTIME;
            free(cut[i]);
            cut[i] = t;
        }
    }
    for (size_t i = 0; cut && i < s->n; i++) {
        if (st == TR_OK) {
            free(c->display[i]);
            c->display[i] = cut[i];
        } else {
            free(cut[i]);
        }
    }
    free(cut);
    free(clash);
    return st == TR_OK ? TR_OK : names_nomem(c, err);
}

/* 1 when two different names of the first `rows` groups read the same once cut
 * (what --short-names is for); 0 also when that cannot be known for lack of memory. */
static int names_alike(const table_ctx *c, size_t rows)
{
    tr_summary view = *c->s;
    view.n = rows;
    char **cut = calloc(rows ? rows : 1, sizeof *cut);
    unsigned char *clash = malloc(rows ? rows : 1);
    long n = cut && clash ? 0 : -1;
    char cell[8192];
    for (size_t i = 0; i < rows && n == 0; i++) {
        c_name(cell, sizeof cell, &view.groups[i], c);
        if (!(cut[i] = strdup(cell)))
            n = -1;
    }
    if (n == 0)
        n = find_clashes(cut, &view, clash);
    for (size_t i = 0; cut && i < rows; i++)
        free(cut[i]);
    free(cut);
    free(clash);
    return n > 0;
}

/* The Name column's limit: --name-width, else on a terminal the room the other
 * columns leave (never less than PyTorch's 55), else 55 as PyTorch prints. */
static int terminal_columns(FILE *out)
{
    if (!isatty(fileno(out)))
        return 0;
    struct winsize ws;
    if (ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *env = getenv("COLUMNS");
    long v = env ? strtol(env, NULL, 10) : 0;
    return v > 0 && v < 100000 ? (int)v : 0;
}

static void set_name_cap(table_ctx *c, int cap)
{
    c->name_cap = cap;
    c->name_width = (int)(c->max_name + 4 < (size_t)cap ? c->max_name + 4 : (size_t)cap);
}

static const char *header_of(const column *col, const table_ctx *c)
{
    return col->cell == c_flops ? c->flops_header : col->header;
}

/* Pads by code points, as Python's str.format does. */
static void put_cell(FILE *out, const char *text, int width, int left)
{
    /* control characters as one-column pictures: a name cannot break the row */
    size_t len = strlen(text), cps = tr_text_width(text, len);
    int pad = width > (int)cps ? width - (int)cps : 0;
    if (!left)
        fprintf(out, "%*s", pad, "");
    tr_put_text_cell(out, text, len);
    fprintf(out, "%*s  ", left ? pad : 0, "");
}

static size_t shown_columns(const table_ctx *c, const column **shown)
{
    size_t n = 0;
    for (size_t i = 0; i < NCOLUMNS; i++) {
        if (!columns[i].shown)
            continue;
        if (columns[i].shown(c))
            shown[n++] = &columns[i];
    }
    return n;
}

/* The groups to print, in order: at most --limit, without those --compat torch
 * --top-level leaves out (analyze.h, tr_group.hidden).  NULL when out of memory. */
static const tr_group **rows_to_show(const tr_summary *s, const tr_analyze_opts *o, size_t *nrows)
{
    const tr_group **rows = malloc((s->n ? s->n : 1) * sizeof *rows);
    size_t n = 0;
    for (size_t r = 0; rows && r < s->n && (o->limit < 0 || (long)n < o->limit); r++)
        if (!s->groups[r].hidden)
            rows[n++] = &s->groups[r];
    *nrows = n;
    return rows;
}

static void put_separator(FILE *out, const column *const *shown, size_t ncols, const table_ctx *c)
{
    for (size_t i = 0; i < ncols; i++) {
        for (int k = 0; k < width_of(shown[i], c); k++)
            fputc('-', out);
        fputs("  ", out);
    }
    fputc('\n', out);
}

static void put_footer(FILE *out, const tr_summary *s, const tr_analyze_opts *o)
{
    char buf[64];
    tr_fmt_time(buf, sizeof buf, US(s->sum_cpu_self), o->unit);
    fprintf(out, "Self CPU time total: %s\n", buf);
    if (s->has_gpu) {
        int launched;
        int64_t gpu = tr_summary_gpu_base(s, o->compat_torch, &launched);
        tr_fmt_time(buf, sizeof buf, US(gpu), o->unit);
        fprintf(out, "Self CUDA time total: %s%s\n", buf, launched ? " (launched by the rows shown)" : "");
    }
    if (s->filtered && !o->compat_torch) {
        char cov[64];
        int64_t base = s->cpu_covered > s->sum_cpu_self ? s->cpu_covered : s->sum_cpu_self;
        tr_fmt_time(cov, sizeof cov, US(base), o->unit);
        fprintf(out, "Percentages are of the %lld events shown; CPU total %% of the %s their "
                "spans cover\n", (long long)s->events, cov);
    }
    if (s->unattributed && !o->compat_torch) {
        static const char *const why[] = {"no correlation in the source",
                                          "launched before the capture window", "correlation not found"};
        const int64_t n[] = {s->unattributed_no_corr, s->unattributed_before, s->unattributed_not_found};
        int row = 0;   /* a table of device kinds only has none */
        for (size_t i = 0; i < s->n && !row; i++)
            row = !s->groups[i].on_gpu && !strcmp(s->groups[i].name, TR_NO_LAUNCH_ROW);
        tr_fmt_time(buf, sizeof buf, US(s->unattributed_ns), o->unit);
        fprintf(out, "%lld GPU activities (%s) have no launching call%s:", (long long)s->unattributed,
                buf, row ? " (row " TR_NO_LAUNCH_ROW ")" : "");
        for (size_t i = 0, k = 0; i < sizeof n / sizeof n[0]; i++)
            if (n[i])
                fprintf(out, "%s %lld %s", k++ ? "," : "", (long long)n[i], why[i]);
        fputc('\n', out);
    }
}

/* Fills cells[i], the column whose cell the i-th shown column prints, and returns the
 * column the frames below the first go in.  Each column prints its own, except under
 * --compat torch with both Source Location and FLOPs: PyTorch 1.13 lists the headers in
 * that order but the cells as FLOPs, then the frame, and puts the further frames in the
 * last column, so each prints under the other's header (SEMANTICS.md, defect 13). */
static size_t cells_of(const table_ctx *c, const column *const *shown, size_t ncols,
                       const column **cells)
{
    size_t source = ncols, flops = ncols;
    for (size_t i = 0; i < ncols; i++) {
        cells[i] = shown[i];
        if (shown[i]->cell == c_source)
            source = i;
        else if (shown[i]->cell == c_flops)
            flops = i;
    }
    if (!c->o->compat_torch || source == ncols || flops == ncols)
        return source;
    cells[source] = shown[flops];
    cells[flops] = shown[source];
    return ncols - 1;
}

tr_status tr_print_table(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err)
{
    if (s->n == 0)
        return TR_OK;
    table_ctx c;
    prepare(&c, s, o);
    if (o->short_names && short_names(&c, err) != TR_OK)
        return TR_ERR_RUNTIME;
    const column *shown[NCOLUMNS];
    size_t ncols = shown_columns(&c, shown);
    int cols = o->name_width > 0 || o->compat_torch ? 0 : terminal_columns(out);
    if (cols) {
        int others = 0;
        for (size_t i = 0; i < ncols; i++)
            others += shown[i]->cell == c_name ? 2 : width_of(shown[i], &c) + 2;
        set_name_cap(&c, cols - others > NAME_MAX_WIDTH ? cols - others : NAME_MAX_WIDTH);
    } else {
        set_name_cap(&c, c.name_cap);
    }
    if (c.display && fit_names(&c, err) != TR_OK)
        return TR_ERR_RUNTIME;
    if (o->names_alike && !c.display)
        *o->names_alike = names_alike(&c, o->limit >= 0 && (size_t)o->limit < s->n ? (size_t)o->limit : s->n);
    size_t line_len = 0;
    for (size_t i = 0; i < ncols; i++)
        line_len += (size_t)width_of(shown[i], &c) + (i ? 2 : 0);

    if (o->select && o->select->top_level) {
        for (size_t i = 0; i < line_len; i++)
            fputc('=', out);
        fprintf(out, "\nThis report only display top-level ops statistics\n");
    }
    put_separator(out, shown, ncols, &c);
    for (size_t i = 0; i < ncols; i++)
        put_cell(out, header_of(shown[i], &c), width_of(shown[i], &c), shown[i]->left);
    fputc('\n', out);
    put_separator(out, shown, ncols, &c);
    const column *cells[NCOLUMNS];   /* whose cell each column prints */
    size_t frames_at = cells_of(&c, shown, ncols, cells);
    size_t nrows;
    const tr_group **rows = rows_to_show(s, o, &nrows);
    if (!rows) {
        free_display(&c);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    char cell[8192];
    for (size_t r = 0; r < nrows; r++) {
        const tr_group *g = rows[r];
        if (o->stats)
            tr_group_stats_get(g, &c.stats);
        for (size_t i = 0; i < ncols; i++) {
            cells[i]->cell(cell, sizeof cell, g, &c);
            put_cell(out, cell, width_of(shown[i], &c), shown[i]->left);
        }
        fputc('\n', out);
        if (!s->has_frames)
            continue;
        /* more frames under the first, in the Source Location column, then a spacer row */
        for (size_t f = 1; f < g->nframes && f <= SOURCE_EXTRA_FRAMES; f++) {
            for (size_t i = 0; i < ncols; i++) {
                cell[0] = '\0';
                if (i == frames_at)
                    trim_frame(cell, sizeof cell, g->frames[f], c.source_width);
                put_cell(out, cell, width_of(shown[i], &c), shown[i]->left);
            }
            fputc('\n', out);
        }
        for (size_t i = 0; i < ncols; i++)
            put_cell(out, "", width_of(shown[i], &c), shown[i]->left);
        fputc('\n', out);
    }
    free(rows);
    put_separator(out, shown, ncols, &c);
    put_footer(out, s, o);
    free_display(&c);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

/* ---- machine-readable formats: every column with data, raw numbers ---- */

static void json_string(FILE *out, const char *s) { tr_put_json_str(out, s, strlen(s)); }

static void csv_string(FILE *out, const char *s) { tr_put_csv_field(out, s, strlen(s)); }

static void number(FILE *out, const column *col, double v)
{
    if (isnan(v))
        fputs("null", out);
    else if (col->raw == RAW_INT)
        fprintf(out, "%.0f", v);
    else
        fprintf(out, "%.15g", v);
}

static size_t machine_columns(const table_ctx *c, const column **shown)
{
    size_t n = 0;
    for (size_t i = 0; i < NCOLUMNS; i++) {
        if (!columns[i].shown || columns[i].shown(c))   /* rows without a test are machine-only */
            shown[n++] = &columns[i];
    }
    return n;
}

static tr_status write_csv(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err)
{
    table_ctx c;
    prepare(&c, s, o);
    const column *shown[NCOLUMNS];
    size_t ncols = machine_columns(&c, shown);
    size_t nrows;
    const tr_group **rows = rows_to_show(s, o, &nrows);
    if (!rows)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    for (size_t i = 0; i < ncols; i++)
        fprintf(out, "%s%s", i ? "," : "", shown[i]->key);
    fputc('\n', out);
    for (size_t r = 0; r < nrows; r++) {
        const tr_group *g = rows[r];
        if (o->stats)
            tr_group_stats_get(g, &c.stats);
        for (size_t i = 0; i < ncols; i++) {
            if (i)
                fputc(',', out);
            if (shown[i]->raw == RAW_STRING) {
                csv_string(out, shown[i]->text(g));
            } else if (shown[i]->raw == RAW_FRAMES) {
                /* frames innermost first, separated by " <- " */
                size_t len = 1;
                for (size_t f = 0; f < g->nframes; f++)
                    len += strlen(g->frames[f]) + 4;
                char *joined = malloc(len);
                if (!joined) {
                    free(rows);
                    return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
                }
                joined[0] = '\0';
                for (size_t f = 0; f < g->nframes; f++) {
                    if (f)
                        strcat(joined, " <- ");
                    strcat(joined, g->frames[f]);
                }
                csv_string(out, joined);
                free(joined);
            } else {
                double v = shown[i]->value(g, &c);
                if (!isnan(v))
                    number(out, shown[i], v);
            }
        }
        fputc('\n', out);
    }
    free(rows);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

static tr_status write_json(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err)
{
    table_ctx c;
    prepare(&c, s, o);
    const column *shown[NCOLUMNS];
    size_t ncols = machine_columns(&c, shown);
    fprintf(out, "{\"time_unit\":\"ns\",\"events\":%lld,\"self_cpu_total_ns\":%lld,\"self_gpu_total_ns\":%lld,",
            (long long)s->events, (long long)s->sum_cpu_self, (long long)s->sum_gpu_self_device);
    if (s->stack_source)
        fprintf(out, "\"stack_source\":\"%s\",", s->stack_source);
    fprintf(out, "\"no_launching_call\":{\"activities\":%lld,\"gpu_ns\":%lld,\"no_correlation\":%lld,"
            "\"before_capture\":%lld,\"correlation_not_found\":%lld},", (long long)s->unattributed,
            (long long)s->unattributed_ns, (long long)s->unattributed_no_corr,
            (long long)s->unattributed_before, (long long)s->unattributed_not_found);
    size_t nrows;
    const tr_group **rows = rows_to_show(s, o, &nrows);
    if (!rows)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    fputs("\"rows\":[", out);
    for (size_t r = 0; r < nrows; r++) {
        const tr_group *g = rows[r];
        if (o->stats)
            tr_group_stats_get(g, &c.stats);
        fputs(r ? ",\n{" : "\n{", out);
        for (size_t i = 0; i < ncols; i++) {
            fprintf(out, "%s\"%s\":", i ? "," : "", shown[i]->key);
            if (shown[i]->raw == RAW_STRING) {
                json_string(out, shown[i]->text(g));
            } else if (shown[i]->raw == RAW_FRAMES) {
                fputc('[', out);
                for (size_t f = 0; f < g->nframes; f++) {
                    if (f)
                        fputc(',', out);
                    json_string(out, g->frames[f]);
                }
                fputc(']', out);
            } else {
                number(out, shown[i], shown[i]->value(g, &c));
            }
        }
        fputc('}', out);
    }
    fputs("\n]}\n", out);
    free(rows);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

static void md_cell(FILE *out, const char *s) { tr_put_md_cell(out, s, strlen(s)); }

static tr_status write_markdown(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err)
{
    if (s->n == 0)
        return TR_OK;
    table_ctx c;
    prepare(&c, s, o);
    if (o->short_names && short_names(&c, err) != TR_OK)
        return TR_ERR_RUNTIME;
    const column *shown[NCOLUMNS];
    size_t ncols = shown_columns(&c, shown);
    fputc('|', out);
    for (size_t i = 0; i < ncols; i++) {
        fputc(' ', out);
        md_cell(out, header_of(shown[i], &c));
        fputs(" |", out);
    }
    fputs("\n|", out);
    for (size_t i = 0; i < ncols; i++)
        fputs(shown[i]->left || shown[i]->cell == c_name ? ":---|" : "---:|", out);
    fputc('\n', out);
    size_t nrows;
    const tr_group **rows = rows_to_show(s, o, &nrows);
    if (!rows) {
        free_display(&c);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    char cell[8192];
    for (size_t r = 0; r < nrows; r++) {
        const tr_group *g = rows[r];
        if (o->stats)
            tr_group_stats_get(g, &c.stats);
        fputc('|', out);
        for (size_t i = 0; i < ncols; i++) {
            if (shown[i]->cell == c_name)
                snprintf(cell, sizeof cell, "%s", c.display ? c.display[g - s->groups] : g->name);   /* not cut */
            else
                shown[i]->cell(cell, sizeof cell, g, &c);
            fputc(' ', out);
            md_cell(out, cell);
            fputs(" |", out);
        }
        fputc('\n', out);
    }
    free(rows);
    fputc('\n', out);
    put_footer(out, s, o);
    free_display(&c);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}

const tr_output_format tr_output_formats[] = {
    {"text", tr_print_table},
    {"csv", write_csv},
    {"json", write_json},
    {"markdown", write_markdown},
};
const size_t tr_noutput_formats = sizeof tr_output_formats / sizeof tr_output_formats[0];

const tr_output_format *tr_output_format_lookup(const char *name)
{
    for (size_t i = 0; i < tr_noutput_formats; i++)
        if (strcmp(tr_output_formats[i].name, name) == 0)
            return &tr_output_formats[i];
    return NULL;
}
