/* Large arrays in spill files (lib/spill.h): contents kept across every move
 * between the heap and a file, zeroed calloc, trimming that loses nothing,
 * and the size parser. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/spill.h"
#include "tests/unit/unit.h"

static int filled(const unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 4093)
        if (p[i] != (unsigned char)(i * 31 + seed))
            return 0;
    return 1;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
    for (size_t i = 0; i < n; i += 4093)
        p[i] = (unsigned char)(i * 31 + seed);
}

/* With a 16 MiB limit, a 4 MiB heap budget: the array starts on the heap,
 * moves to a file as it grows, grows and shrinks there, and keeps its bytes. */
static void test_spill_moves(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)16 << 20);
    size_t before = tr_spill_files();
    unsigned char *small = tr_spill_realloc(NULL, 0, 1000);
    CU_ASSERT_PTR_NOT_NULL_FATAL(small);
    CU_ASSERT_EQUAL(tr_spill_files(), before);   /* small: plain heap */
    CU_ASSERT_FALSE(tr_spill_in_file(small));
    size_t n = (size_t)2 << 20;
    unsigned char *p = tr_spill_realloc(NULL, 0, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fill(p, n, 7);
    for (int step = 0; step < 4; step++) {   /* 4, 8, 16, 32 MiB */
        unsigned char *q = tr_spill_realloc(p, n, n * 2);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT(filled(q, n, 7));
        p = q;
        n *= 2;
        fill(p, n, 7);
    }
    CU_ASSERT(tr_spill_files() > before);   /* past the budget: in a file */
    CU_ASSERT(tr_spill_in_file(p));
    CU_ASSERT_FALSE(tr_spill_in_file(NULL));
    tr_spill_poll();   /* trimming drops mapped pages, never data */
    CU_ASSERT(filled(p, n, 7));
    unsigned char *r = tr_spill_realloc(p, n, n / 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(r);
    CU_ASSERT(filled(r, n / 4, 7));
    tr_spill_free(r);
    tr_spill_free(small);
    tr_spill_free(NULL);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    tr_spill_set_dir(NULL);
}

/* Whether the mapping at p reads at random (VmFlags "rr" in /proc/self/smaps,
 * MADV_RANDOM); -1 when the mapping is not found. */
static int reads_at_random(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f)
        return -1;
    char line[512];
    int in = 0, found = -1;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (in && strncmp(line, "VmFlags:", 8) == 0)
            found = strstr(line, " rr") != NULL;
    }
    fclose(f);
    return found;
}

/* An array of the model's vectors is read in order: in a file, its mapping
 * reads ahead and maps around a fault; the others' map a page at a time.  A
 * phase can mark it either way, across moves; the bytes are kept. */
static void test_spill_sequential(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)16 << 20);
    size_t n = (size_t)8 << 20;   /* past the 4 MiB heap budget: in a file */
    unsigned char *seq = tr_spill_realloc_sequential(NULL, 0, n);
    unsigned char *rnd = tr_spill_realloc(NULL, 0, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(seq);
    CU_ASSERT_PTR_NOT_NULL_FATAL(rnd);
    fill(seq, n, 3);
    fill(rnd, n, 4);
    CU_ASSERT_EQUAL(reads_at_random(seq), 0);
    CU_ASSERT_EQUAL(reads_at_random(rnd), 1);
    tr_spill_set_sequential(seq, 0);
    CU_ASSERT_EQUAL(reads_at_random(seq), 1);
    unsigned char *grown = tr_spill_realloc_sequential(seq, n, 2 * n);   /* keeps its marking */
    CU_ASSERT_PTR_NOT_NULL_FATAL(grown);
    CU_ASSERT_EQUAL(reads_at_random(grown), 1);
    tr_spill_set_sequential(grown, 1);
    CU_ASSERT_EQUAL(reads_at_random(grown), 0);
    CU_ASSERT(filled(grown, n, 3));
    CU_ASSERT(filled(rnd, n, 4));
    tr_spill_set_sequential(NULL, 1);   /* not an array: nothing */
    tr_spill_free(grown);
    tr_spill_free(rnd);
    tr_spill_set_dir(NULL);
}

/* A heap array moves to a file just as the registry of arrays is full and
 * must grow: the move must not use the registry's old address. */
static void test_spill_move_full_registry(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)64 << 20);   /* 16 MiB of large arrays on the heap */
    size_t mib4 = (size_t)4 << 20;
    unsigned char *a[40];
    size_t n = 0;
    for (; n < 3; n++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(a[n] = tr_spill_realloc(NULL, 0, mib4));
        fill(a[n], mib4, (unsigned)n);
    }
    size_t before = tr_spill_files();
    for (int round = 0; round < 2; round++) {
        /* fill the registry to a power of two, then move a heap array */
        for (; n < (round ? 32u : 16u); n++)
            CU_ASSERT_PTR_NOT_NULL_FATAL(a[n] = tr_spill_realloc(NULL, 0, mib4));
        unsigned char *q = tr_spill_realloc(a[round], mib4, 3 * mib4);
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        CU_ASSERT(filled(q, mib4, (unsigned)round));
        a[round] = q;
    }
    CU_ASSERT(tr_spill_files() > before);
    CU_ASSERT(filled(a[2], mib4, 2));
    for (size_t i = 0; i < n; i++)
        tr_spill_free(a[i]);
    tr_spill_set_dir(NULL);
}

