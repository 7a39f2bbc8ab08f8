/* The folded CRC-32 (lib/crc32.h) against zlib's crc32(): every length up
 * to 600 at every alignment of 16, starting values other than 0, a value
 * carried across calls split anywhere, buffers of many folds, the check
 * value, and inputs that stress the folding (all zeros, all ones). */
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/crc32.h"
#include "tests/unit/unit.h"

static void fill_random(unsigned char *b, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
        b[i] = (unsigned char)seed;
    }
}

static uint32_t zlib_crc(uint32_t crc, const unsigned char *p, size_t n)
{
    return (uint32_t)crc32(crc, p, (uInt)n);
}

static void test_crc32_as_zlib(void)
{
    enum { N = 1 << 20 };
    unsigned char *b = malloc(N + 16);
    CU_ASSERT_FATAL(b != NULL);
    fill_random(b, N + 16, 88172645463325252ull);
    static const uint32_t starts[] = {0, 1, 0x12345678u, 0xffffffffu};
    size_t differ = 0;
    for (size_t s = 0; s < sizeof starts / sizeof starts[0]; s++)
        for (size_t off = 0; off < 16; off++)
            for (size_t n = 0; n <= 600; n++)
                differ += tr_crc32(starts[s], b + off, n) != zlib_crc(starts[s], b + off, n);
    CU_ASSERT_EQUAL(differ, 0);
    /* many 64-byte folds, and lengths just past them */
    static const size_t lens[] = {4096, 4096 + 15, 65535, N - 1, N};
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
        CU_ASSERT_EQUAL(tr_crc32(0, b + 3, lens[i]), zlib_crc(0, b + 3, lens[i]));
    /* a running value carried across two calls, split anywhere */
    uint32_t whole = zlib_crc(0, b, 5000);
    for (size_t cut = 0; cut <= 5000; cut += 37)
        differ += tr_crc32(tr_crc32(0, b, cut), b + cut, 5000 - cut) != whole;
    CU_ASSERT_EQUAL(differ, 0);
    /* inputs with no randomness to hide a wrong constant behind */
    memset(b, 0, 4096);
    CU_ASSERT_EQUAL(tr_crc32(0, b, 4096), zlib_crc(0, b, 4096));
    memset(b, 0xff, 4096);
    CU_ASSERT_EQUAL(tr_crc32(0, b, 4096), zlib_crc(0, b, 4096));
    CU_ASSERT_EQUAL(tr_crc32(0, "123456789", 9), 0xcbf43926u);
    memcpy(b, "123456789", 9);
    for (int i = 1; i < 16; i++)
        memcpy(b + 9 * i, b, 9);
    CU_ASSERT_EQUAL(tr_crc32(0, b, 144), zlib_crc(0, b, 144));
    free(b);
}

/* Where the CPU has PCLMULQDQ (every x86-64 since 2010), the fold is what
 * the test above compared. */
static void test_crc32_folds_here(void)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    CU_ASSERT_EQUAL(tr_crc32_folds(), __builtin_cpu_supports("pclmul") != 0);
#else
    CU_ASSERT_EQUAL(tr_crc32_folds(), 0);
#endif
}

TR_SUITE(crc32, {"the same as zlib's crc32()", test_crc32_as_zlib},
         {"folds where the CPU can", test_crc32_folds_here})
