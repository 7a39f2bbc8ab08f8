/* Grouping events into key_averages()-style rows: one scan, bounded by groups. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "analyze/compat_torch.h"
#include "analyze/radix.h"
#include "lib/aggregates.h"
#include "lib/checked.h"
#include "lib/frames.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/pair_trie.h"
#include "lib/rundb.h"
#include "lib/rundb_scan.h"
#include "lib/spill.h"

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

/* ---- group index: (name, host/device, shape, stack key) -> group ---- */
typedef struct {
    struct gslot { int64_t name, shape, stack; int gpu; int64_t idx; int used; } *slots;
    size_t cap, n;
} group_map;

/* Ids come from the file and may be any int64: mixed as unsigned, never overflowing. */
static uint64_t group_hash(int64_t name, int gpu, int64_t shape, int64_t stack)
{
    return tr_pair_hash((int64_t)((uint64_t)name * 2 + (uint64_t)gpu),
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
/* The events table alone: the few rows of kinds, threads, streams and devices are
 * looked up in memory (struct dims), as joins they cost a b-tree search per event
 * each, more than sqlite3's whole GROUP BY of the same rows. */
enum { C_ID, C_KIND, C_NAME, C_SHAPE, C_STACK, C_PARENT, C_FLAGS, C_THREAD, C_STREAM, C_START,
       C_END, C_CPU_TOTAL, C_CPU_SELF, C_GPU_TOTAL, C_GPU_SELF, C_CMEM, C_CMEM_SELF, C_GMEM,
       C_GMEM_SELF, C_FLOPS, C_CORR };

/* The columns a scan may leave out are NULL in their place: a column costs SQLite
 * a step of its own for every row (run_query). */
static const char scan_sql[] =
    "SELECT %se.id, e.kind, e.name_id, %s, %s, e.parent_id, e.flags, %s, %s, e.start_ns, e.end_ns, "
    "e.cpu_total_ns, e.cpu_self_ns, e.gpu_total_ns, e.gpu_self_ns, e.cpu_mem_total, "
    "e.cpu_mem_self, e.gpu_mem_total, e.gpu_mem_self, e.flops, %s%s FROM events e";
#define SCAN_SQL_COLUMNS (C_CORR + 1)

/* kinds, threads, streams and their devices, by row id, as the joins read them. */
#define DIM_KINDS 64   /* kind ids below this by array, any others by map */
typedef struct {
    int kind_on_gpu[DIM_KINDS];
    unsigned char kind_known[DIM_KINDS];
    tr_i64map kinds;          /* other kind ids -> on_gpu */
    tr_i64map threads;        /* threads.id -> tid */
    tr_i64map streams;        /* streams.id -> index into the arrays below */
    /* the same two maps as arrays by row id, where the ids are small (dims_index) */
    int64_t *thread_tid, *stream_index;
    unsigned char *thread_has, *stream_has;
    size_t nthread_ids, nstream_ids;
    int64_t *stream, *device, *source;
    unsigned char *has_device;
    size_t nstreams;
} dims;

/* One event's columns that the selection reads, and the values the joins gave. */
typedef struct {
    int64_t id, name, parent, thread_row, stream_row, start, tid, device, stream, source;
    int kind, gpu, flags;
    unsigned char has_parent, has_tid, has_device, has_stream, has_source;
    /* read_times(): each column is asked once, a call to SQLite costs as much as the test */
    int64_t end, cpu_total, cpu_self, gpu_total, gpu_self;
} ev_row;

/* A row of the scan's columns: a statement's result row, the arguments SQLite
 * hands scan_step() (scan_flat), read without the cost of a call per column,
 * or the cells decoded from run.db's pages (scan_pages). */
typedef struct {
    sqlite3_stmt *st;
    sqlite3_value **v;
    const tr_sql_cell *cells;
} row_src;

static inline int64_t rs_int64(const row_src *rs, int i)
{
    return rs->cells ? rs->cells[i].i
           : rs->v   ? sqlite3_value_int64(rs->v[i])
                     : sqlite3_column_int64(rs->st, i);
}

static inline int rs_type(const row_src *rs, int i)
{
    return rs->cells ? rs->cells[i].type
           : rs->v   ? sqlite3_value_type(rs->v[i])
                     : sqlite3_column_type(rs->st, i);
}

/* The host time covered by the selected host events, gathered as the scan goes:
 * per thread row, the unions of its runs of events in start order (cover_add). */
typedef struct {
    struct cover_thread {
        int64_t th, lo, hi, last;
        int open;
        struct cover_span { int64_t lo, hi; } *v;   /* closed unions, in order unless unsorted */
        size_t n, cap;
        int unsorted;
    } *t;
    size_t n, cap, spans;
    tr_i64map index;          /* threads.id -> index into t */
    int64_t last_row, last_index;   /* the thread row of the last event, and its index */
    int on, fallback;
} cover_sum;

typedef struct {
    sqlite3 *db;
    const tr_analyze_opts *o;
    const tr_selection *sel;
    tr_summary *s;
    tr_error *err;
    group_map groups;
    tr_pair_trie paths;        /* tree mode: (ancestor path, name) */
    tr_pair_trie keys;         /* innermost-first frame lists, at most N long */
    tr_i64map key_cache;    /* path node -> key node */
    tr_i64map name_ok;      /* name id -> 1 pass / 0 fail */
    /* frames mode: stack_nodes rows, by index; ids may be sparse (any int64) */
    tr_i64map frame_index;                 /* stack_nodes.id -> row index */
    int64_t *frame_parent, *frame_label;   /* parent id (0: none), frame string id */
    size_t nframes_nodes;
    int tree_mode;
    int64_t t0;
    /* t0 is the start of an event thought the first (first_start): t0_seen is the
     * earliest start the scan met, and the scan's WHERE lets every earlier one in */
    int t0_guess;
    int64_t t0_seen;
    sqlite3_stmt *name_stmt;
    tr_i64map folded;       /* name id -> the id it groups under (ProfilerStep#N) */
    tr_i64map hidden;       /* frame string id -> 1 when left out of stacks */
    tr_torch_compat torch;  /* --compat torch: PyTorch's own metrics */
    tr_i64map first_call;   /* source id -> the lowest correlation of its API calls */
    int first_call_loaded;
    dims d;
    sqlite3_stmt *parent_tid;   /* the launching call's thread, for events without one */
    int need_parent_tid;
    int ranks_all;              /* --rank selects every rank here: no test per event */
    int name_fn;                /* NAME_SQL_FN is registered */
    tr_status step_rc;          /* scan_step(): the first error, which stops the scan */
    int step_need;              /* scan_step(): needs_dims() */
    /* scan_tree_ids(): each event's path (a host event's ancestry, a device
     * activity's launching call's own), by id */
    const int32_t *tree_anc;
    int64_t tree_max_id;
    char *where;                /* the selection's simple tests, as SQL (NULL: none) */
    cover_sum cover;
    /* the scan of every event meets the GPU activities without a launching call
     * itself: their ids, for add_unattributed() after it (unattributed_by_id) */
    struct { int64_t *ids; size_t n, cap; int on; } unattr;
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
static int memory_unclaimed(scan_ctx *c, const ev_row *r)
{
    if (c->o->compat_torch) {
        int claimed;
        tr_torch_metrics tm;
        tr_torch_compat_get(&c->torch, r->id, &tm, &claimed);
        return !claimed;
    }
    return !r->has_parent;
}

static int selected(scan_ctx *c, const ev_row *r)
{
    if (r->flags & TR_FLAG_MERGED)
        return 0;   /* counted in the op it was merged into, as PyTorch does */
    if (r->kind == TR_KIND_MEMORY && !memory_unclaimed(c, r))
        return 0;
    const tr_selection *sel = c->sel;
    if (!sel)
        return 1;
    int kind = r->kind, gpu = r->gpu;
    if (sel->kind_mask && (kind < 0 || kind >= 32 || !(sel->kind_mask & (1u << kind))))
        return 0;
    if (sel->top_level && !gpu && r->has_parent && !c->o->compat_torch)
        return 0;   /* --compat torch: every event counts; rows go by their first (hide_nested_firsts) */
    if (sel->has_thread && (!r->has_tid || r->tid != sel->thread))
        return 0;
    if (sel->has_device && (!gpu || !r->has_device || r->device != sel->device))
        return 0;
    if (sel->has_stream && (!gpu || !r->has_stream || r->stream != sel->stream))
        return 0;
    if (!c->ranks_all && !tr_selection_rank_ok(sel, r->thread_row, r->stream_row))
        return 0;
    if (sel->has_time) {
        int64_t rel = r->start - c->t0;
        if (rel < sel->time_start || rel >= sel->time_end)
            return 0;
    }
    return tr_selection_name_id_ok(c->sel, c->name_stmt, &c->name_ok, r->name);
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
        key = tr_pair_trie_get(&c->keys, key, label);
        if (key < 0)
            return -1;
        n = up;
    }
    if (tr_i64map_put(&c->key_cache, node, key) < 0)
        return -1;
    return key;
}

/* Times a trace can hold: the event's own, and the stored totals derived from them.
 * Reads them into r for what follows, only for a selected row. */
static int times_ok(const row_src *rs, ev_row *r)
{
    r->end = rs_int64(rs, C_END);
    r->cpu_total = rs_int64(rs, C_CPU_TOTAL);
    r->cpu_self = rs_int64(rs, C_CPU_SELF);
    r->gpu_total = rs_int64(rs, C_GPU_TOTAL);
    r->gpu_self = rs_int64(rs, C_GPU_SELF);
    return tr_times_ok(r->start, r->end) && tr_ns_ok(r->cpu_total) && tr_ns_ok(r->cpu_self)
           && tr_ns_ok(r->gpu_total) && tr_ns_ok(r->gpu_self);
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

/* group_get() for the event r (times_ok read), noting it as a first appearance. */
static tr_group *group_of(scan_ctx *c, const ev_row *r, int64_t name, int gpu, int64_t shape,
                          int64_t key)
{
    tr_group *g = group_get(c, name, gpu, shape, key);
    if (g)
        note_first(g, r->start, r->end, r->id, (r->flags & TR_FLAG_ASYNC) != 0);
    return g;
}

static void cover_add(scan_ctx *c, const ev_row *r);
static tr_status note_unattributed(scan_ctx *c, const ev_row *r);

static tr_status add_event(scan_ctx *c, const row_src *rs, ev_row *r, int64_t path)
{
    if (!selected(c, r))
        return TR_OK;
    tr_summary *s = c->s;
    if (!times_ok(rs, r)) {
        s->skipped++;   /* its times would inflate every total: left out, and counted */
        return TR_OK;
    }
    if (c->cover.on && r->gpu == 0 && !(r->flags & TR_FLAG_ASYNC))
        cover_add(c, r);
    if (c->unattr.on && r->gpu == 1 && !r->has_parent && note_unattributed(c, r) != TR_OK)
        return nomem(c);
    int64_t name = group_name(c, r->name);
    int gpu = r->gpu != 0;
    int64_t shape = c->o->group_by_shape ? rs_int64(rs, C_SHAPE) : 0;
    int64_t key = stack_key(c, path);
    if (key < 0)
        return nomem(c);
    tr_group *g = group_of(c, r, name, gpu, shape, key);
    if (!g)
        return nomem(c);
    g->count++;
    /* sums saturate: many large but legal values must not wrap into small ones */
    tr_sat_acc(&g->cpu_total, r->cpu_total);
    tr_sat_acc(&g->gpu_total, r->gpu_total);
    tr_sat_acc(&g->gpu_self, r->gpu_self);
    if (!gpu)
        tr_sat_acc(&s->sum_gpu_self_host, r->gpu_self);
    int claimed;
    tr_torch_metrics tm;
    if (c->o->compat_torch && tr_torch_compat_get(&c->torch, r->id, &tm, &claimed)) {
        tr_sat_acc(&g->cpu_self, tm.cpu_self);
        tr_sat_acc(&g->cpu_mem, tm.cpu_mem);
        tr_sat_acc(&g->cpu_mem_self, tm.cpu_mem_self);
        tr_sat_acc(&g->gpu_mem, tm.gpu_mem);
        tr_sat_acc(&g->gpu_mem_self, tm.gpu_mem_self);
    } else {
        tr_sat_acc(&g->cpu_self, r->cpu_self);
        tr_sat_acc(&g->cpu_mem, rs_int64(rs, C_CMEM));
        tr_sat_acc(&g->cpu_mem_self, rs_int64(rs, C_CMEM_SELF));
        tr_sat_acc(&g->gpu_mem, rs_int64(rs, C_GMEM));
        tr_sat_acc(&g->gpu_mem_self, rs_int64(rs, C_GMEM_SELF));
    }
    tr_sat_acc(&g->flops, rs_int64(rs, C_FLOPS));   /* NULL reads 0: adds nothing */
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
        g->durations[g->ndur++] = r->end - r->start;
    }
    s->events++;
    return TR_OK;
}

static tr_status step_error(scan_ctx *c)
{
    return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(c->db),
                   sqlite3_errmsg(c->db));
}

/* What of threads and streams a scan reads: the covered host time needs only the
 * thread; the selection by thread, device, stream or rank needs both. */
enum { DIMS_NONE, DIMS_THREADS, DIMS_ALL };
static int needs_dims(const scan_ctx *c);

/* run_query(): every row, not only those the selection's SQL tests pass (the
 * tree's ancestors count, selected or not); every column (for the rows without a
 * launching call: their correlation and device). */
enum { Q_ALL_ROWS = 1, Q_ALL_COLUMNS = 2, Q_THROUGH_STEP = 4 };

/* Q_THROUGH_STEP: the columns are the arguments of this aggregate (scan_step),
 * and the statement gives one row at the end. */
#define SCAN_STEP_FN "tr_scan_rows"

/* The scan's SQL with `where` and `order` added, and the selection's own tests
 * unless Q_ALL_ROWS; NULL out of memory. */
static char *query_sql(scan_ctx *c, const char *where, const char *order, int q)
{
    const char *w = c->where && !(q & Q_ALL_ROWS) ? c->where : "";
    int all = (q & Q_ALL_COLUMNS) != 0, dim = all ? DIMS_ALL : needs_dims(c);
    int fn = (q & Q_THROUGH_STEP) != 0;
    char head[sizeof scan_sql + 128];
    snprintf(head, sizeof head, scan_sql, fn ? SCAN_STEP_FN "(" : "",
             all || c->o->group_by_shape ? "e.shape_id" : "NULL",
             all || (c->o->group_by_stack > 0 && !c->tree_mode) ? "e.stack_id" : "NULL",
             dim >= DIMS_THREADS ? "e.thread_id" : "NULL", dim == DIMS_ALL ? "e.stream_id" : "NULL",
             all ? "e.correlation" : "NULL", fn ? ")" : "");
    size_t n = strlen(head) + strlen(where) + strlen(order) + strlen(w) + 32;
    char *sql = malloc(n);
    if (sql)
        snprintf(sql, n, "%s%s%s%s%s %s", head, *where || *w ? " WHERE " : "", where,
                 *where && *w ? " AND " : "", w, order);
    return sql;
}

static tr_status run_query(scan_ctx *c, const char *where, const char *order, int q,
                           sqlite3_stmt **out)
{
    char *sql = query_sql(c, where, order, q);
    if (!sql)
        return nomem(c);
    int r = sqlite3_prepare_v2(c->db, sql, -1, out, NULL);
    free(sql);
    return r == SQLITE_OK ? TR_OK : step_error(c);
}

/* ---- what the joins gave: kinds, threads, streams and devices in memory ---- */

static tr_status dims_error(scan_ctx *c)
{
    return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read the kinds, threads and streams: %s",
                   tr_rundb_name(c->db), sqlite3_errmsg(c->db));
}

