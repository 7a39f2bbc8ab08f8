/*
 * collectives.h - NCCL/RCCL collective calls matched across ranks, and the
 * clock offsets that align every rank's clock to rank 0's.
 *
 * What a collective is: a GPU kernel whose name is an NCCL/RCCL kernel
 * (ncclKernel_*, ncclDevKernel_*, ncclKernel*, rcclKernel*; tr_coll_kernel_op()).
 * Its process group, collective name, sequence number, element counts and
 * dtype come from the run.db table `collectives` (written at ingest from
 * Kineto's record_param_comms / kernel args) when present; otherwise the op is
 * taken from the kernel name and the size is unknown.
 *
 * A rank is one source of one run.db: sources.rank, or, when the source has no
 * rank, its position among all sources of all the run.dbs given (docs/ranks.md).
 *
 * Matching: a call is (process group, op, n) where n is the call's order
 * among that rank's calls of the same group and op (by GPU start), or the
 * trace's own sequence number when every rank has one.  A call is "paired"
 * when every rank has it.
 *
 * Times: events keep each source's own clock in run.db.  offset_ns is what is
 * added to a rank's times to put them on the reference rank's clock (the lowest
 * rank with collectives, ref_rank; docs/ranks.md, "Clock alignment");
 * tr_coll_part.start/end are already aligned.
 *
 * Ownership: tr_coll_set owns every array and string in it; free it with
 * tr_coll_set_free().  The sqlite3 handles stay the caller's.
 */
#ifndef TR_LIB_COLLECTIVES_H
#define TR_LIB_COLLECTIVES_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/model.h"

/* Residual skew (ns) above which the alignment is reported as unreliable. */
#define TR_COLL_SKEW_WARN_NS 50000

/* How a rank's offset was found. */
typedef enum {
    TR_CLOCK_REFERENCE = 0,  /* the reference rank itself (offset 0) */
    TR_CLOCK_ANCHOR,         /* wall-clock anchors only (no collective to refine with) */
    TR_CLOCK_COLLECTIVES,    /* refined by the ends of matched collectives */
    TR_CLOCK_STORED          /* read from run.db's clock_offsets table, with a method we do not know */
} tr_clock_method;
const char *tr_clock_method_name(tr_clock_method m);   /* "reference", "anchor", "collectives", "stored" */

typedef struct {
    int64_t rank;            /* the distributed rank (or order, see above) */
    size_t db;               /* index into the dbs[] given to tr_coll_load() */
    int64_t source;          /* sources.id in that run.db */
    int64_t offset_ns;       /* aligned time = own time + offset_ns */
    int64_t anchor_ns;       /* the part of offset_ns from wall-clock anchors (0 when times are wall-clock) */
    int64_t residual_ns;     /* median |aligned end - reference end| over paired calls, after alignment */
    tr_clock_method method;
    int64_t ncalls;          /* collective kernels on this rank */
    int rank_from_order;     /* no rank in the source: rank is its position */
} tr_coll_rank;

/* One rank's part of a call: its collective kernel. */
typedef struct {
    int64_t event_id;        /* events.id in ranks[r].db; -1: this rank has no such call */
    int64_t start, end;      /* aligned ns */
    int64_t stream_id;       /* streams.id in that run.db, 0 = unknown */
} tr_coll_part;

typedef struct {
    char *pg;                /* process group name; "" when the trace does not say */
    char *op;                /* collective, normalised: "allreduce", "allgather", "reducescatter", ... */
    int64_t seq;             /* order within (pg, op) from 0, or the trace's sequence number */
    int64_t bytes;           /* message size in bytes (max of in/out), -1 unknown */
    int64_t in_nelems, out_nelems;   /* -1 unknown */
    char *dtype;             /* "" unknown */
    int64_t group_size;      /* -1 unknown */
    tr_coll_part *parts;     /* nranks entries, indexed like tr_coll_set.ranks */
    size_t present;          /* ranks that have it (== nranks, or == group_size: paired) */
    int64_t arrival_skew;    /* last aligned start - first aligned start (>= 0); over present ranks */
    size_t first_in, last_in;        /* rank indices of the earliest and latest start */
    size_t slowest;          /* rank index of the longest part (the rank that waited most) */
    int order_violation;     /* after alignment some rank ends before another starts */
} tr_coll_call;

typedef struct {
    tr_coll_rank *ranks;     /* by rank number ascending */
    size_t nranks;
    tr_coll_call *calls;     /* by aligned start of the earliest part */
    size_t ncalls;
    size_t paired;           /* calls on every rank, or on all of their group's (group_size) */
    int64_t ref_rank;        /* the reference clock's rank: the lowest rank with collectives */
    int offsets_stored;      /* the offsets are the run.db's clock_offsets (methods as found at ingest) */
    int64_t max_residual_ns; /* max of ranks[].residual_ns */
    int64_t order_violations;        /* calls with order_violation set */
    int duplicate_ranks;     /* two sources claimed the same rank (kept apart, warned) */
} tr_coll_set;

typedef struct {
    /* Use offsets stored in run.db (clock_offsets) when a single run.db holds
     * them all; otherwise compute them.  0: always compute. */
    int use_stored;
    /* Only these ranks (NULL: all), as tr_coll_restrict().  Offsets are still computed from all. */
    const int64_t *ranks;
    size_t nranks;
} tr_coll_opts;

/* Loads the collective kernels of every rank of every run.db (dbs in the
 * order given; a run.db may hold one or many ranks), matches them across
 * ranks and aligns the clocks.  A set with ncalls == 0 is not an error: the
 * caller says "no collectives".  opts may be NULL. */
tr_status tr_coll_load(sqlite3 *const *dbs, size_t ndbs, const tr_coll_opts *opts,
                       tr_coll_set *out, tr_error *err);
void tr_coll_set_free(tr_coll_set *s);

/* Ingest, after tr_tree_build(): rewrites t->comms (what the readers found on
 * any event) as one entry per collective kernel, each with the parameters of
 * the nearest event at or above it that carried some (the kernel itself, or
 * the record_param_comms op around its launch), and, when the trace holds
 * several sources with collectives, fills t->clock_offsets. */
tr_status tr_coll_ingest(tr_trace *t, tr_error *err);
/* Writes t->comms and t->clock_offsets into the collectives and clock_offsets
 * tables (lib/rundb.c calls it inside its transaction). */
tr_status tr_coll_write(sqlite3 *db, const tr_trace *t, tr_error *err);

/* Keeps the ranks for which keep(ctx, rank) is true (--rank): each call's parts,
 * skew, first/last in and causality are then over those ranks; calls none of
 * them has are dropped.  The offsets stay those computed from every rank. */
tr_status tr_coll_restrict(tr_coll_set *s, int (*keep)(void *ctx, int64_t rank), void *ctx, tr_error *err);

/* The rank index in s->ranks of (db index, sources.id), or -1. */
long tr_coll_rank_index(const tr_coll_set *s, size_t db, int64_t source);

/* The collective a kernel name stands for ("allreduce", ... or "nccl" for a
 * generic NCCL kernel), written into buf; 0 when the name is no collective. */
int tr_coll_kernel_op(const char *name, char *buf, size_t n);
/* A collective name from the trace ("all_reduce", "allreduce", "AllReduce",
 * "nccl:all_reduce", "_allgather_base") normalised as tr_coll_call.op. */
void tr_coll_normalize_op(const char *name, char *buf, size_t n);
/* Bytes per element of a dtype name ("Float", "float32", "BFloat16", "c10::Half", ...); 0 unknown. */
int tr_coll_dtype_size(const char *dtype);

#endif
