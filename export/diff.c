/*
 * diff.c - two runs' stacks side by side: "stack BASE NEW" lines, and a
 * flamegraph of the new run coloured by change.
 *
 * The runs' frame trees come from separate files, so only their text can
 * join them: each tree becomes folded lines, sorted frame by frame (';' sorts
 * before every other byte, so the lines under one frame are contiguous), and
 * the two sorted lists are merged.  The flamegraph's tree is rebuilt from the
 * merged lines by walking them in that order, as flamegraph.pl does.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/normalize.h"
#include "export/diff.h"
#include "export/scan.h"
#include "lib/checked.h"
#include "lib/rundb.h"

#define FRAME_H 16
#define PAD_X 10
#define PAD_TOP 56
#define PAD_BOTTOM 36
#define CHAR_W 7.0
#define LABEL_MAX 1024
#define TITLE_MAX (64 * 1024)
#define TITLE_BUDGET (16 * 1024 * 1024)

typedef struct {
    char *path;
    size_t len;
    int64_t v[2];   /* base, new */
} dline;

static tr_status nomem(tr_error *err) { return tr_fail(err, TR_ERR_RUNTIME, "out of memory"); }

/* Byte order with ';' first: a frame's lines stay together. */
static int cmp_path(const char *a, size_t al, const char *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    for (size_t i = 0; i < n; i++) {
        unsigned x = (unsigned char)a[i], y = (unsigned char)b[i];
        if (x == y)
            continue;
        x = x == ';' ? 0 : x;
        y = y == ';' ? 0 : y;
        return x < y ? -1 : 1;
    }
    return (al > bl) - (al < bl);
}

static int cmp_line(const void *pa, const void *pb)
{
    const dline *a = pa, *b = pb;
    return cmp_path(a->path, a->len, b->path, b->len);
}

/* A frame as it is compared: with --diff-normalize (ctx points to 1), by the
 * rule of analyze/normalize.h (template numbers, ProfilerStep#N). */
static int put_frame(FILE *f, const char *name, size_t len, void *ctx)
{
    if (*(const int *)ctx && !memchr(name, '\0', len)) {
        char *n = tr_diff_normalize_name(name);
        if (!n)
            return -1;
        tr_put_folded_frame(f, n, strlen(n));
        free(n);
        return 0;
    }
    tr_put_folded_frame(f, name, len);
    return 0;
}

static void lines_free(dline *l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i].path);
    free(l);
}

/* Sorts lines by path and sums the values (both sides) of equal paths into
 * one line (two stacks can escape to the same text; a folded file may repeat a
 * stack); returns the count left. */
static size_t sort_merge(dline *l, size_t k)
{
    if (k == 0)
        return 0;
    qsort(l, k, sizeof *l, cmp_line);
    size_t w = 0;
    for (size_t i = 0; i < k; i++) {
        if (w && !cmp_line(&l[w - 1], &l[i])) {
            tr_sat_acc(&l[w - 1].v[0], l[i].v[0]);
            tr_sat_acc(&l[w - 1].v[1], l[i].v[1]);
            free(l[i].path);
            continue;
        }
        l[w++] = l[i];
    }
    return w;
}

/* One run's non-zero stacks as sorted, merged lines; side picks v[0] or v[1]. */
static tr_status run_lines(tr_scan *sc, int m, int side, int normalize, dline **out, size_t *nout,
                           tr_error *err)
{
    size_t n = 0;
    for (size_t i = 1; i < sc->nnodes; i++)
        n += sc->nodes[i].v[m] != 0;
    dline *l = calloc(n ? n : 1, sizeof *l);
    if (!l)
        return nomem(err);
    size_t k = 0;
    for (size_t i = 1; i < sc->nnodes; i++) {
        if (!sc->nodes[i].v[m])
            continue;
        FILE *f = open_memstream(&l[k].path, &l[k].len);
        if (!f) {
            lines_free(l, k);
            return nomem(err);
        }
        int bad = tr_scan_put_path(f, sc, (uint32_t)i, put_frame, &normalize);
        k++;
        if (fclose(f) != 0 || bad) {
            lines_free(l, k);
            return nomem(err);
        }
        l[k - 1].v[side] = sc->nodes[i].v[m];
    }
    *out = l;
    *nout = sort_merge(l, k);
    return TR_OK;
}

