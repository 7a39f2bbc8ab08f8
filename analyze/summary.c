/* Grouping events into key_averages()-style rows: one scan, bounded by groups. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/compat_torch.h"
#include "lib/aggregates.h"
#include "lib/checked.h"
#include "lib/frames.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/rundb.h"

static double v_cpu_total(const tr_group *g) { return (double)g->cpu_total; }
static double v_cpu_self(const tr_group *g) { return (double)g->cpu_self; }
static double v_gpu_total(const tr_group *g) { return (double)g->gpu_total; }
static double v_gpu_self(const tr_group *g) { return (double)g->gpu_self; }
static double v_cpu_avg(const tr_group *g) { return g->count ? (double)g->cpu_total / (double)g->count : 0; }
static double v_gpu_avg(const tr_group *g) { return g->count ? (double)g->gpu_total / (double)g->count : 0; }
static double v_count(const tr_group *g) { return (double)g->count; }
static double v_cpu_mem(const tr_group *g) { return (double)g->cpu_mem; }
static double v_cpu_mem_self(const tr_group *g) { return (double)g->cpu_mem_self; }
static double v_gpu_mem(const tr_group *g) { return (double)g->gpu_mem; }
static double v_gpu_mem_self(const tr_group *g) { return (double)g->gpu_mem_self; }
static double v_flops(const tr_group *g) { return (double)g->flops; }

const tr_sort_key tr_sort_keys[] = {
    {"cpu_time_total", "cpu_total", v_cpu_total},
    {"self_cpu_time_total", "self_cpu", v_cpu_self},
    {"cuda_time_total", "gpu_total cuda_total device_time_total", v_gpu_total},
    {"self_cuda_time_total", "self_gpu self_cuda self_device_time_total", v_gpu_self},
    {"cpu_time", "cpu_avg", v_cpu_avg},
    {"cuda_time", "gpu_avg cuda_avg device_time", v_gpu_avg},
    {"count", "calls", v_count},
    {"cpu_memory_usage", "cpu_mem", v_cpu_mem},
    {"self_cpu_memory_usage", "self_cpu_mem", v_cpu_mem_self},
    {"cuda_memory_usage", "gpu_mem cuda_mem device_memory_usage", v_gpu_mem},
    {"self_cuda_memory_usage", "self_gpu_mem self_cuda_mem self_device_memory_usage", v_gpu_mem_self},
    {"flops", "", v_flops},
    {"none", "first", NULL},
};
const size_t tr_nsort_keys = sizeof tr_sort_keys / sizeof tr_sort_keys[0];

const tr_sort_key *tr_sort_key_lookup(const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < tr_nsort_keys; i++) {
        if (strcmp(tr_sort_keys[i].name, name) == 0)
            return &tr_sort_keys[i];
        for (const char *a = tr_sort_keys[i].aliases; *a;) {
            size_t n = strcspn(a, " ");
            if (n == len && strncmp(a, name, n) == 0)
                return &tr_sort_keys[i];
            a += n;
            a += *a == ' ';
        }
    }
    return NULL;
}

/* ---- an interner of (parent, label) pairs: the nodes of a path trie ---- */
typedef struct {
    struct pair_slot { int64_t parent, label; int64_t id; } *slots;
    size_t cap, n;
    int64_t *parent, *label;   /* by id (1-based) */
    size_t arr_cap;
} pair_trie;

