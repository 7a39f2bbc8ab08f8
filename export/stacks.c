/* stacks.c - folded stacks ("root;...;leaf VALUE"), and PyTorch 1.13's export_stacks layout. */
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/scan.h"
#include "analyze/compat_torch.h"
#include "lib/model.h"
#include "lib/checked.h"
#include "lib/escape.h"
#include "lib/rundb.h"

/* Frames written in all folded lines together: about 2.5 GB of text at ten bytes
 * a frame, far beyond any real profile (10^6 stacks of 100 frames). */
#define FOLDED_MAX_FRAMES ((uint64_t)1 << 28)

typedef struct {
    char *path;
    size_t len;
    int64_t value;
} line;

/* A frame is cut past this many bytes (the chrome export's longest name): a
 * line repeats every frame of its path, so one huge name under many stacks
 * would otherwise multiply into gigabytes of text, all held for the sort.
 * No real name comes near it (the longest C++ kernel names are tens of KB). */
#define FRAME_MAX (64 * 1024)

/* A frame cut at FRAME_MAX, as tr_scan_put_path() takes it; ctx points at
 * the spelling's writer (folded or PyTorch's). */
typedef void (*frame_writer)(FILE *f, const char *s, size_t len);
static const frame_writer folded_spelling = tr_put_folded_frame, torch_spelling = tr_put_torch_frame;

static int put_frame(FILE *f, const char *s, size_t len, void *ctx)
{
    size_t cut = tr_utf8_cut(s, len, FRAME_MAX);
    (*(const frame_writer *)ctx)(f, s, cut);
    if (cut < len)
        fputs(TR_ELLIPSIS, f);
    return 0;
}

static int cmp_line(const void *a, const void *b)
{
    const line *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp(x->path, y->path, n);
    if (c)
        return c;
    return x->len < y->len ? -1 : x->len > y->len;
}

static tr_status write_folded(tr_scan *sc, FILE *out, tr_error *err)
{
    int m = (int)(tr_scan_metric(sc) - tr_export_metrics);
    size_t n = 0;
    for (size_t i = 1; i < sc->nnodes; i++)
        n += sc->nodes[i].v[m] != 0;
    /* Each line repeats its whole path, so nested events cost the square of their
     * depth: 10^5 nested events would make terabytes.  Refuse early instead. */
    uint32_t *depth = calloc(sc->nnodes ? sc->nnodes : 1, sizeof *depth);
    if (!depth)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    uint64_t frames = 0;
    uint32_t deepest = 0;
    for (size_t i = 1; i < sc->nnodes; i++) {
        depth[i] = depth[sc->nodes[i].parent] + 1;   /* a parent is made before its children */
        if (sc->nodes[i].v[m])
            frames += depth[i];
        deepest = depth[i] > deepest ? depth[i] : deepest;
    }
    free(depth);
    if (frames > FOLDED_MAX_FRAMES)
        return tr_fail(err, TR_ERR_INPUT, "%s: folded stacks would repeat %llu frames (stacks up to "
                       "%u deep): too many for this format; --flamegraph and --chrome draw them",
                       tr_rundb_name(sc->db), (unsigned long long)frames, deepest);
    line *lines = calloc(n ? n : 1, sizeof *lines);
    if (!lines)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    tr_status st = TR_OK;
    size_t k = 0;
    for (size_t i = 1; i < sc->nnodes && st == TR_OK; i++) {
        if (!sc->nodes[i].v[m])
            continue;
        FILE *f = open_memstream(&lines[k].path, &lines[k].len);
        if (!f) {
            st = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            break;
        }
        int bad = tr_scan_put_path(f, sc, (uint32_t)i, put_frame, (void *)&folded_spelling);
        if (fclose(f) != 0 || bad)
            st = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
        lines[k++].value = sc->nodes[i].v[m];
    }
    if (st == TR_OK) {
        qsort(lines, k, sizeof *lines, cmp_line);
        /* two stacks can escape to the same text: merge them */
        for (size_t i = 0; i < k;) {
            int64_t v = lines[i].value;
            size_t j = i + 1;
            for (; j < k && !cmp_line(&lines[i], &lines[j]); j++)
                tr_sat_acc(&v, lines[j].value);
            if (v != 0) {
                fwrite(lines[i].path, 1, lines[i].len, out);
                fprintf(out, " %lld\n", (long long)v);
            }
            i = j;
        }
    }
    for (size_t i = 0; i < n; i++)
        free(lines[i].path);
    free(lines);
    return st;
}

