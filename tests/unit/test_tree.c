/* Tree rebuild and derived metrics, on the edge cases of docs/semantics.md. */
#include <string.h>

#include "lib/tree.h"
#include "tests/unit/unit.h"

static tr_trace t;
static uint32_t thread1, thread2, stream1;

static void setup(void)
{
    tr_trace_init(&t, NULL);
    uint32_t src = tr_add_source(&t, "test", "test", NULL);
    uint32_t p = tr_process_get(&t, src, 1);
    thread1 = tr_thread_get(&t, p, 1);
    thread2 = tr_thread_get(&t, p, 2);
    stream1 = tr_stream_get(&t, tr_device_get(&t, src, 0), 1, 7);
}

static size_t add(tr_kind kind, const char *name, int64_t s, int64_t e, uint32_t thread, int64_t corr)
{
    tr_event *ev = tr_add_event(&t, kind);
    ev->name = tr_str(&t, name);
    ev->start = s;
    ev->end = e;
    ev->correlation = corr;
    if (tr_kinds[kind].on_gpu)
        ev->stream = stream1;
    else
        ev->thread = thread;
    return t.events.n - 1;
}

#define EV(i) (&t.events.v[i])
#define MEM(i) (&t.mem[i])

static void build(void)
{
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_tree_build(&t, &err), TR_OK);
}

static void test_partial_overlap(void)
{
    /* P[0,100) C1[0,80) C2[10,90): siblings; P's self = 100 - |[0,90)| = 10, not -60 */
    setup();
    size_t p = add(TR_KIND_RANGE, "P", 0, 100, thread1, -1);
    size_t c1 = add(TR_KIND_RANGE, "C1", 0, 80, thread1, -1);
    size_t c2 = add(TR_KIND_RANGE, "C2", 10, 90, thread1, -1);
    build();
    CU_ASSERT_EQUAL(EV(c1)->parent, (int64_t)p);
    CU_ASSERT_EQUAL(EV(c2)->parent, (int64_t)p);
    CU_ASSERT_EQUAL(EV(p)->cpu_self, 10);
    CU_ASSERT_EQUAL(EV(c1)->cpu_self, 80);
    CU_ASSERT_EQUAL(EV(c2)->cpu_self, 80);
    CU_ASSERT_EQUAL(EV(c2)->depth, 1);
    tr_trace_free(&t);
}

static void test_touching_and_zero_length(void)
{
    /* A[0,10) B[10,20) Z[10,10) W[5,5): W in A, Z in B (half-open), zero-length never parents */
    setup();
    size_t a = add(TR_KIND_RANGE, "A", 0, 10, thread1, -1);
    size_t b = add(TR_KIND_RANGE, "B", 10, 20, thread1, -1);
    size_t z = add(TR_KIND_MARK, "Z", 10, 10, thread1, -1);
    size_t w = add(TR_KIND_MARK, "W", 5, 5, thread1, -1);
    size_t z2 = add(TR_KIND_MARK, "Z2", 10, 10, thread1, -1);
    build();
    CU_ASSERT_EQUAL(EV(a)->parent, -1);
    CU_ASSERT_EQUAL(EV(b)->parent, -1);
    CU_ASSERT_EQUAL(EV(z)->parent, (int64_t)b);
    CU_ASSERT_EQUAL(EV(w)->parent, (int64_t)a);
    CU_ASSERT_EQUAL(EV(z2)->parent, (int64_t)b);   /* not a child of the zero-length Z */
    CU_ASSERT_EQUAL(EV(a)->cpu_self, 10);
    tr_trace_free(&t);
}

static void test_threads_kept_apart(void)
{
    /* Same intervals on two threads never nest into each other. */
    setup();
    size_t p = add(TR_KIND_RANGE, "P", 0, 100, thread1, -1);
    size_t q = add(TR_KIND_RANGE, "Q", 10, 20, thread2, -1);
    size_t d = add(TR_KIND_RANGE, "D", 30, 40, thread1, -1);
    build();
    CU_ASSERT_EQUAL(EV(q)->parent, -1);
    CU_ASSERT_EQUAL(EV(d)->parent, (int64_t)p);
    CU_ASSERT_EQUAL(EV(p)->cpu_self, 90);
    tr_trace_free(&t);
}

