/*
 * tree.h - rebuilds the call tree of a trace and derives the per-event metrics.
 *
 * Rules (docs/semantics.md has the full statement and the edge cases):
 *  - CPU events nest per thread: the parent of e is the nearest open event p
 *    with p.start <= e.start < p.end and e.end <= p.end (half-open).  Partial
 *    overlaps are siblings; zero-length events are never parents; identical
 *    intervals nest in kind order (python, range, op, runtime, driver, sync,
 *    mark, memory), then input order.  Async events are not nested.
 *  - cpu_self = duration minus the union of the children's intervals (>= 0).
 *  - A GPU activity's parent is the API call with its correlation id (same
 *    source).  Its duration is the gpu_self of the innermost range/op that
 *    encloses that call, or of the call itself when no range encloses it;
 *    gpu_total = gpu_self + the children's gpu_total.  Each activity is thus
 *    counted once per tree level.
 *  - Memory events add their bytes to every enclosing event's memory totals
 *    and to their direct parent's memory self (trace->mem, allocated only
 *    when the trace has memory events).
 *
 * Ownership: works in place on the trace; allocates only temporaries.
 */
#ifndef TR_LIB_TREE_H
#define TR_LIB_TREE_H

#include "lib/model.h"

tr_status tr_tree_build(tr_trace *t, tr_error *err);

/* The source id an event belongs to (through its thread or stream), 0 if none. */
uint32_t tr_event_source(const tr_trace *t, const tr_event *e);

#endif