static dline *join(dline *a, size_t na, dline *b, size_t nb, size_t *n)
{
    dline *j = calloc(na + nb + 1, sizeof *j);
    if (!j)
        return NULL;
    size_t i = 0, k = 0, o = 0;
    while (i < na || k < nb) {
        int c = i == na ? 1 : k == nb ? -1 : cmp_line(&a[i], &b[k]);
        if (c < 0) {
            j[o++] = a[i++];
        } else if (c > 0) {
            j[o++] = b[k++];
        } else {
            j[o] = a[i++];
            j[o++].v[1] = b[k].v[1];
            free(b[k++].path);
        }
    }
    *n = o;
    return j;
}

/* ---- the differential flamegraph ---- */

typedef struct {
    uint32_t parent, first_child, last_child, next_sibling;
    const char *name;
    size_t name_len;
    int64_t own[2], w[2];
    int64_t x;
    uint32_t depth;
} dnode;

typedef struct {
    dnode *n;
    size_t nn, cap;
} dtree;

static int64_t add_node(dtree *t, uint32_t parent, const char *name, size_t len)
{
    if (t->nn == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 1024;
        if (nc > UINT32_MAX)
            return -1;
        dnode *nn = realloc(t->n, nc * sizeof *nn);
        if (!nn)
            return -1;
        t->n = nn;
        t->cap = nc;
    }
    uint32_t id = (uint32_t)t->nn++;
    dnode *d = &t->n[id];
    memset(d, 0, sizeof *d);
    d->parent = parent;
    d->name = name;
    d->name_len = len;
    if (id) {
        dnode *p = &t->n[parent];
        d->depth = p->depth + 1;
        if (p->last_child)
            t->n[p->last_child].next_sibling = id;
        else
            p->first_child = id;
        p->last_child = id;
    }
    return id;
}

/* Lines in frame order make a tree by keeping the open path: a line shares
 * its leading frames with the path before it, and opens the rest. */
static tr_status build_tree(dtree *t, const dline *l, size_t n, tr_error *err)
{
    uint32_t *open = NULL;
    size_t depth = 0, cap = 0;
    if (add_node(t, 0, "all", 3) < 0)
        return nomem(err);
    tr_status st = TR_OK;
    for (size_t i = 0; i < n && st == TR_OK; i++) {
        size_t d = 0, pos = 0;
        uint32_t cur = 0;
        while (pos <= l[i].len) {
            const char *f = l[i].path + pos;
            size_t fl = strcspn(f, ";");
            if (pos + fl > l[i].len)
                fl = l[i].len - pos;
            if (d < depth && t->n[open[d]].name_len == fl && !memcmp(t->n[open[d]].name, f, fl)) {
                cur = open[d];
            } else {
                depth = d;   /* the rest of the old path is closed */
                int64_t id = add_node(t, cur, f, fl);
                if (id >= 0 && depth == cap) {
                    size_t nc = cap ? cap * 2 : 64;
                    uint32_t *no = realloc(open, nc * sizeof *no);
                    if (no) {
                        open = no;
                        cap = nc;
                    }
                }
                if (id < 0 || depth == cap) {
                    st = nomem(err);
                    break;
                }
                open[depth++] = (uint32_t)id;
                cur = (uint32_t)id;
            }
            d++;
            pos += fl + 1;
        }
        if (st == TR_OK) {
            depth = d;
            t->n[cur].own[0] = l[i].v[0];
            t->n[cur].own[1] = l[i].v[1];
        }
    }
    free(open);
    return st;
}

static void fmt_value(char *buf, size_t n, int64_t v, const char *unit)
{
    double d = (double)v;
    if (!strcmp(unit, "ns")) {
        if (v > -1000 && v < 1000)
            snprintf(buf, n, "%lld ns", (long long)v);
        else if (d < 1e6 && d > -1e6)
            snprintf(buf, n, "%.3f us", d / 1e3);
        else if (d < 1e9 && d > -1e9)
            snprintf(buf, n, "%.3f ms", d / 1e6);
        else
            snprintf(buf, n, "%.3f s", d / 1e9);
    } else {
        snprintf(buf, n, "%lld %s", (long long)v, unit);
    }
}

/* Red grows, blue shrinks, as difffolded.pl's graphs: the colour's strength
 * is the change relative to the larger of the two values. */
