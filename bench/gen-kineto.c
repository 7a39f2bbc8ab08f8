/*
 * gen-kineto: writes a deterministic synthetic PyTorch/Kineto chrome trace
 * (2023+ categories: cpu_op, cuda_runtime, kernel, ac2g flows) of a training
 * loop: op ranges nested about 10 deep on two threads, each innermost op
 * launching a kernel on one of several streams, many distinct names and shapes.
 * Like a real model, the loop repeats: the op tree of each of 8 layers (names,
 * nesting, shapes, kernels) is the same at every step and only the timings
 * vary, so stacks and shapes repeat as they do in real traces.
 * usage: gen-kineto [-n EVENTS] [-s SEED] -o FILE.json
 *
 * With -r RANKS it writes a data-parallel job instead: one file per rank,
 * PREFIX<rank>.json, each with distributedInfo, ProfilerStep#N ranges, and per
 * step the same compute, then NCCL collectives (record_param_comms ->
 * nccl:* -> cudaLaunchKernel -> ncclDevKernel_* on a communication stream,
 * with the sizes, dtype and process group PyTorch 2.x writes) and a stream
 * synchronize.  Every collective ends on all ranks when the last rank has
 * arrived plus its transfer time (and up to -N µs of noise per rank).  One
 * rank (-S) starts each step -D µs late: the known straggler.  Each rank's
 * baseTimeNanoseconds carries a clock error of its own (up to -C µs), so its
 * times are off from rank 0's by a known offset.  stdout gets one line per
 * rank: "rank R offset_ns O file F", O being what aligns the rank to rank 0
 * (rank 0's clock error minus its own), then "straggler S".
 * usage: gen-kineto -r RANKS [-n EVENTS per rank] [-s SEED] [-S STRAGGLER]
 *        [-D DELAY_US] [-N NOISE_US] [-C CLOCK_US] -o PREFIX
 */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---- the multi-rank job ---- */

/* The generator's state for one rank: the single-rank code runs on the
 * globals, swapped in and out per rank. */
typedef struct {
    FILE *f;
    long long events, corr, ext, t_cpu[2], t_gpu, t_comm, step_start;
    int first;
    uint64_t rng, jitter;
    long long clock_err_ns;
} rank_state;

static void rank_in(const rank_state *r)
{
    f = r->f, events = r->events, corr = r->corr, ext = r->ext, first = r->first, rng = r->rng;
    t_cpu[0] = r->t_cpu[0], t_cpu[1] = r->t_cpu[1], t_gpu = r->t_gpu;
}

static void rank_out(rank_state *r)
{
    r->events = events, r->corr = corr, r->ext = ext, r->first = first, r->rng = rng;
    r->t_cpu[0] = t_cpu[0], r->t_cpu[1] = t_cpu[1], r->t_gpu = t_gpu;
}

/* The collectives of every step: (process group, its description, collective
 * name as record_param_comms writes it, the nccl: annotation, the kernel,
 * elements, whether the kernel carries the args too, as PyTorch 2.x writes). */
