/* Tree rebuild and derived metrics, on the edge cases of docs/semantics.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "lib/rundb.h"
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
    CU_ASSERT_EQUAL(tr_set_correlation(&t, ev, corr), 0);
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
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(p)), 10);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(c1)), 80);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(c2)), 80);
    CU_ASSERT_EQUAL(tr_depth(&t, EV(c2)), 1);
    tr_trace_free(&t);
}

static int unnested(size_t i)
{
    return (EV(i)->flags & TR_FLAG_UNNESTED) != 0;
}

static void test_unnested_for_viewers(void)
{
    /* of two partially overlapping events the shorter is flagged, whichever came first:
     * S[0,1000) > a[-5,10) b[-3,8) (a python stack the step starts in: both shorter);
     * S > t[990,1200) longer than nothing in S but shorter than S: flagged; the others nest */
    setup();
    size_t a = add(TR_KIND_PYTHON, "a", -5, 10, thread1, -1);
    size_t b = add(TR_KIND_PYTHON, "b", -3, 8, thread1, -1);
    size_t s = add(TR_KIND_RANGE, "S", 0, 1000, thread1, -1);
    size_t in = add(TR_KIND_OP, "in", 100, 200, thread1, -1);
    size_t t1 = add(TR_KIND_PYTHON, "t", 990, 1200, thread1, -1);
    size_t after = add(TR_KIND_OP, "after", 1000, 1100, thread1, -1);
    /* equal lengths: the later one; a zero-length event never overlaps */
    size_t x = add(TR_KIND_RANGE, "x", 2000, 2100, thread1, -1);
    size_t y = add(TR_KIND_RANGE, "y", 2050, 2150, thread1, -1);
    size_t z = add(TR_KIND_MARK, "z", 2100, 2100, thread1, -1);
    /* the same intervals on another thread: the shorter first this time */
    size_t p2 = add(TR_KIND_RANGE, "p2", 0, 50, thread2, -1);
    size_t l2 = add(TR_KIND_RANGE, "l2", 40, 500, thread2, -1);
    /* a stream's activities too (a CUDA graph's kernels overlap on the launch's stream),
     * added out of time order; one inside another nests */
    size_t k3 = add(TR_KIND_KERNEL, "k3", 200, 300, 0, -1);
    size_t k1 = add(TR_KIND_KERNEL, "k1", 0, 100, 0, -1);
    size_t k2 = add(TR_KIND_KERNEL, "k2", 90, 120, 0, -1);
    size_t k4 = add(TR_KIND_MEMSET, "k4", 210, 220, 0, -1);
    size_t k5 = add(TR_KIND_KERNEL, "k5", 250, 400, 0, -1);
    build();
    CU_ASSERT(!unnested(k1) && unnested(k2) && !unnested(k4));
    CU_ASSERT(unnested(k3) && !unnested(k5));
    CU_ASSERT(unnested(a) && unnested(b));
    CU_ASSERT(!unnested(s) && !unnested(in) && !unnested(after));
    CU_ASSERT(unnested(t1));
    CU_ASSERT(!unnested(x) && unnested(y) && !unnested(z));
    CU_ASSERT(unnested(p2) && !unnested(l2));
    /* the tree itself is unchanged by it: t is a sibling of S, "after" is t's child */
    CU_ASSERT_EQUAL(EV(t1)->parent, -1);
    CU_ASSERT_EQUAL(EV(after)->parent, (int64_t)t1);
    CU_ASSERT_EQUAL(EV(in)->parent, (int64_t)s);
    /* a rebuild gives the same flags, and clears those that no longer hold */
    EV(y)->start = 2100;
    build();
    CU_ASSERT(!unnested(x) && !unnested(y));
    CU_ASSERT(unnested(a) && unnested(t1) && unnested(p2));
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
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a)), 10);
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
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(p)), 90);
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
    CU_ASSERT_EQUAL(tr_depth(&t, EV(drv)), 3);
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
    CU_ASSERT_EQUAL(tr_depth(&t, EV(k1)), 3);
    CU_ASSERT_EQUAL(EV(k4)->parent, -1);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(inner)), 40);
    CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(inner)), 40);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(op)), 5);
    CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(op)), 45);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(l1)), 0);       /* counted once: in the op, not the call */
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(l3)), 7);       /* no enclosing range: the call itself */
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(k3)), 7);
    CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(k2)), 5);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(op)), 100 - 50 - 10);
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
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a)), 0);
    CU_ASSERT_EQUAL(EV(c)->parent, (int64_t)p);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(p)), 90);
    tr_trace_free(&t);
}

static void test_memory(void)
{
    setup();
    size_t p = add(TR_KIND_OP, "P", 0, 100, thread1, -1);
    size_t c = add(TR_KIND_OP, "C", 10, 50, thread1, -1);
    size_t m1 = add(TR_KIND_MEMORY, "[memory]", 20, 20, thread1, -1);
    tr_set_bytes(&t, EV(m1), 512);
    size_t m2 = add(TR_KIND_MEMORY, "[memory]", 60, 60, thread1, -1);
    tr_set_bytes(&t, EV(m2), -128);
    size_t m3 = add(TR_KIND_MEMORY, "[memory]", 70, 70, thread1, -1);
    tr_set_bytes(&t, EV(m3), 4096);
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
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(call)), 20);
    tr_trace_free(&t);
}

static void test_redispatch_merge(void)
{
    /* add[0,10) > add[0,10) > add[2,8) > k[3,4): one add (PyTorch's _remove_dup_nodes),
     * owning k and the GPU time both outer ops launched (PyTorch keeps only the inner's);
     * a same-named op with a sibling, and a same-named range, are left alone */
    setup();
    size_t a1 = add(TR_KIND_OP, "aten::add", 0, 10, thread1, -1);
    size_t a2 = add(TR_KIND_OP, "aten::add", 0, 10, thread1, -1);
    size_t a3 = add(TR_KIND_OP, "aten::add", 2, 8, thread1, -1);
    size_t k = add(TR_KIND_OP, "k", 3, 4, thread1, -1);
    size_t call = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 5, 6, thread1, 9);
    size_t kern = add(TR_KIND_KERNEL, "kernel", 20, 50, 0, 9);
    size_t m = add(TR_KIND_MEMORY, "[memory]", 7, 7, thread1, -1);
    tr_set_bytes(&t, EV(m), 64);
    size_t b1 = add(TR_KIND_OP, "aten::mul", 20, 30, thread1, -1);
    size_t b2 = add(TR_KIND_OP, "aten::mul", 21, 25, thread1, -1);
    size_t b3 = add(TR_KIND_OP, "other", 26, 28, thread1, -1);
    size_t r1 = add(TR_KIND_RANGE, "step", 40, 50, thread1, -1);
    size_t r2 = add(TR_KIND_RANGE, "step", 41, 49, thread1, -1);
    build();
    CU_ASSERT(EV(a2)->flags & TR_FLAG_MERGED);
    CU_ASSERT(EV(a3)->flags & TR_FLAG_MERGED);
    CU_ASSERT(!(EV(a1)->flags & TR_FLAG_MERGED));
    CU_ASSERT_EQUAL(t.merged_redispatch, 2);
    CU_ASSERT_EQUAL(EV(k)->parent, (int64_t)a1);
    CU_ASSERT_EQUAL(EV(call)->parent, (int64_t)a1);
    CU_ASSERT_EQUAL(EV(kern)->parent, (int64_t)call);
    CU_ASSERT_EQUAL(EV(a2)->parent, (int64_t)a1);
    CU_ASSERT_EQUAL(EV(a3)->parent, (int64_t)a1);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a1)), 8);           /* 10 - k - the call */
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a2)), 0);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a3)), 0);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(a1)), 30);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(a3)), 0);
    CU_ASSERT_EQUAL(MEM(a1)->cpu_self, 64);
    CU_ASSERT(!(EV(b2)->flags & TR_FLAG_MERGED));   /* its parent has two children */
    CU_ASSERT_EQUAL(EV(b3)->parent, (int64_t)b1);
    CU_ASSERT(!(EV(r2)->flags & TR_FLAG_MERGED));   /* ranges are the user's own */
    CU_ASSERT_EQUAL(EV(r2)->parent, (int64_t)r1);
    build();                                        /* idempotent */
    CU_ASSERT_EQUAL(t.merged_redispatch, 2);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(a1)), 8);
    tr_trace_free(&t);
}

