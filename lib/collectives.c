/*
 * collectives.c - NCCL/RCCL collectives: recognised by kernel name, their
 * parameters resolved onto the kernels at ingest, matched across ranks and
 * used to align the ranks' clocks (lib/clock_align.h).
 */
#include "lib/collectives.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/checked.h"
#include "lib/clock_align.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/spill.h"

const char *tr_clock_method_name(tr_clock_method m)
{
    static const char *const names[] = {"reference", "anchor", "collectives", "stored"};
    return (unsigned)m < sizeof names / sizeof names[0] ? names[m] : "?";
}

/* ---- names ---- */

/* The collectives as NCCL names them in kernel names (CamelCase), longest first
 * where one is a prefix of another. */
static const struct { const char *camel, *op; } kernel_ops[] = {
    {"AllReduce", "allreduce"},   {"AllGather", "allgather"}, {"ReduceScatter", "reducescatter"},
    {"Broadcast", "broadcast"},   {"Reduce", "reduce"},       {"SendRecv", "sendrecv"},
    {"AllToAll", "alltoall"},     {"Send", "send"},           {"Recv", "recv"},
};

/* Prefixes of NCCL/RCCL kernels: ncclDevKernel_AllReduce_Sum_f32_RING_LL (2.19+),
 * ncclKernel_AllReduce_RING_LL_Sum_float (2.7-2.18), ncclAllReduceRingLLKernel_sum_f32
 * (before 2.7).  "Generic" kernels (NCCL 2.19+ for several ops) say no op. */
static const char *const kernel_prefixes[] = {"ncclDevKernel_", "ncclKernel_", "rcclKernel_", "nccl"};

int tr_coll_kernel_op(const char *name, char *buf, size_t n)
{
    if (!name || !n)
        return 0;
    if (!strncmp(name, "void ", 5))
        name += 5;
    else if (name[0] == '_' && name[1] == 'Z') {
        /* a mangled name (the raw one, or one no demangler took): _Z33ncclBroadcastRingLLKernel_copy_i8... */
        name += 2;
        while (*name >= '0' && *name <= '9')
            name++;
    }
    for (size_t p = 0; p < sizeof kernel_prefixes / sizeof kernel_prefixes[0]; p++) {
        size_t pl = strlen(kernel_prefixes[p]);
        if (strncmp(name, kernel_prefixes[p], pl))
            continue;
        const char *rest = name + pl;
        for (size_t k = 0; k < sizeof kernel_ops / sizeof kernel_ops[0]; k++) {
            size_t kl = strlen(kernel_ops[k].camel);
            /* AllReduce must not be read as Reduce..., nor Send as SendRecv */
            if (!strncmp(rest, kernel_ops[k].camel, kl) && !islower((unsigned char)rest[kl])
                && !(kl == 4 && !strncmp(rest + kl, "Recv", 4))) {
                snprintf(buf, n, "%s", kernel_ops[k].op);
                return 1;
            }
        }
        /* a kernel of the library whose op the name does not give */
        if (p < 3) {
            snprintf(buf, n, "nccl");
            return 1;
        }
        return 0;
    }
    return 0;
}

void tr_coll_normalize_op(const char *name, char *buf, size_t n)
{
    if (!n)
        return;
    if (!name)
        name = "";
    if (!strncasecmp(name, "nccl:", 5) || !strncasecmp(name, "gloo:", 5))
        name += 5;
    else if (!strncasecmp(name, "c10d::", 6))
        name += 6;
    size_t k = 0;
    for (const char *s = name; *s && k + 1 < n; s++)
        if (isalnum((unsigned char)*s))
            buf[k++] = (char)tolower((unsigned char)*s);
    buf[k] = '\0';
    /* the variants of one collective that run the same kernel */
    static const char *const suffixes[] = {"coalesced", "base", "intotensor", "tensor", "single"};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            size_t sl = strlen(suffixes[i]);
            if (k > sl + 3 && !strcmp(buf + k - sl, suffixes[i])) {
                k -= sl;
                buf[k] = '\0';
                again = 1;
            }
        }
    }
    /* the vector forms (allgatherv, alltoallv, ...), never sendrecv or recv */
    static const char *const vector_ops[] = {"allgatherv", "alltoallv", "reducescatterv", "gatherv", "scatterv"};
    for (size_t i = 0; i < sizeof vector_ops / sizeof vector_ops[0]; i++)
        if (!strcmp(buf, vector_ops[i]))
            buf[--k] = '\0';
    if (!k)
        snprintf(buf, n, "nccl");
}

