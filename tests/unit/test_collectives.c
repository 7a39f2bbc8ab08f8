/* Clock alignment from matched collectives (lib/clock_align.h) and the
 * collective names (lib/collectives.h). */
#include <stdlib.h>
#include <string.h>

#include "lib/clock_align.h"
#include "lib/collectives.h"
#include "tests/unit/unit.h"

#define NR 4
#define NC 9

/* Ranks whose clocks are off by off[r] from the reference's: a call that truly
 * starts at s_r and ends at e on every rank reads s_r + off[r] and e + off[r]
 * + noise on rank r.  The recovered offset undoes off[r] - off[0]. */
static void make(int64_t *start, int64_t *end, const int64_t *off, const int64_t *noise)
{
    for (int r = 0; r < NR; r++)
        for (int k = 0; k < NC; k++) {
            int64_t truth_end = 1000000 + 100000 * k;
            int64_t truth_start = truth_end - 20000 - 3000 * r;   /* rank 3 arrives last */
            start[r * NC + k] = truth_start + off[r];
            end[r * NC + k] = truth_end + off[r] + (noise ? noise[r * NC + k] : 0);
        }
}

static void test_exact_offsets(void)
{
    int64_t start[NR * NC], end[NR * NC];
    unsigned char have[NR * NC];
    memset(have, 1, sizeof have);
    const int64_t off[NR] = {500, -7000000, 123456789, 0};
    make(start, end, off, NULL);
    tr_clock_fit fit[NR];
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(NR, NC, start, end, have, 0, fit, &err), TR_OK);
    for (int r = 0; r < NR; r++) {
        CU_ASSERT_EQUAL(fit[r].offset, off[0] - off[r]);
        CU_ASSERT_EQUAL(fit[r].residual, 0);
        CU_ASSERT_EQUAL(fit[r].refined, 1);
        CU_ASSERT_EQUAL(fit[r].used, r ? NC : 0);
    }
}

/* The median ignores a few late ends where a mean would follow them. */
static void test_median_is_robust(void)
{
    int64_t start[NR * NC], end[NR * NC], noise[NR * NC] = {0};
    unsigned char have[NR * NC];
    memset(have, 1, sizeof have);
    noise[2 * NC + 1] = 15000;   /* rank 2: two calls end late (less than their length) */
    noise[2 * NC + 5] = 19000;
    const int64_t off[NR] = {0, 250, -250, 99};
    make(start, end, off, noise);
    tr_clock_fit fit[NR];
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(NR, NC, start, end, have, 0, fit, &err), TR_OK);
    CU_ASSERT_EQUAL(fit[2].offset, 250);
    CU_ASSERT_EQUAL(fit[2].clamped, 0);
    CU_ASSERT_EQUAL(fit[2].residual, 0);
}

/* Aligned ends never fall before another rank's aligned start: an offset the
 * median puts there is moved to the nearest allowed one. */
static void test_causality(void)
{
    /* call 0: rank 1 is done at 300 on its clock, rank 0 starts it at 500 on its own:
     * the ends say offset 0 (calls 1 and 2), causality says at least 200 */
    int64_t start[2 * 3] = {500, 2000, 3000, /* rank 1 */ 0, 1900, 2900};
    int64_t end[2 * 3] = {1000, 2100, 3100, /* rank 1 */ 300, 2100, 3100};
    unsigned char have[2 * 3] = {1, 1, 1, 1, 1, 1};
    tr_clock_fit fit[2];
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(2, 3, start, end, have, 0, fit, &err), TR_OK);
    CU_ASSERT_EQUAL(fit[1].offset, 200);
    CU_ASSERT_EQUAL(fit[1].clamped, 1);
    for (int k = 0; k < 3; k++) {
        CU_ASSERT(end[3 + k] + fit[1].offset >= start[k]);
        CU_ASSERT(end[k] >= start[3 + k] + fit[1].offset);
    }
    /* no offset satisfies both calls: the median stands */
    int64_t s2[2 * 2] = {500, 2000, /* rank 1 */ 0, 1000};
    int64_t e2[2 * 2] = {600, 2100, /* rank 1 */ 100, 1100};
    unsigned char h2[2 * 2] = {1, 1, 1, 1};
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(2, 2, s2, e2, h2, 0, fit, &err), TR_OK);
    CU_ASSERT_EQUAL(fit[1].offset, 500);   /* the lower of {500, 1000} */
    CU_ASSERT_EQUAL(fit[1].clamped, 0);
}

/* A rank that shares no call with the reference keeps its wall clock; calls a
 * rank lacks are left out of its median. */
static void test_missing(void)
{
    int64_t start[NR * NC], end[NR * NC];
    unsigned char have[NR * NC];
    memset(have, 1, sizeof have);
    const int64_t off[NR] = {0, 1000, 2000, 3000};
    make(start, end, off, NULL);
    for (int k = 0; k < NC; k++)
        have[3 * NC + k] = 0;          /* rank 3: no collective at all */
    have[1 * NC + 4] = 0;              /* rank 1 lacks call 4: a wrong value there must not count */
    end[1 * NC + 4] = 99999999;
    tr_clock_fit fit[NR];
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(NR, NC, start, end, have, 0, fit, &err), TR_OK);
    CU_ASSERT_EQUAL(fit[1].offset, -1000);
    CU_ASSERT_EQUAL(fit[1].used, NC - 1);
    CU_ASSERT_EQUAL(fit[3].offset, 0);
    CU_ASSERT_EQUAL(fit[3].refined, 0);
    CU_ASSERT_EQUAL(tr_clock_align(NR, NC, start, end, have, NR, fit, &err), TR_ERR_USAGE);
    CU_ASSERT_EQUAL(tr_clock_align(0, 0, NULL, NULL, NULL, 0, fit, &err), TR_OK);
}