/* Ops that merge are taken out of the tree where they were (tree.c's
 * unlink_merged()) rather than by a second walk: the tree must be the one
 * built from the same events without them.  Random ops on two threads, with
 * same-named ops nested in others (some the same interval, some chains of
 * them), siblings that overlap, memory instants and a few ranges, so that
 * many merge. */
typedef struct { tr_kind kind; int64_t s, e; uint32_t th; const char *name; } merge_gen;

static size_t gen_merge_events(merge_gen *g, size_t cap)
{
    unsigned seed = 777;
    size_t n = 0;
    while (n + 3 <= cap) {
        seed = seed * 1103515245u + 12345u;
        int64_t s = (int64_t)((seed >> 8) % 3000) - 1500;   /* negative times too */
        int64_t len = (seed >> 4) % 7 == 0 ? 0 : 1 + (seed >> 6) % 200;
        unsigned pick = (seed >> 20) % 10;
        uint32_t th = 1 + (seed >> 24) % 2;
        const char *name = (seed >> 26) % 3 == 0 ? "y" : "x";
        if (pick == 0) {
            g[n++] = (merge_gen){TR_KIND_MEMORY, s, s, th, "[memory]"};
            continue;
        }
        tr_kind kind = pick == 1 ? TR_KIND_RANGE : TR_KIND_OP;
        g[n++] = (merge_gen){kind, s, s + len, th, name};
        /* a redispatch: the same name within, sometimes twice */
        for (int d = 0; d < 2 && kind == TR_KIND_OP && (seed >> (12 + d)) % 3 == 0; d++) {
            int64_t in = len > 4 ? (seed >> (14 + d)) % 2 : 0;
            s += in;
            len -= 2 * in;
            g[n++] = (merge_gen){kind, s, s + len, th, name};
        }
    }
    return n;
}

static void test_merge_patches_tree(void)
{
    enum { N = 6000 };
    static merge_gen g[N];
    static size_t in_b[N];
    size_t n = gen_merge_events(g, N);
    setup();
    for (size_t i = 0; i < n; i++)
        add(g[i].kind, g[i].name, g[i].s, g[i].e, g[i].th == 1 ? thread1 : thread2, -1);
    build();
    tr_trace a = t;   /* the trace with every event, merged ops flagged */
    CU_ASSERT(a.merged_redispatch > 300);
    setup();
    for (size_t i = 0; i < n; i++) {
        in_b[i] = t.events.n;
        if (!(a.events.v[i].flags & TR_FLAG_MERGED))
            add(g[i].kind, g[i].name, g[i].s, g[i].e, g[i].th == 1 ? thread1 : thread2, -1);
    }
    build();
    CU_ASSERT_EQUAL(t.merged_redispatch, 0);
    size_t same = 0, merged_ok = 0;
    for (size_t i = 0; i < n; i++) {
        const tr_event *ea = &a.events.v[i];
        if (ea->flags & TR_FLAG_MERGED) {
            const tr_event *o = ea->parent >= 0 ? &a.events.v[ea->parent] : NULL;
            merged_ok += o && !(o->flags & TR_FLAG_MERGED) && o->name == ea->name
                         && tr_cpu_self(&a, ea) == 0 && tr_depth(&a, ea) == tr_depth(&a, o) + 1;
            continue;
        }
        const tr_event *eb = EV(in_b[i]);
        int64_t pa = ea->parent < 0 ? -1 : (int64_t)in_b[ea->parent];
        same += pa == eb->parent && tr_depth(&a, ea) == tr_depth(&t, eb)
                && tr_cpu_self(&a, ea) == tr_cpu_self(&t, eb)
                && (ea->flags & ~TR_FLAG_UNNESTED) == (eb->flags & ~TR_FLAG_UNNESTED);
    }
    CU_ASSERT_EQUAL(merged_ok, a.merged_redispatch);
    CU_ASSERT_EQUAL(same, n - a.merged_redispatch);
    tr_trace_free(&t);
    tr_trace_free(&a);
}

static uint32_t stack_of(const char *frame)
{
    uint32_t f = tr_str(&t, frame);
    return tr_stack_get(&t, &f, 1);
}

static void set_seq(size_t i, int64_t seq)
{
    tr_event_extra x = tr_extra(&t, EV(i));
    x.seq = seq;
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(i), &x), 0);
}

static size_t backward_fn(const char *name, int64_t s, int64_t e, uint32_t thread, int64_t seq,
                          int64_t fwd_tid)
{
    size_t i = add(TR_KIND_OP, name, s, e, thread, -1);
    set_seq(i, seq);
    EV(i)->flags |= TR_FLAG_BACKWARD;
    tr_vec_reserve(t.backward, t.backward.n + 1);
    t.backward.v[t.backward.n++] = (tr_backward_link){i, fwd_tid};
    return i;
}

static void test_backward_stacks(void)
{
    /* forward mm seq 7 on thread 1 (tid 1); MulBackward0 seq 7 fwd thread 1 on thread 2,
     * with a child: both take the forward stack.  seq 99 (no forward) and a backward
     * function without a forward thread (AccumulateGrad) get none.  A forward op listed
     * later with the same seq does not win. */
    setup();
    uint32_t fwd = stack_of("model.py(3): forward"), late = stack_of("other.py(1): f");
    uint32_t own = stack_of("torch/autograd/__init__.py(9): backward");
    size_t f1 = add(TR_KIND_OP, "aten::mm", 10, 20, thread1, -1);
    set_seq(f1, 7);
    EV(f1)->stack = fwd;
    size_t f2 = add(TR_KIND_OP, "aten::mm", 30, 40, thread1, -1);
    set_seq(f2, 7);
    EV(f2)->stack = late;
    size_t b = backward_fn("MmBackward0", 100, 200, thread2, 7, 1);
    EV(b)->stack = own;
    size_t bc = add(TR_KIND_OP, "aten::mm", 110, 120, thread2, -1);
    EV(bc)->stack = own;
    size_t orphan = backward_fn("AddBackward0", 300, 310, thread2, 99, 1);
    EV(orphan)->stack = own;
    size_t acc = backward_fn("torch::autograd::AccumulateGrad", 320, 330, thread2, 7, 0);
    EV(acc)->stack = own;
    build();
    CU_ASSERT_EQUAL(EV(b)->stack, fwd);
    CU_ASSERT_EQUAL(EV(bc)->stack, fwd);
    CU_ASSERT_EQUAL(EV(orphan)->stack, 0);
    CU_ASSERT_EQUAL(EV(acc)->stack, 0);
    CU_ASSERT_EQUAL(EV(f2)->stack, late);   /* forward events keep their own */
    tr_trace_free(&t);
}

