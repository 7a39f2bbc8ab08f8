/*
 * scan.h - the ordered event scan and the frame tree shared by the writers
 * (internal to export/).
 *
 * The scan visits every event once, grouped by CPU thread in start order,
 * each GPU activity right after the API call that launched it.  A stack of
 * the open events on the current thread (bounded by the nesting depth) gives
 * each event its frame-tree node without keeping anything per event.
 *
 * Ownership: the frame tree owns its nodes and their names; tr_scan_free().
 */
#ifndef TR_EXPORT_SCAN_H
#define TR_EXPORT_SCAN_H

#include <sqlite3.h>
#include <stdint.h>

#include "export/export.h"
#include "lib/i64map.h"

#define TR_KIND_FRAME 0   /* node kind of a recorded source/Python/native frame */

typedef struct {
    uint32_t parent;          /* node index; node 0 is the root */
    uint32_t first_child, next_sibling;
    int64_t name_id;          /* strings.id (frames and events alike) */
    uint8_t kind;             /* tr_kind, or TR_KIND_FRAME */
    int8_t match;             /* -1 unknown, 0/1: the path matches --include; +2 if --exclude */
    char *name;               /* resolved name (raw, unescaped), owned by the scan's names */
    size_t name_len;
    int64_t v[TR_M_COUNT_];   /* metric sums of the selected events at exactly this stack
                               * (only of the metrics in tr_scan.sum_m; the others stay 0) */
    int64_t w;                /* drawn width (flamegraph) */
    int64_t x;                /* drawn offset (flamegraph) */
} tr_fnode;

/* A row as the metrics read it; tr_scan_run's callback gets it without the metric
 * columns (0: the scan sums them into the frame tree as it reads) and with the kind
 * as an int. */
struct tr_xrow {
    int64_t id, kind, name_id, parent_id, stack_id;   /* parent_id, stack_id: -1 when NULL */
    int64_t start, end, thread_id, stream_id;         /* thread_id, stream_id: -1 when NULL */
    int64_t cpu_self, cpu_total, gpu_self, gpu_total, mem_cpu_self, mem_gpu_self;
    int on_gpu;
    int via_parent;           /* a GPU activity ordered after its launching call */
    /* filled by the scan */
    uint32_t node;
    int selected;
    const struct tr_open *launcher;   /* the launching call, when on the stack */
};

typedef struct tr_open {
    int64_t id, start, end, thread_id;
    uint32_t node;
    int selected;
} tr_open;

typedef struct {
    sqlite3 *db;
    const tr_export_opts *o;
    int sum_m[2], nsum;       /* the metrics summed into the nodes: --metric, else self CPU and GPU */
    int use_frames;
    int64_t trace_start;      /* earliest event start (ns), 0 when empty: tr_scan_trace_start() */
    int has_trace_start;
    /* frame tree */
    tr_fnode *nodes;
    size_t nnodes, cap;
    /* each name once, whatever the number of nodes that bear it: strings.id ->
     * index in names (a huge name under a thousand stacks is still one copy) */
    tr_i64map name_index;
    char **names;
    size_t *name_lens;
    size_t nnames, names_cap;
    uint32_t *hash;           /* open addressing: node index + 1, 0 = empty */
    size_t hcap;
    /* stack_nodes id -> frame-tree node + 1 (0 = not yet made) */
    uint32_t *frame_memo;
    int64_t *frame_parent, *frame_name, *frame_id;
    size_t nframes;
    tr_i64map *frame_memo_map;    /* stack_nodes id -> row index */
    /* threads.id -> (pid, tid), streams.id -> (device, stream) */
    tr_i64map thread_map, stream_map;
    /* --rank: each event's rank (loaded only with --rank) */
    tr_rank_map ranks;
    int has_ranks;
    int64_t (*threads)[2], (*streams)[2];
    size_t nthreads, nstreams;
    /* open events of the current thread */
    tr_open *open;
    size_t nopen, opencap;
    /* parent walks: events.id -> frame-tree node, and the chain being walked */
    tr_i64map event_memo;
    struct tr_walk { int64_t id, name; int kind; } *walk;
    size_t nwalk, walkcap;
    uint32_t *path;           /* node_match's walk up the frame tree */
    size_t pathcap;
    /* events skipped for times no trace can hold (end before start, out of range) */
    size_t nbad;
    sqlite3_stmt *q_str, *q_event;
} tr_scan;

/* TR_SCAN_ALL: the merged redispatches too (TR_FLAG_MERGED), as the chrome trace shows them */
enum { TR_SCAN_ALL = 1 };

typedef tr_status (*tr_row_fn)(tr_scan *sc, tr_xrow *r, void *ctx, tr_error *err);

tr_status tr_scan_init(tr_scan *sc, sqlite3 *db, const tr_export_opts *o, tr_error *err);
/* Visits every event; r->node, r->selected and r->launcher are set before fn runs. */
tr_status tr_scan_run(tr_scan *sc, int flags, tr_row_fn fn, void *ctx, tr_error *err);
void tr_scan_free(tr_scan *sc);

/* The earliest start of an event with valid times (0 when none), read on first use
 * (a scan of the events table) and kept in sc->trace_start; --time-range relative to
 * it has it read by tr_scan_init. */
int64_t tr_scan_trace_start(tr_scan *sc);

/* Events found by id, read beside a scan of the events in id order: a cursor that
 * steps forward to the next id asked for, and seeks only when it must. */
typedef struct {
    sqlite3_stmt *q;          /* SELECT id, COLS FROM events WHERE id >= ?1 ORDER BY id */
    int at;                   /* q is on a row, whose id is id */
    int64_t id;
    int rc;                   /* the SQLite error a step met, SQLITE_OK while none */
} tr_idcur;

tr_status tr_idcur_open(tr_idcur *c, sqlite3 *db, const char *cols, tr_error *err);
/* 1 with c->q on the event of this id (its columns from 1 on); 0 when there is none. */
int tr_idcur_find(tr_idcur *c, int64_t id);
void tr_idcur_close(tr_idcur *c);

/* pid/tid of a threads.id, device/stream of a streams.id; 0 when unknown. */
int tr_scan_thread(const tr_scan *sc, int64_t thread_id, int64_t *pid, int64_t *tid);
int tr_scan_stream(const tr_scan *sc, int64_t stream_id, int64_t *device, int64_t *stream);

/* Frame-tree node of a stack_nodes id (0 = the root when it has no frames). */
tr_status tr_scan_frames_node(tr_scan *sc, int64_t stack_id, uint32_t *out, tr_error *err);

/* The metric to show: o->metric, else self_cpu, or self_gpu when the selection has GPU
 * time but no CPU time (call after the scan). */
const tr_export_metric *tr_scan_metric(const tr_scan *sc);

/* Name of a string id (empty string when missing); valid until the next call. */
const char *tr_scan_string(tr_scan *sc, int64_t id, size_t *len);

/* Writes the path of node idx (root excluded), outermost first, frames joined by
 * ';', each by put (which returns < 0 to stop); iterative, since a frame tree may
 * be as deep as the file is long.  -1 when put stopped or memory ran out. */
typedef int (*tr_frame_put_fn)(FILE *f, const char *name, size_t len, void *ctx);
int tr_scan_put_path(FILE *f, tr_scan *sc, uint32_t idx, tr_frame_put_fn put, void *ctx);

/* Children lists sorted by name (then kind) for deterministic output. */
tr_status tr_scan_sort_children(tr_scan *sc, tr_error *err);

#endif
