/*
 * checked.h - saturating and checked 64-bit arithmetic for values read from
 * files.  A run.db or trace may hold any int64 in a time or size column; sums
 * and differences of such values must neither overflow (undefined behaviour)
 * nor wrap into plausible-looking numbers, so they saturate at the int64
 * limits, and the readers reject single values no trace can hold.
 */
#ifndef TR_LIB_CHECKED_H
#define TR_LIB_CHECKED_H

#include <stdint.h>

/* The largest time span (ns) a trace can mean: about 146 years.  A duration
 * or total beyond it is a corrupted value, not a long run. */
#define TR_NS_SPAN_MAX ((int64_t)1 << 62)

/* The largest magnitude of a timestamp (ns): about 146 years either side of
 * the clock's origin.  Any two such times differ by less than INT64_MAX. */
#define TR_NS_TIME_MAX (((int64_t)1 << 62) - 1)

/* a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t tr_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* a - b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t tr_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/* *acc += v, saturating. */
static inline void tr_sat_acc(int64_t *acc, int64_t v)
{
    *acc = tr_sat_add(*acc, v);
}

/* 1 when end - start is a duration a trace can hold (0 <= end - start <= TR_NS_SPAN_MAX). */
static inline int tr_span_ok(int64_t start, int64_t end)
{
    int64_t d;
    return end >= start && !__builtin_sub_overflow(end, start, &d) && d <= TR_NS_SPAN_MAX;
}

/* 1 when start and end are timestamps a trace can hold, end not before start. */
static inline int tr_times_ok(int64_t start, int64_t end)
{
    return start >= -TR_NS_TIME_MAX && end <= TR_NS_TIME_MAX && end >= start;
}

/* 1 when v is a non-negative time a trace can hold. */
static inline int tr_ns_ok(int64_t v)
{
    return v >= 0 && v <= TR_NS_SPAN_MAX;
}

#endif