/* The forward ops' map starts small and grows as their sequence numbers
 * come: 3000 forward ops, each with a stack of its own (and a later one
 * with its number, which does not win), then a backward function for each
 * number with a child: every one finds its forward op's stack. */
static void test_backward_stacks_many(void)
{
    enum { N = 3000 };
    setup();
    static uint32_t stack[N];
    static size_t bwd[N], child[N];
    char frame[64];
    for (int k = 0; k < N; k++) {
        snprintf(frame, sizeof frame, "model.py(%d): forward", k);
        stack[k] = stack_of(frame);
        size_t f = add(TR_KIND_OP, "aten::mm", 10 * k, 10 * k + 5, thread1, -1);
        set_seq(f, k);
        EV(f)->stack = stack[k];
    }
    uint32_t late = stack_of("other.py(1): f");
    for (int k = 0; k < N; k++) {
        size_t f = add(TR_KIND_OP, "aten::mm", 100000 + 10 * k, 100000 + 10 * k + 5, thread1, -1);
        set_seq(f, k);
        EV(f)->stack = late;
    }
    for (int k = 0; k < N; k++) {
        int64_t at = 1000000 + 100 * k;
        bwd[k] = backward_fn("MmBackward0", at, at + 50, thread2, k, 1);
        child[k] = add(TR_KIND_OP, "aten::mm", at + 10, at + 20, thread2, -1);
    }
    build();
    int ok = 1;
    for (int k = 0; k < N; k++)
        ok &= EV(bwd[k])->stack == stack[k] && EV(child[k])->stack == stack[k];
    CU_ASSERT(ok);
    tr_trace_free(&t);
}

static void test_memory_closed_windows(void)
{
    /* A[0,10) ends at 10 with a child A1[5,10); Z[10,10) is zero-length; B[10,20).
     * An allocation at 10 goes to the deepest holder of the closed window: A1 (depth 1),
     * not B; at 20 (B's end) to B; one on another thread at 5 to none of them. */
    setup();
    size_t a = add(TR_KIND_OP, "A", 0, 10, thread1, -1);
    size_t a1 = add(TR_KIND_OP, "A1", 5, 10, thread1, -1);
    size_t bb = add(TR_KIND_OP, "B", 10, 20, thread1, -1);
    size_t z = add(TR_KIND_OP, "Z", 15, 15, thread1, -1);
    size_t m10 = add(TR_KIND_MEMORY, "[memory]", 10, 10, thread1, -1);
    tr_set_bytes(&t, EV(m10), 100);
    size_t m15 = add(TR_KIND_MEMORY, "[memory]", 15, 15, thread1, -1);
    tr_set_bytes(&t, EV(m15), 7);
    size_t m20 = add(TR_KIND_MEMORY, "[memory]", 20, 20, thread1, -1);
    tr_set_bytes(&t, EV(m20), 3);
    size_t other = add(TR_KIND_MEMORY, "[memory]", 5, 5, thread2, -1);
    tr_set_bytes(&t, EV(other), 1);
    build();
    CU_ASSERT_EQUAL(EV(m10)->parent, (int64_t)a1);
    CU_ASSERT_EQUAL(EV(m15)->parent, (int64_t)z);   /* a zero-length op holds its allocation */
    CU_ASSERT_EQUAL(EV(m20)->parent, (int64_t)bb);
    CU_ASSERT_EQUAL(EV(other)->parent, -1);
    CU_ASSERT_EQUAL(MEM(a1)->cpu_self, 100);
    CU_ASSERT_EQUAL(MEM(a)->cpu_total, 100);
    CU_ASSERT_EQUAL(MEM(a)->cpu_self, 0);
    CU_ASSERT_EQUAL(MEM(z)->cpu_self, 7);
    CU_ASSERT_EQUAL(MEM(bb)->cpu_total, 10);
    CU_ASSERT_EQUAL(MEM(bb)->cpu_self, 3);
    tr_trace_free(&t);
}

static void test_python_frames_hold_no_gpu_self(void)
{
    /* a launch directly under a Python frame charges the call, not the frame */
    setup();
    size_t py = add(TR_KIND_PYTHON, "model.py(3): forward", 0, 100, thread1, -1);
    size_t call = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 10, 20, thread1, 4);
    add(TR_KIND_KERNEL, "k", 30, 70, 0, 4);
    build();
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(py)), 0);
    CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(py)), 40);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(call)), 40);
    tr_trace_free(&t);
}

static void test_orphan_sync_self(void)
{
    /* a thread-less sync whose API call is not in the trace is its own self time */
    setup();
    size_t sync = add(TR_KIND_SYNC, "[sync] device", 10, 90, 0, 77);
    EV(sync)->thread = 0;
    EV(sync)->stream = stream1;
    build();
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(sync)), 80);
    tr_trace_free(&t);
}

static void test_extreme_times_saturate(void)
{
    /* a span wider than int64 saturates instead of wrapping negative */
    setup();
    size_t p = add(TR_KIND_RANGE, "P", INT64_MIN + 10, INT64_MAX - 10, thread1, -1);
    size_t c = add(TR_KIND_RANGE, "C", -100, 100, thread1, -1);
    build();
    CU_ASSERT(tr_cpu_self(&t, EV(p)) > 0);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(c)), 200);
    CU_ASSERT_EQUAL(EV(c)->parent, (int64_t)p);
    tr_trace_free(&t);
}

/* Many nested events in shuffled order give the same tree whether the sort
 * takes its radix path (times and tracks within 64 bits) or its fallback
 * (times more than 2^62 ns apart). */
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
        ok &= EV(idx[3 * g])->parent == -1 && tr_cpu_self(&t, EV(idx[3 * g])) == 400;
        ok &= EV(idx[3 * g + 1])->parent == (int64_t)idx[3 * g];
        ok &= EV(idx[3 * g + 2])->parent == (int64_t)idx[3 * g + 1];
        ok &= tr_depth(&t, EV(idx[3 * g + 2])) == 2;
    }
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(EV(lone)->parent, -1);
    tr_trace_free(&t);
}

static void test_sort_paths(void)
{
    check_shuffled_nesting(1000, 2000000);                        /* radix */
    check_shuffled_nesting(1700000000000000000, 1800000000000000000); /* radix, years apart */
    check_shuffled_nesting(-4000000000000000000, 4000000000000000000); /* the start alone as key */
    check_shuffled_nesting(-5000000, 0);                          /* negative times */
}

/* Starts 2^62 ns apart leave no room for two tracks beside the time in the
 * sort key: an inner range that starts just past 2^62 ns after the first
 * event still nests in the outer one that starts just before. */
static void test_sort_key_room(void)
{
    setup();
    const int64_t edge = (int64_t)1 << 62;
    size_t first = add(TR_KIND_RANGE, "first", 0, 10, thread1, -1);
    size_t other = add(TR_KIND_RANGE, "other", 5, 20, thread2, -1);
    size_t outer = add(TR_KIND_RANGE, "outer", edge - 1000, edge + 5000, thread1, -1);
    size_t inner = add(TR_KIND_RANGE, "inner", edge + 1000, edge + 2000, thread1, -1);
    build();
    CU_ASSERT_EQUAL(EV(first)->parent, -1);
    CU_ASSERT_EQUAL(EV(other)->parent, -1);
    CU_ASSERT_EQUAL(EV(outer)->parent, -1);
    CU_ASSERT_EQUAL(EV(inner)->parent, (int64_t)outer);
    CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(outer)), 5000);
    tr_trace_free(&t);
}

