/*
 * report_ranks.c - one row per rank (step time and gpu-time's breakdown of
 * its GPU work) and one row per step across ranks (the slowest rank and the
 * spread of the step time); and the ranks and step windows that the
 * rank-aware reports share (report_ranks.h).
 *
 * Step times are lengths of each rank's own windows, so they need no clock
 * alignment.  A GPU activity belongs to the rank of its device's source and to
 * the step whose window (on that rank) holds its launching call's start, as
 * the steps report assigns work; each (rank, step) is a gpu-time scope, fed
 * in start order by one scan, so memory is ranks x steps.
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/report_ranks.h"
#include "lib/checked.h"
#include "lib/format.h"
#include "lib/model.h"

/* ---- ranks and step windows ---- */

static tr_status rk_db_error(sqlite3 *db, tr_error *err)
{
    return tr_fail(err, TR_ERR_INPUT, "run database: cannot read the ranks: %s", sqlite3_errmsg(db));
}

static int cmp_rank(const void *pa, const void *pb)
{
    const tr_rk_rank *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->db != b->db)
        return a->db < b->db ? -1 : 1;
    return (a->source > b->source) - (a->source < b->source);
}

static int cmp_rkstep(const void *pa, const void *pb)
{
    const tr_rk_step *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->step > b->step) - (a->step < b->step);
}

long tr_rk_find(const tr_rk_set *s, size_t db, int64_t source)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].db == db && s->v[i].source == source)
            return (long)i;
    return -1;
}

static tr_status load_sources(sqlite3 *db, size_t dbi, int64_t *pos, tr_rk_set *s, tr_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT id, rank, path FROM sources ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return rk_db_error(db, err);
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        tr_rk_rank *nv = realloc(s->v, (s->n + 1) * sizeof *nv);
        if (!nv) {
            rc = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            break;
        }
        s->v = nv;
        tr_rk_rank *r = &s->v[s->n];
        memset(r, 0, sizeof *r);
        r->db = dbi;
        r->source = sqlite3_column_int64(st, 0);
        r->from_order = sqlite3_column_type(st, 1) == SQLITE_NULL;
        r->rank = r->from_order ? *pos : sqlite3_column_int64(st, 1);
        const char *p = (const char *)sqlite3_column_text(st, 2);
        if (!(r->path = strdup(p ? p : "")))
            rc = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
        s->n++;
        (*pos)++;
    }
    sqlite3_finalize(st);
    return rc;
}

/* ProfilerStep#N ranges per source, as tr_report_load_steps() reads them for the run. */
static tr_status load_steps(sqlite3 *db, size_t dbi, tr_rk_set *s, tr_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT p.source_id, min(e.start_ns), max(e.end_ns), n.value FROM events e "
                           "JOIN threads t ON t.id = e.thread_id JOIN processes p ON p.id = t.process_id "
                           "JOIN strings n ON n.id = e.name_id WHERE e.kind IN (1, 2) AND e.name_id IN "
                           "(SELECT id FROM strings WHERE value GLOB 'ProfilerStep#[0-9]*') "
                           "GROUP BY p.source_id, e.name_id",
                           -1, &st, NULL) != SQLITE_OK)
        return rk_db_error(db, err);
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 3);
        int64_t a = sqlite3_column_int64(st, 1), b = sqlite3_column_int64(st, 2);
        long ri = tr_rk_find(s, dbi, sqlite3_column_int64(st, 0));
        if (!v || ri < 0 || !tr_times_ok(a, b))
            continue;
        char *end;
        long long n = strtoll(v + strlen("ProfilerStep#"), &end, 10);
        if (*end)
            continue;
        tr_rk_rank *r = &s->v[ri];
        tr_rk_step *ns = realloc(r->steps, (r->nsteps + 1) * sizeof *ns);
        if (!ns) {
            rc = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            break;
        }
        r->steps = ns;
        r->steps[r->nsteps++] = (tr_rk_step){n, a, b};
    }
    if (rc == TR_OK && sqlite3_errcode(db) != SQLITE_DONE && sqlite3_errcode(db) != SQLITE_OK)
        rc = rk_db_error(db, err);
    sqlite3_finalize(st);
    return rc;
}

