/*
 * flamegraph.c - a self-contained interactive flamegraph SVG.
 *
 * Layout: each frame-tree node is a box whose width is its value: for a self
 * metric the node's own value plus its children's widths, for an inclusive
 * metric (cpu_total, gpu_total) the larger of its own value and its
 * children's widths.  Siblings are sorted by name, so x carries no meaning
 * and the file is byte-for-byte the same for the same input.  The embedded
 * script (no network access) shows details on hover, zooms on click,
 * searches by regex (also from "?s=REGEX" in the URL), zooms to frame N from "?z=N",
 * and resets the zoom.
 */
#include <stdlib.h>
#include <string.h>

#include "export/diff.h"
#include "export/export.h"
#include "export/scan.h"
#include "lib/checked.h"
#include "lib/model.h"

#define FRAME_H 16
#define PAD_X 10
#define PAD_TOP 56
#define PAD_BOTTOM 36
#define CHAR_W 7.0   /* average advance of a 12px Verdana character */

/* Colours by kind: base + range for r, g, b; the name's hash picks inside the range. */
static const struct {
    const char *label;
    int r0, rr, g0, gr, b0, br;
} palette[TR_KIND_COUNT_] = {
    [TR_KIND_FRAME] = {"frame", 205, 50, 90, 140, 30, 40},
    [TR_KIND_RANGE] = {"range", 115, 50, 105, 50, 205, 50},
    [TR_KIND_OP] = {"op", 215, 40, 60, 100, 30, 40},
    [TR_KIND_MARK] = {"mark", 150, 40, 150, 40, 150, 40},
    [TR_KIND_RUNTIME] = {"runtime API", 200, 40, 185, 50, 45, 50},
    [TR_KIND_DRIVER] = {"driver API", 185, 40, 170, 50, 80, 40},
    [TR_KIND_SYNC] = {"sync", 200, 55, 30, 40, 30, 40},
    [TR_KIND_KERNEL] = {"kernel", 50, 60, 165, 75, 50, 60},
    [TR_KIND_MEMCPY] = {"memcpy", 60, 50, 120, 60, 205, 50},
    [TR_KIND_MEMSET] = {"memset", 40, 50, 175, 50, 175, 50},
    [TR_KIND_MEMORY] = {"memory", 165, 40, 115, 40, 60, 30},
    [TR_KIND_PYTHON] = {"python", 80, 60, 185, 50, 195, 50},
    [TR_KIND_OPENACC_DATA] = {"OpenACC data", 100, 40, 180, 50, 160, 40},
    [TR_KIND_OPENACC_LAUNCH] = {"OpenACC launch", 120, 40, 190, 50, 120, 40},
    [TR_KIND_OPENACC_OTHER] = {"OpenACC", 110, 40, 170, 40, 140, 40},
    [TR_KIND_CUDA_EVENT] = {"CUDA event", 60, 40, 140, 40, 110, 40},
    [TR_KIND_OVERHEAD] = {"profiler overhead", 150, 30, 150, 30, 150, 30},
};

static uint32_t fnv1a(const char *s, size_t len)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static void put_colour(FILE *f, const tr_fnode *n, int root)
{
    if (root) {
        fputs("rgb(200,200,200)", f);
        return;
    }
    uint32_t h = fnv1a(n->name, n->name_len);
    int k = n->kind < TR_KIND_COUNT_ ? n->kind : 0;
    int r = palette[k].r0 + palette[k].rr * (int)(h & 0xff) / 255;
    int g = palette[k].g0 + palette[k].gr * (int)((h >> 8) & 0xff) / 255;
    int b = palette[k].b0 + palette[k].br * (int)((h >> 16) & 0xff) / 255;
    fprintf(f, "rgb(%d,%d,%d)", r, g, b);
}

