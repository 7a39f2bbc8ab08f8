/*
 * tree.h - rebuilds the call tree of a trace and derives the per-event metrics.
 *
 * Rules (docs/semantics.md has the full statement and the edge cases):
 *  - CPU events nest per thread: the parent of e is the nearest open event p
 *    with p.start <= e.start < p.end and e.end <= p.end (half-open).  Partial
 *    overlaps are siblings; zero-length events are never parents; identical
 *    intervals nest in kind order (python, range, op, runtime, driver, sync, overhead,
 *    mark, memory), then input order.  Async events are not nested.
 *  - Of two partially overlapping events of a thread, or GPU activities of a
 *    stream, the shorter (at equal length the later) is flagged
 *    TR_FLAG_UNNESTED: without them each track's events nest strictly, as a
 *    viewer draws them (the tree is not changed).
 *  - cpu_self = duration minus the union of the children's intervals (>= 0).
 *  - A GPU activity's parent is the API call with its correlation id (same
 *    source).  Its duration is the gpu_self of the innermost range/op that
 *    encloses that call, or of the call itself when no range encloses it;
 *    gpu_total = gpu_self + the children's gpu_total.  Each activity is thus
 *    counted once per tree level.
 *  - An op whose parent is a same-named op with no other child is a
 *    redispatch (PyTorch's _remove_dup_nodes): flagged TR_FLAG_MERGED, out of
 *    the tree, under the op it merged into, with no metrics of its own.
 *  - Everything under a TR_FLAG_BACKWARD event b takes the stack of the first
 *    forward event with b's seq on b's forward thread (trace->backward), as
 *    PyTorch's _set_backward_stacktraces does.
 *  - A memory event belongs to the deepest event of its thread whose closed
 *    window [start, end] holds it (later start first at equal depth); it adds
 *    its bytes to that event's memory self and to every ancestor's memory
 *    totals (trace->mem, allocated only when the trace has memory events).
 *  - GPU time is never charged to a Python frame (not tr_kinds[].is_range).
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
