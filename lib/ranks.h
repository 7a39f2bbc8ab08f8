/*
 * ranks.h - the distributed rank of every event, and the --rank selection.
 *
 * A source's rank is the one stored in sources.rank (Kineto's
 * distributedInfo.rank, or trace-ingest --rank), else its position: base +
 * its order among the run.db's sources (0-based, by id).  base is 0 for one
 * run.db; with many run.dbs it is the number of sources in the run.dbs before
 * it on the command line, so one-source run.dbs without a rank take their
 * position in the argument list.  An event's rank is its thread's process's
 * source's, or for GPU work its stream's device's source's (docs/diff.md, Ranks).
 *
 * Ownership: tr_rank_set and tr_rank_map own their arrays; free them with
 * tr_rank_set_free() and tr_rank_map_free().
 */
#ifndef TR_LIB_RANKS_H
#define TR_LIB_RANKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/i64map.h"

/* --rank R[,R...] with ranges A-B; n == 0 selects every rank. */
typedef struct tr_rank_set {
    struct tr_rank_range { int64_t lo, hi; } *v;
    size_t n;
} tr_rank_set;

/* One rank ("3"): a whole number >= 0 of 64 bits; TR_ERR_USAGE saying why not. */
tr_status tr_rank_parse(const char *text, int64_t *rank, tr_error *err);
/* Adds the ranks of text ("0", "1,3", "0-3,8"); TR_ERR_USAGE on a bad list. */
tr_status tr_rank_set_parse(tr_rank_set *s, const char *text, tr_error *err);
int tr_rank_set_has(const tr_rank_set *s, int64_t rank);
void tr_rank_set_free(tr_rank_set *s);

/* One source of a run.db: its id, its rank (stored or from its position),
 * whether the rank was stored, and the world size its trace gives (0 = none). */
typedef struct {
    int64_t id, rank, world_size;
    int stored;
} tr_source_rank;

/* The sources of an open run.db, by id (an old run.db without sources.rank
 * has every rank from the position). */
tr_status tr_source_ranks_load(sqlite3 *db, int64_t base, tr_source_rank **out, size_t *n, tr_error *err);

/* Event -> rank for one open run.db, and whether a rank is selected. */
typedef struct tr_rank_map {
    tr_source_rank *src;
    size_t nsrc;
    tr_i64map thread_rank, stream_rank;   /* threads.id / streams.id -> rank */
    int64_t fallback;                      /* an event with neither: the first source's rank */
    const tr_rank_set *want;               /* NULL or empty: every rank */
    size_t nranks;                         /* distinct ranks of the sources */
} tr_rank_map;

tr_status tr_rank_map_load(tr_rank_map *m, sqlite3 *db, int64_t base, const tr_rank_set *want, tr_error *err);
void tr_rank_map_free(tr_rank_map *m);
/* The rank of an event: its thread (threads.id, < 0 for none), else its stream. */
int64_t tr_rank_map_event(const tr_rank_map *m, int64_t thread_row, int64_t stream_row);
/* Is the event's rank selected?  Always 1 without a selection. */
int tr_rank_map_ok(const tr_rank_map *m, int64_t thread_row, int64_t stream_row);
int64_t tr_rank_map_source(const tr_rank_map *m, int64_t source_id);
/* Does some source of the run.db have a selected rank? */
int tr_rank_map_any(const tr_rank_map *m);
/* "0, 1, 3" (ranges joined "4-7"): the distinct ranks of the sources, for messages. */
void tr_rank_map_describe(const tr_rank_map *m, char *buf, size_t size);

/* The checks of a set of inputs (the sources of one ingest, or the run.dbs of
 * one analysis; label names each source's input): one warning line each for a
 * rank two inputs claim, and, when the inputs hold more than one rank, for a
 * world size other than the number of ranks or ranks missing from 0..W-1. */
typedef void (*tr_rank_warn_fn)(void *ctx, const char *msg);
void tr_ranks_check(const tr_source_rank *v, const char *const *label, size_t n, tr_rank_warn_fn warn,
                    void *ctx);

/* Many run.dbs (names for messages): each one's base (the sources before it),
 * the warnings of tr_ranks_check, and TR_ERR_INPUT when want selects ranks and
 * no input holds any of them.  bases has n entries; with separate (--diff:
 * each run stands alone) every base is 0 and no rank is compared across runs. */
tr_status tr_ranks_prepare(const char *const *paths, const char *const *names, size_t n, int separate,
                           const tr_rank_set *want, int64_t *bases, tr_rank_warn_fn warn, void *ctx,
                           tr_error *err);

#endif