static void test_identical_intervals(void)
{
    /* Equal intervals: the range contains the API call that contains the driver call. */
    setup();
    size_t drv = add(TR_KIND_DRIVER, "cuLaunchKernel", 0, 10, thread1, 2);
    size_t api = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 0, 10, thread1, 1);
    size_t r = add(TR_KIND_RANGE, "op", 0, 10, thread1, -1);
    size_t r2 = add(TR_KIND_RANGE, "op2", 0, 10, thread1, -1);
    build();
    CU_ASSERT_EQUAL(EV(r2)->parent, (int64_t)r);   /* input order among equals */
    CU_ASSERT_EQUAL(EV(api)->parent, (int64_t)r2);
    CU_ASSERT_EQUAL(EV(drv)->parent, (int64_t)api);
    CU_ASSERT_EQUAL(EV(drv)->depth, 3);
    tr_trace_free(&t);
}

static void test_gpu_attribution(void)
{
    /* op [0,100) > linear-ish child [10,60) > launch [20,30) -> kernel 40ns;
     * launch [70,80) directly in op -> kernel 5ns; top-level launch -> kernel 7ns */
    setup();
    size_t op = add(TR_KIND_OP, "outer", 0, 100, thread1, -1);
    size_t inner = add(TR_KIND_OP, "inner", 10, 60, thread1, -1);
    size_t l1 = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 20, 30, thread1, 1);
    size_t k1 = add(TR_KIND_KERNEL, "k1", 200, 240, 0, 1);
    size_t l2 = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 70, 80, thread1, 2);
    size_t k2 = add(TR_KIND_KERNEL, "k2", 300, 305, 0, 2);
    size_t l3 = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 150, 160, thread1, 3);
    size_t k3 = add(TR_KIND_KERNEL, "k3", 400, 407, 0, 3);
    size_t k4 = add(TR_KIND_KERNEL, "orphan", 500, 509, 0, 99);
    build();
    CU_ASSERT_EQUAL(EV(k1)->parent, (int64_t)l1);
    CU_ASSERT_EQUAL(EV(k1)->depth, 3);
    CU_ASSERT_EQUAL(EV(k4)->parent, -1);
    CU_ASSERT_EQUAL(EV(inner)->gpu_self, 40);
    CU_ASSERT_EQUAL(EV(inner)->gpu_total, 40);
    CU_ASSERT_EQUAL(EV(op)->gpu_self, 5);
    CU_ASSERT_EQUAL(EV(op)->gpu_total, 45);
    CU_ASSERT_EQUAL(EV(l1)->gpu_self, 0);       /* counted once: in the op, not the call */
    CU_ASSERT_EQUAL(EV(l3)->gpu_self, 7);       /* no enclosing range: the call itself */
    CU_ASSERT_EQUAL(EV(k3)->gpu_self, 7);
    CU_ASSERT_EQUAL(EV(k2)->gpu_total, 5);
    CU_ASSERT_EQUAL(EV(op)->cpu_self, 100 - 50 - 10);
    (void)l2;
    tr_trace_free(&t);
}

static void test_idempotent_and_async(void)
{
    setup();
    size_t p = add(TR_KIND_RANGE, "P", 0, 100, thread1, -1);
    size_t a = add(TR_KIND_RANGE, "async", 10, 20, thread1, -1);
    EV(a)->flags |= TR_FLAG_ASYNC;
    size_t c = add(TR_KIND_RANGE, "C", 30, 40, thread1, -1);
    build();
    build();   /* a second build gives the same answer (PyTorch's asserts) */
    CU_ASSERT_EQUAL(EV(a)->parent, -1);
    CU_ASSERT_EQUAL(EV(a)->cpu_self, 0);
    CU_ASSERT_EQUAL(EV(c)->parent, (int64_t)p);
    CU_ASSERT_EQUAL(EV(p)->cpu_self, 90);
    tr_trace_free(&t);
}

