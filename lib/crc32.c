/* CRC-32 by folding: see crc32.h.  The method is Intel's "Fast CRC
 * Computation for Generic Polynomials Using PCLMULQDQ Instruction" (2009):
 * four 128-bit lanes are each multiplied forward by x^512 (mod P) and the
 * next 64 bytes added in; at the end the lanes fold into one, which a last
 * fold by x^64 and a Barrett reduction bring to 32 bits.  The constants are
 * those powers of x, and P and floor(x^64 / P), for the reflected
 * polynomial 0xEDB88320, bit-reflected as the data is. */
#include "lib/crc32.h"

#include <zlib.h>

/* zlib's, in pieces its 32-bit length takes. */
static uint32_t crc32_zlib(uint32_t crc, const unsigned char *p, size_t n)
{
    uLong c = crc;
    while (n) {
        uInt step = n > (1u << 30) ? 1u << 30 : (uInt)n;
        c = crc32(c, p, step);
        p += step;
        n -= step;
    }
    return (uint32_t)c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

#define K_512_LO 0x154442bd4ull   /* x^(4*128+32) mod P, x^(4*128-32) mod P, reflected */
#define K_512_HI 0x1c6e41596ull
#define K_128_LO 0x1751997d0ull   /* the same for 128 bits */
#define K_128_HI 0x0ccaa009eull
#define K_64 0x163cd6124ull       /* x^64 mod P */
#define P_REFLECTED 0x1db710641ull
#define MU_REFLECTED 0x1f7011641ull   /* floor(x^64 / P) */

#define FOLD(x, k, next) \
    _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), next)

static __attribute__((target("pclmul,sse2"))) __m128i load16(const unsigned char *p)
{
    return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* The CRC register (not inverted) after n bytes, n >= 64 and a multiple
 * of 16. */
static __attribute__((target("pclmul,sse2"))) uint32_t fold(uint32_t reg, const unsigned char *p, size_t n)
{
    __m128i x1 = _mm_xor_si128(load16(p), _mm_cvtsi32_si128((int)reg));
    __m128i x2 = load16(p + 16), x3 = load16(p + 32), x4 = load16(p + 48);
    p += 64;
    n -= 64;
    __m128i k = _mm_set_epi64x((long long)K_512_HI, (long long)K_512_LO);
    for (; n >= 64; p += 64, n -= 64) {
        x1 = FOLD(x1, k, load16(p));
        x2 = FOLD(x2, k, load16(p + 16));
        x3 = FOLD(x3, k, load16(p + 32));
        x4 = FOLD(x4, k, load16(p + 48));
    }
    k = _mm_set_epi64x((long long)K_128_HI, (long long)K_128_LO);
    x1 = FOLD(x1, k, x2);
    x1 = FOLD(x1, k, x3);
    x1 = FOLD(x1, k, x4);
    for (; n >= 16; p += 16, n -= 16)
        x1 = FOLD(x1, k, load16(p));
    /* 128 -> 64 bits (with 32 zero bits appended), then 64 -> 32 */
    x1 = _mm_xor_si128(_mm_srli_si128(x1, 8), _mm_clmulepi64_si128(k, x1, 0x01));
    const __m128i low32 = _mm_set_epi32(0, 0, 0, -1);
    __m128i high = _mm_srli_si128(x1, 4);
    x1 = _mm_xor_si128(_mm_clmulepi64_si128(_mm_and_si128(x1, low32), _mm_set_epi64x(0, (long long)K_64), 0x00),
                       high);
    /* Barrett: q = floor(x1 / P) from mu, then x1 - q * P */
    const __m128i pm = _mm_set_epi64x((long long)MU_REFLECTED, (long long)P_REFLECTED);
    __m128i q = _mm_clmulepi64_si128(_mm_and_si128(x1, low32), pm, 0x10);
    x1 = _mm_xor_si128(x1, _mm_clmulepi64_si128(_mm_and_si128(q, low32), pm, 0x00));
    return (uint32_t)_mm_cvtsi128_si32(_mm_srli_si128(x1, 4));
}

/* Asked once; threads that ask together all find the same answer. */
int tr_crc32_folds(void)
{
    static _Atomic int folds = -1;
    int f = folds;
    if (f < 0) {
        __builtin_cpu_init();
        folds = f = __builtin_cpu_supports("pclmul") != 0;   /* SSE2 is part of x86-64 */
    }
    return f;
}

uint32_t tr_crc32(uint32_t crc, const void *data, size_t n)
{
    const unsigned char *p = data;
    if (n >= 64 && tr_crc32_folds()) {
        size_t body = n & ~(size_t)15;
        crc = ~fold(~crc, p, body);
        p += body;
        n -= body;
    }
    return crc32_zlib(crc, p, n);
}

#else

int tr_crc32_folds(void)
{
    return 0;
}

uint32_t tr_crc32(uint32_t crc, const void *p, size_t n)
{
    return crc32_zlib(crc, p, n);
}

#endif
