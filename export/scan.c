/* scan.c - the ordered event scan, selection and frame tree (see scan.h). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export/scan.h"
#include "lib/frames.h"
#include "lib/checked.h"
#include "lib/i64map.h"
#include "lib/model.h"
#include "lib/rundb.h"
#include "lib/rundb_scan.h"

static tr_status nomem(tr_error *err) { return tr_fail(err, TR_ERR_RUNTIME, "out of memory"); }

static tr_status dberr(tr_scan *sc, tr_error *err, const char *what)
{
    return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table %s: %s", tr_rundb_name(sc->db),
                   what, sqlite3_errmsg(sc->db));
}

const char *tr_scan_string(tr_scan *sc, int64_t id, size_t *len)
{
    static const char empty[] = "";
    const char *v = NULL;
    *len = 0;
    sqlite3_reset(sc->q_str);
    sqlite3_bind_int64(sc->q_str, 1, id);
    if (sqlite3_step(sc->q_str) == SQLITE_ROW) {
        v = (const char *)sqlite3_column_text(sc->q_str, 0);
        *len = (size_t)sqlite3_column_bytes(sc->q_str, 0);
    }
    return v ? v : empty;
}

static uint64_t node_hash(uint32_t parent, int64_t name_id, uint8_t kind)
{
    uint64_t h = (uint64_t)parent * 0x9e3779b97f4a7c15ULL;
    h ^= (uint64_t)name_id * 0xc2b2ae3d27d4eb4fULL + kind;
    h ^= h >> 31;
    return h * 0x94d049bb133111ebULL;
}

static int hash_grow(tr_scan *sc)
{
    size_t ncap = sc->hcap ? sc->hcap * 2 : 1024;
    uint32_t *nh = calloc(ncap, sizeof *nh);
    if (!nh)
        return -1;
    for (size_t i = 1; i < sc->nnodes; i++) {
        const tr_fnode *n = &sc->nodes[i];
        size_t j = node_hash(n->parent, n->name_id, n->kind) & (ncap - 1);
        while (nh[j])
            j = (j + 1) & (ncap - 1);
        nh[j] = (uint32_t)i + 1;
    }
    free(sc->hash);
    sc->hash = nh;
    sc->hcap = ncap;
    return 0;
}


/* String name_id's value, copied once for every node that bears it (-1: no memory). */
static int shared_name(tr_scan *sc, int64_t name_id, char **name, size_t *len)
{
    int64_t at;
    if (tr_i64map_get(&sc->name_index, name_id, &at)) {
        *name = sc->names[at];
        *len = sc->name_lens[at];
        return 0;
    }
    if (sc->nnames == sc->names_cap) {
        size_t ncap = sc->names_cap ? 2 * sc->names_cap : 256;
        char **nn = realloc(sc->names, ncap * sizeof *nn);
        if (nn)
            sc->names = nn;
        size_t *nl = nn ? realloc(sc->name_lens, ncap * sizeof *nl) : NULL;
        if (!nl)
            return -1;
        sc->name_lens = nl;
        sc->names_cap = ncap;
    }
    const char *v = tr_scan_string(sc, name_id, len);
    char *copy = malloc(*len + 1);
    if (!copy)
        return -1;
    memcpy(copy, v, *len);
    copy[*len] = 0;
    if (tr_i64map_put(&sc->name_index, name_id, (int64_t)sc->nnames) < 0) {
        free(copy);
        return -1;
    }
    sc->name_lens[sc->nnames] = *len;
    sc->names[sc->nnames++] = copy;
    *name = copy;
    return 0;
}
/* The child of `parent` named name_id with this kind, made on first use. */
static tr_status node_child(tr_scan *sc, uint32_t parent, int64_t name_id, int kind,
                            uint32_t *out, tr_error *err)
{
    uint8_t k = (uint8_t)(kind > 0 && kind < TR_KIND_COUNT_ ? kind : TR_KIND_FRAME);
    if ((sc->nnodes + 1) * 2 > sc->hcap && hash_grow(sc) < 0)
        return nomem(err);
    size_t j = node_hash(parent, name_id, k) & (sc->hcap - 1);
    for (; sc->hash[j]; j = (j + 1) & (sc->hcap - 1)) {
        const tr_fnode *n = &sc->nodes[sc->hash[j] - 1];
        if (n->parent == parent && n->name_id == name_id && n->kind == k) {
            *out = sc->hash[j] - 1;
            return TR_OK;
        }
    }
    if (sc->nnodes >= UINT32_MAX - 1)
        return tr_fail(err, TR_ERR_RUNTIME, "too many distinct stacks");
    if (sc->nnodes == sc->cap) {
        size_t ncap = sc->cap * 2;
        tr_fnode *nn = realloc(sc->nodes, ncap * sizeof *nn);
        if (!nn)
            return nomem(err);
        sc->nodes = nn;
        sc->cap = ncap;
    }
    char *copy;
    size_t len;
    if (shared_name(sc, name_id, &copy, &len) < 0)
        return nomem(err);
    uint32_t idx = (uint32_t)sc->nnodes++;
    tr_fnode *n = &sc->nodes[idx];
    memset(n, 0, sizeof *n);
    n->parent = parent;
    n->name_id = name_id;
    n->kind = k;
    n->match = -1;
    n->name = copy;
    n->name_len = len;
    sc->hash[j] = idx + 1;
    *out = idx;
    return TR_OK;
}

/* Frame-tree node of a stack_nodes row (its frames, outermost first). */
tr_status tr_scan_frames_node(tr_scan *sc, int64_t stack_id, uint32_t *out, tr_error *err)
{
    tr_i64map *idx = sc->frame_memo_map;
    int64_t i;
    *out = 0;
    if (!tr_i64map_get(idx, stack_id, &i))
        return TR_OK;   /* a dangling stack id: no frames */
    if (sc->frame_memo[i]) {
        *out = sc->frame_memo[i] - 1;
        return TR_OK;
    }
    /* walk up to the first known node, then build down */
    size_t n = 0, cap = 16;
    int64_t *chain = malloc(cap * sizeof *chain);
    if (!chain)
        return nomem(err);
    uint32_t base = 0;
    for (int64_t cur = i;;) {
        if (sc->frame_memo[cur]) {
            base = sc->frame_memo[cur] - 1;
            break;
        }
        if (n == cap) {
            int64_t *nc = realloc(chain, 2 * cap * sizeof *nc);
            if (!nc) {
                free(chain);
                return nomem(err);
            }
            chain = nc;
            cap *= 2;
        }
        chain[n++] = cur;
        if (n > sc->nframes) {
            free(chain);
            return tr_fail(err, TR_ERR_INPUT, "%s: table stack_nodes: parent_id has a cycle "
                           "at id %lld", tr_rundb_name(sc->db), (long long)stack_id);
        }
        int64_t p;
        if (!sc->frame_parent[cur] || !tr_i64map_get(idx, sc->frame_parent[cur], &p))
            break;
        cur = p;
    }
    tr_status st = TR_OK;
    while (n > 0) {
        int64_t cur = chain[--n];
        size_t len;
        const char *name = tr_scan_string(sc, sc->frame_name[cur], &len);
        /* PyTorch's own autograd frames are left out (lib/frames.h) */
        if (!tr_frame_hidden(name, len, sc->o->compat_torch)
            && (st = node_child(sc, base, sc->frame_name[cur], TR_KIND_FRAME, &base, err)) != TR_OK)
            break;
        sc->frame_memo[cur] = base + 1;
    }
    free(chain);
    *out = base;
    return st;
}

/* Marks an event whose node is being worked out, so a walk that meets it again
 * has gone round a parent_id cycle. */
#define EV_WALKING ((int64_t)UINT32_MAX + 1)

/* The node of an event found by walking its parents (events not on the open
 * stack).  Iterative, so a chain as deep as the file is long cannot overflow
 * the C stack, and memoized per event, so each ancestor is read once. */