static tr_status load_dims(scan_ctx *c)
{
    dims *d = &c->d;
    sqlite3_stmt *st;
    tr_status rc = TR_OK;
    int r;
    if (sqlite3_prepare_v2(c->db, "SELECT id, on_gpu FROM kinds", -1, &st, NULL) != SQLITE_OK)
        return dims_error(c);
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        int on = sqlite3_column_int(st, 1);
        if (id >= 0 && id < DIM_KINDS) {
            d->kind_known[id] = 1;
            d->kind_on_gpu[id] = on;
        } else if (tr_i64map_put(&d->kinds, id, on) < 0) {
            rc = nomem(c);
        }
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = dims_error(c);
    sqlite3_finalize(st);
    if (rc != TR_OK)
        return rc;
    if (sqlite3_prepare_v2(c->db, "SELECT id, tid FROM threads", -1, &st, NULL) != SQLITE_OK)
        return dims_error(c);
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        if (tr_i64map_put(&d->threads, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)) < 0)
            rc = nomem(c);
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = dims_error(c);
    sqlite3_finalize(st);
    if (rc != TR_OK)
        return rc;
    if (sqlite3_prepare_v2(c->db, "SELECT s.id, s.stream, d.device IS NOT NULL, d.device, d.source_id "
                           "FROM streams s LEFT JOIN devices d ON d.id = s.device_id", -1, &st, NULL)
        != SQLITE_OK)
        return dims_error(c);
    size_t cap = 0;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (d->nstreams == cap) {
            size_t nc = cap ? cap * 2 : 16;
            int64_t *ns = realloc(d->stream, nc * sizeof *ns), *nd, *nsrc;
            unsigned char *nh;
            if (ns)
                d->stream = ns;
            nd = ns ? realloc(d->device, nc * sizeof *nd) : NULL;
            if (nd)
                d->device = nd;
            nsrc = nd ? realloc(d->source, nc * sizeof *nsrc) : NULL;
            if (nsrc)
                d->source = nsrc;
            nh = nsrc ? realloc(d->has_device, nc) : NULL;
            if (!nh) {
                rc = nomem(c);
                break;
            }
            d->has_device = nh;
            cap = nc;
        }
        size_t i = d->nstreams;
        d->stream[i] = sqlite3_column_int64(st, 1);
        d->has_device[i] = (unsigned char)sqlite3_column_int(st, 2);
        d->device[i] = sqlite3_column_int64(st, 3);
        d->source[i] = sqlite3_column_int64(st, 4);
        if (tr_i64map_put(&d->streams, sqlite3_column_int64(st, 0), (int64_t)i) < 0)
            rc = nomem(c);
        d->nstreams++;
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = dims_error(c);
    sqlite3_finalize(st);
    return rc;
}

/* Row ids below this are looked up in an array, not a map: a per-event cost. */
#define DIM_ARRAY_MAX 65536

/* The map's values in an array by key, with whether each key is there; NULL
 * where a key is negative or too large for it (the map answers then). */
