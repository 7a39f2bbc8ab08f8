/*
 * radix.h - least-significant-byte-first radix sorts by a signed 64-bit key.
 *
 * qsort() calls its comparison through a pointer for every step; the --stats
 * durations and the covered host time's spans are arrays of 10^6 and more, where
 * that call is most of the time.  These sorts make one pass to count every byte
 * of every key, then one pass per byte in which the keys differ (most durations
 * share their high bytes), through a scratch array as large as the input.
 *
 * TR_RADIX_SORT_DEFINE(name, type, key) defines
 *     static int name(type *v, size_t n)
 * which sorts v ascending by the int64_t `key(element)` and returns 0, or -1
 * with v unchanged when the scratch array cannot be had (the caller then sorts
 * another way).  The sort is stable.
 */
#ifndef TR_ANALYZE_RADIX_H
#define TR_ANALYZE_RADIX_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The key's bits in an order that sorts as unsigned: the sign bit flipped. */
static inline uint64_t tr_radix_bits(int64_t k)
{
    return (uint64_t)k ^ ((uint64_t)1 << 63);
}

#define TR_RADIX_SORT_DEFINE(name, type, key)                                          \
    static int name(type *v, size_t n)                                                 \
    {                                                                                  \
        if (n < 2)                                                                     \
            return 0;                                                                  \
        type *tmp = malloc(n * sizeof *tmp);                                           \
        size_t(*count)[256] = calloc(8, sizeof *count);                                \
        if (!tmp || !count) {                                                          \
            free(tmp);                                                                 \
            free(count);                                                               \
            return -1;                                                                 \
        }                                                                              \
        for (size_t i = 0; i < n; i++) {                                               \
            uint64_t b = tr_radix_bits(key(v[i]));                                     \
            for (int d = 0; d < 8; d++)                                                \
                count[d][(b >> (8 * d)) & 0xff]++;                                     \
        }                                                                              \
        type *src = v, *dst = tmp;                                                     \
        for (int d = 0; d < 8; d++) {                                                  \
            uint64_t first = (tr_radix_bits(key(src[0])) >> (8 * d)) & 0xff;           \
            if (count[d][first] == n)                                                  \
                continue; /* every key has this byte: the pass would move nothing */   \
            size_t pos[256], at = 0;                                                   \
            for (int b = 0; b < 256; b++) {                                            \
                pos[b] = at;                                                           \
                at += count[d][b];                                                     \
            }                                                                          \
            for (size_t i = 0; i < n; i++)                                             \
                dst[pos[(tr_radix_bits(key(src[i])) >> (8 * d)) & 0xff]++] = src[i];   \
            type *t = src;                                                             \
            src = dst;                                                                 \
            dst = t;                                                                   \
        }                                                                              \
        if (src != v)                                                                  \
            memcpy(v, src, n * sizeof *v);                                             \
        free(tmp);                                                                     \
        free(count);                                                                   \
        return 0;                                                                      \
    }

#endif