static tr_status event_node(tr_scan *sc, int64_t id, uint32_t *out, tr_error *err)
{
    sc->nwalk = 0;
    uint32_t base = 0;
    tr_status st = TR_OK;
    for (int64_t cur = id;;) {
        int64_t memo;
        if (tr_i64map_get(&sc->event_memo, cur, &memo)) {
            if (memo == EV_WALKING)
                return tr_fail(err, TR_ERR_INPUT, "%s: table events: parent_id has a cycle "
                               "through id %lld", tr_rundb_name(sc->db), (long long)cur);
            base = (uint32_t)memo;
            break;
        }
        sqlite3_reset(sc->q_event);
        sqlite3_bind_int64(sc->q_event, 1, cur);
        int rc = sqlite3_step(sc->q_event);
        if (rc != SQLITE_ROW) {
            if (rc != SQLITE_DONE)
                return dberr(sc, err, "events");
            break;   /* a dangling parent: the chain starts at the root */
        }
        if (sc->nwalk == sc->walkcap) {
            size_t ncap = sc->walkcap ? sc->walkcap * 2 : 64;
            struct tr_walk *nw = realloc(sc->walk, ncap * sizeof *nw);
            if (!nw)
                return nomem(err);
            sc->walk = nw;
            sc->walkcap = ncap;
        }
        struct tr_walk *w = &sc->walk[sc->nwalk++];
        w->id = cur;
        w->kind = sqlite3_column_int(sc->q_event, 1);
        w->name = sqlite3_column_int64(sc->q_event, 2);
        if (tr_i64map_put(&sc->event_memo, cur, EV_WALKING) < 0)
            return nomem(err);
        int has_parent = sqlite3_column_type(sc->q_event, 0) != SQLITE_NULL;
        int64_t parent = sqlite3_column_int64(sc->q_event, 0);
        if (sc->use_frames && sqlite3_column_type(sc->q_event, 3) != SQLITE_NULL) {
            st = tr_scan_frames_node(sc, sqlite3_column_int64(sc->q_event, 3), &base, err);
            break;
        }
        if (!has_parent)
            break;
        cur = parent;
    }
    while (st == TR_OK && sc->nwalk > 0) {
        const struct tr_walk *w = &sc->walk[--sc->nwalk];
        if ((st = node_child(sc, base, w->name, w->kind, &base, err)) == TR_OK
            && tr_i64map_put(&sc->event_memo, w->id, base) < 0)
            st = nomem(err);
    }
    *out = base;
    return st;
}

static int re_match(void *re, const char *s, size_t len)
{
    pcre2_match_data *md = pcre2_match_data_create_from_pattern(re, NULL);
    if (!md)
        return 0;
    int rc = pcre2_match(re, (PCRE2_SPTR)s, len, 0, 0, md, NULL);
    pcre2_match_data_free(md);
    return rc >= 0;
}

static int match_one(tr_scan *sc, uint32_t idx, int m)
{
    const tr_fnode *n = &sc->nodes[idx];
    if (sc->o->include_re && !(m & 1) && re_match(sc->o->include_re, n->name, n->name_len))
        m |= 1;
    if (sc->o->exclude_re && !(m & 2) && re_match(sc->o->exclude_re, n->name, n->name_len))
        m |= 2;
    return m;
}

/* Bit 0: some frame of the path matches --include; bit 1: some frame matches --exclude.
 * Walks up to the first node already known, then fills the path in going down. */
static int node_match(tr_scan *sc, uint32_t idx)
{
    size_t n = 0;
    uint32_t cur = idx;
    while (cur && sc->nodes[cur].match < 0) {
        if (n == sc->pathcap) {
            size_t ncap = sc->pathcap ? sc->pathcap * 2 : 64;
            uint32_t *np = realloc(sc->path, ncap * sizeof *np);
            if (!np)
                return match_one(sc, idx, 0);   /* out of memory: this node's own match */
            sc->path = np;
            sc->pathcap = ncap;
        }
        sc->path[n++] = cur;
        cur = sc->nodes[cur].parent;
    }
    int m = cur ? sc->nodes[cur].match : 0;
    while (n > 0) {
        cur = sc->path[--n];
        m = match_one(sc, cur, m);
        sc->nodes[cur].match = (int8_t)m;
    }
    return m;
}

/* stack_nodes must be a forest: a parent_id cycle is bad input.  Each row is
 * marked on its first walk (1 on the walk, 2 done), so the check is linear. */
static tr_status check_frames(tr_scan *sc, tr_error *err)
{
    uint8_t *state = calloc(sc->nframes + 1, 1);
    size_t *chain = malloc((sc->nframes + 1) * sizeof *chain);
    tr_status st = TR_OK;
    if (!state || !chain)
        st = nomem(err);
    for (size_t i = 0; i < sc->nframes && st == TR_OK; i++) {
        size_t n = 0, cur = i;
        for (;;) {
            if (state[cur] == 1) {
                st = tr_fail(err, TR_ERR_INPUT, "%s: table stack_nodes: parent_id has a cycle "
                             "through id %lld", tr_rundb_name(sc->db),
                             (long long)sc->frame_id[cur]);
                break;
            }
            if (state[cur] == 2)
                break;
            state[cur] = 1;
            chain[n++] = cur;
            int64_t p;
            if (!sc->frame_parent[cur] || !tr_i64map_get(sc->frame_memo_map, sc->frame_parent[cur], &p))
                break;
            cur = (size_t)p;
        }
        while (n > 0)
            state[chain[--n]] = 2;
    }
    free(state);
    free(chain);
    return st;
}

static tr_status load_frames(tr_scan *sc, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    int64_t count = 0;
    if (sqlite3_prepare_v2(sc->db, "SELECT count(*) FROM stack_nodes", -1, &st, NULL) != SQLITE_OK)
        return dberr(sc, err, "stack_nodes");
    if (sqlite3_step(st) == SQLITE_ROW)
        count = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    size_t n = (size_t)(count > 0 ? count : 0);
    sc->frame_memo = calloc(n + 1, sizeof *sc->frame_memo);
    sc->frame_parent = calloc(n + 1, sizeof *sc->frame_parent);
    sc->frame_name = calloc(n + 1, sizeof *sc->frame_name);
    sc->frame_id = calloc(n + 1, sizeof *sc->frame_id);
    tr_i64map *map = malloc(sizeof *map);
    if (!sc->frame_memo || !sc->frame_parent || !sc->frame_name || !sc->frame_id || !map) {
        free(map);
        return nomem(err);
    }
    tr_i64map_init(map);
    sc->frame_memo_map = map;
    if (sqlite3_prepare_v2(sc->db, "SELECT id, parent_id, frame_id FROM stack_nodes", -1, &st,
                           NULL) != SQLITE_OK)
        return dberr(sc, err, "stack_nodes");
    size_t i = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && i < n) {
        sc->frame_parent[i] = sqlite3_column_int64(st, 1);   /* NULL reads as 0 = none */
        sc->frame_name[i] = sqlite3_column_int64(st, 2);
        sc->frame_id[i] = sqlite3_column_int64(st, 0);
        if (tr_i64map_put(map, sqlite3_column_int64(st, 0), (int64_t)i) < 0) {
            sqlite3_finalize(st);
            return nomem(err);
        }
        i++;
    }
    sqlite3_finalize(st);
    sc->nframes = i;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return dberr(sc, err, "stack_nodes");
    return check_frames(sc, err);
}