/* "1.234 ms", "12 calls", "1.50 MB" */
static void fmt_value(char *buf, size_t n, int64_t v, const char *unit)
{
    double d = (double)v;
    if (!strcmp(unit, "ns")) {
        if (v < 0 ? -v < 1000 : v < 1000)
            snprintf(buf, n, "%lld ns", (long long)v);
        else if (d < 1e6 && d > -1e6)
            snprintf(buf, n, "%.3f us", d / 1e3);
        else if (d < 1e9 && d > -1e9)
            snprintf(buf, n, "%.3f ms", d / 1e6);
        else
            snprintf(buf, n, "%.3f s", d / 1e9);
    } else if (!strcmp(unit, "bytes")) {
        double a = d < 0 ? -d : d;
        if (a < 1024)
            snprintf(buf, n, "%lld B", (long long)v);
        else if (a < 1048576.0)
            snprintf(buf, n, "%.2f KiB", d / 1024);
        else if (a < 1073741824.0)
            snprintf(buf, n, "%.2f MiB", d / 1048576.0);
        else
            snprintf(buf, n, "%.2f GiB", d / 1073741824.0);
    } else {
        snprintf(buf, n, "%lld %s", (long long)v, unit);
    }
}

/* Caps on a name's text, so a huge name cannot blow the file up (a 100 MB
 * name repeated in every stack it ends): a label never holds more than
 * LABEL_MAX bytes, a tooltip more than TITLE_MAX, and tooltips beyond
 * LABEL_MAX share TITLE_BUDGET; the viewer's search reads the tooltips. */
#define LABEL_MAX 1024
#define TITLE_MAX (64 * 1024)
#define TITLE_BUDGET (16 * 1024 * 1024)

/* The label that fits in px pixels: the name, or a prefix + "..", or nothing. */
void tr_flamegraph_put_label(FILE *f, const char *name, size_t name_len, double px)
{
    size_t fit = px > 6 ? (size_t)((px - 6) / CHAR_W) : 0;
    if (fit < 3)
        return;
    size_t len = tr_utf8_cut(name, name_len, LABEL_MAX);
    /* count code points, only as far as the box, to cut on a character boundary */
    size_t cps = 0, i = 0, cut = 0;
    while (i < len && cps <= fit) {
        uint32_t cp;
        if (cps == fit - 2)
            cut = i;
        i += tr_utf8_next(name + i, len - i, &cp);
        cps++;
    }
    if (cps > fit)
        len = cut;
    tr_put_xml_text(f, name, len);
    if (len < name_len)
        fputs("..", f);
}

static const char fg_style[] =
    "<style type=\"text/css\">\n"
    "text { font-family: Verdana, sans-serif; font-size: 12px; fill: rgb(0,0,0); }\n"
    "#title { text-anchor: middle; font-size: 17px; }\n"
    "#subtitle { text-anchor: middle; fill: rgb(80,80,80); }\n"
    ".ui { cursor: pointer; }\n"
    ".ui:hover { fill: rgb(0,0,200); }\n"
    "g.f { cursor: pointer; }\n"
    "g.f:hover rect { stroke: rgb(0,0,0); stroke-width: 0.5; }\n"
    "g.f text { pointer-events: none; }\n"
    "g.hide { display: none; }\n"
    "</style>\n";

