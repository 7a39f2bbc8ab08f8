/*
 * compat_torch.h - PyTorch 1.13's own per-event numbers, defects included,
 * for `trace-analyze --compat torch` (docs/semantics.md, "differs from PyTorch").
 *
 * Where our stored metrics deliberately differ from PyTorch's, this computes
 * PyTorch's from the run.db's events:
 *  - self CPU time = duration minus the SUM of the children's durations
 *    (negative when children overlap), not minus their union;
 *  - memory: every allocation whose time t lies in an event's CLOSED window
 *    [start, end], on ANY thread, counts in that event's memory; self memory
 *    is that minus the children's; allocations in no CPU event's window are
 *    the only ones left as "[memory]" rows.
 *
 * Ownership: tr_torch_compat_load() fills a tr_torch_compat that owns its
 * arrays; tr_torch_compat_free() releases them.  Memory is linear in the
 * number of host events (this is the mode for matching PyTorch on its own
 * traces, not for 10^8-event runs).
 */
#ifndef TR_ANALYZE_COMPAT_TORCH_H
#define TR_ANALYZE_COMPAT_TORCH_H

#include <sqlite3.h>
#include <stdint.h>

#include "lib/error.h"
#include "lib/i64map.h"

typedef struct {
    int64_t cpu_self, cpu_mem, cpu_mem_self, gpu_mem, gpu_mem_self;
} tr_torch_metrics;

typedef struct {
    tr_i64map row;            /* event id -> index into m (host events, memory events) */
    tr_torch_metrics *m;
    uint8_t *claimed;         /* per row: a memory event inside some host event's window */
    size_t n;
} tr_torch_compat;

tr_status tr_torch_compat_load(sqlite3 *db, tr_torch_compat *tc, tr_error *err);
void tr_torch_compat_free(tr_torch_compat *tc);

/* PyTorch's metrics of event `id`, or NULL when it has none of its own
 * (a device activity).  *claimed tells whether a memory event is counted in
 * some host event (and so is no row of its own). */
const tr_torch_metrics *tr_torch_compat_get(const tr_torch_compat *tc, int64_t id, int *claimed);

#endif
