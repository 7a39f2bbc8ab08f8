/* --diff-normalize: which names meet, and which stay apart. */
#include <stdlib.h>

#include "analyze/normalize.h"
#include "tests/unit/unit.h"

static void norm_is(const char *in, const char *want)
{
    char *got = tr_diff_normalize_name(in);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static void test_templates(void)
{
    norm_is("void gemm<float, 128, 64>(float*)", "void gemm<float, N, N>(float*)");
    norm_is("k<cutlass::Shape<64, 32, 8>, 2>", "k<cutlass::Shape<N, N, N>, N>");   /* nested */
    norm_is("k<256u, 1.5f, 0x10, -3>", "k<N, N, N, -N>");
    norm_is("k<int32_t, float4, T2>", "k<int32_t, float4, T2>");   /* digits inside names stay */
    norm_is("f(int, 128)", "f(int, 128)");                         /* not a template argument */
    norm_is("k<8>(int, 128)", "k<N>(int, 128)");                   /* only inside <...> */
    norm_is("a->b<1>", "a->b<N>");                                 /* '>' of '->' closes nothing */
    norm_is("", "");
}

static void test_profiler_step(void)
{
    norm_is("ProfilerStep#12", "ProfilerStep*");
    norm_is("ProfilerStep#1;x", "ProfilerStep*;x");
    norm_is("ProfilerStep#", "ProfilerStep#");
    norm_is("ProfilerStep#x", "ProfilerStep#x");
    norm_is("aten::mm", "aten::mm");
}

TR_SUITE(diff_normalize, {"template arguments", test_templates}, {"ProfilerStep#N", test_profiler_step});