static tr_status load_ids(tr_scan *sc, const char *sql, tr_i64map *map, int64_t (*vals)[2],
                          size_t max, size_t *n, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(sc->db, sql, -1, &st, NULL) != SQLITE_OK)
        return dberr(sc, err, "threads/streams");
    size_t i = 0;
    while (sqlite3_step(st) == SQLITE_ROW && i < max) {
        vals[i][0] = sqlite3_column_int64(st, 1);
        vals[i][1] = sqlite3_column_int64(st, 2);
        if (tr_i64map_put(map, sqlite3_column_int64(st, 0), (int64_t)i) < 0) {
            sqlite3_finalize(st);
            return nomem(err);
        }
        i++;
    }
    sqlite3_finalize(st);
    *n = i;
    return TR_OK;
}

static int64_t scalar(sqlite3 *db, const char *sql, int64_t dflt)
{
    sqlite3_stmt *st = NULL;
    int64_t v = dflt;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW
        && sqlite3_column_type(st, 0) != SQLITE_NULL)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t tr_scan_trace_start(tr_scan *sc)
{
    if (!sc->has_trace_start) {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT min(start_ns) FROM events WHERE start_ns >= %lld "
                 "AND end_ns <= %lld AND end_ns >= start_ns", -(long long)TR_NS_TIME_MAX,
                 (long long)TR_NS_TIME_MAX);
        sc->trace_start = scalar(sc->db, sql, 0);
        sc->has_trace_start = 1;
    }
    return sc->trace_start;
}

int tr_scan_put_path(FILE *f, tr_scan *sc, uint32_t idx, tr_frame_put_fn put, void *ctx)
{
    size_t n = 0;
    for (uint32_t cur = idx; cur; cur = sc->nodes[cur].parent) {
        if (n == sc->pathcap) {
            size_t ncap = sc->pathcap ? sc->pathcap * 2 : 64;
            uint32_t *np = realloc(sc->path, ncap * sizeof *np);
            if (!np)
                return -1;
            sc->path = np;
            sc->pathcap = ncap;
        }
        sc->path[n++] = cur;
    }
    while (n > 0) {
        const tr_fnode *node = &sc->nodes[sc->path[--n]];
        if (put(f, node->name, node->name_len, ctx) < 0)
            return -1;
        if (n)
            putc(';', f);
    }
    return 0;
}

tr_status tr_scan_init(tr_scan *sc, sqlite3 *db, const tr_export_opts *o, tr_error *err)
{
    memset(sc, 0, sizeof *sc);
    sc->db = db;
    sc->o = o;
    /* the metric the export shows; without --metric, tr_scan_metric() picks one of two */
    if (o->metric) {
        sc->sum_m[0] = (int)(o->metric - tr_export_metrics);
        sc->nsum = 1;
    } else {
        sc->sum_m[0] = TR_M_SELF_CPU;
        sc->sum_m[1] = TR_M_SELF_GPU;
        sc->nsum = 2;
    }
    tr_i64map_init(&sc->thread_map);
    tr_i64map_init(&sc->stream_map);
    tr_i64map_init(&sc->event_memo);
    tr_i64map_init(&sc->name_index);
    sc->cap = 1024;
    sc->nodes = calloc(sc->cap, sizeof *sc->nodes);
    if (!sc->nodes || hash_grow(sc) < 0)
        return nomem(err);
    sc->nnodes = 1;
    sc->nodes[0].match = -1;
    sc->nodes[0].name = strdup("all");
    if (!sc->nodes[0].name)
        return nomem(err);
    sc->nodes[0].name_len = 3;
    if (sqlite3_prepare_v2(db, "SELECT value FROM strings WHERE id = ?", -1, &sc->q_str, NULL)
        != SQLITE_OK)
        return dberr(sc, err, "strings");
    if (sqlite3_prepare_v2(db, "SELECT parent_id, kind, name_id, stack_id FROM events WHERE id = ?",
                           -1, &sc->q_event, NULL) != SQLITE_OK)
        return dberr(sc, err, "events");
    /* each of these is a scan of the whole events table: made only when the answer is used */
    if (o->has_time_range && !o->time_absolute)
        tr_scan_trace_start(sc);
    /* most run.dbs have no frames at all: then the join need not be looked at */
    sc->use_frames = o->source == TR_SRC_FRAMES
                     || (o->source == TR_SRC_AUTO
                         && scalar(db, "SELECT EXISTS(SELECT 1 FROM stack_nodes)", 0) != 0
                         && scalar(db, "SELECT EXISTS(SELECT 1 FROM events e JOIN stack_nodes s "
                                       "ON s.id = e.stack_id)", 0) != 0);
    tr_status st;
    if (sc->use_frames && (st = load_frames(sc, err)) != TR_OK)
        return st;
    size_t nthreads = (size_t)scalar(db, "SELECT count(*) FROM threads", 0);
    size_t nstreams = (size_t)scalar(db, "SELECT count(*) FROM streams", 0);
    sc->threads = calloc(nthreads + 1, sizeof *sc->threads);
    sc->streams = calloc(nstreams + 1, sizeof *sc->streams);
    if (!sc->threads || !sc->streams)
        return nomem(err);
    if (o->ranks.n) {
        sc->has_ranks = 1;   /* freed by tr_scan_free, even half loaded */
        if ((st = tr_rank_map_load(&sc->ranks, db, 0, &o->ranks, err)) != TR_OK)
            return st;
    }
    if ((st = load_ids(sc, "SELECT t.id, p.pid, t.tid FROM threads t "
                           "LEFT JOIN processes p ON p.id = t.process_id ORDER BY t.id",
                       &sc->thread_map, sc->threads, nthreads, &sc->nthreads, err)) != TR_OK
        || (st = load_ids(sc, "SELECT s.id, d.device, s.stream FROM streams s "
                              "LEFT JOIN devices d ON d.id = s.device_id ORDER BY s.id",
                          &sc->stream_map, sc->streams, nstreams, &sc->nstreams, err)) != TR_OK)
        return st;
    return TR_OK;
}

void tr_scan_free(tr_scan *sc)
{
    if (sc->o && sc->o->skipped)
        *sc->o->skipped += sc->nbad;
    if (sc->nodes)
        free(sc->nodes[0].name);   /* the root's "all"; the others are names' */
    for (size_t i = 0; i < sc->nnames; i++)
        free(sc->names[i]);
    free(sc->names);
    free(sc->name_lens);
    tr_i64map_free(&sc->name_index);
    free(sc->nodes);
    free(sc->hash);
    free(sc->frame_memo);
    free(sc->frame_parent);
    free(sc->frame_name);
    free(sc->frame_id);
    if (sc->frame_memo_map) {
        tr_i64map_free(sc->frame_memo_map);
        free(sc->frame_memo_map);
    }
    free(sc->open);
    tr_i64map_free(&sc->event_memo);
    free(sc->walk);
    free(sc->path);
    free(sc->threads);
    free(sc->streams);
    tr_i64map_free(&sc->thread_map);
    tr_i64map_free(&sc->stream_map);
    if (sc->has_ranks)
        tr_rank_map_free(&sc->ranks);
    sqlite3_finalize(sc->q_str);
    sqlite3_finalize(sc->q_event);
    memset(sc, 0, sizeof *sc);
}

int tr_scan_thread(const tr_scan *sc, int64_t thread_id, int64_t *pid, int64_t *tid)
{
    int64_t i;
    if (!tr_i64map_get(&sc->thread_map, thread_id, &i))
        return 0;
    *pid = sc->threads[i][0];
    *tid = sc->threads[i][1];
    return 1;
}

int tr_scan_stream(const tr_scan *sc, int64_t stream_id, int64_t *device, int64_t *stream)
{
    int64_t i;
    if (!tr_i64map_get(&sc->stream_map, stream_id, &i))
        return 0;
    *device = sc->streams[i][0];
    *stream = sc->streams[i][1];
    return 1;
}

/* The scan reads the events in table order, with the launching call of each GPU
 * activity read beside them (tr_idcur), and sorts them here: SQLite's sorter would carry every
 * column through its records and compare them as records, which costs more
 * than reading the table.  Rows are sorted a chunk at a time; the chunks go to
 * an unnamed temporary file and are merged, so memory stays bounded at any
 * event count. */
