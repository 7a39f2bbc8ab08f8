/*
 * html.c - the HTML report: one self-contained file (inline CSS, SVG charts
 * drawn here, no script, nothing fetched) that renders the rows of the
 * timeline reports (analyze/report.h): the summary, the GPU time breakdown
 * per device and per step as stacked bars, the top kernels and ops as bars,
 * a small timeline overview (a lane per thread and per stream, gaps visible),
 * and the key tables.
 *
 * Size is bounded whatever the run: tables are cut to a few rows, the
 * timeline is a fixed number of bins per lane and a fixed number of lanes.
 * Every name is escaped; the run's text never becomes markup.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "export/html.h"
#include "lib/checked.h"
#include "lib/format.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/rundb.h"

#define BAR_W 760          /* px of a full stacked bar */
#define TL_BINS 1000       /* timeline bins per lane */
#define TL_MAX_LANES 48     /* lanes drawn */
#define TL_READ_LANES 4096  /* lanes read, before the idle streams are dropped */
#define TL_MAX_RANK_LANES 128   /* ranks drawn, a lane each, when two lanes a rank do not fit */
#define TABLE_ROWS 15

static void esc(FILE *out, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

/* At most n code points of s, with "..." when cut. */
static void esc_cut(FILE *out, const char *s, size_t n)
{
    size_t len = strlen(s);
    if (tr_utf8_len(s, len) <= n) {
        esc(out, s);
        return;
    }
    size_t keep = tr_utf8_prefix(s, len, n - 3);
    char *b = malloc(keep + 4);
    if (!b)
        return;
    memcpy(b, s, keep);
    memcpy(b + keep, "...", 4);
    esc(out, b);
    free(b);
}

static const tr_rtable *table_titled(const tr_rresult *r, const char *prefix)
{
    for (size_t i = 0; i < r->ntables; i++)
        if (!strncmp(r->tables[i].title, prefix, strlen(prefix)))
            return &r->tables[i];
    return NULL;
}

static int col_of(const tr_rtable *t, const char *key)
{
    for (size_t j = 0; j < t->ncols; j++)
        if (!strcmp(t->cols[j].key, key))
            return (int)j;
    return -1;
}

static const tr_cell *cell(const tr_rtable *t, size_t row, const char *key)
{
    int j = col_of(t, key);
    static const tr_cell none = {.null = 1};
    return j < 0 ? &none : &t->cells[row * t->ncols + (size_t)j];
}

static int64_t cell_i(const tr_rtable *t, size_t row, const char *key)
{
    const tr_cell *c = cell(t, row, key);
    return c->null ? 0 : c->i;
}

static const char *cell_s(const tr_rtable *t, size_t row, const char *key)
{
    const tr_cell *c = cell(t, row, key);
    return c->null || !c->s ? "" : c->s;
}

static void html_table(FILE *out, const tr_rtable *t, size_t max_rows)
{
    fputs("<table><thead><tr>", out);
    for (size_t j = 0; j < t->ncols; j++)
        if (!(t->cols[j].flags & TR_COL_MACHINE_ONLY)) {
            fprintf(out, "<th class=\"%s\">", t->cols[j].type == TR_COL_STR ? "l" : "r");
            esc(out, t->cols[j].header);
            fputs("</th>", out);
        }
    fputs("</tr></thead><tbody>\n", out);
    char b[8192];
    size_t n = t->nrows < max_rows ? t->nrows : max_rows;
    for (size_t i = 0; i < n; i++) {
        fputs("<tr>", out);
        for (size_t j = 0; j < t->ncols; j++) {
            if (t->cols[j].flags & TR_COL_MACHINE_ONLY)
                continue;
            tr_report_fmt_cell(b, sizeof b, &t->cols[j], &t->cells[i * t->ncols + j], TR_UNIT_AUTO);
            int str = t->cols[j].type == TR_COL_STR;
            fprintf(out, "<td class=\"%s\"", str ? "l" : "r");
            if (str && tr_utf8_len(b, strlen(b)) > 120) {
                fputs(" title=\"", out);
                esc(out, b);
                fputs("\">", out);
                esc_cut(out, b, 120);
            } else {
                fputc('>', out);
                esc(out, b);
            }
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table>\n", out);
    if (n < t->nrows)
        fprintf(out, "<p class=\"note\">%zu of %zu rows shown (trace-analyze --report shows all).</p>\n", n, t->nrows);
    for (size_t i = 0; i < t->nnotes; i++) {
        fputs("<p class=\"note\">", out);
        esc(out, t->notes[i]);
        fputs("</p>\n", out);
    }
}

/* ---- stacked bars: the gpu-time breakdown of a device or a step ---- */

static const struct { const char *key, *type, *label, *cls; } parts[] = {
    {"computation_ns", "computation_time", "computation", "comp"},
    {"exposed_comm_ns", "exposed_comm_time", "exposed communication", "comm"},
    {"exposed_memcpy_ns", "exposed_memcpy_time", "exposed memcpy", "mem"},
    {"idle_ns", "idle_time", "idle", "idle"},
};
#define NPARTS (sizeof parts / sizeof parts[0])

static void legend(FILE *out)
{
    fputs("<p class=\"legend\">", out);
    for (size_t k = 0; k < NPARTS; k++)
        fprintf(out, "<span class=\"sw %s\"></span>%s ", parts[k].cls, parts[k].label);
    fputs("</p>\n", out);
}

/* One bar: v[] are the parts, scaled so that `whole` is BAR_W px. */
static void bar(FILE *out, int y, const char *label, const int64_t *v, int64_t whole, const char *tail)
{
    fprintf(out, "<text x=\"0\" y=\"%d\">", y + 13);
    esc_cut(out, label, 18);
    fputs("</text>", out);
    double x = 150, sum = 0;
    for (size_t k = 0; k < NPARTS; k++)
        sum += (double)v[k];
    for (size_t k = 0; k < NPARTS && whole > 0; k++) {
        double w = (double)v[k] * BAR_W / (double)whole;
        if (w <= 0)
            continue;
        char t[64];
        tr_fmt_time(t, sizeof t, (double)v[k] / 1000.0, TR_UNIT_AUTO);
        fprintf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"18\"><title>%s: %s (%.2f%%)</title></rect>",
                parts[k].cls, x, y, w, parts[k].label, t, sum > 0 ? (double)v[k] * 100.0 / sum : 0.0);
        x += w;
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\">", 150 + BAR_W + 8, y + 13);
    esc(out, tail);
    fputs("</text>\n", out);
}

static void gpu_bars(FILE *out, const tr_rresult *gt)
{
    const tr_rtable *t = table_titled(gt, "GPU time");
    if (!t) {
        fputs("<p class=\"note\">", out);
        esc(out, gt->nodata ? gt->nodata : "no GPU activity");
        fputs("</p>\n", out);
        return;
    }
    /* rows come in blocks of ten per device, "all" first */
    size_t ndev = 0;
    for (size_t i = 0; i < t->nrows; i++)
        ndev += !strcmp(cell_s(t, i, "type"), "total_time");
    legend(out);
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%zu\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            150 + BAR_W + 200, ndev * 26 + 4);
    size_t k = 0;
    for (size_t i = 0; i < t->nrows; k++) {
        const char *dev = cell_s(t, i, "device");
        int64_t v[NPARTS] = {0}, total = 0, busy = 0;
        for (; i < t->nrows && !strcmp(cell_s(t, i, "device"), dev); i++) {
            const char *type = cell_s(t, i, "type");
            for (size_t p = 0; p < NPARTS; p++)
                if (!strcmp(type, parts[p].type))
                    v[p] = cell_i(t, i, "time_ns");
            if (!strcmp(type, "total_time"))
                total = cell_i(t, i, "time_ns");
            if (!strcmp(type, "busy_time"))
                busy = cell_i(t, i, "time_ns");
        }
        char label[64], tail[96], tb[32];
        snprintf(label, sizeof label, "%s%s", strcmp(dev, "all") ? "device " : "", strcmp(dev, "all") ? dev : "all devices");
        tr_fmt_time(tb, sizeof tb, (double)total / 1000.0, TR_UNIT_AUTO);
        snprintf(tail, sizeof tail, "%s, busy %.1f%%", tb, total > 0 ? (double)busy * 100.0 / (double)total : 0.0);
        bar(out, (int)(k * 26 + 2), label, v, total, tail);
    }
    fputs("</svg>\n", out);
    for (size_t i = 0; i < t->nnotes; i++) {
        fputs("<p class=\"note\">", out);
        esc(out, t->notes[i]);
        fputs("</p>\n", out);
    }
}

static void step_bars(FILE *out, const tr_rresult *sr)
{
    const tr_rtable *t = table_titled(sr, "Steps");
    if (!t || !t->nrows) {
        fputs("<p class=\"note\">no ProfilerStep#N ranges in the run</p>\n", out);
        return;
    }
    int64_t max = 0;
    for (size_t i = 0; i < t->nrows; i++)
        if (cell_i(t, i, "gpu_span_ns") > max)
            max = cell_i(t, i, "gpu_span_ns");
    size_t n = t->nrows < 200 ? t->nrows : 200;
    legend(out);
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%zu\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            150 + BAR_W + 200, n * 26 + 4);
    for (size_t i = 0; i < n; i++) {
        int64_t v[NPARTS];
        for (size_t p = 0; p < NPARTS; p++)
            v[p] = cell_i(t, i, parts[p].key);
        char label[64], tail[128], wall[32];
        snprintf(label, sizeof label, "step %lld%s", (long long)cell_i(t, i, "step"),
                 *cell_s(t, i, "slowest") ? " (slowest)" : "");
        tr_fmt_time(wall, sizeof wall, (double)cell_i(t, i, "wall_ns") / 1000.0, TR_UNIT_AUTO);
        snprintf(tail, sizeof tail, "wall %s, %lld kernels", wall, (long long)cell_i(t, i, "kernels"));
        bar(out, (int)(i * 26 + 2), label, v, max, tail);
    }
    fputs("</svg>\n", out);
    if (n < t->nrows)
        fprintf(out, "<p class=\"note\">the first %zu of %zu steps</p>\n", n, t->nrows);
}

