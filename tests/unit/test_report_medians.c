/* The reports' medians from one scan (tr_rvalues) against sorting each
 * group's values: odd and even counts, ties, one value, many groups. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/report.h"
#include "tests/unit/unit.h"

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* ngroups groups of sizes from size_of(); values from value_of(): the log's
 * medians must be the sorted values' middle two. */
static void check(size_t ngroups, size_t (*size_of)(size_t), int64_t (*value_of)(unsigned *))
{
    tr_rgroups g;
    memset(&g, 0, sizeof g);
    tr_rvalues l;
    memset(&l, 0, sizeof l);
    size_t total = 0;
    for (size_t k = 0; k < ngroups; k++)
        total += size_of(k);
    int64_t **sorted = calloc(ngroups, sizeof *sorted);
    size_t *filled = calloc(ngroups, sizeof *filled);
    CU_ASSERT_FATAL(sorted && filled);
    for (size_t k = 0; k < ngroups; k++) {
        CU_ASSERT_PTR_NOT_NULL_FATAL(tr_rgroups_get(&g, (int64_t)k, 0));
        sorted[k] = calloc(size_of(k) + 1, sizeof **sorted);
        CU_ASSERT_FATAL(sorted[k] != NULL);
    }
    unsigned seed = 12345;
    /* the groups' values interleaved, as a scan meets them */
    for (size_t done = 0; done < total;) {
        size_t k = (size_t)rand_r(&seed) % ngroups;
        if (filled[k] == size_of(k))
            continue;
        int64_t v = value_of(&seed);
        sorted[k][filled[k]++] = v;
        tr_rgroup_add(&g.v[k], v, 0);
        CU_ASSERT_EQUAL(tr_rvalues_add(&l, k, v), 0);
        done++;
    }
    CU_ASSERT_EQUAL_FATAL(tr_rvalues_select(&l, &g, tr_rranks_median), 0);
    for (size_t k = 0; k < ngroups; k++) {
        size_t n = size_of(k);
        qsort(sorted[k], n, sizeof **sorted, cmp_i64);
        CU_ASSERT_EQUAL(g.v[k].med_lo, sorted[k][(n - 1) / 2]);
        CU_ASSERT_EQUAL(g.v[k].med_hi, sorted[k][n / 2]);
        free(sorted[k]);
    }
    free(sorted);
    free(filled);
    tr_rvalues_free(&l);
    tr_rgroups_free(&g);
}

static size_t size_small(size_t k) { return 1 + k % 6; }          /* 1..6: odd and even */
static size_t size_large(size_t k) { return 1000 + 37 * k; }
static int64_t value_spread(unsigned *seed) { return (int64_t)(rand_r(seed) % 1000000) - 1000; }
static int64_t value_ties(unsigned *seed) { return (int64_t)(rand_r(seed) % 3) * 1000; }
static int64_t value_same(unsigned *seed) { (void)seed; return 4000; }

static void test_medians(void)
{
    check(1, size_small, value_spread);
    check(60, size_small, value_spread);
    check(60, size_small, value_ties);
    check(7, size_large, value_spread);
    check(7, size_large, value_ties);
    check(3, size_large, value_same);
}

/* A log that does not hold the groups' values is refused, so the caller
 * scans again instead of printing wrong medians. */
static void test_mismatch(void)
{
    tr_rgroups g;
    memset(&g, 0, sizeof g);
    tr_rvalues l;
    memset(&l, 0, sizeof l);
    tr_rgroup *a = tr_rgroups_get(&g, 1, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    tr_rgroup_add(a, 5, 0);
    tr_rgroup_add(a, 7, 0);
    CU_ASSERT_EQUAL(tr_rvalues_add(&l, 0, 5), 0);
    CU_ASSERT_EQUAL(tr_rvalues_select(&l, &g, tr_rranks_median), -1);   /* one value logged, two counted */
    CU_ASSERT_EQUAL(tr_rvalues_add(&l, 3, 7), 0);
    CU_ASSERT_EQUAL(tr_rvalues_select(&l, &g, tr_rranks_median), -1);   /* a group that does not exist */
    tr_rvalues_free(&l);
    tr_rgroups_free(&g);
}

TR_SUITE(report_medians, {"medians of one scan equal sorting's", test_medians},
         {"a log that does not match is refused", test_mismatch});
