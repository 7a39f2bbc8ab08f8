/* "Did you mean": the edit distance and which candidate is close enough. */
#include <string.h>

#include "lib/suggest.h"
#include "tests/unit/unit.h"

static size_t dist(const char *a, const char *b, size_t cap)
{
    return tr_edit_distance(a, strlen(a), b, strlen(b), cap);
}

static void test_distance(void)
{
    CU_ASSERT_EQUAL(dist("kernel", "kernel", 3), 0);
    CU_ASSERT_EQUAL(dist("kernal", "kernel", 3), 1);
    CU_ASSERT_EQUAL(dist("kenrel", "kernel", 3), 1);          /* a swap is one edit */
    CU_ASSERT_EQUAL(dist("KERNEL", "kernel", 3), 0);          /* case does not count */
    CU_ASSERT_EQUAL(dist("", "abc", 3), 3);
    CU_ASSERT_EQUAL(dist("abcdefgh", "zzzzzzzz", 3), 4);      /* capped at cap + 1 */
    CU_ASSERT_EQUAL(dist("a", "abcdefgh", 3), 4);
}

static void hint_is(const char *word, const char *list, const char *want)
{
    char buf[128];
    tr_suggest_hint(buf, sizeof buf, word, strlen(word), list);
    CU_ASSERT_STRING_EQUAL(buf, want);
}

static void test_hint(void)
{
    const char *keys = "self_cpu_time_total self_cuda_time_total cpu_time_total count";
    hint_is("self_cuda_time_totl", keys, "; did you mean self_cuda_time_total?");
    hint_is("sefl_cpu_time_total", keys, "; did you mean self_cpu_time_total?");
    hint_is("self_cuda", keys, "; did you mean self_cuda_time_total?");    /* a prefix */
    hint_is("cuont", keys, "; did you mean count?");
    hint_is("zzz", keys, "");
    hint_is("x", "a b c", "; did you mean a?");   /* one edit for a one-letter word */
    hint_is("x", "abc def", "");
    hint_is("", keys, "");
    hint_is("memcopy", "memcpy memset memory", "; did you mean memcpy?");
}

static void test_best_is_closest(void)
{
    tr_suggest s;
    tr_suggest_init(&s, "json", 4);
    tr_suggest_add(&s, "jsonl", 5);
    tr_suggest_add(&s, "json5x", 6);
    tr_suggest_add(&s, "jsno", 4);
    const char *best;
    size_t n = tr_suggest_best(&s, &best);
    CU_ASSERT_EQUAL(n, 5);
    CU_ASSERT_NSTRING_EQUAL(best, "jsonl", 5);
}

TR_SUITE(suggest,
         {"edit distance", test_distance},
         {"did you mean", test_hint},
         {"the closest wins", test_best_is_closest});