/* Horizontal bars of a top table (total_ns, name). */
static void top_bars(FILE *out, const tr_rtable *t)
{
    if (!t || !t->nrows) {
        fputs("<p class=\"note\">none</p>\n", out);
        return;
    }
    int64_t max = cell_i(t, 0, "total_ns");
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%zu\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            150 + BAR_W + 200, t->nrows * 22 + 4);
    for (size_t i = 0; i < t->nrows; i++) {
        int64_t v = cell_i(t, i, "total_ns");
        double w = max > 0 ? (double)v * 400.0 / (double)max : 0;
        char tb[32];
        tr_fmt_time(tb, sizeof tb, (double)v / 1000.0, TR_UNIT_AUTO);
        fprintf(out, "<rect class=\"top\" x=\"0\" y=\"%zu\" width=\"%.2f\" height=\"16\"><title>", i * 22 + 2, w);
        esc(out, cell_s(t, i, "name"));
        fprintf(out, "</title></rect><text x=\"%.2f\" y=\"%zu\">%s ", w + 6, i * 22 + 15, tb);
        esc_cut(out, cell_s(t, i, "name"), 90);
        fputs("</text>\n", out);
    }
    fputs("</svg>\n", out);
}

/* ---- the timeline overview ---- */

typedef struct {
    char label[64];
    int64_t rank;          /* with two ranks or more; else 0 */
    int gpu;               /* a stream's lane, not a thread's */
    size_t merged;         /* merge_by_rank(): the threads, or busy streams, it stands for */
    unsigned char bins[TL_BINS];
} lane;