/* Starts days apart leave no room for the thread in the sort key: events of
 * two threads with the same starts still nest each in its own thread. */
static void test_sort_wide_span(void)
{
    setup();
    enum { G = 300 };
    const int64_t day = 86400000000000;
    size_t outer[2][G], inner[2][G];
    for (int g = G - 1; g >= 0; g--)
        for (int th = 0; th < 2; th++) {
            int64_t at = (g % 3) * day + 1000 * g;
            inner[th][g] = add(TR_KIND_RANGE, "inner", at, at + 10 + th, th ? thread2 : thread1, -1);
            outer[th][g] = add(TR_KIND_RANGE, "outer", at, at + 100 + th, th ? thread2 : thread1, -1);
        }
    build();
    int ok = 1;
    for (int g = 0; g < G; g++)
        for (int th = 0; th < 2; th++) {
            ok &= EV(outer[th][g])->parent == -1;
            ok &= EV(inner[th][g])->parent == (int64_t)outer[th][g];
            ok &= tr_cpu_self(&t, EV(outer[th][g])) == 90;
        }
    CU_ASSERT(ok);
    tr_trace_free(&t);
}

/* Events that come as a few runs in time order (nvprof's tables: all the
 * ranges, then all the calls) are merged rather than radix-sorted: the same
 * nesting, ties across runs included (an outer and an inner range starting
 * together, from different runs, with a call of a third run at that start on
 * the other thread). */
static void test_sort_runs_merged(void)
{
    setup();
    enum { G = 700 };
    size_t outer[G], inner[G], call[G], other[G];
    for (int g = 0; g < G; g++)
        inner[g] = add(TR_KIND_RANGE, "inner", 1000 * g, 1000 * g + 200, thread1, -1);
    for (int g = 0; g < G; g++)
        call[g] = add(TR_KIND_RUNTIME, "call", 1000 * g + 10, 1000 * g + 110, thread1, -1);
    for (int g = 0; g < G; g++)
        other[g] = add(TR_KIND_RUNTIME, "call", 1000 * g, 1000 * g + 50, thread2, -1);
    for (int g = 0; g < G; g++)
        outer[g] = add(TR_KIND_RANGE, "outer", 1000 * g, 1000 * g + 500, thread1, -1);
    build();
    int ok = 1;
    for (int g = 0; g < G; g++) {
        ok &= EV(outer[g])->parent == -1 && tr_cpu_self(&t, EV(outer[g])) == 300;
        ok &= EV(inner[g])->parent == (int64_t)outer[g] && tr_depth(&t, EV(inner[g])) == 1;
        ok &= EV(call[g])->parent == (int64_t)inner[g] && tr_depth(&t, EV(call[g])) == 2;
        ok &= EV(other[g])->parent == -1;
    }
    CU_ASSERT(ok);
    tr_trace_free(&t);
}

/* The tree does not depend on the order the events come in: one run in
 * time order, a few runs (a table a kind, merged from the events), or
 * shuffled (the radix sort), with many equal starts, give every event the
 * same parent, depth and self time.  Intervals are distinct per thread and
 * kind, so the input order never breaks a tie. */
typedef struct { tr_kind kind; int64_t s, e; uint32_t th; } gen_event;

static int cmp_gen_time(const void *a, const void *b)
{
    const gen_event *x = a, *y = b;
    if (x->s != y->s)
        return x->s < y->s ? -1 : 1;
    return x->th < y->th ? -1 : x->th > y->th;
}

static int cmp_gen_table(const void *a, const void *b)
{
    const gen_event *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    return cmp_gen_time(a, b);
}

static void build_from(const gen_event *g, size_t n, int64_t *parent_key, int64_t *depth, int64_t *self)
{
    setup();
    for (size_t i = 0; i < n; i++)
        add(g[i].kind, "e", g[i].s, g[i].e, g[i].th == 1 ? thread1 : thread2, -1);
    build();
    /* by a key of the event itself, not its index */
    for (size_t i = 0; i < n; i++) {
        int32_t p = EV(i)->parent;
        parent_key[i] = p < 0 ? -1 : (EV(p)->start << 22) + (EV(p)->end << 3) + EV(p)->kind;
        depth[i] = tr_depth(&t, EV(i));
        self[i] = tr_cpu_self(&t, EV(i));
    }
    tr_trace_free(&t);
}

static void test_tree_whatever_the_order(void)
{
    enum { N = 4000 };
    static gen_event g[N], sorted[N];
    static int64_t pa[N], da[N], sa[N], pb[N], db[N], sb[N];
    unsigned seed = 12345;
    size_t n = 0;
    while (n < N) {
        seed = seed * 1103515245u + 12345u;
        int64_t s = (seed >> 8) % 2000;           /* starts collide often */
        int64_t len = 1 + (seed >> 4) % 300;
        tr_kind kind = (seed >> 20) % 3 == 0 ? TR_KIND_RANGE : (seed >> 20) % 3 == 1 ? TR_KIND_OP : TR_KIND_RUNTIME;
        uint32_t th = 1 + (seed >> 24) % 2;
        int dup = 0;
        for (size_t j = 0; j < n && !dup; j++)
            dup = g[j].s == s && g[j].e == s + len && g[j].th == th && g[j].kind == kind;
        if (!dup)
            g[n++] = (gen_event){kind, s, s + len, th};
    }
    /* the events' identities: each ordering is read back into g's order */
    memcpy(sorted, g, sizeof g);
    qsort(sorted, N, sizeof *sorted, cmp_gen_time);
    build_from(sorted, N, pa, da, sa);
    int (*orders[])(const void *, const void *) = {cmp_gen_table, NULL};
    for (int o = 0; o < 2; o++) {
        static gen_event in[N];
        memcpy(in, g, sizeof g);   /* g is shuffled: the radix sort */
        if (orders[o])
            qsort(in, N, sizeof *in, orders[o]);
        build_from(in, N, pb, db, sb);
        int ok = 1;
        for (size_t i = 0; i < N; i++) {
            /* find in's event i in sorted */
            size_t j = 0;
            while (j < N && !(sorted[j].s == in[i].s && sorted[j].e == in[i].e && sorted[j].th == in[i].th
                              && sorted[j].kind == in[i].kind))
                j++;
            ok &= j < N && pb[i] == pa[j] && db[i] == da[j] && sb[i] == sa[j];
        }
        CU_ASSERT(ok);
    }
}

/* Past 65,536 events out of order the sort spreads them by the top bits of
 * their keys into groups, then merges each group's runs or sorts it by its
 * lower bits, and spreads a group larger than the cache again.  Each of
 * those gives the tree that the events in time order give (no sort at
 * all): events shuffled (groups of many runs), in chunks of each thread's
 * events in time order (groups of a few runs), and with nearly all of them
 * within 3 ms and the rest hours away (one group holding most, spread
 * again).  Each time slot holds, on each thread, an outer range and an
 * inner one with the same start (a tie) and a call within. */
enum { LARGE_SLOTS = 30000, LARGE_N = LARGE_SLOTS * 6 };

static int64_t large_slot_start(int g, int skewed)
{
    return skewed && g >= LARGE_SLOTS - 50 ? (int64_t)g * 1000000000 : (int64_t)g * 100;
}