static const struct {
    const char *pg, *pg_desc, *coll, *annot, *kernel;
    long long nelems;
    int args_on_kernel;
} colls[] = {
    {"0", "default_pg", "allreduce", "nccl:all_reduce",
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 4194304, 0},
    {"0", "default_pg", "allreduce", "nccl:all_reduce",
     "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 1048576, 0},
    {"1", "dp_replicate", "allgather", "nccl:all_gather",
     "ncclDevKernel_AllGather_RING_LL(ncclDevComm*, unsigned long, ncclWork*)", 262144, 1},
};
#define NCOLLS (sizeof colls / sizeof colls[0])
#define COMM_STREAM 20

static void coll_args(int nranks, int k, long long seq, int rank)
{
    fprintf(f, "\"Collective name\": \"%s\", \"dtype\": \"Float\", \"In msg nelems\": %lld, "
               "\"Out msg nelems\": %lld, \"Group size\": %d, \"Process Group Name\": \"%s\", "
               "\"Process Group Description\": \"%s\", \"Process Group Ranks\": \"[",
            colls[k].coll, colls[k].nelems, colls[k].nelems, nranks, colls[k].pg, colls[k].pg_desc);
    for (int i = 0; i < nranks; i++)
        fprintf(f, "%s%d", i ? ", " : "", i);
    fprintf(f, "]\", \"Seq\": %lld, \"Rank\": %d", seq, rank);
}

/* Times in the files are µs with 3 decimals (exact ns), on the rank's clock. */
#define US(ns) (ns) / 1000, (unsigned)((ns) % 1000)

/* The job: its parameters, each rank's state and the collectives of the step. */
typedef struct {
    int nranks, straggler;
    unsigned long long seed;
    long long delay_us, noise_us;
    rank_state *rs;
    /* PyTorch numbers the collectives of each process group in one sequence */
    long long seq[NCOLLS], pg_seq[2];
    long long arrive[NCOLLS][1024], ends[NCOLLS][1024];   /* ns, per collective and rank */
} job_ctx;

/* Opens each rank's file and writes its head; 1 on failure (the files opened so far
 * are kept in j->nranks, to be closed). */
static int open_ranks(job_ctx *j, long long clock_us, const char *prefix)
{
    uint64_t job_rng = j->seed * 0x2545f4914f6cdd1dull + 7;
    int nranks = j->nranks;
    for (int r = 0; r < nranks; r++) {
        rank_state *rs = &j->rs[r];
        char path[4096];
        snprintf(path, sizeof path, "%s%d.json", prefix, r);
        rs->f = fopen(path, "w");
        if (!rs->f) {
            fprintf(stderr, "gen-kineto: cannot write %s\n", path);
            j->nranks = r;
            return 1;
        }
        rs->first = 1;
        /* the same compute timings on every rank: only the straggler's delay,
         * the launch jitter and the noise tell the ranks apart */
        rs->rng = j->seed * 0x9e3779b97f4a7c15ull + 1;
        rs->jitter = (j->seed + 1000003ull * (uint64_t)(r + 1)) * 0x9e3779b97f4a7c15ull + 1;
        rs->t_cpu[0] = rs->t_cpu[1] = rs->t_gpu = rs->t_comm = 1000;
        /* a clock error in [-clock_us, clock_us] µs, to the ns */
        rs->clock_err_ns = clock_us > 0
            ? (long long)bench_rnd(&job_rng, (uint32_t)(2 * clock_us * 1000 + 1)) - clock_us * 1000 : 0;
        fprintf(rs->f, "{\"schemaVersion\": 1, \"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100\"}],\n"
                       "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, \"world_size\": %d},\n"
                       "\"traceEvents\": [", r, nranks);
        printf("rank %d offset_ns %lld file %s\n", r, j->rs[0].clock_err_ns - rs->clock_err_ns, path);
    }
    return 0;
}

/* Rank r's compute of the step (the same layers on every rank, the structure from the
 * seed), then its collectives' launches from thread 0: the kernel waits for the last
 * compute kernel (its gradients) and for the previous collective. */
static void compute_and_launch(job_ctx *j, int r)
{
    rank_state *rs = &j->rs[r];
    rank_in(rs);
    long long t0 = t_cpu[0] > t_cpu[1] ? t_cpu[0] : t_cpu[1];
    t_cpu[0] = t_cpu[1] = t0 + (r == j->straggler ? j->delay_us : 0);
    rs->step_start = t0;
    for (int layer = 0; layer < 8; layer++) {
        int th = layer % 2;
        layer_rng = (j->seed + (uint64_t)layer) * 0xbf58476d1ce4e5b9ull + 1;
        target = events + 1000000;
        op(th, 0, layer);
        if (t_cpu[th] < t_cpu[!th])
            t_cpu[th] = t_cpu[!th];
    }
    for (size_t k = 0; k < NCOLLS; k++) {
        long long ls = (t_cpu[0] += 3) * 1000 + bench_rnd(&rs->jitter, 1000), ld = 2000 + rnd(3000);
        j->arrive[k][r] = (t_gpu > t_cpu[0] + 7 ? t_gpu : t_cpu[0] + 7) * 1000 + bench_rnd(&rs->jitter, 1000);
        long long c = ++corr, e1 = ++ext, e2 = ++ext;
        long long ps = ls - 4000, pe = ls + ld + 3000;
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"record_param_comms\", "
                   "\"pid\": 100, \"tid\": 200, \"ts\": %lld.%03u, \"dur\": %lld.%03u, "
                   "\"args\": {\"External id\": %lld, ", US(ps), US(pe - ps), e1);
        coll_args(j->nranks, (int)k, j->seq[k], r);
        fputs("}}", f);
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"%s\", \"pid\": 100, "
                   "\"tid\": 200, \"ts\": %lld.%03u, \"dur\": %lld.%03u, \"args\": {\"External id\": %lld}}",
                colls[k].annot, US(ls - 1000), US(ld + 2000), e2);
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
                   "\"pid\": 100, \"tid\": 200, \"ts\": %lld.%03u, \"dur\": %lld.%03u, "
                   "\"args\": {\"External id\": %lld, \"correlation\": %lld}}", US(ls), US(ld), e2, c);
        t_cpu[0] = pe / 1000 + 1;
    }
    rank_out(rs);
}