/* How the lanes are drawn: one a thread or stream; of many ranks, two a rank
 * (its threads' busy time merged, and its streams'); of more, one a rank (its
 * streams'). */
enum { LANES_EACH, LANES_PER_RANK, LANES_GPU_PER_RANK };

typedef struct {
    int64_t t0, t1;        /* the run's span; t1 <= t0: no events with a duration */
    lane *lanes;
    size_t nthr, nlanes, cap, dropped;
    size_t nranks;         /* of the run.db */
    size_t lane_ranks;     /* merge_by_rank(): of the lanes (--rank selects some) */
    int merged;            /* LANES_* */
    tr_i64map index;       /* lane_key() -> index into lanes */
} timeline_lanes;

/* threads.id and streams.id apart */
static int64_t lane_key(int64_t id, int stream)
{
    return (int64_t)(((uint64_t)id << 1) | (unsigned)stream);
}

static void timeline_free(timeline_lanes *tl)
{
    free(tl->lanes);
    tl->lanes = NULL;
    tr_i64map_free(&tl->index);
}

static tr_status db_fail(tr_error *err, sqlite3 *db)
{
    return tr_fail(err, TR_ERR_INPUT, "run database: %s", sqlite3_errmsg(db));
}

/* The lanes, a thread's then a stream's, in the order they are drawn; those
 * of ranks --rank leaves out are not drawn, and with two ranks or more each
 * label starts with its rank. */