/* Where a slot's outer range (which 0), inner range (1) and call (2) of a
 * thread lie in time order: both threads' ranges at the slot's start, then
 * both calls. */
static size_t large_at(int slot, uint32_t th, int which)
{
    return (size_t)slot * 6 + (which < 2 ? (th - 1) * 2 + (size_t)which : 4 + (th - 1));
}

static void build_large(const gen_event *g, const uint32_t *perm, int64_t *parent_key, int64_t *depth,
                        int64_t *self)
{
    setup();
    for (size_t i = 0; i < LARGE_N; i++) {
        const gen_event *e = &g[perm[i]];
        add(e->kind, "e", e->s, e->e, e->th == 1 ? thread1 : thread2, -1);
    }
    build();
    /* by the event's place in g, not its index */
    for (size_t i = 0; i < LARGE_N; i++) {
        int32_t p = EV(i)->parent;
        parent_key[perm[i]] = p < 0 ? -1 : (int64_t)perm[p];
        depth[perm[i]] = tr_depth(&t, EV(i));
        self[perm[i]] = tr_cpu_self(&t, EV(i));
    }
    tr_trace_free(&t);
}

static void test_sort_large_whatever_the_order(void)
{
    static gen_event g[LARGE_N];
    static uint32_t perm[LARGE_N];
    static int64_t pa[LARGE_N], da[LARGE_N], sa[LARGE_N], pb[LARGE_N], db[LARGE_N], sb[LARGE_N];
    for (int skewed = 0; skewed < 2; skewed++) {
        /* g in the sort's order: by start, then thread */
        for (int slot = 0; slot < LARGE_SLOTS; slot++)
            for (uint32_t th = 1; th <= 2; th++) {
                int64_t s = large_slot_start(slot, skewed);
                g[large_at(slot, th, 0)] = (gen_event){TR_KIND_RANGE, s, s + 80, th};
                g[large_at(slot, th, 1)] = (gen_event){TR_KIND_RANGE, s, s + 40, th};
                g[large_at(slot, th, 2)] = (gen_event){TR_KIND_RUNTIME, s + 10, s + 30, th};
            }
        for (uint32_t i = 0; i < LARGE_N; i++)
            perm[i] = i;
        build_large(g, perm, pa, da, sa);
        int ok = 1;   /* the inner range in the outer one, the call in the inner */
        for (int slot = 0; slot < LARGE_SLOTS; slot++)
            for (uint32_t th = 1; th <= 2; th++) {
                ok &= pa[large_at(slot, th, 0)] == -1 && sa[large_at(slot, th, 0)] == 40;
                ok &= pa[large_at(slot, th, 1)] == (int64_t)large_at(slot, th, 0);
                ok &= pa[large_at(slot, th, 2)] == (int64_t)large_at(slot, th, 1);
                ok &= da[large_at(slot, th, 2)] == 2 && sa[large_at(slot, th, 2)] == 20;
            }
        CU_ASSERT(ok);
        for (int order = 0; order < 2; order++) {
            if (order == 0) {   /* shuffled */
                unsigned seed = 777;
                for (uint32_t i = LARGE_N - 1; i > 0; i--) {
                    seed = seed * 1103515245u + 12345u;
                    uint32_t j = (seed >> 4) % (i + 1), x = perm[i];
                    perm[i] = perm[j];
                    perm[j] = x;
                }
            } else {            /* chunks of 500 events of one thread, in time order */
                size_t at = 0;
                for (uint32_t chunk = 0; at < LARGE_N; chunk++)
                    for (uint32_t th = 1; th <= 2; th++)
                        for (uint32_t i = chunk * 500; i < (chunk + 1) * 500 && i < LARGE_N / 2; i++)
                            perm[at++] = large_at((int)(i / 3), th, (int)(i % 3));
            }
            build_large(g, perm, pb, db, sb);
            CU_ASSERT(memcmp(pa, pb, sizeof pa) == 0);
            CU_ASSERT(memcmp(da, db, sizeof da) == 0);
            CU_ASSERT(memcmp(sa, sb, sizeof sa) == 0);
        }
    }
}

/* Each GPU activity finds its launch by correlation id whatever the order it
 * comes in: the search starts where the last one ended, so ids in launch
 * order, in reverse, jumping about, missing (between two launches, before the
 * first, after the last), a driver call with a runtime call's id (the
 * runtime call wins) and a second runtime call with one (the first wins) all
 * find what a search of the whole index finds. */
static void test_correlation_lookups(void)
{
    setup();
    enum { N = 2000 };
    size_t launch[N];
    for (int i = 0; i < N; i++)   /* ids 7, 10, 13, ...: gaps between them */
        launch[i] = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 10 * i, 10 * i + 5, thread1, 3 * i + 7);
    size_t driver = add(TR_KIND_DRIVER, "cuLaunchKernel", 100000, 100005, thread1, 3 * 500 + 7);
    /* a second runtime call with an id taken: the first one added stands */
    size_t dup = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 100010, 100015, thread1, 3 * 1000 + 7);
    int order[3 * N];
    int n = 0;
    for (int i = 0; i < N / 4; i++)            /* launch order */
        order[n++] = i;
    for (int i = N / 2 - 1; i >= N / 4; i--)   /* reverse */
        order[n++] = i;
    for (int i = 0; i < N / 2; i++)            /* jumping between the two ends */
        order[n++] = (i & 1) ? N / 2 + i / 2 : N - 1 - i / 2;
    size_t kernel[3 * N];
    for (int k = 0; k < n; k++)
        kernel[k] = add(TR_KIND_KERNEL, "k", 1000000 + k, 1000001 + k, 0, 3 * order[k] + 7);
    size_t missing[] = {add(TR_KIND_KERNEL, "gap", 2000000, 2000001, 0, 3 * 40 + 8),
                        add(TR_KIND_KERNEL, "before", 2000002, 2000003, 0, 1),
                        add(TR_KIND_KERNEL, "after", 2000004, 2000005, 0, 3 * N + 100),
                        add(TR_KIND_KERNEL, "gap2", 2000006, 2000007, 0, 3 * 1500 + 9)};
    size_t again = add(TR_KIND_KERNEL, "k", 2000008, 2000009, 0, 3 * 500 + 7);
    build();
    int ok = 1;
    for (int k = 0; k < n; k++)
        ok &= EV(kernel[k])->parent == (int64_t)launch[order[k]];
    CU_ASSERT(ok);
    for (size_t m = 0; m < sizeof missing / sizeof missing[0]; m++)
        CU_ASSERT_EQUAL(EV(missing[m])->parent, -1);
    CU_ASSERT_EQUAL(EV(again)->parent, (int64_t)launch[500]);   /* the runtime call, not the driver's */
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(driver)), 0);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(dup)), 0);
    tr_trace_free(&t);
}

/* The correlation index is the same whatever order the API calls come in:
 * as one run of rising ids, as a driver table then a runtime table (a few
 * runs, merged from the events) or shuffled (sorted).  Of calls with one id
 * it keeps the first runtime call in event order, else the first call. */
