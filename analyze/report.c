/*
 * report.c - the report table, the request parser, the shared event scan with
 * the selection filters, and the four output formats of report results.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "analyze/report_ranks.h"
#include "lib/checked.h"
#include "lib/format.h"
#include "lib/model.h"
#include "lib/ranks.h"
#include "lib/rundb.h"
#include "lib/spill.h"

const tr_report tr_reports[] = {
    {"summary", "the run on one screen: sources, span, threads, devices, events per kind, GPU busy, top kernels and ops",
     tr_summary_params, tr_summary_cols, tr_report_summary},
    {"gpu-time", "GPU time breakdown with TraceLens gpu_timeline semantics, per device and overall",
     tr_gpu_time_params, tr_gpu_time_cols, tr_report_gpu_time},
    {"kernels", "kernel time by name, as nsys cuda_gpu_kern_sum",
     tr_kernels_params, tr_dursum_cols, tr_report_kernels},
    {"api", "CUDA runtime and driver API time by function, as nsys cuda_api_sum",
     tr_api_params, tr_dursum_cols, tr_report_api},
    {"memcpy", "copies and sets by kind: count, bytes, time and bandwidth",
     tr_memcpy_params, tr_memcpy_cols, tr_report_memcpy},
    {"nvtx", "NVTX ranges, record_function labels and ops by name, as nsys nvtx_sum",
     tr_nvtx_params, tr_nvtx_cols, tr_report_nvtx},
    {"nvtx-gpu", "GPU work launched inside each range: its span and busy time, as nsys nvtx_gpu_proj_sum",
     tr_nvtx_gpu_params, tr_nvtx_gpu_cols, tr_report_nvtx_gpu},
    {"launch", "launch overhead and queue delay per kernel name, launch-bound kernels, short kernels",
     tr_launch_params, tr_launch_cols, tr_report_launch},
    {"gaps", "GPU idle gaps per device, largest first, with what the launching threads were doing",
     tr_gaps_params, tr_gaps_cols, tr_report_gaps},
    {"steps", "one row per ProfilerStep#N: wall time, GPU busy and its breakdown, kernels; the slowest flagged",
     tr_steps_params, tr_steps_cols, tr_report_steps},
    {"advice", "findings with the events and time at stake: sync copies, pageable memory, syncs, gaps, low use, launch-bound",
     tr_advice_params, tr_advice_cols, tr_report_advice},
    {"collectives", "NCCL/RCCL collectives matched across ranks: duration per rank, arrival skew, bandwidth; comm/compute overlap per rank",
     tr_collectives_params, tr_collectives_cols, tr_report_collectives, 1},
    {"ranks", "per rank: step time, GPU busy, computation, communication, exposed comm, idle; per step: the slowest rank and the spread",
     tr_ranks_params, tr_ranks_cols, tr_report_ranks, 1},
    {"critical-path", "the chain of events that sets each step's time across ranks, and each op's slack",
     tr_critpath_params, tr_critpath_cols, tr_report_critpath, 1},
};
const size_t tr_nreports = sizeof tr_reports / sizeof tr_reports[0];

/* ---- requests ---- */

static const tr_report *report_lookup(const char *name, size_t n)
{
    for (size_t i = 0; i < tr_nreports; i++)
        if (strlen(tr_reports[i].name) == n && !strncmp(tr_reports[i].name, name, n))
            return &tr_reports[i];
    return NULL;
}

static void report_names(char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < tr_nreports && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? " " : "", tr_reports[i].name);
}

