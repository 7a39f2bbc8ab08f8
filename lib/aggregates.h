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
 * Ownership: reads the trace, writes through the caller's open transaction.
 */
#ifndef TR_LIB_AGGREGATES_H
#define TR_LIB_AGGREGATES_H

#include <sqlite3.h>

#include "lib/error.h"
#include "lib/model.h"

/* on_gpu of the row that counts (in `events`) the events left out for impossible times */
#define TR_AGG_SKIPPED 2

tr_status tr_aggregates_write(sqlite3 *db, const tr_trace *t, tr_error *err);

#endif
