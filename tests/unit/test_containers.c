/* String interning, the int64 map, formatting. */
#include <stdio.h>
#include <string.h>

#include "lib/format.h"
#include "lib/i64map.h"
#include "lib/intern.h"
#include "lib/spill.h"
#include "tests/unit/unit.h"

static void test_intern(void)
{
    tr_intern t;
    tr_intern_init(&t);
    uint32_t a = tr_intern_cstr(&t, "alpha");
    uint32_t b = tr_intern_cstr(&t, "beta");
    CU_ASSERT(a != 0 && b != 0 && a != b);
    CU_ASSERT_EQUAL(tr_intern_cstr(&t, "alpha"), a);
    CU_ASSERT_EQUAL(tr_intern_add(&t, "al", 2), tr_intern_cstr(&t, "al"));
    CU_ASSERT_NOT_EQUAL(tr_intern_add(&t, "al", 2), a);
    char buf[32];
    for (int i = 0; i < 100000; i++) {
        snprintf(buf, sizeof buf, "s%d", i);
        tr_intern_cstr(&t, buf);
    }
    /* ids are handed out in order; after the table's rehashes (placed by home
     * slot, not by id) every string is still found under its own */
    int lost = 0;
    for (int i = 0; i < 100000; i++) {
        int len = snprintf(buf, sizeof buf, "s%d", i);
        lost += tr_intern_find(&t, buf, (size_t)len) != (uint32_t)(i + 4);
    }
    CU_ASSERT_EQUAL(lost, 0);
    CU_ASSERT_STRING_EQUAL(tr_intern_str(&t, a), "alpha");
    CU_ASSERT_EQUAL(tr_intern_find(&t, "s99999", 6), tr_intern_cstr(&t, "s99999"));
    CU_ASSERT_EQUAL(tr_intern_count(&t), 100003);
    CU_ASSERT_STRING_EQUAL(tr_intern_str(&t, 0), "");
    tr_intern_free(&t);
}

/* Without its index (dropped after the reads) the table still finds, adds
 * and keeps every id; the next add builds the index again. */
static void test_intern_drop_index(void)
{
    tr_intern t;
    tr_intern_init(&t);
    tr_intern_drop_index(&t);   /* empty: nothing to drop */
    char buf[32];
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(buf, sizeof buf, "s%d", i);
        tr_intern_add(&t, buf, (size_t)len);
    }
    tr_intern_drop_index(&t);
    CU_ASSERT_EQUAL(t.nslots, 0);
    CU_ASSERT_EQUAL(tr_intern_find(&t, "s4321", 5), 4322);
    CU_ASSERT_EQUAL(tr_intern_find(&t, "s5000", 5), 0);
    CU_ASSERT_STRING_EQUAL(tr_intern_str(&t, 10), "s9");
    CU_ASSERT_EQUAL(tr_intern_cstr(&t, "s17"), 18);   /* an old string: its id */
    CU_ASSERT(t.nslots >= 2 * 5000);
    CU_ASSERT_EQUAL(tr_intern_cstr(&t, "new"), 5001);
    int lost = 0;
    for (int i = 0; i < 5000; i++) {
        int len = snprintf(buf, sizeof buf, "s%d", i);
        lost += tr_intern_find(&t, buf, (size_t)len) != (uint32_t)(i + 1);
    }
    CU_ASSERT_EQUAL(lost, 0);
    tr_intern_free(&t);
}

/* Under a small memory limit the slots move into a spill file, where a new
 * string's slot is asked for writable before the probe: every id is still
 * handed out once and found again. */