static tr_status timeline_lanes_load(timeline_lanes *tl, sqlite3 *db, const tr_rank_map *ranks,
                                     tr_error *err)
{
    static const char *const lane_sql[] = {
        "SELECT t.id, 'tid ' || t.tid || coalesce(' ' || s.value, '') FROM threads t "
        "LEFT JOIN strings s ON s.id = t.name_id ORDER BY t.process_id, t.tid",
        "SELECT x.id, 'gpu ' || d.device || ' stream ' || x.stream FROM streams x "
        "JOIN devices d ON d.id = x.device_id ORDER BY d.source_id, d.device, x.stream"};
    for (int k = 0; k < 2; k++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, lane_sql[k], -1, &st, NULL) != SQLITE_OK)
            return db_fail(err, db);
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t key = sqlite3_column_int64(st, 0);
            int64_t thread = k == 0 ? key : -1, stream = k == 0 ? -1 : key;
            if (!tr_rank_map_ok(ranks, thread, stream))
                continue;
            if (tl->nlanes == TL_READ_LANES) {
                tl->dropped++;
                continue;
            }
            if (tl->nlanes == tl->cap) {
                size_t cap = tl->cap ? 2 * tl->cap : TL_MAX_LANES;
                lane *v = realloc(tl->lanes, cap * sizeof *v);
                if (!v) {
                    sqlite3_finalize(st);
                    return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
                }
                tl->lanes = v;
                tl->cap = cap;
            }
            if (tr_i64map_put(&tl->index, lane_key(key, k), (int64_t)tl->nlanes) < 0) {
                sqlite3_finalize(st);
                return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            }
            lane *l = &tl->lanes[tl->nlanes++];
            memset(l, 0, sizeof *l);
            l->gpu = k;
            const char *text = (const char *)sqlite3_column_text(st, 1);
            if (ranks->nranks > 1) {
                l->rank = tr_rank_map_event(ranks, thread, stream);
                snprintf(l->label, sizeof l->label, "rank %lld %s", (long long)l->rank, text ? text : "");
            } else
                snprintf(l->label, sizeof l->label, "%s", text ? text : "");
        }
        sqlite3_finalize(st);
        if (k == 0)
            tl->nthr = tl->nlanes;
    }
    tl->nranks = ranks->nranks;
    return TR_OK;
}

/* Marks the bins each lane is busy in: host lanes by their top-level events
 * (which cover everything below them), stream lanes by their GPU activities. */
static tr_status timeline_fill(timeline_lanes *tl, sqlite3 *db, tr_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT start_ns, end_ns, thread_id, stream_id FROM events WHERE "
                           "(thread_id IS NOT NULL AND parent_id IS NULL AND flags & 1 = 0) OR kind IN (7, 8, 9)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, db);
    int64_t t0 = tl->t0;
    double span = (double)(tl->t1 - t0);
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t s = sqlite3_column_int64(st, 0), e = sqlite3_column_int64(st, 1);
        int gpu = sqlite3_column_type(st, 3) != SQLITE_NULL;
        int64_t l;
        if (!tr_i64map_get(&tl->index, lane_key(sqlite3_column_int64(st, gpu ? 3 : 2), gpu), &l)
            || !tr_times_ok(s, e) || s < t0)
            continue;
        size_t b0 = (size_t)((double)(s - t0) * TL_BINS / span), b1 = (size_t)((double)(e - t0) * TL_BINS / span);
        if (b0 >= TL_BINS)
            b0 = TL_BINS - 1;
        if (b1 >= TL_BINS)
            b1 = TL_BINS - 1;
        memset(tl->lanes[l].bins + b0, 1, b1 - b0 + 1);
    }
    sqlite3_finalize(st);
    return TR_OK;
}

static int busy(const lane *l)
{
    return memchr(l->bins, 1, TL_BINS) != NULL;
}

static int by_rank_then_host(const void *a, const void *b)
{
    const lane *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->gpu - y->gpu;
}

/* Of many ranks, a lane each thread and stream would show only the first
 * ranks: instead a rank's threads are one lane (busy where any of them is)
 * and its streams another, in rank order; where two a rank do not fit, the
 * streams' lanes alone (the GPU's gaps are what the overview is for), up to
 * TL_MAX_RANK_LANES ranks.  A rank whose streams are all idle keeps its empty
 * GPU lane: an idle rank is what a reader looks for.  -1 out of memory. */