typedef struct {
    int64_t id, name_id, parent_id, stack_id, start, end, thread_id, stream_id;
    int64_t oth, os, oe;      /* thread, start, end of the row the event is ordered by */
    int64_t val[2];           /* the values of the metrics the export sums (sc->sum_m) */
    int kind;                 /* as node_child takes it */
    uint8_t on_gpu, vp, has_oth;
} srec;

#define SORT_CHUNK_BYTES ((size_t)64 << 20)
#define RUN_BUF 512   /* records read at a time from each sorted chunk */
#define SPILL_BUF ((size_t)1 << 20)   /* bytes written to the temporary file at a time */
#define RUN_BYTES ((size_t)64 << 10)  /* bytes read from it at a time, for each run */

/* The scan's order: thread (none first), start, end descending, then the ordering
 * event's id, so a GPU activity comes right after its launching call. */
static int srec_cmp(const srec *a, const srec *b)
{
    if (a->has_oth != b->has_oth)
        return a->has_oth ? 1 : -1;
    if (a->oth != b->oth)
        return a->oth < b->oth ? -1 : 1;
    if (a->os != b->os)
        return a->os < b->os ? -1 : 1;
    if (a->oe != b->oe)
        return a->oe > b->oe ? -1 : 1;
    int64_t ao = a->vp ? a->parent_id : a->id, bo = b->vp ? b->parent_id : b->id;
    if (ao != bo)
        return ao < bo ? -1 : 1;
    if (a->vp != b->vp)
        return a->vp < b->vp ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

/* Sorts a[0, n) by srec_cmp, b as scratch, bounds (n + 1 entries) for the runs: ascending
 * runs merged pairwise.  One thread's rows arrive as a few long runs (each source table
 * in start order), so this is a few passes where a general sort would be log2(n). */
static void run_sort(const srec **a, const srec **b, size_t *bounds, size_t n)
{
    if (n < 2)
        return;
    size_t nr = 0;
    bounds[0] = 0;
    for (size_t i = 1; i <= n; i++)
        if (i == n || srec_cmp(a[i - 1], a[i]) > 0)
            bounds[++nr] = i;
    const srec **src = a, **dst = b;
    while (nr > 1) {
        size_t w = 0;
        for (size_t r = 0; r < nr; r += 2) {
            size_t lo = bounds[r], mid = bounds[r + 1], hi = r + 2 <= nr ? bounds[r + 2] : mid;
            size_t x = lo, y = mid, o = lo;
            while (x < mid && y < hi)
                dst[o++] = srec_cmp(src[y], src[x]) < 0 ? src[y++] : src[x++];
            while (x < mid)
                dst[o++] = src[x++];
            while (y < hi)
                dst[o++] = src[y++];
            bounds[w++] = lo;
        }
        bounds[w] = n;
        nr = w;
        const srec **t = src;
        src = dst;
        dst = t;
    }
    if (src != a)
        memcpy(a, src, n * sizeof *a);
}

struct tbucket { int64_t oth; uint8_t has_oth; size_t n; };

static int cmp_bucket(const void *pa, const void *pb)
{
    const struct tbucket *a = pa, *b = pb;
    if (a->has_oth != b->has_oth)
        return a->has_oth ? 1 : -1;
    return (a->oth > b->oth) - (a->oth < b->oth);
}

typedef struct {
    srec *rows;               /* the chunk being filled */
    const srec **order;       /* its rows, sorted */
    const srec **scratch;     /* as large as order */
    size_t *bounds;           /* cap + 1 */
    size_t n, cap, at;
    size_t first;             /* rows of the first chunk (see sorter_plan) */
    int tmp;                  /* sorted chunks, one after another (rec_put); -1: none yet */
    unsigned char *wbuf;      /* what is not yet written of it */
    size_t wlen;
    off_t tmp_size;           /* bytes of the file, written or in wbuf */
    size_t nruns;
    /* a run in the file (its bytes [off, end)), or (mem) the last chunk, still in memory */
    struct srun {
        off_t off, end;
        size_t left, n, at;
        srec *buf;
        int mem;
        unsigned char *bytes;     /* read from the file, not yet decoded: [bpos, blen) */
        size_t bpos, blen;
        srec prev;                /* the record decoded last */
    } *runs;
    size_t *heap, nheap;
} sorter;

static void sorter_free(sorter *s)
{
    free(s->rows);
    free(s->order);
    free(s->scratch);
    free(s->bounds);
    if (s->tmp >= 0)
        close(s->tmp);
    free(s->wbuf);
    for (size_t i = 0; i < s->nruns; i++) {
        free(s->runs[i].buf);
        free(s->runs[i].bytes);
    }
    free(s->runs);
    free(s->heap);
    memset(s, 0, sizeof *s);
    s->tmp = -1;
}

/* The rows of the chunk in order: parted by thread (a stable counting sort over the
 * few threads), then each thread's rows sorted apart. */
static tr_status sorter_sort(sorter *s, tr_error *err)
{
    s->at = 0;
    tr_i64map idx;
    tr_i64map_init(&idx);
    struct tbucket *bk = NULL;
    size_t nb = 0, bcap = 0, nulls = SIZE_MAX;
    tr_status st = TR_OK;
    for (size_t i = 0; i < s->n && st == TR_OK; i++) {
        const srec *r = &s->rows[i];
        int64_t b;
        if (!r->has_oth ? nulls != SIZE_MAX : tr_i64map_get(&idx, r->oth, &b)) {
            bk[r->has_oth ? (size_t)b : nulls].n++;
            continue;
        }
        if (nb == bcap) {
            bcap = bcap ? bcap * 2 : 16;
            struct tbucket *nbk = realloc(bk, bcap * sizeof *nbk);
            if (!nbk) {
                st = nomem(err);
                break;
            }
            bk = nbk;
        }
        bk[nb] = (struct tbucket){r->oth, r->has_oth, 1};
        if (!r->has_oth)
            nulls = nb;
        else if (tr_i64map_put(&idx, r->oth, (int64_t)nb) < 0)
            st = nomem(err);
        nb++;
    }
    if (st == TR_OK) {
        if (nb > 1)   /* bk is NULL when the chunk is empty */
            qsort(bk, nb, sizeof *bk, cmp_bucket);
        /* the map now gives each thread's first slot */
        size_t at = 0;
        for (size_t b = 0; b < nb && st == TR_OK; b++) {
            if (!bk[b].has_oth)
                nulls = at;
            else if (tr_i64map_put(&idx, bk[b].oth, (int64_t)at) < 0)
                st = nomem(err);
            at += bk[b].n;
        }
    }
    if (st == TR_OK) {
        for (size_t i = 0; i < s->n; i++) {
            const srec *r = &s->rows[i];
            size_t pos;
            if (r->has_oth) {
                int64_t v;
                tr_i64map_get(&idx, r->oth, &v);
                pos = (size_t)v;
                tr_i64map_put(&idx, r->oth, v + 1);   /* present: cannot fail */
            } else {
                pos = nulls++;
            }
            s->scratch[pos] = r;
        }
        size_t lo = 0;
        for (size_t b = 0; b < nb; b++) {
            run_sort(s->scratch + lo, s->order + lo, s->bounds, bk[b].n);
            lo += bk[b].n;
        }
        const srec **t = s->order;
        s->order = s->scratch;
        s->scratch = t;
    }
    free(bk);
    tr_i64map_free(&idx);
    return st;
}

static tr_status tmp_fail(tr_error *err)
{
    return tr_fail(err, TR_ERR_RUNTIME, "cannot write the scan's temporary file: %s",
                   strerror(errno));
}

/* An unnamed file in $TMPDIR (else /tmp), as SQLite's own sorter would use: removed
 * as soon as it is made, so no signal or crash can leave it behind. */
static int scan_tmpfile(void)
{
    const char *dir = getenv("TMPDIR");
    char path[4096];
    if (!dir || !*dir)
        dir = "/tmp";
    if ((size_t)snprintf(path, sizeof path, "%s/tracekit-scan-XXXXXX", dir) >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = mkstemp(path);
    if (fd >= 0)
        unlink(path);
    return fd;
}

static int tmp_flush(sorter *s)
{
    for (size_t done = 0; done < s->wlen;) {
        ssize_t w = write(s->tmp, s->wbuf + done, s->wlen - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return -1;
        }
        done += (size_t)w;
    }
    s->wlen = 0;
    return 0;
}

/* Records go to the file as differences from the record before them in their
 * run, each a zigzag LEB128 varint: sorted by thread and start, most are one or
 * two bytes, and the file is a third of the records' size.  Differences wrap
 * (uint64_t), so every value round-trips. */
enum { REC_VALS = 14, REC_MAX = REC_VALS * 10 + 1 };

static void rec_vals(const srec *r, const srec *p, uint64_t v[REC_VALS])
{
#define D(a, b) ((uint64_t)(a) - (uint64_t)(b))
    v[0] = D(r->oth, p->oth);
    v[1] = D(r->os, p->os);
    v[2] = D(r->oe, r->os);
    v[3] = D(r->start, r->os);
    v[4] = D(r->end, r->start);
    v[5] = D(r->thread_id, r->oth);
    v[6] = D(r->id, p->id);
    v[7] = D(r->parent_id, r->id);
    v[8] = (uint64_t)r->name_id;
    v[9] = (uint64_t)r->stack_id;
    v[10] = (uint64_t)r->stream_id;
    v[11] = (uint64_t)r->val[0];
    v[12] = (uint64_t)r->val[1];
    v[13] = (uint64_t)(int64_t)r->kind;
#undef D
}

static void rec_from_vals(srec *r, const srec *p, const uint64_t v[REC_VALS])
{
    r->oth = (int64_t)((uint64_t)p->oth + v[0]);
    r->os = (int64_t)((uint64_t)p->os + v[1]);
    r->oe = (int64_t)((uint64_t)r->os + v[2]);
    r->start = (int64_t)((uint64_t)r->os + v[3]);
    r->end = (int64_t)((uint64_t)r->start + v[4]);
    r->thread_id = (int64_t)((uint64_t)r->oth + v[5]);
    r->id = (int64_t)((uint64_t)p->id + v[6]);
    r->parent_id = (int64_t)((uint64_t)r->id + v[7]);
    r->name_id = (int64_t)v[8];
    r->stack_id = (int64_t)v[9];
    r->stream_id = (int64_t)v[10];
    r->val[0] = (int64_t)v[11];
    r->val[1] = (int64_t)v[12];
    r->kind = (int)(int64_t)v[13];
}

/* The bytes of r after p into out (at most REC_MAX); their count. */
static size_t rec_put(unsigned char *out, const srec *r, const srec *p)
{
    uint64_t v[REC_VALS];
    rec_vals(r, p, v);
    size_t n = 0;
    for (int i = 0; i < REC_VALS; i++) {
        uint64_t z = (v[i] << 1) ^ ((uint64_t)0 - (v[i] >> 63));
        while (z >= 0x80) {
            out[n++] = (unsigned char)(z | 0x80);
            z >>= 7;
        }
        out[n++] = (unsigned char)z;
    }
    out[n++] = (unsigned char)(r->on_gpu | r->vp << 1 | r->has_oth << 2);
    return n;
}

/* The record after p from in[0, len) into r; the bytes used, 0 when they are not one. */
static size_t rec_get(const unsigned char *in, size_t len, srec *r, const srec *p)
{
    uint64_t v[REC_VALS];
    size_t n = 0;
    for (int i = 0; i < REC_VALS; i++) {
        uint64_t z = 0;
        for (unsigned shift = 0;; shift += 7) {
            if (n == len || shift > 63)
                return 0;
            unsigned char c = in[n++];
            z |= (uint64_t)(c & 0x7f) << shift;
            if (!(c & 0x80))
                break;
        }
        v[i] = (z >> 1) ^ ((uint64_t)0 - (z & 1));
    }
    if (n == len)
        return 0;
    unsigned char f = in[n++];
    memset(r, 0, sizeof *r);
    rec_from_vals(r, p, v);
    r->on_gpu = f & 1;
    r->vp = f >> 1 & 1;
    r->has_oth = f >> 2 & 1;
    return n;
}

/* The filled chunk, sorted, appended to the temporary file as one run. */
static tr_status sorter_spill(sorter *s, tr_error *err)
{
    if (s->tmp < 0) {
        /* a chunk is tens of MB: written in large pieces */
        if (!s->wbuf && !(s->wbuf = malloc(SPILL_BUF)))
            return nomem(err);
        if ((s->tmp = scan_tmpfile()) < 0)
            return tmp_fail(err);
    }
    struct srun *nr = realloc(s->runs, (s->nruns + 1) * sizeof *nr);
    if (!nr)
        return nomem(err);
    s->runs = nr;
    struct srun *run = &s->runs[s->nruns++];
    memset(run, 0, sizeof *run);
    run->off = s->tmp_size;
    run->left = s->n;
    tr_status st = sorter_sort(s, err);
    if (st != TR_OK)
        return st;
    srec zero;
    memset(&zero, 0, sizeof zero);
    const srec *prev = &zero;
    for (size_t i = 0; i < s->n; i++) {
        if (s->wlen + REC_MAX > SPILL_BUF && tmp_flush(s) < 0)
            return tmp_fail(err);
        size_t k = rec_put(s->wbuf + s->wlen, s->order[i], prev);
        s->wlen += k;
        s->tmp_size += (off_t)k;
        prev = s->order[i];
    }
    run->end = s->tmp_size;
    s->n = 0;
    return TR_OK;
}

/* Rows sorted in memory before a chunk goes to the temporary file.
 * TR_SCAN_CHUNK_ROWS (at least 16) makes it small, so that the tests run the
 * merge of many chunks on small traces. */
static size_t chunk_rows(void)
{
    static size_t rows;
    if (!rows) {
        const char *env = getenv("TR_SCAN_CHUNK_ROWS");
        long long v = env ? strtoll(env, NULL, 10) : 0;
        rows = v >= 16 ? (size_t)v : SORT_CHUNK_BYTES / sizeof(srec);
    }
    return rows;
}

/* All chunks but the last go to the temporary file, so the last is made a full
 * one: the first takes what is left over.  rows is an estimate from the ids (an
 * upper bound); when it is wrong, only the chunks' sizes are. */
static void sorter_plan(sorter *s, uint64_t rows)
{
    size_t max = chunk_rows();
    s->first = rows > max && rows % max ? (size_t)(rows % max) : max;
}

static tr_status sorter_add(sorter *s, const srec *r, tr_error *err)
{
    if (s->n == s->cap) {
        size_t max = s->nruns || !s->first ? chunk_rows() : s->first;
        if (s->cap >= max) {
            tr_status st = sorter_spill(s, err);
            if (st != TR_OK)
                return st;
        } else {
            size_t ncap = s->cap ? s->cap * 2 : 4096;
            ncap = ncap > max ? max : ncap;
            srec *nr = realloc(s->rows, ncap * sizeof *nr);
            if (!nr)
                return nomem(err);
            s->rows = nr;
            const srec **no = realloc(s->order, ncap * sizeof *no);
            if (!no)
                return nomem(err);
            s->order = no;
            if (!(no = realloc(s->scratch, ncap * sizeof *no)))
                return nomem(err);
            s->scratch = no;
            size_t *nb = realloc(s->bounds, (ncap + 1) * sizeof *nb);
            if (!nb)
                return nomem(err);
            s->bounds = nb;
            s->cap = ncap;
        }
    }
    s->rows[s->n++] = *r;
    return TR_OK;
}

static int run_less(const sorter *s, size_t a, size_t b)
{
    const struct srun *x = &s->runs[a], *y = &s->runs[b];
    return srec_cmp(&x->buf[x->at], &y->buf[y->at]) < 0;
}

static void heap_down(sorter *s, size_t i)
{
    for (;;) {
        size_t l = 2 * i + 1, m = i;
        if (l < s->nheap && run_less(s, s->heap[l], s->heap[m]))
            m = l;
        if (l + 1 < s->nheap && run_less(s, s->heap[l + 1], s->heap[m]))
            m = l + 1;
        if (m == i)
            return;
        size_t t = s->heap[i];
        s->heap[i] = s->heap[m];
        s->heap[m] = t;
        i = m;
    }
}

/* Refills a run's buffer; 0 when it is used up. */
static int run_fill(sorter *s, struct srun *r, tr_error *err, tr_status *st)
{
    if (!r->left)
        return 0;
    size_t n = r->left < RUN_BUF ? r->left : RUN_BUF;
    if (r->mem) {
        for (size_t i = 0; i < n; i++)
            r->buf[i] = *s->order[s->at++];
        r->left -= n;
        r->n = n;
        r->at = 0;
        return 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (r->blen - r->bpos < REC_MAX && r->off < r->end) {
            size_t keep = r->blen - r->bpos, want = RUN_BYTES - keep;
            memmove(r->bytes, r->bytes + r->bpos, keep);
            if ((uint64_t)(r->end - r->off) < want)
                want = (size_t)(r->end - r->off);
            ssize_t got = pread(s->tmp, r->bytes + keep, want, r->off);
            if (got != (ssize_t)want) {
                *st = tr_fail(err, TR_ERR_RUNTIME, "cannot read the scan's temporary file: %s",
                              got < 0 ? strerror(errno) : "short read");
                return 0;
            }
            r->off += (off_t)got;
            r->bpos = 0;
            r->blen = keep + want;
        }
        size_t used = rec_get(r->bytes + r->bpos, r->blen - r->bpos, &r->buf[i], &r->prev);
        if (!used) {
            *st = tr_fail(err, TR_ERR_RUNTIME, "cannot read the scan's temporary file: %s",
                          "bad record");
            return 0;
        }
        r->bpos += used;
        r->prev = r->buf[i];
    }
    r->left -= n;
    r->n = n;
    r->at = 0;
    return 1;
}

/* Ends the input: sorts what is held, or, once chunks were written, starts their merge. */
static tr_status sorter_finish(sorter *s, tr_error *err)
{
    if (!s->nruns)
        return sorter_sort(s, err);
    tr_status st = TR_OK;
    if (tmp_flush(s) < 0)
        return tmp_fail(err);
    if (s->n) {   /* the last chunk is merged from memory, not written */
        struct srun *nr = realloc(s->runs, (s->nruns + 1) * sizeof *nr);
        if (!nr)
            return nomem(err);
        s->runs = nr;
        if ((st = sorter_sort(s, err)) != TR_OK)
            return st;
        struct srun *run = &s->runs[s->nruns++];
        memset(run, 0, sizeof *run);
        run->left = s->n;
        run->mem = 1;
    }
    if (!(s->heap = malloc(s->nruns * sizeof *s->heap)))
        return nomem(err);
    for (size_t i = 0; i < s->nruns; i++) {
        if (!(s->runs[i].buf = malloc(RUN_BUF * sizeof(srec)))
            || (!s->runs[i].mem && !(s->runs[i].bytes = malloc(RUN_BYTES))))
            return nomem(err);
        if (run_fill(s, &s->runs[i], err, &st))
            s->heap[s->nheap++] = i;
        else if (st != TR_OK)
            return st;
    }
    for (size_t i = s->nheap / 2; i-- > 0;)
        heap_down(s, i);
    return TR_OK;
}

/* The next row in the scan's order; NULL at the end (or on a read error, in *st). */
static const srec *sorter_next(sorter *s, srec *tmp, tr_error *err, tr_status *st)
{
    if (!s->nruns)
        return s->at < s->n ? s->order[s->at++] : NULL;
    if (!s->nheap)
        return NULL;
    struct srun *r = &s->runs[s->heap[0]];
    *tmp = r->buf[r->at++];
    if (r->at == r->n && !run_fill(s, r, err, st)) {
        if (*st != TR_OK)
            return NULL;
        s->heap[0] = s->heap[--s->nheap];
    }
    heap_down(s, 0);
    return tmp;
}

/* NULL reads as 0, so only a 0 needs its type asked */
static int64_t col_or(sqlite3_stmt *st, int i, int64_t dflt)
{
    int64_t v = sqlite3_column_int64(st, i);
    return v == 0 && sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : v;
}

/* The kinds whose events run on a GPU (kinds.on_gpu), and which kinds exist: an event
 * of a kind the table lacks is not scanned. */
static tr_status load_kinds(tr_scan *sc, tr_i64map *kinds, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(sc->db, "SELECT id, on_gpu FROM kinds ORDER BY id", -1, &st, NULL)
        != SQLITE_OK)
        return dberr(sc, err, "kinds");
    tr_status status = TR_OK;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (tr_i64map_put(kinds, sqlite3_column_int64(st, 0), sqlite3_column_int(st, 1) != 0) < 0) {
            status = nomem(err);
            break;
        }
    }
    if (status == TR_OK && rc != SQLITE_DONE)
        status = dberr(sc, err, "kinds");
    sqlite3_finalize(st);
    return status;
}

