/*
 * gen-kineto: writes a deterministic synthetic PyTorch/Kineto chrome trace
 * (2023+ categories: cpu_op, cuda_runtime, kernel, ac2g flows) of a training
 * loop: op ranges nested about 10 deep on two threads, each innermost op
 * launching a kernel on one of several streams, many distinct names and shapes.
 * Like a real model, the loop repeats: the op tree of each of 8 layers (names,
 * nesting, shapes, kernels) is the same at every step and only the timings
 * vary, so stacks and shapes repeat as they do in real traces.
 * usage: gen-kineto [-n EVENTS] [-s SEED] -o FILE.json
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench/rng.h"

static uint64_t rng, layer_rng;   /* timings; the structure of the current layer */
static uint32_t rnd(uint32_t n) { return bench_rnd(&rng, n); }
static uint32_t srnd(uint32_t n) { return bench_rnd(&layer_rng, n); }

static FILE *f;
static long long events, corr, ext;
static int first = 1;

static void sep(void)
{
    fputs(first ? "\n  " : ",\n  ", f);
    first = 0;
    events++;
}

static const char *const ops[] = {"aten::linear", "aten::addmm", "aten::matmul", "aten::relu",
    "aten::add", "aten::mul", "aten::layer_norm", "aten::native_layer_norm", "aten::softmax",
    "aten::_softmax", "aten::dropout", "aten::gelu", "aten::embedding", "aten::index_select",
    "aten::copy_", "aten::to", "aten::view", "aten::transpose", "aten::bmm", "aten::sum"};
static const char *const kernels[] = {"volta_sgemm_128x64_nn", "vectorized_elementwise_kernel",
    "reduce_kernel", "softmax_warp_forward", "layer_norm_kernel", "indexSelectLargeIndex",
    "ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_tn", "elementwise_kernel_add"};

static long long t_cpu[2], t_gpu;
static long long target;

static void op(int th, int depth, int layer)
{
    int k = (int)srnd(sizeof ops / sizeof ops[0]);
    long long start = t_cpu[th] += 1 + rnd(5);
    long long my_ext = ++ext;
    /* children first into a buffer is not needed: write the op after its children end */
    int nchildren = depth < 9 ? 1 + (int)srnd(2) : 0;
    long long child_start = t_cpu[th];
    (void)child_start;
    for (int c = 0; c < nchildren && events < target; c++)
        op(th, depth + 1, layer);
    if (!nchildren) {
        long long c = ++corr, ls = t_cpu[th] += 1, le = t_cpu[th] += 3 + rnd(4);
        int stream = 7 + (int)srnd(4);
        const char *kernel = kernels[srnd(sizeof kernels / sizeof kernels[0])];
        unsigned grid = 1 + srnd(4096);
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": 100, "
                   "\"tid\": %d, \"ts\": %lld.%03u, \"dur\": %lld.%03u, \"args\": {\"External id\": %lld, "
                   "\"correlation\": %lld}}", 200 + th, ls, rnd(1000), le - ls, rnd(1000), my_ext, c);
        long long ks = (t_gpu > le ? t_gpu : le) + 2, kd = 2 + rnd(50);
        t_gpu = ks + kd;
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, "
                   "\"ts\": %lld.%03u, \"dur\": %lld.%03u, \"args\": {\"External id\": %lld, \"device\": 0, "
                   "\"stream\": %d, \"correlation\": %lld, \"grid\": [%u, 1, 1], \"block\": [128, 1, 1]}}",
                kernel, stream, ks, rnd(1000), kd, rnd(1000), my_ext, stream, c, grid);
        sep();
        fprintf(f, "{\"ph\": \"s\", \"id\": %lld, \"pid\": 100, \"tid\": %d, \"ts\": %lld, \"cat\": \"ac2g\", "
                   "\"name\": \"ac2g\"}", c, 200 + th, ls);
        sep();
        fprintf(f, "{\"ph\": \"f\", \"id\": %lld, \"pid\": 0, \"tid\": %d, \"ts\": %lld, \"cat\": \"ac2g\", "
                   "\"name\": \"ac2g\", \"bp\": \"e\"}", c, stream, ks);
    }
    long long end = t_cpu[th] += 1 + rnd(5);
    unsigned d0 = 1 + srnd(64) * 8, d1 = 16u << srnd(4), d2 = 16u << srnd(4);
    sep();
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"%s\", \"pid\": 100, \"tid\": %d, "
               "\"ts\": %lld, \"dur\": %lld, \"args\": {\"External id\": %lld, \"Sequence number\": %lld, "
               "\"Input Dims\": [[%u, %u], [%u]], \"Input type\": [\"float\", \"float\"]}}",
            ops[k], 200 + th, start, end - start, my_ext, my_ext / 3, d0, d1, d2);
    (void)layer;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    unsigned long long seed = 1;
    target = 100000;
    int c;
    while ((c = getopt(argc, argv, "n:s:o:")) != -1) {
        if (c == 'n') target = atoll(optarg);
        else if (c == 's') seed = strtoull(optarg, NULL, 10);
        else if (c == 'o') out = optarg;
        else return 2;
    }
    if (!out || !(f = fopen(out, "w"))) {
        fprintf(stderr, "usage: gen-kineto [-n EVENTS] [-s SEED] -o FILE.json\n");
        return 2;
    }
    rng = seed * 0x9e3779b97f4a7c15ull + 1;
    fputs("{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\"}],\n"
          "\"traceEvents\": [", f);
    t_cpu[0] = t_cpu[1] = t_gpu = 1000;
    for (int step = 0; events < target; step++) {
        int th = step % 2;
        layer_rng = (seed + (uint64_t)(step % 8)) * 0xbf58476d1ce4e5b9ull + 1;
        op(th, 0, step);
        if (t_cpu[th] < t_cpu[!th])
            t_cpu[th] = t_cpu[!th];
    }
    fputs("\n], \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": 1700000000000000000}\n", f);
    return fclose(f) != 0;
}