/* "1500", "1.5us", "2ms", "0.1s" -> ns; -1 when invalid. */
static int64_t parse_duration(const char *s, size_t n)
{
    char buf[64];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    if (end == buf || !(v >= 0))
        return -1;
    static const struct { const char *unit; double scale; } units[] = {
        {"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (!strcmp(end, units[i].unit)) {
            double ns = v * units[i].scale;
            return ns > 9.2e18 ? -1 : (int64_t)(ns + 0.5);
        }
    return -1;
}

static int64_t parse_count(const char *s, size_t n)
{
    char buf[32];
    if (n == 0 || n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    long long v = strtoll(buf, &end, 10);
    return *end || v < 0 ? -1 : (int64_t)v;
}

static tr_status parse_param(const tr_report *rep, tr_report_req *req, const char *p, size_t n, tr_error *err)
{
    const char *eq = memchr(p, '=', n);
    size_t kn = eq ? (size_t)(eq - p) : n;
    for (size_t i = 0; rep->params && rep->params[i].name; i++) {
        const tr_report_param *pp = &rep->params[i];
        if (strlen(pp->name) != kn || strncmp(pp->name, p, kn))
            continue;
        int64_t v = !eq ? -1
                    : pp->type == TR_PARAM_TIME ? parse_duration(eq + 1, n - kn - 1)
                                                 : parse_count(eq + 1, n - kn - 1);
        if (pp->type == TR_PARAM_FLAG && v > 1)
            v = -1;
        if (v < 0)
            return tr_fail(err, TR_ERR_USAGE, "invalid %s parameter '%.*s' (%s=%s)", rep->name, (int)n, p,
                           pp->name, pp->type == TR_PARAM_TIME ? "TIME, e.g. 10us"
                                     : pp->type == TR_PARAM_FLAG ? "0 or 1" : "COUNT");
        req->param[i] = v;
        return TR_OK;
    }
    char names[256] = "";
    size_t k = 0;
    for (size_t i = 0; rep->params && rep->params[i].name && k < sizeof names; i++)
        k += (size_t)snprintf(names + k, sizeof names - k, "%s%s", i ? " " : "", rep->params[i].name);
    return tr_fail(err, TR_ERR_USAGE, "unknown parameter '%.*s' of report %s (valid: %s)", (int)kn, p,
                   rep->name, k ? names : "none");
}

tr_status tr_report_opts_add(tr_report_opts *ro, const char *spec, tr_error *err)
{
    for (const char *p = spec; *p;) {
        size_t n = strcspn(p, ",");
        size_t nn = strcspn(p, ",:");
        if (nn == 4 && !strncmp(p, "list", 4) && nn == n) {
            ro->list = 1;
        } else {
            const tr_report *rep = report_lookup(p, nn);
            if (!rep) {
                char names[512];
                report_names(names, sizeof names);
                return tr_fail(err, TR_ERR_USAGE, "unknown report '%.*s' (valid: %s)", (int)nn, p, names);
            }
            tr_report_req *nv = realloc(ro->v, (ro->n + 1) * sizeof *nv);
            if (!nv)
                return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            ro->v = nv;
            tr_report_req *req = &ro->v[ro->n++];
            memset(req, 0, sizeof *req);
            req->report = rep;
            for (size_t i = 0; rep->params && rep->params[i].name && i < TR_REPORT_MAX_PARAMS; i++)
                req->param[i] = rep->params[i].def;
            /* parameters: NAME:KEY=VALUE:KEY=VALUE */
            for (size_t at = nn; at < n;) {
                at++;   /* the ':' */
                size_t pn = strcspn(p + at, ",:");
                if (pn > n - at)
                    pn = n - at;
                tr_status st = parse_param(rep, req, p + at, pn, err);
                if (st != TR_OK)
                    return st;
                at += pn;
            }
        }
        p += n;
        p += *p == ',';
    }
    return TR_OK;
}

tr_status tr_report_opts_step(tr_report_opts *ro, const char *spec, tr_error *err)
{
    char *end;
    long long a = strtoll(spec, &end, 10), b = a;
    if (end != spec && *end == '-')
        b = strtoll(end + 1, &end, 10);
    if (end == spec || *end || a < 0 || b < a)
        return tr_fail(err, TR_ERR_USAGE, "invalid --step '%s' (a step number N or a range A-B)", spec);
    ro->has_step = 1;
    ro->step_lo = a;
    ro->step_hi = b;
    return TR_OK;
}

void tr_report_opts_free(tr_report_opts *ro)
{
    free(ro->v);
    memset(ro, 0, sizeof *ro);
}

static void fmt_param_default(char *b, size_t n, const tr_report_param *p)
{
    if (p->type == TR_PARAM_COUNT || p->type == TR_PARAM_FLAG)
        snprintf(b, n, "%lld", (long long)p->def);
    else if (p->def % 1000000 == 0 && p->def)
        snprintf(b, n, "%lldms", (long long)(p->def / 1000000));
    else if (p->def % 1000 == 0 && p->def)
        snprintf(b, n, "%lldus", (long long)(p->def / 1000));
    else
        snprintf(b, n, "%lldns", (long long)p->def);
}

void tr_report_print_list(FILE *out)
{
    for (size_t i = 0; i < tr_nreports; i++) {
        const tr_report *r = &tr_reports[i];
        fprintf(out, "%-10s  %s\n", r->name, r->description);
        for (size_t k = 0; r->params && r->params[k].name; k++) {
            char def[32];
            fmt_param_default(def, sizeof def, &r->params[k]);
            fprintf(out, "%-10s    :%s=%s  %s\n", "", r->params[k].name, def, r->params[k].help);
        }
    }
}

/* ---- result building ---- */

tr_status tr_report_nomem(tr_report_ctx *c)
{
    return tr_fail(c->err, TR_ERR_RUNTIME, "out of memory while building a report");
}

tr_rtable *tr_rtable_add(tr_rresult *r, const char *title, const tr_report_col *cols)
{
    size_t ncols = 0;
    while (cols[ncols].key)
        ncols++;
    tr_rtable *nt = realloc(r->tables, (r->ntables + 1) * sizeof *nt);
    if (!nt)
        return NULL;
    r->tables = nt;
    tr_rtable *t = &r->tables[r->ntables];
    memset(t, 0, sizeof *t);
    if (!(t->title = strdup(title)))
        return NULL;
    r->ntables++;
    t->cols = cols;
    t->ncols = ncols;
    return t;
}

tr_cell *tr_rtable_row(tr_rtable *t)
{
    if (t->nrows == t->caprows) {
        size_t nc = t->caprows ? t->caprows * 2 : 16;
        tr_cell *n = realloc(t->cells, nc * t->ncols * sizeof *n);
        if (!n)
            return NULL;
        t->cells = n;
        t->caprows = nc;
    }
    tr_cell *row = &t->cells[t->nrows++ * t->ncols];
    for (size_t i = 0; i < t->ncols; i++)
        row[i] = (tr_cell){.null = 1};
    return row;
}

int tr_cell_str(tr_cell *c, const char *s)
{
    free(c->s);
    c->s = strdup(s ? s : "");
    c->null = 0;
    return c->s ? 0 : -1;
}

void tr_cell_int(tr_cell *c, int64_t v) { c->i = v; c->null = 0; }
void tr_cell_ns(tr_cell *c, int64_t v) { c->i = v < 0 ? 0 : v; c->null = 0; }

void tr_cell_pct(tr_cell *c, double part, double whole)
{
    if (!(whole > 0) || !isfinite(part) || !isfinite(whole)) {
        c->null = 1;
        return;
    }
    double v = part * 100.0 / whole;
    /* a share is a part of its whole: rounding must not push it outside [0, 100] */
    c->d = v < 0 ? 0 : v > 100 ? 100 : v;
    c->null = 0;
}

void tr_cell_real(tr_cell *c, double v)
{
    c->null = !isfinite(v);
    c->d = c->null ? 0 : v;
}

void tr_cell_nsr(tr_cell *c, double v)
{
    tr_cell_real(c, v < 0 ? 0 : v);
}

/* ---- duration groups ---- */

static uint64_t key_hash(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ ((uint64_t)b + 0x7f4a7c159e3779b9ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

tr_rgroup *tr_rgroups_find(const tr_rgroups *g, int64_t k1, int64_t k2)
{
    if (!g->scap)
        return NULL;
    for (size_t j = key_hash(k1, k2) & (g->scap - 1); g->slots[j].used; j = (j + 1) & (g->scap - 1))
        if (g->slots[j].k1 == k1 && g->slots[j].k2 == k2)
            return &g->v[g->slots[j].idx];
    return NULL;
}

tr_rgroup *tr_rgroups_get(tr_rgroups *g, int64_t k1, int64_t k2)
{
    tr_rgroup *f = tr_rgroups_find(g, k1, k2);
    if (f)
        return f;
    if ((g->n + 1) * 2 > g->scap) {
        size_t nc = g->scap ? g->scap * 2 : 256;
        struct tr_rgslot *ns = calloc(nc, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < g->scap; i++) {
            if (!g->slots[i].used)
                continue;
            size_t j = key_hash(g->slots[i].k1, g->slots[i].k2) & (nc - 1);
            while (ns[j].used)
                j = (j + 1) & (nc - 1);
            ns[j] = g->slots[i];
        }
        free(g->slots);
        g->slots = ns;
        g->scap = nc;
    }
    if (g->n == g->cap) {
        size_t nc = g->cap ? g->cap * 2 : 64;
        tr_rgroup *nv = realloc(g->v, nc * sizeof *nv);
        if (!nv)
            return NULL;
        g->v = nv;
        g->cap = nc;
    }
    size_t j = key_hash(k1, k2) & (g->scap - 1);
    while (g->slots[j].used)
        j = (j + 1) & (g->scap - 1);
    g->slots[j] = (struct tr_rgslot){k1, k2, g->n, 1};
    tr_rgroup *r = &g->v[g->n++];
    memset(r, 0, sizeof *r);
    r->k1 = k1;
    r->k2 = k2;
    r->first_start = INT64_MAX;
    return r;
}

void tr_rgroup_add(tr_rgroup *g, int64_t dur, int64_t start)
{
    if (!g->count || dur < g->min)
        g->min = dur;
    if (!g->count || dur > g->max)
        g->max = dur;
    g->count++;
    g->total = dur > INT64_MAX - g->total ? INT64_MAX : g->total + dur;
    double d = (double)dur - g->mean;
    g->mean += d / (double)g->count;
    g->m2 += d * ((double)dur - g->mean);
    if (start < g->first_start)
        g->first_start = start;
}

void tr_rgroup_median_feed(tr_rgroup *g, int64_t dur)
{
    int64_t pos = g->seen++;
    if (pos == (g->count - 1) / 2)
        g->med_lo = dur;
    if (pos == g->count / 2)
        g->med_hi = dur;
}

double tr_rgroup_median(const tr_rgroup *g) { return ((double)g->med_lo + (double)g->med_hi) / 2.0; }

/* Past this many values (96 MiB) the medians come from a second scan:
 * a report's memory stays bounded whatever the trace's size. */
#define TR_RVALUES_MAX ((size_t)1 << 23)

static int rvalues_fail(tr_rvalues *l)
{
    tr_spill_free(l->group);
    tr_spill_free(l->v);
    l->group = NULL;
    l->v = NULL;
    l->n = l->cap = 0;
    return l->failed = -1;
}

int tr_rvalues_add(tr_rvalues *l, size_t group, int64_t v)
{
    if (l->failed)
        return -1;
    if (group > UINT32_MAX || l->n == TR_RVALUES_MAX)
        return rvalues_fail(l);
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        uint32_t *gr = tr_spill_realloc(l->group, l->cap * sizeof *gr, cap * sizeof *gr);
        if (gr)
            l->group = gr;
        int64_t *vv = gr ? tr_spill_realloc(l->v, l->cap * sizeof *vv, cap * sizeof *vv) : NULL;
        if (!vv)
            return rvalues_fail(l);
        l->v = vv;
        l->cap = cap;
    }
    l->group[l->n] = (uint32_t)group;
    l->v[l->n++] = v;
    return 0;
}

void tr_rvalues_free(tr_rvalues *l)
{
    tr_spill_free(l->group);
    tr_spill_free(l->v);
    memset(l, 0, sizeof *l);
}

/* The k-th smallest of a[0..n) (k < n), left at a[k] with nothing larger
 * before it and nothing smaller after it (Hoare's selection, the pivot the
 * median of three). */
static int64_t select_kth(int64_t *a, size_t n, size_t k)
{
    ptrdiff_t l = 0, m = (ptrdiff_t)n - 1, kk = (ptrdiff_t)k;
    while (l < m) {
        int64_t x = a[l], y = a[kk], z = a[m];
        int64_t pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        ptrdiff_t i = l, j = m;
        do {
            while (a[i] < pivot)
                i++;
            while (pivot < a[j])
                j--;
            if (i <= j) {
                tr_spill_tick();
                int64_t t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        } while (i <= j);
        if (j < kk)
            l = i;
        if (kk < i)
            m = j;
    }
    return a[k];
}

void tr_rranks_median(int64_t n, size_t *a, size_t *b)
{
    *a = (size_t)(n - 1) / 2;
    *b = (size_t)n / 2;
}

int tr_rvalues_select(tr_rvalues *l, tr_rgroups *g, tr_rranks_fn ranks)
{
    if (l->failed)
        return -1;
    size_t ng = g->n, *at = calloc(ng + 1, sizeof *at), *next = calloc(ng ? ng : 1, sizeof *next);
    int rc = at && next ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < l->n; i++) {
        tr_spill_tick();
        if (l->group[i] >= ng)
            rc = -1;
        else
            at[l->group[i] + 1]++;
    }
    for (size_t k = 0; rc == 0 && k < ng; k++) {
        if ((int64_t)at[k + 1] != g->v[k].count)
            rc = -1;   /* not the values the groups counted */
        at[k + 1] += at[k];
        next[k] = at[k];
    }
    /* each group's values together, in place: every swap puts one value in
     * its group's segment for good */
    for (size_t k = 0; rc == 0 && k < ng; k++)
        while (next[k] < at[k + 1]) {
            tr_spill_tick();
            size_t i = next[k], gi = l->group[i];
            if (gi == k) {
                next[k]++;
                continue;
            }
            size_t j = next[gi]++;
            uint32_t tg = l->group[i];
            l->group[i] = l->group[j];
            l->group[j] = tg;
            int64_t tv = l->v[i];
            l->v[i] = l->v[j];
            l->v[j] = tv;
        }
    for (size_t k = 0; rc == 0 && k < ng; k++) {
        size_t cnt = at[k + 1] - at[k], a, b;
        if (!cnt)
            continue;
        ranks((int64_t)cnt, &a, &b);
        if (a >= cnt || b >= cnt || b < a) {
            rc = -1;
            break;
        }
        int64_t *seg = l->v + at[k];
        tr_rgroup *gr = &g->v[k];
        gr->med_lo = gr->med_hi = select_kth(seg, cnt, a);
        if (b > a)   /* among the values after a's, which are all at least a's */
            gr->med_hi = select_kth(seg + a + 1, cnt - a - 1, b - a - 1);
    }
    free(at);
    free(next);
    return rc;
}

double tr_rgroup_stddev(const tr_rgroup *g)
{
    return g->count > 1 && g->m2 > 0 ? sqrt(g->m2 / (double)(g->count - 1)) : 0;
}

static int cmp_rgroup(const void *pa, const void *pb)
{
    const tr_rgroup *a = pa, *b = pb;
    if (a->total != b->total)
        return a->total > b->total ? -1 : 1;
    if (a->first_start != b->first_start)
        return a->first_start < b->first_start ? -1 : 1;
    return a->k1 < b->k1 ? -1 : a->k1 > b->k1 ? 1 : (a->k2 > b->k2) - (a->k2 < b->k2);
}

tr_status tr_rgroups_finish(tr_report_ctx *c, tr_rgroups *g, int resolve_names)
{
    /* the slots index the unsorted array: lookups end here */
    free(g->slots);
    g->slots = NULL;
    g->scap = 0;
    if (g->n > 1)
        qsort(g->v, g->n, sizeof *g->v, cmp_rgroup);
    for (size_t i = 0; resolve_names && i < g->n; i++)
        if (!(g->v[i].name = tr_report_string(c, g->v[i].k1)))
            return tr_report_nomem(c);
    return TR_OK;
}

void tr_rgroups_free(tr_rgroups *g)
{
    for (size_t i = 0; i < g->n; i++)
        free(g->v[i].name);
    free(g->v);
    free(g->slots);
    memset(g, 0, sizeof *g);
}

static int add_line(char ***v, size_t *n, const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return -1;
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv) {
        free(s);
        return -1;
    }
    *v = nv;
    nv[(*n)++] = s;
    return 0;
}

int tr_rtable_note(tr_rtable *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_line(&t->notes, &t->nnotes, fmt, ap);
    va_end(ap);
    return rc;
}

int tr_rresult_note(tr_rresult *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int rc = add_line(&r->notes, &r->nnotes, fmt, ap);
    va_end(ap);
    return rc;
}

int tr_rresult_warn(tr_rresult *r, const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    char *s = NULL;
    int rc = vasprintf(&s, fmt, ap) < 0 ? -1 : 0;
    if (!rc)
        rc = add_line(&r->warnings, &r->nwarnings, fmt, ap2);
    if (!rc)
        rc = tr_rresult_note(r, "warning: %s", s);
    free(s);
    va_end(ap2);
    va_end(ap);
    return rc;
}

int tr_rresult_nodata(tr_rresult *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    free(r->nodata);
    r->nodata = NULL;
    int rc = vasprintf(&r->nodata, fmt, ap) < 0 ? -1 : 0;
    va_end(ap);
    return rc;
}

void tr_rresult_free(tr_rresult *r)
{
    for (size_t t = 0; t < r->ntables; t++) {
        tr_rtable *tb = &r->tables[t];
        for (size_t i = 0; i < tb->nrows * tb->ncols; i++)
            free(tb->cells[i].s);
        free(tb->cells);
        for (size_t i = 0; i < tb->nnotes; i++)
            free(tb->notes[i]);
        free(tb->notes);
        free(tb->title);
    }
    free(r->tables);
    for (size_t i = 0; i < r->nnotes; i++)
        free(r->notes[i]);
    free(r->notes);
    for (size_t i = 0; i < r->nwarnings; i++)
        free(r->warnings[i]);
    free(r->warnings);
    free(r->nodata);
    for (size_t i = 0; i < r->nowned_cols; i++)
        free(r->owned_cols[i]);
    free(r->owned_cols);
    memset(r, 0, sizeof *r);
}

/* ---- context: devices, streams, threads, names ---- */

static tr_status db_error(tr_report_ctx *c)
{
    return tr_fail(c->err, TR_ERR_INPUT, "run database: cannot read events: %s", sqlite3_errmsg(c->db));
}

int64_t tr_report_query_i64(tr_report_ctx *c, const char *sql)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

char *tr_report_string(tr_report_ctx *c, int64_t id)
{
    const char *v = "";
    sqlite3_bind_int64(c->name_stmt, 1, id);
    if (sqlite3_step(c->name_stmt) == SQLITE_ROW && sqlite3_column_text(c->name_stmt, 0))
        v = (const char *)sqlite3_column_text(c->name_stmt, 0);
    char *r = strdup(v);
    sqlite3_reset(c->name_stmt);
    return r;
}

/* The devices, labelled, and dev_index: devices.id -> their index in c->devs. */
static tr_status load_devices(tr_report_ctx *c, tr_i64map *dev_index)
{
    int nsources = (int)tr_report_query_i64(c, "SELECT count(*) FROM sources");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT id, source_id, device FROM devices ORDER BY source_id, device, id", -1,
                           &st, NULL) != SQLITE_OK)
        return db_error(c);
    size_t cap = 0;
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        if (c->ndevs == cap) {
            cap = cap ? 2 * cap : 8;
            tr_rdevice *nd = realloc(c->devs, cap * sizeof *nd);
            if (!nd) {
                rc = tr_report_nomem(c);
                break;
            }
            c->devs = nd;
        }
        tr_rdevice *d = &c->devs[c->ndevs++];
        d->id = sqlite3_column_int64(st, 0);
        d->source = sqlite3_column_int64(st, 1);
        d->ordinal = sqlite3_column_int64(st, 2);
        d->label = NULL;
        int ok = nsources > 1 ? asprintf(&d->label, "s%lld:%lld", (long long)d->source, (long long)d->ordinal)
                              : asprintf(&d->label, "%lld", (long long)d->ordinal);
        if (ok < 0)
            d->label = NULL;
        if (ok < 0 || tr_i64map_put(dev_index, d->id, (int64_t)(c->ndevs - 1)) < 0)
            rc = tr_report_nomem(c);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Each stream's device index and number. */
static tr_status load_streams(tr_report_ctx *c, const tr_i64map *dev_index)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT id, device_id, stream FROM streams", -1, &st, NULL) != SQLITE_OK)
        return db_error(c);
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), dev = sqlite3_column_int64(st, 1), i;
        if ((tr_i64map_get(dev_index, dev, &i) && tr_i64map_put(&c->stream_dev, id, i) < 0)
            || tr_i64map_put(&c->stream_num, id, sqlite3_column_int64(st, 2)) < 0)
            rc = tr_report_nomem(c);
    }
    sqlite3_finalize(st);
    return rc;
}

