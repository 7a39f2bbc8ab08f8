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

/* The calls every rank made, as tr_clock_align() takes them. */
typedef struct {
    size_t nranks, ncalls;
    const int64_t *start, *end;
    const unsigned char *have;
} call_matrix;

/* The index of rank r's k-th call in the matrix's arrays. */
static size_t at(const call_matrix *m, size_t r, size_t k) { return r * m->ncalls + k; }

/* Each rank's first estimate: the median of the reference's end minus its own over
 * the calls both have.  d has room for ncalls values. */
static void median_offsets(const call_matrix *m, size_t ref, tr_clock_fit *fit, int64_t *d)
{
    for (size_t r = 0; r < m->nranks; r++) {
        tr_clock_fit *f = &fit[r];
        *f = (tr_clock_fit){0, 0, 0, r == ref, 0};
        if (r == ref)
            continue;
        size_t n = 0;
        for (size_t k = 0; k < m->ncalls; k++)
            if (m->have[at(m, ref, k)] && m->have[at(m, r, k)])
                d[n++] = sat_sub(m->end[at(m, ref, k)], m->end[at(m, r, k)]);
        f->used = n;
        f->refined = n > 0;
        f->offset = tr_median_i64(d, n);
    }
}

/* One pass of causality: aligned end(r) >= aligned start(q) for every q, and aligned
 * start(r) <= aligned end(q), on every call r has.  Moves each offset the least that
 * satisfies all, where one does; returns whether any moved. */
static int causal_pass(const call_matrix *m, size_t ref, tr_clock_fit *fit, int64_t *last_in,
                       int64_t *first_out)
{
    for (size_t k = 0; k < m->ncalls; k++) {
        last_in[k] = INT64_MIN;
        first_out[k] = INT64_MAX;
        for (size_t q = 0; q < m->nranks; q++) {
            if (!m->have[at(m, q, k)])
                continue;
            int64_t s = sat_add(m->start[at(m, q, k)], fit[q].offset);
            int64_t e = sat_add(m->end[at(m, q, k)], fit[q].offset);
            if (s > last_in[k])
                last_in[k] = s;
            if (e < first_out[k])
                first_out[k] = e;
        }
    }
    int moved = 0;
    for (size_t r = 0; r < m->nranks; r++) {
        if (r == ref || !fit[r].refined)
            continue;
        int64_t lo = INT64_MIN, hi = INT64_MAX;
        for (size_t k = 0; k < m->ncalls; k++) {
            if (!m->have[at(m, r, k)])
                continue;
            int64_t l = sat_sub(last_in[k], m->end[at(m, r, k)]);
            int64_t h = sat_sub(first_out[k], m->start[at(m, r, k)]);
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
    return moved;
}

/* Residuals: how far a rank's aligned ends stay from each call's median aligned end
 * (the median over its calls).  median_end has room for ncalls values, col for
 * nranks, d for ncalls. */
static void residuals(const call_matrix *m, tr_clock_fit *fit, int64_t *median_end, int64_t *col,
                      int64_t *d)
{
    for (size_t k = 0; k < m->ncalls; k++) {
        size_t n = 0;
        for (size_t q = 0; q < m->nranks; q++)
            if (m->have[at(m, q, k)])
                col[n++] = sat_add(m->end[at(m, q, k)], fit[q].offset);
        median_end[k] = tr_median_i64(col, n);
    }
    for (size_t r = 0; r < m->nranks; r++) {
        size_t n = 0;
        for (size_t k = 0; k < m->ncalls; k++)
            if (m->have[at(m, r, k)]) {
                int64_t x = sat_sub(sat_add(m->end[at(m, r, k)], fit[r].offset), median_end[k]);
                d[n++] = x < 0 ? (x == INT64_MIN ? INT64_MAX : -x) : x;
            }
        fit[r].residual = tr_median_i64(d, n);
    }
}

tr_status tr_clock_align(size_t nranks, size_t ncalls, const int64_t *start, const int64_t *end,
                         const unsigned char *have, size_t ref, tr_clock_fit *fit, tr_error *err)
{
    if (!nranks)
        return TR_OK;
    if (ref >= nranks)
        return tr_fail(err, TR_ERR_USAGE, "reference rank %zu of %zu", ref, nranks);
    const call_matrix m = {nranks, ncalls, start, end, have};
    size_t nc = ncalls ? ncalls : 1;
    int64_t *d = malloc(nc * sizeof *d);
    int64_t *last_in = malloc(nc * sizeof *last_in);
    int64_t *first_out = malloc(nc * sizeof *first_out);
    int64_t *col = malloc(nranks * sizeof *col);
    tr_status st = TR_OK;
    if (!d || !last_in || !first_out || !col) {
        st = tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    } else {
        median_offsets(&m, ref, fit, d);
        for (int pass = 0; pass < CAUSAL_PASSES && causal_pass(&m, ref, fit, last_in, first_out); pass++)
            ;
        residuals(&m, fit, first_out, col, d);
    }
    free(col);
    free(d);
    free(last_in);
    free(first_out);
    return st;
}