/* PyTorch 1.13 export_stacks(path, metric): one line per event that has frames, in
 * (start, -end) order, frames only (no event name), value truncated to whole µs, lines
 * under 1 µs dropped, nothing merged (SEMANTICS.md §5). */
static tr_status write_torch(tr_scan *sc, FILE *out, tr_error *err)
{
    const tr_export_metric *metric = sc->o->metric ? sc->o->metric
                                                   : &tr_export_metrics[TR_M_SELF_CPU];
    int gpu = metric == &tr_export_metrics[TR_M_SELF_GPU];
    if (metric != &tr_export_metrics[TR_M_SELF_CPU] && !gpu)
        return tr_fail(err, TR_ERR_USAGE, "metric should be one of: ['self_cpu_time_total', "
                       "'self_cuda_time_total'] with --compat torch");
    sqlite3_stmt *st = NULL;
    /* PyTorch's self CPU time: the children's durations summed, not their union */
    tr_torch_compat tc;
    tr_status status = tr_torch_compat_load(sc->db, &tc, err);
    if (status != TR_OK)
        return status;
    char sql[256];
    snprintf(sql, sizeof sql, "SELECT e.stack_id, e.cpu_self_ns, e.gpu_self_ns, e.id FROM events e "
             "WHERE e.stack_id IS NOT NULL AND (e.flags & %d) = 0 "
             "ORDER BY e.start_ns, e.end_ns DESC, e.id", TR_FLAG_MERGED);
    if (sqlite3_prepare_v2(sc->db, sql, -1, &st, NULL) != SQLITE_OK) {
        tr_torch_compat_free(&tc);
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s",
                       tr_rundb_name(sc->db), sqlite3_errmsg(sc->db));
    }
    int rc;
    size_t with_frames = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        with_frames++;
        int64_t v = sqlite3_column_int64(st, gpu ? 2 : 1);
        int claimed;
        tr_torch_metrics tm;
        if (!gpu && tr_torch_compat_get(&tc, sqlite3_column_int64(st, 3), &tm, &claimed))
            v = tm.cpu_self;
        v /= 1000;   /* ns -> whole µs, toward 0 */
        if (v <= 0)
            continue;
        uint32_t node;
        if ((status = tr_scan_frames_node(sc, sqlite3_column_int64(st, 0), &node, err)) != TR_OK)
            break;
        if (!node)
            continue;
        if (tr_scan_put_path(out, sc, node, put_frame, (void *)&torch_spelling) < 0) {
            status = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            break;
        }
        fprintf(out, " %lld\n", (long long)v);
    }
    if (status == TR_OK && rc != SQLITE_DONE)
        status = tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s",
                         tr_rundb_name(sc->db), sqlite3_errmsg(sc->db));
    if (status == TR_OK && sc->o->no_frames)
        *sc->o->no_frames = with_frames == 0;
    sqlite3_finalize(st);
    tr_torch_compat_free(&tc);
    return status;
}

tr_status tr_export_stacks(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    tr_scan sc;
    tr_export_opts oo = *o;
    if (o->compat_torch)
        oo.source = TR_SRC_FRAMES;
    tr_status st = tr_scan_init(&sc, db, &oo, err);
    if (st == TR_OK)
        st = o->compat_torch ? write_torch(&sc, out, err)
                             : (st = tr_scan_run(&sc, 0, NULL, NULL, err)) != TR_OK
                                   ? st : write_folded(&sc, out, err);
    tr_scan_free(&sc);
    return st;
}
