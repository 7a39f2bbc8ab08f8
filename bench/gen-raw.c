/*
 * gen-raw: writes a deterministic synthetic trace-record raw file (format 1.0,
 * docs/raw-format.md) of a PyTorch-like transformer training loop recorded
 * under emit_nvtx(record_shapes=True), with the model's modules pushed as
 * plain NVTX ranges: op ranges nested up to ten deep on a main and an autograd
 * thread, runtime calls with the driver call each one makes, kernels on three
 * streams, copies, sets, stream synchronisations and event waits, marks, the
 * device with its context and streams, and the thread names.  Records are
 * staged per kind and written in CRC-checked chunks as the recorder agent
 * writes them.  The same seed and size always give the same bytes, and
 * `trace-ingest` makes about EVENTS events of the file.
 *
 * --stacks N makes it a `trace-record --backtrace` recording: every kernel
 * launch call carries one of N native call stacks of 20 to 30 frames, and the
 * file ends with this process's /proc/self/maps and the GNU build-ids of its
 * loaded objects.  The frames are return addresses inside functions of files
 * really mapped here (libc, libm, libz, libsqlite3 when they load, and
 * gen-raw itself), so `trace-ingest`, run on this machine while those files
 * stay as they are, names each one after its function.  The events are those
 * of the same seed without stacks; apart from the addresses, which move with
 * ASLR, the bytes depend only on the seed, the size and the libraries found.
 *
 * usage: gen-raw [-n EVENTS] [-s SEED] [--stacks N] -o FILE.ctr
 */
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench/rng.h"
#include "record/loaded_modules.h"
#include "record/raw_format.h"

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) { return bench_rnd(&rng_state, n); }

static const char *out_path;
static FILE *out;

static void die(const char *what)
{
    fprintf(stderr, "gen-raw: %s: %s: %s\n", out_path, what, strerror(errno));
    exit(1);
}

/* ------------------------------------------------------------------ chunks */

/* The agent's staging size: chunks of this size keep the reader's per-chunk
 * work and the file's chunk count like a real recording's. */
#define STAGE_FLUSH (4u << 20)
#define MAX_STRING 1024u

static uint64_t chunk_seq, record_chunks, records_written;

/* payload has 8 spare bytes past len, so the padding is zeroed in place. */
static void write_chunk(unsigned type, unsigned char *payload, size_t len)
{
    size_t padded = tr_raw_pad8(len);
    memset(payload + len, 0, padded - len);
    tr_raw_chunk c;
    tr_raw_chunk_fill(&c, type, payload, (uint32_t)padded, chunk_seq++);
    if (fwrite(&c, sizeof c, 1, out) != 1 || fwrite(payload, 1, padded, out) != padded)
        die("write");
}

typedef struct {
    unsigned char *d;   /* the 8-byte RECORDS header is filled in at flush */
    size_t n;
    uint32_t count;
} stage;

static stage stages[TR_RAW_REC_COUNT_];
static unsigned char *strs;   /* STRINGS payload not yet written */
static size_t nstrs;
static uint32_t next_sid = 1;

static void flush_strings(void)
{
    if (nstrs)
        write_chunk(TR_RAW_CH_STRINGS, strs, nstrs);
    nstrs = 0;
}

/* --stacks: stack i has stack_depth[i] pcs, innermost first, from
 * stack_pcs[i * MAX_DEPTH]; it goes into the STACKS payload the first time a
 * launch has it, as the recorder writes a stack when it first sees it. */
#define MIN_DEPTH 20
#define MAX_DEPTH 30
static uint32_t nstacks;
static uint64_t *stack_pcs;
static unsigned char *stack_depth, *stack_sent;
static unsigned char *stks;   /* STACKS payload not yet written */
static size_t nstks;

static void flush_stacks(void)
{
    if (nstks)
        write_chunk(TR_RAW_CH_STACKS, stks, nstks);
    nstks = 0;
}

static void flush_kind(unsigned kind)
{
    stage *st = &stages[kind];
    if (!st->count)
        return;
    /* ids a chunk uses must be defined by an earlier chunk */
    flush_strings();
    if (kind == TR_RAW_REC_STACKREF)
        flush_stacks();
    uint16_t k16 = (uint16_t)kind, sz = (uint16_t)tr_raw_rec_size(kind);
    memcpy(st->d, &k16, 2);
    memcpy(st->d + 2, &sz, 2);
    memcpy(st->d + 4, &st->count, 4);
    write_chunk(TR_RAW_CH_RECORDS, st->d, st->n);
    records_written += st->count;
    record_chunks++;
    st->n = 8;
    st->count = 0;
}

static void add(unsigned kind, const void *rec)
{
    size_t sz = tr_raw_rec_size(kind);
    stage *st = &stages[kind];
    if (st->n + sz > STAGE_FLUSH)
        flush_kind(kind);
    memcpy(st->d + st->n, rec, sz);
    st->n += sz;
    st->count++;
}

/* Defines a new string id.  Op annotations carry a fresh op_id each, so
 * nothing is worth interning: fixed names get their id once at start-up. */
static uint32_t string(const char *s, size_t len)
{
    if (len > MAX_STRING)
        len = MAX_STRING;
    if (nstrs + 8 + MAX_STRING + 4 > STAGE_FLUSH)
        flush_strings();
    uint32_t hdr[2] = {next_sid, (uint32_t)len};
    memcpy(strs + nstrs, hdr, 8);
    memcpy(strs + nstrs + 8, s, len);
    size_t padded = (len + 3) & ~(size_t)3;
    memset(strs + nstrs + 8 + len, 0, padded - len);
    nstrs += 8 + padded;
    return next_sid++;
}

static uint32_t cstring(const char *s) { return string(s, strlen(s)); }

/* ------------------------------------------------------------------- model */

#define PID 31337u
#define DEVICE 0u
#define CONTEXT 1u
#define T0_REALTIME 1700000000000000000ull
#define T0_MONOTONIC 4242000000000ull
#define NLAYERS 2
#define BATCH 8
#define HIDDEN 768
#define HEADS 12
#define FFN 3072
#define VOCAB 32000

enum { MAIN, AUTOGRAD };
static const uint32_t tids[2] = {PID, PID + 17};

/* streams: the null stream, the one backward kernels run on, a copy stream */
enum { S_MAIN, S_BWD, S_COPY, NSTREAMS };
static const uint32_t stream_ids[NSTREAMS] = {7, 13, 14};