static uint64_t pair_hash(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ ((uint64_t)b + 0x7f4a7c159e3779b9ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

static int64_t trie_get(pair_trie *t, int64_t parent, int64_t label)
{
    if ((t->n + 1) * 2 > t->cap) {
        size_t ncap = t->cap ? t->cap * 2 : 1024;
        struct pair_slot *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return -1;
        for (size_t i = 0; i < t->cap; i++) {
            if (!t->slots[i].id)
                continue;
            size_t j = pair_hash(t->slots[i].parent, t->slots[i].label) & (ncap - 1);
            while (ns[j].id)
                j = (j + 1) & (ncap - 1);
            ns[j] = t->slots[i];
        }
        free(t->slots);
        t->slots = ns;
        t->cap = ncap;
    }
    size_t j = pair_hash(parent, label) & (t->cap - 1);
    while (t->slots[j].id) {
        if (t->slots[j].parent == parent && t->slots[j].label == label)
            return t->slots[j].id;
        j = (j + 1) & (t->cap - 1);
    }
    int64_t id = (int64_t)++t->n;
    if ((size_t)id >= t->arr_cap) {
        size_t nc = t->arr_cap ? t->arr_cap * 2 : 1024;
        int64_t *np = realloc(t->parent, nc * sizeof *np);
        if (!np)
            return -1;
        t->parent = np;
        int64_t *nl = realloc(t->label, nc * sizeof *nl);
        if (!nl)
            return -1;
        t->label = nl;
        t->arr_cap = nc;
    }
    t->parent[id] = parent;
    t->label[id] = label;
    t->slots[j] = (struct pair_slot){parent, label, id};
    return id;
}

static void trie_free(pair_trie *t)
{
    free(t->slots);
    free(t->parent);
    free(t->label);
    memset(t, 0, sizeof *t);
}

/* ---- group index: (name, host/device, shape, stack key) -> group ---- */
typedef struct {
    struct gslot { int64_t name, shape, stack; int gpu; int64_t idx; int used; } *slots;
    size_t cap, n;
} group_map;

/* Ids come from the file and may be any int64: mixed as unsigned, never overflowing. */
static uint64_t group_hash(int64_t name, int gpu, int64_t shape, int64_t stack)
{
    return pair_hash((int64_t)((uint64_t)name * 2 + (uint64_t)gpu),
                     (int64_t)((uint64_t)shape * 31 + (uint64_t)stack));
}

static int64_t *group_find(group_map *m, int64_t name, int gpu, int64_t shape, int64_t stack, int *fresh)
{
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        struct gslot *ns = calloc(ncap, sizeof *ns);
        if (!ns)
            return NULL;
        for (size_t i = 0; i < m->cap; i++) {
            if (!m->slots[i].used)
                continue;
            struct gslot *o = &m->slots[i];
            size_t j = group_hash(o->name, o->gpu, o->shape, o->stack) & (ncap - 1);
            while (ns[j].used)
                j = (j + 1) & (ncap - 1);
            ns[j] = *o;
        }
        free(m->slots);
        m->slots = ns;
        m->cap = ncap;
    }
    size_t j = group_hash(name, gpu, shape, stack) & (m->cap - 1);
    while (m->slots[j].used) {
        struct gslot *o = &m->slots[j];
        if (o->name == name && o->gpu == gpu && o->shape == shape && o->stack == stack) {
            *fresh = 0;
            return &o->idx;
        }
        j = (j + 1) & (m->cap - 1);
    }
    m->slots[j] = (struct gslot){name, shape, stack, gpu, -1, 1};
    m->n++;
    *fresh = 1;
    return &m->slots[j].idx;
}

/* ---- the scan ---- */
enum { C_ID, C_KIND, C_GPU, C_NAME, C_SHAPE, C_STACK, C_PARENT, C_FLAGS, C_TID, C_DEVICE, C_STREAM,
       C_START, C_END, C_CPU_TOTAL, C_CPU_SELF, C_GPU_TOTAL, C_GPU_SELF, C_CMEM, C_CMEM_SELF,
       C_GMEM, C_GMEM_SELF, C_FLOPS, C_CORR, C_SOURCE, C_THREAD_ROW, C_STREAM_ROW };

static const char scan_sql[] =
    "SELECT e.id, e.kind, k.on_gpu, e.name_id, e.shape_id, e.stack_id, e.parent_id, e.flags, "
    "coalesce(t.tid, pt.tid), d.device, s.stream, e.start_ns, e.end_ns, e.cpu_total_ns, "
    "e.cpu_self_ns, e.gpu_total_ns, e.gpu_self_ns, e.cpu_mem_total, e.cpu_mem_self, "
    "e.gpu_mem_total, e.gpu_mem_self, e.flops, e.correlation, d.source_id, "
    "coalesce(e.thread_id, -1), coalesce(e.stream_id, -1) "
    "FROM events e JOIN kinds k ON k.id = e.kind "
    "LEFT JOIN threads t ON t.id = e.thread_id "
    "LEFT JOIN events pe ON pe.id = e.parent_id AND e.thread_id IS NULL "
    "LEFT JOIN threads pt ON pt.id = pe.thread_id "
    "LEFT JOIN streams s ON s.id = e.stream_id LEFT JOIN devices d ON d.id = s.device_id";

typedef struct {
    sqlite3 *db;
    const tr_analyze_opts *o;
    const tr_selection *sel;
    tr_summary *s;
    tr_error *err;
    group_map groups;
    pair_trie paths;        /* tree mode: (ancestor path, name) */
    pair_trie keys;         /* innermost-first frame lists, at most N long */
    tr_i64map key_cache;    /* path node -> key node */
    tr_i64map name_ok;      /* name id -> 1 pass / 0 fail */
    /* frames mode: stack_nodes rows, by index; ids may be sparse (any int64) */
    tr_i64map frame_index;                 /* stack_nodes.id -> row index */
    int64_t *frame_parent, *frame_label;   /* parent id (0: none), frame string id */
    size_t nframes_nodes;
    int tree_mode;
    int64_t t0;
    sqlite3_stmt *name_stmt;
    tr_i64map folded;       /* name id -> the id it groups under (ProfilerStep#N) */
    tr_i64map hidden;       /* frame string id -> 1 when left out of stacks */
    tr_torch_compat torch;  /* --compat torch: PyTorch's own metrics */
    tr_i64map first_call;   /* source id -> the lowest correlation of its API calls */
    int first_call_loaded;
} scan_ctx;

/* The group name of ProfilerStep#N, which has no string id of its own. */
#define PROFILER_STEP_FOLD (-1)
/* The host row of GPU activities without a launching call. */
#define NO_LAUNCH_ROW (-2)

static tr_status nomem(scan_ctx *c)
{
    return tr_fail(c->err, TR_ERR_RUNTIME, "out of memory while grouping events");
}

/* Text of string `id` through name_stmt, for a callback; 0 when unreadable. */
static int with_string(scan_ctx *c, int64_t id, int (*fn)(const char *, size_t, const void *),
                       const void *arg)
{
    int r = 0;
    sqlite3_bind_int64(c->name_stmt, 1, id);
    if (sqlite3_step(c->name_stmt) == SQLITE_ROW && sqlite3_column_text(c->name_stmt, 0))
        r = fn((const char *)sqlite3_column_text(c->name_stmt, 0),
               (size_t)sqlite3_column_bytes(c->name_stmt, 0), arg);
    sqlite3_reset(c->name_stmt);
    return r;
}

static int is_profiler_step(const char *s, size_t n, const void *arg)
{
    (void)arg;
    return n > 13 && memcmp(s, "ProfilerStep#", 13) == 0;
}

static int frame_is_hidden(const char *s, size_t n, const void *torch113)
{
    return tr_frame_hidden(s, n, *(const int *)torch113);
}

/* PyTorch groups every ProfilerStep#N under "ProfilerStep*". */
static int64_t group_name(scan_ctx *c, int64_t name_id)
{
    int64_t v;
    if (tr_i64map_get(&c->folded, name_id, &v))
        return v;
    v = with_string(c, name_id, is_profiler_step, NULL) ? PROFILER_STEP_FOLD : name_id;
    tr_i64map_put(&c->folded, name_id, v);
    return v;
}

static int label_hidden(scan_ctx *c, int64_t label)
{
    int64_t v;
    if (tr_i64map_get(&c->hidden, label, &v))
        return (int)v;
    v = with_string(c, label, frame_is_hidden, &c->o->compat_torch);
    tr_i64map_put(&c->hidden, label, v);
    return (int)v;
}

/* Memory events are rows of their own ("[memory]") only when no host event
 * holds them: PyTorch's rule, on any thread, under --compat torch; ours, on
 * their own thread (the tree's parent), otherwise. */
static int memory_unclaimed(scan_ctx *c, sqlite3_stmt *st)
{
    if (c->o->compat_torch) {
        int claimed;
        tr_torch_compat_get(&c->torch, sqlite3_column_int64(st, C_ID), &claimed);
        return !claimed;
    }
    return sqlite3_column_type(st, C_PARENT) == SQLITE_NULL;
}

static int selected(scan_ctx *c, sqlite3_stmt *st)
{
    if (sqlite3_column_int(st, C_FLAGS) & TR_FLAG_MERGED)
        return 0;   /* counted in the op it was merged into, as PyTorch does */
    if (sqlite3_column_int(st, C_KIND) == TR_KIND_MEMORY && !memory_unclaimed(c, st))
        return 0;
    const tr_selection *sel = c->sel;
    if (!sel)
        return 1;
    int kind = sqlite3_column_int(st, C_KIND), gpu = sqlite3_column_int(st, C_GPU);
    if (sel->kind_mask && (kind < 0 || kind >= 32 || !(sel->kind_mask & (1u << kind))))
        return 0;
    if (sel->top_level && !gpu && sqlite3_column_type(st, C_PARENT) != SQLITE_NULL)
        return 0;
    if (sel->has_thread && (sqlite3_column_type(st, C_TID) == SQLITE_NULL
                            || sqlite3_column_int64(st, C_TID) != sel->thread))
        return 0;
    if (sel->has_device && (!gpu || sqlite3_column_type(st, C_DEVICE) == SQLITE_NULL
                            || sqlite3_column_int64(st, C_DEVICE) != sel->device))
        return 0;
    if (sel->has_stream && (!gpu || sqlite3_column_type(st, C_STREAM) == SQLITE_NULL
                            || sqlite3_column_int64(st, C_STREAM) != sel->stream))
        return 0;
    if (!tr_selection_rank_ok(sel, sqlite3_column_int64(st, C_THREAD_ROW), sqlite3_column_int64(st, C_STREAM_ROW)))
        return 0;
    if (sel->has_time) {
        int64_t rel = sqlite3_column_int64(st, C_START) - c->t0;
        if (rel < sel->time_start || rel >= sel->time_end)
            return 0;
    }
    return tr_selection_name_id_ok(c->sel, c->name_stmt, &c->name_ok, sqlite3_column_int64(st, C_NAME));
}

/* Key of the innermost N labels above path node `node`. */
static int64_t stack_key(scan_ctx *c, int64_t node)
{
    if (c->o->group_by_stack <= 0 || node <= 0)
        return 0;
    int64_t key;
    if (tr_i64map_get(&c->key_cache, node, &key))
        return key;
    key = 0;
    int64_t n = node;
    for (long i = 0; i < c->o->group_by_stack && n > 0; i++) {
        int64_t label, up;
        if (c->tree_mode) {
            label = c->paths.label[n];
            up = c->paths.parent[n];
        } else {
            int64_t row;
            if (!tr_i64map_get(&c->frame_index, n, &row))
                break;
            label = c->frame_label[row];
            up = c->frame_parent[row];
            if (label_hidden(c, label)) {
                i--;   /* PyTorch's own frames do not count among the N */
                n = up;
                continue;
            }
        }
        key = trie_get(&c->keys, key, label);
        if (key < 0)
            return -1;
        n = up;
    }
    if (tr_i64map_put(&c->key_cache, node, key) < 0)
        return -1;
    return key;
}

/* Times a trace can hold: the event's own, and the stored totals derived from them. */
static int times_ok(sqlite3_stmt *st)
{
    return tr_times_ok(sqlite3_column_int64(st, C_START), sqlite3_column_int64(st, C_END))
           && tr_ns_ok(sqlite3_column_int64(st, C_CPU_TOTAL))
           && tr_ns_ok(sqlite3_column_int64(st, C_CPU_SELF))
           && tr_ns_ok(sqlite3_column_int64(st, C_GPU_TOTAL))
           && tr_ns_ok(sqlite3_column_int64(st, C_GPU_SELF));
}

/* The group of (name, device side, shape, stack key), created on first use;
 * NULL when out of memory. */
static tr_group *group_get(scan_ctx *c, int64_t name, int gpu, int64_t shape, int64_t key)
{
    tr_summary *s = c->s;
    int fresh;
    int64_t *slot = group_find(&c->groups, name, gpu, shape, key, &fresh);
    if (!slot)
        return NULL;
    if (fresh) {
        if (s->n == s->cap) {
            size_t ncap = s->cap ? s->cap * 2 : 256;
            tr_group *ng = realloc(s->groups, ncap * sizeof *ng);
            if (!ng)
                return NULL;
            s->groups = ng;
            s->cap = ncap;
        }
        *slot = (int64_t)s->n;
        tr_group *g = &s->groups[s->n++];
        memset(g, 0, sizeof *g);
        g->name_id = name;
        g->shape_id = shape;
        g->stack_key = key;
        g->on_gpu = gpu;
        g->first_start = INT64_MAX;
    }
    return &s->groups[*slot];
}

/* Keeps the group's first appearance: the earliest event, longer first, then lower id. */
static void note_first(tr_group *g, int64_t start, int64_t end, int64_t id, int async)
{
    if (start < g->first_start || (start == g->first_start && (end > g->first_end
                                   || (end == g->first_end && id < g->first_id)))) {
        g->first_start = start;
        g->first_end = end;
        g->first_id = id;
        g->is_async = async;
    }
}

/* group_get() for the event in st, noting it as a first appearance. */
static tr_group *group_of(scan_ctx *c, sqlite3_stmt *st, int64_t name, int gpu, int64_t shape,
                          int64_t key)
{
    tr_group *g = group_get(c, name, gpu, shape, key);
    if (g)
        note_first(g, sqlite3_column_int64(st, C_START), sqlite3_column_int64(st, C_END),
                   sqlite3_column_int64(st, C_ID),
                   (sqlite3_column_int(st, C_FLAGS) & TR_FLAG_ASYNC) != 0);
    return g;
}

static tr_status add_event(scan_ctx *c, sqlite3_stmt *st, int64_t path)
{
    if (!selected(c, st))
        return TR_OK;
    tr_summary *s = c->s;
    if (!times_ok(st)) {
        s->skipped++;   /* its times would inflate every total: left out, and counted */
        return TR_OK;
    }
    int64_t name = group_name(c, sqlite3_column_int64(st, C_NAME));
    int gpu = sqlite3_column_int(st, C_GPU) != 0;
    int64_t shape = c->o->group_by_shape ? sqlite3_column_int64(st, C_SHAPE) : 0;
    int64_t key = stack_key(c, path);
    if (key < 0)
        return nomem(c);
    tr_group *g = group_of(c, st, name, gpu, shape, key);
    if (!g)
        return nomem(c);
    g->count++;
    /* sums saturate: many large but legal values must not wrap into small ones */
    tr_sat_acc(&g->cpu_total, sqlite3_column_int64(st, C_CPU_TOTAL));
    tr_sat_acc(&g->gpu_total, sqlite3_column_int64(st, C_GPU_TOTAL));
    tr_sat_acc(&g->gpu_self, sqlite3_column_int64(st, C_GPU_SELF));
    if (!gpu)
        tr_sat_acc(&s->sum_gpu_self_host, sqlite3_column_int64(st, C_GPU_SELF));
    int claimed;
    const tr_torch_metrics *tm = c->o->compat_torch
        ? tr_torch_compat_get(&c->torch, sqlite3_column_int64(st, C_ID), &claimed) : NULL;
    if (tm) {
        tr_sat_acc(&g->cpu_self, tm->cpu_self);
        tr_sat_acc(&g->cpu_mem, tm->cpu_mem);
        tr_sat_acc(&g->cpu_mem_self, tm->cpu_mem_self);
        tr_sat_acc(&g->gpu_mem, tm->gpu_mem);
        tr_sat_acc(&g->gpu_mem_self, tm->gpu_mem_self);
    } else {
        tr_sat_acc(&g->cpu_self, sqlite3_column_int64(st, C_CPU_SELF));
        tr_sat_acc(&g->cpu_mem, sqlite3_column_int64(st, C_CMEM));
        tr_sat_acc(&g->cpu_mem_self, sqlite3_column_int64(st, C_CMEM_SELF));
        tr_sat_acc(&g->gpu_mem, sqlite3_column_int64(st, C_GMEM));
        tr_sat_acc(&g->gpu_mem_self, sqlite3_column_int64(st, C_GMEM_SELF));
    }
    if (sqlite3_column_type(st, C_FLOPS) != SQLITE_NULL)
        tr_sat_acc(&g->flops, sqlite3_column_int64(st, C_FLOPS));
    if (c->o->stats) {
        if (g->ndur == g->capdur) {
            size_t nc = g->capdur ? g->capdur * 2 : 8;
            int64_t *nd = realloc(g->durations, nc * sizeof *nd);
            if (!nd)
                return nomem(c);
            g->durations = nd;
            g->capdur = nc;
        }
        /* times_ok: no overflow */
        g->durations[g->ndur++] = sqlite3_column_int64(st, C_END) - sqlite3_column_int64(st, C_START);
    }
    s->events++;
    return TR_OK;
}

static tr_status step_error(scan_ctx *c)
{
    return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(c->db),
                   sqlite3_errmsg(c->db));
}