/* Uniform noise in [0, N): the residual reflects it, the offset stays close. */
static void test_residual_reflects_noise(void)
{
    int64_t start[NR * NC], end[NR * NC], noise[NR * NC];
    unsigned char have[NR * NC];
    memset(have, 1, sizeof have);
    uint64_t x = 88172645463325252ull;
    for (int i = 0; i < NR * NC; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        noise[i] = (int64_t)(x % 10000);
    }
    const int64_t off[NR] = {0, 40000, -40000, 7};
    make(start, end, off, noise);
    tr_clock_fit fit[NR];
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_clock_align(NR, NC, start, end, have, 0, fit, &err), TR_OK);
    int64_t most = 0;
    for (int r = 0; r < NR; r++) {
        CU_ASSERT(llabs((long long)(fit[r].offset - (off[0] - off[r]))) < 10000);
        CU_ASSERT(fit[r].residual >= 0 && fit[r].residual < 10000);
        if (fit[r].residual > most)
            most = fit[r].residual;
    }
    CU_ASSERT(most > 0);   /* one rank may sit on the calls' median end; not all of them */
}

static void test_median(void)
{
    int64_t v[] = {5, -1, 9, 3};
    CU_ASSERT_EQUAL(tr_median_i64(v, 4), 3);   /* the lower middle */
    CU_ASSERT_EQUAL(tr_median_i64(v, 0), 0);
    int64_t w[] = {INT64_MAX, INT64_MIN, 0};
    CU_ASSERT_EQUAL(tr_median_i64(w, 3), 0);
}

static void op_is(const char *kernel, const char *want)
{
    char b[64];
    int yes = tr_coll_kernel_op(kernel, b, sizeof b);
    if (!want) {
        CU_ASSERT_EQUAL(yes, 0);
        return;
    }
    CU_ASSERT_EQUAL(yes, 1);
    CU_ASSERT_STRING_EQUAL(b, want);
}

static void test_kernel_names(void)
{
    op_is("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "allreduce");
    op_is("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", "allreduce");
    op_is("void ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16(ncclWorkElem)", "reducescatter");
    op_is("ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", "allgather");
    op_is("ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)", "sendrecv");
    op_is("ncclKernel_Reduce_RING_LL_Sum_half", "reduce");
    op_is("ncclAllReduceRingLLKernel_sum_f32(CollectiveArgs)", "allreduce");
    op_is("ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)", "nccl");
    op_is("ncclDevKernel_Broadcast_RING_LL", "broadcast");
    op_is("_Z33ncclBroadcastRingLLKernel_copy_i88ncclColl", "broadcast");
    op_is("ncclAllReduceTreeLLKernel_sum_i32(ncclColl)", "allreduce");
    op_is("volta_sgemm_128x64_nn", NULL);
    op_is("my_ncclKernel_AllReduce", NULL);
    op_is("ncclx", NULL);
    op_is("", NULL);
}

static void norm_is(const char *in, const char *want)
{
    char b[64];
    tr_coll_normalize_op(in, b, sizeof b);
    CU_ASSERT_STRING_EQUAL(b, want);
}

static void test_normalize(void)
{
    norm_is("allreduce", "allreduce");
    norm_is("all_reduce", "allreduce");
    norm_is("nccl:all_reduce", "allreduce");
    norm_is("_allgather_base", "allgather");
    norm_is("all_gather_into_tensor_coalesced", "allgather");
    norm_is("reduce_scatter_tensor", "reducescatter");
    norm_is("_reduce_scatter_base", "reducescatter");
    norm_is("alltoall_base", "alltoall");
    norm_is("all_to_all", "alltoall");
    norm_is("allreduce_coalesced", "allreduce");
    norm_is("AllReduce", "allreduce");
    norm_is("", "nccl");
    norm_is("send", "send");
    norm_is("recv", "recv");
    norm_is("sendrecv", "sendrecv");
    norm_is("allgatherv", "allgather");
    norm_is("alltoallv", "alltoall");
}

static void test_dtypes(void)
{
    CU_ASSERT_EQUAL(tr_coll_dtype_size("Float"), 4);
    CU_ASSERT_EQUAL(tr_coll_dtype_size("c10::BFloat16"), 2);
    CU_ASSERT_EQUAL(tr_coll_dtype_size("torch.float64"), 8);
    CU_ASSERT_EQUAL(tr_coll_dtype_size("Byte"), 1);
    CU_ASSERT_EQUAL(tr_coll_dtype_size("Float8_e4m3fn"), 1);
    CU_ASSERT_EQUAL(tr_coll_dtype_size("Quaternion"), 0);
    CU_ASSERT_EQUAL(tr_coll_dtype_size(NULL), 0);
}

TR_SUITE(collectives,
         {"offsets recovered exactly", test_exact_offsets},
         {"median ignores late ends", test_median_is_robust},
         {"no end before another rank's start", test_causality},
         {"missing calls and ranks", test_missing},
         {"residual reflects noise", test_residual_reflects_noise},
         {"median", test_median},
         {"kernel names", test_kernel_names},
         {"collective names", test_normalize},
         {"dtype sizes", test_dtypes});