static void test_spill_calloc(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)8 << 20);
    size_t n = (size_t)24 << 20;
    uint32_t *a = tr_spill_calloc(n / 4, 4), *b = tr_spill_calloc(10, 4);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_PTR_NOT_NULL_FATAL(b);
    int zero = 1;
    for (size_t i = 0; i < n / 4; i += 1021)
        zero &= a[i] == 0;
    CU_ASSERT(zero);
    CU_ASSERT(b[9] == 0);
    CU_ASSERT_PTR_NULL(tr_spill_calloc(SIZE_MAX / 2, 4));   /* overflow */
    tr_spill_free(a);
    tr_spill_free(b);
    tr_spill_set_dir(NULL);
}

/* No spill file can be made: the array stays on the heap and works. */
static void test_spill_no_dir(void)
{
    tr_spill_set_dir("/nonexistent-spill-dir/x");
    tr_spill_set_limit((size_t)1 << 20);
    size_t before = tr_spill_files(), n = (size_t)8 << 20;
    unsigned char *p = tr_spill_calloc(n, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    fill(p, n, 3);
    unsigned char *q = tr_spill_realloc(p, n, 2 * n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT(filled(q, n, 3));
    tr_spill_free(q);
    tr_spill_set_dir(NULL);
}

static void test_spill_sizes(void)
{
    static const struct { const char *s; size_t v; } ok[] = {
        {"1", 1}, {"256M", (size_t)256 << 20}, {"4G", (size_t)4 << 30}, {"2GiB", (size_t)2 << 30},
        {"512k", 512 << 10}, {"100MB", (size_t)100 << 20}, {"7B", 7},
    };
    static const char *const bad[] = {"", "0", "M", "-1", "1.5G", "12x", "1MM", "99999999999999999999",
                                      "16777216T", " 1M"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        size_t v = 0;
        CU_ASSERT_EQUAL(tr_spill_parse_size(ok[i].s, &v), 0);
        CU_ASSERT_EQUAL(v, ok[i].v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        size_t v = 0;
        CU_ASSERT_EQUAL(tr_spill_parse_size(bad[i], &v), -1);
    }
}

typedef struct { uint32_t key, at; char pad[24]; } sort_item;

static int by_key(const void *pa, const void *pb)
{
    const sort_item *a = pa, *b = pb;
    return (a->key > b->key) - (a->key < b->key);
}

/* tr_spill_sort is stable and sorts, in a file or on the heap, for sizes
 * that end inside and at the edges of its runs of 32. */
static void test_spill_sort(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)1 << 20);   /* every large buffer in a file */
    static const size_t sizes[] = {0, 1, 2, 31, 32, 33, 64, 1000, 250007};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        size_t n = sizes[s];
        sort_item *v = tr_spill_calloc(n ? n : 1, sizeof *v);
        CU_ASSERT_PTR_NOT_NULL_FATAL(v);
        uint32_t x = 12345;
        for (size_t i = 0; i < n; i++) {
            x = x * 1103515245u + 12345u;
            v[i] = (sort_item){(x >> 16) % (n / 4 + 1), (uint32_t)i, {0}};   /* many ties */
        }
        tr_spill_sort(v, n, sizeof *v, by_key);
        int ok = 1;
        for (size_t i = 1; i < n; i++)
            ok &= v[i - 1].key < v[i].key || (v[i - 1].key == v[i].key && v[i - 1].at < v[i].at);
        CU_ASSERT(ok);
        tr_spill_free(v);
    }
    tr_spill_set_limit((size_t)256 << 20);
    tr_spill_set_dir(NULL);
}

/* With the default 256 MiB limit: the primary array stays on the heap up
 * to 96 MiB whatever the others hold of their 64 MiB, then moves to a file
 * with its bytes; another array of that size goes to a file at once.  Under
 * a limit below 240 MiB it shares the others' quarter. */