static tr_status load_threads(tr_report_ctx *c)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT id, tid FROM threads", -1, &st, NULL) != SQLITE_OK)
        return db_error(c);
    tr_status rc = TR_OK;
    while (rc == TR_OK && sqlite3_step(st) == SQLITE_ROW)
        if (tr_i64map_put(&c->thread_tid, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0)
            rc = tr_report_nomem(c);
    sqlite3_finalize(st);
    return rc;
}

/* t0: the first event's start when the caller knows it (NULL: asked of db when --time-range needs it). */
static tr_status ctx_init_at(tr_report_ctx *c, sqlite3 *db, const tr_analyze_opts *o, tr_error *err,
                             const int64_t *t0)
{
    memset(c, 0, sizeof *c);
    c->db = db;
    c->o = o;
    c->sel = o->select;
    c->err = err;
    tr_i64map_init(&c->stream_dev);
    tr_i64map_init(&c->stream_num);
    tr_i64map_init(&c->thread_tid);
    tr_i64map_init(&c->name_ok);
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &c->name_stmt, NULL) != SQLITE_OK)
        return db_error(c);
    tr_i64map dev_index;
    tr_i64map_init(&dev_index);
    tr_status rc = load_devices(c, &dev_index);
    if (rc == TR_OK)
        rc = load_streams(c, &dev_index);
    tr_i64map_free(&dev_index);
    if (rc == TR_OK)
        rc = load_threads(c);
    if (rc != TR_OK)
        return rc;
    if (t0)
        c->t0 = *t0;
    else if (c->sel && c->sel->has_time)
        c->t0 = tr_report_query_i64(c, "SELECT coalesce(min(start_ns), 0) FROM events");
    return TR_OK;
}