static uint64_t cpu[2], gpu[NSTREAMS];
static uint32_t next_corr = 1, next_event_id = 1;
static uint64_t next_marker = 1;
static int64_t events, seq_no, op_no;

static uint64_t max64(uint64_t a, uint64_t b) { return a > b ? a : b; }

enum {
    K_GEMM_NN, K_GEMM_TN, K_GEMM_NT, K_ADD, K_MUL, K_INDEX, K_SOFTMAX, K_SOFTMAX_BW, K_GELU,
    K_GELU_BW, K_DROPOUT, K_LN, K_LN_BW, K_LOGSOFTMAX, K_LOGSOFTMAX_BW, K_NLL, K_NLL_BW,
    K_EMB_BW, K_ADAM, NKERNELS
};
static const char *const kernel_names[NKERNELS] = {
    "ampere_sgemm_128x64_nn",
    "ampere_sgemm_64x32_sliced1x4_tn",
    "ampere_sgemm_128x32_nt",
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implIZZZNS0_15add_kernel_cudaERNS_14TensorIteratorEN3c106ScalarEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS4_RKT_EUliE2_EEviT1_",
    "_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_implIZNS0_23gpu_kernel_with_scalarsIZZZNS0_15mul_kernel_cudaERNS_14TensorIteratorEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS5_RKT_EUlfE0_EEvS5_SB_EUliE_EEviT1_",
    "_Z21indexSelectLargeIndexIfjLi2ELi2ELin2ELb1EEv10TensorInfoIT_T0_ES3_S0_IlS2_EiiS2_S2_l",
    "_ZN2at6native43_GLOBAL__N__d3c2e1f0_10_SoftMax_cu_9f978f6e20softmax_warp_forwardIfffLi9ELb0ELb0EEEvPT0_PKT_iiiPKbib",
    "_ZN2at6native43_GLOBAL__N__d3c2e1f0_10_SoftMax_cu_9f978f6e21softmax_warp_backwardIfffLi9ELb0ELb0EEEvPT0_PKT_S7_iiiPKb",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11GeluFunctorIfEENS_6detail5ArrayIPcLi2EEEEEviT0_T1_",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_19GeluBackwardFunctorIfEENS_6detail5ArrayIPcLi3EEEEEviT0_T1_",
    "_ZN2at6native12_GLOBAL__N_120fused_dropout_kernelIffjLi1ELin1EbEEvNS_4cuda6detail10TensorInfoIKT_T1_EENS5_IS6_S8_EENS5_IT4_S8_EES8_T0_NS_15PhiloxCudaStateE",
    "_ZN2at6native12_GLOBAL__N_128vectorized_layer_norm_kernelIffEEviT0_PKT_S6_S6_PS3_S7_PS4_",
    "_ZN2at6native12_GLOBAL__N_132layer_norm_grad_input_kernel_vecIfEEvPKT_S5_S5_S5_S5_PS3_i",
    "_ZN2at6native43_GLOBAL__N__d3c2e1f0_10_SoftMax_cu_9f978f6e19cunn_SoftMaxForwardILi4EfffNS1_25LogSoftMaxForwardEpilogueEEEvPT2_PKT0_i",
    "_ZN2at6native43_GLOBAL__N__d3c2e1f0_10_SoftMax_cu_9f978f6e20cunn_SoftMaxBackwardILi4EfffNS1_26LogSoftMaxBackwardEpilogueEEEvPT0_PKT2_S8_l",
    "_ZN2at6native12_GLOBAL__N_138nll_loss_forward_reduce_cuda_kernel_2dIffdEEvPT_S4_PKS4_PKlS6_bllll",
    "_ZN2at6native12_GLOBAL__N_139nll_loss_backward_reduce_cuda_kernel_2dIfdEEvPT_PKS3_PKlS6_S6_biil",
    "_ZN2at6native12_GLOBAL__N_133embedding_backward_feature_kernelIffEEvPKlPKT_PS3_iil",
    "_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi4EEENS1_11AdamFunctorIfLi4EEEJfffffbPfS7_EEEvT_T0_DpT1_",
};
static uint32_t kernel_sid[NKERNELS];

/* Plain NVTX ranges and marks reuse a few names: their ids are defined once. */
enum {
    R_TRAIN_STEP, R_FORWARD, R_MODEL, R_ENCODER, R_SELF_ATTN, R_MLP, R_LM_HEAD, R_BACKWARD,
    R_OPTIMIZER, M_START, M_BATCH, NFIXED
};
static const char *const fixed_names[NFIXED] = {
    "train_step", "forward", "TransformerLM", "encoder", "self_attn", "mlp", "lm_head",
    "backward", "optimizer", "__start_profile", "batch ready",
};
static uint32_t fixed_sid[NFIXED], layer_sid[NLAYERS];

/* ------------------------------------------------------------------ records */

static void marker(int th, uint32_t flags, uint64_t id, uint32_t name_sid)
{
    tr_raw_marker m = {.ts = cpu[th], .id = id, .flags = flags, .tid = tids[th],
                       .name_sid = name_sid};
    add(TR_RAW_REC_MARKER, &m);
    events += flags != TR_RAW_MK_END;
}

static uint64_t range_push(int th, uint32_t name_sid)
{
    uint64_t id = next_marker++;
    cpu[th] += 500 + rnd(1500);
    marker(th, TR_RAW_MK_START, id, name_sid);
    return id;
}

static void range_pop(int th, uint64_t id)
{
    cpu[th] += 500 + rnd(1500);
    marker(th, TR_RAW_MK_END, id, 0);
}

static void mark(int th, uint32_t name_sid)
{
    cpu[th] += 200 + rnd(500);
    marker(th, TR_RAW_MK_MARK, next_marker++, name_sid);
}

/* An op range named as emit_nvtx(record_shapes=True) names it; seq < 0: the op
 * has no autograd sequence number, sizes NULL: no shapes recorded. */
static int64_t last_op;
static uint64_t op_push(int th, const char *name, int64_t seq, const char *sizes)
{
    char buf[MAX_STRING];
    int64_t id = ++op_no;
    int n = snprintf(buf, sizeof buf, "%s", name);
    if (seq >= 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ", seq = %lld", (long long)seq);
    n += snprintf(buf + n, sizeof buf - (size_t)n, ", op_id = %lld", (long long)id);
    if (sizes)
        n += snprintf(buf + n, sizeof buf - (size_t)n, ", sizes = %s, input_op_ids = [(%lld,0)]",
                      sizes, (long long)last_op);
    last_op = id;
    return range_push(th, string(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1));
}

