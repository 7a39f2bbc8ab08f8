/*
 * report_ranks.h - what the rank-aware reports (ranks, critical-path) share:
 * the ranks of one or several run databases and each rank's own
 * ProfilerStep#N windows, on that rank's own clock.
 *
 * A rank is one source: sources.rank, or, when the source has none, its
 * position (from 0) among all sources of all the run.dbs given, as
 * lib/collectives.h numbers them.  A rank's step window is the union of its
 * ProfilerStep#N ranges over its threads; a window ends where the rank's next
 * step begins, as the steps report cuts them.
 *
 * Ownership: a tr_rk_set owns its ranks, their paths and steps
 * (tr_rk_set_free()).
 */
#ifndef TR_ANALYZE_REPORT_RANKS_H
#define TR_ANALYZE_REPORT_RANKS_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/report.h"
#include "lib/error.h"

typedef struct {
    int64_t step, start, end;
} tr_rk_step;

typedef struct {
    size_t db;                 /* index into the dbs given to tr_rk_load() */
    int64_t source;            /* sources.id there */
    int64_t rank;
    int from_order;            /* the source has no rank: rank is its position */
    char *path;                /* sources.path */
    tr_rk_step *steps;         /* by start */
    size_t nsteps;
    int64_t span_start, span_end;   /* first start, last end of the rank's events (0, 0: none) */
} tr_rk_rank;

typedef struct {
    tr_rk_rank *v;             /* by rank, then db and source */
    size_t n;
    int duplicates;            /* two sources claim one rank */
} tr_rk_set;

/* Reads the sources and the step windows of every run.db (and, with
 * want_span, the span of the events of every rank, when some rank has no
 * steps). */
tr_status tr_rk_load(sqlite3 *const *dbs, size_t ndbs, int want_span, tr_rk_set *s, tr_error *err);
void tr_rk_set_free(tr_rk_set *s);
/* Keeps the ranks that --rank selects (all without it). */
void tr_rk_select(tr_rk_set *s, const tr_report_ctx *c);
/* The index in s->v of (db, source), or -1. */
long tr_rk_find(const tr_rk_set *s, size_t db, int64_t source);
/* The index of the step of rank r whose window holds t, or -1. */
long tr_rk_step_at(const tr_rk_rank *r, int64_t t);
/* With --step, is step number n selected?  (1 without --step.) */
int tr_rk_step_selected(const tr_report_ctx *c, int64_t n);

TR_REPORT_DECL(tr_report_ranks, tr_ranks_cols, tr_ranks_params);
TR_REPORT_DECL(tr_report_critpath, tr_critpath_cols, tr_critpath_params);

#endif
