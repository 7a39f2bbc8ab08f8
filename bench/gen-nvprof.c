/*
 * gen-nvprof: writes a deterministic synthetic profile of a PyTorch-like
 * training loop recorded under emit_nvtx(record_shapes=True): nested op ranges
 * on a forward and an autograd thread, runtime launches with their kernels,
 * copies, sets and stream synchronisations.  The same seed and size always
 * give the same rows.  Two formats hold the same CUPTI activity tables under
 * different names: an nvprof database (schema Version 12 column layout, the
 * default) or, with -f nsys, an Nsight Systems SQLite export (schema 3.17).
 *
 * usage: gen-nvprof [-n EVENTS] [-s SEED] [-f nvprof|nsys] -o FILE
 */
#include <getopt.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/rng.h"

#define USAGE "usage: gen-nvprof [-n EVENTS] [-s SEED] [-f nvprof|nsys] -o FILE\n"

static uint64_t rng_state;
static uint32_t rnd(uint32_t n) { return bench_rnd(&rng_state, n); }

static sqlite3 *db;
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

/* ---- the rows, and the named parameters each format's inserts take ------- */

/* What a row of each kind carries; a format's SQL names the parameters it
 * stores (:ts, :corr, ...) and the others are not bound. */
enum { ROW_STRING, ROW_RANGE_START, ROW_RANGE_END, ROW_MARK, ROW_RUNTIME, ROW_DRIVER, ROW_KERNEL,
       ROW_MEMCPY, ROW_MEMSET, ROW_SYNC, NROWS };
enum { P_ID, P_VALUE, P_TS, P_START, P_END, P_MARKER, P_PID, P_TID, P_TID_BLOB, P_NAME, P_TEXT,
       P_CBID, P_FUNCTION, P_CORR, P_STREAM, P_GRID_X, P_BLOCK_X, P_MANGLED, P_DEMANGLED, P_SHORT,
       P_COPY_KIND, P_BYTES, NPARAMS };
static const char *const param_names[NPARAMS] = {
    ":id", ":value", ":ts", ":start", ":end", ":marker", ":pid", ":tid", ":tid_blob", ":name", ":text",
    ":cbid", ":function", ":corr", ":stream", ":grid_x", ":block_x", ":mangled", ":demangled", ":short",
    ":copy_kind", ":bytes"};

typedef struct {
    sqlite3_stmt *st;       /* NULL: the format has no such row */
    int ix[NPARAMS];        /* the parameter's index in st, 0 when it takes none */
} row_insert;
static row_insert ins[NROWS];

/* A format: its tables, the insert of each row kind, and the rows written
 * once (devices, names) given the string ids it needs. */
typedef struct {
    const char *name;
    int64_t t0;             /* the first timestamp: nvprof's are absolute, nsys's session-relative */
    const char *ddl;
    const char *insert[NROWS];
    void (*setup)(void);
    const char *finish;     /* SQL run once the rows are in, or NULL */
} profile_format;

/* p may be NPARAMS: no parameter */
static int takes(int row, int p) { return p < NPARAMS && ins[row].ix[p] > 0; }

static void set_i64(int row, int p, int64_t v)
{
    if (takes(row, p))
        sqlite3_bind_int64(ins[row].st, ins[row].ix[p], v);
}

static void set_text(int row, int p, const char *s)
{
    if (takes(row, p))
        sqlite3_bind_text(ins[row].st, ins[row].ix[p], s, -1, SQLITE_TRANSIENT);
}

static void set_blob(int row, int p, const void *b, int n)
{
    if (takes(row, p))
        sqlite3_bind_blob(ins[row].st, ins[row].ix[p], b, n, SQLITE_STATIC);
}

static void put(int row)
{
    sqlite3_stmt *st = ins[row].st;
    if (!st)
        return;
    if (sqlite3_step(st) != SQLITE_DONE)
        die("insert");
    sqlite3_reset(st);
}