static void put_colour(FILE *f, const dnode *n)
{
    int64_t a = n->w[0], b = n->w[1], big = a > b ? a : b;
    if (a == b || big <= 0) {
        fputs("rgb(235,235,235)", f);
        return;
    }
    double rel = fabs((double)b - (double)a) / (double)big;
    int c = (int)lround(220.0 * (1.0 - rel));
    if (b > a)
        fprintf(f, "rgb(255,%d,%d)", c, c);
    else
        fprintf(f, "rgb(%d,%d,255)", c, c);
}


/* One input without a base: flamegraph.pl's default "hot" colours, from a hash
 * of the name so that a frame keeps its colour from one graph to the next. */
static void put_hot_colour(FILE *f, const dnode *n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n->name_len; i++)
        h = (h ^ (unsigned char)n->name[i]) * 16777619u;
    fprintf(f, "rgb(%u,%u,%u)", 205 + (h & 0xff) * 50 / 255, ((h >> 8) & 0xff) * 230 / 255,
            ((h >> 16) & 0xff) * 55 / 255);
}

/* plain: one input (no base run), drawn as an ordinary flamegraph. */
/* Each node's widths (per run) and its x in the new run; returns the depth of the
 * deepest node with a width. */
static uint32_t lay_out(dtree *t, const tr_export_metric *metric)
{
    size_t nn = t->nn;
    /* widths bottom-up (a child's index is above its parent's), per run */
    for (size_t i = nn; i-- > 0;) {
        dnode *n = &t->n[i];
        for (int s = 0; s < 2; s++) {
            int64_t own = n->own[s] > 0 ? n->own[s] : 0, kids = 0;
            for (uint32_t c = n->first_child; c; c = t->n[c].next_sibling)
                tr_sat_acc(&kids, t->n[c].w[s]);
            n->w[s] = metric->inclusive ? (own > kids ? own : kids) : tr_sat_add(own, kids);
        }
    }
    uint32_t maxd = 0;
    for (size_t i = 0; i < nn; i++) {
        int64_t x = t->n[i].x;
        for (uint32_t c = t->n[i].first_child; c; c = t->n[c].next_sibling) {
            t->n[c].x = x;
            x = tr_sat_add(x, t->n[c].w[1]);
        }
        if (t->n[i].w[1] > 0 && t->n[i].depth > maxd)
            maxd = t->n[i].depth;
    }
    return maxd;
}

/* The SVG's opening, style, script, title lines and interface texts. */
static void put_svg_head(FILE *out, const dtree *t, const tr_export_metric *metric,
                         const tr_export_opts *o, int plain, int height)
{
    int64_t total = t->n[0].w[1], base_total = t->n[0].w[0];
    int width = o->width;
    const char *title = o->title ? o->title : plain ? "Flame Graph" : "Differential Flame Graph";
    char a[64], b[64];
    fmt_value(a, sizeof a, base_total, metric->unit);
    fmt_value(b, sizeof b, total, metric->unit);
    fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" data-fg-width=\"%d\" data-fg-padx=\"%d\" "
                 "data-fg-charw=\"%g\" data-fg-total=\"%lld\"",
            width, height, width, height, width, PAD_X, CHAR_W, (long long)total);
    if (!plain)
        fprintf(out, " data-fg-base-total=\"%lld\"", (long long)base_total);
    fputs(">\n", out);
    fputs(tr_flamegraph_style(), out);
    fputs(tr_flamegraph_script(), out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n",
            width, height);
    fprintf(out, "<text id=\"title\" x=\"%d\" y=\"22\">", width / 2);
    tr_put_xml_text(out, title, tr_utf8_cut(title, strlen(title), LABEL_MAX));
    if (plain)
        fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"40\">%s: %s total</text>\n", width / 2,
                metric->label, b);
    else
        fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"40\">%s: %s base, %s new; widths: new; "
                     "red grows, blue shrinks</text>\n", width / 2, metric->label, a, b);
    fprintf(out, "<text id=\"unzoom\" class=\"ui\" x=\"%d\" y=\"22\" opacity=\"0\">Reset Zoom</text>\n"
                 "<text id=\"search\" class=\"ui\" x=\"%d\" y=\"22\" text-anchor=\"end\">Search</text>\n"
                 "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
                 "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
            PAD_X, width - PAD_X, PAD_X, height - 12, width - PAD_X, height - 12);
    if (total <= 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">No %s in the new run's selected "
                     "events</text>\n", width / 2, PAD_TOP + FRAME_H, metric->label);
}