static tr_status ctx_init(tr_report_ctx *c, sqlite3 *db, const tr_analyze_opts *o, tr_error *err)
{
    return ctx_init_at(c, db, o, err, NULL);
}

static tr_status select_steps(tr_report_ctx *c, const tr_report_opts *ro)
{
    if (!ro->has_step)
        return TR_OK;
    tr_status rc = tr_report_load_steps(c);
    if (rc != TR_OK)
        return rc;
    size_t first = c->nsteps, n = 0;
    for (size_t i = 0; i < c->nsteps; i++)
        if (c->steps[i].step >= ro->step_lo && c->steps[i].step <= ro->step_hi) {
            if (first == c->nsteps)
                first = i;
            n = i - first + 1;
        }
    if (!n) {
        /* a filter that names nothing is bad input naming what exists, as --list's filters */
        char have[200] = "none";
        size_t k = 0;
        for (size_t i = 0; i < c->nsteps && k + 24 < sizeof have; i++)
            k += (size_t)snprintf(have + k, sizeof have - k, "%s%lld", i ? " " : "", (long long)c->steps[i].step);
        if (c->nsteps && k + 24 >= sizeof have)
            snprintf(have + k, sizeof have - k, " ...");
        if (ro->step_lo == ro->step_hi)
            return tr_fail(c->err, TR_ERR_INPUT, "--step %lld: no such ProfilerStep#N range (steps: %s)",
                           (long long)ro->step_lo, have);
        return tr_fail(c->err, TR_ERR_INPUT, "--step %lld-%lld: no such ProfilerStep#N range (steps: %s)",
                       (long long)ro->step_lo, (long long)ro->step_hi, have);
    }
    c->has_step = 1;
    c->step_first = first;
    c->step_count = n;
    return TR_OK;
}

/* --step: host events that start in a selected window; GPU work launched in one. */
static int in_steps(const tr_report_ctx *c, const tr_rev *ev)
{
    if (!c->has_step)
        return 1;
    if (ev->on_gpu && !ev->has_launch)
        return 0;
    long i = tr_report_step_at(c, ev->on_gpu ? ev->launch_start : ev->start);
    return i >= (long)c->step_first && i < (long)(c->step_first + c->step_count);
}

static int cmp_step(const void *a, const void *b)
{
    const tr_rstep *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start ? 1 : (x->step > y->step) - (x->step < y->step);
}

/* ProfilerStep#N ranges, folded per N over threads (PyTorch opens one per step).
 * Loaded on first need: finding them takes a scan of the ranges. */
tr_status tr_report_load_steps(tr_report_ctx *c)
{
    if (c->steps_loaded)
        return TR_OK;
    c->steps_loaded = 1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, "SELECT e.name_id, min(e.start_ns), max(e.end_ns), s.value FROM events e "
                           "JOIN strings s ON s.id = e.name_id WHERE e.kind IN (1, 2) AND e.name_id IN "
                           "(SELECT id FROM strings WHERE value GLOB 'ProfilerStep#[0-9]*') GROUP BY e.name_id",
                           -1, &st, NULL) != SQLITE_OK)
        return db_error(c);
    tr_status rc = TR_OK;
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 3);
        if (!v || !tr_times_ok(sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2)))
            continue;
        char *end;
        long long n = strtoll(v + strlen("ProfilerStep#"), &end, 10);
        if (*end)
            continue;
        tr_rstep *ns = realloc(c->steps, (c->nsteps + 1) * sizeof *ns);
        if (!ns) {
            rc = tr_report_nomem(c);
            break;
        }
        c->steps = ns;
        c->steps[c->nsteps++] = (tr_rstep){n, sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
                                           sqlite3_column_int64(st, 0)};
    }
    sqlite3_finalize(st);
    if (c->nsteps > 1)
        qsort(c->steps, c->nsteps, sizeof *c->steps, cmp_step);
    /* a window ends where the next begins: windows never overlap, so their sum is at most the span */
    for (size_t i = 0; i + 1 < c->nsteps; i++)
        if (c->steps[i].end > c->steps[i + 1].start)
            c->steps[i].end = c->steps[i + 1].start;
    return rc;
}

