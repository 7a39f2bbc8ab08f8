/*
 * clock_align.h - the offsets that put several ranks' clocks on the reference
 * rank's clock, from collective calls matched across the ranks
 * (docs/ranks.md, "Clock alignment").
 *
 * A collective completes on all its ranks at nearly the same moment (the last
 * rank to arrive releases them all), so the end of one call on two ranks is
 * the same instant seen by two clocks.  The offset of rank r is the median over
 * calls of end(ref) - end(r): robust to the odd late kernel end.  It is then
 * kept within what causality allows: a collective cannot end on one rank
 * before it has started on another, so for every call and every pair of
 * ranks, aligned end(r) >= aligned start(q).  When the calls allow no offset
 * at all (their ends disagree more than their durations), the median stands
 * and the call is counted as a violation by the caller.
 *
 * Pure arithmetic over caller-owned arrays: no allocation beyond scratch.
 */
#ifndef TR_LIB_CLOCK_ALIGN_H
#define TR_LIB_CLOCK_ALIGN_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

typedef struct {
    int64_t offset;      /* add to the rank's times */
    int64_t residual;    /* median |aligned end - median aligned end of the call| over its calls */
    size_t used;         /* calls shared with the reference that the offset came from */
    int refined;         /* 1: from collectives; 0: no call shared with the reference, offset 0 */
    int clamped;         /* the median broke causality and was moved to the nearest allowed offset */
} tr_clock_fit;

/* start/end: nranks x ncalls (row r, column k at [r * ncalls + k]), each rank
 * on its own clock; have[r * ncalls + k] nonzero where rank r has call k.
 * ref: the reference rank (offset 0).  Fills fit[nranks]. */
tr_status tr_clock_align(size_t nranks, size_t ncalls, const int64_t *start, const int64_t *end,
                         const unsigned char *have, size_t ref, tr_clock_fit *fit, tr_error *err);

/* The median of v[0..n) (sorts v in place); 0 when n == 0.  The lower middle
 * for an even n, so the result is one of the values. */
int64_t tr_median_i64(int64_t *v, size_t n);

#endif