static int dims_index(const tr_i64map *m, int64_t **val, unsigned char **has, size_t *n)
{
    int64_t max = -1;
    *val = NULL;
    *has = NULL;
    *n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].used) {
            if (m->slots[i].key < 0 || m->slots[i].key >= DIM_ARRAY_MAX)
                return 0;
            max = m->slots[i].key > max ? m->slots[i].key : max;
        }
    if (max < 0)
        return 0;
    int64_t *v = calloc((size_t)max + 1, sizeof *v);
    unsigned char *h = calloc((size_t)max + 1, 1);
    if (!v || !h) {
        free(v);
        free(h);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].used) {
            v[m->slots[i].key] = m->slots[i].val;
            h[m->slots[i].key] = 1;
        }
    *val = v;
    *has = h;
    *n = (size_t)max + 1;
    return 0;
}

/* The value of row in the array dims_index() made, else in the map: 1 if found. */
static inline int dims_get(const tr_i64map *m, const int64_t *val, const unsigned char *has,
                           size_t n, int64_t row, int64_t *out)
{
    if (!val)
        return tr_i64map_get(m, row, out);
    if (row < 0 || (uint64_t)row >= n || !has[row])
        return 0;
    *out = val[row];
    return 1;
}

static void dims_free(dims *d)
{
    free(d->thread_tid);
    free(d->stream_index);
    free(d->thread_has);
    free(d->stream_has);
    tr_i64map_free(&d->kinds);
    tr_i64map_free(&d->threads);
    tr_i64map_free(&d->streams);
    free(d->stream);
    free(d->device);
    free(d->source);
    free(d->has_device);
}

/* The row's columns the selection reads; 0 for an event of a kind the kinds table
 * lacks, which the join left out. */
static int fill_row(scan_ctx *c, const row_src *rs, ev_row *r, int need_dims)
{
    r->start = rs_int64(rs, C_START);
    if (c->t0_guess && r->start < c->t0_seen)
        c->t0_seen = r->start;
    int64_t kind = rs_int64(rs, C_KIND);
    if (kind >= 0 && kind < DIM_KINDS) {
        if (!c->d.kind_known[kind])
            return 0;
        r->gpu = c->d.kind_on_gpu[kind];
    } else {
        int64_t v;
        if (!tr_i64map_get(&c->d.kinds, kind, &v))
            return 0;
        r->gpu = (int)v;
    }
    r->kind = (int)kind;
    r->id = rs_int64(rs, C_ID);
    r->name = rs_int64(rs, C_NAME);
    r->flags = (int)rs_int64(rs, C_FLAGS);
    r->has_parent = rs_type(rs, C_PARENT) != SQLITE_NULL;
    r->parent = r->has_parent ? rs_int64(rs, C_PARENT) : 0;
    r->has_tid = r->has_stream = r->has_device = r->has_source = 0;
    r->thread_row = r->stream_row = -1;
    if (need_dims == DIMS_NONE)
        return 1;
    if (rs_type(rs, C_THREAD) != SQLITE_NULL) {
        r->thread_row = rs_int64(rs, C_THREAD);
        r->has_tid = (unsigned char)dims_get(&c->d.threads, c->d.thread_tid, c->d.thread_has,
                                             c->d.nthread_ids, r->thread_row, &r->tid);
    } else if (c->need_parent_tid && r->has_parent) {
        /* the launching call's thread: one indexed look, only where asked */
        sqlite3_bind_int64(c->parent_tid, 1, r->parent);
        if (sqlite3_step(c->parent_tid) == SQLITE_ROW
            && sqlite3_column_type(c->parent_tid, 0) != SQLITE_NULL) {
            r->tid = sqlite3_column_int64(c->parent_tid, 0);
            r->has_tid = 1;
        }
        sqlite3_reset(c->parent_tid);
    }
    if (need_dims != DIMS_ALL)
        return 1;
    if (rs_type(rs, C_STREAM) != SQLITE_NULL) {
        r->stream_row = rs_int64(rs, C_STREAM);
        int64_t i;
        if (dims_get(&c->d.streams, c->d.stream_index, c->d.stream_has, c->d.nstream_ids,
                     r->stream_row, &i)) {
            r->has_stream = 1;
            r->stream = c->d.stream[i];
            r->has_device = r->has_source = c->d.has_device[i];
            r->device = c->d.device[i];
            r->source = c->d.source[i];
        }
    }
    return 1;
}

/* Does the selection read threads, streams or ranks (DIMS_*)? */
static int needs_dims(const scan_ctx *c)
{
    const tr_selection *sel = c->sel;
    if (sel && (sel->has_thread || sel->has_device || sel->has_stream
                || (sel->rank_map && !c->ranks_all)))
        return DIMS_ALL;
    return c->cover.on ? DIMS_THREADS : DIMS_NONE;
}

/* Can --kind select a host event?  Only then is there host time to cover. */
static int selects_host(const scan_ctx *c)
{
    unsigned mask = c->sel ? c->sel->kind_mask : 0;
    if (!mask)
        return 1;
    for (int k = 0; k < 32 && k < DIM_KINDS; k++)
        if ((mask & (1u << k)) && c->d.kind_known[k] && c->d.kind_on_gpu[k] == 0)
            return 1;
    return 0;
}

/* Does --rank select every rank the run.db holds?  Then no event needs the test. */
static int rank_map_all(const tr_rank_map *m)
{
    if (!m || !m->want || !m->want->n)
        return 1;
    if (!tr_rank_set_has(m->want, m->fallback))
        return 0;
    const tr_i64map *maps[] = {&m->thread_rank, &m->stream_rank};
    for (size_t k = 0; k < 2; k++)
        for (size_t i = 0; i < maps[k]->cap; i++)
            if (maps[k]->slots[i].used && !tr_rank_set_has(m->want, maps[k]->slots[i].val))
                return 0;
    return 1;
}

/* --include/--exclude as a function of SQL's, so the rows of names they leave out
 * never reach us: one test per distinct name (tr_selection_name_id_ok), the rest
 * a look in the cache, cheaper than the columns of a row SQLite would give us. */
#define NAME_SQL_FN "tr_name_selected"

static void name_sql_fn(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    scan_ctx *c = sqlite3_user_data(ctx);
    (void)argc;
    sqlite3_result_int(ctx, sqlite3_value_type(argv[0]) != SQLITE_INTEGER
                            || tr_selection_name_id_ok(c->sel, c->name_stmt, &c->name_ok,
                                                       sqlite3_value_int64(argv[0])));
}

/* The selection's tests that SQL can make while it reads the row, so rows that
 * fail them never reach us: kinds, the time range, the thread.  selected() still
 * makes every test; these only leave rows out sooner. */
static tr_status build_where(scan_ctx *c)
{
    const tr_selection *sel = c->sel;
    if (!sel)
        return TR_OK;
    size_t cap = 256, n = 0;
    char *w = malloc(cap);
    if (!w)
        return nomem(c);
    w[0] = '\0';
#define W_APPEND(...)                                                               \
    do {                                                                            \
        int k_ = snprintf(w + n, cap - n, __VA_ARGS__);                             \
        while (k_ >= 0 && (size_t)k_ >= cap - n) {                                  \
            char *nw_ = realloc(w, cap * 2);                                        \
            if (!nw_) {                                                             \
                free(w);                                                            \
                return nomem(c);                                                    \
            }                                                                       \
            w = nw_;                                                                \
            cap *= 2;                                                               \
            k_ = snprintf(w + n, cap - n, __VA_ARGS__);                             \
        }                                                                           \
        n += (size_t)(k_ > 0 ? k_ : 0);                                             \
    } while (0)
    if (sel->kind_mask) {
        W_APPEND("%se.kind IN (", n ? " AND " : "");
        int first = 1;
        for (int k = 0; k < 32; k++)
            if (sel->kind_mask & (1u << k)) {
                W_APPEND("%s%d", first ? "" : ",", k);
                first = 0;
            }
        W_APPEND(")");
    }
    if (sel->has_time) {
        /* start - t0 in [time_start, time_end), where the bounds do not overflow */
        if (sel->time_start > 0 && c->t0 <= INT64_MAX - sel->time_start)
            W_APPEND("%se.start_ns >= %lld", n ? " AND " : "", (long long)(c->t0 + sel->time_start));
        if (sel->time_end < INT64_MAX && c->t0 >= 0 && c->t0 <= INT64_MAX - sel->time_end)
            W_APPEND("%se.start_ns < %lld", n ? " AND " : "", (long long)(c->t0 + sel->time_end));
    }
    if (sel->has_thread) {
        /* its own thread rows, or none: then the launching call's thread decides */
        W_APPEND("%s(e.thread_id IS NULL OR e.thread_id IN (", n ? " AND " : "");
        int first = 1;
        for (size_t i = 0; i < c->d.threads.cap; i++)
            if (c->d.threads.slots[i].used && c->d.threads.slots[i].val == sel->thread) {
                W_APPEND("%s%lld", first ? "" : ",", (long long)c->d.threads.slots[i].key);
                first = 0;
            }
        W_APPEND("))");
    }
    if (sel->include || sel->exclude)
        W_APPEND("%s" NAME_SQL_FN "(e.name_id)", n ? " AND " : "");
#undef W_APPEND
    if (n && c->t0_guess) {
        /* every event before the guessed first one comes to prove it wrong */
        size_t m = n + 64;
        char *g = malloc(m);
        if (!g) {
            free(w);
            return nomem(c);
        }
        snprintf(g, m, "(e.start_ns < %lld OR (%s))", (long long)c->t0, w);
        free(w);
        w = g;
    }
    if (n)
        c->where = w;
    else
        free(w);
    return TR_OK;
}