/* The viewer: no network access, no dependencies. */
static const char fg_script[] =
    "<script type=\"text/ecmascript\"><![CDATA[\n"
    "'use strict';\n"
    "(function () {\n"
    "  var root = document.documentElement;\n"
    "  window.addEventListener('error', function (e) {\n"
    "    root.setAttribute('data-fg-error', String(e.message));\n"
    "  });\n"
    "  var frames = [], total = 0, width = 0, padX = 0, charW = 7, zoomed = null, details;\n"
    "  var searchColour = 'rgb(230,0,230)';\n"
    "  function num(g, a) { return Number(g.getAttribute(a)); }\n"
    "  function nameOf(g) {\n"
    "    var t = g.firstElementChild.textContent, i = t.lastIndexOf(' (');\n"
    "    return i < 0 ? t : t.substring(0, i);\n"
    "  }\n"
    "  function label(g, px) {\n"
    "    var name = g.fgName, fit = Math.floor((px - 6) / charW);\n"
    "    var chars = Array.from(name);\n"
    "    if (fit < 3) return '';\n"
    "    if (chars.length <= fit) return name;\n"
    "    return chars.slice(0, fit - 2).join('') + '..';\n"
    "  }\n"
    "  function place(g, x0, scale) {\n"
    "    var r = g.fgRect, t = g.fgText;\n"
    "    var x = padX + (g.fgX - x0) * scale, w = g.fgW * scale;\n"
    "    r.setAttribute('x', x.toFixed(2));\n"
    "    r.setAttribute('width', Math.max(w, 0).toFixed(2));\n"
    "    t.setAttribute('x', (x + 3).toFixed(2));\n"
    "    t.textContent = label(g, w);\n"
    "  }\n"
    "  function zoom(z) {\n"
    "    zoomed = z;\n"
    "    var x0 = z ? z.fgX : 0, w0 = z ? z.fgW : total, d0 = z ? z.fgD : 0;\n"
    "    var scale = w0 > 0 ? (width - 2 * padX) / w0 : 0;\n"
    "    frames.forEach(function (g) {\n"
    "      var inside = g.fgX >= x0 && g.fgX + g.fgW <= x0 + w0 && g.fgD >= d0;\n"
    "      var above = g.fgD < d0 && g.fgX <= x0 && g.fgX + g.fgW >= x0 + w0;\n"
    "      if (!z || inside) {\n"
    "        g.classList.remove('hide');\n"
    "        place(g, x0, scale);\n"
    "        if (z && g.fgW * scale < 0.1) g.classList.add('hide');\n"
    "      } else if (above) {\n"
    "        g.classList.remove('hide');\n"
    "        g.fgRect.setAttribute('x', padX);\n"
    "        g.fgRect.setAttribute('width', width - 2 * padX);\n"
    "        g.fgText.setAttribute('x', padX + 3);\n"
    "        g.fgText.textContent = label(g, width - 2 * padX);\n"
    "        g.setAttribute('opacity', '0.6');\n"
    "        return;\n"
    "      } else {\n"
    "        g.classList.add('hide');\n"
    "      }\n"
    "      g.removeAttribute('opacity');\n"
    "    });\n"
    "    document.getElementById('unzoom').setAttribute('opacity', z ? '1' : '0');\n"
    "  }\n"
    "  function search(re) {\n"
    "    var matched = [], shown = document.getElementById('matched');\n"
    "    frames.forEach(function (g) {\n"
    "      var hit = re !== null && re.test(g.fgName);\n"
    "      g.fgRect.setAttribute('fill', hit ? searchColour : g.fgFill);\n"
    "      if (hit) { g.setAttribute('data-match', '1'); matched.push(g); }\n"
    "      else g.removeAttribute('data-match');\n"
    "    });\n"
    "    if (re === null) {\n"
    "      shown.textContent = ' ';\n"
    "      document.getElementById('search').textContent = 'Search';\n"
    "      return 0;\n"
    "    }\n"
    "    /* union of the matched ranges: nested matches count once */\n"
    "    matched.sort(function (a, b) { return a.fgX - b.fgX || a.fgD - b.fgD; });\n"
    "    var sum = 0, end = -1;\n"
    "    matched.forEach(function (g) {\n"
    "      var s = Math.max(g.fgX, end), e = g.fgX + g.fgW;\n"
    "      if (e > s) { sum += e - s; end = e; }\n"
    "    });\n"
    "    var pct = total > 0 ? 100 * sum / total : 0;\n"
    "    shown.textContent = 'Matched: ' + pct.toFixed(2) + '%';\n"
    "    shown.setAttribute('data-share', pct.toFixed(2));\n"
    "    document.getElementById('search').textContent = 'Clear search';\n"
    "    return pct;\n"
    "  }\n"
    "  function searchPrompt() {\n"
    "    if (document.getElementById('search').textContent !== 'Search') { search(null); return; }\n"
    "    var s = window.prompt('Search for (regular expression):', '');\n"
    "    if (s === null || s === '') return;\n"
    "    try { search(new RegExp(s)); } catch (e) { window.alert('Invalid regex: ' + e.message); }\n"
    "  }\n"
    "  function init() {\n"
    "    width = num(root, 'data-fg-width'); padX = num(root, 'data-fg-padx');\n"
    "    charW = num(root, 'data-fg-charw'); total = num(root, 'data-fg-total');\n"
    "    details = document.getElementById('details');\n"
    "    frames = Array.prototype.slice.call(document.querySelectorAll('g.f'));\n"
    "    frames.forEach(function (g) {\n"
    "      g.fgX = num(g, 'data-x'); g.fgW = num(g, 'data-w'); g.fgD = num(g, 'data-d');\n"
    "      g.fgRect = g.querySelector('rect'); g.fgText = g.querySelector('text');\n"
    "      g.fgFill = g.fgRect.getAttribute('fill'); g.fgName = nameOf(g);\n"
    "      g.addEventListener('mouseover', function () {\n"
    "        details.textContent = g.firstElementChild.textContent;\n"
    "      });\n"
    "      g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
    "      g.addEventListener('click', function () { zoom(g); });\n"
    "    });\n"
    "    document.getElementById('unzoom').addEventListener('click', function () { zoom(null); });\n"
    "    document.getElementById('search').addEventListener('click', searchPrompt);\n"
    "    window.addEventListener('keydown', function (e) {\n"
    "      if (e.keyCode === 114 || ((e.ctrlKey || e.metaKey) && e.keyCode === 70)) {\n"
    "        e.preventDefault(); searchPrompt();\n"
    "      } else if (e.keyCode === 27) { zoom(null); search(null); }\n"
    "    });\n"
    "    window.fgSearch = function (s) { return search(s === null ? null : new RegExp(s)); };\n"
    "    window.fgZoom = function (i) { zoom(i === null ? null : frames[i]); };\n"
    "    var params = new URLSearchParams(window.location.search);\n"
    "    if (params.get('s')) search(new RegExp(params.get('s')));\n"
    "    if (params.get('z') !== null && frames[+params.get('z')]) zoom(frames[+params.get('z')]);\n"
    "    root.setAttribute('data-fg-ready', '1');\n"
    "  }\n"
    "  if (document.readyState === 'loading') window.addEventListener('load', init); else init();\n"
    "})();\n"
    "]]></script>\n";