static void test_memory(void)
{
    setup();
    size_t p = add(TR_KIND_OP, "P", 0, 100, thread1, -1);
    size_t c = add(TR_KIND_OP, "C", 10, 50, thread1, -1);
    size_t m1 = add(TR_KIND_MEMORY, "[memory]", 20, 20, thread1, -1);
    EV(m1)->bytes = 512;
    size_t m2 = add(TR_KIND_MEMORY, "[memory]", 60, 60, thread1, -1);
    EV(m2)->bytes = -128;
    size_t m3 = add(TR_KIND_MEMORY, "[memory]", 70, 70, thread1, -1);
    EV(m3)->bytes = 4096;
    EV(m3)->flags |= TR_FLAG_GPU_MEMORY;
    build();
    CU_ASSERT_EQUAL(MEM(c)->cpu_total, 512);
    CU_ASSERT_EQUAL(MEM(c)->cpu_self, 512);
    CU_ASSERT_EQUAL(MEM(p)->cpu_total, 384);
    CU_ASSERT_EQUAL(MEM(p)->cpu_self, -128);
    CU_ASSERT_EQUAL(MEM(p)->gpu_total, 4096);
    CU_ASSERT_EQUAL(MEM(p)->gpu_self, 4096);
    tr_trace_free(&t);
}

static void test_sync_adopts_thread(void)
{
    setup();
    size_t call = add(TR_KIND_RUNTIME, "cudaStreamSynchronize", 0, 100, thread2, 5);
    size_t sync = add(TR_KIND_SYNC, "[sync] stream", 10, 90, 0, 5);
    EV(sync)->thread = 0;
    EV(sync)->stream = stream1;
    build();
    CU_ASSERT_EQUAL(EV(sync)->thread, thread2);
    CU_ASSERT_EQUAL(EV(sync)->parent, (int64_t)call);
    CU_ASSERT_EQUAL(EV(call)->cpu_self, 20);
    tr_trace_free(&t);
}

/* Many nested events in shuffled order give the same tree whether the sort
 * takes its radix path (times within hours) or its fallback (times far apart). */
static void check_shuffled_nesting(int64_t base, int64_t far)
{
    setup();
    enum { N = 3000 };
    size_t idx[N];
    /* groups of 3 at each time: outer range, inner range, API call with equal
     * start, added in reverse so the sort has to order them */
    for (int g = N / 3 - 1; g >= 0; g--) {
        int64_t s = base + (int64_t)g * 1000;
        idx[3 * g + 2] = add(TR_KIND_RUNTIME, "call", s, s + 100, (g & 1) ? thread1 : thread2, -1);
        idx[3 * g + 1] = add(TR_KIND_RANGE, "inner", s, s + 100, (g & 1) ? thread1 : thread2, -1);
        idx[3 * g] = add(TR_KIND_RANGE, "outer", s, s + 500, (g & 1) ? thread1 : thread2, -1);
    }
    size_t lone = add(TR_KIND_RANGE, "far", far, far + 10, thread1, -1);
    build();
    int ok = 1;
    for (int g = 0; g < N / 3; g++) {
        ok &= EV(idx[3 * g])->parent == -1 && EV(idx[3 * g])->cpu_self == 400;
        ok &= EV(idx[3 * g + 1])->parent == (int64_t)idx[3 * g];
        ok &= EV(idx[3 * g + 2])->parent == (int64_t)idx[3 * g + 1];
        ok &= EV(idx[3 * g + 2])->depth == 2;
    }
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(EV(lone)->parent, -1);
    tr_trace_free(&t);
}

static void test_sort_paths(void)
{
    check_shuffled_nesting(1000, 2000000);                        /* radix */
    check_shuffled_nesting(1700000000000000000, 1800000000000000000); /* qsort fallback */
    check_shuffled_nesting(-5000000, 0);                          /* negative times */
}

TR_SUITE(tree,
         {"partial overlap: siblings, self >= 0", test_partial_overlap},
         {"touching and zero-length events", test_touching_and_zero_length},
         {"threads are separate trees", test_threads_kept_apart},
         {"identical intervals nest by kind", test_identical_intervals},
         {"GPU time once per level", test_gpu_attribution},
         {"idempotent; async not nested", test_idempotent_and_async},
         {"memory totals and self", test_memory},
         {"sync waits take their call's thread", test_sync_adopts_thread},
         {"sorted the same on the radix and fallback paths", test_sort_paths})