static void test_correlation_index_orders(void)
{
    enum { N = 600 };
    for (int run = 0; run < 6; run++) {
        /* the second three: the later half of the ids past 2^33, a second segment */
        int layout = run % 3;
        int64_t wide = run >= 3 ? (int64_t)1 << 33 : 0;
#define ID(i, d) (2 * (int64_t)(i) + (d) + ((i) >= N / 2 ? wide : 0))
        setup();
        /* id 2i+1: a driver call, then two runtime calls; id 2i+2: two driver calls */
        size_t first_runtime[N], first_driver[N];
        int perm[N];
        for (int i = 0; i < N; i++)
            perm[i] = layout == 2 ? (i * 7919) % N : i;   /* 7919 is prime to N: a shuffle */
        for (int pass = 0; pass < (layout ? 2 : 1); pass++)
            for (int k = 0; k < N; k++) {
                int i = perm[k];
                int64_t at = 100 * i;
                if (layout == 0 || pass == 0)
                    add(TR_KIND_DRIVER, "cuLaunchKernel", at, at + 5, thread1, ID(i, 1));
                if (layout == 0 || pass == 1) {
                    first_runtime[i] = add(TR_KIND_RUNTIME, "cudaLaunchKernel", at + 30, at + 35, thread1, ID(i, 1));
                    add(TR_KIND_RUNTIME, "cudaLaunchKernel", at + 40, at + 45, thread1, ID(i, 1));
                }
                if (layout == 0 || pass == 0) {
                    first_driver[i] = add(TR_KIND_DRIVER, "cuLaunchKernel", at + 10, at + 15, thread1, ID(i, 2));
                    add(TR_KIND_DRIVER, "cuLaunchKernel", at + 20, at + 25, thread1, ID(i, 2));
                }
            }
        size_t k1[N], k2[N];
        for (int i = N; i-- > 0;) {   /* launched in reverse */
            k1[i] = add(TR_KIND_KERNEL, "k", 1000000 + 10 * i, 1000000 + 10 * i + 5, 0, ID(i, 1));
            k2[i] = add(TR_KIND_KERNEL, "k", 2000000 + 10 * i, 2000000 + 10 * i + 5, 0, ID(i, 2));
        }
        /* ids in no segment, and between two of a segment's */
        size_t lost[] = {add(TR_KIND_KERNEL, "k", 3000000, 3000005, 0, ((int64_t)1 << 34) + 1),
                         add(TR_KIND_KERNEL, "k", 3000010, 3000015, 0, ((int64_t)1 << 32) + 1),
                         add(TR_KIND_KERNEL, "k", 3000020, 3000025, 0, ID(N - 1, 2) + 1)};
        build();
        int ok = 1;
        for (size_t m = 0; m < sizeof lost / sizeof lost[0]; m++)
            ok &= EV(lost[m])->parent == -1;
        for (int i = 0; i < N; i++)
            ok &= EV(k1[i])->parent == (int32_t)first_runtime[i] && EV(k2[i])->parent == (int32_t)first_driver[i];
        CU_ASSERT(ok);
        tr_trace_free(&t);
    }
#undef ID
}

/* Correlations and depths past the event's 32 and 16 bits keep their values
 * (in the trace's wide map), and link as the narrow ones do. */
static void test_wide_correlation_and_depth(void)
{
    setup();
    const int64_t corrs[] = {0, 5, (int64_t)UINT32_MAX - 2, (int64_t)UINT32_MAX - 1, UINT32_MAX,
                             (int64_t)1 << 40, -7, INT64_MAX, INT64_MIN};
    size_t n = sizeof corrs / sizeof corrs[0], call[9], kern[9];
    for (size_t i = 0; i < n; i++) {
        call[i] = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 10 * (int64_t)i, 10 * (int64_t)i + 5, thread1, corrs[i]);
        kern[i] = add(TR_KIND_KERNEL, "k", 10 * (int64_t)i + 6, 10 * (int64_t)i + 9, 0, corrs[i]);
    }
    CU_ASSERT_EQUAL(tr_correlation(&t, EV(call[0])), 0);
    CU_ASSERT_EQUAL(EV(call[2])->correlation32, UINT32_MAX - 2);   /* the widest narrow value */
    CU_ASSERT_EQUAL(EV(call[3])->correlation32, TR_CORRELATION_WIDE);
    size_t none = add(TR_KIND_KERNEL, "k", 200, 210, 0, -1);
    CU_ASSERT_EQUAL(EV(none)->correlation32, TR_CORRELATION_NONE);
    /* a chain of ranges deeper than 16 bits, the innermost launching a kernel */
    const size_t deep = 70000;
    size_t first = t.events.n;
    for (size_t d = 0; d < deep; d++)
        add(TR_KIND_RANGE, "r", 1000 + (int64_t)d, 1000000 - (int64_t)d, thread2, -1);
    size_t launch = add(TR_KIND_RUNTIME, "cudaLaunchKernel", 500000, 500001, thread2, 99);
    size_t k = add(TR_KIND_KERNEL, "deep", 600000, 600010, 0, 99);
    build();
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        ok &= tr_correlation(&t, EV(call[i])) == corrs[i] && tr_correlation(&t, EV(kern[i])) == corrs[i];
        ok &= EV(kern[i])->parent == (corrs[i] >= 0 ? (int32_t)call[i] : -1);
    }
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(tr_correlation(&t, EV(none)), -1);
    for (size_t d = 0; d < deep; d++)
        ok &= tr_depth(&t, EV(first + d)) == (int64_t)d;
    CU_ASSERT(ok);
    CU_ASSERT_EQUAL(tr_depth(&t, EV(launch)), (int64_t)deep);
    CU_ASSERT_EQUAL(tr_depth(&t, EV(k)), (int64_t)deep + 1);
    CU_ASSERT_EQUAL(EV(k)->parent, (int32_t)launch);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(first + deep - 1)), 10);
    /* a rebuild gives the same depths */
    build();
    CU_ASSERT_EQUAL(tr_depth(&t, EV(k)), (int64_t)deep + 1);
    CU_ASSERT_EQUAL(tr_depth(&t, EV(first + 100)), 100);
    tr_trace_free(&t);
}

/* The derived times are 32-bit fields: longer ones (4.29 s and up), negative
 * ones, and sums that pass 32 bits all read back whole. */