/* A collective starts on a rank when it is ready there and the previous one has ended
 * there; it ends on every rank once the last rank is in, plus its transfer time (16 ns
 * per 64 elements) and a little noise. */
static void settle_collectives(job_ctx *j)
{
    for (size_t k = 0; k < NCOLLS; k++) {
        long long in = 0;
        for (int r = 0; r < j->nranks; r++) {
            long long prev = k ? j->ends[k - 1][r] + 500 : j->rs[r].t_comm * 1000;
            if (j->arrive[k][r] < prev)
                j->arrive[k][r] = prev;
            if (j->arrive[k][r] > in)
                in = j->arrive[k][r];
        }
        for (int r = 0; r < j->nranks; r++) {
            rank_in(&j->rs[r]);
            j->ends[k][r] = in + 5000 + colls[k].nelems / 64
                            + (j->noise_us > 0 ? bench_rnd(&j->rs[r].jitter, (uint32_t)(j->noise_us * 1000)) : 0);
            rank_out(&j->rs[r]);
        }
    }
}

/* Rank r's collective kernels; returns the end of its last one, in µs. */
static long long write_collective_kernels(job_ctx *j, int r)
{
    rank_state *rs = &j->rs[r];
    rank_in(rs);
    long long prev_end = 0;
    for (size_t k = 0; k < NCOLLS; k++) {
        long long a = j->arrive[k][r], e = j->ends[k][r];
        prev_end = e;
        long long c = corr - (long long)NCOLLS + 1 + (long long)k;
        sep();
        fprintf(f, "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": 0, \"tid\": %d, "
                   "\"ts\": %lld.%03u, \"dur\": %lld.%03u, \"args\": {\"External id\": %lld, "
                   "\"device\": 0, \"stream\": %d, \"correlation\": %lld, \"grid\": [2, 1, 1], "
                   "\"block\": [512, 1, 1]",
                colls[k].kernel, COMM_STREAM, US(a), US(e - a), ext - 2 * ((long long)NCOLLS - 1 - (long long)k),
                COMM_STREAM, c);
        if (colls[k].args_on_kernel) {
            fputs(", ", f);
            coll_args(j->nranks, (int)k, j->seq[k], r);
        }
        fputs("}}", f);
    }
    rs->t_comm = prev_end / 1000 + 1;
    rank_out(rs);
    return prev_end / 1000;
}

/* The step ends with a stream synchronize that waits for the collectives (last: the
 * latest end of a collective on any rank, µs), inside the ProfilerStep#N range. */
