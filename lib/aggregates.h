/*
 * aggregates.h - the per-group totals trace-analyze's default tables read
 * instead of scanning every event (docs/schema.md, table `aggregates`).
 *
 * One row per (name, device or host, input shapes), over the events a table
 * counts: merged redispatches and memory events held by a host event are left
 * out, as analyze/summary.c leaves them out; events with impossible times are
 * counted in one row whose on_gpu is TR_AGG_SKIPPED instead.  Each row keeps the sums
 * of the stored per-event metrics and its first event in (start, -end, id)
 * order, so the tables built from it are byte-identical to a scan.
 *
 * The same rows again per tree path and recorded stack (tables stack_paths and
 * stack_aggregates) make trace-analyze --group-by-stack N a read of those rows:
 * a host event's path is (its parent's path, its own name) when the parent is
 * a host event that is not async, else the root; a device activity takes its
 * launching API call's own path, as analyze/summary.c's tree scan does.  The
 * two tables are dropped when they would hold more than a quarter as many rows
 * as there are events (analyze then scans).
 *
 * The rows are gathered (tr_aggregates_compute(), which only reads the trace,
 * so it can run on another thread while the caller writes) and then written
 * (tr_aggregates_insert()).
 *
 * Ownership: the caller frees what tr_aggregates_compute() made with
 * tr_aggregates_free(); the trace must not change in between.  Rows are
 * written through the caller's open transaction.
 */
#ifndef TR_LIB_AGGREGATES_H
#define TR_LIB_AGGREGATES_H

#include <sqlite3.h>

#include "lib/error.h"
#include "lib/model.h"

/* on_gpu of the row that counts (in `events`) the events left out for impossible times */
#define TR_AGG_SKIPPED 2

typedef struct tr_aggregates tr_aggregates;

tr_status tr_aggregates_compute(const tr_trace *t, tr_aggregates **out, tr_error *err);
tr_status tr_aggregates_insert(sqlite3 *db, const tr_aggregates *ag, tr_error *err);
void tr_aggregates_free(tr_aggregates *ag);

#endif
