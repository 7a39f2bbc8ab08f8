/*
 * gen-nvprof: writes a deterministic synthetic nvprof database (schema
 * Version 12 column layout) of a PyTorch-like training loop recorded under
 * emit_nvtx(record_shapes=True): nested op ranges on a forward and an
 * autograd thread, runtime launches with their kernels, copies, sets and
 * stream synchronisations.  The same seed and size always give the same rows.
 *
 * usage: gen-nvprof [-n EVENTS] [-s SEED] -o FILE
 */
#include <getopt.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/rng.h"

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) { return bench_rnd(&rng_state, n); }

static sqlite3 *db;
static sqlite3_stmt *ins_str, *ins_marker, *ins_api[2], *ins_kernel, *ins_memcpy, *ins_memset, *ins_sync;
static int64_t next_string = 1, next_marker = 1, next_corr = 1;
static int64_t events;

static void die(const char *what)
{
    fprintf(stderr, "gen-nvprof: %s: %s\n", what, sqlite3_errmsg(db));
    exit(1);
}

static void exec(const char *sql)
{
    if (sqlite3_exec(db, sql, NULL, NULL, NULL) != SQLITE_OK)
        die(sql);
}

static void step(sqlite3_stmt *st)
{
    if (sqlite3_step(st) != SQLITE_DONE)
        die("insert");
    sqlite3_reset(st);
}

/* Interns through a tiny linear cache: the generator uses few distinct strings. */
#define MAX_STRINGS 4096
static char *str_cache[MAX_STRINGS];
static int64_t str_ids[MAX_STRINGS];
static int nstr;
static int64_t string_id(const char *s)
{
    for (int i = 0; i < nstr; i++)
        if (strcmp(str_cache[i], s) == 0)
            return str_ids[i];
    int64_t id = next_string++;
    sqlite3_bind_int64(ins_str, 1, id);
    sqlite3_bind_text(ins_str, 2, s, -1, SQLITE_TRANSIENT);
    step(ins_str);
    if (nstr < MAX_STRINGS) {
        str_cache[nstr] = strdup(s);
        str_ids[nstr++] = id;
    }
    return id;
}

static const unsigned char thread_blob_fwd[12] = {0x10, 0x27, 0, 0, 0xe8, 0x03, 0, 0, 0, 0, 0, 0};
static const unsigned char thread_blob_bwd[12] = {0x10, 0x27, 0, 0, 0xe9, 0x03, 0, 0, 0, 0, 0, 0};
#define PID 10000
static int64_t tid_of(int bwd) { return bwd ? 1001 : 1000; }

static void marker(int flags, int64_t ts, int64_t id, int bwd, int64_t name)
{
    sqlite3_bind_int(ins_marker, 1, flags);
    sqlite3_bind_int64(ins_marker, 2, ts);
    sqlite3_bind_int64(ins_marker, 3, id);
    sqlite3_bind_blob(ins_marker, 4, bwd ? thread_blob_bwd : thread_blob_fwd, 12, SQLITE_STATIC);
    sqlite3_bind_int64(ins_marker, 5, name);
    step(ins_marker);
    events += flags != 4;
}

static void api(int driver, int cbid, int64_t start, int64_t end, int bwd, int64_t corr)
{
    sqlite3_stmt *st = ins_api[driver];
    sqlite3_bind_int(st, 1, cbid);
    sqlite3_bind_int64(st, 2, start);
    sqlite3_bind_int64(st, 3, end);
    sqlite3_bind_int(st, 4, PID);
    sqlite3_bind_int(st, 5, (int)tid_of(bwd));
    sqlite3_bind_int64(st, 6, corr);
    step(st);
    events++;
}

static const char *const kernels[] = {
    "_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implIZZZNS0_15add_kernel_cudaERNS_14TensorIteratorEN3c106ScalarEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS4_RKT_EUliE2_EEviT1_",
    "volta_sgemm_128x64_nn",
    "_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_implIZNS0_23gpu_kernel_with_scalarsIZZZNS0_15mul_kernel_cudaERNS_14TensorIteratorEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS5_RKT_EUlfE0_EEvS5_SB_EUliE_EEviT1_",
    "_Z20kernelReduceAllPass2Il9ReduceMinIlEEviT_T0_PS2_S4_",
    "_Z21indexSelectLargeIndexIfjLi2ELi2ELin2ELb1EEv10TensorInfoIT_T0_ES3_S0_IlS2_EiiS2_S2_l",
    "volta_sgemm_32x128_tn",
};