static void end_step(job_ctx *j, int r, int step, long long last)
{
    rank_state *rs = &j->rs[r];
    rank_in(rs);
    long long ss = t_cpu[0] + 2, se = (last > t_gpu ? last : t_gpu) + 3 + rnd(3);
    sep();
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamSynchronize\", "
               "\"pid\": 100, \"tid\": 200, \"ts\": %lld, \"dur\": %lld, "
               "\"args\": {\"External id\": %lld, \"correlation\": %lld}}", ss, se - ss, ++ext, ++corr);
    sep();
    fprintf(f, "{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#%d\", "
               "\"pid\": 100, \"tid\": 200, \"ts\": %lld, \"dur\": %lld, \"args\": {\"External id\": %lld}}",
            step, rs->step_start, se + 1 - rs->step_start, ++ext);
    t_cpu[0] = t_cpu[1] = se + 2;
    rank_out(rs);
}

static int job(int nranks, long long per_rank, unsigned long long seed, int straggler,
               long long delay_us, long long noise_us, long long clock_us, const char *prefix)
{
    job_ctx *j = calloc(1, sizeof *j);
    rank_state *rs = calloc((size_t)nranks, sizeof *rs);
    if (!j || !rs) {
        free(j);
        free(rs);
        return 1;
    }
    *j = (job_ctx){.nranks = nranks, .straggler = straggler, .seed = seed, .delay_us = delay_us,
                   .noise_us = noise_us, .rs = rs};
    int status = open_ranks(j, clock_us, prefix);
    if (!status)
        printf("straggler %d\n", straggler);
    /* in ns from here on: the files get µs with 3 decimals */
    for (int step = 0; !status && rs[0].events < per_rank; step++) {
        for (size_t k = 0; k < NCOLLS; k++)
            j->seq[k] = j->pg_seq[colls[k].pg[0] - '0']++;
        for (int r = 0; r < nranks; r++)
            compute_and_launch(j, r);
        settle_collectives(j);
        long long last = 0;
        for (int r = 0; r < nranks; r++) {
            long long end = write_collective_kernels(j, r);
            if (end > last)
                last = end;
        }
        for (int r = 0; r < nranks; r++)
            end_step(j, r, step, last);
    }
    for (int r = 0; r < j->nranks; r++) {
        fprintf(rs[r].f, "\n], \"displayTimeUnit\": \"ms\", \"baseTimeNanoseconds\": %lld}\n",
                1700000000000000000ll + rs[r].clock_err_ns);
        if (fclose(rs[r].f) != 0)
            status = 1;
    }
    free(rs);
    free(j);
    return status;
}

int main(int argc, char **argv)
{
    const char *out = NULL;
    unsigned long long seed = 1;
    target = 100000;
    int c, nranks = -1, straggler = -1;   /* -1: no -r, the single-process trace */
    long long delay_us = 300, noise_us = 1, clock_us = 5000;
    while ((c = getopt(argc, argv, "n:s:o:r:S:D:N:C:")) != -1) {
        if (c == 'n') target = atoll(optarg);
        else if (c == 's') seed = strtoull(optarg, NULL, 10);
        else if (c == 'o') out = optarg;
        else if (c == 'r') nranks = atoi(optarg);
        else if (c == 'S') straggler = atoi(optarg);
        else if (c == 'D') delay_us = atoll(optarg);
        else if (c == 'N') noise_us = atoll(optarg);
        else if (c == 'C') clock_us = atoll(optarg);
        else return 2;
    }
    if (nranks != -1) {
        if (!out || nranks < 1 || nranks > 1024 || straggler >= nranks || delay_us < 0 || noise_us < 0
            || noise_us > 1000000 || clock_us < 0 || clock_us > 1000000) {
            fprintf(stderr, "usage: gen-kineto -r RANKS(1-1024) [-n EVENTS] [-s SEED] [-S STRAGGLER] "
                            "[-D DELAY_US] [-N NOISE_US] [-C CLOCK_US] -o PREFIX\n");
            return 2;
        }
        return job(nranks, target, seed, straggler < 0 ? nranks / 2 : straggler, delay_us, noise_us,
                   clock_us, out);
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