static tr_status run_query(scan_ctx *c, const char *where_order, sqlite3_stmt **out)
{
    char sql[2048];
    snprintf(sql, sizeof sql, "%s %s", scan_sql, where_order);
    if (sqlite3_prepare_v2(c->db, sql, -1, out, NULL) != SQLITE_OK)
        return step_error(c);
    return TR_OK;
}


/* ---- GPU activities without a launching call ---- */

/* Each source's lowest API-call correlation: CUPTI numbers launches in order, so
 * an activity below it was launched before the capture began. */
static tr_status load_first_calls(scan_ctx *c)
{
    char kinds[256];
    size_t n = 0;
    kinds[0] = '\0';
    for (int k = 1; k < TR_KIND_COUNT_ && n < sizeof kinds; k++)
        if (tr_kinds[k].is_api)
            n += (size_t)snprintf(kinds + n, sizeof kinds - n, "%s%d", n ? "," : "", k);
    char sql[512];
    snprintf(sql, sizeof sql,
             "SELECT p.source_id, min(e.correlation) FROM events e JOIN threads t ON t.id = e.thread_id "
             "JOIN processes p ON p.id = t.process_id WHERE e.kind IN (%s) AND e.correlation IS NOT NULL "
             "GROUP BY p.source_id", kinds[0] ? kinds : "-1");
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(c->db, sql, -1, &st, NULL) != SQLITE_OK)
        return step_error(c);
    int r;
    tr_status rc = TR_OK;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        if (tr_i64map_put(&c->first_call, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0)
            rc = nomem(c);
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    c->first_call_loaded = 1;
    return rc;
}

