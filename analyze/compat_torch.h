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
 * arrays; tr_torch_compat_free() releases them.  Memory is 9 bytes an event
 * id (17 while loading), and 32 more (48 while loading) when the trace has
 * memory events: the events are read from run.db in id order, once (twice
 * with memory events), and not held.
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

/* PyTorch's memory numbers of one host or memory event. */
typedef struct {
    int64_t cpu_mem, cpu_mem_self, gpu_mem, gpu_mem_self;
} tr_torch_mem;

typedef struct {
    /* an event's slot: id - base where the ids are dense, else its place in id order */
    int64_t base;
    size_t nslots;
    int sparse;
    tr_i64map slot_of;        /* sparse ids: id -> slot */
    uint8_t *state;           /* per slot: TORCH_* flags (compat_torch.c) */
    int64_t *cpu_self;        /* per slot */
    tr_torch_mem *mem;        /* per slot; NULL when the trace has no memory events */
} tr_torch_compat;

tr_status tr_torch_compat_load(sqlite3 *db, tr_torch_compat *tc, tr_error *err);
void tr_torch_compat_free(tr_torch_compat *tc);

/* PyTorch's metrics of event `id` into *out; 0 when it has none of its own (a
 * device activity, a merged op), and *out is then left alone.  *claimed tells
 * whether a memory event is counted in some host event (and so is no row of
 * its own). */
int tr_torch_compat_get(const tr_torch_compat *tc, int64_t id, tr_torch_metrics *out, int *claimed);

#endif