/* The trace's first start, t0 of --time-range.  min(start_ns) reads every row, as
 * long as a scan that leaves most of them to SQLite.  With `guess`, t0 is the
 * earliest start of the events the aggregates name first and of the first event
 * by id, real events both: the scan then finds any earlier one (fill_row). */
static void first_start(scan_ctx *c, int guess)
{
    static const char *const exact[] = {"SELECT coalesce(min(start_ns), 0) FROM events"};
    static const char *const guesses[] = {
        "SELECT min(e.start_ns) FROM aggregates a JOIN events e ON e.id = a.first_id",
        "SELECT start_ns FROM events ORDER BY id LIMIT 1",
    };
    const char *const *q = guess ? guesses : exact;
    size_t nq = guess ? sizeof guesses / sizeof *guesses : 1;
    int found = 0;
    for (size_t i = 0; i < nq; i++) {
        sqlite3_stmt *st = NULL;
        if (sqlite3_prepare_v2(c->db, q[i], -1, &st, NULL) == SQLITE_OK
            && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
            int64_t v = sqlite3_column_int64(st, 0);
            if (!found || v < c->t0)
                c->t0 = v;
            found = 1;
        }
        sqlite3_finalize(st);
    }
    c->t0_guess = guess && found;
    c->t0_seen = c->t0;
}

static void cover_free(cover_sum *cv);

/* Back to before the scan, its groups and sums gone: the caches of names and
 * stacks hold (they depend on no row). */
static void scan_reset(scan_ctx *c)
{
    tr_summary *s = c->s;
    for (size_t i = 0; i < s->n; i++)
        free(s->groups[i].durations);
    free(s->groups);
    s->groups = NULL;
    s->n = s->cap = 0;
    s->events = s->skipped = s->sum_gpu_self_host = 0;
    free(c->groups.slots);
    memset(&c->groups, 0, sizeof c->groups);
    int on = c->cover.on;
    cover_free(&c->cover);
    memset(&c->cover, 0, sizeof c->cover);
    tr_i64map_init(&c->cover.index);
    c->cover.on = on;
    c->unattr.n = 0;
}

/* ---- the host time the selection covers ---- */

/* At most this many spans are held (16 bytes each): beyond, covered_time() sorts in SQLite. */
#define COVER_MAX_SPANS ((size_t)1 << 22)

static int cover_push(cover_sum *cv, struct cover_thread *t)
{
    if (cv->spans >= COVER_MAX_SPANS)
        return -1;
    if (t->n == t->cap) {
        size_t nc = t->cap ? t->cap * 2 : 16;
        struct cover_span *nv = realloc(t->v, nc * sizeof *nv);
        if (!nv)
            return -1;
        t->v = nv;
        t->cap = nc;
    }
    t->v[t->n++] = (struct cover_span){t->lo, t->hi};
    cv->spans++;
    return 0;
}

/* Adds a selected host event to its thread row's spans: a run of events in start
 * order is merged as it comes, a new run begins where a start goes back.  The sum
 * is covered_time()'s, the union over events sorted by thread and start, as long
 * as every event has a thread row and no two thread rows share a thread id;
 * otherwise, or past COVER_MAX_SPANS, covered_time() makes it. */
static void cover_add(scan_ctx *c, const ev_row *r)
{
    cover_sum *cv = &c->cover;
    if (cv->fallback)
        return;
    if (r->thread_row < 0) {
        cv->fallback = 1;
        return;
    }
    int64_t i;
    /* a thread's events mostly follow each other: the last thread row saves the map */
    if (cv->n && r->thread_row == cv->last_row)
        i = cv->last_index;
    else if (!tr_i64map_get(&cv->index, r->thread_row, &i)) {
        if (cv->n == cv->cap) {
            size_t nc = cv->cap ? cv->cap * 2 : 16;
            struct cover_thread *nt = realloc(cv->t, nc * sizeof *nt);
            if (!nt) {
                cv->fallback = 1;
                return;
            }
            cv->t = nt;
            cv->cap = nc;
        }
        i = (int64_t)cv->n;
        if (tr_i64map_put(&cv->index, r->thread_row, i) < 0) {
            cv->fallback = 1;
            return;
        }
        memset(&cv->t[cv->n], 0, sizeof cv->t[cv->n]);
        cv->t[cv->n++].th = r->has_tid ? r->tid : INT64_MIN + 1;
    }
    cv->last_row = r->thread_row;
    cv->last_index = i;
    struct cover_thread *t = &cv->t[i];
    int64_t s0 = r->start, e0 = r->end;
    if (t->open && s0 <= t->hi && s0 >= t->last) {
        t->hi = e0 > t->hi ? e0 : t->hi;
        t->last = s0;
        return;
    }
    if (t->open) {
        t->unsorted |= s0 < t->last;
        if (cover_push(cv, t) < 0) {
            cv->fallback = 1;
            return;
        }
    }
    t->lo = s0, t->hi = e0, t->last = s0, t->open = 1;
}

static int cmp_th(const void *a, const void *b)
{
    int64_t x = ((const struct cover_thread *)a)->th, y = ((const struct cover_thread *)b)->th;
    return x < y ? -1 : x > y;
}

static int cmp_span(const void *a, const void *b)
{
    int64_t x = ((const struct cover_span *)a)->lo, y = ((const struct cover_span *)b)->lo;
    return x < y ? -1 : x > y;
}

#define SPAN_LO(s) ((s).lo)
TR_RADIX_SORT_DEFINE(sort_spans, struct cover_span, SPAN_LO)

/* The sum, or 0 and *done 0 when covered_time() must make it. */
static int64_t cover_finish(cover_sum *cv, int *done)
{
    *done = 0;
    if (cv->fallback)
        return 0;
    /* two thread rows of one thread id follow each other in covered_time's order
     * and may merge spans across them: that order alone gives its sum */
    if (cv->n > 1)
        qsort(cv->t, cv->n, sizeof *cv->t, cmp_th);
    for (size_t i = 1; i < cv->n; i++)
        if (cv->t[i].th == cv->t[i - 1].th)
            return 0;
    int64_t total = 0;
    for (size_t i = 0; i < cv->n; i++) {
        struct cover_thread *t = &cv->t[i];
        if (t->open && cover_push(cv, t) < 0)
            return 0;
        t->open = 0;
        /* spans of one start join alike in any order: no order among them is kept */
        if (t->unsorted && t->n > 1 && sort_spans(t->v, t->n) < 0)
            qsort(t->v, t->n, sizeof *t->v, cmp_span);
        /* the union of closed spans: touching ones join, as in covered_time() */
        for (size_t k = 0; k < t->n;) {
            int64_t lo = t->v[k].lo, hi = t->v[k].hi;
            for (k++; k < t->n && t->v[k].lo <= hi; k++)
                hi = t->v[k].hi > hi ? t->v[k].hi : hi;
            tr_sat_acc(&total, hi - lo);
        }
    }
    *done = 1;
    return total;
}