/* A selected GPU activity without a launching call: counted with its reason, and
 * its time given to the host row "[no launching call]". */
static tr_status add_unattributed(scan_ctx *c, sqlite3_stmt *st)
{
    tr_summary *s = c->s;
    int64_t dur = sqlite3_column_int64(st, C_GPU_SELF);
    s->unattributed++;
    tr_sat_acc(&s->unattributed_ns, dur);
    if (sqlite3_column_type(st, C_CORR) == SQLITE_NULL) {
        s->unattributed_no_corr++;
    } else {
        if (!c->first_call_loaded) {
            tr_status rc = load_first_calls(c);
            if (rc != TR_OK)
                return rc;
        }
        int64_t first;
        if (sqlite3_column_type(st, C_SOURCE) != SQLITE_NULL
            && tr_i64map_get(&c->first_call, sqlite3_column_int64(st, C_SOURCE), &first)
            && sqlite3_column_int64(st, C_CORR) < first)
            s->unattributed_before++;
        else
            s->unattributed_not_found++;
    }
    /* a table of device kinds only (--kind kernel) has no host rows to complete */
    unsigned host_kinds = 0;
    for (int k = 1; k < TR_KIND_COUNT_ && k < 32; k++)
        if (!tr_kinds[k].on_gpu)
            host_kinds |= 1u << k;
    if (c->sel && c->sel->kind_mask && !(c->sel->kind_mask & host_kinds))
        return TR_OK;
    tr_group *g = group_of(c, st, NO_LAUNCH_ROW, 0, 0, 0);
    if (!g)
        return nomem(c);
    g->count++;
    tr_sat_acc(&g->gpu_self, dur);
    tr_sat_acc(&g->gpu_total, dur);
    tr_sat_acc(&s->sum_gpu_self_host, dur);
    return TR_OK;
}