int tr_coll_dtype_size(const char *dtype)
{
    static const struct { const char *name; int size; } sizes[] = {
        {"float", 4}, {"float32", 4}, {"f32", 4}, {"half", 2}, {"float16", 2}, {"f16", 2},
        {"bfloat16", 2}, {"bf16", 2}, {"double", 8}, {"float64", 8}, {"f64", 8}, {"int", 4},
        {"int32", 4}, {"long", 8}, {"int64", 8}, {"short", 2}, {"int16", 2}, {"char", 1},
        {"int8", 1}, {"byte", 1}, {"uint8", 1}, {"bool", 1}, {"complexfloat", 8},
        {"complexdouble", 16}, {"complexhalf", 4}, {"float8_e4m3fn", 1}, {"float8_e5m2", 1},
        {"float8_e4m3fnuz", 1}, {"float8_e5m2fnuz", 1},
    };
    if (!dtype)
        return 0;
    if (!strncmp(dtype, "c10::", 5))
        dtype += 5;
    else if (!strncmp(dtype, "torch.", 6))
        dtype += 6;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (!strcasecmp(dtype, sizes[i].name))
            return sizes[i].size;
    return 0;
}

static int64_t coll_bytes(int64_t in, int64_t out, const char *dtype)
{
    int sz = tr_coll_dtype_size(dtype);
    int64_t ne = in > out ? in : out;
    if (!sz || ne < 0 || ne > INT64_MAX / 16)
        return -1;
    return ne * sz;
}

/* ---- a small string table (pg names, ops, dtypes: a handful each) ---- */

typedef struct {
    char **v;
    size_t n, cap;
    tr_i64map idx;   /* hash -> index + 1; collisions fall back to a scan */
} strtab;

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The index of s (added when new); (size_t)-1 on out-of-memory. */
static size_t strtab_get(strtab *t, const char *s)
{
    if (!s)
        s = "";
    int64_t h = (int64_t)(fnv(s) & 0x7fffffffffffffffull), v;
    if (tr_i64map_get(&t->idx, h, &v) && !strcmp(t->v[v - 1], s))
        return (size_t)v - 1;
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i], s))
            return i;
    if (t->n == t->cap) {
        size_t nc = t->cap ? 2 * t->cap : 16;
        char **nv = realloc(t->v, nc * sizeof *nv);
        if (!nv)
            return (size_t)-1;
        t->v = nv;
        t->cap = nc;
    }
    char *copy = strdup(s);
    if (!copy)
        return (size_t)-1;
    t->v[t->n++] = copy;
    if (!tr_i64map_get(&t->idx, h, &v) && tr_i64map_put(&t->idx, h, (int64_t)t->n) < 0)
        return (size_t)-1;
    return t->n - 1;
}

static void strtab_free(strtab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    tr_i64map_free(&t->idx);
}

/* ---- matching and alignment, shared by ingest and analysis ---- */

typedef struct {
    size_t rank;                 /* index into the ranks */
    size_t pg, op, dtype;        /* strtab indices */
    int64_t seq, start, end, event_id, stream_id, in_nelems, out_nelems, group_size;
} coll_item;

typedef struct {
    coll_item *v;
    size_t n, cap;
    strtab names;
} coll_items;

static int items_add(coll_items *it, const coll_item *x)
{
    if (it->n == it->cap) {
        size_t nc = it->cap ? 2 * it->cap : 256;
        coll_item *nv = realloc(it->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        it->v = nv;
        it->cap = nc;
    }
    it->v[it->n++] = *x;
    return 0;
}

static void items_free(coll_items *it)
{
    free(it->v);
    strtab_free(&it->names);
}

static int cmp_item(const void *pa, const void *pb)
{
    const coll_item *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->pg != b->pg)
        return a->pg < b->pg ? -1 : 1;
    if (a->op != b->op)
        return a->op < b->op ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->event_id > b->event_id) - (a->event_id < b->event_id);
}

static tr_status nomem(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
}