static void prepare_inserts(const profile_format *f)
{
    for (int r = 0; r < NROWS; r++) {
        if (!f->insert[r])
            continue;
        if (sqlite3_prepare_v2(db, f->insert[r], -1, &ins[r].st, NULL) != SQLITE_OK)
            die(f->insert[r]);
        for (int p = 0; p < NPARAMS; p++)
            ins[r].ix[p] = sqlite3_bind_parameter_index(ins[r].st, param_names[p]);
    }
}

static void finalize_inserts(void)
{
    for (int r = 0; r < NROWS; r++)
        sqlite3_finalize(ins[r].st);
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
    set_i64(ROW_STRING, P_ID, id);
    set_text(ROW_STRING, P_VALUE, s);
    put(ROW_STRING);
    if (nstr < MAX_STRINGS) {
        str_cache[nstr] = strdup(s);
        str_ids[nstr++] = id;
    }
    return id;
}

/* A string parameter: the text itself where the row stores it inline, its
 * string-table id where it stores that (the table gets only what is used). */
static void set_string(int row, int p_id, int p_text, const char *s)
{
    if (takes(row, p_id))
        set_i64(row, p_id, string_id(s));
    set_text(row, p_text, s);
}

#define PID 10000
static int64_t tid_of(int bwd) { return bwd ? 1001 : 1000; }

/* nvprof names a thread by a 12-byte objectId: pid, then tid, little-endian */
static void set_thread(int row, int bwd)
{
    static const unsigned char fwd_blob[12] = {0x10, 0x27, 0, 0, 0xe8, 0x03, 0, 0, 0, 0, 0, 0};
    static const unsigned char bwd_blob[12] = {0x10, 0x27, 0, 0, 0xe9, 0x03, 0, 0, 0, 0, 0, 0};
    set_i64(row, P_PID, PID);
    set_i64(row, P_TID, tid_of(bwd));
    set_blob(row, P_TID_BLOB, bwd ? bwd_blob : fwd_blob, 12);
}

static void range_start(int64_t ts, int64_t id, int bwd, const char *text)
{
    set_i64(ROW_RANGE_START, P_TS, ts);
    set_i64(ROW_RANGE_START, P_MARKER, id);
    set_thread(ROW_RANGE_START, bwd);
    set_string(ROW_RANGE_START, P_NAME, P_TEXT, text);
    put(ROW_RANGE_START);
    events++;
}

static void range_end(int64_t start, int64_t ts, int64_t id, int bwd, const char *text)
{
    set_i64(ROW_RANGE_END, P_START, start);
    set_i64(ROW_RANGE_END, P_TS, ts);
    set_i64(ROW_RANGE_END, P_MARKER, id);
    set_thread(ROW_RANGE_END, bwd);
    set_string(ROW_RANGE_END, P_NAME, P_TEXT, text);
    put(ROW_RANGE_END);
}

static void mark(int64_t ts, int64_t id, const char *text)
{
    set_i64(ROW_MARK, P_TS, ts);
    set_i64(ROW_MARK, P_MARKER, id);
    set_thread(ROW_MARK, 0);
    set_string(ROW_MARK, P_NAME, P_TEXT, text);
    put(ROW_MARK);
    events++;
}

static void api(int driver, int cbid, const char *function, int64_t start, int64_t end, int bwd, int64_t corr)
{
    int row = driver ? ROW_DRIVER : ROW_RUNTIME;
    set_i64(row, P_CBID, cbid);
    set_string(row, P_FUNCTION, P_TEXT, function);
    set_i64(row, P_START, start);
    set_i64(row, P_END, end);
    set_thread(row, bwd);
    set_i64(row, P_CORR, corr);
    put(row);
    events++;
}