/* The selected GPU activities that no call launched: whatever the scan (tree,
 * flat or the stored aggregates), one indexed look at the events without a parent. */
static tr_status scan_unattributed(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    tr_status rc = run_query(c, "WHERE e.parent_id IS NULL AND k.on_gpu = 1", &st);
    int r = SQLITE_DONE;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        if (selected(c, st) && times_ok(st))
            rc = add_unattributed(c, st);
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    return rc;
}

/* Host events in tree order, keeping the open ancestors on a stack so each
 * event's ancestry path is known without lookups; then device activities,
 * whose ancestry is their launching call's. */
static tr_status scan_tree(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    tr_i64map api_path;
    tr_i64map_init(&api_path);
    struct open { int64_t id, path; } *stack = NULL;
    size_t depth = 0, cap = 0;
    tr_status rc = run_query(c, "WHERE k.on_gpu = 0 ORDER BY e.thread_id, e.start_ns, e.end_ns DESC, e.depth, e.id", &st);
    int r;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, C_ID);
        int has_parent = sqlite3_column_type(st, C_PARENT) != SQLITE_NULL;
        int64_t parent = sqlite3_column_int64(st, C_PARENT);
        int64_t anc = 0;
        if (sqlite3_column_int(st, C_FLAGS) & TR_FLAG_ASYNC) {
            rc = add_event(c, st, 0);
            continue;
        }
        while (depth && (!has_parent || stack[depth - 1].id != parent))
            depth--;
        if (depth)
            anc = stack[depth - 1].path;
        int64_t self = trie_get(&c->paths, anc, sqlite3_column_int64(st, C_NAME));
        if (self < 0) {
            rc = nomem(c);
            break;
        }
        if (depth == cap) {
            size_t nc = cap ? cap * 2 : 64;
            struct open *ns = realloc(stack, nc * sizeof *ns);
            if (!ns) {
                rc = nomem(c);
                break;
            }
            stack = ns;
            cap = nc;
        }
        stack[depth++] = (struct open){id, self};
        if (tr_kinds[(unsigned)sqlite3_column_int(st, C_KIND) % TR_KIND_COUNT_].is_api
            && tr_i64map_put(&api_path, id, self) < 0) {
            rc = nomem(c);
            break;
        }
        rc = add_event(c, st, anc);
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    st = NULL;   /* a failed scan leaves no second statement to finalize */
    free(stack);
    if (rc == TR_OK)
        rc = run_query(c, "WHERE k.on_gpu = 1", &st);
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t anc = 0;
        if (sqlite3_column_type(st, C_PARENT) != SQLITE_NULL)
            tr_i64map_get(&api_path, sqlite3_column_int64(st, C_PARENT), &anc);
        rc = add_event(c, st, anc);
    }
    if (rc == TR_OK && st && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    tr_i64map_free(&api_path);
    return rc;
}

static int selection_active(const tr_selection *sel)
{
    return sel && (sel->include || sel->exclude || sel->kind_mask || sel->has_thread
                   || sel->has_device || sel->has_stream || sel->has_time || sel->top_level
                   || sel->ranks.n);
}

/* The host time covered by the selected host events: the union of their spans,
 * thread by thread, so CPU total % of a filtered table is a share of what it shows. */