static void cover_free(cover_sum *cv)
{
    for (size_t i = 0; i < cv->n; i++)
        free(cv->t[i].v);
    free(cv->t);
    tr_i64map_free(&cv->index);
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
static tr_status add_unattributed(scan_ctx *c, const row_src *rs, const ev_row *er)
{
    tr_summary *s = c->s;
    int64_t dur = er->gpu_self;
    s->unattributed++;
    tr_sat_acc(&s->unattributed_ns, dur);
    if (rs_type(rs, C_CORR) == SQLITE_NULL) {
        s->unattributed_no_corr++;
    } else {
        if (!c->first_call_loaded) {
            tr_status rc = load_first_calls(c);
            if (rc != TR_OK)
                return rc;
        }
        int64_t first;
        if (er->has_source && tr_i64map_get(&c->first_call, er->source, &first)
            && rs_int64(rs, C_CORR) < first)
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
    tr_group *g = group_of(c, er, NO_LAUNCH_ROW, 0, 0, 0);
    if (!g)
        return nomem(c);
    g->count++;
    tr_sat_acc(&g->gpu_self, dur);
    tr_sat_acc(&g->gpu_total, dur);
    tr_sat_acc(&s->sum_gpu_self_host, dur);
    return TR_OK;
}

/* "e.kind IN (...)": the kinds whose on_gpu is `on`, as "k.on_gpu = on" joined them. */
static char *kinds_where(scan_ctx *c, int on)
{
    size_t cap = 64, n = 0;
    char *w = malloc(cap);
    if (!w)
        return NULL;
    n = (size_t)snprintf(w, cap, "e.kind IN (");
    int first = 1;
    for (size_t i = 0; i < DIM_KINDS + c->d.kinds.cap; i++) {
        int64_t id, v;
        if (i < DIM_KINDS) {
            if (!c->d.kind_known[i])
                continue;
            id = (int64_t)i, v = c->d.kind_on_gpu[i];
        } else {
            const struct tr_i64slot *sl = &c->d.kinds.slots[i - DIM_KINDS];
            if (!sl->used)
                continue;
            id = sl->key, v = sl->val;
        }
        if (v != on)
            continue;
        if (cap - n < 32) {
            char *nw = realloc(w, cap * 2);
            if (!nw) {
                free(w);
                return NULL;
            }
            w = nw;
            cap *= 2;
        }
        n += (size_t)snprintf(w + n, cap - n, "%s%lld", first ? "" : ",", (long long)id);
        first = 0;
    }
    snprintf(w + n, cap - n, ")");
    return w;
}

static tr_status run_kinds_query(scan_ctx *c, int on, const char *more, const char *order,
                                 int q, sqlite3_stmt **out)
{
    char *k = kinds_where(c, on);
    if (!k)
        return nomem(c);
    char *w = malloc(strlen(k) + strlen(more) + 8);
    if (!w) {
        free(k);
        return nomem(c);
    }
    sprintf(w, "%s%s%s", more, *more ? " AND " : "", k);
    tr_status rc = run_query(c, w, order, q, out);
    free(w);
    free(k);
    return rc;
}

static tr_status note_unattributed(scan_ctx *c, const ev_row *r)
{
    if (c->unattr.n == c->unattr.cap) {
        size_t nc = c->unattr.cap ? c->unattr.cap * 2 : 64;
        int64_t *nv = realloc(c->unattr.ids, nc * sizeof *nv);
        if (!nv)
            return TR_ERR_RUNTIME;
        c->unattr.ids = nv;
        c->unattr.cap = nc;
    }
    c->unattr.ids[c->unattr.n++] = r->id;
    return TR_OK;
}

/* The activities note_unattributed() kept, each read again by id with the
 * columns add_unattributed() needs: the scan spares every other row those. */
static tr_status unattributed_by_id(scan_ctx *c)
{
    if (!c->unattr.n)
        return TR_OK;
    sqlite3_stmt *st = NULL;
    tr_status rc = run_query(c, "e.id = ?1", "", Q_ALL_ROWS | Q_ALL_COLUMNS, &st);
    ev_row er;
    row_src rs = {st, NULL};
    for (size_t i = 0; rc == TR_OK && i < c->unattr.n; i++) {
        sqlite3_bind_int64(st, 1, c->unattr.ids[i]);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            if (fill_row(c, &rs, &er, DIMS_ALL) && selected(c, &er) && times_ok(&rs, &er))
                rc = add_unattributed(c, &rs, &er);
        } else if (r != SQLITE_DONE) {
            rc = step_error(c);
        }
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* Does the ingest say the run has no GPU activity without a launching call?  Its
 * count (meta gpu_unlaunched) is derived data, as the aggregates are; a run.db
 * without it is looked at. */
static int none_unlaunched(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    int none = sqlite3_prepare_v2(c->db, "SELECT value FROM meta WHERE key = 'gpu_unlaunched'", -1, &st,
                                  NULL) == SQLITE_OK
               && sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_TEXT
               && strcmp((const char *)sqlite3_column_text(st, 0), "0") == 0;
    sqlite3_finalize(st);
    return none;
}

/* The selected GPU activities that no call launched, after the stored aggregates:
 * one indexed look at the events without a parent (a host event at the root
 * costs a look too: 0.2 s at 10^7 nvprof events), unless the ingest counted none. */
static tr_status scan_unattributed(scan_ctx *c)
{
    if (none_unlaunched(c))
        return TR_OK;
    sqlite3_stmt *st = NULL;
    tr_status rc = run_kinds_query(c, 1, "e.parent_id IS NULL", "", Q_ALL_COLUMNS, &st);
    int r = SQLITE_DONE;
    ev_row er;
    row_src rs = {st, NULL};
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        if (fill_row(c, &rs, &er, DIMS_ALL) && selected(c, &er) && times_ok(&rs, &er))
            rc = add_unattributed(c, &rs, &er);
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    return rc;
}

/* A host event's path: the trie node of its ancestors' names and its own.  An
 * event's ancestry is its parent's path when the parent is a host event met
 * before it in tree order (thread, start, longer first, depth, id), else the
 * root: so the paths follow parent_id, as the ingest's stack aggregates do
 * (lib/aggregates.h), and a parent_id cycle ends at the root. */
#define PATH_API 1   /* the low bit of a stored path: the event is an API call */
static int64_t stored_path(int64_t self, int kind)
{
    return self << 1 | (tr_kinds[(unsigned)kind % TR_KIND_COUNT_].is_api ? PATH_API : 0);
}

/* Host events in tree order, their paths kept by id, then device activities,
 * whose ancestry is their launching call's path. */
static tr_status scan_tree(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    tr_i64map paths;   /* host event id -> stored_path() */
    tr_i64map_init(&paths);
    int need = needs_dims(c);
    ev_row er;
    tr_status rc = run_kinds_query(c, 0, "", "ORDER BY e.thread_id, e.start_ns, e.end_ns DESC, e.depth, e.id", Q_ALL_ROWS, &st);
    int r = SQLITE_DONE;
    row_src rs = {st, NULL};
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!fill_row(c, &rs, &er, need))
            continue;
        if (er.flags & TR_FLAG_ASYNC) {
            rc = add_event(c, &rs, &er, 0);
            continue;
        }
        int64_t anc = 0;
        if (er.has_parent && tr_i64map_get(&paths, er.parent, &anc))
            anc >>= 1;
        int64_t self = tr_pair_trie_get(&c->paths, anc, er.name);
        if (self < 0 || tr_i64map_put(&paths, er.id, stored_path(self, er.kind)) < 0) {
            rc = nomem(c);
            break;
        }
        rc = add_event(c, &rs, &er, anc);
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    st = NULL;   /* a failed scan leaves no second statement to finalize */
    if (rc == TR_OK)
        rc = run_kinds_query(c, 1, "", "", 0, &st);
    rs.st = st;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!fill_row(c, &rs, &er, need))
            continue;
        int64_t p = 0;
        if (er.has_parent && tr_i64map_get(&paths, er.parent, &p))
            p = p & PATH_API ? p >> 1 : 0;
        rc = add_event(c, &rs, &er, p);
    }
    if (rc == TR_OK && st && r != SQLITE_DONE)
        rc = step_error(c);
    sqlite3_finalize(st);
    tr_i64map_free(&paths);
    return rc;
}

static tr_status scan_flat(scan_ctx *c);

/* scan_tree_ids() keeps 17 bytes an event id, in arrays that move to files past
 * the memory limit (lib/spill.h): it serves ids up to TREE_IDS_MAX, and past
 * TREE_IDS_DENSE only where the ids are dense (at most 4 a counted event), so a
 * sparse id (a hand-made run.db) costs no file of its size.  It reads five
 * columns of every event where scan_tree() sorts every column of every event
 * through SQLite's sorter: --group-by-stack 3 at 10^7 nvprof events in 3.8 s
 * (from the pages) and 150 MB against 15.7 s and 230 MB. */
#define TREE_IDS_DENSE ((int64_t)1 << 23)
#define TREE_IDS_MAX ((int64_t)1 << 27)

/* The events by id, for scan_tree_ids(): each one's parent and name, and what
 * its kind makes it. */
enum { TREE_HOLDER = 1, TREE_API = 2, TREE_DEVICE = 4 };
typedef struct {
    int64_t max_id;
    int32_t *up;        /* parent id + 1, 0 none */
    uint32_t *name;     /* name id */
    uint8_t *what;      /* TREE_*: a host event not async (a path holder), an API call, a device activity */
    uint32_t *self;     /* stored_path() of a holder, 0 not made yet */
    int32_t *chain;     /* self_of()'s walk */
    size_t nchain;
} tree_ids;

static void tree_ids_free(tree_ids *t)
{
    tr_spill_free(t->up);
    tr_spill_free(t->name);
    tr_spill_free(t->what);
    tr_spill_free(t->self);
    tr_spill_free(t->chain);
}

/* The path of holder id, made up its parent chain (each holder's ancestry is its
 * parent's path when the parent is a holder, else the root); -1 out of memory,
 * -2 when the chain comes back to an event it has passed (a parent_id cycle:
 * bad input, docs/schema.md). */
static int64_t self_of(scan_ctx *c, tree_ids *t, int64_t id)
{
    size_t n = 0;
    int64_t base = 0;
    for (int64_t k = id; !t->self[k];) {
        if (tr_vec_reserve_((void **)&t->chain, &t->nchain, n + 1, sizeof *t->chain) < 0)
            return -1;
        t->chain[n++] = (int32_t)k;
        int64_t up = (int64_t)t->up[k] - 1;
        if (up < 0 || !(t->what[up] & TREE_HOLDER))
            break;
        if (n > (size_t)t->max_id + 1)
            return -2;
        k = up;
        base = t->self[k] >> 1;
    }
    while (n) {
        int64_t k = t->chain[--n];
        base = tr_pair_trie_get(&c->paths, base, t->name[k]);
        if (base < 0 || base > INT32_MAX)
            return -1;
        t->self[k] = (uint32_t)(base << 1 | ((t->what[k] & TREE_API) ? PATH_API : 0));
    }
    return t->self[id] >> 1;
}

/* One event's parent, name, kind and flags (cells of load_tree_ids()'s query)
 * into t; TR_ERR_USAGE when a value does not fit (the caller sorts all instead). */