static int merge_by_rank(timeline_lanes *tl)
{
    tr_i64map at;
    tr_i64map_init(&at);
    size_t n = 0;
    int any_gpu = 0;
    for (size_t l = 0; l < tl->nlanes; l++) {
        lane *from = &tl->lanes[l];
        int64_t key = (int64_t)(((uint64_t)from->rank << 1) | (unsigned)from->gpu), i;
        any_gpu |= from->gpu;
        if (tr_i64map_get(&at, key, &i)) {
            lane *to = &tl->lanes[i];
            to->merged += !from->gpu || busy(from);
            for (size_t b = 0; b < TL_BINS; b++)
                to->bins[b] |= from->bins[b];
            continue;
        }
        if (tr_i64map_put(&at, key, (int64_t)n) < 0) {
            tr_i64map_free(&at);
            return -1;
        }
        /* merged lane n is made from lane l >= n: nothing is overwritten unread */
        if (n != l)
            tl->lanes[n] = *from;
        tl->lanes[n].merged = !tl->lanes[n].gpu || busy(&tl->lanes[n]);
        n++;
    }
    tr_i64map_free(&at);
    qsort(tl->lanes, n, sizeof *tl->lanes, by_rank_then_host);
    tl->lane_ranks = 0;
    for (size_t l = 0; l < n; l++)
        tl->lane_ranks += l == 0 || tl->lanes[l].rank != tl->lanes[l - 1].rank;
    tl->merged = LANES_PER_RANK;
    tl->nlanes = n;
    if (n > TL_MAX_LANES) {
        /* the streams' lanes, or the threads' where no stream was read */
        size_t k = 0;
        for (size_t l = 0; l < n; l++)
            if (tl->lanes[l].gpu == any_gpu)
                tl->lanes[k++] = tl->lanes[l];
        tl->merged = LANES_GPU_PER_RANK;
        tl->nlanes = k < TL_MAX_RANK_LANES ? k : TL_MAX_RANK_LANES;
        tl->dropped = k - tl->nlanes;
    } else {
        tl->dropped = 0;
    }
    for (size_t l = 0; l < tl->nlanes; l++) {
        lane *ln = &tl->lanes[l];
        snprintf(ln->label, sizeof ln->label, "rank %lld %s (%zu)", (long long)ln->rank,
                 ln->gpu ? "GPU" : "host", ln->merged);
    }
    return 0;
}

/* Whether drawing the first keep_threads threads and keep_streams busy streams
 * leaves a rank out, or a rank with GPU work without a stream: then
 * merge_by_rank() shows more.  -1 out of memory. */
static int ranks_left_out(const timeline_lanes *tl, size_t keep_threads, size_t keep_streams)
{
    enum { ANY = 1, KEPT = 2, GPU = 4, GPU_KEPT = 8 };
    tr_i64map seen;   /* rank -> the flags above */
    tr_i64map_init(&seen);
    int rc = 0;
    for (size_t l = 0, streams = 0; l < tl->nlanes && rc == 0; l++) {
        const lane *ln = &tl->lanes[l];
        int kept, flags;
        if (!ln->gpu) {
            kept = l < keep_threads;
            flags = ANY | (kept ? KEPT : 0);
        } else if (busy(ln)) {
            kept = streams++ < keep_streams;
            flags = ANY | GPU | (kept ? KEPT | GPU_KEPT : 0);
        } else {
            continue;
        }
        int64_t had = 0;
        (void)tr_i64map_get(&seen, ln->rank, &had);
        if (tr_i64map_put(&seen, ln->rank, had | flags) < 0)
            rc = -1;
    }
    for (size_t l = 0; l < tl->nlanes && rc == 0; l++) {
        int64_t f = 0;
        (void)tr_i64map_get(&seen, tl->lanes[l].rank, &f);
        if ((f & ANY && !(f & KEPT)) || (f & GPU && !(f & GPU_KEPT)))
            rc = 1;
    }
    tr_i64map_free(&seen);
    return rc;
}

/* A stream without activities (nvprof's and Nsight's -1, which only the
 * context-wide syncs name) is no lane: an empty row says nothing, and it would
 * take the place of one that does.  Of more than TL_MAX_LANES, the streams
 * keep at least half (the GPU's gaps are what the overview is for), the
 * threads the rest, each in their order; unless that leaves a rank out, when
 * a rank's threads and its streams are a lane each (merge_by_rank()). */
