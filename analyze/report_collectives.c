/*
 * report_collectives.c - --report collectives: NCCL/RCCL collective calls
 * matched across ranks (lib/collectives.h), on clocks aligned to the lowest
 * rank's, and the comm/compute overlap of each rank as HTA computes it.
 *
 * Per call: the arrival skew (last rank in minus first rank in: how long the
 * earliest rank waited), the duration on each rank (min/median/max and who
 * had the longest), and the bandwidth where the trace gives the size.  The
 * bandwidth is taken over the duration of the last rank in, the one that did
 * not wait: algbw = bytes / that duration, busbw = algbw times the nccl-tests
 * factor of the collective (2(n-1)/n for all-reduce, (n-1)/n for all-gather,
 * reduce-scatter and all-to-all, 1 otherwise).
 *
 * Per rank: its calls, its clock offset (method, residual), the time it
 * waited in collectives (sum over calls of last-in minus its own start), how
 * often it came in last, and HTA's comm_comp_overlap: the share of its
 * communication kernels' time (the union of their intervals) that computation
 * kernels on the same rank overlap (|comm ∩ comp| / |comm|).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "lib/checked.h"
#include "lib/collectives.h"
#include "lib/model.h"

const tr_report_param tr_collectives_params[] = {
    {"warn", TR_PARAM_TIME, TR_COLL_SKEW_WARN_NS, "warn when a rank's residual clock skew after alignment exceeds this"},
    {NULL, 0, 0, NULL},
};

const tr_report_col tr_collectives_cols[] = {
    {"call", "#", TR_COL_INT, 0},
    {"pg", "PG", TR_COL_STR, 0},
    {"op", "Op", TR_COL_STR, 0},
    {"seq", "Seq", TR_COL_INT, 0},
    {"ranks", "Ranks", TR_COL_INT, 0},
    {"start_ns", "Start", TR_COL_NS, TR_COL_MACHINE_ONLY},
    {"bytes", "Size", TR_COL_BYTES, 0},
    {"skew_ns", "Arrival skew", TR_COL_NS, 0},
    {"first_in", "First in", TR_COL_INT, 0},
    {"last_in", "Last in", TR_COL_INT, 0},
    {"dur_min_ns", "Min", TR_COL_NS, 0},
    {"dur_median_ns", "Median", TR_COL_NS, 0},
    {"dur_max_ns", "Max", TR_COL_NS, 0},
    {"longest_on", "Longest on", TR_COL_INT, 0},
    {"algbw_gbps", "Alg GB/s", TR_COL_REAL, 0},
    {"busbw_gbps", "Bus GB/s", TR_COL_REAL, 0},
    {NULL, NULL, 0, 0},
};

static const tr_report_col rank_cols[] = {
    {"rank", "Rank", TR_COL_INT, 0},
    {"calls", "Calls", TR_COL_INT, 0},
    {"offset_ns", "Clock offset", TR_COL_INT, 0},
    {"method", "Method", TR_COL_STR, 0},
    {"residual_ns", "Residual", TR_COL_NS, 0},
    {"wait_ns", "Waited", TR_COL_NS, 0},
    {"last_in", "Last in", TR_COL_INT, 0},
    {"comm_ns", "Comm", TR_COL_NS, 0},
    {"comp_ns", "Compute", TR_COL_NS, 0},
    {"overlap_ns", "Overlapped", TR_COL_NS, 0},
    {"overlap_pct", "Overlap %", TR_COL_PCT, 0},
    {"name", "Source", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};

static const tr_report_col part_cols[] = {
    {"call", "#", TR_COL_INT, 0},
    {"rank", "Rank", TR_COL_INT, 0},
    {"start_ns", "Start", TR_COL_NS, 0},
    {"dur_ns", "Duration", TR_COL_NS, 0},
    {"wait_ns", "Waited", TR_COL_NS, 0},
    {"event_id", "Event", TR_COL_INT, TR_COL_MACHINE_ONLY},
    {NULL, NULL, 0, 0},
};

static double bus_factor(const char *op, int64_t n)
{
    if (n < 1)
        return 1.0;
    double f = (double)(n - 1) / (double)n;
    if (!strcmp(op, "allreduce"))
        return 2.0 * f;
    if (!strcmp(op, "allgather") || !strcmp(op, "reducescatter") || !strcmp(op, "alltoall"))
        return f;
    return 1.0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The overlap scan of one run.db: kernels in start order, each to its rank. */