static tr_status tree_ids_put(scan_ctx *c, tree_ids *t, const tr_sql_cell *v)
{
    int64_t id = v[0].i, parent = v[1].i, name = v[2].i, kind = v[3].i;
    if (id < 0 || id > t->max_id)
        return TR_OK;   /* not so: max(id) and min(id) bound them */
    if (name < 0 || name > UINT32_MAX)
        return TR_ERR_USAGE;
    int64_t on_gpu = -1;
    if (kind >= 0 && kind < DIM_KINDS)
        on_gpu = c->d.kind_known[kind] ? c->d.kind_on_gpu[kind] : -1;
    else if (!tr_i64map_get(&c->d.kinds, kind, &on_gpu))
        on_gpu = -1;
    uint8_t w = 0;
    if (on_gpu == 0 && !(v[4].i & TR_FLAG_ASYNC))
        w = TREE_HOLDER | (tr_kinds[(unsigned)kind % TR_KIND_COUNT_].is_api ? TREE_API : 0);
    else if (on_gpu == 1)
        w = TREE_DEVICE;
    t->what[id] = w;
    t->name[id] = (uint32_t)name;
    t->up[id] = v[1].type != SQLITE_NULL && parent >= 0 && parent <= t->max_id ? (int32_t)(parent + 1) : 0;
    return TR_OK;
}

/* Reads each event's parent, name, kind and flags into t (tree_ids_put). */
static tr_status load_tree_ids(scan_ctx *c, tree_ids *t)
{
    tr_rundb_scan p;
    int started;
    tr_status rc = tr_rundb_scan_start(&p, c->db, "SELECT id, parent_id, name_id, kind, flags FROM events",
                                       5, "events", 0, &started, c->err);
    const tr_sql_cell *v;
    int r = 0;
    while (rc == TR_OK && (v = tr_rundb_scan_next(&p, &r, c->err)) != NULL)
        rc = tree_ids_put(c, t, v);
    if (rc == TR_OK && r < 0)
        rc = c->err->status;
    tr_rundb_scan_stop(&p);
    return rc;
}

/* scan_tree()'s paths without sorting: one read of each event's parent, name and
 * kind, by id; each path made up the parent chain; then one scan in id order, as
 * scan_flat().  For ids from 0 to max_id, at most TREE_IDS_MAX.  Where each
 * parent comes before its children in tree order (as the ingest writes them),
 * the paths are scan_tree()'s. */
static tr_status scan_tree_ids(scan_ctx *c, int64_t max_id)
{
    size_t n = (size_t)max_id + 1;
    tree_ids t = {.max_id = max_id};
    t.up = tr_spill_calloc(n, sizeof *t.up);
    t.name = tr_spill_calloc(n, sizeof *t.name);
    t.what = tr_spill_calloc(n, sizeof *t.what);
    t.self = tr_spill_calloc(n, sizeof *t.self);
    int32_t *anc = tr_spill_calloc(n, sizeof *anc);    /* host event -> its ancestry path */
    tr_status rc = t.up && t.name && t.what && t.self && anc ? load_tree_ids(c, &t) : TR_ERR_USAGE;
    for (int64_t id = 0; rc == TR_OK && id <= max_id; id++) {
        /* a holder's ancestry, a device activity's launching call's own path */
        int64_t up = (int64_t)t.up[id] - 1;
        if (!(t.what[id] & (TREE_HOLDER | TREE_DEVICE)) || up < 0 || !(t.what[up] & TREE_HOLDER))
            continue;
        if ((t.what[id] & TREE_DEVICE) && !(t.what[up] & TREE_API))
            continue;
        int64_t p = self_of(c, &t, up);
        if (p == -2)
            rc = tr_fail(c->err, TR_ERR_INPUT, "%s: table events: parent_id has a cycle through id %lld",
                         tr_rundb_name(c->db), (long long)up);
        else if (p < 0)
            rc = nomem(c);
        else
            anc[id] = (int32_t)p;
    }
    tree_ids_free(&t);
    if (rc == TR_OK) {
        c->tree_anc = anc;
        c->tree_max_id = max_id;
        rc = scan_flat(c);
        c->tree_anc = NULL;
    }
    tr_spill_free(anc);
    return rc;
}

/* scan_tree_ids() where the ids allow it, else scan_tree(). */
static tr_status scan_tree_any(scan_ctx *c)
{
    sqlite3_stmt *st;
    int64_t lo = -1, hi = -1;
    if (!tr_rundb_event_ids(c->db, &lo, &hi))
        lo = hi = -1;   /* no events, or none SQLite reads: scan_tree() says which */
    int64_t counted = 0;   /* the events the sources count: a hint, read only when it matters */
    if (hi > TREE_IDS_DENSE
        && sqlite3_prepare_v2(c->db, "SELECT coalesce(sum(event_count), 0) FROM sources", -1, &st, NULL)
               == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW)
            counted = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    if (lo < 0 || hi > TREE_IDS_MAX || (hi > TREE_IDS_DENSE && hi / 4 > counted))
        return scan_tree(c);
    tr_status rc = scan_tree_ids(c, hi);
    return rc == TR_ERR_USAGE ? scan_tree(c) : rc;
}

static int selection_active(const tr_selection *sel)
{
    return sel && (sel->include || sel->exclude || sel->kind_mask || sel->has_thread
                   || sel->has_device || sel->has_stream || sel->has_time || sel->top_level
                   || sel->ranks.n);
}

/* The host time covered by the selected host events: the union of their spans,
 * thread by thread, so CPU total % of a filtered table is a share of what it shows.
 * A second scan, sorted, for the runs whose events cover_add() could not sum. */
static tr_status covered_time(scan_ctx *c, int64_t *out)
{
    sqlite3_stmt *st = NULL;
    c->need_parent_tid = 1;
    tr_status rc = run_kinds_query(c, 0, "", "ORDER BY e.thread_id, e.start_ns", Q_ALL_COLUMNS, &st);
    int64_t total = 0, thread = INT64_MIN, lo = 0, hi = 0;
    int open = 0, r = SQLITE_DONE;
    ev_row er;
    row_src rs = {st, NULL};
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (!fill_row(c, &rs, &er, DIMS_ALL) || !selected(c, &er) || !times_ok(&rs, &er)
            || (er.flags & TR_FLAG_ASYNC))
            continue;
        int64_t th = er.has_tid ? er.tid : INT64_MIN + 1;
        int64_t s0 = er.start, e0 = er.end;
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

/* Whether the ingest-time table `table` may stand for a scan: it is there, no
 * option needs the events themselves, and the run is large enough for it to pay. */
static int aggregates_table_usable(scan_ctx *c, const char *table)
{
    const tr_analyze_opts *o = c->o;
    if (selection_active(c->sel) || o->stats || o->compat_torch)
        return 0;
    const char *env = getenv("TR_NO_AGGREGATES");
    if (env && *env && strcmp(env, "0") != 0)
        return 0;
    env = getenv("TR_AGGREGATES_MIN");
    int64_t min = env && *env ? strtoll(env, NULL, 10) : AGGREGATES_MIN_EVENTS;
    sqlite3_stmt *st = NULL;
    int found = sqlite3_prepare_v2(c->db, "SELECT 1 FROM sqlite_master WHERE type = 'table' "
                                   "AND name = ?1", -1, &st, NULL) == SQLITE_OK
                && sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC) == SQLITE_OK
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

static int aggregates_usable(scan_ctx *c)
{
    return c->o->group_by_stack <= 0 && aggregates_table_usable(c, "aggregates");
}

/* --group-by-stack's table from stack_aggregates, in either stack source */
static int stack_aggregates_usable(scan_ctx *c)
{
    return c->o->group_by_stack > 0 && aggregates_table_usable(c, "stack_aggregates")
           && (!c->tree_mode || aggregates_table_usable(c, "stack_paths"));
}

enum { A_NAME, A_GPU, A_SHAPE, A_EVENTS, A_CPU_TOTAL, A_CPU_SELF, A_GPU_TOTAL, A_GPU_SELF,
       A_CMEM, A_CMEM_SELF, A_GMEM, A_GMEM_SELF, A_FLOPS, A_FIRST_START, A_FIRST_END, A_FIRST_ID,
       A_FIRST_ASYNC };

/* One row of aggregates (its columns from `at` on) into the group of its name,
 * side, shape and stack key. */
static tr_status add_aggregate(scan_ctx *c, sqlite3_stmt *st, int at, int64_t key)
{
    tr_summary *s = c->s;
#define COL(i) sqlite3_column_int64(st, at + (i))
    int64_t name = group_name(c, COL(A_NAME));
    int gpu = COL(A_GPU) != 0;
    int64_t shape = c->o->group_by_shape ? COL(A_SHAPE) : 0;
    tr_group *g = group_get(c, name, gpu, shape, key);
    if (!g)
        return nomem(c);
    note_first(g, COL(A_FIRST_START), COL(A_FIRST_END), COL(A_FIRST_ID), COL(A_FIRST_ASYNC) != 0);
    int64_t n = COL(A_EVENTS);
    g->count += n;
    tr_sat_acc(&g->cpu_total, COL(A_CPU_TOTAL));
    tr_sat_acc(&g->cpu_self, COL(A_CPU_SELF));
    tr_sat_acc(&g->gpu_total, COL(A_GPU_TOTAL));
    tr_sat_acc(&g->gpu_self, COL(A_GPU_SELF));
    if (!gpu)
        tr_sat_acc(&s->sum_gpu_self_host, COL(A_GPU_SELF));
    tr_sat_acc(&g->cpu_mem, COL(A_CMEM));
    tr_sat_acc(&g->cpu_mem_self, COL(A_CMEM_SELF));
    tr_sat_acc(&g->gpu_mem, COL(A_GMEM));
    tr_sat_acc(&g->gpu_mem_self, COL(A_GMEM_SELF));
    if (sqlite3_column_type(st, at + A_FLOPS) != SQLITE_NULL)
        tr_sat_acc(&g->flops, COL(A_FLOPS));
#undef COL
    s->events += n;
    return TR_OK;
}

static tr_status aggregates_error(scan_ctx *c, const char *table)
{
    return tr_fail(c->err, TR_ERR_INPUT, "%s: cannot read table %s: %s", tr_rundb_name(c->db),
                   table, sqlite3_errmsg(c->db));
}

#define AGGREGATE_COLUMNS "name_id, on_gpu, shape_id, events, cpu_total_ns, cpu_self_ns, " \
    "gpu_total_ns, gpu_self_ns, cpu_mem_total, cpu_mem_self, gpu_mem_total, gpu_mem_self, " \
    "flops, first_start_ns, first_end_ns, first_id, first_async"

static tr_status scan_aggregates(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT " AGGREGATE_COLUMNS " FROM aggregates", -1, &st, NULL)
        != SQLITE_OK)
        return aggregates_error(c, "aggregates");
    tr_status rc = TR_OK;
    int r;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int(st, A_GPU) == TR_AGG_SKIPPED)
            c->s->skipped += sqlite3_column_int64(st, A_EVENTS);
        else
            rc = add_aggregate(c, st, 0, 0);
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = aggregates_error(c, "aggregates");
    sqlite3_finalize(st);
    return rc;
}