/* Each node's width (its metric, or its children's when more: inclusive
 * metrics take the larger, self metrics the sum), then its offset and depth;
 * returns the depth of the deepest node drawn.  csum: scratch, one a node. */
static uint32_t layout_nodes(tr_scan *sc, const tr_export_metric *metric, int m, int64_t *csum, uint32_t *depth)
{
    size_t nn = sc->nnodes;
    /* widths bottom-up: a child's index is always above its parent's */
    for (size_t i = nn; i-- > 0;) {
        tr_fnode *n = &sc->nodes[i];
        int64_t own = n->v[m] > 0 ? n->v[m] : 0;   /* frees (negative memory) are not drawn */
        n->w = metric->inclusive ? (own > csum[i] ? own : csum[i]) : tr_sat_add(own, csum[i]);
        if (i)
            tr_sat_acc(&csum[n->parent], n->w);
    }
    /* offsets and depths top-down */
    uint32_t maxd = 0;
    sc->nodes[0].x = 0;
    for (size_t i = 0; i < nn; i++) {
        int64_t x = sc->nodes[i].x;
        for (uint32_t c = sc->nodes[i].first_child; c; c = sc->nodes[c].next_sibling) {
            sc->nodes[c].x = x;
            x = tr_sat_add(x, sc->nodes[c].w);
            depth[c] = depth[i] + 1;
        }
        if (sc->nodes[i].w > 0 && depth[i] > maxd)
            maxd = depth[i];
    }
    return maxd;
}