/* Parents come in rising id order for long stretches (one source table's events,
 * the launches of one table's GPU work), so stepping a cursor forward is cheaper
 * than the seek per row a join makes; a jump back or far ahead seeks. */
#define IDCUR_STEPS 16

tr_status tr_idcur_open(tr_idcur *c, sqlite3 *db, const char *cols, tr_error *err)
{
    char sql[256];
    memset(c, 0, sizeof *c);
    snprintf(sql, sizeof sql, "SELECT id, %s FROM events WHERE id >= ?1 ORDER BY id", cols);
    if (sqlite3_prepare_v2(db, sql, -1, &c->q, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read table events: %s", tr_rundb_name(db),
                       sqlite3_errmsg(db));
    return TR_OK;
}

static void idcur_step(tr_idcur *c)
{
    int rc = sqlite3_step(c->q);
    c->at = rc == SQLITE_ROW;
    if (c->at)
        c->id = sqlite3_column_int64(c->q, 0);
    else if (rc != SQLITE_DONE)
        c->rc = rc;
}

int tr_idcur_find(tr_idcur *c, int64_t id)
{
    if (c->at && c->id <= id && (uint64_t)id - (uint64_t)c->id <= IDCUR_STEPS) {
        while (c->at && c->id < id)   /* ids rise: at most IDCUR_STEPS steps */
            idcur_step(c);
    } else {
        sqlite3_reset(c->q);
        sqlite3_bind_int64(c->q, 1, id);
        idcur_step(c);
    }
    return c->at && c->id == id;
}

void tr_idcur_close(tr_idcur *c)
{
    sqlite3_finalize(c->q);
    memset(c, 0, sizeof *c);
}

/* scan_read's state, for read_step(), which SQLite calls with each event's columns */
typedef struct {
    tr_scan *sc;
    sorter *so;
    tr_i64map kinds;
    tr_idcur lc;              /* each GPU activity's launching call */
    int mem;                  /* the memory columns are read */
    tr_xrow x;                /* the columns the metrics are read from */
    tr_status st;             /* the first failure, which stops the scan */
    tr_error *err;
} read_ctx;

enum { R_ID, R_KIND, R_NAME, R_PARENT, R_STACK, R_START, R_END, R_THREAD, R_STREAM, R_CPU_SELF,
       R_CPU_TOTAL, R_GPU_SELF, R_GPU_TOTAL, R_COLS, R_MEM_CPU = R_COLS, R_MEM_GPU, R_COLS_MEM };

/* An event's columns: the arguments SQLite hands read_step(), or the cells
 * decoded from run.db's pages (scan_read_pages). */
typedef struct {
    sqlite3_value **v;
    const tr_sql_cell *cells;
} read_cols;

static inline int64_t col_int(const read_cols *r, int i)
{
    return r->cells ? r->cells[i].i : sqlite3_value_int64(r->v[i]);
}

static inline int col_type(const read_cols *r, int i)
{
    return r->cells ? r->cells[i].type : sqlite3_value_type(r->v[i]);
}

/* NULL reads as 0, so only a 0 needs its type asked */
static int64_t val_or(const read_cols *r, int i, int64_t dflt)
{
    int64_t v = col_int(r, i);
    return v == 0 && col_type(r, i) == SQLITE_NULL ? dflt : v;
}

static tr_status read_row(read_ctx *c, const read_cols *v)
{
    tr_scan *sc = c->sc;
    int64_t on_gpu, kind = col_int(v, R_KIND);
    if (!tr_i64map_get(&c->kinds, kind, &on_gpu))
        return TR_OK;
    srec r;
    memset(&r, 0, sizeof r);
    tr_xrow *x = &c->x;
    r.kind = (int)kind;
    r.id = col_int(v, R_ID);
    r.name_id = col_int(v, R_NAME);
    r.parent_id = val_or(v, R_PARENT, -1);
    r.stack_id = val_or(v, R_STACK, -1);
    r.start = col_int(v, R_START);
    r.end = col_int(v, R_END);
    x->cpu_self = col_int(v, R_CPU_SELF);
    x->cpu_total = col_int(v, R_CPU_TOTAL);
    x->gpu_self = col_int(v, R_GPU_SELF);
    x->gpu_total = col_int(v, R_GPU_TOTAL);
    /* times no trace can hold would inflate every total: left out, and counted */
    if (!tr_times_ok(r.start, r.end) || !tr_ns_ok(x->cpu_self) || !tr_ns_ok(x->cpu_total)
        || !tr_ns_ok(x->gpu_self) || !tr_ns_ok(x->gpu_total)) {
        sc->nbad++;
        return TR_OK;
    }
    r.thread_id = val_or(v, R_THREAD, -1);
    int th_null = r.thread_id == -1 && col_type(v, R_THREAD) == SQLITE_NULL;
    r.stream_id = val_or(v, R_STREAM, -1);
    if (c->mem) {
        x->mem_cpu_self = col_int(v, R_MEM_CPU);
        x->mem_gpu_self = col_int(v, R_MEM_GPU);
    }
    r.on_gpu = on_gpu != 0;
    x->on_gpu = r.on_gpu;
    for (int k = 0; k < sc->nsum; k++)
        r.val[k] = tr_export_metrics[sc->sum_m[k]].value(x);
    /* a parent_id that is not an integer names no event (as a join on it finds none) */
    r.vp = r.on_gpu && col_type(v, R_PARENT) == SQLITE_INTEGER
           && tr_idcur_find(&c->lc, col_int(v, R_PARENT));
    if (c->lc.rc != SQLITE_OK)
        return dberr(sc, c->err, "events");
    if (r.vp) {
        sqlite3_stmt *q = c->lc.q;
        r.oth = col_or(q, 1, -1);
        r.has_oth = r.oth != -1 || sqlite3_column_type(q, 1) != SQLITE_NULL;
        r.os = sqlite3_column_int64(q, 2);
        r.oe = sqlite3_column_int64(q, 3);
    } else {
        r.has_oth = !th_null;
        r.oth = r.thread_id;
        r.os = r.start;
        r.oe = r.end;
    }
    return sorter_add(c->so, &r, c->err);
}

/* An aggregate of SQLite's that the events are handed to as arguments: read as
 * values, not through a sqlite3_column_* call each, which cost more than the rest
 * of the read.  A failure stops the statement. */
static void read_step(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    read_ctx *c = sqlite3_user_data(ctx);
    if (c->st == TR_OK && argc != (c->mem ? R_COLS_MEM : R_COLS))
        c->st = tr_fail(c->err, TR_ERR_RUNTIME, "internal error: the scan's row has %d columns", argc);
    read_cols cols = {argv, NULL};
    if (c->st == TR_OK)
        c->st = read_row(c, &cols);
    if (c->st != TR_OK)
        sqlite3_result_error(ctx, "the export scan stopped", -1);
}

static void read_final(sqlite3_context *ctx)
{
    sqlite3_result_null(ctx);
}

#define READ_FN "tr_export_scan_rows"

/* The columns of scan_read(), in R_* order. */
#define READ_COLS "id, kind, name_id, parent_id, stack_id, start_ns, end_ns, thread_id, stream_id, " \
                  "cpu_self_ns, cpu_total_ns, gpu_self_ns, gpu_total_ns"
#define READ_MEM_COLS ", cpu_mem_self, gpu_mem_self"

/* scan_read() from run.db's pages (lib/rundb_scan.h), on a helper thread: the
 * merged redispatches are left out here, not by SQL.  *done 0 where the rows
 * do not come from the pages. */
static tr_status scan_read_pages(read_ctx *c, int all, int *done)
{
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT " READ_COLS "%s, flags FROM events", c->mem ? READ_MEM_COLS : "");
    int ncols = (c->mem ? R_COLS_MEM : R_COLS) + 1;
    tr_rundb_scan p;
    tr_status st = tr_rundb_scan_start(&p, c->sc->db, sql, ncols, "events", 1, done, c->err);
    if (st != TR_OK || !*done)
        return st;
    read_cols cols = {NULL, NULL};
    int rc = 0;
    while (st == TR_OK && (cols.cells = tr_rundb_scan_next(&p, &rc, c->err)) != NULL)
        if (all || !(cols.cells[ncols - 1].i & TR_FLAG_MERGED))
            st = read_row(c, &cols);
    if (st == TR_OK && rc < 0)
        st = c->err->status;
    tr_rundb_scan_stop(&p);
    return st;
}

/* Reads every event (but the merged redispatches, unless all) into the sorter. */
static tr_status scan_read(tr_scan *sc, int all, sorter *so, tr_error *err)
{
    read_ctx c;
    memset(&c, 0, sizeof c);
    c.sc = sc;
    c.so = so;
    c.err = err;
    tr_i64map_init(&c.kinds);
    tr_status status = load_kinds(sc, &c.kinds, err);
    if (status != TR_OK) {
        tr_i64map_free(&c.kinds);
        return status;
    }
    /* the memory columns only for a memory metric: most traces have no memory events */
    for (int k = 0; k < sc->nsum; k++)
        c.mem |= sc->sum_m[k] == TR_M_SELF_CPU_MEM || sc->sum_m[k] == TR_M_SELF_GPU_MEM;
    /* ids are all but dense: their span tells the sorter about how many rows come */
    uint64_t span = (uint64_t)scalar(sc->db, "SELECT max(id) FROM events", 0)
                    - (uint64_t)scalar(sc->db, "SELECT min(id) FROM events", 0) + 1;
    sorter_plan(so, span);
    char sql[512];
    char where[64] = "";
    if (!all)
        snprintf(where, sizeof where, " WHERE (flags & %d) = 0", TR_FLAG_MERGED);
    snprintf(sql, sizeof sql, "SELECT " READ_FN "(" READ_COLS "%s) FROM events%s",
             c.mem ? READ_MEM_COLS : "", where);
    sqlite3_stmt *st = NULL;
    if ((status = tr_idcur_open(&c.lc, sc->db, "thread_id, start_ns, end_ns", err)) != TR_OK) {
        tr_i64map_free(&c.kinds);
        return status;
    }
    int done;
    status = scan_read_pages(&c, all, &done);
    if (status != TR_OK || done) {
        tr_idcur_close(&c.lc);
        tr_i64map_free(&c.kinds);
        return status;
    }
    /* SQLITE_DIRECTONLY: a run.db's own views and triggers cannot call it */
    if (sqlite3_create_function(sc->db, READ_FN, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, &c, NULL,
                                read_step, read_final) != SQLITE_OK)
        status = dberr(sc, err, "events");
    else if (sqlite3_prepare_v2(sc->db, sql, -1, &st, NULL) != SQLITE_OK)
        status = dberr(sc, err, "events");
    else {
        int rc;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW)
            ;
        if (c.st != TR_OK)
            status = c.st;   /* err says why */
        else if (rc != SQLITE_DONE)
            status = dberr(sc, err, "events");
    }
    sqlite3_finalize(st);
    /* the function knows c, which is about to go */
    sqlite3_create_function(sc->db, READ_FN, -1, SQLITE_UTF8 | SQLITE_DIRECTONLY, NULL, NULL, NULL, NULL);
    tr_idcur_close(&c.lc);
    tr_i64map_free(&c.kinds);
    return status;
}

