/*
 * table.c - the key_averages().table() layout: each column is a row of
 * `columns[]` (header, width, alignment, when it is shown, how a cell reads).
 */
#include <string.h>

#include "analyze/analyze.h"

#define US(ns) ((double)(ns) / 1000.0)
#define NAME_MAX_WIDTH 55
#define SHAPES_MAX_WIDTH 80

typedef struct {
    const tr_summary *s;
    const tr_analyze_opts *o;
    int name_width, shapes_width;
} table_ctx;

typedef struct {
    const char *header;
    int width;          /* 0: computed (name, shapes) */
    int left;           /* left-aligned */
    int (*shown)(const table_ctx *c);
    void (*cell)(char *buf, size_t n, const tr_group *g, const table_ctx *c);
} column;

static int always(const table_ctx *c) { (void)c; return 1; }
static int with_gpu(const table_ctx *c) { return c->s->has_gpu; }
static int with_mem(const table_ctx *c) { return c->s->has_mem; }
static int with_gpu_mem(const table_ctx *c)
{
    for (size_t i = 0; i < c->s->n; i++)
        if (c->s->groups[i].gpu_mem_self > 0)
            return c->s->has_mem;
    return 0;
}
static int with_shapes(const table_ctx *c) { return c->o->group_by_shape && c->s->has_shapes; }

static void c_name(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    size_t len = strlen(g->name), cps = tr_utf8_len(g->name, len);
    size_t keep = (size_t)NAME_MAX_WIDTH - 3;
    /* PyTorch also appends "..." to a name of exactly 52 characters; we only
     * mark names that were really cut. */
    (void)c;
    if (cps > keep)
        snprintf(b, n, "%.*s...", (int)tr_utf8_prefix(g->name, len, keep), g->name);
    else
        snprintf(b, n, "%s", g->name);
}
static void c_self_cpu_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_share(b, n, US(g->cpu_self), US(c->s->sum_cpu_self)); }
static void c_self_cpu(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, US(g->cpu_self), c->o->unit); }
static void c_cpu_total_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_share(b, n, US(g->cpu_total), US(c->s->sum_cpu_self)); }
static void c_cpu_total(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, US(g->cpu_total), c->o->unit); }
static void c_cpu_avg(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, g->count ? US(g->cpu_total) / (double)g->count : 0, c->o->unit); }
static void c_self_gpu(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, US(g->gpu_self), c->o->unit); }
static void c_self_gpu_pct(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_share(b, n, US(g->gpu_self), US(c->s->sum_gpu_self_device)); }
static void c_gpu_total(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, US(g->gpu_total), c->o->unit); }
static void c_gpu_avg(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ tr_fmt_time(b, n, g->count ? US(g->gpu_total) / (double)g->count : 0, c->o->unit); }
static void c_cpu_mem(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ (void)c; tr_fmt_mem(b, n, g->cpu_mem); }
static void c_cpu_mem_self(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ (void)c; tr_fmt_mem(b, n, g->cpu_mem_self); }
static void c_gpu_mem(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ (void)c; tr_fmt_mem(b, n, g->gpu_mem); }
static void c_gpu_mem_self(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ (void)c; tr_fmt_mem(b, n, g->gpu_mem_self); }
static void c_calls(char *b, size_t n, const tr_group *g, const table_ctx *c)
{ (void)c; snprintf(b, n, "%lld", (long long)g->count); }
static void c_shapes(char *b, size_t n, const tr_group *g, const table_ctx *c)
{
    const char *v = g->shape_id ? g->shape : "[]";
    size_t len = strlen(v);
    snprintf(b, n, "%.*s", (int)tr_utf8_prefix(v, len, (size_t)c->shapes_width), v);
}

