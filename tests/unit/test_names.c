/* NVTX annotation parsing (every emit_nvtx era), demangling, API names. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/names.h"
#include "tests/nvtx_oracle.h"
#include "tests/unit/unit.h"

static tr_nvtx_parser *p;

static void parse(const char *msg, tr_nvtx_annotation *a)
{
    if (!p)
        CU_ASSERT_EQUAL_FATAL(tr_nvtx_parser_new(&p, NULL), TR_OK);
    tr_nvtx_parse(p, msg, strlen(msg), a);
}

static int name_is(const tr_nvtx_annotation *a, const char *want)
{
    return a->name_len == strlen(want) && memcmp(a->name, want, a->name_len) == 0;
}

static void test_current_format(void)
{
    tr_nvtx_annotation a;
    parse("aten::addmm, seq = 12, op_id = 345, sizes = [[32], [128, 64], [64, 32], [], []], "
          "input_op_ids = [(0,-1), (340,0), (0,-1), (0,-1), (0,-1)]", &a);
    CU_ASSERT(name_is(&a, "aten::addmm"));
    CU_ASSERT_EQUAL(a.seq, 12);
    CU_ASSERT_EQUAL(a.op_id, 345);
    CU_ASSERT_EQUAL(a.sizes_len, strlen("[[32], [128, 64], [64, 32], [], []]"));
    CU_ASSERT_NSTRING_EQUAL(a.sizes, "[[32], [128, 64], [64, 32], [], []]", a.sizes_len);
    CU_ASSERT_PTR_NOT_NULL(a.input_op_ids);
    parse("aten::empty, op_id = 17", &a);
    CU_ASSERT(name_is(&a, "aten::empty"));
    CU_ASSERT_EQUAL(a.seq, -1);
    CU_ASSERT_EQUAL(a.op_id, 17);
    parse("autograd::engine::evaluate_function: MulBackward0, seq = 7, op_id = 310", &a);
    CU_ASSERT(name_is(&a, "autograd::engine::evaluate_function: MulBackward0"));
    CU_ASSERT_EQUAL(a.seq, 7);
}

static void test_old_formats(void)
{
    tr_nvtx_annotation a;
    parse("embedding, seq = 65", &a);
    CU_ASSERT(name_is(&a, "embedding"));
    CU_ASSERT_EQUAL(a.seq, 65);
    parse("MulBackward, seq=3", &a);
    CU_ASSERT(name_is(&a, "MulBackward"));
    CU_ASSERT_EQUAL(a.seq, 3);
    parse("AddBackward, stashed seq=9", &a);
    CU_ASSERT(name_is(&a, "AddBackward"));
    CU_ASSERT_EQUAL(a.seq, 9);
    parse("aten::cat, seq = 3, sizes = [[2, 3], [4, 3], []]", &a);
    CU_ASSERT(name_is(&a, "aten::cat"));
    CU_ASSERT_NSTRING_EQUAL(a.sizes, "[[2, 3], [4, 3], []]", a.sizes_len);
    /* pre-1.5 builds dropped the name when seq < 0: keep the whole message */
    parse(", sizes = [[2, 3]]", &a);
    CU_ASSERT(name_is(&a, ", sizes = [[2, 3]]"));
}

static void test_not_annotations(void)
{
    tr_nvtx_annotation a;
    parse("my label, with commas, op_id = x", &a);
    CU_ASSERT_FALSE(a.annotated);
    CU_ASSERT(name_is(&a, "my label, with commas, op_id = x"));
    parse("{'mod': 'torch', 'op': 'embedding'}", &a);
    CU_ASSERT_FALSE(a.annotated);
    parse("", &a);
    CU_ASSERT_EQUAL(a.name_len, 0);
    /* a user label containing commas keeps them in the name */
    parse("fwd, block 3, seq = 4, op_id = 5", &a);
    CU_ASSERT(name_is(&a, "fwd, block 3"));
}