static void api(int th, int driver, uint32_t cbid, uint64_t start, uint64_t end, uint32_t corr)
{
    tr_raw_api a = {.start = start, .end = end, .corr = corr, .cbid = cbid, .tid = tids[th],
                    .domain = driver ? TR_RAW_API_DRIVER : TR_RAW_API_RUNTIME};
    add(TR_RAW_REC_API, &a);
    events++;
}

/* A runtime call of dur ns and the driver call inside it; returns the runtime
 * call's correlation id, the one its GPU work carries (the driver call gets an
 * id of its own, as in the nvprof databases gen-nvprof imitates). */
static uint32_t call(int th, uint32_t rt_cbid, uint32_t drv_cbid, uint64_t dur,
                     uint64_t *start, uint64_t *end)
{
    uint32_t corr = next_corr++;
    uint64_t s = cpu[th] + 1000 + rnd(2000), e = s + dur;
    api(th, 0, rt_cbid, s, e, corr);
    api(th, 1, drv_cbid, s + 400 + rnd(200), e - 300 - rnd(200), next_corr++);
    cpu[th] = e;
    *start = s;
    *end = e;
    return corr;
}

/* Stacks draw on numbers of their own, so that the events stay those of the
 * same seed without stacks. */
static uint64_t stack_rng;
static uint32_t stack_rnd(uint32_t n) { return bench_rnd(&stack_rng, n); }

/* The recorder's reference from a launch call to its stack, taken on entry. */
static void stack_ref(int th, uint64_t ts, uint32_t corr)
{
    uint32_t i = stack_rnd(nstacks);
    if (!stack_sent[i]) {
        if (nstks + 8 + 8 * MAX_DEPTH > STAGE_FLUSH)
            flush_stacks();
        uint32_t id = i + 1;
        uint16_t depth = stack_depth[i], zero = 0;
        memcpy(stks + nstks, &id, 4);
        memcpy(stks + nstks + 4, &depth, 2);
        memcpy(stks + nstks + 6, &zero, 2);
        memcpy(stks + nstks + 8, stack_pcs + (size_t)i * MAX_DEPTH, 8 * (size_t)depth);
        nstks += 8 + 8 * (size_t)depth;
        stack_sent[i] = 1;
    }
    tr_raw_stackref r = {.ts = ts, .corr = corr, .stack_id = i + 1, .tid = tids[th]};
    add(TR_RAW_REC_STACKREF, &r);
}

static void launch(int th, int kernel, int stream, uint32_t work)
{
    uint64_t s, e;
    uint32_t corr = call(th, 211, 307, 3000 + rnd(4000), &s, &e);   /* cudaLaunchKernel */
    if (nstacks)
        stack_ref(th, s, corr);
    uint64_t ks = max64(gpu[stream], e + 2000) + rnd(500);
    uint64_t ke = ks + 2000 + work / 4 + rnd(20000);
    int32_t grid = 1 + (int32_t)(work / 256) + (int32_t)rnd(64);
    tr_raw_kernel k = {.start = ks, .end = ke, .corr = corr, .name_sid = kernel_sid[kernel],
                       .device = DEVICE, .context = CONTEXT, .stream = stream_ids[stream],
                       .grid = {grid, 1, 1}, .block = {128 << rnd(3), 1, 1},
                       .smem_static = kernel <= K_GEMM_NT ? 16384 : 0,
                       .smem_dynamic = kernel == K_SOFTMAX ? 4096 : 0,
                       .registers = (uint16_t)(32 + 8 * rnd(12))};
    add(TR_RAW_REC_KERNEL, &k);
    events++;
    gpu[stream] = ke;
}

/* CUPTI enum values: copy kinds HtoD 1, DtoH 2; memory kinds pinned 2, device 3 */
static void copy(int th, int to_device, uint64_t bytes, int stream)
{
    uint64_t s, e;
    uint32_t corr = call(th, 41, to_device ? 277 : 279, 8000 + rnd(8000), &s, &e);
    uint64_t cs = max64(gpu[stream], s + 3000), ce = cs + 1500 + bytes / 20 + rnd(2000);
    tr_raw_memcpy m = {.start = cs, .end = ce, .bytes = bytes, .corr = corr, .runtime_corr = corr,
                       .device = DEVICE, .context = CONTEXT, .stream = stream_ids[stream],
                       .copy_kind = to_device ? 1 : 2, .src_kind = to_device ? 2 : 3,
                       .dst_kind = to_device ? 3 : 2};
    add(TR_RAW_REC_MEMCPY, &m);
    events++;
    gpu[stream] = ce;
}

static void memset_async(int th, uint64_t bytes, int stream)
{
    uint64_t s, e;
    uint32_t corr = call(th, 51, 220, 4000 + rnd(2000), &s, &e);   /* cuMemsetD32Async */
    uint64_t ms = max64(gpu[stream], s + 2000), me = ms + 1500 + bytes / 1000 + rnd(3000);
    tr_raw_memset m = {.start = ms, .end = me, .bytes = bytes, .corr = corr, .device = DEVICE,
                       .context = CONTEXT, .stream = stream_ids[stream], .memory_kind = 3};
    add(TR_RAW_REC_MEMSET, &m);
    events++;
    gpu[stream] = me;
}

/* CUPTI synchronization types: 2 stream wait event, 3 stream synchronize */
static void sync_rec(uint64_t start, uint64_t end, uint32_t corr, uint32_t type, int stream,
                     uint32_t event_id)
{
    tr_raw_sync r = {.start = start, .end = end, .corr = corr, .type = type, .context = CONTEXT,
                     .stream = stream_ids[stream], .event_id = event_id};
    add(TR_RAW_REC_SYNC, &r);
    events++;
}

static void stream_sync(int th, int stream)
{
    uint64_t s = cpu[th] + 1000;
    uint64_t wait = max64(gpu[stream], s + 3000) - s + 2000;
    uint64_t e;
    uint32_t corr = call(th, 131, 126, wait, &s, &e);   /* cudaStreamSynchronize */
    sync_rec(s + 800, e - 800, corr, 3, stream, 0);
}

/* Records an event on `from` and makes `to` wait for it: the GPU side waits,
 * the host does not. */
static void stream_wait(int th, int from, int to)
{
    uint64_t s, e;
    uint32_t ev = next_event_id++;
    call(th, 135, 119, 2000 + rnd(1000), &s, &e);   /* cudaEventRecord */
    uint32_t corr = call(th, 147, 295, 2000 + rnd(1000), &s, &e);   /* cudaStreamWaitEvent */
    sync_rec(s + 600, e - 600, corr, 2, to, ev);
    gpu[to] = max64(gpu[to], gpu[from]);
}