static int row_selected(tr_scan *sc, const tr_xrow *r, int64_t oth, int has_oth)
{
    const tr_export_opts *o = sc->o;
    if (o->has_time_range) {
        int64_t t = o->time_absolute ? r->start : r->start - sc->trace_start;
        if (t < o->t_start || t >= o->t_end)
            return 0;
    }
    if (o->has_thread) {
        int64_t pid, tid;
        if (!has_oth || !tr_scan_thread(sc, oth, &pid, &tid) || tid != o->thread_tid)
            return 0;
    }
    if (sc->has_ranks && !tr_rank_map_ok(&sc->ranks, r->thread_id, r->stream_id))
        return 0;
    if (o->has_device && r->on_gpu) {
        int64_t dev, stream;
        if (!tr_scan_stream(sc, r->stream_id, &dev, &stream) || dev != o->device)
            return 0;
    }
    if (o->include_re || o->exclude_re) {
        int m = node_match(sc, r->node);
        if (o->include_re && !(m & 1))
            return 0;
        if (o->exclude_re && (m & 2))
            return 0;
    }
    return 1;
}

static int find_open(const tr_scan *sc, int64_t id)
{
    for (size_t i = sc->nopen; i-- > 0;)
        if (sc->open[i].id == id)
            return (int)i;
    return -1;
}