static int cmp_call(const void *pa, const void *pb)
{
    const tr_coll_call *a = pa, *b = pb;
    int64_t x = a->parts[a->first_in].start, y = b->parts[b->first_in].start;
    if (x != y)
        return x < y ? -1 : 1;
    int c = strcmp(a->pg, b->pg);
    if (c)
        return c;
    c = strcmp(a->op, b->op);
    return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/* present, first and last in, the longest, the skew and causality of a call
 * over its parts (aligned). */
static void call_stats(tr_coll_call *c, size_t nr)
{
    int64_t last_in = INT64_MIN, first_out = INT64_MAX, first_in = INT64_MAX, longest = -1;
    c->present = 0;
    for (size_t r = 0; r < nr; r++) {
        const tr_coll_part *p = &c->parts[r];
        if (p->event_id < 0)
            continue;
        c->present++;
        if (p->start < first_in)
            first_in = p->start, c->first_in = r;
        if (p->start > last_in)
            last_in = p->start, c->last_in = r;
        if (p->end < first_out)
            first_out = p->end;
        int64_t d = tr_sat_sub(p->end, p->start);
        if (d > longest)
            longest = d, c->slowest = r;
    }
    c->arrival_skew = c->present ? tr_sat_sub(last_in, first_in) : 0;
    c->order_violation = c->present && first_out < last_in;
}

/* On every rank of its process group: as many as the group's size where the
 * trace gives it (a group of some ranks only, as tensor-parallel groups are;
 * or of more ranks than were given, one missing), else every rank given. */
static int call_paired(const tr_coll_call *c, size_t nr)
{
    return c->group_size > 0 ? (int64_t)c->present == c->group_size : c->present == nr;
}

/* Sequence numbers key the calls of a (pg, op) when every rank gives one,
 * rising, for every call of it: they survive a profiling window that begins
 * at a different call on each rank.  Otherwise the order of the calls does. */
#define SEQ_LIMIT (INT64_C(1) << 40)

static int run_start(const coll_items *it, size_t i)
{
    const coll_item *x = &it->v[i];
    return !i || x->rank != it->v[i - 1].rank || x->pg != it->v[i - 1].pg || x->op != it->v[i - 1].op;
}

static int64_t group_key(const coll_item *x)
{
    return (int64_t)(x->pg << 24 | x->op);
}

/* A group a (pg, op), numbered in group (key -> index); seq_bad[group] (made
 * here, *ng entries) says its sequence numbers do not key its calls.  0, or -1
 * out of memory. */
static int group_items(const coll_items *it, tr_i64map *group, unsigned char **seq_bad, size_t *ng)
{
    *ng = 0;
    for (size_t i = 0; i < it->n; i++) {
        int64_t key = group_key(&it->v[i]), g;
        if (!tr_i64map_get(group, key, &g) && tr_i64map_put(group, key, (int64_t)(*ng)++) < 0)
            return -1;
    }
    if (!(*seq_bad = calloc(*ng ? *ng : 1, 1)))
        return -1;
    for (size_t i = 0; i < it->n; i++) {
        const coll_item *x = &it->v[i];
        int64_t g;
        tr_i64map_get(group, group_key(x), &g);
        if (x->seq < 0 || x->seq >= SEQ_LIMIT || (!run_start(it, i) && x->seq <= it->v[i - 1].seq))
            (*seq_bad)[g] = 1;
    }
    return 0;
}

/* A new call of seq n, like item x, with no rank's part yet; NULL out of memory. */
static tr_coll_call *new_call(tr_coll_set *s, size_t *calls_cap, const coll_items *it, const coll_item *x, int64_t n)
{
    if (s->ncalls == *calls_cap) {
        size_t cap = *calls_cap ? 2 * *calls_cap : 64;
        tr_coll_call *nc = cap < SIZE_MAX / sizeof *nc ? realloc(s->calls, cap * sizeof *nc) : NULL;
        if (!nc)
            return NULL;
        s->calls = nc;
        *calls_cap = cap;
    }
    tr_coll_call *c = &s->calls[s->ncalls];
    memset(c, 0, sizeof *c);
    c->pg = strdup(it->names.v[x->pg]);
    c->op = strdup(it->names.v[x->op]);
    c->dtype = strdup(it->names.v[x->dtype]);
    c->parts = malloc(s->nranks * sizeof *c->parts);
    s->ncalls++;
    if (!c->pg || !c->op || !c->dtype || !c->parts)
        return NULL;
    for (size_t r = 0; r < s->nranks; r++)
        c->parts[r] = (tr_coll_part){-1, 0, 0, 0};
    c->seq = n;
    c->in_nelems = x->in_nelems;
    c->out_nelems = x->out_nelems;
    c->group_size = x->group_size;
    c->bytes = coll_bytes(x->in_nelems, x->out_nelems, c->dtype);
    return c;
}

/* The calls: the items of one (pg, op) and sequence number (or, where the
 * numbers do not key them, the same place in each rank's order) are one call,
 * a part a rank.  0, or -1 out of memory. */
static int match_calls(tr_coll_set *s, const coll_items *it, const tr_i64map *group, const unsigned char *seq_bad)
{
    tr_i64map callmap;
    tr_i64map_init(&callmap);
    int64_t order = 0;
    size_t calls_cap = 0;
    int rc = 0;
    for (size_t i = 0; i < it->n && rc == 0; i++) {
        const coll_item *x = &it->v[i];
        order = run_start(it, i) ? 0 : order + 1;
        int64_t g, ci;
        tr_i64map_get(group, group_key(x), &g);
        int64_t n = seq_bad[g] ? order : x->seq;
        int64_t key = (int64_t)((uint64_t)g * (uint64_t)SEQ_LIMIT + (uint64_t)n);   /* wraps, never overflows */
        if (!tr_i64map_get(&callmap, key, &ci)) {
            ci = (int64_t)s->ncalls;
            if (!new_call(s, &calls_cap, it, x, n) || tr_i64map_put(&callmap, key, ci) < 0) {
                rc = -1;
                break;
            }
        }
        tr_coll_call *c = &s->calls[ci];
        if (c->parts[x->rank].event_id >= 0)
            continue;   /* the same call twice on one rank (repeated seq): the first counts */
        c->parts[x->rank] = (tr_coll_part){x->event_id, x->start, x->end, x->stream_id};
        s->ranks[x->rank].ncalls++;
    }
    tr_i64map_free(&callmap);
    return rc;
}

/* Each rank's clock offset to the reference rank (the lowest rank that has
 * collectives: a rank without any, say a CPU-only process, could anchor no
 * one), from the matched calls' ends, or the stored offsets when they are
 * against the same reference. */
static tr_status align_clocks(tr_coll_set *s, const int64_t *stored_off, const int64_t *stored_res, tr_error *err)
{
    size_t nr = s->nranks, nc = s->ncalls;
    if (nr && nc > SIZE_MAX / nr / sizeof(int64_t))
        return nomem(err);
    size_t cells = nr * nc > 0 ? nr * nc : 1;
    int64_t *start = malloc(cells * sizeof *start), *end = malloc(cells * sizeof *end);
    unsigned char *have = calloc(cells, 1);
    tr_clock_fit *fit = calloc(nr ? nr : 1, sizeof *fit);
    tr_status st = start && end && have && fit ? TR_OK : nomem(err);
    for (size_t k = 0; k < nc && st == TR_OK; k++)
        for (size_t r = 0; r < nr; r++) {
            const tr_coll_part *p = &s->calls[k].parts[r];
            if (p->event_id < 0)
                continue;
            have[r * nc + k] = 1;
            start[r * nc + k] = p->start;
            end[r * nc + k] = p->end;
        }
    size_t ref = 0;
    while (ref < nr && !s->ranks[ref].ncalls)
        ref++;
    if (ref == nr)
        ref = 0;
    if (st == TR_OK) {
        s->ref_rank = nr ? s->ranks[ref].rank : 0;
        if (stored_off && stored_off[ref] != 0)
            stored_off = NULL;   /* stored against another reference: computed again */
        s->offsets_stored = stored_off != NULL;
        if (nr)
            st = tr_clock_align(nr, nc, start, end, have, ref, fit, err);
    }
    for (size_t r = 0; r < nr && st == TR_OK; r++) {
        tr_coll_rank *rk = &s->ranks[r];
        rk->anchor_ns = 0;
        if (stored_off) {
            rk->offset_ns = stored_off[r];
            rk->residual_ns = stored_res ? stored_res[r] : fit[r].residual;
            rk->method = r == ref ? TR_CLOCK_REFERENCE
                         : rk->method == TR_CLOCK_REFERENCE ? TR_CLOCK_STORED : rk->method;
        } else {
            rk->offset_ns = fit[r].offset;
            rk->residual_ns = fit[r].residual;
            rk->method = r == ref ? TR_CLOCK_REFERENCE : fit[r].refined ? TR_CLOCK_COLLECTIVES : TR_CLOCK_ANCHOR;
        }
        if (rk->residual_ns > s->max_residual_ns)
            s->max_residual_ns = rk->residual_ns;
    }
    free(start);
    free(end);
    free(have);
    free(fit);
    return st;
}

/* The parts' times on the reference clock, each call's skew and who came
 * first and last, and the calls in order. */
static void finish_calls(tr_coll_set *s)
{
    size_t nr = s->nranks;
    for (size_t k = 0; k < s->ncalls; k++) {
        tr_coll_call *c = &s->calls[k];
        for (size_t r = 0; r < nr; r++) {
            tr_coll_part *p = &c->parts[r];
            if (p->event_id < 0)
                continue;
            p->start = tr_sat_add(p->start, s->ranks[r].offset_ns);
            p->end = tr_sat_add(p->end, s->ranks[r].offset_ns);
        }
        call_stats(c, nr);
        s->order_violations += c->order_violation;
        s->paired += call_paired(c, nr);
    }
    if (s->ncalls)
        qsort(s->calls, s->ncalls, sizeof *s->calls, cmp_call);
}

/* Fills s->calls from the items (sorted here) and aligns the clocks; s->ranks
 * (nranks) is already filled.  stored: offsets to use instead (NULL: compute). */
static tr_status build(tr_coll_set *s, coll_items *it, const int64_t *stored_off,
                       const int64_t *stored_res, tr_error *err)
{
    if (it->n)
        qsort(it->v, it->n, sizeof *it->v, cmp_item);
    tr_i64map group;
    tr_i64map_init(&group);
    unsigned char *seq_bad = NULL;
    size_t ng = 0;
    tr_status st = group_items(it, &group, &seq_bad, &ng) < 0 || match_calls(s, it, &group, seq_bad) < 0
                       ? nomem(err)
                       : align_clocks(s, stored_off, stored_res, err);
    if (st == TR_OK)
        finish_calls(s);
    tr_i64map_free(&group);
    free(seq_bad);
    return st;
}

void tr_coll_set_free(tr_coll_set *s)
{
    for (size_t k = 0; k < s->ncalls; k++) {
        free(s->calls[k].pg);
        free(s->calls[k].op);
        free(s->calls[k].dtype);
        free(s->calls[k].parts);
    }
    free(s->calls);
    free(s->ranks);
    memset(s, 0, sizeof *s);
}

long tr_coll_rank_index(const tr_coll_set *s, size_t db, int64_t source)
{
    for (size_t r = 0; r < s->nranks; r++)
        if (s->ranks[r].db == db && s->ranks[r].source == source)
            return (long)r;
    return -1;
}

static int cmp_rank(const void *pa, const void *pb)
{
    const tr_coll_rank *a = pa, *b = pb;
    if (a->rank != b->rank)
        return a->rank < b->rank ? -1 : 1;
    if (a->db != b->db)
        return a->db < b->db ? -1 : 1;
    return (a->source > b->source) - (a->source < b->source);
}

/* Sorts the ranks by number and renumbers the items' rank indices to match. */
static tr_status sort_ranks(tr_coll_set *s, coll_items *it, tr_error *err)
{
    size_t nr = s->nranks;
    for (size_t r = 0; r < nr; r++)
        s->ranks[r].ncalls = (int64_t)r;   /* the old index, for the renumbering */
    if (nr)
        qsort(s->ranks, nr, sizeof *s->ranks, cmp_rank);
    size_t *map = malloc((nr ? nr : 1) * sizeof *map);
    if (!map)
        return nomem(err);
    for (size_t r = 0; r < nr; r++) {
        map[s->ranks[r].ncalls] = r;
        s->ranks[r].ncalls = 0;
        if (r && s->ranks[r].rank == s->ranks[r - 1].rank)
            s->duplicate_ranks = 1;
    }
    for (size_t i = 0; i < it->n; i++)
        it->v[i].rank = map[it->v[i].rank];
    free(map);
    return TR_OK;
}

/* ---- ingest: the model ---- */

/* The nearest event at or above e (its launching call, the ops around it)
 * that carried collective parameters; -1 when none. */
#define COMM_WALK 32

static int64_t comm_of(const tr_trace *t, const tr_i64map *by_event, size_t e)
{
    int64_t ci, cur = (int64_t)e;
    for (int depth = 0; cur >= 0 && depth < COMM_WALK; depth++) {
        if (tr_i64map_get(by_event, cur, &ci))
            return ci;
        cur = t->events.v[cur].parent;
    }
    return -1;
}

static uint32_t source_of_stream(const tr_trace *t, uint32_t stream)
{
    if (!stream || stream >= t->streams.n)
        return 0;
    uint32_t d = t->streams.v[stream].device;
    return d && d < t->devices.n ? t->devices.v[d].source : 0;
}

/* Does any name hold "nccl"?  The strings are far fewer than the events, so a
 * trace without collectives costs no pass over its events. */
static int any_nccl_name(const tr_trace *t)
{
    for (size_t id = 1; id < t->strings.count; id++)
        if (strstr(t->strings.entries[id].str, "nccl"))
            return 1;
    return 0;
}

tr_status tr_coll_ingest(tr_trace *t, tr_error *err)
{
    if (!any_nccl_name(t)) {
        t->comms.n = 0;   /* parameters with no kernel to carry them */
        return TR_OK;
    }
    tr_i64map by_event;
    tr_i64map_init(&by_event);
    tr_status st = TR_OK;
    for (size_t i = 0; i < t->comms.n; i++)
        if (tr_i64map_put(&by_event, (int64_t)t->comms.v[i].event, (int64_t)i) < 0) {
            tr_i64map_free(&by_event);
            return nomem(err);
        }
    /* one entry per collective kernel, with what its call said */
    struct { tr_comm_info *v; size_t n, cap; } out = {0};
    char op[64];
    for (size_t e = 0; e < t->events.n; e++) {
        const tr_event *ev = &t->events.v[e];
        if (ev->kind != TR_KIND_KERNEL || !tr_coll_kernel_op(tr_str_of(t, ev->name), op, sizeof op))
            continue;
        int64_t ci = comm_of(t, &by_event, e);
        tr_comm_info x = {e, 0, 0, 0, 0, 0, -1, -1, -1, -1};
        if (ci >= 0)
            x = t->comms.v[ci], x.event = e;
        /* the trace's own collective name, normalised; else the kernel's */
        if (x.op) {
            char norm[64];
            tr_coll_normalize_op(tr_str_of(t, x.op), norm, sizeof norm);
            x.op = tr_str(t, norm);
        } else {
            x.op = tr_str(t, op);
        }
        if (!x.op || tr_vec_reserve(out, out.n + 1) < 0) {
            tr_spill_free(out.v);
            tr_i64map_free(&by_event);
            return nomem(err);
        }
        out.v[out.n++] = x;
    }
    tr_i64map_free(&by_event);
    tr_spill_free(t->comms.v);
    t->comms.v = out.v;
    t->comms.n = out.n;
    t->comms.cap = out.cap;
    t->clock_offsets.n = 0;
    size_t nsrc = t->sources.n ? t->sources.n - 1 : 0;
    if (nsrc < 2 || !t->comms.n)
        return TR_OK;
    /* several ranks in one ingest: their offsets, stored in clock_offsets */
    tr_coll_set s = {0};
    coll_items it = {0};
    tr_i64map_init(&it.names.idx);
    s.ranks = calloc(nsrc, sizeof *s.ranks);
    if (!s.ranks) {
        items_free(&it);
        return nomem(err);
    }
    s.nranks = nsrc;
    for (size_t i = 0; i < nsrc; i++) {
        const tr_source *src = &t->sources.v[i + 1];
        s.ranks[i].db = 0;
        s.ranks[i].source = (int64_t)i + 1;
        s.ranks[i].rank = src->rank >= 0 ? src->rank : (int64_t)i;
        s.ranks[i].rank_from_order = src->rank < 0;
    }
    for (size_t i = 0; i < t->comms.n && st == TR_OK; i++) {
        const tr_comm_info *x = &t->comms.v[i];
        const tr_event *ev = &t->events.v[x->event];
        uint32_t src = source_of_stream(t, ev->stream);
        if (!src || src > nsrc || !tr_times_ok(ev->start, ev->end))
            continue;
        coll_item ci = {src - 1, strtab_get(&it.names, tr_str_of(t, x->pg)), strtab_get(&it.names, tr_str_of(t, x->op)),
                        strtab_get(&it.names, tr_str_of(t, x->dtype)), x->seq, ev->start, ev->end,
                        (int64_t)x->event + 1, ev->stream, x->in_nelems, x->out_nelems, x->group_size};
        if (ci.pg == (size_t)-1 || ci.op == (size_t)-1 || ci.dtype == (size_t)-1 || items_add(&it, &ci) < 0)
            st = nomem(err);
    }
    if (st == TR_OK)
        st = sort_ranks(&s, &it, err);
    if (st == TR_OK)
        st = build(&s, &it, NULL, NULL, err);
    if (st == TR_OK && tr_vec_reserve(t->clock_offsets, s.nranks) < 0)
        st = nomem(err);
    for (size_t r = 0; st == TR_OK && r < s.nranks; r++)
        t->clock_offsets.v[t->clock_offsets.n++] = (tr_clock_offset){
            (uint32_t)s.ranks[r].source, s.ranks[r].offset_ns, s.ranks[r].anchor_ns, s.ranks[r].residual_ns,
            s.ranks[r].ncalls, tr_clock_method_name(s.ranks[r].method)};
    items_free(&it);
    tr_coll_set_free(&s);
    return st;
}

/* ---- run.db: writing ---- */

static tr_status sql_fail(sqlite3 *db, tr_error *err, const char *what)
{
    return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (writing %s)", sqlite3_errmsg(db), what);
}

static void bind_opt_text(sqlite3_stmt *st, int col, const tr_trace *t, uint32_t id)
{
    if (id)
        sqlite3_bind_text(st, col, tr_str_of(t, id), -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, col);
}

static void bind_opt_int(sqlite3_stmt *st, int col, int64_t v)
{
    if (v >= 0)
        sqlite3_bind_int64(st, col, v);
    else
        sqlite3_bind_null(st, col);
}

tr_status tr_coll_write(sqlite3 *db, const tr_trace *t, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (t->comms.n) {
        if (sqlite3_prepare_v2(db, "INSERT INTO collectives(event_id, op, pg, pg_desc, pg_ranks, seq, in_nelems, "
                                   "out_nelems, dtype, group_size, bytes) VALUES(?,?,?,?,?,?,?,?,?,?,?)",
                               -1, &st, NULL) != SQLITE_OK)
            return sql_fail(db, err, "collectives");
        for (size_t i = 0; i < t->comms.n; i++) {
            const tr_comm_info *x = &t->comms.v[i];
            sqlite3_bind_int64(st, 1, (int64_t)x->event + 1);
            sqlite3_bind_text(st, 2, tr_str_of(t, x->op), -1, SQLITE_STATIC);
            bind_opt_text(st, 3, t, x->pg);
            bind_opt_text(st, 4, t, x->pg_desc);
            bind_opt_text(st, 5, t, x->pg_ranks);
            bind_opt_int(st, 6, x->seq);
            bind_opt_int(st, 7, x->in_nelems);
            bind_opt_int(st, 8, x->out_nelems);
            bind_opt_text(st, 9, t, x->dtype);
            bind_opt_int(st, 10, x->group_size);
            bind_opt_int(st, 11, coll_bytes(x->in_nelems, x->out_nelems, x->dtype ? tr_str_of(t, x->dtype) : NULL));
            if (sqlite3_step(st) != SQLITE_DONE) {
                sqlite3_finalize(st);
                return sql_fail(db, err, "collectives");
            }
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    if (t->clock_offsets.n) {
        if (sqlite3_prepare_v2(db, "INSERT INTO clock_offsets(source_id, offset_ns, anchor_ns, method, residual_ns, "
                                   "calls) VALUES(?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
            return sql_fail(db, err, "clock_offsets");
        for (size_t i = 0; i < t->clock_offsets.n; i++) {
            const tr_clock_offset *o = &t->clock_offsets.v[i];
            sqlite3_bind_int64(st, 1, o->source);
            sqlite3_bind_int64(st, 2, o->offset_ns);
            sqlite3_bind_int64(st, 3, o->anchor_ns);
            sqlite3_bind_text(st, 4, o->method, -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, 5, o->residual_ns);
            sqlite3_bind_int64(st, 6, o->calls);
            if (sqlite3_step(st) != SQLITE_DONE) {
                sqlite3_finalize(st);
                return sql_fail(db, err, "clock_offsets");
            }
            sqlite3_reset(st);
        }
        sqlite3_finalize(st);
    }
    return TR_OK;
}

/* ---- run.db: reading ---- */

static int has_table(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", -1, &st, NULL)
        != SQLITE_OK)
        return 0;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    int yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

static tr_status db_fail(sqlite3 *db, tr_error *err)
{
    const char *f = sqlite3_db_filename(db, "main");
    return tr_fail(err, TR_ERR_INPUT, "cannot read collectives: path=\"%s\": %s", f ? f : "", sqlite3_errmsg(db));
}

static const char *col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? (const char *)s : "";
}

static int64_t col_opt(sqlite3_stmt *st, int i)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, i);
}

/* The sources of one run.db as ranks (rank: stored, else base + position). */
static tr_status load_sources(sqlite3 *db, size_t dbi, int64_t *base, tr_coll_set *s, tr_error *err)
{
    sqlite3_stmt *st;
    int with_rank = sqlite3_prepare_v2(db, "SELECT id, rank FROM sources ORDER BY id", -1, &st, NULL) == SQLITE_OK;
    if (!with_rank && sqlite3_prepare_v2(db, "SELECT id, NULL FROM sources ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err);
    int rc;
    int64_t pos = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        tr_coll_rank *nr = realloc(s->ranks, (s->nranks + 1) * sizeof *nr);
        if (!nr) {
            sqlite3_finalize(st);
            return nomem(err);
        }
        s->ranks = nr;
        tr_coll_rank *r = &s->ranks[s->nranks++];
        memset(r, 0, sizeof *r);
        r->db = dbi;
        r->source = sqlite3_column_int64(st, 0);
        r->rank_from_order = sqlite3_column_type(st, 1) == SQLITE_NULL;
        r->rank = r->rank_from_order ? *base + pos : sqlite3_column_int64(st, 1);
        pos++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return db_fail(db, err);
    *base += pos;
    return TR_OK;
}

static const char items_sql[] =
    "SELECT e.id, e.start_ns, e.end_ns, e.stream_id, d.source_id, c.op, c.pg, c.seq, c.in_nelems, "
    "c.out_nelems, c.dtype, c.group_size FROM collectives c JOIN events e ON e.id = c.event_id "
    "LEFT JOIN streams s ON s.id = e.stream_id LEFT JOIN devices d ON d.id = s.device_id";
/* a run.db written before the collectives table: the kernels go by their names */
static const char items_by_name_sql[] =
    "SELECT e.id, e.start_ns, e.end_ns, e.stream_id, d.source_id, n.value FROM events e "
    "JOIN strings n ON n.id = e.name_id LEFT JOIN streams s ON s.id = e.stream_id "
    "LEFT JOIN devices d ON d.id = s.device_id WHERE e.kind = 7 AND n.value LIKE '%nccl%'";

static tr_status load_items(sqlite3 *db, size_t dbi, tr_coll_set *s, coll_items *it, tr_error *err)
{
    int table = has_table(db, "collectives");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, table ? items_sql : items_by_name_sql, -1, &st, NULL) != SQLITE_OK)
        return db_fail(db, err);
    tr_i64map src_rank;   /* sources.id -> rank index */
    tr_i64map_init(&src_rank);
    tr_status rs = TR_OK;
    for (size_t r = 0; r < s->nranks; r++)
        if (s->ranks[r].db == dbi && tr_i64map_put(&src_rank, s->ranks[r].source, (int64_t)r) < 0)
            rs = nomem(err);
    int rc;
    char op[64];
    while (rs == TR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ri;
        if (sqlite3_column_type(st, 4) == SQLITE_NULL || !tr_i64map_get(&src_rank, sqlite3_column_int64(st, 4), &ri))
            continue;   /* a kernel on no known device: no rank to give it */
        int64_t s0 = sqlite3_column_int64(st, 1), e0 = sqlite3_column_int64(st, 2);
        if (!tr_times_ok(s0, e0))
            continue;   /* no trace holds such times; the reports leave them out too */
        coll_item x = {(size_t)ri, 0, 0, 0, -1, s0, e0, sqlite3_column_int64(st, 0), col_opt(st, 3), -1, -1, -1};
        if (table) {
            tr_coll_normalize_op(col_text(st, 5), op, sizeof op);
            x.pg = strtab_get(&it->names, col_text(st, 6));
            x.seq = col_opt(st, 7);
            x.in_nelems = col_opt(st, 8);
            x.out_nelems = col_opt(st, 9);
            x.dtype = strtab_get(&it->names, col_text(st, 10));
            x.group_size = col_opt(st, 11);
        } else {
            if (!tr_coll_kernel_op(col_text(st, 5), op, sizeof op))
                continue;
            x.pg = x.dtype = strtab_get(&it->names, "");
        }
        x.op = strtab_get(&it->names, op);
        if (x.pg == (size_t)-1 || x.op == (size_t)-1 || x.dtype == (size_t)-1 || items_add(it, &x) < 0)
            rs = nomem(err);
    }
    if (rs == TR_OK && rc != SQLITE_DONE)
        rs = db_fail(db, err);
    sqlite3_finalize(st);
    tr_i64map_free(&src_rank);
    return rs;
}

/* One run.db holding every rank with offsets stored at ingest: those are used. */
static tr_status load_stored(sqlite3 *db, tr_coll_set *s, int64_t **off, int64_t **res, tr_error *err)
{
    *off = *res = NULL;
    if (!has_table(db, "clock_offsets"))
        return TR_OK;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, "SELECT source_id, offset_ns, residual_ns, method FROM clock_offsets", -1, &st, NULL)
        != SQLITE_OK)
        return db_fail(db, err);
    int64_t *o = calloc(s->nranks ? s->nranks : 1, sizeof *o), *r = calloc(s->nranks ? s->nranks : 1, sizeof *r);
    unsigned char *got = calloc(s->nranks ? s->nranks : 1, 1);
    tr_status rs = o && r && got ? TR_OK : nomem(err);
    size_t n = 0;
    int rc = SQLITE_DONE;
    while (rs == TR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        long k = tr_coll_rank_index(s, 0, sqlite3_column_int64(st, 0));
        if (k < 0 || got[k])
            continue;
        got[k] = 1;
        n++;
        o[k] = sqlite3_column_int64(st, 1);
        r[k] = col_opt(st, 2) < 0 ? 0 : sqlite3_column_int64(st, 2);
        /* the method found at ingest; "stored" when it is none we know */
        s->ranks[k].method = TR_CLOCK_STORED;
        for (int m = TR_CLOCK_REFERENCE; m < TR_CLOCK_STORED; m++)
            if (!strcmp(col_text(st, 3), tr_clock_method_name((tr_clock_method)m)))
                s->ranks[k].method = (tr_clock_method)m;
    }
    if (rs == TR_OK && rc != SQLITE_DONE)
        rs = db_fail(db, err);
    sqlite3_finalize(st);
    free(got);
    /* usable when every rank has one (build() checks the reference's is 0) */
    if (rs == TR_OK && n == s->nranks && s->nranks) {
        *off = o;
        *res = r;
        return TR_OK;
    }
    free(o);
    free(r);
    return rs;
}