static void test_hostile_length(void)
{
    /* a long message with many commas must be handled quickly and safely */
    size_t n = 200000;
    char *m = malloc(n + 1);
    for (size_t i = 0; i < n; i++)
        m[i] = i % 2 ? ',' : ' ';
    m[n] = '\0';
    tr_nvtx_annotation a;
    parse(m, &a);
    CU_ASSERT_EQUAL(a.name_len, n);
    free(m);
}

/* The parser against the split's definition (tests/nvtx_oracle.h), on every
 * message built from the pieces annotations are made of and the near misses
 * around them. */
static void test_same_split_as_one_pattern(void)
{
    static const char *const pieces[] = {
        "aten::addmm", "fwd", ", ", ",", " ", "\n", "x", "-", "1", "42", "[", "]", "(", ")",
        ", seq = ", ", seq=", ", stashed seq=", "seq", " = ", "=", ", op_id = ", ", op_id=",
        ", sizes = ", ", input_op_ids = ", "[[2, 3], [4], []]", "[[-1, 2]", "[]", "[(1,0), (2,-1)]",
        "[(3,4)]", "(5,6)", "123456789012345678", "1234567890123456789", "12345678901234567890",
    };
    const size_t n_pieces = sizeof pieces / sizeof *pieces;
    nvtx_oracle o;
    CU_ASSERT_EQUAL_FATAL(nvtx_oracle_init(&o), 0);
    uint64_t state = 0x9e3779b97f4a7c15u;
    char msg[1024];
    int differ = 0;
    for (int round = 0; round < 200000 && differ < 5; round++) {
        size_t len = 0;
        int n = 1 + (int)(round % 12);
        for (int k = 0; k < n; k++) {
            state = state * 6364136223846793005u + 1442695040888963407u;
            const char *piece = pieces[(state >> 33) % n_pieces];
            size_t pl = strlen(piece);
            memcpy(msg + len, piece, pl);
            len += pl;
        }
        msg[len] = '\0';
        tr_nvtx_annotation a;
        parse(msg, &a);
        if (!nvtx_oracle_agrees(&o, msg, len, &a)) {
            fprintf(stderr, "split differs: \"%s\"\n", msg);
            differ++;
        }
    }
    CU_ASSERT_EQUAL(differ, 0);
    nvtx_oracle_free(&o);
}

static void test_demangle(void)
{
    char *d = tr_demangle("_Z3foov");
    CU_ASSERT_STRING_EQUAL(d, "foo()");
    free(d);
    CU_ASSERT_PTR_NULL(tr_demangle("t"));          /* not "unsigned short" */
    CU_ASSERT_PTR_NULL(tr_demangle("volta_sgemm_128x64_nn"));
    CU_ASSERT_PTR_NULL(tr_demangle("_Zgarbage"));
}

static void test_api_names(void)
{
    CU_ASSERT_STRING_EQUAL(tr_runtime_cbid_name(211), "cudaLaunchKernel");
    CU_ASSERT_STRING_EQUAL(tr_runtime_cbid_name(214), "cudaLaunchKernel_ptsz");
    CU_ASSERT_STRING_EQUAL(tr_runtime_cbid_name(13), "cudaLaunch");
    CU_ASSERT_STRING_EQUAL(tr_driver_cbid_name(307), "cuLaunchKernel");
    CU_ASSERT_PTR_NULL(tr_runtime_cbid_name(-1));
    CU_ASSERT_PTR_NULL(tr_runtime_cbid_name(100000));
    tr_nvtx_parser_free(p);
    p = NULL;
}

static int short_is(const char *name, int detail, const char *want)
{
    char *s = tr_short_name(name, detail);
    int ok = s && strcmp(s, want) == 0;
    if (!ok)
        fprintf(stderr, "\n    tr_short_name(%d): got '%s', expected '%s'\n", detail, s ? s : "(null)", want);
    free(s);
    return ok;
}

#define ELL "\xe2\x80\xa6"