typedef struct { const char *name; const char *sizes; int kernel; int child; } op_spec;
static const op_spec fwd_ops[] = {
    {"aten::embedding", "[[35, 20], [33278, 200]]", 4, -1},
    {"aten::linear", "[[700, 200], [800, 200], [800]]", -1, 2},
    {"aten::addmm", "[[800], [700, 200], [200, 800]]", 1, -1},
    {"aten::relu", "[[700, 800]]", 0, -1},
    {"aten::mul", "[[700, 800], []]", 2, -1},
    {"aten::add", "[[700, 800], [700, 800], []]", 0, -1},
    {"aten::sum", "[[700, 800]]", 3, -1},
};
static const op_spec bwd_ops[] = {
    {"SumBackward0", "[[]]", 0, -1},
    {"MulBackward0", "[[700, 800]]", 2, -1},
    {"AddmmBackward0", "[[700, 800]]", 5, -1},
    {"EmbeddingBackward0", "[[35, 20, 200]]", 3, -1},
};

static int64_t cpu[2], gpu, seq, op_id;

static void launch(int bwd, int kernel)
{
    int64_t corr = next_corr++;
    int64_t s = cpu[bwd] + 1000 + rnd(2000), e = s + 3000 + rnd(4000);
    api(0, 211, s, e, bwd, corr);
    /* cudaLaunchKernel calls cuLaunchKernel; nvprof records both, each with its own id */
    api(1, 307, s + 500, e - 500, bwd, next_corr++);
    int64_t ks = (gpu > e + 2000 ? gpu : e + 2000) + rnd(500);
    int64_t ke = ks + 2000 + rnd(40000);
    sqlite3_bind_int64(ins_kernel, 1, ks);
    sqlite3_bind_int64(ins_kernel, 2, ke);
    sqlite3_bind_int(ins_kernel, 3, bwd ? 13 : 7);
    sqlite3_bind_int64(ins_kernel, 4, corr);
    sqlite3_bind_int64(ins_kernel, 5, string_id(kernels[kernel]));
    sqlite3_bind_int(ins_kernel, 6, 1 + (int)rnd(1024));
    sqlite3_bind_int(ins_kernel, 7, 128 << rnd(3));
    step(ins_kernel);
    events++;
    gpu = ke;
    cpu[bwd] = e;
}

static void copy_and_sync(int bwd)
{
    int64_t corr = next_corr++;
    int64_t s = cpu[bwd] + 1000, e = s + 8000 + rnd(8000);
    api(0, 41, s, e, bwd, corr);   /* cudaMemcpyAsync */
    int64_t cs = (gpu > s + 3000 ? gpu : s + 3000), ce = cs + 5000 + rnd(20000);
    sqlite3_bind_int(ins_memcpy, 1, 1 + (int)rnd(2));
    sqlite3_bind_int64(ins_memcpy, 2, 4096 << rnd(8));
    sqlite3_bind_int64(ins_memcpy, 3, cs);
    sqlite3_bind_int64(ins_memcpy, 4, ce);
    sqlite3_bind_int64(ins_memcpy, 5, corr);
    step(ins_memcpy);
    events++;
    gpu = ce;
    cpu[bwd] = e;

    corr = next_corr++;
    s = cpu[bwd] + 1000, e = s + 4000;
    api(0, 51, s, e, bwd, corr);   /* cudaMemsetAsync */
    int64_t ms = (gpu > s + 2000 ? gpu : s + 2000), me = ms + 1500 + rnd(3000);
    sqlite3_bind_int64(ins_memset, 1, 1024 << rnd(6));
    sqlite3_bind_int64(ins_memset, 2, ms);
    sqlite3_bind_int64(ins_memset, 3, me);
    sqlite3_bind_int64(ins_memset, 4, corr);
    step(ins_memset);
    events++;
    gpu = me;
    cpu[bwd] = e;

    corr = next_corr++;
    s = cpu[bwd] + 1000;
    e = (gpu > s ? gpu : s) + 2000;
    api(0, 131, s, e, bwd, corr);  /* cudaStreamSynchronize */
    sqlite3_bind_int64(ins_sync, 1, s + 800);
    sqlite3_bind_int64(ins_sync, 2, e - 800);
    sqlite3_bind_int64(ins_sync, 3, corr);
    step(ins_sync);
    events++;
    cpu[bwd] = e;
}