static tr_status keep_drawn_lanes(timeline_lanes *tl, tr_error *err)
{
    size_t nstreams = 0;
    for (size_t l = tl->nthr; l < tl->nlanes; l++)
        nstreams += busy(&tl->lanes[l]) != 0;
    size_t total = tl->nthr + nstreams;
    size_t room = tl->nthr < TL_MAX_LANES / 2 ? TL_MAX_LANES - tl->nthr : TL_MAX_LANES / 2;
    size_t keep_streams = nstreams < room ? nstreams : room;
    size_t keep_threads = TL_MAX_LANES - keep_streams;
    if (total > TL_MAX_LANES && tl->nranks > 1) {
        int left_out = ranks_left_out(tl, keep_threads, keep_streams);
        if (left_out > 0 && merge_by_rank(tl) == 0)
            return TR_OK;
        if (left_out != 0)
            return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    nstreams = 0;
    for (size_t l = tl->nthr; l < tl->nlanes; l++)
        if (busy(&tl->lanes[l]))
            tl->lanes[tl->nthr + nstreams++] = tl->lanes[l];
    tl->nlanes = total;
    if (total <= TL_MAX_LANES)
        return TR_OK;
    memmove(&tl->lanes[keep_threads], &tl->lanes[tl->nthr], keep_streams * sizeof *tl->lanes);
    tl->nthr = keep_threads;
    tl->nlanes = TL_MAX_LANES;
    tl->dropped += total - TL_MAX_LANES;
    return TR_OK;
}

/* ranks: the --rank set (NULL or empty: every rank). */
static tr_status timeline_compute(timeline_lanes *tl, sqlite3 *db, const struct tr_rank_set *ranks,
                                  tr_error *err)
{
    memset(tl, 0, sizeof *tl);
    tr_rank_map lane_ranks;
    tr_status rc = tr_rank_map_load(&lane_ranks, db, 0, ranks, err);
    sqlite3_stmt *st = NULL;
    if (rc == TR_OK && sqlite3_prepare_v2(db, "SELECT min(start_ns), max(end_ns) FROM events", -1, &st,
                                          NULL) != SQLITE_OK)
        rc = db_fail(err, db);
    if (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        tl->t0 = sqlite3_column_int64(st, 0);
        tl->t1 = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    if (rc == TR_OK && (tl->t1 <= tl->t0 || !tr_times_ok(tl->t0, tl->t1)))
        tl->t1 = tl->t0;   /* nothing to draw */
    else if (rc == TR_OK && (rc = timeline_lanes_load(tl, db, &lane_ranks, err)) == TR_OK)
        rc = timeline_fill(tl, db, err);
    if (rc == TR_OK)
        rc = keep_drawn_lanes(tl, err);
    tr_rank_map_free(&lane_ranks);
    return rc;
}

static void timeline_write(FILE *out, const timeline_lanes *tl)
{
    if (tl->t1 <= tl->t0) {
        fputs("<p class=\"note\">no events with a duration</p>\n", out);
        return;
    }
    double span = (double)(tl->t1 - tl->t0);
    char tb[32];
    tr_fmt_time(tb, sizeof tb, span / 1000.0, TR_UNIT_AUTO);
    fprintf(out, "<p class=\"note\">%zu lanes over %s; each column is %s/%d; a blank is a gap in the lane</p>\n",
            tl->nlanes, tb, tb, TL_BINS);
    static const char *const merged_note[] = {
        [LANES_PER_RANK] = "a lane for each rank's threads and one for its streams, each busy where any of "
                           "them is (in brackets: how many threads, how many streams with GPU work)",
        [LANES_GPU_PER_RANK] = "a lane for each rank's streams, busy where any of them is (in brackets: how "
                               "many have GPU work); its threads are not drawn"};
    if (tl->merged != LANES_EACH)
        fprintf(out, "<p class=\"note\">%zu ranks: %s</p>\n", tl->lane_ranks, merged_note[tl->merged]);
    fprintf(out, "<svg class=\"chart\" width=\"%d\" height=\"%zu\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            220 + TL_BINS, tl->nlanes * 16 + 4);
    for (size_t l = 0; l < tl->nlanes; l++) {
        const lane *ln = &tl->lanes[l];
        int y = (int)(l * 16 + 2);
        fprintf(out, "<text x=\"0\" y=\"%d\">", y + 11);
        esc_cut(out, ln->label, 32);
        fprintf(out, "</text><rect class=\"lane\" x=\"220\" y=\"%d\" width=\"%d\" height=\"12\"/>", y, TL_BINS);
        for (size_t b = 0; b < TL_BINS;) {
            if (!ln->bins[b]) {
                b++;
                continue;
            }
            size_t e = b;
            while (e < TL_BINS && ln->bins[e])
                e++;
            fprintf(out, "<rect class=\"%s\" x=\"%zu\" y=\"%d\" width=\"%zu\" height=\"12\"/>",
                    ln->gpu ? "comp" : "host", 220 + b, y, e - b);
            b = e;
        }
        fputc('\n', out);
    }
    fputs("</svg>\n", out);
    if (tl->dropped)
        fprintf(out, "<p class=\"note\">%zu more %s not drawn</p>\n", tl->dropped,
                tl->merged == LANES_EACH ? "threads and streams" : "ranks");
}

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1400px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}h3{font-size:15px}"
    "table{border-collapse:collapse;margin:8px 0;font-size:13px}th,td{padding:2px 8px;border-bottom:1px solid #eee}"
    "th{background:#f4f4f4}.l{text-align:left}.r{text-align:right;font-variant-numeric:tabular-nums}"
    ".note{color:#555;font-size:13px;margin:4px 0}.chart text{font-size:12px;fill:#222}"
    ".comp{fill:#4e79a7;background:#4e79a7}.comm{fill:#e15759;background:#e15759}"
    ".mem{fill:#f28e2b;background:#f28e2b}.idle{fill:#d9d9d9;background:#d9d9d9}"
    ".host{fill:#59a14f}.lane{fill:#f7f7f7}.top{fill:#76b7b2}"
    ".sw{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:-1px}";

static const struct { const char *spec, *title; size_t rows; } key_tables[] = {
    {"kernels", "Kernels", TABLE_ROWS},
    {"api", "CUDA API", TABLE_ROWS},
    {"memcpy", "Copies and sets", TABLE_ROWS},
    {"nvtx", "Ranges and ops", TABLE_ROWS},
    {"launch", "Launches", TABLE_ROWS},
    {"gaps", "GPU gaps", 10},
    {"advice", "Findings", TABLE_ROWS},
};

/* --rank: the Run table describes the whole run.db, everything after it the
 * selected ranks' events; say so where the two meet. */
static void rank_note(FILE *out, const struct tr_rank_set *ranks)
{
    fputs("<p class=\"note\">Run: the whole file. The tables and the timeline below: rank", out);
    fputs(ranks->n > 1 || ranks->v[0].lo != ranks->v[0].hi ? "s " : " ", out);
    for (size_t i = 0; i < ranks->n; i++) {
        fprintf(out, "%s%lld", i ? ", " : "", (long long)ranks->v[i].lo);
        if (ranks->v[i].hi != ranks->v[i].lo)
            fprintf(out, "-%lld", (long long)ranks->v[i].hi);
    }
    fputs(" only.</p>\n", out);
}

/* ---- the sections, computed on two threads ---- */

/* Every section is a scan of the events of its own, SQLite-bound and
 * independent of the others: all are computed before any is written, each
 * by whichever of two threads is free (the second on a connection of its
 * own), the longest first. */
enum { SEC_SUMMARY, SEC_GPU_TIME, SEC_STEPS, SEC_TIMELINE, SEC_KEY0 };
#define NKEY (sizeof key_tables / sizeof key_tables[0])
#define NSECTIONS (SEC_KEY0 + NKEY)

typedef struct {
    const char *spec;      /* the report; NULL: the timeline */
    tr_rresult r;
    timeline_lanes tl;
    tr_status st;
    tr_error err;
} section;

typedef struct {
    section *sec;
    size_t order[NSECTIONS];
    atomic_size_t next;
    const tr_analyze_opts *ao;
    const struct tr_rank_set *ranks;
} section_queue;

static void compute_sections(section_queue *q, sqlite3 *db)
{
    for (size_t k; (k = atomic_fetch_add(&q->next, 1)) < NSECTIONS;) {
        section *s = &q->sec[q->order[k]];
        s->st = s->spec ? tr_report_compute(db, s->spec, q->ao, &s->r, &s->err)
                        : timeline_compute(&s->tl, db, q->ranks, &s->err);
    }
}

typedef struct { section_queue *q; sqlite3 *db; } section_worker;

static void *section_thread(void *arg)
{
    section_worker *w = arg;
    compute_sections(w->q, w->db);
    return NULL;
}

/* Longest first (measured on a 10^6-event run), so neither thread is left
 * with a long one at the end; NULL stands for the timeline. */
static size_t cost_rank(const char *spec)
{
    static const char *const longest[] = {"advice", "summary", "gaps", NULL, "gpu-time", "api", "launch",
                                          "kernels", "nvtx", "steps", "memcpy"};
    for (size_t i = 0; i < sizeof longest / sizeof longest[0]; i++)
        if (spec == longest[i] || (spec && longest[i] && strcmp(spec, longest[i]) == 0))
            return i;
    return sizeof longest / sizeof longest[0];
}

static tr_status sections_compute(section *sec, sqlite3 *db, const tr_analyze_opts *ao,
                                  const struct tr_rank_set *ranks, tr_error *err)
{
    section_queue q = {.sec = sec, .ao = ao, .ranks = ranks};
    atomic_init(&q.next, 0);
    const char *specs[NSECTIONS] = {"summary", "gpu-time", "steps", NULL};
    for (size_t k = 0; k < NKEY; k++)
        specs[SEC_KEY0 + k] = key_tables[k].spec;
    for (size_t i = 0; i < NSECTIONS; i++) {
        sec[i].spec = specs[i];
        q.order[i] = i;
    }
    for (size_t i = 1; i < NSECTIONS; i++)   /* insertion sort by cost rank: a dozen entries */
        for (size_t j = i; j > 0 && cost_rank(specs[q.order[j]]) < cost_rank(specs[q.order[j - 1]]); j--) {
            size_t t = q.order[j];
            q.order[j] = q.order[j - 1];
            q.order[j - 1] = t;
        }
    sqlite3 *peer = NULL;
    pthread_t th;
    section_worker w = {&q, NULL};
    int threaded = tr_rundb_open_peers(db, &peer, 1) == 1;
    if (threaded) {
        w.db = peer;
        threaded = pthread_create(&th, NULL, section_thread, &w) == 0;
    }
    compute_sections(&q, db);
    if (threaded)
        pthread_join(th, NULL);
    if (peer)
        sqlite3_close(peer);
    /* the first failure in the order of the page, as when one thread did it all */
    for (size_t i = 0; i < NSECTIONS; i++)
        if (sec[i].st != TR_OK)
            return tr_error_copy(err, &sec[i].err);
    return TR_OK;
}

static void sections_free(section *sec)
{
    for (size_t i = 0; i < NSECTIONS; i++) {
        tr_rresult_free(&sec[i].r);
        timeline_free(&sec[i].tl);
    }
}

static void write_key_table(FILE *out, size_t k, const tr_rresult *r)
{
    fprintf(out, "<h2 id=\"%s\">", key_tables[k].spec);
    esc(out, key_tables[k].title);
    fputs("</h2>\n", out);
    if (r->nodata) {
        fputs("<p class=\"note\">", out);
        esc(out, r->nodata);
        fputs("</p>\n", out);
    }
    for (size_t i = 0; i < r->ntables; i++) {
        if (r->ntables > 1) {
            fputs("<h3>", out);
            esc(out, r->tables[i].title);
            fputs("</h3>\n", out);
        }
        html_table(out, &r->tables[i], key_tables[k].rows);
    }
}

static void write_page(FILE *out, const char *title, const struct tr_rank_set *ranks, const section *sec)
{
    const tr_rresult *sum = &sec[SEC_SUMMARY].r;
    if (!title)
        title = "Trace report";
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<meta name=\"viewport\" content=\"width=device-width\"><title>", out);
    esc(out, title);
    fprintf(out, "</title><style>%s</style></head><body>\n<h1>", css);
    esc(out, title);
    fputs("</h1>\n<h2 id=\"summary\">Summary</h2>\n", out);
    const tr_rtable *run = table_titled(sum, "Run"), *kinds = table_titled(sum, "Events by kind");
    if (run)
        html_table(out, run, run->nrows);
    if (run && ranks && ranks->n)
        rank_note(out, ranks);
    if (kinds)
        html_table(out, kinds, kinds->nrows);
    if (!run)
        fputs("<p class=\"note\">no events</p>\n", out);
    fputs("<h2 id=\"gpu-time\">GPU time per device</h2>\n", out);
    gpu_bars(out, &sec[SEC_GPU_TIME].r);
    fputs("<h2 id=\"steps\">GPU time per step</h2>\n", out);
    step_bars(out, &sec[SEC_STEPS].r);
    fputs("<h2 id=\"top\">Top kernels</h2>\n", out);
    top_bars(out, table_titled(sum, "Top kernels"));
    fputs("<h2>Top ops and ranges</h2>\n", out);
    top_bars(out, table_titled(sum, "Top ops"));
    fputs("<h2 id=\"timeline\">Timeline</h2>\n", out);
    timeline_write(out, &sec[SEC_TIMELINE].tl);
    const tr_rtable *dev = table_titled(sum, "Devices"), *thr = table_titled(sum, "Threads");
    if (dev || thr) {
        fputs("<h2>Devices and threads</h2>\n", out);
        if (dev)
            html_table(out, dev, TABLE_ROWS);
        if (thr)
            html_table(out, thr, TABLE_ROWS);
    }
    for (size_t k = 0; k < NKEY; k++)
        write_key_table(out, k, &sec[SEC_KEY0 + k].r);
    fputs("<p class=\"note\">Columns are defined in docs/reports.md; trace-analyze --report NAME prints "
          "any table whole, as text, csv, json or markdown.</p>\n</body></html>\n", out);
}

tr_status tr_html_report(sqlite3 *db, const char *title, const struct tr_rank_set *ranks, FILE *out,
                         tr_error *err)
{
    tr_analyze_opts ao;
    memset(&ao, 0, sizeof ao);
    ao.limit = -1;
    /* --rank: the tables count the events of those ranks (a shallow copy of the set) */
    tr_selection sel;
    memset(&sel, 0, sizeof sel);
    tr_status st = TR_OK;
    if (ranks && ranks->n) {
        sel.ranks = *ranks;
        ao.select = &sel;
        st = tr_selection_bind(&sel, db, err);
    }
    section sec[NSECTIONS];
    memset(sec, 0, sizeof sec);
    if (st == TR_OK)
        st = sections_compute(sec, db, &ao, ranks, err);
    if (st == TR_OK)
        write_page(out, title, ranks, sec);
    sections_free(sec);
    tr_selection_unbind(&sel);
    if (st == TR_OK && ferror(out))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error on output");
    return st;
}