/* ---------------------------------------------------------------- training */

/* Forward ops whose backward node runs on the autograd thread. */
enum { B_ADDMM, B_ADD, B_LN, B_GELU, B_SOFTMAX, B_DROPOUT, B_MM, B_LOGSOFTMAX, B_NLL, B_EMB };
static const char *const bwd_names[] = {"AddmmBackward0", "AddBackward0",
    "NativeLayerNormBackward0", "GeluBackward0", "SoftmaxBackward0", "NativeDropoutBackward0",
    "MmBackward0", "LogSoftmaxBackward0", "NllLossBackward0", "EmbeddingBackward0"};
typedef struct { int64_t seq; int kind; uint32_t rows, in, out; } pending_bwd;
static pending_bwd tape[256];
static int ntape;
static uint32_t tokens, seqlen;

static int64_t record(int kind, uint32_t rows, uint32_t in, uint32_t outdim)
{
    int64_t s = seq_no++;
    if (ntape < (int)(sizeof tape / sizeof tape[0]))
        tape[ntape++] = (pending_bwd){s, kind, rows, in, outdim};
    return s;
}

static void linear(uint32_t in, uint32_t outdim)
{
    char sz[256];
    snprintf(sz, sizeof sz, "[[%d, %u, %u], [%u, %u], [%u]]", BATCH, seqlen, in, outdim, in, outdim);
    uint64_t a = op_push(MAIN, "aten::linear", -1, sz);
    snprintf(sz, sizeof sz, "[[%u], [%u, %u], [%u, %u], [], []]", outdim, tokens, in, in, outdim);
    uint64_t b = op_push(MAIN, "aten::addmm", record(B_ADDMM, tokens, in, outdim), sz);
    launch(MAIN, rnd(4) ? K_GEMM_NN : K_GEMM_TN, S_MAIN, tokens * outdim / 64);
    range_pop(MAIN, b);
    range_pop(MAIN, a);
}

/* An op of a [tokens, dim] activation that launches one kernel, itself or
 * through one inner op (NULL: none); the op that autograd records gets the seq. */
static void pointwise(const char *name, const char *inner, int kind, int kernel,
                      const char *sizes, uint32_t dim, uint32_t work)
{
    uint64_t a = op_push(MAIN, name, inner ? -1 : record(kind, tokens, dim, dim), sizes);
    uint64_t b = 0;
    if (inner)
        b = op_push(MAIN, inner, record(kind, tokens, dim, dim), sizes);
    launch(MAIN, kernel, S_MAIN, work);
    if (inner)
        range_pop(MAIN, b);
    range_pop(MAIN, a);
}

static void layer(int l)
{
    char act[128], att[128];
    snprintf(act, sizeof act, "[[%d, %u, %d], [%d, %u, %d], []]", BATCH, seqlen, HIDDEN, BATCH,
             seqlen, HIDDEN);
    snprintf(att, sizeof att, "[[%d, %d, %u, %u], [], []]", BATCH, HEADS, seqlen, seqlen);
    uint32_t scores = BATCH * HEADS * seqlen * seqlen / 64;
    uint64_t r = range_push(MAIN, layer_sid[l]);
    uint64_t a = range_push(MAIN, fixed_sid[R_SELF_ATTN]);
    linear(HIDDEN, 3 * HIDDEN);
    pointwise("aten::softmax", "aten::_softmax", B_SOFTMAX, K_SOFTMAX, att, seqlen, scores);
    pointwise("aten::dropout", "aten::native_dropout", B_DROPOUT, K_DROPOUT, att, seqlen, scores);
    linear(HIDDEN, HIDDEN);
    range_pop(MAIN, a);
    pointwise("aten::add", NULL, B_ADD, K_ADD, act, HIDDEN, tokens * HIDDEN / 64);
    pointwise("aten::layer_norm", "aten::native_layer_norm", B_LN, K_LN, act, HIDDEN,
              tokens * HIDDEN / 64);
    uint64_t m = range_push(MAIN, fixed_sid[R_MLP]);
    linear(HIDDEN, FFN);
    snprintf(act, sizeof act, "[[%d, %u, %d], []]", BATCH, seqlen, FFN);
    pointwise("aten::gelu", NULL, B_GELU, K_GELU, act, FFN, tokens * FFN / 64);
    linear(FFN, HIDDEN);
    range_pop(MAIN, m);
    snprintf(act, sizeof act, "[[%d, %u, %d], [%d, %u, %d], []]", BATCH, seqlen, HIDDEN, BATCH,
             seqlen, HIDDEN);
    pointwise("aten::add", NULL, B_ADD, K_ADD, act, HIDDEN, tokens * HIDDEN / 64);
    pointwise("aten::layer_norm", "aten::native_layer_norm", B_LN, K_LN, act, HIDDEN,
              tokens * HIDDEN / 64);
    range_pop(MAIN, r);
}

/* aten::to(non_blocking=True) of the batch: a pinned host to device copy. */
static void load_batch(void)
{
    char sz[128];
    snprintf(sz, sizeof sz, "[[%d, %u], [], [], [], [], [], [], []]", BATCH, seqlen);
    uint64_t a = op_push(MAIN, "aten::to", -1, sz);
    uint64_t b = op_push(MAIN, "aten::_to_copy", -1, sz);
    snprintf(sz, sizeof sz, "[[%d, %u], [%d, %u], []]", BATCH, seqlen, BATCH, seqlen);
    uint64_t c = op_push(MAIN, "aten::copy_", -1, sz);
    copy(MAIN, 1, (uint64_t)tokens * 8, S_COPY);
    range_pop(MAIN, c);
    range_pop(MAIN, b);
    range_pop(MAIN, a);
    stream_wait(MAIN, S_COPY, S_MAIN);
}