tr_status tr_coll_restrict(tr_coll_set *s, int (*keep)(void *ctx, int64_t rank), void *ctx, tr_error *err)
{
    size_t nr = s->nranks, nk = 0;
    size_t *idx = malloc((nr ? nr : 1) * sizeof *idx);
    if (!idx)
        return nomem(err);
    for (size_t r = 0; r < nr; r++)
        if (keep(ctx, s->ranks[r].rank))
            idx[nk++] = r;
    size_t nc = 0;
    s->paired = 0;
    s->order_violations = 0;
    for (size_t k = 0; k < s->ncalls; k++) {
        tr_coll_call *c = &s->calls[k];
        for (size_t j = 0; j < nk; j++)
            c->parts[j] = c->parts[idx[j]];
        call_stats(c, nk);
        if (!c->present) {
            free(c->pg);
            free(c->op);
            free(c->dtype);
            free(c->parts);
            continue;
        }
        s->paired += call_paired(c, nk);
        s->order_violations += c->order_violation;
        s->calls[nc++] = *c;
    }
    s->ncalls = nc;
    s->max_residual_ns = 0;
    for (size_t j = 0; j < nk; j++) {
        s->ranks[j] = s->ranks[idx[j]];
        if (s->ranks[j].residual_ns > s->max_residual_ns)
            s->max_residual_ns = s->ranks[j].residual_ns;
    }
    s->nranks = nk;
    free(idx);
    return TR_OK;
}