/* stack_paths' nodes as nodes of c->paths, the trie scan_tree() makes: the
 * same (ancestor path, name) pairs give the same stack keys.  A parent is
 * numbered below its children. */
static tr_status load_stack_paths(scan_ctx *c, tr_i64map *node_of)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT id, parent_id, name_id FROM stack_paths ORDER BY id", -1,
                           &st, NULL) != SQLITE_OK)
        return aggregates_error(c, "stack_paths");
    tr_status rc = TR_OK;
    int r;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t up = 0;
        if (sqlite3_column_type(st, 1) != SQLITE_NULL
            && !tr_i64map_get(node_of, sqlite3_column_int64(st, 1), &up)) {
            rc = tr_fail(c->err, TR_ERR_INPUT, "%s: table stack_paths: node %lld has an unknown "
                         "parent (drop the table to have the events scanned)", tr_rundb_name(c->db),
                         (long long)sqlite3_column_int64(st, 0));
            break;
        }
        int64_t node = tr_pair_trie_get(&c->paths, up, sqlite3_column_int64(st, 2));
        if (node < 0 || tr_i64map_put(node_of, sqlite3_column_int64(st, 0), node) < 0)
            rc = nomem(c);
    }
    if (rc == TR_OK && r != SQLITE_DONE)
        rc = aggregates_error(c, "stack_paths");
    sqlite3_finalize(st);
    return rc;
}

/* --group-by-stack from stack_aggregates: each row's key from its tree path or
 * its recorded stack, as the scan takes it from the event's. */
static tr_status scan_stack_aggregates(scan_ctx *c)
{
    tr_i64map node_of;   /* stack_paths.id -> c->paths node */
    tr_i64map_init(&node_of);
    tr_status rc = c->tree_mode ? load_stack_paths(c, &node_of) : TR_OK;
    sqlite3_stmt *st = NULL;
    if (rc == TR_OK && sqlite3_prepare_v2(c->db, "SELECT path_id, stack_id, " AGGREGATE_COLUMNS
                                          " FROM stack_aggregates", -1, &st, NULL) != SQLITE_OK)
        rc = aggregates_error(c, "stack_aggregates");
    int r = SQLITE_DONE;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (sqlite3_column_int(st, 2 + A_GPU) == TR_AGG_SKIPPED) {
            c->s->skipped += sqlite3_column_int64(st, 2 + A_EVENTS);
            continue;
        }
        int64_t node = 0;
        if (c->tree_mode) {
            int64_t path = sqlite3_column_int64(st, 0);
            if (path && !tr_i64map_get(&node_of, path, &node)) {
                rc = tr_fail(c->err, TR_ERR_INPUT, "%s: table stack_aggregates: unknown path %lld "
                             "(drop the table to have the events scanned)", tr_rundb_name(c->db),
                             (long long)path);
                break;
            }
        } else {
            node = sqlite3_column_int64(st, 1);
        }
        int64_t key = stack_key(c, node);
        rc = key < 0 ? nomem(c) : add_aggregate(c, st, 2, key);
    }
    if (rc == TR_OK && st && r != SQLITE_DONE)
        rc = aggregates_error(c, "stack_aggregates");
    sqlite3_finalize(st);
    tr_i64map_free(&node_of);
    return rc;
}

/* One row of the scan: its group, with its path under scan_tree_ids(). */
static tr_status scan_row(scan_ctx *c, const row_src *rs)
{
    ev_row er;
    if (!fill_row(c, rs, &er, c->step_need))
        return TR_OK;
    int64_t path = c->o->group_by_stack > 0 ? rs_int64(rs, C_STACK) : 0;
    if (c->tree_anc) {
        /* scan_tree_ids(): host events by their own id, device activities by their call's */
        int64_t max_id = c->tree_max_id;
        if (er.gpu == 0 || er.gpu == 1)
            path = er.id >= 0 && er.id <= max_id ? c->tree_anc[er.id] : 0;
        else
            return TR_OK;   /* neither pass of scan_tree() reads it */
    }
    return add_event(c, rs, &er, path);
}

/* One event of scan_flat(), its columns the arguments: SQLite calls it for each
 * row its WHERE passes, and the rows are never handed over one by one, nor their
 * columns read through a call each.  An error stops the statement. */
static void scan_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    scan_ctx *c = sqlite3_user_data(ctx);
    if (c->step_rc != TR_OK || argc != SCAN_SQL_COLUMNS)
        return;
    row_src rs = {NULL, argv, NULL};
    c->step_rc = scan_row(c, &rs);
    if (c->step_rc != TR_OK)
        sqlite3_result_error(ctx, "the scan stopped", -1);
}

static void scan_final(sqlite3_context *ctx)
{
    sqlite3_result_null(ctx);
}

/* scan_flat() from run.db's pages, where the selection has no tests for SQL to
 * make (those leave most rows undecoded, and win); *done 0 where the rows do not
 * come from the pages. */
static tr_status scan_pages(scan_ctx *c, int *done)
{
    *done = 0;
    if (c->where)
        return TR_OK;
    char *sql = query_sql(c, "", "", 0);
    if (!sql)
        return nomem(c);
    tr_rundb_scan p;
    tr_status rc = tr_rundb_scan_start(&p, c->db, sql, SCAN_SQL_COLUMNS, "events", 1, done, c->err);
    free(sql);
    if (rc != TR_OK || !*done)
        return rc;
    c->step_need = needs_dims(c);
    row_src rs = {NULL, NULL, NULL};
    int r = 0;
    while (rc == TR_OK && (rs.cells = tr_rundb_scan_next(&p, &r, c->err)) != NULL)
        rc = scan_row(c, &rs);
    if (rc == TR_OK && r < 0)
        rc = c->err->status;
    tr_rundb_scan_stop(&p);
    return rc;
}