/* One frame: its group, tooltip, box and label. */
static void put_svg_frame(FILE *out, const dnode *n, const tr_export_metric *metric, int plain,
                      int64_t total, double x, int y, double px, tr_name_cap *cap)
{
    char a[64], b[64];
    fmt_value(a, sizeof a, n->w[0], metric->unit);
    fmt_value(b, sizeof b, n->w[1], metric->unit);
    fprintf(out, "<g class=\"f\" data-x=\"%lld\" data-w=\"%lld\" data-d=\"%u\"", (long long)n->x,
            (long long)n->w[1], n->depth);
    if (!plain)
        fprintf(out, " data-base=\"%lld\"", (long long)n->w[0]);
    fputs("><title>", out);
    size_t shown = tr_name_cap_take(cap, n->name, n->name_len);
    tr_put_xml_text(out, n->name, shown);
    if (shown < n->name_len)
        fputs(TR_ELLIPSIS, out);
    if (plain)
        fprintf(out, " (%s, %.2f%%)</title>", b, 100.0 * (double)n->w[1] / (double)total);
    else if (n->w[0] > 0)
        fprintf(out, " (%s -> %s, %+.2f%%)</title>", a, b,
                ((double)n->w[1] - (double)n->w[0]) * 100.0 / (double)n->w[0]);
    else
        fprintf(out, " (%s, new)</title>", b);
    fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"", x, y, px, FRAME_H - 1);
    if (plain)
        put_hot_colour(out, n);
    else
        put_colour(out, n);
    fprintf(out, "\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_H - 5);
    tr_flamegraph_put_label(out, n->name, n->name_len, px);
    fputs("</text></g>\n", out);
}

static tr_status write_flamegraph(dtree *t, const tr_export_metric *metric, const tr_export_opts *o,
                                  int plain, FILE *out, tr_error *err)
{
    uint32_t maxd = lay_out(t, metric);
    int64_t total = t->n[0].w[1];
    int height = PAD_TOP + PAD_BOTTOM + (int)(maxd + 1) * FRAME_H;
    double scale = total > 0 ? (double)(o->width - 2 * PAD_X) / (double)total : 0;
    put_svg_head(out, t, metric, o, plain, height);
    tr_name_cap cap = {LABEL_MAX, TITLE_MAX, TITLE_BUDGET};
    for (size_t i = 0; i < t->nn && total > 0; i++) {
        const dnode *n = &t->n[i];
        double px = (double)n->w[1] * scale;
        if (n->w[1] <= 0 || px < o->minwidth)
            continue;
        int y = o->inverted ? PAD_TOP + (int)n->depth * FRAME_H
                            : height - PAD_BOTTOM - (int)(n->depth + 1) * FRAME_H;
        put_svg_frame(out, n, metric, plain, total, PAD_X + (double)n->x * scale, y, px, &cap);
    }
    fputs("</svg>\n", out);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error") : TR_OK;
}

/* Joins the two sides' sorted lines (taking them over: l[] is emptied) and
 * writes them as o->format says: "stack BASE NEW" lines, or the flamegraph;
 * plain: one side only (v[1]), written as "stack VALUE" or an ordinary graph. */
static tr_status write_joined(dline *l[2], size_t nl[2], int plain, const tr_export_metric *metric,
                              const tr_export_opts *o, FILE *out, tr_error *err)
{
    size_t nj = 0;
    dline *j = join(l[0], nl[0], l[1], nl[1], &nj);
    if (!j)
        return nomem(err);
    free(l[0]);
    free(l[1]);
    l[0] = l[1] = NULL;
    nl[0] = nl[1] = 0;
    tr_status st = TR_OK;
    if (o->format == tr_export_format_lookup("stacks")) {
        for (size_t i = 0; i < nj; i++) {
            fwrite(j[i].path, 1, j[i].len, out);
            if (plain)
                fprintf(out, " %lld\n", (long long)j[i].v[1]);
            else
                fprintf(out, " %lld %lld\n", (long long)j[i].v[0], (long long)j[i].v[1]);
        }
        if (ferror(out))
            st = tr_fail(err, TR_ERR_RUNTIME, "write error");
    } else {
        dtree t = {NULL, 0, 0};
        st = build_tree(&t, j, nj, err);
        if (st == TR_OK)
            st = write_flamegraph(&t, metric, o, plain, out, err);
        free(t.n);
    }
    lines_free(j, nj);
    return st;
}