static void op(int bwd, const op_spec *ops, int i, int depth)
{
    const op_spec *o = &ops[i];
    char name[512];
    int has_seq = !bwd || rnd(4);
    int n = snprintf(name, sizeof name, "%s", o->name);
    if (has_seq)
        n += snprintf(name + n, sizeof name - (size_t)n, ", seq = %lld", (long long)(bwd ? seq - 1 - i : seq));
    n += snprintf(name + n, sizeof name - (size_t)n, ", op_id = %lld", (long long)++op_id);
    snprintf(name + n, sizeof name - (size_t)n, ", sizes = %s, input_op_ids = [(0,-1)]", o->sizes);
    int64_t id = next_marker++;
    cpu[bwd] += 2000 + rnd(3000);
    marker(2, cpu[bwd], id, bwd, string_id(name));
    if (o->child >= 0 && depth < 8)
        op(bwd, ops, o->child, depth + 1);
    if (o->kernel >= 0)
        launch(bwd, o->kernel);
    cpu[bwd] += 1000 + rnd(2000);
    marker(4, cpu[bwd], id, bwd, 0);
}

int main(int argc, char **argv)
{
    int64_t target = 2000;
    uint64_t seed = 1;
    const char *out = NULL;
    int c;
    while ((c = getopt(argc, argv, "n:s:o:")) != -1) {
        switch (c) {
        case 'n': target = strtoll(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': out = optarg; break;
        default: fprintf(stderr, "usage: gen-nvprof [-n EVENTS] [-s SEED] -o FILE\n"); return 2;
        }
    }
    if (!out || target < 1) {
        fprintf(stderr, "usage: gen-nvprof [-n EVENTS] [-s SEED] -o FILE\n");
        return 2;
    }
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    unlink(out);
    if (sqlite3_open(out, &db) != SQLITE_OK)
        die(out);
    exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN");
    exec("CREATE TABLE Version(version INTEGER);"
         "INSERT INTO Version VALUES(12);"
         "CREATE TABLE StringTable(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value TEXT NOT NULL UNIQUE);"
         "INSERT INTO StringTable VALUES(0, '-- null --');"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_MARKER(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, flags INT NOT NULL,"
         " timestamp INT NOT NULL, id INT NOT NULL, objectKind INT NOT NULL, objectId BLOB NOT NULL,"
         " name INT NOT NULL, domain INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, cbid INT NOT NULL,"
         " start INT NOT NULL, end INT NOT NULL, processId INT NOT NULL, threadId INT NOT NULL,"
         " correlationId INT NOT NULL, returnValue INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, cbid INT NOT NULL,"
         " start INT NOT NULL, end INT NOT NULL, processId INT NOT NULL, threadId INT NOT NULL,"
         " correlationId INT NOT NULL, returnValue INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,"
         " registersPerThread INT NOT NULL, start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,"
         " contextId INT NOT NULL, streamId INT NOT NULL, gridX INT NOT NULL, gridY INT NOT NULL,"
         " gridZ INT NOT NULL, blockX INT NOT NULL, blockY INT NOT NULL, blockZ INT NOT NULL,"
         " staticSharedMemory INT NOT NULL, dynamicSharedMemory INT NOT NULL, correlationId INT NOT NULL,"
         " name INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, copyKind INT NOT NULL,"
         " srcKind INT NOT NULL, dstKind INT NOT NULL, flags INT NOT NULL, bytes INT NOT NULL,"
         " start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL, contextId INT NOT NULL,"
         " streamId INT NOT NULL, correlationId INT NOT NULL, runtimeCorrelationId INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, value INT NOT NULL,"
         " bytes INT NOT NULL, start INT NOT NULL, end INT NOT NULL, deviceId INT NOT NULL,"
         " contextId INT NOT NULL, streamId INT NOT NULL, correlationId INT NOT NULL, flags INT NOT NULL,"
         " memoryKind INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(_id_ INTEGER PRIMARY KEY AUTOINCREMENT,"
         " type INT NOT NULL, start INT NOT NULL, end INT NOT NULL, correlationId INT NOT NULL,"
         " contextId INT NOT NULL, streamId INT NOT NULL, cudaEventId INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_DEVICE(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, globalMemorySize INT NOT NULL,"
         " numMultiprocessors INT NOT NULL, computeCapabilityMajor INT NOT NULL,"
         " computeCapabilityMinor INT NOT NULL, id INT NOT NULL, name INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_CONTEXT(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, contextId INT NOT NULL,"
         " deviceId INT NOT NULL, computeApiKind INT NOT NULL, nullStreamId INT NOT NULL);"
         "CREATE TABLE CUPTI_ACTIVITY_KIND_NAME(_id_ INTEGER PRIMARY KEY AUTOINCREMENT, objectKind INT NOT NULL,"
         " objectId BLOB NOT NULL, name INT NOT NULL);"
         "INSERT INTO CUPTI_ACTIVITY_KIND_CONTEXT VALUES(1, 1, 0, 1, 7);");
#define PREP(st, sql) if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) die(sql)
    PREP(ins_str, "INSERT INTO StringTable(_id_, value) VALUES(?, ?)");
    PREP(ins_marker, "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId,"
                     " name, domain) VALUES(?, ?, ?, 2, ?, ?, 0)");
    PREP(ins_api[0], "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId,"
                     " correlationId, returnValue) VALUES(?, ?, ?, ?, ?, ?, 0)");
    PREP(ins_api[1], "INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER(cbid, start, end, processId, threadId,"
                     " correlationId, returnValue) VALUES(?, ?, ?, ?, ?, ?, 0)");
    PREP(ins_kernel, "INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(registersPerThread, start, end,"
                     " deviceId, contextId, streamId, gridX, gridY, gridZ, blockX, blockY, blockZ,"
                     " staticSharedMemory, dynamicSharedMemory, correlationId, name)"
                     " VALUES(32, ?, ?, 0, 1, ?, ?6, 1, 1, ?7, 1, 1, 0, 0, ?4, ?5)");
    PREP(ins_memcpy, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(copyKind, srcKind, dstKind, flags, bytes,"
                     " start, end, deviceId, contextId, streamId, correlationId, runtimeCorrelationId)"
                     " VALUES(?, 2, 3, 0, ?, ?, ?, 0, 1, 7, ?, 0)");
    PREP(ins_memset, "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(value, bytes, start, end, deviceId, contextId,"
                     " streamId, correlationId, flags, memoryKind) VALUES(0, ?, ?, ?, 0, 1, 7, ?, 0, 3)");
    PREP(ins_sync, "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(type, start, end, correlationId,"
                   " contextId, streamId, cudaEventId) VALUES(3, ?, ?, ?, 1, 7, 0)");
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO CUPTI_ACTIVITY_KIND_DEVICE VALUES(1, 17179869184, 80, 7, 0, 0, %lld);"
             "INSERT INTO CUPTI_ACTIVITY_KIND_NAME VALUES(1, 1, x'1027000000000000', %lld);",
             (long long)string_id("Tesla V100-SXM2-16GB"), (long long)string_id("python train.py"));
    exec(sql);

    const int64_t t0 = 1600000000000000000ll;
    cpu[0] = cpu[1] = gpu = t0;
    marker(1, t0, next_marker++, 0, string_id("__start_profile"));
    for (int64_t stepno = 0; events < target; stepno++) {
        int64_t step_id = next_marker++;
        marker(2, ++cpu[0], step_id, 0, string_id("train_step"));
        seq = stepno * 16;
        for (size_t i = 0; i < sizeof fwd_ops / sizeof fwd_ops[0]; i++) {
            if (fwd_ops[i].kernel < 0 || fwd_ops[i].child < 0) {
                if (i == 2) continue;   /* addmm runs inside linear */
            }
            op(0, fwd_ops, (int)i, 0);
            seq++;
        }
        copy_and_sync(0);
        /* the autograd thread starts after the forward pass */
        cpu[1] = cpu[0] > cpu[1] ? cpu[0] : cpu[1];
        for (size_t i = 0; i < sizeof bwd_ops / sizeof bwd_ops[0]; i++)
            op(1, bwd_ops, (int)i, 0);
        cpu[0] = cpu[1] + 1000;
        marker(4, cpu[0], step_id, 0, 0);
    }
    exec("COMMIT");
    sqlite3_finalize(ins_str);
    sqlite3_finalize(ins_marker);
    sqlite3_finalize(ins_api[0]);
    sqlite3_finalize(ins_api[1]);
    sqlite3_finalize(ins_kernel);
    sqlite3_finalize(ins_memcpy);
    sqlite3_finalize(ins_memset);
    sqlite3_finalize(ins_sync);
    for (int i = 0; i < nstr; i++)
        free(str_cache[i]);
    if (sqlite3_close(db) != SQLITE_OK)
        die("close");
    return 0;
}