/* The SVG's head: size, style, viewer script, title, subtitle and the viewer's controls. */
static void write_head(FILE *out, const tr_export_opts *o, const tr_scan *sc, const tr_export_metric *metric,
                       int auto_gpu, int width, int height, int64_t total)
{
    const char *title = o->title ? o->title : o->inverted ? "Icicle Graph" : "Flame Graph";
    char tot[64];
    fmt_value(tot, sizeof tot, total, metric->unit);
    fprintf(out, "<?xml version=\"1.0\" standalone=\"no\"?>\n"
                 "<svg version=\"1.1\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
                 "xmlns=\"http://www.w3.org/2000/svg\" data-fg-width=\"%d\" data-fg-padx=\"%d\" "
                 "data-fg-charw=\"%g\" data-fg-total=\"%lld\">\n",
            width, height, width, height, width, PAD_X, CHAR_W, (long long)total);
    fputs(fg_style, out);
    fputs(fg_script, out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"rgb(248,248,240)\"/>\n",
            width, height);
    fprintf(out, "<text id=\"title\" x=\"%d\" y=\"22\">", width / 2);
    tr_put_xml_text(out, title, tr_utf8_cut(title, strlen(title), LABEL_MAX));
    /* frees are summed but not drawn: a memory graph's width is what was allocated */
    int bytes = !strcmp(metric->unit, "bytes");
    fprintf(out, "</text>\n<text id=\"subtitle\" x=\"%d\" y=\"40\">%s: %s %s%s; stacks: %s",
            width / 2, metric->label, tot, bytes ? "allocated (frees not drawn)" : "total",
            auto_gpu ? " (the trace has no CPU time)" : "",
            sc->use_frames ? "recorded frames" : "range ancestry");
    if (o->include_re || o->exclude_re || o->has_time_range || o->has_thread || o->has_device || o->ranks.n)
        fputs("; filtered", out);
    fputs("</text>\n", out);
    fprintf(out, "<text id=\"unzoom\" class=\"ui\" x=\"%d\" y=\"22\" opacity=\"0\">Reset Zoom</text>\n"
                 "<text id=\"search\" class=\"ui\" x=\"%d\" y=\"22\" text-anchor=\"end\">Search</text>\n"
                 "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
                 "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
            PAD_X, width - PAD_X, PAD_X, height - 12, width - PAD_X, height - 12);
}

/* The legend: a swatch for each kind drawn. */
static void write_legend(FILE *out, const tr_scan *sc, int height)
{
    int present[TR_KIND_COUNT_] = {0};
    for (size_t i = 1; i < sc->nnodes; i++)
        if (sc->nodes[i].w > 0)
            present[sc->nodes[i].kind < TR_KIND_COUNT_ ? sc->nodes[i].kind : 0] = 1;
    int lx = PAD_X;
    for (int k = 0; k < TR_KIND_COUNT_; k++) {
        if (!present[k])
            continue;
        fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"10\" height=\"10\" fill=\"rgb(%d,%d,%d)\"/>"
                     "<text x=\"%d\" y=\"%d\">%s</text>\n",
                lx, height - 28, palette[k].r0 + palette[k].rr / 2, palette[k].g0 + palette[k].gr / 2,
                palette[k].b0 + palette[k].br / 2, lx + 13, height - 19, palette[k].label);
        lx += 13 + (int)(CHAR_W * (double)strlen(palette[k].label)) + 12;
    }
}

