/*
 * rng.h - the generators' random numbers: xorshift64*, so that the same seed
 * gives the same trace on every platform (the sample trace is checked byte for
 * byte).  Header-only; each generator keeps its own state.
 */
#ifndef TR_BENCH_RNG_H
#define TR_BENCH_RNG_H

#include <stdint.h>

/* A number in [0, n), advancing *state. */
static inline uint32_t bench_rnd(uint64_t *state, uint32_t n)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (uint32_t)((*state * 2685821657736338717ull) >> 33) % n;
}

#endif