static void test_spill_primary(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)256 << 20);
    size_t before = tr_spill_files(), mib = (size_t)1 << 20;
    unsigned char *other = tr_spill_realloc(NULL, 0, 48 * mib);   /* the others' budget, mostly used */
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    fill(other, 48 * mib, 3);
    unsigned char *p = tr_spill_realloc_primary(NULL, 0, 32 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    fill(p, 32 * mib, 9);
    unsigned char *q = tr_spill_realloc_primary(p, 32 * mib, 96 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT(filled(q, 32 * mib, 9));
    CU_ASSERT_EQUAL(tr_spill_files(), before);   /* 96 MiB of primary, 48 of the others: all on the heap */
    unsigned char *big = tr_spill_realloc(NULL, 0, 32 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(big);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* not primary: past the others' budget */
    fill(q + 32 * mib, 64 * mib, 5);
    p = tr_spill_realloc_primary(q, 96 * mib, 104 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 2);   /* past its own budget: in a file */
    CU_ASSERT(filled(p, 32 * mib, 9));
    CU_ASSERT(filled(p + 32 * mib, 64 * mib, 5));   /* moved whole, its heap pages handed back as copied */
    CU_ASSERT(filled(other, 48 * mib, 3));
    /* the primary budget is free again: a new primary array is on the heap */
    q = tr_spill_realloc_primary(NULL, 0, 64 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 2);
    tr_spill_free(q);
    tr_spill_free(p);
    tr_spill_free(big);
    tr_spill_free(other);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    /* a 64 MiB limit: no budget of its own, the others' 16 MiB */
    tr_spill_set_limit((size_t)64 << 20);
    p = tr_spill_realloc_primary(NULL, 0, 12 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    other = tr_spill_realloc(NULL, 0, 8 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* 12 + 8 MiB: past the shared quarter */
    tr_spill_free(other);
    tr_spill_free(p);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    tr_spill_set_limit((size_t)256 << 20);
    tr_spill_set_dir(NULL);
}

/* While the primary array is in a file, the hash tables may use its heap
 * budget as well as the others' quarter; an ordinary array may not, and a
 * second primary array has what the tables leave of it.  With the primary's
 * file gone, a table has the quarter again. */
static void test_spill_table_budget(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)256 << 20);
    size_t before = tr_spill_files(), mib = (size_t)1 << 20;
    unsigned char *table = tr_spill_calloc_table(96 * mib, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* past the quarter: in a file */
    tr_spill_free(table);
    unsigned char *p = tr_spill_realloc_primary(NULL, 0, 160 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* past its own budget: in a file */
    table = tr_spill_calloc_table(96 * mib, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* on the heap, lent the primary's budget */
    CU_ASSERT(table[0] == 0 && table[48 * mib] == 0 && table[96 * mib - 1] == 0);
    unsigned char *other = tr_spill_calloc(32 * mib, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(other);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 2);   /* not a table: the quarter is used */
    unsigned char *q = tr_spill_realloc_primary(NULL, 0, 112 * mib);
    CU_ASSERT_PTR_NOT_NULL_FATAL(q);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 3);   /* 112 MiB > 128 - 32 lent */
    tr_spill_free(q);
    tr_spill_free(other);
    tr_spill_free(table);
    tr_spill_free(p);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    table = tr_spill_calloc_table(96 * mib, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(table);
    CU_ASSERT_EQUAL(tr_spill_files(), before + 1);   /* nothing lent any more */
    tr_spill_free(table);
    CU_ASSERT_EQUAL(tr_spill_files(), before);
    tr_spill_set_dir(NULL);
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* With an array in a file (so the checks run), a thread's polls read the
 * resident memory at most once per 100 us, and again once that has passed. */
static void test_spill_poll_gate(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)16 << 20);
    size_t n = (size_t)32 << 20;
    unsigned char *p = tr_spill_realloc(NULL, 0, n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_FATAL(tr_spill_in_file(p));
    usleep(300);
    size_t before = tr_spill_polls_read();
    double t0 = now_us();
    for (int i = 0; i < 20000; i++)
        tr_spill_poll();
    double spent = now_us() - t0;
    size_t reads = tr_spill_polls_read() - before;
    CU_ASSERT(reads >= 1);                            /* the first, past the gap */
    CU_ASSERT(reads <= (size_t)(spent / 100) + 1);    /* then one per 100 us at most */
    usleep(300);
    before = tr_spill_polls_read();
    tr_spill_poll();
    CU_ASSERT_EQUAL(tr_spill_polls_read() - before, 1);
    tr_spill_free(p);
    tr_spill_set_dir(NULL);
}

TR_SUITE(spill, {"an array moves from the heap to a file and keeps its bytes", test_spill_moves},
         {"arrays read in order map ahead, the others a page at a time", test_spill_sequential},
         {"a move while the registry grows", test_spill_move_full_registry},
         {"calloc is zeroed on the heap and in a file", test_spill_calloc},
         {"no spill directory: arrays stay on the heap", test_spill_no_dir},
         {"sizes: digits and a binary unit", test_spill_sizes},
         {"the sort is stable, in a file and on the heap", test_spill_sort},
         {"the primary array's heap budget of its own", test_spill_primary},
         {"hash tables borrow the budget of a primary array in a file", test_spill_table_budget},
         {"a thread reads its resident memory at most once per 100 us", test_spill_poll_gate})