static const column columns[] = {
    {"Name", 0, 0, always, c_name},
    {"Self CPU %", 12, 0, always, c_self_cpu_pct},
    {"Self CPU", 12, 0, always, c_self_cpu},
    {"CPU total %", 12, 0, always, c_cpu_total_pct},
    {"CPU total", 12, 0, always, c_cpu_total},
    {"CPU time avg", 12, 0, always, c_cpu_avg},
    {"Self CUDA", 12, 0, with_gpu, c_self_gpu},
    {"Self CUDA %", 12, 0, with_gpu, c_self_gpu_pct},
    {"CUDA total", 12, 0, with_gpu, c_gpu_total},
    {"CUDA time avg", 12, 0, with_gpu, c_gpu_avg},
    {"CPU Mem", 12, 0, with_mem, c_cpu_mem},
    {"Self CPU Mem", 12, 0, with_mem, c_cpu_mem_self},
    {"CUDA Mem", 12, 0, with_gpu_mem, c_gpu_mem},
    {"Self CUDA Mem", 12, 0, with_gpu_mem, c_gpu_mem_self},
    {"# of Calls", 12, 0, always, c_calls},
    {"Input Shapes", 0, 0, with_shapes, c_shapes},
};
#define NCOLUMNS (sizeof columns / sizeof columns[0])

static int width_of(const column *col, const table_ctx *c)
{
    if (col->cell == c_name)
        return c->name_width;
    if (col->cell == c_shapes)
        return c->shapes_width;
    return col->width;
}

/* Pads by code points, as Python's str.format does. */
static void put_cell(FILE *out, const char *text, int width, int left)
{
    size_t cps = tr_utf8_len(text, strlen(text));
    int pad = width > (int)cps ? width - (int)cps : 0;
    if (left)
        fprintf(out, "%s%*s  ", text, pad, "");
    else
        fprintf(out, "%*s%s  ", pad, "", text);
}

tr_status tr_print_table(FILE *out, const tr_summary *s, const tr_analyze_opts *o, tr_error *err)
{
    (void)err;
    if (s->n == 0)
        return TR_OK;
    table_ctx c = {s, o, 0, 0};
    size_t max_name = 0, max_shape = 0;
    for (size_t i = 0; i < s->n; i++) {
        size_t l = tr_utf8_len(s->groups[i].name, strlen(s->groups[i].name));
        if (l > max_name)
            max_name = l;
        const char *sh = s->groups[i].shape_id ? s->groups[i].shape : "[]";
        l = tr_utf8_len(sh, strlen(sh));
        if (l > max_shape)
            max_shape = l;
    }
    c.name_width = (int)(max_name + 4 < NAME_MAX_WIDTH ? max_name + 4 : NAME_MAX_WIDTH);
    c.shapes_width = (int)(max_shape + 4 < SHAPES_MAX_WIDTH ? max_shape + 4 : SHAPES_MAX_WIDTH);

    const column *shown[NCOLUMNS];
    size_t ncols = 0;
    for (size_t i = 0; i < NCOLUMNS; i++)
        if (columns[i].shown(&c))
            shown[ncols++] = &columns[i];

    char sep[4096];
    size_t sl = 0;
    for (size_t i = 0; i < ncols && sl + 300 < sizeof sep; i++) {
        int w = width_of(shown[i], &c);
        memset(sep + sl, '-', (size_t)w);
        sl += (size_t)w;
        sep[sl++] = ' ';
        sep[sl++] = ' ';
    }
    sep[sl] = '\0';

    fprintf(out, "%s\n", sep);
    for (size_t i = 0; i < ncols; i++)
        put_cell(out, shown[i]->header, width_of(shown[i], &c), shown[i]->left);
    fprintf(out, "\n%s\n", sep);
    char cell[8192];
    for (size_t r = 0; r < s->n; r++) {
        if (o->limit >= 0 && (long)r >= o->limit)
            break;
        for (size_t i = 0; i < ncols; i++) {
            shown[i]->cell(cell, sizeof cell, &s->groups[r], &c);
            put_cell(out, cell, width_of(shown[i], &c), shown[i]->left);
        }
        fputc('\n', out);
    }
    fprintf(out, "%s\n", sep);
    char buf[64];
    tr_fmt_time(buf, sizeof buf, US(s->sum_cpu_self), o->unit);
    fprintf(out, "Self CPU time total: %s\n", buf);
    if (s->has_gpu) {
        tr_fmt_time(buf, sizeof buf, US(s->sum_gpu_self_device), o->unit);
        fprintf(out, "Self CUDA time total: %s\n", buf);
    }
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error on output") : TR_OK;
}