static tr_status covered_time(scan_ctx *c, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    tr_status rc = run_query(c, "WHERE k.on_gpu = 0 ORDER BY e.thread_id, e.start_ns", &st);
    int64_t total = 0, thread = INT64_MIN, lo = 0, hi = 0;
    int open = 0, r = SQLITE_DONE;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!selected(c, st) || !times_ok(st)
            || (sqlite3_column_int(st, C_FLAGS) & TR_FLAG_ASYNC))
            continue;
        int64_t th = sqlite3_column_type(st, C_TID) == SQLITE_NULL ? INT64_MIN + 1
                                                                   : sqlite3_column_int64(st, C_TID);
        int64_t s0 = sqlite3_column_int64(st, C_START), e0 = sqlite3_column_int64(st, C_END);
        if (open && th == thread && s0 <= hi) {
            hi = e0 > hi ? e0 : hi;
            continue;
        }
        if (open)
            tr_sat_acc(&total, hi - lo);
        thread = th, lo = s0, hi = e0, open = 1;
    }
    if (open)
        tr_sat_acc(&total, hi - lo);
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    *out = total;
    return rc;
}

/* The default tables from the aggregates written at ingest (lib/aggregates.h),
 * when no option needs the events themselves: the same groups, sums and first
 * appearances as a scan, so the same bytes, without reading every event.
 * Below AGGREGATES_MIN_EVENTS the scan takes a blink anyway and reads what the
 * file holds now, even when its events were edited by hand after ingest.
 * TR_NO_AGGREGATES=1 forces the scan, TR_AGGREGATES_MIN=N moves the threshold
 * (the tests compare the two paths). */
#define AGGREGATES_MIN_EVENTS 200000

static int aggregates_usable(scan_ctx *c)
{
    const tr_analyze_opts *o = c->o;
    if (selection_active(c->sel) || o->group_by_stack > 0 || o->stats || o->compat_torch)
        return 0;
    const char *env = getenv("TR_NO_AGGREGATES");
    if (env && *env && strcmp(env, "0") != 0)
        return 0;
    env = getenv("TR_AGGREGATES_MIN");
    int64_t min = env && *env ? strtoll(env, NULL, 10) : AGGREGATES_MIN_EVENTS;
    sqlite3_stmt *st = NULL;
    int found = sqlite3_prepare_v2(c->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                   "AND name = 'aggregates'", -1, &st, NULL) == SQLITE_OK
                && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (found && min > 0) {
        /* max(id) is one b-tree descent, not a count */
        found = sqlite3_prepare_v2(c->db, "SELECT coalesce(max(id), 0) FROM events", -1, &st, NULL)
                    == SQLITE_OK
                && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 0) >= min;
        sqlite3_finalize(st);
    }
    return found;
}

enum { A_NAME, A_GPU, A_SHAPE, A_EVENTS, A_CPU_TOTAL, A_CPU_SELF, A_GPU_TOTAL, A_GPU_SELF,
       A_CMEM, A_CMEM_SELF, A_GMEM, A_GMEM_SELF, A_FLOPS, A_FIRST_START, A_FIRST_END, A_FIRST_ID,
       A_FIRST_ASYNC };

static tr_status add_aggregate(scan_ctx *c, sqlite3_stmt *st)
{
    tr_summary *s = c->s;
    int64_t name = group_name(c, sqlite3_column_int64(st, A_NAME));
    int gpu = sqlite3_column_int(st, A_GPU) != 0;
    int64_t shape = c->o->group_by_shape ? sqlite3_column_int64(st, A_SHAPE) : 0;
    tr_group *g = group_get(c, name, gpu, shape, 0);
    if (!g)
        return nomem(c);
    note_first(g, sqlite3_column_int64(st, A_FIRST_START), sqlite3_column_int64(st, A_FIRST_END),
               sqlite3_column_int64(st, A_FIRST_ID), sqlite3_column_int(st, A_FIRST_ASYNC) != 0);
    int64_t n = sqlite3_column_int64(st, A_EVENTS);
    g->count += n;
    tr_sat_acc(&g->cpu_total, sqlite3_column_int64(st, A_CPU_TOTAL));
    tr_sat_acc(&g->cpu_self, sqlite3_column_int64(st, A_CPU_SELF));
    tr_sat_acc(&g->gpu_total, sqlite3_column_int64(st, A_GPU_TOTAL));
    tr_sat_acc(&g->gpu_self, sqlite3_column_int64(st, A_GPU_SELF));
    if (!gpu)
        tr_sat_acc(&s->sum_gpu_self_host, sqlite3_column_int64(st, A_GPU_SELF));
    tr_sat_acc(&g->cpu_mem, sqlite3_column_int64(st, A_CMEM));
    tr_sat_acc(&g->cpu_mem_self, sqlite3_column_int64(st, A_CMEM_SELF));
    tr_sat_acc(&g->gpu_mem, sqlite3_column_int64(st, A_GMEM));
    tr_sat_acc(&g->gpu_mem_self, sqlite3_column_int64(st, A_GMEM_SELF));
    if (sqlite3_column_type(st, A_FLOPS) != SQLITE_NULL)
        tr_sat_acc(&g->flops, sqlite3_column_int64(st, A_FLOPS));
    s->events += n;
    return TR_OK;
}