static void forward(void)
{
    char sz[160];
    uint64_t f = range_push(MAIN, fixed_sid[R_FORWARD]);
    uint64_t m = range_push(MAIN, fixed_sid[R_MODEL]);
    snprintf(sz, sizeof sz, "[[%d, %d], [%d, %u], [], [], []]", VOCAB, HIDDEN, BATCH, seqlen);
    uint64_t e = op_push(MAIN, "aten::embedding", record(B_EMB, tokens, VOCAB, HIDDEN), sz);
    snprintf(sz, sizeof sz, "[[%d, %d], [], [%u]]", VOCAB, HIDDEN, tokens);
    uint64_t i = op_push(MAIN, "aten::index_select", -1, sz);
    launch(MAIN, K_INDEX, S_MAIN, tokens * HIDDEN / 64);
    range_pop(MAIN, i);
    range_pop(MAIN, e);
    uint64_t enc = range_push(MAIN, fixed_sid[R_ENCODER]);
    for (int l = 0; l < NLAYERS; l++)
        layer(l);
    range_pop(MAIN, enc);
    uint64_t h = range_push(MAIN, fixed_sid[R_LM_HEAD]);
    snprintf(sz, sizeof sz, "[[%d, %u, %d], [%d, %d], []]", BATCH, seqlen, HIDDEN, VOCAB, HIDDEN);
    uint64_t l = op_push(MAIN, "aten::linear", -1, sz);
    snprintf(sz, sizeof sz, "[[%d, %u, %d], [%d, %d]]", BATCH, seqlen, HIDDEN, HIDDEN, VOCAB);
    uint64_t mm = op_push(MAIN, "aten::matmul", -1, sz);
    snprintf(sz, sizeof sz, "[[%u, %d], [%d, %d]]", tokens, HIDDEN, HIDDEN, VOCAB);
    uint64_t k = op_push(MAIN, "aten::mm", record(B_MM, tokens, HIDDEN, VOCAB), sz);
    launch(MAIN, K_GEMM_NT, S_MAIN, tokens * (VOCAB / 64));
    range_pop(MAIN, k);
    range_pop(MAIN, mm);
    range_pop(MAIN, l);
    range_pop(MAIN, h);
    range_pop(MAIN, m);
    range_pop(MAIN, f);

    /* cross_entropy: log_softmax then nll_loss, each two ops deep */
    snprintf(sz, sizeof sz, "[[%u, %d], [%u], [], [], [], []]", tokens, VOCAB, tokens);
    uint64_t ce = op_push(MAIN, "aten::cross_entropy_loss", -1, sz);
    snprintf(sz, sizeof sz, "[[%u, %d], [], []]", tokens, VOCAB);
    uint64_t ls = op_push(MAIN, "aten::log_softmax", -1, sz);
    uint64_t ls2 = op_push(MAIN, "aten::_log_softmax", record(B_LOGSOFTMAX, tokens, VOCAB, VOCAB), sz);
    launch(MAIN, K_LOGSOFTMAX, S_MAIN, tokens * (VOCAB / 64));
    range_pop(MAIN, ls2);
    range_pop(MAIN, ls);
    snprintf(sz, sizeof sz, "[[%u, %d], [%u], [], [], []]", tokens, VOCAB, tokens);
    uint64_t nl = op_push(MAIN, "aten::nll_loss_nd", -1, sz);
    uint64_t nl2 = op_push(MAIN, "aten::nll_loss", -1, sz);
    uint64_t nl3 = op_push(MAIN, "aten::nll_loss_forward", record(B_NLL, tokens, VOCAB, 1), sz);
    launch(MAIN, K_NLL, S_MAIN, tokens);
    range_pop(MAIN, nl3);
    range_pop(MAIN, nl2);
    range_pop(MAIN, nl);
    range_pop(MAIN, ce);

    /* loss.item(): a device to host copy and a synchronisation */
    uint64_t it = op_push(MAIN, "aten::item", -1, "[[]]");
    uint64_t it2 = op_push(MAIN, "aten::_local_scalar_dense", -1, "[[]]");
    copy(MAIN, 0, 4, S_MAIN);
    stream_sync(MAIN, S_MAIN);
    range_pop(MAIN, it2);
    range_pop(MAIN, it);
}

static void bwd_op(const char *name, int kernel, const char *sizes, uint32_t work)
{
    uint64_t a = op_push(AUTOGRAD, name, -1, sizes);
    launch(AUTOGRAD, kernel, S_BWD, work);
    range_pop(AUTOGRAD, a);
}

static void accumulate_grad(uint32_t rows, uint32_t cols)
{
    char sz[96];
    snprintf(sz, sizeof sz, "[[%u, %u], [%u, %u], []]", rows, cols, rows, cols);
    uint64_t a = op_push(AUTOGRAD, "autograd::engine::evaluate_function: "
                         "torch::autograd::AccumulateGrad", -1, NULL);
    uint64_t b = op_push(AUTOGRAD, "torch::autograd::AccumulateGrad", -1, NULL);
    bwd_op("aten::add_", K_ADD, sz, rows * cols / 64);
    range_pop(AUTOGRAD, b);
    range_pop(AUTOGRAD, a);
}

static void backward_node(const pending_bwd *p)
{
    char name[128], sz[128], sz2[128];
    snprintf(name, sizeof name, "autograd::engine::evaluate_function: %s", bwd_names[p->kind]);
    snprintf(sz, sizeof sz, "[[%u, %u]]", p->rows, p->out);
    uint64_t a = op_push(AUTOGRAD, name, -1, NULL);
    uint64_t b = op_push(AUTOGRAD, bwd_names[p->kind], p->seq, sz);
    switch (p->kind) {
    case B_ADDMM:
    case B_MM:
        snprintf(sz, sizeof sz, "[[%u, %u], [%u, %u]]", p->rows, p->out, p->out, p->in);
        bwd_op("aten::mm", K_GEMM_NN, sz, p->rows * p->out / 64);
        snprintf(sz2, sizeof sz2, "[[%u, %u], [%u, %u]]", p->out, p->rows, p->rows, p->in);
        bwd_op("aten::mm", K_GEMM_TN, sz2, p->rows * p->in / 64);
        if (p->kind == B_ADDMM) {
            snprintf(sz, sizeof sz, "[[%u, %u], [], [], []]", p->rows, p->out);
            bwd_op("aten::sum", K_ADD, sz, p->rows);
        }
        break;
    case B_ADD:
        break;   /* gradients pass through */
    case B_LN:
        bwd_op("aten::native_layer_norm_backward", K_LN_BW, sz, p->rows * p->out / 64);
        break;
    case B_GELU:
        bwd_op("aten::gelu_backward", K_GELU_BW, sz, p->rows * p->out / 64);
        break;
    case B_SOFTMAX:
        bwd_op("aten::_softmax_backward_data", K_SOFTMAX_BW, sz, p->rows * p->out / 64);
        break;
    case B_DROPOUT:
        bwd_op("aten::native_dropout_backward", K_MUL, sz, p->rows * p->out / 64);
        break;
    case B_LOGSOFTMAX:
        bwd_op("aten::_log_softmax_backward_data", K_LOGSOFTMAX_BW, sz, p->rows * (p->out / 64));
        break;
    case B_NLL:
        bwd_op("aten::nll_loss_backward", K_NLL_BW, sz, p->rows);
        break;
    case B_EMB: {
        /* the dense gradient starts zeroed: a set, then the scatter kernel */
        uint64_t c = op_push(AUTOGRAD, "aten::embedding_backward", -1, sz);
        uint64_t d = op_push(AUTOGRAD, "aten::embedding_dense_backward", -1, sz);
        snprintf(sz2, sizeof sz2, "[[], [], [], [], []]");
        uint64_t z = op_push(AUTOGRAD, "aten::zeros", -1, sz2);
        snprintf(sz2, sizeof sz2, "[[%u, %u]]", p->in, p->out);
        uint64_t z2 = op_push(AUTOGRAD, "aten::zero_", -1, sz2);
        memset_async(AUTOGRAD, (uint64_t)p->in * p->out * 4, S_BWD);
        range_pop(AUTOGRAD, z2);
        range_pop(AUTOGRAD, z);
        launch(AUTOGRAD, K_EMB_BW, S_BWD, p->rows * p->out / 64);
        range_pop(AUTOGRAD, d);
        range_pop(AUTOGRAD, c);
        break;
    }
    }
    range_pop(AUTOGRAD, b);
    range_pop(AUTOGRAD, a);
    if (p->kind == B_ADDMM || p->kind == B_EMB || p->kind == B_MM)
        accumulate_grad(p->kind == B_EMB ? p->in : p->out, p->kind == B_EMB ? p->out : p->in);
}