long tr_report_step_at(const tr_report_ctx *c, int64_t t)
{
    size_t lo = 0, hi = c->nsteps;
    while (lo < hi) {   /* the last step starting at or before t */
        size_t mid = (lo + hi) / 2;
        if (c->steps[mid].start <= t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && t < c->steps[lo - 1].end ? (long)lo - 1 : -1;
}

static void ctx_free(tr_report_ctx *c)
{
    free(c->steps);
    for (size_t i = 0; i < c->ndevs; i++)
        free(c->devs[i].label);
    free(c->devs);
    tr_i64map_free(&c->stream_dev);
    tr_i64map_free(&c->stream_num);
    tr_i64map_free(&c->thread_tid);
    tr_i64map_free(&c->name_ok);
    sqlite3_finalize(c->name_stmt);
}

int64_t tr_report_empty_graph_launches(tr_report_ctx *c)
{
    /* most runs have no graph launch at all: the strings table answers that alone */
    if (!tr_report_query_i64(c, "SELECT count(*) FROM strings WHERE value GLOB 'cu*GraphLaunch*'"))
        return 0;
    return tr_report_query_i64(c, "SELECT count(*) FROM events a WHERE a.kind IN (4, 5) AND a.name_id IN "
                                  "(SELECT id FROM strings WHERE value GLOB 'cu*GraphLaunch*') AND NOT EXISTS "
                                  "(SELECT 1 FROM events g WHERE g.parent_id = a.id AND g.kind IN (7, 8, 9))");
}

/* ---- the scan ---- */

static const char scan_cols[] =
    "e.id, e.kind, e.name_id, e.start_ns, e.end_ns, e.parent_id, e.thread_id, e.stream_id, e.bytes, "
    "e.correlation, %s";
/* the same columns where the callback reads few (TR_SCAN_NARROW): SQLite's
 * sorter then moves 6 values a row instead of 10 */
static const char narrow_cols[] =
    "NULL, e.kind, e.name_id, e.start_ns, e.end_ns, NULL, e.thread_id, e.stream_id, NULL, NULL, %s";
static const char launch_cols[] = "p.thread_id, p.start_ns, p.end_ns, p.name_id";
static const char no_launch_cols[] = "NULL, NULL, NULL, NULL";

static int selected(tr_report_ctx *c, const tr_rev *ev, int flags)
{
    const tr_selection *sel = c->sel;
    if (!in_steps(c, ev))
        return 0;
    if (!sel)
        return 1;
    if (sel->kind_mask && (ev->kind < 0 || ev->kind >= 32 || !(sel->kind_mask & (1u << ev->kind))))
        return 0;
    if (!tr_selection_rank_ok(sel, ev->thread, ev->stream))   /* --rank (lib/ranks.h) */
        return 0;
    if (sel->has_thread) {
        int64_t row = ev->on_gpu ? (ev->has_launch ? ev->launch_thread : 0) : ev->thread, tid;
        if (!row || !tr_i64map_get(&c->thread_tid, row, &tid) || tid != sel->thread)
            return 0;
    }
    /* --device and --stream pick GPU activities; host events are not on a device */
    if (ev->on_gpu && sel->has_device && (ev->dev < 0 || c->devs[ev->dev].ordinal != sel->device))
        return 0;
    if (ev->on_gpu && sel->has_stream) {
        int64_t num;
        if (!tr_i64map_get(&c->stream_num, ev->stream, &num) || num != sel->stream)
            return 0;
    }
    return (flags & TR_SCAN_UNFILTERED_NAMES) || tr_selection_name_id_ok(c->sel, c->name_stmt, &c->name_ok, ev->name_id);
}

int tr_report_selected(tr_report_ctx *c, const tr_rev *ev)
{
    return selected(c, ev, 0);
}

/* The WHERE condition on e.kind for the kinds in mask.  A run of consecutive
 * kinds (every kind, the GPU kinds) is a range test: SQLite evaluates an IN
 * list of more than two values as a lookup in a temporary index, a b-tree
 * search per row. */
static void kind_condition(char *b, size_t n, unsigned mask)
{
    int lo = 0, hi = 0;
    for (int i = 1; i < TR_KIND_COUNT_; i++)
        if (mask & (1u << i)) {
            lo = lo ? lo : i;
            hi = i;
        }
    unsigned run = lo ? (unsigned)((2ull << hi) - (1ull << lo)) : 0;
    if (lo && (mask & run) == run) {
        snprintf(b, n, "e.kind BETWEEN %d AND %d", lo, hi);
        return;
    }
    size_t k = (size_t)snprintf(b, n, "e.kind IN (");
    for (int i = 1; i < TR_KIND_COUNT_; i++)
        if (mask & (1u << i))
            k += (size_t)snprintf(b + k, n - k, "%s%d", b[k - 1] == '(' ? "" : ",", i);
    snprintf(b + k, n - k, ")");
}

tr_status tr_report_scan(tr_report_ctx *c, unsigned kind_mask, int flags, const char *order,
                         const char *extra_cols, const char *extra_join, tr_scan_fn fn, void *arg)
{
    const tr_selection *sel = c->sel;
    int launch = (flags & TR_SCAN_LAUNCH) || (sel && sel->has_thread) || c->has_step;
    char kinds[160], cols[512], where[256] = "";
    kind_condition(kinds, sizeof kinds, kind_mask);
    snprintf(cols, sizeof cols, flags & TR_SCAN_NARROW ? narrow_cols : scan_cols,
             launch ? launch_cols : no_launch_cols);
    if (sel && sel->has_time)
        snprintf(where, sizeof where, " AND e.start_ns >= %lld AND e.start_ns < %lld",
                 (long long)(c->t0 + sel->time_start),
                 (long long)(sel->time_end > INT64_MAX - c->t0 ? INT64_MAX : c->t0 + sel->time_end));
    char *sql = NULL;
    if (asprintf(&sql, "SELECT %s%s%s FROM events e %s %s WHERE %s%s%s%s", cols,
                 extra_cols ? ", " : "", extra_cols ? extra_cols : "",
                 launch ? "LEFT JOIN events p ON p.id = e.parent_id" : "", extra_join ? extra_join : "",
                 kinds, where, order ? " ORDER BY " : "", order ? order : "") < 0)
        return tr_report_nomem(c);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(c->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK)
        return db_error(c);
    tr_status s = TR_OK;
    tr_rev ev;
    int64_t skipped = 0;
    while (s == TR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        ev.id = sqlite3_column_int64(st, 0);
        ev.kind = sqlite3_column_int(st, 1);
        ev.name_id = sqlite3_column_int64(st, 2);
        ev.start = sqlite3_column_int64(st, 3);
        ev.end = sqlite3_column_int64(st, 4);
        ev.parent = sqlite3_column_type(st, 5) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 5);
        ev.thread = sqlite3_column_type(st, 6) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 6);
        ev.stream = sqlite3_column_type(st, 7) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 7);
        ev.bytes = sqlite3_column_int64(st, 8);
        ev.correlation = sqlite3_column_type(st, 9) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 9);
        ev.on_gpu = ev.kind > 0 && ev.kind < TR_KIND_COUNT_ && tr_kinds[ev.kind].on_gpu;
        int64_t di;
        ev.dev = ev.stream && tr_i64map_get(&c->stream_dev, ev.stream, &di) ? (int)di : -1;
        ev.has_launch = launch && sqlite3_column_type(st, 11) != SQLITE_NULL;
        ev.launch_thread = ev.has_launch && sqlite3_column_type(st, 10) != SQLITE_NULL
                               ? sqlite3_column_int64(st, 10) : 0;
        ev.launch_start = ev.has_launch ? sqlite3_column_int64(st, 11) : 0;
        ev.launch_end = ev.has_launch ? sqlite3_column_int64(st, 12) : 0;
        ev.launch_name = ev.has_launch ? sqlite3_column_int64(st, 13) : 0;
        /* a time no trace can hold would inflate every total: left out, and counted */
        if (!tr_times_ok(ev.start, ev.end)) {
            skipped++;
            continue;
        }
        if (ev.has_launch && !tr_times_ok(ev.launch_start, ev.launch_end))
            ev.has_launch = 0;
        if (selected(c, &ev, flags))
            s = fn(c, &ev, st, arg);
    }
    if (s == TR_OK && rc != SQLITE_DONE)
        s = db_error(c);
    sqlite3_finalize(st);
    /* a report may scan the same events twice: count them once */
    if (skipped > c->skipped)
        c->skipped = skipped;
    return s;
}

/* ---- a scan on a second thread ---- */

struct tr_report_scan_job {
    tr_report_ctx c;        /* like the caller's, on a connection of its own */
    sqlite3 *db;
    tr_error err;
    pthread_t th;
    int threaded;           /* else the scan runs in tr_report_scan_finish() */
    tr_status st;
    unsigned kind_mask;
    int flags;
    const char *order, *extra_cols, *extra_join;
    tr_scan_fn fn;
    void *arg;
};

static tr_status run_scan_job(tr_report_scan_job *j, tr_report_ctx *c)
{
    return tr_report_scan(c, j->kind_mask, j->flags, j->order, j->extra_cols, j->extra_join, j->fn, j->arg);
}

static void *scan_thread(void *arg)
{
    tr_report_scan_job *j = arg;
    j->st = run_scan_job(j, &j->c);
    return NULL;
}

/* A context like c on db: the same options, parameters, time origin and
 * --step windows (copied, not read again). */
static tr_status ctx_copy(tr_report_ctx *to, const tr_report_ctx *c, sqlite3 **db, tr_error *err)
{
    tr_status st = ctx_init_at(to, *db, c->o, err, &c->t0);
    to->param = c->param;
    to->dbs = db;
    to->ndbs = 1;
    to->ro_ = c->ro_;
    if (st == TR_OK && c->nsteps) {
        if (!(to->steps = malloc(c->nsteps * sizeof *to->steps)))
            return tr_report_nomem(to);
        memcpy(to->steps, c->steps, c->nsteps * sizeof *to->steps);
        to->nsteps = c->nsteps;
    }
    to->steps_loaded = c->steps_loaded;
    to->has_step = c->has_step;
    to->step_first = c->step_first;
    to->step_count = c->step_count;
    return st;
}

/* A context like c on a connection of its own (*db), for a second thread; 0
 * where none can be had, and the caller does the work itself.  Either way,
 * peer_ctx_free() releases them. */
static int peer_ctx(const tr_report_ctx *c, tr_report_ctx *to, sqlite3 **db, tr_error *err)
{
    memset(to, 0, sizeof *to);
    return tr_rundb_open_peers(c->db, db, 1) == 1 && ctx_copy(to, c, db, err) == TR_OK;
}

static void peer_ctx_free(tr_report_ctx *to, sqlite3 *db)
{
    ctx_free(to);
    if (db)
        sqlite3_close(db);
}

tr_status tr_report_scan_start(tr_report_ctx *c, tr_report_scan_job **job, unsigned kind_mask, int flags,
                               const char *order, const char *extra_cols, const char *extra_join, tr_scan_fn fn,
                               void *arg)
{
    tr_report_scan_job *j = *job = calloc(1, sizeof *j);
    if (!j)
        return tr_report_nomem(c);
    j->kind_mask = kind_mask, j->flags = flags, j->order = order;
    j->extra_cols = extra_cols, j->extra_join = extra_join, j->fn = fn, j->arg = arg;
    j->threaded = peer_ctx(c, &j->c, &j->db, &j->err) && pthread_create(&j->th, NULL, scan_thread, j) == 0;
    return TR_OK;
}

tr_status tr_report_scan_finish(tr_report_ctx *c, tr_report_scan_job *job, tr_status st)
{
    if (!job)
        return st;
    if (job->threaded) {
        pthread_join(job->th, NULL);
        if (st == TR_OK && job->st != TR_OK)
            st = tr_error_copy(c->err, &job->err);
        if (job->c.skipped > c->skipped)
            c->skipped = job->c.skipped;
    } else if (st == TR_OK) {
        st = run_scan_job(job, c);   /* no second thread: after the caller's scans, as one thread does */
    }
    peer_ctx_free(&job->c, job->db);
    free(job);
    return st;
}