static void test_short_names(void)
{
    static const char add[] =
        "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<"
        "at::native::CUDAFunctor_add<c10::BFloat16> >(at::TensorIteratorBase&, "
        "at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1}>(int, "
        "at::native::gpu_kernel_impl_nocast<at::native::CUDAFunctor_add<c10::BFloat16> >"
        "(at::TensorIteratorBase&, at::native::CUDAFunctor_add<c10::BFloat16> const&)::{lambda(int)#1})";
    CU_ASSERT(short_is(add, 0, "at::native::elementwise_kernel<128, 4, " ELL ">"));
    CU_ASSERT(short_is(add, 1, "at::native::elementwise_kernel<128, 4, gpu_kernel_impl_nocast<" ELL ">>"));
    CU_ASSERT(short_is(add, 2, "at::native::elementwise_kernel<128, 4, "
                               "gpu_kernel_impl_nocast<CUDAFunctor_add<BFloat16>>>"));
    CU_ASSERT(short_is(add, 9, "at::native::elementwise_kernel<128, 4, "
                               "gpu_kernel_impl_nocast<CUDAFunctor_add<BFloat16>>>"));
    /* a lambda argument reads as the function that holds it */
    CU_ASSERT(short_is("void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::"
                       "silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::operator()() const::{lambda()#6}::"
                       "operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul> >(int, "
                       "at::native::(anonymous namespace)::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::"
                       "operator()() const::{lambda()#6}::operator()() const::{lambda(c10::BFloat16)#1}, "
                       "std::array<char*, 2ul>)", 0,
                       "at::native::vectorized_elementwise_kernel<4, silu_kernel, " ELL ">"));
    CU_ASSERT(short_is("void at::native::(anonymous namespace)::CatArrayBatchedCopy<at::native::(anonymous "
                       "namespace)::OpaqueType<2u>, unsigned int, 4, 64, 64>(at::native::(anonymous namespace)::"
                       "OpaqueType<2u>*, unsigned int)", 1,
                       "at::native::CatArrayBatchedCopy<OpaqueType<2u>, unsigned int, 4, 64, 64>"));
    /* return types other than void, qualifiers after the parameters, operator() */
    CU_ASSERT(short_is("unsigned int ns::f<int>(float) const", 0, "ns::f<int>"));
    CU_ASSERT(short_is("ns::Functor::operator()(int) const", 0, "ns::Functor::operator()"));
    CU_ASSERT(short_is("void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false,"
                       " cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
                       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
                       "float> >(cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, "
                       "cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, "
                       "float>, float, float)", 0,
                       "gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, "
                       ELL ">"));
    /* names that are not C++ signatures stay as they are */
    CU_ASSERT(short_is("aten::mul", 0, "aten::mul"));
    CU_ASSERT(short_is("Memcpy HtoD (Pageable -> Device)", 0, "Memcpy HtoD (Pageable -> Device)"));
    CU_ASSERT(short_is("autograd::engine::evaluate_function: MulBackward0", 0,
                       "autograd::engine::evaluate_function: MulBackward0"));
    CU_ASSERT(short_is("<built-in method to of Tensor object at 0x7f>", 0,
                       "<built-in method to of Tensor object at 0x7f>"));
    CU_ASSERT(short_is("torch/nn/modules/module.py(1501): _call_impl", 0,
                       "torch/nn/modules/module.py(1501): _call_impl"));
    CU_ASSERT(short_is("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n", 0, "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n"));
    CU_ASSERT(short_is("", 0, ""));
    /* unbalanced brackets from a hostile file: no overrun, something readable */
    char *s = tr_short_name("void a::b<<<((({{{[[", 0);
    CU_ASSERT_PTR_NOT_NULL(s);
    free(s);
    s = tr_short_name("void a::b>>>)))}}}]](", 3);
    CU_ASSERT_PTR_NOT_NULL(s);
    free(s);
    s = tr_short_name("void a::operator", 0);
    CU_ASSERT_PTR_NOT_NULL(s);
    free(s);
}

TR_SUITE(names,
         {"emit_nvtx 1.13 format", test_current_format},
         {"older emit_nvtx formats", test_old_formats},
         {"plain names stay whole", test_not_annotations},
         {"hostile long message", test_hostile_length},
         {"same split as the one-pattern definition", test_same_split_as_one_pattern},
         {"demangle only mangled names", test_demangle},
         {"API names by callback id", test_api_names},
         {"short C++ names", test_short_names})
