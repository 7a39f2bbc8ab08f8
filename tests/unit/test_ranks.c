/* --rank lists, and the duplicate-rank and world-size checks (lib/ranks.h). */
#include <stdio.h>
#include <string.h>

#include "lib/ranks.h"
#include "tests/unit/unit.h"

static void test_parse(void)
{
    tr_rank_set s = {0};
    tr_error err;
    tr_error_clear(&err);
    CU_ASSERT_EQUAL(tr_rank_set_parse(&s, "0,3-5,9", &err), TR_OK);
    CU_ASSERT_EQUAL(s.n, 3);
    static const int64_t in[] = {0, 3, 4, 5, 9}, out[] = {1, 2, 6, 8, 10, -1};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++)
        CU_ASSERT_TRUE(tr_rank_set_has(&s, in[i]));
    for (size_t i = 0; i < sizeof out / sizeof out[0]; i++)
        CU_ASSERT_FALSE(tr_rank_set_has(&s, out[i]));
    CU_ASSERT_EQUAL(tr_rank_set_parse(&s, "12", &err), TR_OK);   /* a second --rank adds */
    CU_ASSERT_TRUE(tr_rank_set_has(&s, 12));
    tr_rank_set_free(&s);
    CU_ASSERT_TRUE(tr_rank_set_has(&s, 123));   /* an empty set selects every rank */
    static const char *const bad[] = {"", "a", "1,", ",1", "3-1", "-1", "1-", "1,,2", "+1", " 1",
                                      "99999999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tr_rank_set b = {0};
        tr_error_clear(&err);
        CU_ASSERT_EQUAL(tr_rank_set_parse(&b, bad[i], &err), TR_ERR_USAGE);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "--rank"));
        tr_rank_set_free(&b);
    }
    /* the message says what is wrong, not only that something is */
    static const struct { const char *text, *why; } said[] = {
        {"5-2", "runs backwards"}, {"99999999999999999999", "beyond 64 bits"},
        {"1,", "after the last comma"}, {"-1", "whole numbers >= 0"}};
    for (size_t i = 0; i < sizeof said / sizeof said[0]; i++) {
        tr_rank_set b = {0};
        tr_error_clear(&err);
        tr_rank_set_parse(&b, said[i].text, &err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, said[i].why));
        tr_rank_set_free(&b);
    }
    int64_t one = -1;
    CU_ASSERT_EQUAL(tr_rank_parse("5000000000", &one, &err), TR_OK);
    CU_ASSERT_EQUAL(one, 5000000000LL);
    CU_ASSERT_EQUAL(tr_rank_parse("1-2", &one, &err), TR_ERR_USAGE);
}

typedef struct { char lines[8][1024]; int n; } lines;

static void collect(void *ctx, const char *msg)
{
    lines *l = ctx;
    if (l->n < 8)
        snprintf(l->lines[l->n++], sizeof l->lines[0], "%s", msg);
}

static void test_checks(void)
{
    /* two inputs claim rank 1; two sources of one input sharing a rank are one rank's processes */
    tr_source_rank v[] = {{1, 0, 4, 1}, {2, 1, 4, 1}, {3, 1, 4, 1}, {4, 2, 4, 1}, {5, 2, 4, 1}};
    const char *label[] = {"a.db", "b.db", "c.db", "d.db", "d.db"};
    lines l = {{{0}}, 0};
    tr_ranks_check(v, label, 5, collect, &l);
    CU_ASSERT_EQUAL(l.n, 2);
    CU_ASSERT_STRING_EQUAL(l.lines[0], "rank 1 is claimed by b.db and c.db");
    CU_ASSERT_STRING_EQUAL(l.lines[1], "the traces give world size 4 but the inputs hold 3 rank(s): 0-2; missing 3");
    /* a rank from the order says how to set it */
    tr_source_rank w[] = {{1, 0, 0, 1}, {2, 0, 0, 0}};
    const char *wl[] = {"x.db", "y.db"};
    l.n = 0;
    tr_ranks_check(w, wl, 2, collect, &l);
    CU_ASSERT_EQUAL(l.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.lines[0], "trace-ingest --rank"));
    /* one rank of a big job alone, and a full job, say nothing */
    tr_source_rank one[] = {{1, 5, 8, 1}};
    l.n = 0;
    tr_ranks_check(one, wl, 1, collect, &l);
    tr_source_rank full[] = {{1, 0, 2, 1}, {2, 1, 2, 1}};
    tr_ranks_check(full, wl, 2, collect, &l);
    CU_ASSERT_EQUAL(l.n, 0);
    /* ranks past the world size */
    tr_source_rank past[] = {{1, 0, 2, 1}, {2, 7, 2, 1}};
    tr_ranks_check(past, wl, 2, collect, &l);
    CU_ASSERT_EQUAL(l.n, 1);
    CU_ASSERT_STRING_EQUAL(l.lines[0], "the traces give world size 2 but the inputs hold 2 rank(s): 0, 7; missing 1");
    /* a huge world size: the missing ranks are the gaps, not the first 4096 of them */
    tr_source_rank huge[] = {{1, 0, INT64_MAX, 1}, {2, 5, INT64_MAX, 1}};
    l.n = 0;
    tr_ranks_check(huge, wl, 2, collect, &l);
    CU_ASSERT_EQUAL(l.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.lines[0], "missing 1-4, 6-9223372036854775806"));
    /* ranks from the argument order that the names' numbers contradict (rank10 before rank2) */
    tr_source_rank pos[] = {{1, 0, 0, 0}, {1, 1, 0, 0}, {1, 2, 0, 0}};
    const char *pl[] = {"d/rank1.db", "d/rank10.db", "d/rank2.db"};
    l.n = 0;
    tr_ranks_check(pos, pl, 3, collect, &l);
    CU_ASSERT_EQUAL(l.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.lines[0], "d/rank2.db comes after d/rank10.db"));
    const char *padded[] = {"d/rank01.db", "d/rank02.db", "d/rank10.db"};
    l.n = 0;
    tr_ranks_check(pos, padded, 3, collect, &l);
    CU_ASSERT_EQUAL(l.n, 0);
    /* the number where the names differ, not the last one: a step after the rank */
    const char *steps[] = {"t_rank1_step5.json", "t_rank10_step5.json", "t_rank2_step5.json"};
    l.n = 0;
    tr_ranks_check(pos, steps, 3, collect, &l);
    CU_ASSERT_EQUAL(l.n, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(l.lines[0], "t_rank2_step5.json comes after t_rank10_step5.json"));
    /* names that differ by more than a number carry no order: models with sizes in their names */
    const char *models[] = {"kineto__h100_bert-small.db", "kineto__h100_Qwen1.5-0.5B.db", "rank9.db"};
    l.n = 0;
    tr_ranks_check(pos, models, 3, collect, &l);
    CU_ASSERT_EQUAL(l.n, 0);
    const char *nine_ten[] = {"r/rank9.db", "r/rank10.db", "r/rank11.db"};
    tr_ranks_check(pos, nine_ten, 3, collect, &l);
    CU_ASSERT_EQUAL(l.n, 0);
}

TR_SUITE(ranks,
         {"--rank lists and ranges", test_parse},
         {"duplicate ranks and world sizes", test_checks});