static void backward(void)
{
    /* loss.backward() blocks the main thread while the autograd thread runs */
    uint64_t r = range_push(MAIN, fixed_sid[R_BACKWARD]);
    cpu[AUTOGRAD] = max64(cpu[AUTOGRAD], cpu[MAIN]);
    gpu[S_BWD] = max64(gpu[S_BWD], gpu[S_MAIN]);
    for (int i = ntape; i-- > 0;)
        backward_node(&tape[i]);
    ntape = 0;
    cpu[MAIN] = cpu[AUTOGRAD] + 1000;
    range_pop(MAIN, r);
    stream_wait(MAIN, S_BWD, S_MAIN);
}

static void optimizer_step(void)
{
    static const char *const foreach_ops[] = {"aten::_foreach_mul_", "aten::_foreach_add_",
                                              "aten::_foreach_addcmul_", "aten::_foreach_addcdiv_"};
    uint64_t r = range_push(MAIN, fixed_sid[R_OPTIMIZER]);
    uint64_t a = op_push(MAIN, "Optimizer.step#AdamW.step", -1, NULL);
    for (size_t i = 0; i < sizeof foreach_ops / sizeof foreach_ops[0]; i++) {
        uint64_t b = op_push(MAIN, foreach_ops[i], -1, "[[], [], []]");
        launch(MAIN, K_ADAM, S_MAIN, 1u << 16);
        range_pop(MAIN, b);
    }
    range_pop(MAIN, a);
    range_pop(MAIN, r);
}

/* ------------------------------------------------------------------ stacks */

int main(int argc, char **argv);

/* Exported functions the frames are drawn from, by library.  Those a library
 * does not have, or has only as an IFUNC (whose address is another
 * function's), are left out: a frame must name the function it lies in. */
static const char *const libc_funcs[] = {
    "fwrite", "fputs", "fprintf", "snprintf", "vfprintf", "fopen", "fclose", "fflush", "fread",
    "qsort", "bsearch", "strtoll", "strtod", "malloc", "calloc", "realloc", "free", "getenv",
    "setvbuf", "getopt_long", "opendir", "readdir", "read", "write", "open", "close", "mmap",
    "munmap", "pthread_create", "pthread_mutex_lock", "pthread_mutex_unlock",
    "pthread_cond_wait", "pthread_once", "backtrace", "dl_iterate_phdr", "dlopen", "dlsym",
    "ioctl", "poll", "nanosleep", "clock_gettime", "sched_yield", "syscall", NULL};
static const char *const libm_funcs[] = {
    "exp", "log", "pow", "tanh", "erf", "lgamma", "fmod", "expf", "logf", "tanhf", "erff", NULL};
static const char *const libz_funcs[] = {
    "deflate", "inflate", "crc32", "adler32", "compress2", "uncompress", "deflateInit2_",
    "inflateInit2_", "gzwrite", "gzread", NULL};
static const char *const sqlite_funcs[] = {
    "sqlite3_exec", "sqlite3_prepare_v2", "sqlite3_step", "sqlite3_bind_int64",
    "sqlite3_bind_text", "sqlite3_column_int64", "sqlite3_reset", "sqlite3_finalize",
    "sqlite3_open_v2", "sqlite3_close", "sqlite3_mprintf", "sqlite3_malloc64", NULL};
static const struct {
    const char *soname;
    const char *const *funcs;
} stack_libs[] = {
    {"libc.so.6", libc_funcs},
    {"libm.so.6", libm_funcs},
    {"libz.so.1", libz_funcs},
    {"libsqlite3.so.0", sqlite_funcs},
};

/* gen-raw's own functions: none of them is shorter than OWN_SIZE bytes, and
 * taking their address keeps an out-of-line copy under their name. */
#define OWN_SIZE 16
typedef void (*any_fn)(void);
static const any_fn own_funcs[] = {
    (any_fn)write_chunk, (any_fn)flush_kind, (any_fn)add, (any_fn)string, (any_fn)marker,
    (any_fn)range_push, (any_fn)range_pop, (any_fn)mark, (any_fn)op_push, (any_fn)api,
    (any_fn)call, (any_fn)launch, (any_fn)copy, (any_fn)memset_async, (any_fn)stream_sync,
    (any_fn)stream_wait, (any_fn)record, (any_fn)linear, (any_fn)pointwise, (any_fn)layer,
    (any_fn)load_batch, (any_fn)forward, (any_fn)bwd_op, (any_fn)accumulate_grad,
    (any_fn)backward_node, (any_fn)backward, (any_fn)optimizer_step,
};

#define SITES 3   /* call sites per function: its distinct return addresses */
static uint64_t *pool;
static size_t npool;

/* SITES return addresses in the size bytes at fn: each lies past the start
 * (a call precedes it) and before the end, so that both the address and the
 * address - 1 the reader looks up are in the function. */