tr_status tr_scan_run(tr_scan *sc, int flags, tr_row_fn fn, void *ctx, tr_error *err)
{
    /* a redispatch merged into its parent op is part of that op's frame (docs/semantics.md);
     * the chrome trace, which shows every span, keeps it */
    sorter so;
    memset(&so, 0, sizeof so);
    so.tmp = -1;
    tr_status status = scan_read(sc, (flags & TR_SCAN_ALL) != 0, &so, err);
    if (status == TR_OK)
        status = sorter_finish(&so, err);
    int64_t cur_thread = 0;
    int have_thread = 0;
    tr_xrow r;
    srec tmp;
    const srec *s;
    while (status == TR_OK && (s = sorter_next(&so, &tmp, err, &status)) != NULL) {
        memset(&r, 0, sizeof r);
        r.id = s->id;
        r.kind = s->kind;
        r.name_id = s->name_id;
        r.parent_id = s->parent_id;
        r.stack_id = s->stack_id;
        r.start = s->start;
        r.end = s->end;
        r.thread_id = s->thread_id;
        r.stream_id = s->stream_id;
        r.on_gpu = s->on_gpu;
        r.via_parent = s->vp;
        int64_t oth = s->oth;
        int has_oth = s->has_oth;
        if (!has_oth || !have_thread || oth != cur_thread) {
            sc->nopen = 0;
            cur_thread = oth;
            have_thread = has_oth;
        }
        if (!r.via_parent) {
            /* close the events that ended before this one starts (zero-length ones stay
             * open for the events that start at the same instant) */
            while (sc->nopen > 0) {
                const tr_open *t = &sc->open[sc->nopen - 1];
                if (t->end < r.start || (t->end == r.start && t->end > t->start))
                    sc->nopen--;
                else
                    break;
            }
        }
        uint32_t parent_node = 0;
        int at = r.parent_id >= 0 ? find_open(sc, r.parent_id) : -1;
        if (sc->use_frames && r.stack_id >= 0)
            status = tr_scan_frames_node(sc, r.stack_id, &parent_node, err);
        else if (at >= 0)
            parent_node = sc->open[at].node;
        else if (r.parent_id >= 0)
            status = event_node(sc, r.parent_id, &parent_node, err);
        if (status != TR_OK
            || (status = node_child(sc, parent_node, r.name_id, s->kind, &r.node, err)) != TR_OK)
            break;
        r.launcher = r.via_parent && at >= 0 ? &sc->open[at] : NULL;
        r.selected = row_selected(sc, &r, oth, has_oth);
        if (r.selected) {
            tr_fnode *n = &sc->nodes[r.node];
            for (int k = 0; k < sc->nsum; k++)
                tr_sat_acc(&n->v[sc->sum_m[k]], s->val[k]);
        }
        if (fn && (status = fn(sc, &r, ctx, err)) != TR_OK)
            break;
        if (!r.via_parent && !r.on_gpu) {
            if (sc->nopen == sc->opencap) {
                size_t ncap = sc->opencap ? sc->opencap * 2 : 64;
                tr_open *no = realloc(sc->open, ncap * sizeof *no);
                if (!no) {
                    status = nomem(err);
                    break;
                }
                sc->open = no;
                sc->opencap = ncap;
            }
            sc->open[sc->nopen++] = (tr_open){r.id, r.start, r.end, r.thread_id, r.node, r.selected};
        }
    }
    sorter_free(&so);
    return status;
}