/* One frame a node at least --minwidth pixels wide: its tooltip, box and label. */
static void write_frames(FILE *out, const tr_export_opts *o, const tr_scan *sc, const uint32_t *depth,
                         const tr_export_metric *metric, int height, int64_t total)
{
    double scale = (double)(o->width - 2 * PAD_X) / (double)total;
    tr_name_cap cap = {LABEL_MAX, TITLE_MAX, TITLE_BUDGET};
    char buf[64];
    for (size_t i = 0; i < sc->nnodes; i++) {
        const tr_fnode *n = &sc->nodes[i];
        double px = (double)n->w * scale;
        if (n->w <= 0 || px < o->minwidth)
            continue;
        double x = PAD_X + (double)n->x * scale;
        int y = o->inverted ? PAD_TOP + (int)depth[i] * FRAME_H
                            : height - PAD_BOTTOM - (int)(depth[i] + 1) * FRAME_H;
        fmt_value(buf, sizeof buf, n->w, metric->unit);
        fprintf(out, "<g class=\"f\" data-x=\"%lld\" data-w=\"%lld\" data-d=\"%u\"><title>",
                (long long)n->x, (long long)n->w, depth[i]);
        size_t shown = tr_name_cap_take(&cap, n->name, n->name_len);
        tr_put_xml_text(out, n->name, shown);
        if (shown < n->name_len)
            fputs(TR_ELLIPSIS, out);
        fprintf(out, " (%s, %.2f%%%s%s)</title>", buf, 100.0 * (double)n->w / (double)total,
                i ? ", " : "", i ? palette[n->kind < TR_KIND_COUNT_ ? n->kind : 0].label : "");
        fprintf(out, "<rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"", x, y, px,
                FRAME_H - 1);
        put_colour(out, n, i == 0);
        fprintf(out, "\" rx=\"2\" ry=\"2\"/><text x=\"%.2f\" y=\"%d\">", x + 3, y + FRAME_H - 5);
        tr_flamegraph_put_label(out, n->name, n->name_len, px);
        fputs("</text></g>\n", out);
    }
}

tr_status tr_export_flamegraph(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    tr_scan sc;
    tr_status st = tr_scan_init(&sc, db, o, err);
    if (st == TR_OK)
        st = tr_scan_run(&sc, 0, NULL, NULL, err);
    if (st == TR_OK)
        st = tr_scan_sort_children(&sc, err);
    if (st != TR_OK) {
        tr_scan_free(&sc);
        return st;
    }
    const tr_export_metric *metric = tr_scan_metric(&sc);
    int m = (int)(metric - tr_export_metrics);
    int auto_gpu = !o->metric && m == TR_M_SELF_GPU;
    int64_t *csum = calloc(sc.nnodes, sizeof *csum);
    uint32_t *depth = calloc(sc.nnodes, sizeof *depth);
    if (!csum || !depth) {
        free(csum);
        free(depth);
        tr_scan_free(&sc);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    uint32_t maxd = layout_nodes(&sc, metric, m, csum, depth);
    int64_t total = sc.nodes[0].w;
    int height = PAD_TOP + PAD_BOTTOM + (int)(maxd + 1) * FRAME_H;
    write_head(out, o, &sc, metric, auto_gpu, o->width, height, total);
    write_legend(out, &sc, height);
    if (total <= 0)
        fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">No %s in the selected events"
                     "</text>\n", o->width / 2, PAD_TOP + FRAME_H, metric->label);
    else
        write_frames(out, o, &sc, depth, metric, height, total);
    fputs("</svg>\n", out);
    free(csum);
    free(depth);
    tr_scan_free(&sc);
    return ferror(out) ? tr_fail(err, TR_ERR_RUNTIME, "write error") : TR_OK;
}

/* The differential flamegraph (diff.c) draws with the same viewer. */
const char *tr_flamegraph_style(void) { return fg_style; }
const char *tr_flamegraph_script(void) { return fg_script; }