static void add_sites(uint64_t fn, uint64_t size)
{
    uint32_t span = size < 64 ? (uint32_t)size : 64;
    for (int k = 0; k < SITES; k++)
        pool[npool++] = fn + 1 + stack_rnd(span - 1);
}

/* A sized, non-IFUNC function of the object h, or 0. */
static uint64_t lib_function(void *h, const char *name, uint64_t *size)
{
    void *a = dlsym(h, name);
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (!a || !dladdr1(a, &info, (void **)&sym, RTLD_DL_SYMENT) || !sym
        || info.dli_saddr != a || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_size < 2)
        return 0;
    *size = sym->st_size;
    return (uint64_t)(uintptr_t)a;
}

/* The N stacks, outermost frame first while built: __libc_start_main and main,
 * then frames drawn from the pool.  A stack shares its outer frames with an
 * earlier one, as launches from one code path do, so the stacks form a tree. */
static void build_stacks(uint64_t seed)
{
    stack_rng = seed * 0xd1b54a32d192ed03ull + 7;
    size_t cap = SITES * (sizeof own_funcs / sizeof own_funcs[0]);
    for (size_t l = 0; l < sizeof stack_libs / sizeof stack_libs[0]; l++)
        for (const char *const *f = stack_libs[l].funcs; *f; f++)
            cap += SITES;
    pool = malloc(cap * sizeof *pool);
    stack_pcs = malloc((size_t)nstacks * MAX_DEPTH * sizeof *stack_pcs);
    stack_depth = malloc(nstacks);
    stack_sent = calloc(nstacks, 1);
    stks = malloc(STAGE_FLUSH + 8);
    if (!pool || !stack_pcs || !stack_depth || !stack_sent || !stks)
        die("out of memory");

    uint64_t entry[2];
    int nentry = 0;
    /* the handles stay open: the maps written at the end must show the libraries */
    void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
    uint64_t size;
    uint64_t fn = libc ? lib_function(libc, "__libc_start_main", &size) : 0;
    if (fn)
        entry[nentry++] = fn + 1 + stack_rnd((uint32_t)(size < 64 ? size : 64) - 1);
    entry[nentry++] = (uint64_t)(uintptr_t)main + 1 + stack_rnd(OWN_SIZE - 1);
    for (size_t l = 0; l < sizeof stack_libs / sizeof stack_libs[0]; l++) {
        void *h = dlopen(stack_libs[l].soname, RTLD_NOW | RTLD_LOCAL);
        for (const char *const *f = stack_libs[l].funcs; h && *f; f++)
            if ((fn = lib_function(h, *f, &size)))
                add_sites(fn, size);
    }
    for (size_t i = 0; i < sizeof own_funcs / sizeof own_funcs[0]; i++)
        add_sites((uint64_t)(uintptr_t)own_funcs[i], OWN_SIZE);

    uint64_t path[MAX_DEPTH];
    for (uint32_t i = 0; i < nstacks; i++) {
        unsigned depth = MIN_DEPTH + stack_rnd(MAX_DEPTH - MIN_DEPTH + 1), k = 0;
        if (i == 0) {
            for (; k < (unsigned)nentry; k++)
                path[k] = entry[k];
        } else {
            uint32_t p = stack_rnd(i);
            unsigned pd = stack_depth[p], common = pd < depth ? pd : depth;
            unsigned share = (unsigned)nentry + stack_rnd(common - (unsigned)nentry);
            for (; k < share; k++)
                path[k] = stack_pcs[(size_t)p * MAX_DEPTH + pd - 1 - k];
        }
        for (; k < depth; k++)
            path[k] = pool[stack_rnd((uint32_t)npool)];
        for (k = 0; k < depth; k++)
            stack_pcs[(size_t)i * MAX_DEPTH + k] = path[depth - 1 - k];
        stack_depth[i] = (unsigned char)depth;
    }
}

/* What the recorder writes at the end of a --backtrace recording: the maps
 * text the frames are resolved through ... */