/* Each rank's first start and last end, over its host events and its devices' activities. */
static tr_status load_spans(sqlite3 *db, size_t dbi, tr_rk_set *s, tr_error *err)
{
    static const char *const sql[] = {
        "SELECT p.source_id, min(e.start_ns), max(e.end_ns) FROM events e JOIN threads t ON t.id = e.thread_id "
        "JOIN processes p ON p.id = t.process_id GROUP BY p.source_id",
        "SELECT d.source_id, min(e.start_ns), max(e.end_ns) FROM events e JOIN streams m ON m.id = e.stream_id "
        "JOIN devices d ON d.id = m.device_id WHERE e.thread_id IS NULL GROUP BY d.source_id",
    };
    for (size_t q = 0; q < sizeof sql / sizeof sql[0]; q++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, sql[q], -1, &st, NULL) != SQLITE_OK)
            return rk_db_error(db, err);
        while (sqlite3_step(st) == SQLITE_ROW) {
            long ri = tr_rk_find(s, dbi, sqlite3_column_int64(st, 0));
            int64_t a = sqlite3_column_int64(st, 1), b = sqlite3_column_int64(st, 2);
            if (ri < 0 || !tr_times_ok(a, b))
                continue;
            tr_rk_rank *r = &s->v[ri];
            if (r->span_start == r->span_end) {
                r->span_start = a, r->span_end = b;
                continue;
            }
            if (a < r->span_start)
                r->span_start = a;
            if (b > r->span_end)
                r->span_end = b;
        }
        sqlite3_finalize(st);
    }
    return TR_OK;
}

tr_status tr_rk_load(sqlite3 *const *dbs, size_t ndbs, int want_span, tr_rk_set *s, tr_error *err)
{
    memset(s, 0, sizeof *s);
    int64_t pos = 0;
    tr_status rc = TR_OK;
    for (size_t d = 0; rc == TR_OK && d < ndbs; d++)
        rc = load_sources(dbs[d], d, &pos, s, err);
    for (size_t d = 0; rc == TR_OK && d < ndbs; d++)
        rc = load_steps(dbs[d], d, s, err);
    /* a span costs two scans: only for a rank with no steps */
    int stepless = 0;
    for (size_t i = 0; i < s->n; i++)
        stepless |= !s->v[i].nsteps;
    for (size_t d = 0; rc == TR_OK && want_span && stepless && d < ndbs; d++)
        rc = load_spans(dbs[d], d, s, err);
    for (size_t i = 0; rc == TR_OK && i < s->n; i++) {
        tr_rk_rank *r = &s->v[i];
        if (r->nsteps > 1)
            qsort(r->steps, r->nsteps, sizeof *r->steps, cmp_rkstep);
        for (size_t k = 0; k + 1 < r->nsteps; k++)
            if (r->steps[k].end > r->steps[k + 1].start)
                r->steps[k].end = r->steps[k + 1].start;
    }
    if (rc == TR_OK && s->n > 1)
        qsort(s->v, s->n, sizeof *s->v, cmp_rank);
    for (size_t i = 0; rc == TR_OK && i + 1 < s->n; i++)
        if (s->v[i].rank == s->v[i + 1].rank)
            s->duplicates = 1;
    if (rc != TR_OK)
        tr_rk_set_free(s);
    return rc;
}

void tr_rk_set_free(tr_rk_set *s)
{
    for (size_t i = 0; i < s->n; i++) {
        free(s->v[i].path);
        free(s->v[i].steps);
    }
    free(s->v);
    memset(s, 0, sizeof *s);
}

void tr_rk_select(tr_rk_set *s, const tr_report_ctx *c)
{
    const tr_rank_set *want = c->sel ? &c->sel->ranks : NULL;
    if (!want || !want->n)
        return;
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (tr_rank_set_has(want, s->v[i].rank)) {
            s->v[k++] = s->v[i];
            continue;
        }
        free(s->v[i].path);
        free(s->v[i].steps);
    }
    s->n = k;
}