static tr_scan *sort_sc;

static int cmp_child(const void *a, const void *b)
{
    const tr_fnode *x = &sort_sc->nodes[*(const uint32_t *)a];
    const tr_fnode *y = &sort_sc->nodes[*(const uint32_t *)b];
    size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
    int c = memcmp(x->name, y->name, n);
    if (c)
        return c;
    if (x->name_len != y->name_len)
        return x->name_len < y->name_len ? -1 : 1;
    return (int)x->kind - (int)y->kind;
}

tr_status tr_scan_sort_children(tr_scan *sc, tr_error *err)
{
    size_t n = sc->nnodes;
    uint32_t *order = malloc((n ? n : 1) * sizeof *order);
    if (!order)
        return nomem(err);
    for (size_t i = 0; i < n; i++) {
        order[i] = (uint32_t)i;
        sc->nodes[i].first_child = sc->nodes[i].next_sibling = 0;
    }
    sort_sc = sc;
    if (n > 2)
        qsort(order + 1, n - 1, sizeof *order, cmp_child);
    sort_sc = NULL;
    /* link in reverse so each child list ends up in sorted order */
    for (size_t i = n; i-- > 1;) {
        tr_fnode *c = &sc->nodes[order[i]];
        c->next_sibling = sc->nodes[c->parent].first_child;
        sc->nodes[c->parent].first_child = order[i];
    }
    free(order);
    return TR_OK;
}

const tr_export_metric *tr_scan_metric(const tr_scan *sc)
{
    if (sc->o->metric)
        return sc->o->metric;
    int64_t cpu = 0, gpu = 0;
    for (size_t i = 0; i < sc->nnodes; i++) {
        tr_sat_acc(&cpu, sc->nodes[i].v[TR_M_SELF_CPU]);
        tr_sat_acc(&gpu, sc->nodes[i].v[TR_M_SELF_GPU]);
    }
    return &tr_export_metrics[cpu == 0 && gpu > 0 ? TR_M_SELF_GPU : TR_M_SELF_CPU];
}