static void write_maps(uint64_t ts)
{
    FILE *f = fopen("/proc/self/maps", "r");
    size_t cap = 1 << 16, n = 16;
    unsigned char *b = malloc(cap + 8);
    if (!f || !b)
        die("cannot read /proc/self/maps");
    size_t r;
    while ((r = fread(b + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) {
            unsigned char *nb = realloc(b, 2 * cap + 8);
            if (!nb)
                die("out of memory");
            b = nb;
            cap *= 2;
        }
    }
    fclose(f);
    uint32_t len = (uint32_t)(n - 16), zero = 0;
    memcpy(b, &ts, 8);
    memcpy(b + 8, &len, 4);
    memcpy(b + 12, &zero, 4);
    write_chunk(TR_RAW_CH_MAPS, b, n);
    free(b);
}

/* ... and the build-ids that show the ingest the files are still those that
 * were mapped, built as the recorder builds them. */
static void write_modules(void)
{
    size_t n;
    unsigned char *m = tr_loaded_modules(&n);
    if (m)
        write_chunk(TR_RAW_CH_MODULES, m, n);
    free(m);
}

/* -------------------------------------------------------------------- file */

static void header(uint64_t seed)
{
    tr_raw_header h;
    memset(&h, 0, sizeof h);
    h.flags = TR_RAW_HF_CLOCK_MONOTONIC | TR_RAW_HF_SUBSCRIBED | (nstacks ? TR_RAW_HF_BACKTRACE : 0);
    h.session_id = seed * 0x9e3779b97f4a7c15ull ^ 0x5eed5eed5eed5eedull;
    h.pid = PID;
    h.ppid = PID - 1;   /* the launcher */
    h.t0_realtime = T0_REALTIME;
    h.t0_monotonic = T0_MONOTONIC;
    h.cupti_runtime_version = 24;
    h.cupti_compile_version = 24;
    h.recorder_version = 1;
    tr_raw_header_seal(&h);
    if (fwrite(&h, sizeof h, 1, out) != 1)
        die("write");
}

static void meta(void)
{
    static const char kv[] = "exe=/usr/bin/python3.11\0"
                             "cmdline=python train.py --model lm --epochs 1\0"
                             "hostname=gpu-node-07\0"
                             "libcupti=/usr/local/cuda-12.6/extras/CUPTI/lib64/libcupti.so.12\0"
                             "kinds=default\0"
                             "subscriber=yes\0"
                             "CUDA_VISIBLE_DEVICES=0\0";
    unsigned char buf[sizeof kv + 8];
    memcpy(buf, kv, sizeof kv - 1);
    write_chunk(TR_RAW_CH_META, buf, sizeof kv - 1);
}

static void setup(void)
{
    for (int i = 0; i < NKERNELS; i++)
        kernel_sid[i] = cstring(kernel_names[i]);
    for (int i = 0; i < NFIXED; i++)
        fixed_sid[i] = cstring(fixed_names[i]);
    for (int l = 0; l < NLAYERS; l++) {
        char name[32];
        snprintf(name, sizeof name, "layers.%d", l);
        layer_sid[l] = cstring(name);
    }
    tr_raw_device dev = {.global_memory = 80ull << 30, .id = DEVICE,
                         .name_sid = cstring("NVIDIA H100 80GB HBM3"), .cc_major = 9,
                         .cc_minor = 0, .sm_count = 132};
    add(TR_RAW_REC_DEVICE, &dev);
    tr_raw_context ctx = {.context = CONTEXT, .device = DEVICE, .null_stream = stream_ids[S_MAIN]};
    add(TR_RAW_REC_CONTEXT, &ctx);
    tr_raw_name names[2] = {{.object_kind = TR_RAW_OBJ_THREAD, .id = tids[MAIN],
                             .name_sid = cstring("pt_main_thread")},
                            {.object_kind = TR_RAW_OBJ_THREAD, .id = tids[AUTOGRAD],
                             .name_sid = cstring("pt_autograd_0")}};
    add(TR_RAW_REC_NAME, &names[0]);
    add(TR_RAW_REC_NAME, &names[1]);

    mark(MAIN, fixed_sid[M_START]);
    /* the side streams, created with cudaStreamCreateWithFlags(cudaStreamNonBlocking) */
    for (int s = S_BWD; s < NSTREAMS; s++) {
        uint64_t a, b;
        uint32_t corr = call(MAIN, 198, 124, 5000 + rnd(5000), &a, &b);
        tr_raw_stream st = {.context = CONTEXT, .stream = stream_ids[s], .flag = 1, .corr = corr};
        add(TR_RAW_REC_STREAM, &st);
    }
    /* CUPTI hands these over first; the reader maps a sync's context to its
     * device only with the CONTEXT record already read */
    flush_kind(TR_RAW_REC_DEVICE);
    flush_kind(TR_RAW_REC_CONTEXT);
    flush_kind(TR_RAW_REC_STREAM);
    flush_kind(TR_RAW_REC_NAME);
    /* the caching allocator's first blocks: cudaMalloc, no GPU work */
    for (int i = 0; i < 3; i++) {
        uint64_t a, b;
        call(MAIN, 20, 243, 50000 + rnd(200000), &a, &b);
    }
}

static void finish(void)
{
    flush_strings();
    for (unsigned k = 1; k < TR_RAW_REC_COUNT_; k++)
        flush_kind(k);
    uint64_t last = max64(max64(cpu[MAIN], cpu[AUTOGRAD]), max64(gpu[S_MAIN], gpu[S_BWD]));
    last = max64(last, gpu[S_COPY]) + 1000000;
    if (nstacks) {
        write_maps(last);
        write_modules();
    }
    /* STATS: nothing dropped, so the reader warns of nothing; one completed
     * CUPTI buffer per records chunk is only a plausible count */
    unsigned char st[8 + 8 * TR_RAW_STAT_COUNT_ + 8];
    uint32_t n = TR_RAW_STAT_COUNT_, zero = 0;
    uint64_t c[TR_RAW_STAT_COUNT_] = {0};
    c[TR_RAW_STAT_BUFFERS] = record_chunks;
    c[TR_RAW_STAT_RECORDS] = records_written;
    memcpy(st, &n, 4);
    memcpy(st + 4, &zero, 4);
    memcpy(st + 8, c, sizeof c);
    write_chunk(TR_RAW_CH_STATS, st, 8 + sizeof c);
    uint64_t end[4] = {T0_REALTIME + (last - T0_MONOTONIC), last, chunk_seq, 0};
    write_chunk(TR_RAW_CH_END, (unsigned char *)end, 24);
}

int main(int argc, char **argv)
{
    long long target = 2000;
    uint64_t seed = 1;
    long long stacks = 0;
    static const struct option longopts[] = {{"stacks", required_argument, NULL, 'k'},
                                             {NULL, 0, NULL, 0}};
    static const char usage[] = "usage: gen-raw [-n EVENTS] [-s SEED] [--stacks N] -o FILE.ctr\n";
    int c;
    while ((c = getopt_long(argc, argv, "n:s:o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'n': target = strtoll(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': out_path = optarg; break;
        case 'k': stacks = strtoll(optarg, NULL, 10); break;
        default: fputs(usage, stderr); return 2;
        }
    }
    if (!out_path || target < 1 || stacks < 0 || stacks > 1000000 || optind < argc) {
        fputs(usage, stderr);
        return 2;
    }
    nstacks = (uint32_t)stacks;
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    for (unsigned k = 1; k < TR_RAW_REC_COUNT_; k++) {
        stages[k].d = malloc(STAGE_FLUSH + 8);
        stages[k].n = 8;
    }
    strs = malloc(STAGE_FLUSH + 8);
    char *iobuf = malloc(8u << 20);
    if (!strs || !iobuf || !(out = fopen(out_path, "wb")))
        die("cannot create");
    for (unsigned k = 1; k < TR_RAW_REC_COUNT_; k++)
        if (!stages[k].d)
            die("out of memory");
    setvbuf(out, iobuf, _IOFBF, 8u << 20);
    if (nstacks)
        build_stacks(seed);

    header(seed);
    meta();
    cpu[MAIN] = cpu[AUTOGRAD] = T0_MONOTONIC + 1000000000ull;
    for (int s = 0; s < NSTREAMS; s++)
        gpu[s] = cpu[MAIN];
    setup();
    static const uint32_t lengths[] = {128, 256, 384, 512};
    /* at least one step, even when the set-up calls already reach the target */
    do {
        seqlen = lengths[rnd(4)];
        tokens = BATCH * seqlen;
        mark(MAIN, fixed_sid[M_BATCH]);
        uint64_t r = range_push(MAIN, fixed_sid[R_TRAIN_STEP]);
        load_batch();
        forward();
        backward();
        optimizer_step();
        range_pop(MAIN, r);
    } while (events < target);
    finish();
    if (fclose(out) != 0)
        die("close");
    for (unsigned k = 1; k < TR_RAW_REC_COUNT_; k++)
        free(stages[k].d);
    free(strs);
    free(iobuf);
    free(pool);
    free(stack_pcs);
    free(stack_depth);
    free(stack_sent);
    free(stks);
    return 0;
}