/* ---- folded-stack files as input ---- */

/* What a folded file's counts are when --metric does not say: flamegraph.pl's word. */
static const tr_export_metric folded_samples = {"samples", NULL, "samples", "samples", 0, NULL};

/* The last blank-separated field of s[0, *len) when it is a whole number:
 * stores it and cuts it and the blanks before it off *len.  0: not a number
 * (1 more in *why: out of range, or a fraction). */
static int take_count(const char *s, size_t *len, int64_t *v, int *why)
{
    size_t e = *len;
    while (e > 0 && (s[e - 1] == ' ' || s[e - 1] == '\t'))
        e--;
    size_t b = e;
    while (b > 0 && s[b - 1] != ' ' && s[b - 1] != '\t')
        b--;
    if (b == e || b == 0 || e - b > 24)
        return 0;
    char num[32];
    memcpy(num, s + b, e - b);
    num[e - b] = '\0';
    char *end;
    errno = 0;
    long long x = strtoll(num, &end, 10);
    if (*end || errno || end == num) {
        *why = errno == ERANGE || (*end == '.' && end != num);
        return 0;
    }
    *v = x;
    while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t'))
        b--;
    *len = b;
    return 1;
}

/* One line's stack and counts: "STACK N" (one column) or "STACK BASE NEW" (two,
 * as difffolded.pl writes); *columns is 0 until the first line decides it. */
static tr_status parse_folded_line(const char *line, size_t len, const char *name, size_t lineno,
                                   int *columns, size_t *stack_len, int64_t v[2], tr_error *err)
{
    int why = 0, why2 = 0;
    size_t rest = len;
    int64_t last = 0, before = 0;
    int ok = take_count(line, &rest, &last, &why) && rest > 0;
    size_t rest2 = rest;
    int two = ok && take_count(line, &rest2, &before, &why2) && rest2 > 0;
    if (ok && !*columns)
        *columns = two ? 2 : 1;
    if (!ok || memchr(line, '\0', len))
        return tr_fail(err, TR_ERR_INPUT, "%s:%zu: %s", name, lineno,
                       why ? "the count is a fraction or beyond 64 bits (only whole numbers are read)"
                           : "not a folded stack line ('frame;frame;... COUNT', COUNT a whole number)");
    if (*columns == 2 && !two)
        return tr_fail(err, TR_ERR_INPUT, "%s:%zu: one count on a line of a two-column (BASE NEW) file",
                       name, lineno);
    if (*columns == 2) {
        v[0] = before;
        v[1] = last;
        *stack_len = rest2;
    } else {
        v[0] = 0;
        v[1] = last;
        *stack_len = rest;
    }
    return TR_OK;
}

/* A line's stack as dline text, frames normalised with --diff-normalize. */
static tr_status folded_path(dline *d, const char *stack, size_t len, int normalize, tr_error *err)
{
    if (!normalize) {
        d->len = len;
        return (d->path = strndup(stack, len)) ? TR_OK : nomem(err);
    }
    FILE *f = open_memstream(&d->path, &d->len);
    int bad = !f;
    for (size_t pos = 0; f && pos <= len;) {
        size_t fl = strcspn(stack + pos, ";");
        if (pos + fl > len)
            fl = len - pos;
        char *frame = strndup(stack + pos, fl), *nf = frame ? tr_diff_normalize_name(frame) : NULL;
        bad |= !nf;
        if (nf)
            fprintf(f, "%s%s", pos ? ";" : "", nf);
        free(frame);
        free(nf);
        pos += fl + 1;
    }
    if (!f || fclose(f) != 0 || bad) {
        free(d->path);
        d->path = NULL;
        return nomem(err);
    }
    return TR_OK;
}

/* Reads a folded file into sorted, merged lines.  A one-column file fills
 * v[side]; a two-column one (allowed when two_ok) fills both sides, and
 * *columns says which it was. */