static tr_status scan_flat(scan_ctx *c)
{
    int done;
    tr_status prc = scan_pages(c, &done);
    if (prc != TR_OK || done)
        return prc;
    if (sqlite3_create_function(c->db, SCAN_STEP_FN, SCAN_SQL_COLUMNS, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                                c, NULL, scan_step, scan_final) != SQLITE_OK)
        return step_error(c);
    sqlite3_stmt *st = NULL;
    c->step_rc = TR_OK;
    c->step_need = needs_dims(c);
    tr_status rc = run_query(c, "", "", Q_THROUGH_STEP, &st);
    int r = SQLITE_DONE;
    while (rc == TR_OK && (r = sqlite3_step(st)) == SQLITE_ROW)
        ;
    if (rc == TR_OK)
        rc = c->step_rc != TR_OK ? c->step_rc : r != SQLITE_DONE ? step_error(c) : TR_OK;
    sqlite3_finalize(st);
    /* the function points at c: gone with it */
    sqlite3_create_function(c->db, SCAN_STEP_FN, SCAN_SQL_COLUMNS, SQLITE_UTF8 | SQLITE_DIRECTONLY,
                            NULL, NULL, NULL, NULL);
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

/* Names, shapes and frames of the groups. */
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

static void scan_ctx_init(scan_ctx *c, sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err)
{
    memset(c, 0, sizeof *c);
    c->db = db;
    c->o = o;
    c->sel = o->select;
    c->s = s;
    c->err = err;
    tr_i64map_init(&c->key_cache);
    tr_i64map_init(&c->name_ok);
    tr_i64map_init(&c->frame_index);
    tr_i64map_init(&c->folded);
    tr_i64map_init(&c->hidden);
    tr_i64map_init(&c->first_call);
    tr_i64map_init(&c->d.kinds);
    tr_i64map_init(&c->d.threads);
    tr_i64map_init(&c->d.streams);
    tr_i64map_init(&c->cover.index);
}

static void scan_ctx_free(scan_ctx *c)
{
    if (c->name_fn)   /* the function points at c: gone with it */
        sqlite3_create_function(c->db, NAME_SQL_FN, 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, NULL,
                                NULL, NULL);
    sqlite3_finalize(c->name_stmt);
    sqlite3_finalize(c->parent_tid);
    dims_free(&c->d);
    free(c->where);
    free(c->unattr.ids);
    cover_free(&c->cover);
    free(c->groups.slots);
    tr_pair_trie_free(&c->paths);
    tr_pair_trie_free(&c->keys);
    tr_i64map_free(&c->key_cache);
    tr_i64map_free(&c->name_ok);
    free(c->frame_parent);
    free(c->frame_label);
    tr_i64map_free(&c->frame_index);
    tr_i64map_free(&c->folded);
    tr_i64map_free(&c->hidden);
    tr_i64map_free(&c->first_call);
    tr_torch_compat_free(&c->torch);
}

/* The statements, the dimension tables and the stack nodes the scan needs, and
 * which way it goes: *from_aggregates and *from_stack_aggregates say whether the
 * ingest's aggregate tables answer it. */
static tr_status scan_prepare(scan_ctx *c, int *from_aggregates, int *from_stack_aggregates)
{
    const tr_analyze_opts *o = c->o;
    tr_status rc;
    if (sqlite3_prepare_v2(c->db, "SELECT value FROM strings WHERE id = ?", -1, &c->name_stmt, NULL) != SQLITE_OK
        || sqlite3_prepare_v2(c->db, "SELECT t.tid FROM events pe JOIN threads t ON t.id = pe.thread_id "
                              "WHERE pe.id = ?", -1, &c->parent_tid, NULL) != SQLITE_OK)
        return step_error(c);
    if ((rc = load_dims(c)) != TR_OK)
        return rc;
    if (dims_index(&c->d.threads, &c->d.thread_tid, &c->d.thread_has, &c->d.nthread_ids) < 0
        || dims_index(&c->d.streams, &c->d.stream_index, &c->d.stream_has, &c->d.nstream_ids) < 0)
        return nomem(c);
    c->need_parent_tid = c->sel && c->sel->has_thread;
    c->cover.on = selection_active(c->sel) && !o->compat_torch && selects_host(c);
    c->ranks_all = c->sel && rank_map_all(c->sel->rank_map);
    if (o->group_by_stack > 0) {
        if ((rc = load_stack_nodes(c)) != TR_OK)
            return rc;
        /* auto: the call tree stands in for missing frames, except under --compat torch,
         * where PyTorch groups by the (empty) frames and shows no Source Location */
        c->tree_mode = o->stack_source == TR_STACK_TREE
                       || (o->stack_source == TR_STACK_AUTO && c->nframes_nodes == 0 && !o->compat_torch);
        c->s->stack_source = c->tree_mode ? "tree" : "frames";
    }
    *from_stack_aggregates = stack_aggregates_usable(c);
    *from_aggregates = *from_stack_aggregates || (!c->tree_mode && aggregates_usable(c));
    if (c->sel && c->sel->has_time)
        first_start(c, !c->tree_mode && !*from_aggregates);
    if (c->sel && (c->sel->include || c->sel->exclude)) {
        if (sqlite3_create_function(c->db, NAME_SQL_FN, 1, SQLITE_UTF8 | SQLITE_DIRECTONLY, c,
                                    name_sql_fn, NULL, NULL) != SQLITE_OK)
            return step_error(c);
        c->name_fn = 1;
    }
    c->unattr.on = !*from_aggregates && !o->compat_torch;
    return build_where(c);
}

/* The groups, from the aggregates or from a scan of the events; a time range
 * guessed from too late a start is scanned again. */
static tr_status scan_groups(scan_ctx *c, int from_aggregates, int from_stack_aggregates)
{
    tr_status rc = from_stack_aggregates ? scan_stack_aggregates(c)
                   : c->tree_mode        ? scan_tree_any(c)
                   : from_aggregates     ? scan_aggregates(c)
                                         : scan_flat(c);
    if (rc == TR_OK && c->t0_guess && c->t0_seen < c->t0) {
        /* an event starts before the guess: the range moves, and the scan starts over */
        scan_reset(c);
        c->t0 = c->t0_seen;
        c->t0_guess = 0;
        free(c->where);
        c->where = NULL;
        if ((rc = build_where(c)) == TR_OK)
            rc = scan_flat(c);
    }
    return rc;
}

/* --compat torch --top-level, as PyTorch's table(top_level_events_only=True) does it:
 * a row is left out when the first event of its key has a parent (device activities
 * and memory events have none there), and it counts all the key's events when shown;
 * the columns and the totals still come from every row (SEMANTICS.md 4.6, defect 19). */
static tr_status hide_nested_firsts(scan_ctx *c)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(c->db, "SELECT parent_id IS NOT NULL AND kind <> ? FROM events WHERE id = ?",
                           -1, &st, NULL) != SQLITE_OK)
        return step_error(c);
    tr_status rc = TR_OK;
    for (size_t i = 0; i < c->s->n && rc == TR_OK; i++) {
        tr_group *g = &c->s->groups[i];
        if (g->on_gpu)
            continue;
        sqlite3_bind_int(st, 1, TR_KIND_MEMORY);
        sqlite3_bind_int64(st, 2, g->first_id);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW)
            g->hidden = sqlite3_column_int(st, 0);
        else if (r != SQLITE_DONE)
            rc = step_error(c);
        sqlite3_reset(st);
    }
    sqlite3_finalize(st);
    return rc;
}

/* The rows --compat torch --top-level hides, the unattributed GPU time and, under a
 * selection, the CPU time it covers. */
static tr_status scan_extras(scan_ctx *c)
{
    tr_summary *s = c->s;
    tr_status rc = TR_OK;
    if (c->o->compat_torch && c->sel && c->sel->top_level)
        rc = hide_nested_firsts(c);
    if (rc != TR_OK)
        return rc;
    if (!c->o->compat_torch)
        rc = c->unattr.on ? unattributed_by_id(c) : scan_unattributed(c);
    s->filtered = selection_active(c->sel);
    if (rc == TR_OK && s->filtered && !c->o->compat_torch) {
        int done;
        s->cpu_covered = cover_finish(&c->cover, &done);
        if (!done)
            rc = covered_time(c, &s->cpu_covered);
    }
    return rc;
}

int64_t tr_summary_gpu_base(const tr_summary *s, int compat_torch, int *launched)
{
    int host = !compat_torch && (!s->sum_gpu_self_device
                                 || (s->filtered && s->sum_gpu_self_host > s->sum_gpu_self_device));
    if (launched)
        *launched = host;
    return host ? s->sum_gpu_self_host : s->sum_gpu_self_device;
}

void tr_summary_totals(tr_summary *s)
{
    s->sum_cpu_self = s->sum_gpu_self_device = 0;
    s->has_gpu = s->has_shapes = s->has_mem = s->has_gpu_mem = s->has_flops = s->has_frames = 0;
    for (size_t i = 0; i < s->n; i++) {
        const tr_group *g = &s->groups[i];
        tr_sat_acc(&s->sum_cpu_self, g->cpu_self);
        if (g->on_gpu)
            tr_sat_acc(&s->sum_gpu_self_device, g->gpu_self);
        s->has_gpu |= g->gpu_self > 0;
        /* as PyTorch shows Input Shapes for a non-empty input_shapes: a trace
         * recorded without shapes gives every op "[]" */
        s->has_shapes |= g->shape_id != 0 && g->shape && strcmp(g->shape, "[]") != 0;
        s->has_mem |= g->cpu_mem || g->gpu_mem || g->cpu_mem_self || g->gpu_mem_self;
        s->has_gpu_mem |= g->gpu_mem_self > 0;
        s->has_flops |= g->flops > 0;
        s->has_frames |= g->nframes > 0;
    }
}

tr_status tr_summarize(sqlite3 *db, const tr_analyze_opts *o, tr_summary *s, tr_error *err)
{
    memset(s, 0, sizeof *s);
    scan_ctx c;
    scan_ctx_init(&c, db, o, s, err);
    tr_status rc = TR_OK;
    if (o->compat_torch && (rc = tr_torch_compat_load(db, &c.torch, err)) != TR_OK)
        return rc;
    int from_aggregates = 0, from_stack_aggregates = 0;
    rc = scan_prepare(&c, &from_aggregates, &from_stack_aggregates);
    if (rc == TR_OK)
        rc = scan_groups(&c, from_aggregates, from_stack_aggregates);
    if (rc == TR_OK)
        rc = scan_extras(&c);
    if (rc == TR_OK)
        rc = resolve(&c);
    if (rc == TR_OK) {
        tr_summary_totals(s);
        tr_summary_sort(s, NULL);
    }
    scan_ctx_free(&c);
    return rc;
}

static const tr_sort_key *sort_by;

int tr_group_first_before(const tr_group *a, const tr_group *b)
{
    if (a->first_start != b->first_start)
        return a->first_start < b->first_start;
    if (a->first_end != b->first_end)
        return a->first_end > b->first_end;
    if (a->first_id != b->first_id)
        return a->first_id < b->first_id;
    /* one event first in two rows: a GPU activity without its launching call
     * is in its own row and in the host row [no launching call] */
    return a->on_gpu > b->on_gpu;
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
    return tr_group_first_before(a, b) ? -1 : tr_group_first_before(b, a);
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

#define SELF(x) (x)
TR_RADIX_SORT_DEFINE(sort_i64, int64_t, SELF)

void tr_group_stats_get(const tr_group *g, tr_group_stats *st)
{
    memset(st, 0, sizeof *st);
    if (!g->ndur)
        return;
    /* the sums below run in sorted order: the same order, the same bits */
    if (sort_i64(g->durations, g->ndur) < 0)
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
