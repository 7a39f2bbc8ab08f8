/*
 * clock_align.c - clock offsets between ranks from matched collectives.
 */
#include "lib/clock_align.h"

#include <stdlib.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t tr_median_i64(int64_t *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_i64);
    return v[(n - 1) / 2];
}

static int64_t sat_sub(int64_t a, int64_t b)
{
    if (b < 0 && a > INT64_MAX + b)
        return INT64_MAX;
    if (b > 0 && a < INT64_MIN + b)
        return INT64_MIN;
    return a - b;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    return b == INT64_MIN ? (a >= 0 ? a + b : INT64_MIN) : sat_sub(a, -b);
}

/* Causality passes: each rank's offset is moved into the window every call
 * leaves it given the others' offsets; a few passes settle the chains
 * (r depends on q which depends on ref). */
#define CAUSAL_PASSES 4

tr_status tr_clock_align(size_t nranks, size_t ncalls, const int64_t *start, const int64_t *end,
                         const unsigned char *have, size_t ref, tr_clock_fit *fit, tr_error *err)
{
    if (!nranks)
        return TR_OK;
    if (ref >= nranks)
        return tr_fail(err, TR_ERR_USAGE, "reference rank %zu of %zu", ref, nranks);
    int64_t *d = malloc((ncalls ? ncalls : 1) * sizeof *d);
    int64_t *last_in = malloc((ncalls ? ncalls : 1) * sizeof *last_in);
    int64_t *first_out = malloc((ncalls ? ncalls : 1) * sizeof *first_out);
    if (!d || !last_in || !first_out) {
        free(d);
        free(last_in);
        free(first_out);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    for (size_t r = 0; r < nranks; r++) {
        tr_clock_fit *f = &fit[r];
        *f = (tr_clock_fit){0, 0, 0, r == ref, 0};
        if (r == ref)
            continue;
        size_t n = 0;
        for (size_t k = 0; k < ncalls; k++)
            if (have[ref * ncalls + k] && have[r * ncalls + k])
                d[n++] = sat_sub(end[ref * ncalls + k], end[r * ncalls + k]);
        f->used = n;
        f->refined = n > 0;
        f->offset = tr_median_i64(d, n);
    }
    /* causality: aligned end(r) >= aligned start(q) for every q, and aligned
     * start(r) <= aligned end(q), on every call r has */
    for (int pass = 0; pass < CAUSAL_PASSES; pass++) {
        int moved = 0;
        for (size_t k = 0; k < ncalls; k++) {
            last_in[k] = INT64_MIN;
            first_out[k] = INT64_MAX;
            for (size_t q = 0; q < nranks; q++) {
                if (!have[q * ncalls + k])
                    continue;
                int64_t s = sat_add(start[q * ncalls + k], fit[q].offset);
                int64_t e = sat_add(end[q * ncalls + k], fit[q].offset);
                if (s > last_in[k])
                    last_in[k] = s;
                if (e < first_out[k])
                    first_out[k] = e;
            }
        }
        for (size_t r = 0; r < nranks; r++) {
            if (r == ref || !fit[r].refined)
                continue;
            int64_t lo = INT64_MIN, hi = INT64_MAX;
            for (size_t k = 0; k < ncalls; k++) {
                if (!have[r * ncalls + k])
                    continue;
                int64_t l = sat_sub(last_in[k], end[r * ncalls + k]);
                int64_t h = sat_sub(first_out[k], start[r * ncalls + k]);
                /* r's own start/end are in last_in/first_out with its offset: only
                 * the others' bounds count, and r's own never bind (start <= end) */
                if (l > lo)
                    lo = l;
                if (h < hi)
                    hi = h;
            }
            if (lo > hi)
                continue;   /* no offset satisfies every call: the median stands */
            int64_t o = fit[r].offset < lo ? lo : fit[r].offset > hi ? hi : fit[r].offset;
            if (o != fit[r].offset) {
                fit[r].offset = o;
                fit[r].clamped = 1;
                moved = 1;
            }
        }
        if (!moved)
            break;
    }
    /* residual: how far a rank's aligned ends stay from the call's median end */
    int64_t *col = malloc((nranks ? nranks : 1) * sizeof *col);
    if (!col) {
        free(d);
        free(last_in);
        free(first_out);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    for (size_t k = 0; k < ncalls; k++) {
        size_t m = 0;
        for (size_t q = 0; q < nranks; q++)
            if (have[q * ncalls + k])
                col[m++] = sat_add(end[q * ncalls + k], fit[q].offset);
        first_out[k] = tr_median_i64(col, m);   /* reused: the call's median aligned end */
    }
    for (size_t r = 0; r < nranks; r++) {
        size_t n = 0;
        for (size_t k = 0; k < ncalls; k++)
            if (have[r * ncalls + k]) {
                int64_t x = sat_sub(sat_add(end[r * ncalls + k], fit[r].offset), first_out[k]);
                d[n++] = x < 0 ? (x == INT64_MIN ? INT64_MAX : -x) : x;
            }
        fit[r].residual = tr_median_i64(d, n);
    }
    free(col);
    free(d);
    free(last_in);
    free(first_out);
    return TR_OK;
}