long tr_rk_step_at(const tr_rk_rank *r, int64_t t)
{
    size_t lo = 0, hi = r->nsteps;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (r->steps[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && t < r->steps[lo - 1].end ? (long)lo - 1 : -1;
}

int tr_rk_step_selected(const tr_report_ctx *c, int64_t n)
{
    /* the requested numbers, not c's windows: those are folded over dbs[0]'s ranks only */
    const tr_report_opts *ro = c->ro_;
    return !ro || !ro->has_step || (n >= ro->step_lo && n <= ro->step_hi);
}

/* ---- the report ---- */

const tr_report_col tr_ranks_cols[] = {
    {"rank", "Rank", TR_COL_INT, 0},
    {"steps", "Steps", TR_COL_INT, 0},
    {"step_mean_ns", "Step (mean)", TR_COL_NSR, 0},
    {"step_total_ns", "Step (total)", TR_COL_NS, 0},
    {"gpu_span_ns", "GPU span", TR_COL_NS, 0},
    {"busy_ns", "GPU busy", TR_COL_NS, 0},
    {"busy_pct", "Busy (%)", TR_COL_PCT, 0},
    {"computation_ns", "Computation", TR_COL_NS, 0},
    {"communication_ns", "Communication", TR_COL_NS, 0},
    {"exposed_comm_ns", "Exposed comm", TR_COL_NS, 0},
    {"exposed_memcpy_ns", "Exposed memcpy", TR_COL_NS, 0},
    {"idle_ns", "Idle", TR_COL_NS, 0},
    {"slowest_steps", "Slowest in", TR_COL_INT, 0},
    {"name", "Source", TR_COL_STR, 0},
    {NULL, NULL, 0, 0},
};

static const tr_report_col step_cols[] = {
    {"step", "Step", TR_COL_INT, 0},
    {"ranks", "Ranks", TR_COL_INT, 0},
    {"min_ns", "Min", TR_COL_NS, 0},
    {"median_ns", "Median", TR_COL_NSR, 0},
    {"max_ns", "Max", TR_COL_NS, 0},
    {"spread_ns", "Spread", TR_COL_NS, 0},
    {"spread_pct", "Spread (% of max)", TR_COL_PCT, 0},
    {"fastest_rank", "Fastest", TR_COL_INT, 0},
    {"slowest_rank", "Slowest", TR_COL_INT, 0},
    {NULL, NULL, 0, 0},
};

const tr_report_param tr_ranks_params[] = {{NULL, 0, 0, NULL}};

typedef struct {
    tr_rk_set rs;
    size_t *first;          /* per rank: index of its first scope in sc */
    tr_gt_scope *sc;        /* per rank, per step (or one scope for a rank without steps) */
    tr_i64map is_comm;
    size_t dbi;
    int64_t last_src;       /* the last device source looked up, and its rank index */
    long last_ri;
    int64_t excluded;
} rk_state;

static size_t nscopes(const tr_rk_rank *r) { return r->nsteps ? r->nsteps : 1; }

static tr_status on_gpu(tr_report_ctx *c, const tr_rev *ev, sqlite3_stmt *st, void *arg)
{
    (void)st;
    rk_state *s = arg;
    long ri = -1;
    if (ev->dev >= 0) {
        if (c->devs[ev->dev].source != s->last_src) {
            s->last_src = c->devs[ev->dev].source;
            s->last_ri = tr_rk_find(&s->rs, s->dbi, s->last_src);
        }
        ri = s->last_ri;
    }
    if (ri < 0)
        return TR_OK;   /* a rank --rank leaves out */
    if (!ev->parent || !ev->has_launch) {
        s->excluded++;   /* gpu-time's rule: work launched before the window is left out */
        return TR_OK;
    }
    const tr_rk_rank *r = &s->rs.v[ri];
    long k = 0;
    if (!r->nsteps && !tr_rk_step_selected(c, -1))
        return TR_OK;   /* --step: a rank without steps has none of them */
    if (r->nsteps) {
        k = tr_rk_step_at(r, ev->launch_start);
        if (k < 0 || !tr_rk_step_selected(c, r->steps[k].step))
            return TR_OK;
    }
    int cls = tr_gt_class(c, &s->is_comm, ev);
    if (cls < 0)
        return tr_report_nomem(c);
    tr_gt_scope_add(&s->sc[s->first[ri] + (size_t)k], cls, ev->start, ev->end, 0);
    return TR_OK;
}

static int cmp_i64(const void *pa, const void *pb)
{
    int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
    return (a > b) - (a < b);
}

/* Per step number across ranks: its length on each rank that has it. */
static tr_status step_table(tr_report_ctx *c, rk_state *s, tr_rresult *r, int64_t *slowest_in)
{
    size_t total = 0;
    for (size_t i = 0; i < s->rs.n; i++)
        total += s->rs.v[i].nsteps;
    int64_t *nums = malloc((total ? total : 1) * sizeof *nums);
    int64_t *len = malloc((s->rs.n ? s->rs.n : 1) * sizeof *len);
    size_t *who = malloc((s->rs.n ? s->rs.n : 1) * sizeof *who);
    tr_status st = nums && len && who ? TR_OK : tr_report_nomem(c);
    size_t nn = 0;
    for (size_t i = 0; st == TR_OK && i < s->rs.n; i++)
        for (size_t k = 0; k < s->rs.v[i].nsteps; k++)
            if (tr_rk_step_selected(c, s->rs.v[i].steps[k].step))
                nums[nn++] = s->rs.v[i].steps[k].step;
    if (nn > 1)
        qsort(nums, nn, sizeof *nums, cmp_i64);
    tr_rtable *t = st == TR_OK && nn ? tr_rtable_add(r, "Steps across ranks", step_cols) : NULL;
    if (st == TR_OK && nn && !t)
        st = tr_report_nomem(c);
    int64_t worst_spread = -1, worst_step = 0;
    for (size_t a = 0; st == TR_OK && a < nn; a++) {
        if (a && nums[a] == nums[a - 1])
            continue;
        size_t m = 0;
        for (size_t i = 0; i < s->rs.n; i++) {
            const tr_rk_rank *rk = &s->rs.v[i];
            for (size_t k = 0; k < rk->nsteps; k++)
                if (rk->steps[k].step == nums[a]) {
                    len[m] = rk->steps[k].end - rk->steps[k].start;
                    who[m++] = i;
                    break;
                }
        }
        size_t lo = 0, hi = 0;
        for (size_t j = 1; j < m; j++) {
            if (len[j] < len[lo])
                lo = j;
            if (len[j] > len[hi])
                hi = j;
        }
        int64_t mn = len[lo], mx = len[hi];
        size_t slow = who[hi], fast = who[lo];
        qsort(len, m, sizeof *len, cmp_i64);
        tr_cell *row = tr_rtable_row(t);
        if (!row) {
            st = tr_report_nomem(c);
            break;
        }
        tr_cell_int(&row[0], nums[a]);
        tr_cell_int(&row[1], (int64_t)m);
        tr_cell_ns(&row[2], mn);
        tr_cell_nsr(&row[3], ((double)len[(m - 1) / 2] + (double)len[m / 2]) / 2.0);
        tr_cell_ns(&row[4], mx);
        tr_cell_ns(&row[5], mx - mn);
        tr_cell_pct(&row[6], (double)(mx - mn), (double)mx);
        tr_cell_int(&row[7], s->rs.v[fast].rank);
        tr_cell_int(&row[8], s->rs.v[slow].rank);
        if (mx > mn)   /* equal windows name no one */
            slowest_in[slow]++;
        if (mx - mn > worst_spread)
            worst_spread = mx - mn, worst_step = nums[a];
    }
    if (st == TR_OK && t && worst_spread > 0) {
        char b[64];
        tr_fmt_time(b, sizeof b, (double)worst_spread / 1000.0, c->o->unit);
        if (tr_rtable_note(t, "largest spread: ProfilerStep#%lld, %s between its fastest and slowest rank",
                           (long long)worst_step, b))
            st = tr_report_nomem(c);
    }
    free(nums);
    free(len);
    free(who);
    return st;
}

static tr_status rank_table(tr_report_ctx *c, rk_state *s, tr_rresult *r, const int64_t *slowest_in)
{
    tr_rtable *t = tr_rtable_add(r, "Ranks", tr_ranks_cols);
    if (!t)
        return tr_report_nomem(c);
    for (size_t i = 0; i < s->rs.n; i++) {
        const tr_rk_rank *rk = &s->rs.v[i];
        int64_t nst = 0, total = 0, span = 0, busy = 0, comp = 0, comm = 0, xcomm = 0, xmem = 0;
        for (size_t k = 0; k < nscopes(rk); k++) {
            if (rk->nsteps) {
                if (!tr_rk_step_selected(c, rk->steps[k].step))
                    continue;
                nst++;
                tr_sat_acc(&total, rk->steps[k].end - rk->steps[k].start);
            }
            const tr_gt_scope *g = &s->sc[s->first[i] + k];
            int64_t cm = tr_uacc_total(&g->comp), cc = tr_uacc_total(&g->cc), all = tr_uacc_total(&g->all);
            tr_sat_acc(&span, g->n ? g->last - g->first : 0);
            tr_sat_acc(&busy, all);
            tr_sat_acc(&comp, cm);
            tr_sat_acc(&comm, tr_uacc_total(&g->comm));
            tr_sat_acc(&xcomm, cc - cm);
            tr_sat_acc(&xmem, all - cc);
        }
        if ((rk->nsteps && !nst) || (!rk->nsteps && !tr_rk_step_selected(c, -1)))
            continue;   /* --step names steps this rank does not have */
        if (!rk->nsteps)
            total = rk->span_end - rk->span_start;
        tr_cell *row = tr_rtable_row(t);
        if (!row || tr_cell_str(&row[13], rk->path))
            return tr_report_nomem(c);
        tr_cell_int(&row[0], rk->rank);
        tr_cell_int(&row[1], nst);
        tr_cell_nsr(&row[2], nst ? (double)total / (double)nst : (double)total);
        tr_cell_ns(&row[3], total);
        tr_cell_ns(&row[4], span);
        tr_cell_ns(&row[5], busy);
        tr_cell_pct(&row[6], (double)busy, (double)span);
        tr_cell_ns(&row[7], comp);
        tr_cell_ns(&row[8], comm);
        tr_cell_ns(&row[9], xcomm);
        tr_cell_ns(&row[10], xmem);
        tr_cell_ns(&row[11], span - busy);
        tr_cell_int(&row[12], slowest_in[i]);
    }
    return TR_OK;
}

/* The GPU activities of dbs[d], through a context of its own (its devices and streams). */
static tr_status scan_db(tr_report_ctx *c, size_t d, rk_state *s)
{
    tr_report_ctx sub, *sc = c;
    if (d != c->db_index) {
        tr_status st = tr_report_ctx_sub(c, d, &sub);
        if (st != TR_OK) {
            tr_report_ctx_sub_free(&sub);
            return st;
        }
        sc = &sub;
    }
    /* steps are per rank here: the scan's own --step filter uses the run's folded windows */
    int has_step = sc->has_step;
    sc->has_step = 0;
    s->dbi = d;
    s->last_src = -1;
    /* name ids are per run.db */
    tr_i64map_free(&s->is_comm);
    tr_i64map_init(&s->is_comm);
    tr_status st = tr_report_scan(sc, TR_GPU_KINDS, TR_SCAN_LAUNCH, TR_ORDER_START, NULL, NULL, on_gpu, s);
    sc->has_step = has_step;
    if (sc != c) {
        if (sub.skipped > c->skipped)
            c->skipped = sub.skipped;
        tr_report_ctx_sub_free(&sub);
    }
    return st;
}

tr_status tr_report_ranks(tr_report_ctx *c, tr_rresult *r)
{
    rk_state s;
    memset(&s, 0, sizeof s);
    tr_i64map_init(&s.is_comm);
    tr_status st = tr_rk_load(c->dbs, c->ndbs, 1, &s.rs, c->err);
    if (st == TR_OK)
        tr_rk_select(&s.rs, c);
    if (st != TR_OK) {
        tr_i64map_free(&s.is_comm);
        return st;
    }
    size_t n = 0;
    for (size_t i = 0; i < s.rs.n; i++)
        n += nscopes(&s.rs.v[i]);
    s.first = calloc(s.rs.n ? s.rs.n : 1, sizeof *s.first);
    s.sc = calloc(n ? n : 1, sizeof *s.sc);
    int64_t *slowest_in = calloc(s.rs.n ? s.rs.n : 1, sizeof *slowest_in);
    if (!s.first || !s.sc || !slowest_in)
        st = tr_report_nomem(c);
    for (size_t i = 0, at = 0; st == TR_OK && i < s.rs.n; at += nscopes(&s.rs.v[i]), i++)
        s.first[i] = at;
    if (st == TR_OK && !s.rs.n && tr_rresult_nodata(r, "no sources in the run"))
        st = tr_report_nomem(c);
    for (size_t d = 0; st == TR_OK && s.rs.n && d < c->ndbs; d++)
        st = scan_db(c, d, &s);
    if (st == TR_OK && s.rs.n) {
        st = step_table(c, &s, r, slowest_in);
        if (st == TR_OK) {
            st = rank_table(c, &s, r, slowest_in);
            /* the ranks first: move the table just added before the steps' */
            if (st == TR_OK && r->ntables == 2) {
                tr_rtable tmp = r->tables[0];
                r->tables[0] = r->tables[1];
                r->tables[1] = tmp;
            }
        }
    }
    if (st == TR_OK && s.rs.n && s.rs.duplicates
        && tr_rresult_note(r, "warning: several sources claim the same rank; each is a row of its own"))
        st = tr_report_nomem(c);
    if (st == TR_OK && s.excluded
        && tr_rresult_note(r, "excluded: %lld GPU activities whose launching call is not in the trace",
                           (long long)s.excluded))
        st = tr_report_nomem(c);
    free(s.first);
    free(s.sc);
    free(slowest_in);
    tr_rk_set_free(&s.rs);
    tr_i64map_free(&s.is_comm);
    return st;
}