/* ---- output ---- */

typedef struct {
    FILE *out;
    const tr_analyze_opts *o;
    size_t nwritten;          /* reports written so far (json separators, blank lines) */
} writer;

static int col_shown(const tr_report_col *col, int machine)
{
    return !(col->flags & (machine ? TR_COL_TEXT_ONLY : TR_COL_MACHINE_ONLY));
}

void tr_report_fmt_cell(char *b, size_t n, const tr_report_col *col, const tr_cell *c, tr_time_unit unit)
{
    if (c->null) {
        snprintf(b, n, "-");
        return;
    }
    switch (col->type) {
    case TR_COL_STR: snprintf(b, n, "%s", c->s); break;
    case TR_COL_INT: snprintf(b, n, "%lld", (long long)c->i); break;
    case TR_COL_NS: tr_fmt_time(b, n, (double)c->i / 1000.0, unit); break;
    case TR_COL_NSR: tr_fmt_time(b, n, c->d / 1000.0, unit); break;
    case TR_COL_PCT: snprintf(b, n, "%.2f", c->d); break;
    case TR_COL_BYTES: tr_fmt_mem(b, n, c->i); break;
    case TR_COL_REAL: snprintf(b, n, "%.3f", c->d); break;
    }
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(out, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(out, "\\u%04x", *p);
        else
            fputc(*p, out);
    }
    fputc('"', out);
}

static void csv_string(FILE *out, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

static void md_text(FILE *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '|' || *s == '\\' || *s == '`' || *s == '*' || *s == '_' || *s == '<')
            fputc('\\', out);
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
    }
}

static void machine_value(FILE *out, const tr_report_col *col, const tr_cell *c, int json)
{
    if (c->null) {
        if (json)
            fputs("null", out);
        return;
    }
    switch (col->type) {
    case TR_COL_STR:
        if (json)
            json_string(out, c->s);
        else
            csv_string(out, c->s);
        break;
    case TR_COL_INT: case TR_COL_NS: case TR_COL_BYTES:
        fprintf(out, "%lld", (long long)c->i);
        break;
    case TR_COL_PCT: case TR_COL_REAL: case TR_COL_NSR:
        fprintf(out, "%.15g", c->d);
        break;
    }
}

static size_t limit_rows(const tr_rtable *t, const tr_analyze_opts *o)
{
    return !t->whole && o->limit >= 0 && (size_t)o->limit < t->nrows ? (size_t)o->limit : t->nrows;
}

#define MAX_TEXT_WIDTH 100

static void write_text(writer *w, const tr_rresult *r)
{
    FILE *out = w->out;
    if (w->nwritten++)
        fputc('\n', out);
    const tr_report *rep = NULL;
    for (size_t i = 0; i < tr_nreports; i++)
        if (!strcmp(tr_reports[i].name, r->report))
            rep = &tr_reports[i];
    fprintf(out, "== %s: %s ==\n", r->report, rep ? rep->description : "");
    for (size_t i = 0; i < r->nnotes; i++)
        fprintf(out, "%s\n", r->notes[i]);
    char cell[8192];
    for (size_t t = 0; t < r->ntables; t++) {
        const tr_rtable *tb = &r->tables[t];
        size_t nrows = limit_rows(tb, w->o);
        int width[64];
        size_t nc = tb->ncols < 64 ? tb->ncols : 64;
        fprintf(out, "\n%s\n", tb->title);
        for (size_t j = 0; j < nc; j++) {
            width[j] = (int)tr_utf8_len(tb->cols[j].header, strlen(tb->cols[j].header));
            for (size_t i = 0; i < nrows; i++) {
                tr_report_fmt_cell(cell, sizeof cell, &tb->cols[j], &tb->cells[i * tb->ncols + j], w->o->unit);
                int cw = (int)tr_utf8_len(cell, strlen(cell));
                if (cw > width[j])
                    width[j] = cw;
            }
            if (width[j] > MAX_TEXT_WIDTH)
                width[j] = MAX_TEXT_WIDTH;
        }
        size_t last = 0;
        for (size_t j = 0; j < nc; j++)
            if (col_shown(&tb->cols[j], 0))
                last = j;
        for (int pass = 0; pass < 2 + (int)nrows; pass++) {
            const tr_cell *row = pass >= 2 ? &tb->cells[(size_t)(pass - 2) * tb->ncols] : NULL;
            for (size_t j = 0; j < nc; j++) {
                const tr_report_col *col = &tb->cols[j];
                if (!col_shown(col, 0))
                    continue;
                int left = col->type == TR_COL_STR;
                if (pass == 0)
                    snprintf(cell, sizeof cell, "%s", col->header);
                else if (pass == 1)
                    memset(cell, '-', (size_t)width[j]), cell[width[j]] = '\0';
                else
                    tr_report_fmt_cell(cell, sizeof cell, col, &row[j], w->o->unit);
                size_t len = strlen(cell);
                size_t cps = tr_utf8_len(cell, len);
                /* the last column (a name) is printed whole; others are cut to the width */
                if (j != last && cps > (size_t)width[j]) {
                    size_t keep = tr_utf8_prefix(cell, len, (size_t)width[j] - 3);
                    memcpy(cell + keep, "...", 4);
                    cps = (size_t)width[j];
                }
                int pad = width[j] > (int)cps ? width[j] - (int)cps : 0;
                if (j == last && left)
                    fprintf(out, "%s", cell);
                else if (left)
                    fprintf(out, "%s%*s", cell, pad, "");
                else
                    fprintf(out, "%*s%s", pad, "", cell);
                if (j != last)
                    fputs("  ", out);
            }
            fputc('\n', out);
        }
        if (nrows < tb->nrows)
            fprintf(out, "(%zu more rows; -n -1 shows all)\n", tb->nrows - nrows);
        for (size_t i = 0; i < tb->nnotes; i++)
            fprintf(out, "%s\n", tb->notes[i]);
    }
}

static void write_markdown(writer *w, const tr_rresult *r)
{
    FILE *out = w->out;
    if (w->nwritten++)
        fputc('\n', out);
    fprintf(out, "## %s\n", r->report);
    for (size_t i = 0; i < r->nnotes; i++) {
        fputc('\n', out);
        md_text(out, r->notes[i]);
        fputc('\n', out);
    }
    char cell[8192];
    for (size_t t = 0; t < r->ntables; t++) {
        const tr_rtable *tb = &r->tables[t];
        fprintf(out, "\n### ");
        md_text(out, tb->title);
        fputs("\n\n|", out);
        for (size_t j = 0; j < tb->ncols; j++)
            if (col_shown(&tb->cols[j], 0)) {
                fputc(' ', out);
                md_text(out, tb->cols[j].header);
                fputs(" |", out);
            }
        fputs("\n|", out);
        for (size_t j = 0; j < tb->ncols; j++)
            if (col_shown(&tb->cols[j], 0))
                fputs(tb->cols[j].type == TR_COL_STR ? ":---|" : "---:|", out);
        fputc('\n', out);
        size_t nrows = limit_rows(tb, w->o);
        for (size_t i = 0; i < nrows; i++) {
            fputc('|', out);
            for (size_t j = 0; j < tb->ncols; j++) {
                if (!col_shown(&tb->cols[j], 0))
                    continue;
                tr_report_fmt_cell(cell, sizeof cell, &tb->cols[j], &tb->cells[i * tb->ncols + j], w->o->unit);
                fputc(' ', out);
                md_text(out, cell);
                fputs(" |", out);
            }
            fputc('\n', out);
        }
        for (size_t i = 0; i < tb->nnotes; i++) {
            fputc('\n', out);
            md_text(out, tb->notes[i]);
            fputc('\n', out);
        }
    }
}

static void write_csv(writer *w, const tr_rresult *r)
{
    FILE *out = w->out;
    for (size_t t = 0; t < r->ntables; t++) {
        const tr_rtable *tb = &r->tables[t];
        /* several tables: a blank line between them, each with its own header */
        if (w->nwritten++)
            fputc('\n', out);
        int first = 1;
        for (size_t j = 0; j < tb->ncols; j++)
            if (col_shown(&tb->cols[j], 1)) {
                fprintf(out, "%s%s", first ? "" : ",", tb->cols[j].key);
                first = 0;
            }
        fputc('\n', out);
        size_t nrows = limit_rows(tb, w->o);
        for (size_t i = 0; i < nrows; i++) {
            first = 1;
            for (size_t j = 0; j < tb->ncols; j++) {
                if (!col_shown(&tb->cols[j], 1))
                    continue;
                if (!first)
                    fputc(',', out);
                first = 0;
                machine_value(out, &tb->cols[j], &tb->cells[i * tb->ncols + j], 0);
            }
            fputc('\n', out);
        }
    }
}