typedef struct {
    const tr_coll_set *s;
    tr_gt_scope *sc;          /* per rank */
    tr_i64map is_comm;        /* name id -> class */
    tr_i64map dev_rank;       /* devices.id -> rank index */
} ov_state;

static tr_status on_kernel(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    ov_state *o = arg;
    if (ev->kind != TR_KIND_KERNEL || ev->dev < 0)
        return TR_OK;
    int64_t r;
    if (!tr_i64map_get(&o->dev_rank, c->devs[ev->dev].id, &r))
        return TR_OK;
    int cls = tr_gt_class(c, &o->is_comm, ev);
    if (cls < 0)
        return tr_report_nomem(c);
    if (cls < 2)
        tr_gt_scope_add(&o->sc[r], cls, ev->start, ev->end, 0);
    return TR_OK;
}

/* Every run.db is scanned through a context of its own, with the selection
 * but its --rank part: the ranks kept are s's (tr_coll_restrict), and a rank
 * map resolved against one run.db means nothing in another. */
static tr_status overlap(tr_report_ctx *c, const tr_coll_set *s, tr_gt_scope *sc)
{
    tr_status st = TR_OK;
    tr_selection sel;
    if (c->sel) {
        sel = *c->sel;
        sel.rank_map = NULL;
        memset(&sel.ranks, 0, sizeof sel.ranks);
    }
    tr_analyze_opts o2 = *c->o;
    o2.select = c->sel ? &sel : NULL;
    tr_report_ctx base = *c;
    base.o = &o2;
    for (size_t i = 0; i < c->ndbs && st == TR_OK; i++) {
        tr_report_ctx sub;
        st = tr_report_ctx_sub(&base, i, &sub);
        tr_report_ctx *x = &sub;
        ov_state o = {s, sc, {0}, {0}};
        tr_i64map_init(&o.is_comm);
        tr_i64map_init(&o.dev_rank);
        for (size_t d = 0; st == TR_OK && d < x->ndevs; d++) {
            long r = tr_coll_rank_index(s, i, x->devs[d].source);
            if (r >= 0 && tr_i64map_put(&o.dev_rank, x->devs[d].id, r) < 0)
                st = tr_report_nomem(c);
        }
        if (st == TR_OK)
            st = tr_report_scan(x, TR_KBIT(TR_KIND_KERNEL), 0, TR_ORDER_START, NULL, NULL, on_kernel, &o);
        tr_i64map_free(&o.is_comm);
        tr_i64map_free(&o.dev_rank);
        c->skipped = x->skipped > c->skipped ? x->skipped : c->skipped;
        tr_report_ctx_sub_free(&sub);
        sqlite3_db_release_memory(c->dbs[i]);   /* many ranks: one page cache at a time */
    }
    return st;
}

static int rank_selected(void *ctx, int64_t rank)
{
    return tr_rank_set_has(ctx, rank);
}