static tr_status read_folded(FILE *in, const char *name, int side, int normalize, int two_ok,
                             int *columns, dline **out, size_t *nout, tr_error *err)
{
    dline *l = NULL;
    size_t n = 0, cap = 0, lineno = 0, linecap = 0;
    char *line = NULL;
    ssize_t got;
    tr_status st = TR_OK;
    *columns = 0;
    errno = 0;
    while (st == TR_OK && (got = getline(&line, &linecap, in)) >= 0) {
        lineno++;
        size_t len = (size_t)got;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        size_t lead = 0;   /* leading blanks are indentation, not part of the first frame */
        while (lead < len && (line[lead] == ' ' || line[lead] == '\t'))
            lead++;
        if (lead == len)
            continue;
        size_t stack_len = 0;
        int64_t v[2] = {0, 0};
        st = parse_folded_line(line + lead, len - lead, name, lineno, columns, &stack_len, v, err);
        if (st == TR_OK && *columns == 2 && !two_ok)
            st = tr_fail(err, TR_ERR_INPUT, "%s: a two-column (BASE NEW) file: give it alone to --folded",
                         name);
        if (st == TR_OK && n == cap) {
            size_t nc = cap ? cap * 2 : 1024;
            dline *nl = realloc(l, nc * sizeof *nl);
            if (!nl)
                st = nomem(err);
            else
                l = nl, cap = nc;
        }
        if (st != TR_OK)
            break;
        dline *d = &l[n];
        memset(d, 0, sizeof *d);
        if ((st = folded_path(d, line + lead, stack_len, normalize, err)) != TR_OK)
            break;
        if (*columns == 2) {
            d->v[0] = v[0];
            d->v[1] = v[1];
        } else {
            d->v[side] = v[1];
        }
        n++;
    }
    if (st == TR_OK && ferror(in))
        st = tr_fail(err, TR_ERR_INPUT, "%s: cannot read: %s", name, strerror(errno ? errno : EIO));
    free(line);
    if (st != TR_OK) {
        lines_free(l, n);
        return st;
    }
    *out = l;
    *nout = sort_merge(l, n);
    return TR_OK;
}

tr_status tr_export_folded(FILE *const *in, const char *const *names, int n, int normalize,
                           const tr_export_opts *o, FILE *out, tr_error *err)
{
    dline *l[2] = {NULL, NULL};
    size_t nl[2] = {0, 0};
    int columns = 1;
    tr_status st = TR_OK;
    if (n == 1) {
        /* one file: the new side alone, or both sides when it has two columns */
        st = read_folded(in[0], names[0], 1, normalize, 1, &columns, &l[1], &nl[1], err);
    } else {
        for (int i = 0; i < 2 && st == TR_OK; i++)
            st = read_folded(in[i], names[i], i, normalize, 0, &columns, &l[i], &nl[i], err);
        columns = 2;
    }
    if (st == TR_OK)
        st = write_joined(l, nl, columns != 2, o->metric ? o->metric : &folded_samples, o, out, err);
    for (int s = 0; s < 2; s++)
        lines_free(l[s], nl[s]);
    return st;
}

tr_status tr_export_diff(const char *base, const char *new_, int normalize, const tr_export_opts *o,
                         FILE *out, tr_error *err)
{
    const char *paths[2] = {base, new_};
    sqlite3 *db[2] = {NULL, NULL};
    tr_scan sc[2];
    int inited[2] = {0, 0};
    dline *l[2] = {NULL, NULL};
    size_t nl[2] = {0, 0};
    tr_status st = TR_OK;
    for (int s = 0; s < 2 && st == TR_OK; s++) {
        st = tr_rundb_open(paths[s], &db[s], err);
        if (st == TR_OK && (st = tr_scan_init(&sc[s], db[s], o, err)) == TR_OK) {
            inited[s] = 1;
            st = tr_scan_run(&sc[s], 0, NULL, NULL, err);
        }
    }
    /* one metric for both: the default one of either run when they differ is self CPU */
    const tr_export_metric *metric = NULL;
    if (st == TR_OK) {
        const tr_export_metric *m0 = tr_scan_metric(&sc[0]), *m1 = tr_scan_metric(&sc[1]);
        metric = m0 == m1 ? m0 : &tr_export_metrics[TR_M_SELF_CPU];
    }
    int m = metric ? (int)(metric - tr_export_metrics) : 0;
    for (int s = 0; s < 2 && st == TR_OK; s++)
        st = run_lines(&sc[s], m, s, normalize, &l[s], &nl[s], err);
    if (st == TR_OK)
        st = write_joined(l, nl, 0, metric, o, out, err);
    for (int s = 0; s < 2; s++) {
        lines_free(l[s], nl[s]);
        if (inited[s])
            tr_scan_free(&sc[s]);
        if (db[s])
            sqlite3_close(db[s]);
    }
    return st;
}