static void test_wide_times(void)
{
    const int64_t S = 1000000000;   /* ns a second */
    setup();
    size_t op = add(TR_KIND_OP, "step", 0, 10 * S, thread1, -1);
    size_t inner = add(TR_KIND_RANGE, "inner", S, 2 * S, thread1, -1);
    add(TR_KIND_RUNTIME, "cudaLaunchKernel", 3 * S, 3 * S + 10, thread1, 1);
    add(TR_KIND_RUNTIME, "cudaLaunchKernel", 4 * S, 4 * S + 10, thread1, 2);
    add(TR_KIND_RUNTIME, "cudaLaunchKernel", S + 100, S + 110, thread1, 3);
    add(TR_KIND_RUNTIME, "cudaLaunchKernel", 5 * S, 5 * S + 10, thread1, 4);
    size_t k1 = add(TR_KIND_KERNEL, "k1", 11 * S, 14 * S, 0, 1);        /* 3 s: narrow */
    add(TR_KIND_KERNEL, "k2", 14 * S, 17 * S, 0, 2);                     /* 3 s: their sum is not */
    size_t k3 = add(TR_KIND_KERNEL, "k3", 17 * S, 22 * S, 0, 3);        /* 5 s: wide alone */
    add(TR_KIND_KERNEL, "k4", 22 * S, 23 * S, 0, 4);                     /* added to a wide sum */
    size_t edge = add(TR_KIND_KERNEL, "edge", 0, (int64_t)UINT32_MAX - 1, 0, -1);
    size_t past = add(TR_KIND_KERNEL, "past", 0, UINT32_MAX, 0, -1);
    size_t sync = add(TR_KIND_SYNC, "[sync] device", 0, 5 * S, 0, 77);   /* outside the tree */
    EV(sync)->thread = 0;
    EV(sync)->stream = stream1;
    for (int pass = 0; pass < 2; pass++) {   /* a rebuild reads and sets them again */
        build();
        CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(op)), 10 * S - S - 30);
        CU_ASSERT_EQUAL(EV(op)->cpu_self32, TR_TIME_WIDE);
        CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(inner)), S - 10);
        CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(op)), 7 * S);
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(op)), 12 * S);
        CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(inner)), 5 * S);
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(inner)), 5 * S);
        CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(k1)), 3 * S);
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(k3)), 5 * S);
        CU_ASSERT_EQUAL(EV(edge)->gpu_self32, UINT32_MAX - 1);   /* the widest narrow value */
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(edge)), (int64_t)UINT32_MAX - 1);
        CU_ASSERT_EQUAL(EV(past)->gpu_self32, TR_TIME_WIDE);
        CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(past)), UINT32_MAX);
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(past)), UINT32_MAX);
        CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(sync)), 5 * S);
    }
    /* negative and extreme values through the setters, then a narrow one again;
     * the next event's wide correlation stays its own */
    CU_ASSERT_EQUAL(tr_set_correlation(&t, EV(k1 + 1), ((int64_t)1 << 41) + 5), 0);
    const int64_t vals[] = {-1, INT64_MIN, INT64_MAX, (int64_t)1 << 40, 0, 7};
    for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
        CU_ASSERT_EQUAL(tr_set_cpu_self(&t, EV(k1), vals[i]), 0);
        CU_ASSERT_EQUAL(tr_set_gpu_self(&t, EV(k1), vals[i] / 2), 0);
        CU_ASSERT_EQUAL(tr_set_gpu_total(&t, EV(k1), vals[i] / 3), 0);
        CU_ASSERT_EQUAL(tr_cpu_self(&t, EV(k1)), vals[i]);
        CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(k1)), vals[i] / 2);
        CU_ASSERT_EQUAL(tr_gpu_total(&t, EV(k1)), vals[i] / 3);
    }
    CU_ASSERT_EQUAL(tr_correlation(&t, EV(k1 + 1)), ((int64_t)1 << 41) + 5);
    CU_ASSERT_EQUAL(tr_gpu_self(&t, EV(k1 + 1)), 3 * S);
    /* the record stays small: past the memory limit each byte is new page cache */
    CU_ASSERT(sizeof(tr_event) <= 64);
    tr_trace_free(&t);
}

/* Raw names are kept once a name; an event whose raw name differs from its
 * name's keeps its own (in its extra row, or beside it), and each reads back
 * its own whatever the order they were set in. */
static void test_raw_names(void)
{
    setup();
    uint32_t mangled = tr_str(&t, "_Z1kv"), other = tr_str(&t, "_Z1kIiEvv");
    uint32_t msg1 = tr_str(&t, "aten::add, seq = 1"), msg2 = tr_str(&t, "aten::add, seq = 2");
    enum { N = 9 };
    size_t e[N];
    const char *names[N] = {"k", "k", "k", "k", "aten::add", "aten::add", "aten::add", "k", "k"};
    for (int i = 0; i < N; i++)
        e[i] = add(TR_KIND_KERNEL, names[i], 10 * i, 10 * i + 5, 0, -1);
    tr_event_extra x = tr_no_extra;
    x.seq = 1;
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(e[4]), &x), 0);
    x.seq = 2;
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(e[5]), &x), 0);
    const uint32_t raw[N] = {mangled, mangled, other, 0, msg1, msg2, msg1, mangled, other};
    for (int i = 0; i < N; i++)
        CU_ASSERT_EQUAL(tr_set_raw_name(&t, EV(e[i]), raw[i]), 0);
    x.seq = 8;   /* a row made after the raw name was set */
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(e[7]), &x), 0);
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(e[8]), &x), 0);
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= tr_event_raw_name(&t, EV(e[i])) == raw[i];
    CU_ASSERT(ok);
    CU_ASSERT_FALSE(EV(e[3])->flags & TR_FLAG_RAW_NAMED);
    /* set again: to the name's own (an own one set before must not win), to none */
    CU_ASSERT_EQUAL(tr_set_raw_name(&t, EV(e[2]), mangled), 0);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[2])), mangled);
    CU_ASSERT_EQUAL(tr_set_raw_name(&t, EV(e[2]), other), 0);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[2])), other);
    CU_ASSERT_EQUAL(tr_set_raw_name(&t, EV(e[0]), 0), 0);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[0])), 0);
    CU_ASSERT_EQUAL(tr_set_raw_name(&t, EV(e[4]), 0), 0);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[4])), 0);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[1])), mangled);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[5])), msg2);
    CU_ASSERT_EQUAL(tr_event_raw_name(&t, EV(e[8])), other);
    /* run.db holds each event's raw name, and not the flag that says it has one */
    build();
    char path[512];
    snprintf(path, sizeof path, "%s/raw_names.db", tr_unit_tmpdir());
    remove(path);
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_rundb_write(&t, path, NULL, 0, &err), TR_OK);
    const uint32_t now[N] = {0, mangled, other, 0, 0, msg2, msg1, mangled, other};
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    CU_ASSERT_FATAL(sqlite3_open(path, &db) == SQLITE_OK);
    CU_ASSERT_FATAL(sqlite3_prepare_v2(db, "SELECT e.flags, r.value FROM events e LEFT JOIN strings r "
                                           "ON r.id = e.raw_name_id ORDER BY e.id", -1, &st, NULL) == SQLITE_OK);
    int rows = 0;
    for (; sqlite3_step(st) == SQLITE_ROW; rows++) {
        const char *want = rows < N && now[rows] ? tr_str_of(&t, now[rows]) : NULL;
        const char *got = (const char *)sqlite3_column_text(st, 1);
        ok &= sqlite3_column_int64(st, 0) == 0 && (want && got ? !strcmp(want, got) : want == got);
    }
    CU_ASSERT_EQUAL(rows, N);
    CU_ASSERT(ok);
    sqlite3_finalize(st);
    sqlite3_close(db);
    remove(path);
    CU_ASSERT_EQUAL(TR_FLAG_RAW_NAMED & TR_FLAGS_STORED, 0);
    CU_ASSERT_EQUAL(TR_FLAGS_STORED, (TR_FLAG_ASYNC | TR_FLAG_UNTERMINATED | TR_FLAG_DEMANGLED
                                      | TR_FLAG_GPU_MEMORY | TR_FLAG_BACKWARD | TR_FLAG_MERGED
                                      | TR_FLAG_UNNESTED));
    tr_trace_free(&t);
}

/* The fields few events have live in rows beside the events: an event
 * without them reads the defaults and holds no row, so a trace of kernels and
 * API calls pays nothing for its ops' sequence numbers. */