static char *source_path(tr_report_ctx *c, const tr_coll_rank *rk)
{
    sqlite3_stmt *st;
    char *out = NULL;
    if (sqlite3_prepare_v2(c->dbs[rk->db], "SELECT path FROM sources WHERE id = ?", -1, &st, NULL) != SQLITE_OK)
        return strdup("");
    sqlite3_bind_int64(st, 1, rk->source);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
        out = strdup((const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    if (!out)
        out = strdup("");
    /* with many run.dbs, which one (unless it is the trace itself, ingested on the fly) */
    if (out && c->ndbs > 1 && c->db_names && c->db_names[rk->db] && strcmp(c->db_names[rk->db], out)) {
        char *both = NULL;
        if (asprintf(&both, "%s: %s", c->db_names[rk->db], out) >= 0) {
            free(out);
            out = both;
        }
    }
    return out;
}

/* One row a call matched across ranks: its arrival skew, first and last rank,
 * durations, bandwidth.  Sums each rank's wait for the last arrival in wait[]
 * and counts in last[] the calls it was last to; durs[]: scratch, a rank each.
 * 0, or -1 out of memory. */
static int calls_table(tr_rresult *r, const tr_coll_set *s, int64_t t0, int64_t *durs, int64_t *wait, int64_t *last)
{
    size_t nr = s->nranks;
    tr_rtable *t = tr_rtable_add(r, "Collective calls, matched across ranks (times on the reference rank's clock)",
                                 tr_collectives_cols);
    if (!t)
        return -1;
    for (size_t k = 0; k < s->ncalls; k++) {
        const tr_coll_call *cl = &s->calls[k];
        size_t n = 0;
        for (size_t q = 0; q < nr; q++)
            if (cl->parts[q].event_id >= 0) {
                durs[n++] = cl->parts[q].end - cl->parts[q].start;
                tr_sat_acc(&wait[q], cl->parts[cl->last_in].start - cl->parts[q].start);
            }
        last[cl->last_in]++;
        qsort(durs, n, sizeof *durs, cmp_i64);
        tr_cell *row = tr_rtable_row(t);
        if (!row || (cl->pg[0] && tr_cell_str(&row[1], cl->pg)) || tr_cell_str(&row[2], cl->op))
            return -1;
        tr_cell_int(&row[0], (int64_t)k);
        tr_cell_int(&row[3], cl->seq);
        tr_cell_int(&row[4], (int64_t)cl->present);
        tr_cell_ns(&row[5], cl->parts[cl->first_in].start - t0);
        if (cl->bytes >= 0)
            tr_cell_int(&row[6], cl->bytes);
        tr_cell_ns(&row[7], cl->arrival_skew);
        tr_cell_int(&row[8], s->ranks[cl->first_in].rank);
        tr_cell_int(&row[9], s->ranks[cl->last_in].rank);
        tr_cell_ns(&row[10], durs[0]);
        tr_cell_ns(&row[11], durs[(n - 1) / 2]);
        tr_cell_ns(&row[12], durs[n - 1]);
        tr_cell_int(&row[13], s->ranks[cl->slowest].rank);
        int64_t d = cl->parts[cl->last_in].end - cl->parts[cl->last_in].start;
        if (cl->bytes >= 0 && d > 0) {
            double algbw = (double)cl->bytes / (double)d;   /* bytes per ns = GB/s */
            tr_cell_real(&row[14], algbw);
            tr_cell_real(&row[15], algbw * bus_factor(cl->op, cl->group_size > 0 ? cl->group_size : (int64_t)nr));
        }
    }
    if (s->paired < s->ncalls
        && tr_rtable_note(t, "%zu of %zu call(s) are not on every rank of their group (%zu ranks here): profiling "
                             "windows that differ, or point-to-point calls", s->ncalls - s->paired, s->ncalls, nr))
        return -1;
    if (s->order_violations
        && tr_rresult_warn(r, "%lld call(s) end on some rank before another rank starts them, even after "
                              "alignment", (long long)s->order_violations))
        return -1;
    return 0;
}

/* One row a rank: clock alignment, waiting, and comm/compute overlap.  0, or -1 out of memory. */
static int ranks_table(tr_report_ctx *c, tr_rresult *r, const tr_coll_set *s, const tr_gt_scope *sc,
                       const int64_t *wait, const int64_t *last)
{
    tr_rtable *rt = tr_rtable_add(r, "Ranks: clock alignment, waiting, and comm/compute overlap (HTA)", rank_cols);
    if (!rt)
        return -1;
    for (size_t q = 0; q < s->nranks; q++) {
        const tr_coll_rank *rk = &s->ranks[q];
        tr_cell *row = tr_rtable_row(rt);
        if (!row || tr_cell_str(&row[3], tr_clock_method_name(rk->method)))
            return -1;
        tr_cell_int(&row[0], rk->rank);
        tr_cell_int(&row[1], rk->ncalls);
        tr_cell_int(&row[2], rk->offset_ns);
        tr_cell_ns(&row[4], rk->residual_ns);
        tr_cell_ns(&row[5], wait[q]);
        tr_cell_int(&row[6], last[q]);
        int64_t comm = tr_uacc_total(&sc[q].comm), comp = tr_uacc_total(&sc[q].comp);
        int64_t both = tr_sat_add(comm, comp) - tr_uacc_total(&sc[q].cc);
        tr_cell_ns(&row[7], comm);
        tr_cell_ns(&row[8], comp);
        tr_cell_ns(&row[9], both);
        tr_cell_pct(&row[10], (double)both, (double)comm);
        char *path = source_path(c, rk);
        int bad = !path || tr_cell_str(&row[11], path);
        free(path);
        if (bad)
            return -1;
    }
    return 0;
}

/* Each rank's part of each call, for a look at one rank or a plot.  0, or -1 out of memory. */
static int parts_table(tr_rresult *r, const tr_coll_set *s, int64_t t0)
{
    tr_rtable *pt = tr_rtable_add(r, "Calls by rank", part_cols);
    if (!pt)
        return -1;
    for (size_t k = 0; k < s->ncalls; k++) {
        const tr_coll_call *cl = &s->calls[k];
        for (size_t q = 0; q < s->nranks; q++) {
            const tr_coll_part *p = &cl->parts[q];
            if (p->event_id < 0)
                continue;
            tr_cell *row = tr_rtable_row(pt);
            if (!row)
                return -1;
            tr_cell_int(&row[0], (int64_t)k);
            tr_cell_int(&row[1], s->ranks[q].rank);
            tr_cell_ns(&row[2], tr_sat_sub(p->start, t0));
            tr_cell_ns(&row[3], tr_sat_sub(p->end, p->start));
            tr_cell_ns(&row[4], tr_sat_sub(cl->parts[cl->last_in].start, p->start));
            tr_cell_int(&row[5], p->event_id);
        }
    }
    return 0;
}

/* The clocks, and whether to trust the skews (warn: the residual skew, in ns,
 * past which they are uncertain).  0, or -1 out of memory. */
static int clock_notes(tr_rresult *r, const tr_coll_set *s, int64_t warn)
{
    size_t nr = s->nranks;
    if (tr_rresult_note(r, "%zu rank(s), %zu call(s), %zu paired on every rank of their group; clocks aligned to rank %lld's by the "
                           "ends of the matched calls (docs/ranks.md, \"Clock alignment\"): the offset is added "
                           "to the rank's own times", nr, s->ncalls, s->paired, (long long)s->ref_rank))
        return -1;
    if (s->offsets_stored && tr_rresult_note(r, "clock offsets as found at ingest (the run.db's clock_offsets table)"))
        return -1;
    if (nr == 1 && tr_rresult_note(r, "one rank: arrival skews and clock offsets need the traces of several ranks "
                                      "(trace-analyze --report collectives rank*.db)"))
        return -1;
    if (s->duplicate_ranks && tr_rresult_warn(r, "two sources claim the same rank; they are kept apart"))
        return -1;
    if (s->max_residual_ns > warn) {
        size_t worst = 0;
        for (size_t q = 0; q < nr; q++)
            if (s->ranks[q].residual_ns > s->ranks[worst].residual_ns)
                worst = q;
        if (tr_rresult_warn(r, "residual clock skew %lld ns on rank %lld exceeds %lld ns: collective ends "
                               "disagree after alignment, so arrival skews are uncertain by about that much",
                            (long long)s->max_residual_ns, (long long)s->ranks[worst].rank, (long long)warn))
            return -1;
    }
    return 0;
}

tr_status tr_report_collectives(tr_report_ctx *c, tr_rresult *r)
{
    tr_coll_set s;
    tr_coll_opts co = {1, NULL, 0};
    tr_status st = tr_coll_load(c->dbs, c->ndbs, &co, &s, c->err);
    if (st != TR_OK)
        return st;
    if (c->sel && c->sel->ranks.n && (st = tr_coll_restrict(&s, rank_selected, (void *)&c->sel->ranks, c->err)) != TR_OK) {
        tr_coll_set_free(&s);
        return st;
    }
    if (!s.ncalls) {
        if (tr_rresult_nodata(r, "no NCCL/RCCL collectives in the %s (no kernel named ncclKernel_*, "
                                 "ncclDevKernel_*, ...)", c->sel && c->sel->ranks.n ? "selected ranks" : "trace"))
            st = tr_report_nomem(c);
        tr_coll_set_free(&s);
        return st;
    }
    size_t nr = s.nranks;
    tr_gt_scope *sc = calloc(nr, sizeof *sc);
    int64_t *durs = malloc(nr * sizeof *durs), *wait = calloc(nr, sizeof *wait), *last = calloc(nr, sizeof *last);
    int64_t t0 = s.calls[0].parts[s.calls[0].first_in].start;
    if (!sc || !durs || !wait || !last || calls_table(r, &s, t0, durs, wait, last) < 0)
        st = tr_report_nomem(c);
    else if ((st = overlap(c, &s, sc)) == TR_OK
             && (ranks_table(c, r, &s, sc, wait, last) < 0 || parts_table(r, &s, t0) < 0
                 || clock_notes(r, &s, c->param[0]) < 0))
        st = tr_report_nomem(c);
    free(sc);
    free(durs);
    free(wait);
    free(last);
    tr_coll_set_free(&s);
    return st;
}