static tr_status scan_aggregates(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT name_id, on_gpu, shape_id, events, cpu_total_ns, "
                           "cpu_self_ns, gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, "
                           "gpu_mem_total, gpu_mem_self, flops, first_start_ns, first_end_ns, "
                           "first_id, first_async FROM aggregates", -1, &st, NULL) != SQLITE_OK)
        return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table aggregates: %s",
                       tr_rundb_name(c->db), sqlite3_errmsg(c->db));
    tr_status rc = TR_OK;
    int r;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int(st, A_GPU) == TR_AGG_SKIPPED)
            c->s->skipped += sqlite3_column_int64(st, A_EVENTS);
        else
            rc = add_aggregate(c, st);
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table aggregates: %s",
                     tr_rundb_name(c->db), sqlite3_errmsg(c->db));
    sqlite3_finalize(st);
    return rc;
}

static tr_status scan_flat(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    tr_status rc = run_query(c, "", &st);
    int r = SQLITE_DONE;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        rc = add_event(c, st, sqlite3_column_int64(st, C_STACK));
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    return rc;
}

static tr_status frames_error(scan_ctx *c)
{
    return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table stack_nodes: %s",
                   tr_rundb_name(c->db), sqlite3_errmsg(c->db));
}

/* stack_nodes must be a forest: a parent_id cycle is bad input.  Each row is
 * marked on its first walk (1 on the walk, 2 done), so the check is linear. */
static tr_status check_frames(scan_ctx *c, const int64_t *ids)
{
    size_t n = c->nframes_nodes;
    uint8_t *state = calloc(n ? n : 1, 1);
    size_t *chain = malloc((n ? n : 1) * sizeof *chain);
    tr_status rc = state && chain ? TR_OK : nomem(c);
    for (size_t i = 0; i < n && rc == TR_OK; i++) {
        size_t k = 0, cur = i;
        for (;;) {
            if (state[cur] == 1) {
                rc = tr_fail(c->err, TR_ERR_INPUT, "%s: table stack_nodes: parent_id has a cycle "
                             "through id %lld", tr_rundb_name(c->db), (long long)ids[cur]);
                break;
            }
            if (state[cur] == 2)
                break;
            state[cur] = 1;
            chain[k++] = cur;
            int64_t p;
            if (!c->frame_parent[cur] || !tr_i64map_get(&c->frame_index, c->frame_parent[cur], &p))
                break;
            cur = (size_t)p;
        }
        while (k > 0)
            state[chain[--k]] = 2;
    }
    free(state);
    free(chain);
    return rc;
}

/* Loads stack_nodes into arrays indexed by row, so a sparse id (4294967295)
 * costs one map entry, not an array that large. */
static tr_status load_stack_nodes(scan_ctx *c)
{
    sqlite3_stmt *st;
    int64_t count = 0;
    if (sqlite3_prepare_v2(c->db, "SELECT count(*) FROM stack_nodes", -1, &st, NULL) != SQLITE_OK)
        return frames_error(c);
    if (sqlite3_step(st) == SQLITE_ROW)
        count = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (count <= 0)
        return TR_OK;
    size_t cap = (size_t)count;
    c->frame_parent = calloc(cap, sizeof *c->frame_parent);
    c->frame_label = calloc(cap, sizeof *c->frame_label);
    int64_t *ids = calloc(cap, sizeof *ids);
    if (!c->frame_parent || !c->frame_label || !ids) {
        free(ids);
        return nomem(c);
    }
    if (sqlite3_prepare_v2(c->db, "SELECT id, coalesce(parent_id, 0), frame_id FROM stack_nodes",
                           -1, &st, NULL) != SQLITE_OK) {
        free(ids);
        return frames_error(c);
    }
    size_t n = 0;
    int r;
    tr_status rc = TR_OK;
    while ((r = sqlite3_step(st)) == SQLITE_ROW && n < cap) {
        ids[n] = sqlite3_column_int64(st, 0);
        c->frame_parent[n] = sqlite3_column_int64(st, 1);
        c->frame_label[n] = sqlite3_column_int64(st, 2);
        if (tr_i64map_put(&c->frame_index, ids[n], (int64_t)n) < 0) {
            rc = nomem(c);
            break;
        }
        n++;
    }
    if (rc == TR_OK && r != SQLITE_ROW && r != SQLITE_DONE)
        rc = frames_error(c);
    sqlite3_finalize(st);
    c->nframes_nodes = n;
    if (rc == TR_OK)
        rc = check_frames(c, ids);
    free(ids);
    return rc;
}

static char *string_of(scan_ctx *c, int64_t id)
{
    if (id == PROFILER_STEP_FOLD)
        return strdup("ProfilerStep*");
    if (id == NO_LAUNCH_ROW)
        return strdup(TR_NO_LAUNCH_ROW);
    const char *v = "";
    sqlite3_bind_int64(c->name_stmt, 1, id);
    if (id && sqlite3_step(c->name_stmt) == SQLITE_ROW && sqlite3_column_text(c->name_stmt, 0))
        v = (const char *)sqlite3_column_text(c->name_stmt, 0);
    char *r = strdup(v);
    sqlite3_reset(c->name_stmt);
    return r;
}

static tr_status resolve(scan_ctx *c)
{
    tr_summary *s = c->s;
    for (size_t i = 0; i < s->n; i++) {
        tr_group *g = &s->groups[i];
        g->name = string_of(c, g->name_id);
        g->shape = string_of(c, g->shape_id);
        if (!g->name || !g->shape)
            return nomem(c);
        size_t n = 0;
        for (int64_t k = g->stack_key; k > 0; k = c->keys.parent[k])
            n++;
        if (!n)
            continue;
        g->frames = calloc(n, sizeof *g->frames);
        if (!g->frames)
            return nomem(c);
        g->nframes = n;
        /* the key trie is built innermost first: walking up yields outermost first */
        size_t j = n;
        for (int64_t k = g->stack_key; k > 0; k = c->keys.parent[k])
            if (!(g->frames[--j] = string_of(c, c->keys.label[k])))
                return nomem(c);
    }
    return TR_OK;
}