static void json_lines(FILE *out, const char *key, char **v, size_t n)
{
    fprintf(out, ",\"%s\":[", key);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        json_string(out, v[i]);
    }
    fputc(']', out);
}

static void write_json(writer *w, const tr_rresult *r)
{
    FILE *out = w->out;
    fputs(w->nwritten++ ? ",\n{" : "\n{", out);
    fputs("\"report\":", out);
    json_string(out, r->report);
    if (r->nodata) {
        fputs(",\"no_data\":", out);
        json_string(out, r->nodata);
    }
    json_lines(out, "notes", r->notes, r->nnotes);
    fputs(",\"tables\":[", out);
    for (size_t t = 0; t < r->ntables; t++) {
        const tr_rtable *tb = &r->tables[t];
        fputs(t ? ",\n{\"title\":" : "\n{\"title\":", out);
        json_string(out, tb->title);
        json_lines(out, "notes", tb->notes, tb->nnotes);
        fprintf(out, ",\"rows_total\":%zu,\"rows\":[", tb->nrows);
        size_t nrows = limit_rows(tb, w->o);
        for (size_t i = 0; i < nrows; i++) {
            fputs(i ? ",\n{" : "\n{", out);
            int first = 1;
            for (size_t j = 0; j < tb->ncols; j++) {
                if (!col_shown(&tb->cols[j], 1))
                    continue;
                fprintf(out, "%s\"%s\":", first ? "" : ",", tb->cols[j].key);
                first = 0;
                machine_value(out, &tb->cols[j], &tb->cells[i * tb->ncols + j], 1);
            }
            fputc('}', out);
        }
        fputs("]}", out);
    }
    fputs("]}", out);
}

static const struct { const char *format; void (*write)(writer *w, const tr_rresult *r); } writers[] = {
    {"text", write_text}, {"csv", write_csv}, {"json", write_json}, {"markdown", write_markdown},
};

tr_status tr_report_compute(sqlite3 *db, const char *spec, const tr_analyze_opts *o, tr_rresult *r, tr_error *err)
{
    tr_report_opts ro;
    memset(&ro, 0, sizeof ro);
    memset(r, 0, sizeof *r);
    tr_status st = tr_report_opts_add(&ro, spec, err);
    if (st == TR_OK && ro.n != 1)
        st = tr_fail(err, TR_ERR_USAGE, "one report expected, got '%s'", spec);
    tr_report_ctx c;
    if (st == TR_OK) {
        st = ctx_init(&c, db, o, err);
        c.dbs = &db;
        c.ndbs = 1;
        r->report = ro.v[0].report->name;
        c.param = ro.v[0].param;
        if (st == TR_OK)
            st = ro.v[0].report->run(&c, r);
        ctx_free(&c);
    }
    tr_report_opts_free(&ro);
    return st;
}


tr_status tr_report_ctx_sub(const tr_report_ctx *c, size_t i, tr_report_ctx *sub)
{
    if (i >= c->ndbs)
        return tr_fail(c->err, TR_ERR_USAGE, "no run database %zu of %zu", i, c->ndbs);
    tr_status st = ctx_init(sub, c->dbs[i], c->o, c->err);
    sub->param = c->param;
    sub->dbs = c->dbs;
    sub->db_names = c->db_names;
    sub->ndbs = c->ndbs;
    sub->db_index = i;
    sub->ro_ = c->ro_;
    if (st == TR_OK && c->ro_)
        st = select_steps(sub, c->ro_);
    return st;
}

void tr_report_ctx_sub_free(tr_report_ctx *sub)
{
    ctx_free(sub);
}

static tr_status run_reports(sqlite3 *const *dbs, const char *const *names, size_t ndbs,
                             const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                             tr_error *err);

tr_status tr_report_run(sqlite3 *db, const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out,
                        FILE *diag, tr_error *err)
{
    return run_reports(&db, NULL, 1, ro, o, out, diag, err);
}

tr_status tr_report_run_many(sqlite3 *const *dbs, const char *const *names, size_t ndbs,
                             const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                             tr_error *err)
{
    if (!ndbs)
        return tr_fail(err, TR_ERR_USAGE, "no run database");
    return run_reports(dbs, names, ndbs, ro, o, out, diag, err);
}

tr_status tr_report_run_paths(const char *const *paths, const char *const *names, size_t n,
                              const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                              tr_error *err)
{
    sqlite3 **dbs = calloc(n ? n : 1, sizeof *dbs);
    if (!dbs)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    tr_status st = TR_OK;
    for (size_t i = 0; i < n && st == TR_OK; i++)
        st = tr_rundb_open(paths[i], &dbs[i], err);
    if (st == TR_OK)
        st = tr_report_run_many(dbs, names, n, ro, o, out, diag, err);
    for (size_t i = 0; i < n; i++)
        if (dbs[i])
            sqlite3_close(dbs[i]);
    free(dbs);
    return st;
}

/* ---- a one-run.db report given several ---- */

/* The table of `all` that gathers table t's rows: t's title, a Rank column,
 * then t's columns; made on first use. */
static tr_rtable *joined_table(tr_rresult *all, const tr_rtable *t)
{
    for (size_t i = 0; i < all->ntables; i++)
        if (!strcmp(all->tables[i].title, t->title) && all->tables[i].ncols == t->ncols + 1
            && !strcmp(all->tables[i].cols[1].key, t->cols[0].key))
            return &all->tables[i];
    tr_report_col *cols = calloc(t->ncols + 2, sizeof *cols);   /* + the rank, + the end mark */
    tr_report_col **owned = realloc(all->owned_cols, (all->nowned_cols + 1) * sizeof *owned);
    if (!cols || !owned) {
        free(cols);
        if (owned)
            all->owned_cols = owned;
        return NULL;
    }
    all->owned_cols = owned;
    all->owned_cols[all->nowned_cols++] = cols;
    cols[0] = (tr_report_col){"rank", "Rank", TR_COL_STR, 0};
    memcpy(cols + 1, t->cols, t->ncols * sizeof *cols);
    tr_rtable *j = tr_rtable_add(all, t->title, cols);
    if (j)
        j->whole = 1;   /* cut per run.db by join_result */
    return j;
}

/* Moves one run.db's result into `all`: its rows under `label` (the run.db's
 * ranks), its notes, warnings and no-data line prefixed with it. */
static int join_result(tr_rresult *all, tr_rresult *one, const char *label, long limit)
{
    int rc = 0;
    if (one->nodata)
        rc |= tr_rresult_note(all, "rank %s: %s", label, one->nodata);
    for (size_t i = 0; i < one->nnotes; i++)
        if (strncmp(one->notes[i], "warning: ", 9) != 0)   /* warnings come again below */
            rc |= tr_rresult_note(all, "rank %s: %s", label, one->notes[i]);
    for (size_t i = 0; i < one->nwarnings; i++)
        rc |= tr_rresult_warn(all, "rank %s: %s", label, one->warnings[i]);
    for (size_t k = 0; k < one->ntables && !rc; k++) {
        tr_rtable *t = &one->tables[k], *j = joined_table(all, t);
        if (!j)
            return -1;
        /* -n holds for each run.db's rows, not for the first run.db's alone */
        size_t take = t->whole || limit < 0 || (size_t)limit >= t->nrows ? t->nrows : (size_t)limit;
        if (take < t->nrows)
            rc |= tr_rtable_note(j, "rank %s: %zu more rows; -n -1 shows all", label, t->nrows - take);
        for (size_t r = 0; r < take && !rc; r++) {
            tr_cell *row = tr_rtable_row(j);
            if (!row || tr_cell_str(&row[0], label) != 0)
                return -1;
            for (size_t c = 0; c < t->ncols; c++) {
                row[c + 1] = t->cells[r * t->ncols + c];
                t->cells[r * t->ncols + c].s = NULL;   /* moved */
            }
        }
        for (size_t i = 0; i < t->nnotes && !rc; i++)
            rc |= tr_rtable_note(j, "rank %s: %s", label, t->notes[i]);
    }
    return rc;
}