static void test_intern_slots_in_file(void)
{
    tr_spill_set_dir(tr_unit_tmpdir());
    tr_spill_set_limit((size_t)8 << 20);   /* 2 MiB of large arrays on the heap */
    tr_intern t;
    tr_intern_init(&t);
    char buf[32];
    int n = 1 << 21, wrong = 0;
    for (int i = 0; i < n; i++) {
        int len = snprintf(buf, sizeof buf, "k%d", i);
        wrong += tr_intern_add(&t, buf, (size_t)len) != (uint32_t)(i + 1);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(t.slots_in_file);
    CU_ASSERT(tr_spill_in_file(t.slots));
    for (int i = 0; i < n; i += 7) {
        int len = snprintf(buf, sizeof buf, "k%d", i);
        wrong += tr_intern_add(&t, buf, (size_t)len) != (uint32_t)(i + 1);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(tr_intern_count(&t), (size_t)n);
    tr_intern_free(&t);
    tr_intern_init(&t);
    CU_ASSERT_EQUAL(tr_intern_cstr(&t, "small"), 1);
    CU_ASSERT_FALSE(t.slots_in_file);   /* 2048 slots: plain heap */
    tr_intern_free(&t);
    tr_spill_set_limit(TR_SPILL_DEFAULT_LIMIT);
    tr_spill_set_dir(NULL);
}

/* Batches of new, repeated and in-batch duplicate strings, of every size up
 * to TR_INTERN_MANY, some added one at a time, across many growths of the
 * table and after its index is dropped: each id is the one tr_intern_add()
 * gives for the same sequence. */
static void test_intern_add_many(void)
{
    tr_intern one, many;
    tr_intern_init(&one);
    tr_intern_init(&many);
    char text[TR_INTERN_MANY][24];
    const char *s[TR_INTERN_MANY];
    uint32_t len[TR_INTERN_MANY], ids[TR_INTERN_MANY];
    unsigned seed = 12345, wrong = 0, batches = 0;
    CU_ASSERT_EQUAL(tr_intern_add_many(&many, 0, s, len, ids), 0);   /* nothing, no table */
    CU_ASSERT_EQUAL(tr_intern_count(&many), 0);
    for (size_t total = 0; total < 300000; batches++) {
        size_t n = batches % (TR_INTERN_MANY + 1);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            /* one in four repeats an earlier string, some within the batch */
            unsigned k = (seed >> 8) % 4 == 0 ? (seed >> 12) % (unsigned)(total + 1) : (unsigned)(total + i);
            len[i] = (uint32_t)snprintf(text[i], sizeof text[i], "s%u", k);
            s[i] = text[i];
        }
        total += n;
        if (batches == 700) {
            tr_intern_drop_index(&one);
            tr_intern_drop_index(&many);
        }
        if (batches % 5 == 4) {   /* the two ways into one table */
            for (size_t i = 0; i < n; i++)
                ids[i] = tr_intern_add(&many, s[i], len[i]);
        } else if (tr_intern_add_many(&many, n, s, len, ids) != 0) {
            wrong++;
            break;
        }
        for (size_t i = 0; i < n; i++)
            wrong += tr_intern_add(&one, s[i], len[i]) != ids[i];
    }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT(tr_intern_count(&many) > 200000);
    CU_ASSERT_EQUAL(tr_intern_count(&many), tr_intern_count(&one));
    for (size_t id = 1; id <= tr_intern_count(&many); id += 97)
        wrong += strcmp(tr_intern_str(&many, (uint32_t)id), tr_intern_str(&one, (uint32_t)id)) != 0;
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_EQUAL(tr_intern_add_many(&many, TR_INTERN_MANY + 1, s, len, ids), -1);
    tr_intern_free(&one);
    tr_intern_free(&many);
}

/* The hash reads eight bytes a step, then the tail: strings that differ only
 * past a word boundary, by length, or after a NUL must stay distinct, and every
 * id must still be found after the table has grown many times. */
static void test_intern_words(void)
{
    tr_intern t;
    tr_intern_init(&t);
    static const struct { const char *s; size_t len; } keys[] = {
        {"", 0}, {"a", 1}, {"a\0", 2}, {"a\0b", 3}, {"abcdefgh", 8}, {"abcdefghi", 9},
        {"abcdefgh\0", 9}, {"abcdefghabcdefgh", 16}, {"abcdefghabcdefgX", 16},
        {"Xbcdefghabcdefgh", 16}, {"abcdefghabcdefgh1", 17},
    };
    enum { NKEYS = sizeof keys / sizeof keys[0] };
    uint32_t id[NKEYS];
    for (size_t i = 0; i < NKEYS; i++) {
        id[i] = tr_intern_add(&t, keys[i].s, keys[i].len);
        CU_ASSERT_EQUAL(id[i], (uint32_t)i + 1);
    }
    char buf[64];
    /* 3x10^5 strings: some pairs share a 32-bit hash, so the byte comparison is tested too */
    int wrong = 0;
    for (int i = 0; i < 300000; i++) {
        int n = snprintf(buf, sizeof buf, "aten::op_with_a_long_name_%d, seq = %d", i % 977, i);
        wrong += tr_intern_add(&t, buf, (size_t)n) != (uint32_t)(NKEYS + 1 + i);
    }
    CU_ASSERT_EQUAL(wrong, 0);
    for (size_t i = 0; i < NKEYS; i++) {
        CU_ASSERT_EQUAL(tr_intern_find(&t, keys[i].s, keys[i].len), id[i]);
        CU_ASSERT_EQUAL(t.entries[id[i]].len, keys[i].len);
    }
    int n = snprintf(buf, sizeof buf, "aten::op_with_a_long_name_%d, seq = %d", 12345 % 977, 12345);
    CU_ASSERT_EQUAL(tr_intern_find(&t, buf, (size_t)n), (uint32_t)(NKEYS + 1 + 12345));
    CU_ASSERT_EQUAL(tr_intern_find(&t, buf, (size_t)n - 1), 0);
    tr_intern_free(&t);
}

static void test_i64map(void)
{
    tr_i64map m;
    tr_i64map_init(&m);
    for (int64_t k = -5000; k < 5000; k++)
        CU_ASSERT_EQUAL(tr_i64map_put(&m, k * 7919, k), 0);
    int64_t v;
    CU_ASSERT(tr_i64map_get(&m, 7919 * 42, &v) && v == 42);
    for (int64_t k = -5000; k < 5000; k += 2)
        CU_ASSERT(tr_i64map_del(&m, k * 7919));
    int ok = 1;
    for (int64_t k = -5000; k < 5000; k++) {
        int found = tr_i64map_get(&m, k * 7919, &v);
        if (found != (k % 2 != 0) || (found && v != k))
            ok = 0;
    }
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(m.n, 5000);
    CU_ASSERT_FALSE(tr_i64map_del(&m, 1));
    tr_i64map_free(&m);
}

static void test_format(void)
{
    char b[64];
    tr_fmt_time(b, sizeof b, 340.0, TR_UNIT_AUTO);
    CU_ASSERT_STRING_EQUAL(b, "340.000us");
    tr_fmt_time(b, sizeof b, 1045.0, TR_UNIT_AUTO);
    CU_ASSERT_STRING_EQUAL(b, "1.045ms");
    tr_fmt_time(b, sizeof b, 999.9995, TR_UNIT_AUTO);
    CU_ASSERT_STRING_EQUAL(b, "1000.000us");   /* threshold tested before rounding */
    tr_fmt_time(b, sizeof b, 2.5e6, TR_UNIT_AUTO);
    CU_ASSERT_STRING_EQUAL(b, "2.500s");
    tr_fmt_time(b, sizeof b, -5000.0, TR_UNIT_AUTO);
    CU_ASSERT_STRING_EQUAL(b, "-5000.000us");
    tr_fmt_time(b, sizeof b, 1500.0, TR_UNIT_US);
    CU_ASSERT_STRING_EQUAL(b, "1500.000us");
    tr_fmt_share(b, sizeof b, 340.0, 1045.0);
    CU_ASSERT_STRING_EQUAL(b, "32.54%");
    tr_fmt_share(b, sizeof b, 0, 0);
    CU_ASSERT_STRING_EQUAL(b, "NaN");
    tr_fmt_mem(b, sizeof b, -16384);
    CU_ASSERT_STRING_EQUAL(b, "-16.00 Kb");
    tr_fmt_mem(b, sizeof b, 0);
    CU_ASSERT_STRING_EQUAL(b, "0 b");
    tr_fmt_mem(b, sizeof b, 3ll << 30);
    CU_ASSERT_STRING_EQUAL(b, "3.00 Gb");
    CU_ASSERT_EQUAL(tr_utf8_len("h\xc3\xa9llo", 6), 5);
    CU_ASSERT_EQUAL(tr_utf8_prefix("h\xc3\xa9llo", 6, 2), 3);
}

TR_SUITE(containers,
         {"string interning", test_intern},
         {"string interning: word boundaries, NULs, growth", test_intern_words},
         {"string interning without its index", test_intern_drop_index},
         {"string interning a batch at a time: the ids one at a time gives", test_intern_add_many},
         {"string interning with its slots in a spill file", test_intern_slots_in_file},
         {"int64 map with deletion", test_i64map},
         {"PyTorch number formats", test_format})