static void test_extra_rows_only_where_set(void)
{
    setup();
    size_t k = add(TR_KIND_KERNEL, "k", 0, 10, 0, 1);
    size_t op = add(TR_KIND_OP, "aten::mm", 0, 10, thread1, -1);
    size_t cp = add(TR_KIND_MEMCPY, "[CUDA memcpy HtoD]", 20, 30, 0, 2);
    const tr_event_extra x = tr_extra(&t, EV(k));
    CU_ASSERT_EQUAL(x.seq, -1);
    CU_ASSERT_EQUAL(x.op_id, -1);
    CU_ASSERT_EQUAL(x.flops, -1);
    CU_ASSERT_EQUAL(x.bytes, 0);
    CU_ASSERT_EQUAL(x.shape, 0);
    /* setting the defaults adds no row */
    CU_ASSERT_EQUAL(tr_set_bytes(&t, EV(k), 0), 0);
    tr_event_extra same = tr_extra(&t, EV(op));
    CU_ASSERT_EQUAL(tr_extra_set(&t, EV(op), &same), 0);
    CU_ASSERT_EQUAL(EV(k)->extra, 0);
    CU_ASSERT_EQUAL(EV(op)->extra, 0);
    /* values: a row each, apart */
    CU_ASSERT_EQUAL(tr_set_bytes(&t, EV(cp), 4096), 0);
    set_seq(op, 7);
    CU_ASSERT_NOT_EQUAL(EV(cp)->extra, 0);
    CU_ASSERT_NOT_EQUAL(EV(op)->extra, EV(cp)->extra);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(cp)).bytes, 4096);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(cp)).seq, -1);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(op)).seq, 7);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(op)).bytes, 0);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(k)).bytes, 0);
    /* back to a default: the row keeps the new value */
    CU_ASSERT_EQUAL(tr_set_bytes(&t, EV(cp), 0), 0);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(cp)).bytes, 0);
    CU_ASSERT_EQUAL(t.extras.n, 3);   /* rows 1 and 2, and the unused row 0 */
    /* sequence numbers and op ids past 32 bits keep their values */
    const int64_t wide[] = {INT32_MAX, (int64_t)INT32_MAX + 1, INT32_MIN, (int64_t)INT32_MIN + 1, -2,
                            INT64_MAX, INT64_MIN, (int64_t)1 << 40, 0};
    size_t n = sizeof wide / sizeof wide[0], ev[9];
    for (size_t i = 0; i < n; i++) {
        ev[i] = add(TR_KIND_OP, "aten::add", 40, 50, thread1, -1);
        tr_event_extra w = tr_no_extra;
        w.seq = wide[i];
        w.op_id = wide[n - 1 - i];
        w.flops = (int64_t)i;
        CU_ASSERT_EQUAL(tr_extra_set(&t, EV(ev[i]), &w), 0);
    }
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        tr_event_extra w = tr_extra(&t, EV(ev[i]));
        ok &= w.seq == wide[i] && w.op_id == wide[n - 1 - i] && w.flops == (int64_t)i && w.bytes == 0;
    }
    CU_ASSERT(ok);
    /* a wide value made narrow again reads narrow */
    set_seq(ev[1], 3);
    CU_ASSERT_EQUAL(tr_extra(&t, EV(ev[1])).seq, 3);
    CU_ASSERT_EQUAL(sizeof(tr_extra_row), 32);
    tr_trace_free(&t);
}

/* Equal detail rows are one row; every event still reads its own values,
 * also once the rows outnumber the cache that finds the repeats. */
static void test_detail_rows_shared(void)
{
    setup();
    tr_kernel_detail a = {{1, 2, 3}, {128, 1, 1}, 32, 0, 0}, b = a;
    b.registers = 64;
    uint32_t ia = tr_add_kernel_detail(&t, &a), ib = tr_add_kernel_detail(&t, &b);
    CU_ASSERT_NOT_EQUAL(ia, 0);
    CU_ASSERT_NOT_EQUAL(ia, ib);
    CU_ASSERT_EQUAL(tr_add_kernel_detail(&t, &a), ia);
    CU_ASSERT_EQUAL(tr_add_kernel_detail(&t, &b), ib);
    tr_api_detail ok = {211, 0}, failed = {211, 2};
    uint32_t iok = tr_add_api_detail(&t, &ok);
    CU_ASSERT_NOT_EQUAL(tr_add_api_detail(&t, &failed), iok);
    CU_ASSERT_EQUAL(tr_add_api_detail(&t, &ok), iok);
    CU_ASSERT_EQUAL(tr_add_memset_value(&t, 7), tr_add_memset_value(&t, 7));
    CU_ASSERT_NOT_EQUAL(tr_add_memset_value(&t, 7), tr_add_memset_value(&t, 8));
    /* 20000 values, far more than the cache holds, each added again at once and
     * once more after all the others: an immediate repeat is always found, and
     * whatever the cache kept, each index holds the value it was given */
    enum { N = 20000 };
    static uint32_t idx[N];
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < N; i++) {
            tr_copy_detail c = {(uint32_t)i, (uint32_t)(i % 3), 9};
            uint32_t k = tr_add_copy_detail(&t, &c);
            CU_ASSERT_FATAL(k != 0);
            if (pass == 0) {
                CU_ASSERT_EQUAL_FATAL(tr_add_copy_detail(&t, &c), k);
                idx[i] = k;
            }
            CU_ASSERT_EQUAL_FATAL(t.copies.v[k].copy_kind, (uint32_t)i);
            CU_ASSERT_EQUAL_FATAL(t.copies.v[idx[i]].copy_kind, (uint32_t)i);
        }
    CU_ASSERT(t.copies.n > N && t.copies.n <= 2 * N + 1);
    tr_trace_free(&t);
}

TR_SUITE(tree,
         {"partial overlap: siblings, self >= 0", test_partial_overlap},
         {"of two overlapping events the shorter is flagged for viewers", test_unnested_for_viewers},
         {"touching and zero-length events", test_touching_and_zero_length},
         {"threads are separate trees", test_threads_kept_apart},
         {"identical intervals nest by kind", test_identical_intervals},
         {"GPU time once per level", test_gpu_attribution},
         {"idempotent; async not nested", test_idempotent_and_async},
         {"memory totals and self", test_memory},
         {"sync waits take their call's thread", test_sync_adopts_thread},
         {"sorted the same with and without the thread in the key", test_sort_paths},
         {"days apart: each thread nests its own events", test_sort_wide_span},
         {"starts 2^62 ns apart: the time alone in the key", test_sort_key_room},
         {"a few runs in time order merged", test_sort_runs_merged},
         {"the same tree whatever the order of the events", test_tree_whatever_the_order},
         {"past 65,536 events: the same tree whatever their order", test_sort_large_whatever_the_order},
         {"correlation ids found in any order", test_correlation_lookups},
         {"the correlation index whatever the order of the calls", test_correlation_index_orders},
         {"redispatched ops merge into their parent", test_redispatch_merge},
         {"merged ops taken out: the tree of the events without them", test_merge_patches_tree},
         {"backward ops take their forward op's stack", test_backward_stacks},
         {"3000 sequence numbers: each backward op finds its forward op", test_backward_stacks_many},
         {"memory: deepest holder of the closed window", test_memory_closed_windows},
         {"Python frames hold no GPU self time", test_python_frames_hold_no_gpu_self},
         {"a sync without its call keeps its self time", test_orphan_sync_self},
         {"extreme times saturate", test_extreme_times_saturate},
         {"extra fields: a row only where set", test_extra_rows_only_where_set},
         {"equal detail rows are one", test_detail_rows_shared},
         {"correlations and depths past 32 and 16 bits", test_wide_correlation_and_depth},
         {"self and total times past 32 bits", test_wide_times},
         {"raw names: once a name, an event's own where it differs", test_raw_names})