typedef struct { const int64_t *v; size_t n; } rank_list;

static int in_list(void *ctx, int64_t rank)
{
    const rank_list *l = ctx;
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == rank)
            return 1;
    return 0;
}

tr_status tr_coll_load(sqlite3 *const *dbs, size_t ndbs, const tr_coll_opts *opts, tr_coll_set *out,
                       tr_error *err)
{
    memset(out, 0, sizeof *out);
    coll_items it = {0};
    tr_i64map_init(&it.names.idx);
    int64_t base = 0, *off = NULL, *res = NULL;
    tr_status st = TR_OK;
    for (size_t i = 0; i < ndbs && st == TR_OK; i++)
        st = load_sources(dbs[i], i, &base, out, err);
    /* one run.db at a time: its page cache goes before the next, so many ranks
     * cost their collectives, not their caches */
    for (size_t i = 0; i < ndbs && st == TR_OK; i++) {
        st = load_items(dbs[i], i, out, &it, err);
        sqlite3_db_release_memory(dbs[i]);
    }
    if (st == TR_OK)
        st = sort_ranks(out, &it, err);
    if (st == TR_OK && ndbs == 1 && (!opts || opts->use_stored))
        st = load_stored(dbs[0], out, &off, &res, err);
    if (st == TR_OK)
        st = build(out, &it, off, res, err);
    free(off);
    free(res);
    items_free(&it);
    if (st == TR_OK && opts && opts->ranks) {
        rank_list l = {opts->ranks, opts->nranks};
        st = tr_coll_restrict(out, in_list, &l, err);
    }
    if (st != TR_OK)
        tr_coll_set_free(out);
    return st;
}