/* The ranks run.db i holds ("0", "4-7"), counting the sources before it. */
static tr_status db_rank_label(sqlite3 *db, int64_t base, char *buf, size_t size, int64_t *nsources,
                               tr_error *err)
{
    tr_rank_map m;
    memset(&m, 0, sizeof m);
    tr_status st = tr_rank_map_load(&m, db, base, NULL, err);
    if (st == TR_OK) {
        tr_rank_map_describe(&m, buf, size);
        *nsources = (int64_t)m.nsrc;
    }
    tr_rank_map_free(&m);
    return st;
}

/* A report that reads one run.db, given several: it runs on each in turn, with
 * that run.db's ranks and --rank selection, and each of its tables becomes one
 * table of every run.db's rows, the rank in front (docs/reports.md, "Several
 * run.dbs").  Rows are never summed across run.dbs: per rank is what they are. */
static tr_status run_each(tr_report_ctx *c, const tr_report *rep, tr_rresult *all)
{
    tr_status st = TR_OK;
    int64_t base = 0;
    size_t with_data = 0, ran = 0;
    char first_nodata[512] = "";
    for (size_t i = 0; i < c->ndbs && st == TR_OK; i++) {
        char label[128];
        int64_t nsrc = 0;
        if ((st = db_rank_label(c->dbs[i], base, label, sizeof label, &nsrc, c->err)) != TR_OK)
            break;
        tr_selection sel;
        memset(&sel, 0, sizeof sel);
        if (c->sel)
            sel = *c->sel;   /* shallow: bound to this run.db below, unbound after */
        sel.rank_base = base;
        sel.rank_map = NULL;
        base = tr_sat_add(base, nsrc);
        if ((st = tr_selection_bind(&sel, c->dbs[i], c->err)) != TR_OK)
            break;
        if (sel.rank_map && !tr_rank_map_any(sel.rank_map)) {
            tr_selection_unbind(&sel);   /* none of its ranks is selected */
            continue;
        }
        tr_analyze_opts oo = *c->o;
        oo.select = &sel;
        tr_report_ctx sub;
        st = ctx_init(&sub, c->dbs[i], &oo, c->err);
        sub.param = c->param;
        sub.dbs = c->dbs;
        sub.db_names = c->db_names;
        sub.ndbs = c->ndbs;
        sub.db_index = i;
        sub.ro_ = c->ro_;
        if (st == TR_OK && c->ro_)
            st = select_steps(&sub, c->ro_);
        tr_rresult one;
        memset(&one, 0, sizeof one);
        one.report = all->report;
        if (st == TR_OK)
            st = rep->run(&sub, &one);
        c->skipped += sub.skipped;
        ctx_free(&sub);
        tr_selection_unbind(&sel);
        if (st == TR_OK) {
            ran++;
            if (one.nodata && !first_nodata[0])
                snprintf(first_nodata, sizeof first_nodata, "%s", one.nodata);
            with_data += !one.nodata;
            if (join_result(all, &one, label, c->o->limit) != 0)
                st = tr_fail(c->err, TR_ERR_RUNTIME, "out of memory");
        }
        tr_rresult_free(&one);
    }
    if (st == TR_OK && !with_data)
        tr_rresult_nodata(all, "%s", ran ? first_nodata : "no run database holds a selected rank");
    return st;
}

/* ---- several reports of one run database, on two threads ---- */

/* Each report is a scan of its own, SQLite-bound: the reports asked for are
 * computed by whichever of two threads is free (the second on a read-only
 * connection and a context of its own), then written in the order asked. */
typedef struct {
    const tr_report_opts *ro;
    tr_rresult *res;
    tr_status *st;
    tr_error *errs;
    int64_t *skipped;
    atomic_size_t next;
} report_jobs;

static void take_reports(report_jobs *j, tr_report_ctx *c)
{
    tr_error *own = c->err;
    for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->ro->n;) {
        c->err = &j->errs[i];
        c->param = j->ro->v[i].param;
        c->skipped = 0;
        j->res[i].report = j->ro->v[i].report->name;
        j->st[i] = j->ro->v[i].report->run(c, &j->res[i]);
        j->skipped[i] = c->skipped;
    }
    c->err = own;
}

/* The second thread: its context (a copy of the caller's: the options, time
 * origin and --step windows) is made before it starts, on the caller's thread. */
typedef struct {
    report_jobs *j;
    tr_report_ctx c;
    sqlite3 *db;
    tr_error err;
} report_worker;

static void *report_thread(void *arg)
{
    report_worker *w = arg;
    take_reports(w->j, &w->c);
    return NULL;
}

/* Computes every report of ro into res[], on c's connection and a peer's. */
static void compute_reports(tr_report_ctx *c, const tr_report_opts *ro, tr_rresult *res, tr_status *st,
                            tr_error *errs, int64_t *skipped)
{
    report_jobs j = {ro, res, st, errs, skipped};
    atomic_init(&j.next, 0);
    pthread_t th;
    report_worker w = {.j = &j};
    tr_error_clear(&w.err);
    int threaded = peer_ctx(c, &w.c, &w.db, &w.err) && pthread_create(&th, NULL, report_thread, &w) == 0;
    take_reports(&j, c);
    if (threaded)
        pthread_join(th, NULL);
    peer_ctx_free(&w.c, w.db);
}

/* One report's diagnostics (no data, warnings, events left out) to diag, and its tables. */
static void write_report(writer *w, void (*write)(writer *, const tr_rresult *), int json, const tr_rresult *r,
                         int64_t skipped, FILE *diag)
{
    if (r->nodata)
        fprintf(diag, "trace-analyze: %s: %s\n", r->report, r->nodata);
    for (size_t k = 0; k < r->nwarnings; k++)
        fprintf(diag, "trace-analyze: %s: warning: %s\n", r->report, r->warnings[k]);
    if (skipped)
        fprintf(diag, "trace-analyze: %s: warning: %lld event(s) with impossible times (an end before "
                "the start, or out of range) left out\n", r->report, (long long)skipped);
    if (!r->nodata || json)
        write(w, r);
}

static tr_status run_reports(sqlite3 *const *dbs, const char *const *names, size_t ndbs,
                             const tr_report_opts *ro, const tr_analyze_opts *o, FILE *out, FILE *diag,
                             tr_error *err)
{
    sqlite3 *db = dbs[0];
    void (*write)(writer *, const tr_rresult *) = write_text;
    int json = 0;
    for (size_t i = 0; i < sizeof writers / sizeof writers[0]; i++)
        if (o->format && !strcmp(o->format->name, writers[i].format)) {
            write = writers[i].write;
            json = write == write_json;
        }
    tr_report_ctx c;
    tr_status st = ctx_init(&c, db, o, err);
    c.dbs = dbs;
    c.db_names = names;
    c.ndbs = ndbs;
    c.ro_ = ro;
    if (st == TR_OK)
        st = select_steps(&c, ro);
    writer w = {out, o, 0};
    if (json && st == TR_OK)
        fputs("{\"time_unit\":\"ns\",\"reports\":[", out);
    /* one run database and several reports: all computed first, two at a time */
    size_t n = ndbs == 1 && ro->n > 1 && st == TR_OK ? ro->n : 0;
    tr_rresult *res = n ? calloc(n, sizeof *res) : NULL;
    tr_status *rst = n ? calloc(n, sizeof *rst) : NULL;
    tr_error *errs = n ? calloc(n, sizeof *errs) : NULL;
    int64_t *skipped = n ? calloc(n, sizeof *skipped) : NULL;
    if (n && !(res && rst && errs && skipped))
        n = 0;   /* one at a time, as below */
    if (n)
        compute_reports(&c, ro, res, rst, errs, skipped);
    for (size_t i = 0; i < ro->n && st == TR_OK; i++) {
        tr_rresult r;
        memset(&r, 0, sizeof r);
        if (n) {
            r = res[i];
            memset(&res[i], 0, sizeof res[i]);
            if ((st = rst[i]) != TR_OK)
                tr_error_copy(err, &errs[i]);
            c.skipped = skipped[i];
        } else {
            r.report = ro->v[i].report->name;
            c.param = ro->v[i].param;
            st = ndbs > 1 && !ro->v[i].report->many ? run_each(&c, ro->v[i].report, &r)
                                                     : ro->v[i].report->run(&c, &r);
        }
        if (st == TR_OK)
            write_report(&w, write, json, &r, c.skipped, diag);
        c.skipped = 0;
        tr_rresult_free(&r);
    }
    for (size_t i = 0; i < n; i++)
        tr_rresult_free(&res[i]);
    free(res);
    free(rst);
    free(errs);
    free(skipped);
    if (json && st == TR_OK)
        fputs("\n]}\n", out);
    ctx_free(&c);
    if (st == TR_OK && ferror(out))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error on output");
    return st;
}