typedef struct { const char *mangled, *demangled, *short_name; } kernel_spec;
static const kernel_spec kernels[] = {
    {"_ZN2at6native18elementwise_kernelILi128ELi4EZNS0_15gpu_kernel_implIZZZNS0_15add_kernel_cudaERNS_14TensorIteratorEN3c106ScalarEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS4_RKT_EUliE2_EEviT1_",
     "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl<at::native::add_kernel_cuda("
     "at::TensorIterator&, c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::"
     "{lambda(float, float)#1}>(at::TensorIterator&, at::native::add_kernel_cuda(at::TensorIterator&, c10::Scalar)"
     "::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1} const&)::"
     "{lambda(int)#4}>(int, at::native::gpu_kernel_impl<at::native::add_kernel_cuda(at::TensorIterator&, "
     "c10::Scalar)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1}>"
     "(at::TensorIterator&, at::native::add_kernel_cuda(at::TensorIterator&, c10::Scalar)::{lambda()#1}::"
     "operator()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1} const&)::{lambda(int)#4})",
     "elementwise_kernel"},
    {"volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn", "volta_sgemm_128x64_nn"},
    {"_ZN2at6native18elementwise_kernelILi512ELi1EZNS0_15gpu_kernel_implIZNS0_23gpu_kernel_with_scalarsIZZZNS0_15mul_kernel_cudaERNS_14TensorIteratorEENKUlvE_clEvENKUlvE2_clEvEUlffE_EEvS5_RKT_EUlfE0_EEvS5_SB_EUliE_EEviT1_",
     "void at::native::elementwise_kernel<512, 1, at::native::gpu_kernel_impl<at::native::gpu_kernel_with_"
     "scalars<at::native::mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda("
     ")#4}::operator()() const::{lambda(float, float)#1}>(at::TensorIterator&, at::native::mul_kernel_cuda"
     "(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(f"
     "loat, float)#1} const&)::{lambda(float)#2}>(at::TensorIterator&, at::native::gpu_kernel_with_scalars"
     "<at::native::mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#4}::o"
     "perator()() const::{lambda(float, float)#1}>(at::TensorIterator&, at::native::mul_kernel_cuda(at::Te"
     "nsorIterator&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() const::{lambda(float, f"
     "loat)#1} const&)::{lambda(float)#2} const&)::{lambda(int)#1}>(int, at::native::gpu_kernel_impl<at::n"
     "ative::gpu_kernel_with_scalars<at::native::mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::opera"
     "tor()() const::{lambda()#4}::operator()() const::{lambda(float, float)#1}>(at::TensorIterator&, at::"
     "native::mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#4}::operat"
     "or()() const::{lambda(float, float)#1} const&)::{lambda(float)#2}>(at::TensorIterator&, at::native::"
     "gpu_kernel_with_scalars<at::native::mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()()"
     " const::{lambda()#4}::operator()() const::{lambda(float, float)#1}>(at::TensorIterator&, at::native:"
     ":mul_kernel_cuda(at::TensorIterator&)::{lambda()#1}::operator()() const::{lambda()#4}::operator()() "
     "const::{lambda(float, float)#1} const&)::{lambda(float)#2} const&)::{lambda(int)#1})",
     "elementwise_kernel"},
    {"_Z20kernelReduceAllPass2Il9ReduceMinIlEEviT_T0_PS2_S4_",
     "void kernelReduceAllPass2<long, ReduceMin<long> >(int, long, ReduceMin<long>, long*, long*)",
     "kernelReduceAllPass2"},
    {"_Z21indexSelectLargeIndexIfjLi2ELi2ELin2ELb1EEv10TensorInfoIT_T0_ES3_S0_IlS2_EiiS2_S2_l",
     "void indexSelectLargeIndex<float, unsigned int, 2, 2, -2, true>(TensorInfo<float, unsigned int>, "
     "TensorInfo<float, unsigned int>, TensorInfo<long, unsigned int>, int, int, unsigned int, unsigned int, long)",
     "indexSelectLargeIndex"},
    {"volta_sgemm_32x128_tn", "volta_sgemm_32x128_tn", "volta_sgemm_32x128_tn"},
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

/* The GPU rows' common columns: device 0, context 1, the thread's stream. */
static void gpu_row(int row, int64_t start, int64_t end, int bwd, int64_t corr)
{
    set_i64(row, P_START, start);
    set_i64(row, P_END, end);
    set_i64(row, P_STREAM, bwd ? 13 : 7);
    set_i64(row, P_CORR, corr);
    set_i64(row, P_PID, PID);
}

static void launch(int bwd, int kernel)
{
    int64_t corr = next_corr++;
    int64_t s = cpu[bwd] + 1000 + rnd(2000), e = s + 3000 + rnd(4000);
    api(0, 211, "cudaLaunchKernel_v7000", s, e, bwd, corr);
    /* cudaLaunchKernel calls cuLaunchKernel; nvprof records both, each with its own id */
    api(1, 307, "cuLaunchKernel", s + 500, e - 500, bwd, next_corr++);
    int64_t ks = (gpu > e + 2000 ? gpu : e + 2000) + rnd(500);
    int64_t ke = ks + 2000 + rnd(40000);
    const kernel_spec *k = &kernels[kernel];
    gpu_row(ROW_KERNEL, ks, ke, bwd, corr);
    set_string(ROW_KERNEL, P_MANGLED, NPARAMS, k->mangled);
    set_string(ROW_KERNEL, P_DEMANGLED, NPARAMS, k->demangled);
    set_string(ROW_KERNEL, P_SHORT, NPARAMS, k->short_name);
    set_i64(ROW_KERNEL, P_GRID_X, 1 + (int)rnd(1024));
    set_i64(ROW_KERNEL, P_BLOCK_X, 128 << rnd(3));
    put(ROW_KERNEL);
    events++;
    gpu = ke;
    cpu[bwd] = e;
}

static void copy_and_sync(int bwd)
{
    int64_t corr = next_corr++;
    int64_t s = cpu[bwd] + 1000, e = s + 8000 + rnd(8000);
    api(0, 41, "cudaMemcpyAsync_v3020", s, e, bwd, corr);
    int64_t cs = (gpu > s + 3000 ? gpu : s + 3000), ce = cs + 5000 + rnd(20000);
    set_i64(ROW_MEMCPY, P_COPY_KIND, 1 + (int)rnd(2));
    set_i64(ROW_MEMCPY, P_BYTES, 4096 << rnd(8));
    gpu_row(ROW_MEMCPY, cs, ce, 0, corr);
    put(ROW_MEMCPY);
    events++;
    gpu = ce;
    cpu[bwd] = e;

    corr = next_corr++;
    s = cpu[bwd] + 1000, e = s + 4000;
    api(0, 51, "cudaMemsetAsync_v3020", s, e, bwd, corr);
    int64_t ms = (gpu > s + 2000 ? gpu : s + 2000), me = ms + 1500 + rnd(3000);
    set_i64(ROW_MEMSET, P_BYTES, 1024 << rnd(6));
    gpu_row(ROW_MEMSET, ms, me, 0, corr);
    put(ROW_MEMSET);
    events++;
    gpu = me;
    cpu[bwd] = e;

    corr = next_corr++;
    s = cpu[bwd] + 1000;
    e = (gpu > s ? gpu : s) + 2000;
    api(0, 131, "cudaStreamSynchronize_v3020", s, e, bwd, corr);
    gpu_row(ROW_SYNC, s + 800, e - 800, 0, corr);
    put(ROW_SYNC);
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
    int64_t start = cpu[bwd];
    range_start(start, id, bwd, name);
    if (o->child >= 0 && depth < 8)
        op(bwd, ops, o->child, depth + 1);
    if (o->kernel >= 0)
        launch(bwd, o->kernel);
    cpu[bwd] += 1000 + rnd(2000);
    range_end(start, cpu[bwd], id, bwd, name);
}

/* ---- the formats ----------------------------------------------------------- */

static void nvprof_setup(void)
{
    /* in this order, so the bundled sample stays byte for byte what it was */
    long long process = (long long)string_id("python train.py");
    long long device = (long long)string_id("Tesla V100-SXM2-16GB");
    char sql[256];
    snprintf(sql, sizeof sql,
             "INSERT INTO CUPTI_ACTIVITY_KIND_DEVICE VALUES(1, 17179869184, 80, 7, 0, 0, %lld);"
             "INSERT INTO CUPTI_ACTIVITY_KIND_NAME VALUES(1, 1, x'1027000000000000', %lld);",
             device, process);
    exec(sql);
}

static const profile_format nvprof_format = {
    "nvprof", 1600000000000000000ll,
    "CREATE TABLE Version(version INTEGER);"
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
    "INSERT INTO CUPTI_ACTIVITY_KIND_CONTEXT VALUES(1, 1, 0, 1, 7);",
    {
        [ROW_STRING] = "INSERT INTO StringTable(_id_, value) VALUES(:id, :value)",
        /* markers: flags 2 starts a range, 4 ends it (name 0), 1 is a mark */
        [ROW_RANGE_START] = "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId,"
                            " name, domain) VALUES(2, :ts, :marker, 2, :tid_blob, :name, 0)",
        [ROW_RANGE_END] = "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId,"
                          " name, domain) VALUES(4, :ts, :marker, 2, :tid_blob, 0, 0)",
        [ROW_MARK] = "INSERT INTO CUPTI_ACTIVITY_KIND_MARKER(flags, timestamp, id, objectKind, objectId,"
                     " name, domain) VALUES(1, :ts, :marker, 2, :tid_blob, :name, 0)",
        [ROW_RUNTIME] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(cbid, start, end, processId, threadId,"
                        " correlationId, returnValue) VALUES(:cbid, :start, :end, :pid, :tid, :corr, 0)",
        [ROW_DRIVER] = "INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER(cbid, start, end, processId, threadId,"
                       " correlationId, returnValue) VALUES(:cbid, :start, :end, :pid, :tid, :corr, 0)",
        [ROW_KERNEL] = "INSERT INTO CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL(registersPerThread, start, end,"
                       " deviceId, contextId, streamId, gridX, gridY, gridZ, blockX, blockY, blockZ,"
                       " staticSharedMemory, dynamicSharedMemory, correlationId, name)"
                       " VALUES(32, :start, :end, 0, 1, :stream, :grid_x, 1, 1, :block_x, 1, 1, 0, 0, :corr,"
                       " :mangled)",
        /* CUPTI's memory kinds: 2 pinned, 3 device */
        [ROW_MEMCPY] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(copyKind, srcKind, dstKind, flags, bytes,"
                       " start, end, deviceId, contextId, streamId, correlationId, runtimeCorrelationId)"
                       " VALUES(:copy_kind, 2, 3, 0, :bytes, :start, :end, 0, 1, :stream, :corr, 0)",
        [ROW_MEMSET] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(value, bytes, start, end, deviceId, contextId,"
                       " streamId, correlationId, flags, memoryKind)"
                       " VALUES(0, :bytes, :start, :end, 0, 1, :stream, :corr, 0, 3)",
        /* type 3: stream synchronize */
        [ROW_SYNC] = "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(type, start, end, correlationId,"
                     " contextId, streamId, cudaEventId) VALUES(3, :start, :end, :corr, 1, :stream, 0)",
    },
    nvprof_setup,
};

static void nsys_setup(void)
{
    long long main_thread = (long long)string_id("python3");
    long long autograd_thread = (long long)string_id("pt_autograd_0");
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION_MAJOR', '3'),"
             " ('EXPORT_SCHEMA_VERSION_MINOR', '17'), ('EXPORT_SCHEMA_VERSION_MICRO', '1');"
             "INSERT INTO TARGET_INFO_GPU(vmId, id, name, totalMemory, smCount, cuDevice, computeMajor,"
             " computeMinor) VALUES(0, 0, 'Tesla V100-SXM2-16GB', 17179869184, 80, 0, 7, 0);"
             "INSERT INTO PROCESSES VALUES(%d << 24, %d, 'python train.py');"
             "INSERT INTO ThreadNames VALUES(%lld, 0, (%d << 24) | 1000), (%lld, 0, (%d << 24) | 1001);",
             PID, PID, main_thread, PID, autograd_thread, PID);
    exec(sql);
}

/* The columns nsys 2025.1 exports (schema 3.17) that the rows fill, NOT NULL
 * where nsys declares them so. */
static const profile_format nsys_format = {
    "nsys", 1000000000ll,
    "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
    "CREATE TABLE StringIds(id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE TARGET_INFO_GPU(vmId INTEGER NOT NULL, id INTEGER NOT NULL, name TEXT, totalMemory INTEGER,"
    " smCount INTEGER, cuDevice INTEGER, computeMajor INTEGER, computeMinor INTEGER);"
    "CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);"
    "CREATE TABLE ThreadNames(nameId INTEGER NOT NULL, priority INTEGER, globalTid INTEGER);"
    "CREATE TABLE NVTX_EVENTS(start INTEGER NOT NULL, end INTEGER, eventType INTEGER NOT NULL,"
    " rangeId INTEGER, category INTEGER, color INTEGER, text TEXT, globalTid INTEGER, endGlobalTid INTEGER,"
    " textId INTEGER, domainId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,"
    " returnValue INTEGER NOT NULL, callchainId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " eventClass INTEGER NOT NULL, globalTid INTEGER, correlationId INTEGER, nameId INTEGER NOT NULL,"
    " returnValue INTEGER NOT NULL, callchainId INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,"
    " correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName INTEGER NOT NULL,"
    " mangledName INTEGER, registersPerThread INTEGER NOT NULL, gridX INTEGER NOT NULL,"
    " gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL, blockX INTEGER NOT NULL, blockY INTEGER NOT NULL,"
    " blockZ INTEGER NOT NULL, staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,"
    " correlationId INTEGER, globalPid INTEGER, bytes INTEGER NOT NULL, copyKind INTEGER NOT NULL,"
    " srcKind INTEGER, dstKind INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,"
    " correlationId INTEGER, globalPid INTEGER, value INTEGER NOT NULL, bytes INTEGER NOT NULL,"
    " memKind INTEGER);"
    "CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start INTEGER NOT NULL, end INTEGER NOT NULL,"
    " deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL,"
    " correlationId INTEGER, globalPid INTEGER, syncType INTEGER NOT NULL, eventId INTEGER NOT NULL);",
    {
        [ROW_STRING] = "INSERT INTO StringIds(id, value) VALUES(:id, :value)",
        /* one row a range, at its end; eventType 59 push/pop, 34 mark; text inline, as
         * nvtxRangePushA's is */
        [ROW_RANGE_END] = "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid)"
                          " VALUES(:start, :ts, 59, :text, (:pid << 24) | :tid)",
        [ROW_MARK] = "INSERT INTO NVTX_EVENTS(start, end, eventType, text, globalTid)"
                     " VALUES(:ts, NULL, 34, :text, (:pid << 24) | :tid)",
        [ROW_RUNTIME] = "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME(start, end, eventClass, globalTid,"
                        " correlationId, nameId, returnValue) VALUES(:start, :end, 1, (:pid << 24) | :tid,"
                        " :corr, :function, 0)",
        [ROW_DRIVER] = "INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER(start, end, eventClass, globalTid,"
                       " correlationId, nameId, returnValue) VALUES(:start, :end, 2, (:pid << 24) | :tid,"
                       " :corr, :function, 0)",
        [ROW_KERNEL] = "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL(start, end, deviceId, contextId, streamId,"
                       " correlationId, globalPid, demangledName, shortName, mangledName, registersPerThread,"
                       " gridX, gridY, gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory)"
                       " VALUES(:start, :end, 0, 1, :stream, :corr, :pid << 24, :demangled, :short, :mangled,"
                       " 32, :grid_x, 1, 1, :block_x, 1, 1, 0, 0)",
        /* nsys's memory kinds count from 0: 1 pinned, 2 device */
        [ROW_MEMCPY] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY(start, end, deviceId, contextId, streamId,"
                       " correlationId, globalPid, bytes, copyKind, srcKind, dstKind)"
                       " VALUES(:start, :end, 0, 1, :stream, :corr, :pid << 24, :bytes, :copy_kind, 1, 2)",
        [ROW_MEMSET] = "INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET(start, end, deviceId, contextId, streamId,"
                       " correlationId, globalPid, value, bytes, memKind)"
                       " VALUES(:start, :end, 0, 1, :stream, :corr, :pid << 24, 0, :bytes, 2)",
        [ROW_SYNC] = "INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION(start, end, deviceId, contextId,"
                     " streamId, correlationId, globalPid, syncType, eventId)"
                     " VALUES(:start, :end, 0, 1, :stream, :corr, :pid << 24, 3, 0)",
    },
    nsys_setup,
    /* Nsight Systems writes NVTX_EVENTS in start order, nested ranges too (the
     * three shared exports that have NVTX ranges, 2,516 of them enclosing
     * others: no start before the one of the row above), where the rows here
     * are inserted as each range ends */
    "CREATE TEMP TABLE nvtx_by_start AS SELECT * FROM NVTX_EVENTS ORDER BY start, rowid;"
    "DELETE FROM NVTX_EVENTS;"
    "INSERT INTO NVTX_EVENTS SELECT * FROM nvtx_by_start ORDER BY rowid;"
    "DROP TABLE nvtx_by_start;",
};

static const profile_format *const formats[] = {&nvprof_format, &nsys_format};

int main(int argc, char **argv)
{
    int64_t target = 2000;
    uint64_t seed = 1;
    const char *out = NULL;
    const profile_format *fmt = formats[0];
    int c;
    while ((c = getopt(argc, argv, "n:s:f:o:")) != -1) {
        switch (c) {
        case 'n': target = strtoll(optarg, NULL, 10); break;
        case 's': seed = strtoull(optarg, NULL, 10); break;
        case 'o': out = optarg; break;
        case 'f':
            fmt = NULL;
            for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
                if (!strcmp(optarg, formats[i]->name))
                    fmt = formats[i];
            if (!fmt) {
                fputs(USAGE, stderr);
                return 2;
            }
            break;
        default: fputs(USAGE, stderr); return 2;
        }
    }
    if (!out || target < 1) {
        fputs(USAGE, stderr);
        return 2;
    }
    rng_state = seed * 0x9e3779b97f4a7c15ull + 1;
    unlink(out);
    if (sqlite3_open(out, &db) != SQLITE_OK)
        die(out);
    exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN");
    exec(fmt->ddl);
    prepare_inserts(fmt);
    fmt->setup();

    const int64_t t0 = fmt->t0;
    cpu[0] = cpu[1] = gpu = t0;
    mark(t0, next_marker++, "__start_profile");
    for (int64_t stepno = 0; events < target; stepno++) {
        int64_t step_id = next_marker++, step_start = ++cpu[0];
        range_start(step_start, step_id, 0, "train_step");
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
        range_end(step_start, cpu[0], step_id, 0, "train_step");
    }
    if (fmt->finish)
        exec(fmt->finish);
    exec("COMMIT");
    finalize_inserts();
    for (int i = 0; i < nstr; i++)
        free(str_cache[i]);
    if (sqlite3_close(db) != SQLITE_OK)
        die("close");
    return 0;
}