tr_status tr_summarize(sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err)
{
    memset(s, 0, sizeof *s);
    scan_ctx c;
    memset(&c, 0, sizeof c);
    c.db = db;
    c.o = o;
    c.sel = o->select;
    c.s = s;
    c.err = err;
    tr_i64map_init(&c.key_cache);
    tr_i64map_init(&c.name_ok);
    tr_i64map_init(&c.frame_index);
    tr_i64map_init(&c.folded);
    tr_i64map_init(&c.hidden);
    tr_i64map_init(&c.first_call);
    tr_status rc = TR_OK;
    if (o->compat_torch && (rc = tr_torch_compat_load(db, &c.torch, err)) != TR_OK)
        return rc;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &c.name_stmt, NULL) != SQLITE_OK) {
        rc = step_error(&c);
        goto out;
    }
    if (c.sel && c.sel->has_time) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(db, "SELECT coalesce(min(start_ns), 0) FROM events", -1, &st, NULL) == SQLITE_OK
            && sqlite3_step(st) == SQLITE_ROW)
            c.t0 = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (o->group_by_stack > 0) {
        if ((rc = load_stack_nodes(&c)) != TR_OK)
            goto out;
        c.tree_mode = o->stack_source == TR_STACK_TREE
                      || (o->stack_source == TR_STACK_AUTO && c.nframes_nodes == 0);
        s->stack_source = c.tree_mode ? "tree" : "frames";
    }
    rc = c.tree_mode ? scan_tree(&c) : aggregates_usable(&c) ? scan_aggregates(&c) : scan_flat(&c);
    if (rc == TR_OK && !o->compat_torch)
        rc = scan_unattributed(&c);
    s->filtered = selection_active(c.sel);
    if (rc == TR_OK && s->filtered && !o->compat_torch)
        rc = covered_time(&c, &s->cpu_covered);
    if (rc != TR_OK)
        goto out;
    for (size_t i = 0; i < s->n; i++) {
        tr_group *g = &s->groups[i];
        tr_sat_acc(&s->sum_cpu_self, g->cpu_self);
        if (g->on_gpu)
            tr_sat_acc(&s->sum_gpu_self_device, g->gpu_self);
        s->has_gpu |= g->gpu_self > 0;
        s->has_shapes |= g->shape_id != 0;
        s->has_mem |= g->cpu_mem || g->gpu_mem || g->cpu_mem_self || g->gpu_mem_self;
        s->has_gpu_mem |= g->gpu_mem_self > 0;
        s->has_flops |= g->flops > 0;
        s->has_frames |= g->stack_key > 0;
    }
    tr_summary_sort(s, NULL);
    rc = resolve(&c);
out:
    sqlite3_finalize(c.name_stmt);
    free(c.groups.slots);
    trie_free(&c.paths);
    trie_free(&c.keys);
    tr_i64map_free(&c.key_cache);
    tr_i64map_free(&c.name_ok);
    free(c.frame_parent);
    free(c.frame_label);
    tr_i64map_free(&c.frame_index);
    tr_i64map_free(&c.folded);
    tr_i64map_free(&c.hidden);
    tr_i64map_free(&c.first_call);
    tr_torch_compat_free(&c.torch);
    return rc;
}

static const tr_sort_key *sort_by;

static int first_before(const tr_group *a, const tr_group *b)
{
    if (a->first_start != b->first_start)
        return a->first_start < b->first_start;
    if (a->first_end != b->first_end)
        return a->first_end > b->first_end;
    return a->first_id < b->first_id;
}

static int cmp_groups(const void *pa, const void *pb)
{
    const tr_group *a = pa, *b = pb;
    if (sort_by && sort_by->value) {
        double va = sort_by->value(a), vb = sort_by->value(b);
        if (va != vb)
            return va > vb ? -1 : 1;
    }
    /* ties keep first-appearance order: PyTorch's sorts are stable */
    return first_before(a, b) ? -1 : first_before(b, a);
}

void tr_summary_sort(tr_summary *s, const tr_sort_key *key)
{
    sort_by = key;
    if (s->n > 1)
        qsort(s->groups, s->n, sizeof *s->groups, cmp_groups);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

void tr_group_stats_get(const tr_group *g, tr_group_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!g->ndur)
        return;
    qsort(g->durations, g->ndur, sizeof *g->durations, cmp_i64);
    st->min = g->durations[0];
    st->max = g->durations[g->ndur - 1];
    size_t m = g->ndur / 2;
    st->median = g->ndur % 2 ? (double)g->durations[m]
                             : ((double)g->durations[m - 1] + (double)g->durations[m]) / 2.0;
    double mean = 0;
    for (size_t i = 0; i < g->ndur; i++)
        mean += (double)g->durations[i];
    mean /= (double)g->ndur;
    double var = 0;
    for (size_t i = 0; i < g->ndur; i++)
        var += ((double)g->durations[i] - mean) * ((double)g->durations[i] - mean);
    /* sample standard deviation, as nsys stats reports */
    st->stddev = g->ndur > 1 ? sqrt(var / (double)(g->ndur - 1)) : 0;
}

void tr_summary_free(tr_summary *s)
{
    for (size_t i = 0; i < s->n; i++) {
        tr_group *g = &s->groups[i];
        free(g->name);
        free(g->shape);
        for (size_t j = 0; j < g->nframes; j++)
            free(g->frames[j]);
        free(g->frames);
        free(g->durations);
    }
    free(s->groups);
    memset(s, 0, sizeof *s);
}
