/*
 * agent.c - the recorder injected into the application (libtracekit-agent.so).
 *
 * Doors: the CUDA driver calls InitializeInjection() inside cuInit when
 * CUDA_INJECTION64_PATH names this library; the NVTX loader calls
 * InitializeInjectionNvtx2() on the first NVTX call of each NVTX instance when
 * NVTX_INJECTION64_PATH names it.  Both run one idempotent init; the NVTX door
 * then forwards to the InitializeInjectionNvtx2 of the libcupti already mapped,
 * so CUPTI turns NVTX calls into MARKER records (one libcupti per process).
 *
 * Threads: CUPTI's buffer callbacks only pop from a preallocated pool and push
 * completed buffers on a queue; a writer thread normalises them (encode.c),
 * writes chunks and calls cuptiActivityFlushAll(0) every flush period.  At exit
 * a forced flush, the last records, the thread names, STATS and END are written.
 *
 * Configuration comes from the environment the launcher sets (docs/record.md):
 * TRACE_RECORD_DIR, _SESSION, _KINDS, _BUFFER_SIZE, _FLUSH_MS, _ONLY_PID,
 * _T0, _DELAY_NS, _DURATION_NS, _CAPTURE, _BACKTRACE.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "record/agent/agent.h"
#include "record/loaded_modules.h"

#include <generated_nvtx_meta.h>

#define EXPORT __attribute__((visibility("default")))
#define RECORDER_VERSION 1u
#define MAX_FRAMES 64

/* ---------------------------------------------------------------- state */

typedef struct pool_buf {
    struct pool_buf *next;
    pid_t owner;
    size_t size;
    uint64_t pad[5];              /* header is 64 bytes: CUPTI's buffer stays 64-aligned */
} pool_buf;
_Static_assert(sizeof(pool_buf) == 64, "pool header");

typedef struct { uint64_t start, end; } window;

enum { CAP_NONE, CAP_TIME, CAP_PROFILER, CAP_NVTX };

/* A set-up failure, printed once set-up is over (one line when CUPTI could
 * not start at all). */
typedef struct {
    char line[400];               /* what: call failed: CUPTI's text */
    const char *otherwise;        /* what follows from it */
} failure;
#define MAX_FAILURES 64

static struct {
    pthread_mutex_t init_mu;
    pthread_cond_t init_cv;
    int inited, init_done, active, disabled;
    pid_t init_tid;               /* the thread running the set-up */
    pid_t pid;
    /* options */
    size_t buf_size, pool_cap;
    unsigned flush_ms;
    int backtrace;
    int capture, capture_lost;
    char capture_name[256];
    wchar_t capture_wname[256];   /* the same, decoded from UTF-8; empty if it is not UTF-8 */
    /* handles of NVTX registered strings equal to capture_name (nvtxDomainRegisterString) */
    nvtxStringHandle_t capture_handles[16];
    int n_capture_handles;
    char kinds[256];
    /* buffer pool and the queue of completed buffers */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pool_buf *free_list;
    size_t allocated;
    pool_buf *queue_head, *queue_tail;
    int stop;
    int signal_stop, signal_done;  /* a stop signal came / the file is finished */
    pthread_t writer;
    int writer_running;
    /* counters updated from CUPTI callbacks (under mu) */
    uint64_t dropped, buffers, pool_empty, inherited;
    /* capture windows (under mu) */
    window *windows;
    size_t nwindows, cap_windows;
    int captures_open;            /* NVTX capture ranges open now, all threads */
    uint64_t *capture_ids;        /* open nvtxRangeStart capture ranges */
    size_t n_capture_ids, cap_capture_ids;
    uint64_t capture_no_id;       /* capture starts whose range id CUPTI did not give */
    /* stacks (under mu): new stacks and references not yet written */
    unsigned char *new_stacks;
    size_t n_new_stacks, cap_new_stacks;
    tr_raw_stackref *refs;
    size_t nrefs, cap_refs;
    struct { uint64_t hash; uint32_t id; } *stack_tab;
    size_t n_stacks, cap_stack_tab;
    /* writer side */
    rec_encoder enc;
    CUpti_SubscriberHandle sub;
    int subscribed;
    int sub_inherited;            /* a forked child: the parent's subscriber is still ours */
    uint64_t t0_mono;
    /* what CUPTI set-up gave: STATUS entries (under mu; written from status_written on) */
    unsigned char *status;
    size_t n_status, cap_status, status_written;
    failure *failures;
    size_t n_failures;
    int clock_ok;                 /* the timestamp callback is registered */
    int64_t clock_offset;         /* CUPTI's clock minus CLOCK_MONOTONIC when it is not */
    int kinds_active;             /* CUPTI activity kinds enabled */
    int buffers_ok;               /* our buffer callbacks are registered */
    int nvtx_by_cupti;            /* CUPTI records NVTX (MARKER kind enabled) */
    int nvtx_own;                 /* NVTX instances handled by nvtx.c */
    int forked;                   /* this process is a fork of a recorded one */
    /* markers of nvtx.c's handlers, for the writer (under mu) */
    CUpti_ActivityMarker2 *nvtx_q;
    size_t n_nvtx_q, cap_nvtx_q;
    struct nvtx_name { uint32_t tid; char *name; } *nvtx_names;
    size_t n_nvtx_names, cap_nvtx_names;
    /* buffers CUPTI holds, and when it last called us (under mu): a buffer that
     * a forced flush does not give back went to another client's callbacks */
    size_t outstanding;
    uint64_t last_buffer_mono;
    uint64_t returned;            /* buffers CUPTI gave back, whoever's */
    uint64_t silent_flush_mono;   /* first periodic flush that gave none of ours back */
    int taken_over;
    /* records CUPTI dropped, per (context id, stream) it reported them for; the
     * last slot also takes what does not fit (under mu) */
    struct { uint32_t context, stream; uint64_t count; } drops[64];
    size_t n_drops;
} g = {.init_mu = PTHREAD_MUTEX_INITIALIZER, .init_cv = PTHREAD_COND_INITIALIZER,
       .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* Signals whose default action ends a program without atexit; see
 * install_stop_handlers.  The first are sent from outside (kill, a terminal, a
 * batch system's warning before its time limit, a reader gone from a pipe); the
 * writer thread blocks them so that they reach a thread that can wait for it.
 * The crash signals hit the thread that faulted, so they cannot be blocked. */
static const int stop_signals[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2,
                                   SIGALRM, SIGPIPE, SIGXCPU, SIGXFSZ};
static const int crash_signals[] = {SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL};
#define STOP_WAIT_NS 5000000000ull
#define WRITER_SLICE_NS 50000000ull   /* how soon the writer sees a stop signal */
#define START_SLACK_NS 50000ull

static __thread pid_t tls_tid;
/* The process's pid, kept up to date by atfork_child: getpid() is a system
 * call, too dear for every callback and buffer. */
static pid_t cur_pid;

static pid_t self_pid(void)
{
    pid_t p = __atomic_load_n(&cur_pid, __ATOMIC_RELAXED);
    return p ? p : getpid();
}
static __thread int tls_in_runtime;
/* Push/pop ranges nest per thread and per NVTX domain (each domain keeps its
 * own stack, NULL the default one): the depth of each, and the depth of the
 * capture range in it.  Past MAX_DOMAINS domains a thread's last slot is shared. */
#define MAX_DOMAINS 8
typedef struct {
    const void *domain;
    int depth, capture_depth;
} nest;
static __thread nest tls_nest[MAX_DOMAINS];
static __thread int tls_nnest;

static nest *nest_of(const void *domain)
{
    for (int i = 0; i < tls_nnest; i++)
        if (tls_nest[i].domain == domain)
            return &tls_nest[i];
    if (tls_nnest < MAX_DOMAINS) {
        tls_nest[tls_nnest].domain = domain;
        return &tls_nest[tls_nnest++];
    }
    return &tls_nest[MAX_DOMAINS - 1];
}

static pid_t my_tid(void)
{
    if (!tls_tid)
        tls_tid = (pid_t)syscall(SYS_gettid);
    return tls_tid;
}

static uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t real_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t CUPTIAPI timestamp_cb(void)
{
    return mono_ns();
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 0);
    return errno || *end ? dflt : (uint64_t)x;
}

/* Kinds left out unless --kinds names them: overhead records, and stream and
 * event queries, which a polling loop makes by the million. */
static const char *const opt_in_kinds[] = {"overhead", "query"};

static int kind_on(const char *k)
{
    if (!g.kinds[0]) {
        for (size_t i = 0; i < sizeof opt_in_kinds / sizeof opt_in_kinds[0]; i++)
            if (!strcmp(k, opt_in_kinds[i]))
                return 0;
        return 1;
    }
    size_t n = strlen(k);
    for (const char *p = g.kinds; *p;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len == n && memcmp(p, k, n) == 0)
            return 1;
        p += len + (c != NULL);
    }
    return 0;
}

/* ---------------------------------------------------------------- status */

/* A STATUS entry: what is recorded, what failed and why, what another client
 * took.  ts is CLOCK_MONOTONIC here, moved to the file's clock when written. */
static void status_add_at(uint64_t ts, unsigned state, uint32_t result, const char *what,
                          const char *detail)
{
    size_t lw = strlen(what), ld = detail ? strlen(detail) : 0;
    if (lw + 1 + ld > 2000)
        ld = 2000 - lw - 1;
    size_t text = lw + 1 + ld, need = tr_raw_pad8(sizeof(tr_raw_status) + text);
    pthread_mutex_lock(&g.mu);
    if (g.n_status + need > g.cap_status) {
        size_t nc = g.cap_status ? g.cap_status * 2 : 4096;
        while (nc < g.n_status + need)
            nc *= 2;
        unsigned char *b = realloc(g.status, nc);
        if (!b) {
            pthread_mutex_unlock(&g.mu);
            return;
        }
        g.status = b;
        g.cap_status = nc;
    }
    unsigned char *p = g.status + g.n_status;
    memset(p, 0, need);
    tr_raw_status st = {ts, result, (uint16_t)state, (uint16_t)text};
    memcpy(p, &st, sizeof st);
    memcpy(p + sizeof st, what, lw);
    if (ld)
        memcpy(p + sizeof st + lw + 1, detail, ld);
    g.n_status += need;
    pthread_mutex_unlock(&g.mu);
}

static void status_add(unsigned state, uint32_t result, const char *what, const char *detail)
{
    status_add_at(mono_ns(), state, result, what, detail);
}

/* Why CUPTI may have failed, when the machine is the cause: with no driver
 * libcupti answers CUPTI_ERROR_UNKNOWN to everything.  Only what can be
 * learnt without initialising CUDA: the driver library, its version, the
 * device nodes. */
static const char *driver_hint(void)
{
    static char hint[300];
    static int done;
    if (done)
        return hint;
    done = 1;
    void *h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_LAZY);
    if (!h) {
        const char *e = dlerror();
        snprintf(hint, sizeof hint, " (the CUDA driver cannot be loaded: %s)",
                 e ? e : "libcuda.so.1 not found");
        return hint;
    }
    typedef int (*version_fn)(int *);
    version_fn ver = (version_fn)dlsym(h, "cuDriverGetVersion");
    int v = 0;
    if (ver && ver(&v) == 0 && v > 0 && v < CUPTI_API_VERSION / 10)
        snprintf(hint, sizeof hint, " (the CUDA driver supports CUDA %d.%d, older than this CUPTI's %d.%d)",
                 v / 1000, v % 1000 / 10, CUPTI_API_VERSION / 10000, CUPTI_API_VERSION / 100 % 100);
    else if (access("/dev/nvidiactl", F_OK) != 0)
        snprintf(hint, sizeof hint, " (no NVIDIA GPU: /dev/nvidiactl does not exist)");
    return hint;
}

/* Checks a CUPTI call of the set-up: a failure becomes a STATUS entry naming
 * the call and CUPTI's text, and a line on stderr once set-up is over. */
static int cupti_ok_or(CUptiResult r, const char *call, const char *what, const char *otherwise)
{
    if (r == CUPTI_SUCCESS)
        return 1;
    const char *text = NULL;
    if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
        text = "unknown CUPTI error";
    char line[400];
    snprintf(line, sizeof line, "%.80s: %.80s failed: %.60s%.160s", what, call, text,
             r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED ? driver_hint() : "");
    if (!g.failures)
        g.failures = calloc(MAX_FAILURES, sizeof *g.failures);
    for (size_t i = 0; g.failures && i < g.n_failures && i < MAX_FAILURES; i++)
        if (!strcmp(g.failures[i].line, line))
            return 0;   /* the same call for another cbid: said once */
    char detail[512];
    snprintf(detail, sizeof detail, "%s; %s", line + strlen(what) + 2, otherwise);
    status_add(TR_RAW_ST_FAILED, (uint32_t)r, what, detail);
    if (g.failures && g.n_failures < MAX_FAILURES) {
        memcpy(g.failures[g.n_failures].line, line, sizeof line);
        g.failures[g.n_failures].otherwise = otherwise;
    }
    g.n_failures++;
    return 0;
}

static int cupti_ok(CUptiResult r, const char *call, const char *what)
{
    return cupti_ok_or(r, call, what, "not recorded");
}

/* CUPTI calls made while recording: the first failure of each is said once. */
enum { RC_FLUSH, RC_FLUSH_FORCED, RC_DROPPED, RC_VERSION, RC_TIMESTAMP, RC_CONTEXT_ID, RC_COUNT_ };
static const struct {
    const char *call, *otherwise;
} run_calls[RC_COUNT_] = {
    {"cuptiActivityFlushAll(0)", "records come back only when buffers fill"},
    {"cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)",
     "records in buffers CUPTI still held are lost"},
    {"cuptiActivityGetNumDroppedRecords", "dropped records are not counted"},
    {"cuptiGetVersion", "the CUPTI version is not recorded"},
    {"cuptiGetTimestamp", "CUPTI's clock is not anchored: timestamps are taken as CLOCK_REALTIME"},
    {"cuptiGetContextId", "dropped records are not told apart by context"},
};
static int run_reported[RC_COUNT_];

static CUptiResult run_check(CUptiResult r, int which)
{
    if (r == CUPTI_SUCCESS || __atomic_exchange_n(&run_reported[which], 1, __ATOMIC_RELAXED))
        return r;
    const char *text = NULL;
    if (cuptiGetResultString(r, &text) != CUPTI_SUCCESS || !text)
        text = "unknown CUPTI error";
    char detail[400];
    snprintf(detail, sizeof detail, "%s failed: %s; %s", run_calls[which].call, text,
             run_calls[which].otherwise);
    status_add(TR_RAW_ST_FAILED, (uint32_t)r, "recording", detail);
    fprintf(stderr, "trace-record: %s\n", detail);
    return r;
}

/* After set-up: each failure on a line of its own, or one line when nothing
 * could be enabled at all. */
static void report_failures(void)
{
    if (!g.n_failures || !g.failures)
        return;
    if (!g.kinds_active) {
        /* the first activity kind refused says why best; else the last call */
        size_t n = g.n_failures < MAX_FAILURES ? g.n_failures : MAX_FAILURES, last = n - 1;
        for (size_t i = n; i-- > 0;)
            if (!strncmp(g.failures[i].line, "kind ", 5))
                last = i;
        fprintf(stderr, "trace-record: CUPTI could not start: %s (%zu call(s) failed, listed in the raw "
                "file)%s\n", g.failures[last].line, g.n_failures,
                kind_on("nvtx") ? "; NVTX is still recorded, by the recorder itself" : "");
    } else {
        size_t n = g.n_failures < MAX_FAILURES ? g.n_failures : MAX_FAILURES;
        for (size_t i = 0; i < n; i++)
            fprintf(stderr, "trace-record: %s; %s\n", g.failures[i].line, g.failures[i].otherwise);
    }
    free(g.failures);
    g.failures = NULL;
    g.n_failures = 0;
}

/* ---------------------------------------------------------------- capture range */

static void window_open_locked(uint64_t ts)
{
    if (g.nwindows && g.windows[g.nwindows - 1].end == UINT64_MAX)
        return;
    if (g.nwindows == g.cap_windows) {
        size_t nc = g.cap_windows ? g.cap_windows * 2 : 8;
        window *w = realloc(g.windows, nc * sizeof *w);
        if (!w)
            return;
        g.windows = w;
        g.cap_windows = nc;
    }
    g.windows[g.nwindows++] = (window){ts, UINT64_MAX};
}

static void window_close_locked(uint64_t ts)
{
    if (g.nwindows && g.windows[g.nwindows - 1].end == UINT64_MAX)
        g.windows[g.nwindows - 1].end = ts;
}

static void window_open(uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    window_open_locked(ts);
    pthread_mutex_unlock(&g.mu);
}

static void window_close(uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    window_close_locked(ts);
    pthread_mutex_unlock(&g.mu);
}

/* Capture ranges of several threads may overlap: the window stays open while
 * any of them is. */
static void capture_enter(uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    if (g.captures_open++ == 0)
        window_open_locked(ts);
    pthread_mutex_unlock(&g.mu);
}

static void capture_leave(uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    if (g.captures_open > 0 && --g.captures_open == 0)
        window_close_locked(ts);
    pthread_mutex_unlock(&g.mu);
}

static void capture_start_id(uint64_t id, uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    if (g.n_capture_ids == g.cap_capture_ids) {
        size_t nc = g.cap_capture_ids ? g.cap_capture_ids * 2 : 8;
        uint64_t *a = realloc(g.capture_ids, nc * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&g.mu);
            return;
        }
        g.capture_ids = a;
        g.cap_capture_ids = nc;
    }
    g.capture_ids[g.n_capture_ids++] = id;
    if (g.captures_open++ == 0)
        window_open_locked(ts);
    pthread_mutex_unlock(&g.mu);
}

static void capture_end_id(uint64_t id, uint64_t ts)
{
    pthread_mutex_lock(&g.mu);
    for (size_t i = 0; i < g.n_capture_ids; i++)
        if (g.capture_ids[i] == id) {
            g.capture_ids[i] = g.capture_ids[--g.n_capture_ids];
            if (g.captures_open > 0 && --g.captures_open == 0)
                window_close_locked(ts);
            break;
        }
    pthread_mutex_unlock(&g.mu);
}

/* Called by the encoder on the writer thread. */
static int in_capture(uint64_t ts)
{
    int yes = 0;
    pthread_mutex_lock(&g.mu);
    for (size_t i = g.nwindows; i-- > 0;)
        if (ts >= g.windows[i].start && ts <= g.windows[i].end) {
            yes = 1;
            break;
        }
    pthread_mutex_unlock(&g.mu);
    return yes;
}

/* ---------------------------------------------------------------- stacks */

static void record_stack(uint32_t corr)
{
    void *pcs[MAX_FRAMES];
    int n = backtrace(pcs, MAX_FRAMES);
    if (n <= 0)
        return;
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++)
        h = (h ^ (uint64_t)(uintptr_t)pcs[i]) * 1099511628211ull;
    h |= 1;
    uint64_t ts = mono_ns();
    pthread_mutex_lock(&g.mu);
    if ((g.n_stacks + 1) * 2 > g.cap_stack_tab) {
        size_t nc = g.cap_stack_tab ? g.cap_stack_tab * 2 : 1024;
        void *t = calloc(nc, sizeof *g.stack_tab);
        if (!t)
            goto out;
        __typeof__(g.stack_tab) nt = t;
        for (size_t i = 0; i < g.cap_stack_tab; i++) {
            if (!g.stack_tab[i].hash)
                continue;
            size_t j = g.stack_tab[i].hash & (nc - 1);
            while (nt[j].hash)
                j = (j + 1) & (nc - 1);
            nt[j] = g.stack_tab[i];
        }
        free(g.stack_tab);
        g.stack_tab = nt;
        g.cap_stack_tab = nc;
    }
    size_t j = h & (g.cap_stack_tab - 1);
    while (g.stack_tab[j].hash && g.stack_tab[j].hash != h)
        j = (j + 1) & (g.cap_stack_tab - 1);
    uint32_t id = g.stack_tab[j].id;
    if (!g.stack_tab[j].hash) {
        size_t need = g.n_new_stacks + 8 + 8 * (size_t)n;
        if (need > g.cap_new_stacks) {
            size_t nc = g.cap_new_stacks ? g.cap_new_stacks * 2 : 65536;
            while (nc < need)
                nc *= 2;
            unsigned char *b = realloc(g.new_stacks, nc);
            if (!b)
                goto out;
            g.new_stacks = b;
            g.cap_new_stacks = nc;
        }
        id = (uint32_t)++g.n_stacks;
        g.stack_tab[j].hash = h;
        g.stack_tab[j].id = id;
        uint32_t hdr[2] = {id, (uint32_t)n};
        memcpy(g.new_stacks + g.n_new_stacks, hdr, 8);
        for (int i = 0; i < n; i++) {
            uint64_t pc = (uint64_t)(uintptr_t)pcs[i];
            memcpy(g.new_stacks + g.n_new_stacks + 8 + 8 * (size_t)i, &pc, 8);
        }
        g.n_new_stacks = need;
    }
    if (g.nrefs == g.cap_refs) {
        size_t nc = g.cap_refs ? g.cap_refs * 2 : 4096;
        tr_raw_stackref *r = realloc(g.refs, nc * sizeof *r);
        if (!r)
            goto out;
        g.refs = r;
        g.cap_refs = nc;
    }
    g.refs[g.nrefs++] = (tr_raw_stackref){ts, corr, id, (uint32_t)my_tid(), 0};
out:
    pthread_mutex_unlock(&g.mu);
}

static int is_launch(CUpti_CallbackDomain dom, CUpti_CallbackId id)
{
    if (dom == CUPTI_CB_DOMAIN_RUNTIME_API)
        switch (id) {
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
        case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000:
        case CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000: return 1;
        default: return 0;
        }
    if (dom == CUPTI_CB_DOMAIN_DRIVER_API)
        switch (id) {
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
        case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz:
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch:
        case CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz: return 1;
        default: return 0;
        }
    return 0;
}

/* ---------------------------------------------------------------- callback API */

/* The capture name as wide characters, for the W calls and Unicode messages:
 * decoded from UTF-8 once; left empty (never matching) if it is not UTF-8. */
static void decode_capture_wname(void)
{
    const unsigned char *p = (const unsigned char *)g.capture_name;
    size_t n = 0;
    g.capture_wname[0] = 0;
    while (*p) {
        uint32_t c;
        int more;
        if (*p < 0x80)
            c = *p, more = 0;
        else if ((*p & 0xe0) == 0xc0)
            c = *p & 0x1fu, more = 1;
        else if ((*p & 0xf0) == 0xe0)
            c = *p & 0x0fu, more = 2;
        else if ((*p & 0xf8) == 0xf0)
            c = *p & 0x07u, more = 3;
        else
            return;
        p++;
        for (; more; more--, p++) {
            if ((*p & 0xc0) != 0x80)
                return;
            c = c << 6 | (*p & 0x3fu);
        }
        if (n + 1 >= sizeof g.capture_wname / sizeof g.capture_wname[0])
            return;
        g.capture_wname[n++] = (wchar_t)c;
    }
    g.capture_wname[n] = 0;
}

static int is_capture_ascii(const char *msg)
{
    return msg && strcmp(msg, g.capture_name) == 0;
}

static int is_capture_wname(const wchar_t *msg)
{
    return msg && g.capture_wname[0] && wcscmp(msg, g.capture_wname) == 0;
}

static int is_capture_handle(nvtxStringHandle_t h)
{
    int n = __atomic_load_n(&g.n_capture_handles, __ATOMIC_ACQUIRE);
    for (int i = 0; i < n; i++)
        if (g.capture_handles[i] == h)
            return 1;
    return 0;
}

/* A registered string equal to the capture name: its handle names the range
 * from then on.  Registration is rare, so a lock is fine. */
static void note_registered(const char *ascii, const wchar_t *wide, const void *ret)
{
    if (!ret || !(is_capture_ascii(ascii) || is_capture_wname(wide)))
        return;
    nvtxStringHandle_t h = *(const nvtxStringHandle_t *)ret;
    pthread_mutex_lock(&g.mu);
    if (!is_capture_handle(h) && g.n_capture_handles < (int)(sizeof g.capture_handles / sizeof g.capture_handles[0])) {
        g.capture_handles[g.n_capture_handles] = h;
        __atomic_store_n(&g.n_capture_handles, g.n_capture_handles + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g.mu);
}

/* Whether an Ex call's message, in any of its three forms, is the capture name. */
static int is_capture_attr(const nvtxEventAttributes_t *at)
{
    if (!at)
        return 0;
    switch (at->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return is_capture_ascii(at->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return is_capture_wname(at->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return is_capture_handle(at->message.registered);
    default: return 0;
    }
}

/* Push/pop ranges nest per thread, so a thread's depth finds the pop that ends
 * the capture range.  Start/end ranges may end on another thread: their ids
 * (the return value of the start call) are kept until their end. */
static void on_nvtx(CUpti_CallbackId id, const CUpti_NvtxData *nd)
{
    const void *fp = nd->functionParams;
    int match = 0;
    const void *domain = NULL;
    nest *n;
    if (!fp && id != CUPTI_CBID_NVTX_nvtxRangePop && id != CUPTI_CBID_NVTX_nvtxDomainRangePop)
        return;
    switch (id) {
    case CUPTI_CBID_NVTX_nvtxRangePushA:
        match = is_capture_ascii(((const nvtxRangePushA_params *)fp)->message);
        goto push;
    case CUPTI_CBID_NVTX_nvtxRangePushW:
        match = is_capture_wname(((const nvtxRangePushW_params *)fp)->message);
        goto push;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
        match = is_capture_attr(((const nvtxRangePushEx_params *)fp)->eventAttrib);
        goto push;
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
        match = is_capture_attr(((const nvtxDomainRangePushEx_params *)fp)->core.eventAttrib);
        domain = ((const nvtxDomainRangePushEx_params *)fp)->domain;
    push:
        /* every push is seen, whatever its form, so that pops stay paired */
        n = nest_of(domain);
        n->depth++;
        if (!n->capture_depth && match) {
            /* CUPTI may take the START marker's time before this callback */
            n->capture_depth = n->depth;
            capture_enter(mono_ns() - START_SLACK_NS);
        }
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        domain = fp ? ((const nvtxDomainRangePop_params *)fp)->domain : NULL;
        /* fall through */
    case CUPTI_CBID_NVTX_nvtxRangePop:
        n = nest_of(domain);
        if (n->depth <= 0)
            return;
        if (n->capture_depth == n->depth) {
            n->capture_depth = 0;
            capture_leave(mono_ns() + 1000);   /* the END marker is taken just after */
        }
        n->depth--;
        return;
    case CUPTI_CBID_NVTX_nvtxRangeStartA:
        match = is_capture_ascii(((const nvtxRangeStartA_params *)fp)->message);
        goto start;
    case CUPTI_CBID_NVTX_nvtxRangeStartW:
        match = is_capture_wname(((const nvtxRangeStartW_params *)fp)->message);
        goto start;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
        match = is_capture_attr(((const nvtxRangeStartEx_params *)fp)->eventAttrib);
        goto start;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
        match = is_capture_attr(((const nvtxDomainRangeStartEx_params *)fp)->core.eventAttrib);
    start:
        if (match) {
            /* the range id is the call's result, so CUPTI may have taken the START
             * marker's time before this callback: open the window a little earlier */
            if (nd->functionReturnValue)
                capture_start_id(*(const nvtxRangeId_t *)nd->functionReturnValue,
                                 mono_ns() - START_SLACK_NS);
            else
                __atomic_add_fetch(&g.capture_no_id, 1, __ATOMIC_RELAXED);
        }
        return;
    case CUPTI_CBID_NVTX_nvtxRangeEnd:
        capture_end_id(((const nvtxRangeEnd_params *)fp)->id, mono_ns() + 1000);
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRangeEnd:
        capture_end_id(((const nvtxDomainRangeEnd_params *)fp)->core.id, mono_ns() + 1000);
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringA:
        note_registered(((const nvtxDomainRegisterStringA_params *)fp)->string, NULL,
                        nd->functionReturnValue);
        return;
    case CUPTI_CBID_NVTX_nvtxDomainRegisterStringW:
        /* CUPTI's header declares this string char *; NVTX passes wchar_t * */
        note_registered(NULL, (const wchar_t *)(const void *)((const nvtxDomainRegisterStringW_params *)fp)->string,
                        nd->functionReturnValue);
        return;
    default:
        return;
    }
}

static void CUPTIAPI on_callback(void *user, CUpti_CallbackDomain dom, CUpti_CallbackId id,
                                 const void *data)
{
    (void)user;
    if (!g.active || g.pid != self_pid())
        return;
    if (dom == CUPTI_CB_DOMAIN_NVTX) {
        on_nvtx(id, data);
        return;
    }
    if (dom != CUPTI_CB_DOMAIN_RUNTIME_API && dom != CUPTI_CB_DOMAIN_DRIVER_API)
        return;
    const CUpti_CallbackData *cd = data;
    if (g.capture == CAP_PROFILER) {
        int start = (dom == CUPTI_CB_DOMAIN_RUNTIME_API
                     && id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000)
                    || (dom == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
        int stop = (dom == CUPTI_CB_DOMAIN_RUNTIME_API
                    && id == CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000)
                   || (dom == CUPTI_CB_DOMAIN_DRIVER_API && id == CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
        if (start && cd->callbackSite == CUPTI_API_ENTER)
            window_open(mono_ns());
        if (stop && cd->callbackSite == CUPTI_API_EXIT)
            window_close(mono_ns());
    }
    if (g.backtrace && is_launch(dom, id)) {
        if (dom == CUPTI_CB_DOMAIN_RUNTIME_API) {
            if (cd->callbackSite == CUPTI_API_ENTER) {
                tls_in_runtime++;
                record_stack(cd->correlationId);
            } else if (tls_in_runtime > 0) {
                tls_in_runtime--;
            }
        } else if (cd->callbackSite == CUPTI_API_ENTER && !tls_in_runtime) {
            record_stack(cd->correlationId);
        }
    }
}

/* ---------------------------------------------------------------- own NVTX */

static void init_once(int wait);

void rec_nvtx_emit(uint32_t flags, uint64_t id, char *name, const char *domain)
{
    /* a child forked without exec keeps the NVTX handlers: NVTX needs no CUDA,
     * so its first NVTX call starts a file of its own */
    if (!g.active && __atomic_load_n(&g.forked, __ATOMIC_RELAXED) && !g.disabled)
        init_once(0);
    if (!g.active || g.pid != self_pid()) {
        free(name);
        return;
    }
    CUpti_ActivityMarker2 m;
    memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MARKER;
    m.flags = flags == TR_RAW_MK_MARK    ? CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS
              : flags == TR_RAW_MK_START ? CUPTI_ACTIVITY_FLAG_MARKER_START
                                         : CUPTI_ACTIVITY_FLAG_MARKER_END;
    m.timestamp = mono_ns() + (uint64_t)g.clock_offset;
    m.id = (uint32_t)id;
    m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
    m.objectId.pt.processId = (uint32_t)g.pid;
    m.objectId.pt.threadId = (uint32_t)my_tid();
    m.name = name;
    m.domain = domain;
    pthread_mutex_lock(&g.mu);
    if (g.n_nvtx_q == g.cap_nvtx_q) {
        size_t nc = g.cap_nvtx_q ? g.cap_nvtx_q * 2 : 1024;
        CUpti_ActivityMarker2 *q = realloc(g.nvtx_q, nc * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&g.mu);
            free(name);
            return;
        }
        g.nvtx_q = q;
        g.cap_nvtx_q = nc;
    }
    g.nvtx_q[g.n_nvtx_q++] = m;
    pthread_mutex_unlock(&g.mu);
}

void rec_nvtx_thread_name(uint32_t tid, char *name)
{
    if (!name || !g.active || g.pid != self_pid()) {
        free(name);
        return;
    }
    pthread_mutex_lock(&g.mu);
    if (g.n_nvtx_names == g.cap_nvtx_names) {
        size_t nc = g.cap_nvtx_names ? g.cap_nvtx_names * 2 : 16;
        struct nvtx_name *a = realloc(g.nvtx_names, nc * sizeof *a);
        if (!a) {
            pthread_mutex_unlock(&g.mu);
            free(name);
            return;
        }
        g.nvtx_names = a;
        g.cap_nvtx_names = nc;
    }
    g.nvtx_names[g.n_nvtx_names++] = (struct nvtx_name){tid, name};
    pthread_mutex_unlock(&g.mu);
}

void rec_nvtx_capture(uint32_t cbid, const void *params, const void *ret)
{
    if (g.capture != CAP_NVTX || !g.active || g.pid != self_pid())
        return;
    CUpti_NvtxData d = {"", params, ret};
    on_nvtx(cbid, &d);
}

/* The queued markers of the recorder's own NVTX handlers, through the same
 * encoder (capture filter included) as CUPTI's. */
static void drain_nvtx(void)
{
    pthread_mutex_lock(&g.mu);
    CUpti_ActivityMarker2 *q = g.nvtx_q;
    size_t n = g.n_nvtx_q;
    g.nvtx_q = NULL;
    g.n_nvtx_q = g.cap_nvtx_q = 0;
    struct nvtx_name *names = g.nvtx_names;
    size_t nn = g.n_nvtx_names;
    g.nvtx_names = NULL;
    g.n_nvtx_names = g.cap_nvtx_names = 0;
    pthread_mutex_unlock(&g.mu);
    for (size_t i = 0; i < nn; i++) {
        rec_enc_thread_name(&g.enc, names[i].tid, names[i].name, 1);
        free(names[i].name);
    }
    free(names);
    for (size_t i = 0; i < n; i++) {
        rec_enc_activity(&g.enc, (const CUpti_Activity *)&q[i]);
        free((char *)q[i].name);
    }
    if (n)
        rec_enc_flush(&g.enc);
    free(q);
}

/* ---------------------------------------------------------------- buffers */

/* A pool buffer, zero-filled: CUPTI may leave padding between records
 * unwritten, and a record walked by mistake then reads zeros, not old data.
 * Anonymous pages come zeroed as they are first written, so a new buffer costs
 * the thread that asks for it nothing up front (a memset of 8 MiB held the
 * application's threads for milliseconds).  Pool buffers are kept for reuse,
 * never freed. */
static pool_buf *new_buffer(void)
{
    void *m = mmap(NULL, sizeof(pool_buf) + g.buf_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    pool_buf *b = m;
    b->size = g.buf_size;
    return b;
}

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    pthread_mutex_lock(&g.mu);
    pool_buf *b = g.free_list;
    int make = 0;   /* a slot in the pool, for a buffer made below */
    if (b && b->size == g.buf_size) {
        g.free_list = b->next;
    } else if (g.allocated < g.pool_cap) {
        b = NULL;
        make = 1;
        g.allocated++;
    } else {
        b = NULL;
    }
    if (!b && !make)
        g.pool_empty++;
    else
        g.outstanding++;
    g.last_buffer_mono = mono_ns();
    pthread_mutex_unlock(&g.mu);
    if (make) {
        /* zeroing megabytes takes milliseconds: on this (the application's)
         * thread, but not under the lock every other thread needs */
        b = new_buffer();
        if (!b) {
            pthread_mutex_lock(&g.mu);
            g.allocated--;
            g.outstanding--;
            g.pool_empty++;
            pthread_mutex_unlock(&g.mu);
        }
    }
    if (!b) {
        *buf = NULL;
        *size = 0;
        return;
    }
    b->next = NULL;
    b->owner = self_pid();
    *buf = (uint8_t *)(b + 1);
    *size = b->size;
}

/* Context 0, stream 0: drops CUPTI reported for no stream in particular. */
static void note_drops_locked(uint32_t context, uint32_t stream, uint64_t n)
{
    size_t i = 0;
    while (i < g.n_drops && (g.drops[i].context != context || g.drops[i].stream != stream))
        i++;
    if (i == g.n_drops) {
        if (g.n_drops == sizeof g.drops / sizeof g.drops[0])
            i = g.n_drops - 1;
        else
            g.drops[g.n_drops++] = (__typeof__(g.drops[0])){context, stream, 0};
    }
    g.drops[i].count += n;
}

/* At the end: a STATUS entry per context and stream that lost records. */
static void write_drops(void)
{
    pthread_mutex_lock(&g.mu);
    size_t n = g.n_drops;
    __typeof__(g.drops[0]) d[sizeof g.drops / sizeof g.drops[0]];
    memcpy(d, g.drops, n * sizeof d[0]);
    pthread_mutex_unlock(&g.mu);
    for (size_t i = 0; i < n; i++) {
        char where[64];
        if (d[i].context || d[i].stream)
            snprintf(where, sizeof where, "context %u, stream %u", d[i].context, d[i].stream);
        else
            snprintf(where, sizeof where, "no stream in particular");
        status_add(TR_RAW_ST_DROPPED, d[i].count > UINT32_MAX ? UINT32_MAX : (uint32_t)d[i].count,
                   "dropped", where);
    }
}

/* The periodic flush.  CUPTI gives back every buffer whose records are all
 * complete, so one that held buffers of ours and gave none back is the first
 * sign that another client registered its buffer callbacks: ours then go to
 * it.  A record still incomplete (a kernel running through the flush) looks
 * the same until its buffer comes back, which clears the sign; check_takeover
 * confirms it at the end with a forced flush. */
static void flush_watched(void)
{
    pthread_mutex_lock(&g.mu);
    size_t held = g.outstanding;
    uint64_t back = g.returned;
    pthread_mutex_unlock(&g.mu);
    run_check(cuptiActivityFlushAll(0), RC_FLUSH);
    uint64_t now = mono_ns();
    pthread_mutex_lock(&g.mu);
    if (held && g.returned == back && g.silent_flush_mono <= g.last_buffer_mono)
        g.silent_flush_mono = now;
    pthread_mutex_unlock(&g.mu);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)size;
    size_t dropped = 0;
    if (run_check(cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped), RC_DROPPED) != CUPTI_SUCCESS)
        dropped = 0;
    uint32_t ctx_id = 0;
    if (dropped && ctx && run_check(cuptiGetContextId(ctx, &ctx_id), RC_CONTEXT_ID) != CUPTI_SUCCESS)
        ctx_id = 0;
    if (!buf)
        return;
    pool_buf *b = (pool_buf *)buf - 1;
    b->size = valid;   /* reused as the valid size while queued; restored on release */
    pthread_mutex_lock(&g.mu);
    g.dropped += dropped;
    if (dropped)
        note_drops_locked(ctx ? ctx_id : 0, ctx ? stream : 0, dropped);
    if (g.outstanding)
        g.outstanding--;
    g.returned++;
    g.last_buffer_mono = mono_ns();
    if (b->owner != self_pid() || !g.active) {
        g.inherited += b->owner != self_pid();
        /* a forked child's copy of the parent's buffer: its records are the parent's */
        b->size = g.buf_size;
        b->next = g.free_list;
        g.free_list = b;
    } else {
        g.buffers++;
        b->next = NULL;
        if (g.queue_tail)
            g.queue_tail->next = b;
        else
            g.queue_head = b;
        g.queue_tail = b;
        pthread_cond_signal(&g.cv);
    }
    pthread_mutex_unlock(&g.mu);
}

/* ---------------------------------------------------------------- writer */

static void write_thread_names(void)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        char path[300], name[64];
        snprintf(path, sizeof path, "/proc/self/task/%s/comm", de->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, name, sizeof name - 1);
        close(fd);
        if (n <= 0)
            continue;
        name[n] = 0;
        name[strcspn(name, "\n")] = 0;
        rec_enc_thread_name(&g.enc, (uint32_t)atoi(de->d_name), name, 0);
    }
    closedir(d);
}

static void write_maps(void)
{
    int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    size_t cap = 1 << 16, n = 16;
    unsigned char *b = malloc(cap);
    while (b) {
        if (n == cap) {
            unsigned char *nb = realloc(b, cap * 2);
            if (!nb)
                break;
            b = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (!b)
        return;
    uint64_t ts = mono_ns();
    uint32_t len = (uint32_t)(n - 16), zero = 0;
    memcpy(b, &ts, 8);
    memcpy(b + 8, &len, 4);
    memcpy(b + 12, &zero, 4);
    rec_write_chunk(&g.enc, TR_RAW_CH_MAPS, b, n);
    free(b);
}

/* Build-ids let the ingest tell the recorded objects from files changed since. */
static void write_modules(void)
{
    size_t n;
    unsigned char *m = tr_loaded_modules(&n);
    if (m)
        rec_write_chunk(&g.enc, TR_RAW_CH_MODULES, m, n);
    free(m);
}

static void write_stats(void)
{
    unsigned char p[8 + 8 * TR_RAW_STAT_COUNT_];
    uint32_t n = TR_RAW_STAT_COUNT_, zero = 0;
    /* buffer completions read the count, but records dropped after the last
     * completion (the pool still empty at the end) are only seen by asking */
    size_t late_drops = 0;
    if (g.buffers_ok && g.kinds_active
        && run_check(cuptiActivityGetNumDroppedRecords(NULL, 0, &late_drops), RC_DROPPED) != CUPTI_SUCCESS)
        late_drops = 0;
    pthread_mutex_lock(&g.mu);
    g.dropped += late_drops;
    if (late_drops)
        note_drops_locked(0, 0, late_drops);
    g.enc.stats[TR_RAW_STAT_DROPPED] = g.dropped;
    g.enc.stats[TR_RAW_STAT_BUFFERS] = g.buffers;
    g.enc.stats[TR_RAW_STAT_POOL_EMPTY] = g.pool_empty;
    g.enc.stats[TR_RAW_STAT_INHERITED] = g.inherited;
    g.enc.stats[TR_RAW_STAT_CAPTURE_NO_ID] = __atomic_load_n(&g.capture_no_id, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&g.mu);
    memcpy(p, &n, 4);
    memcpy(p + 4, &zero, 4);
    memcpy(p + 8, g.enc.stats, sizeof g.enc.stats);
    rec_write_chunk(&g.enc, TR_RAW_CH_STATS, p, sizeof p);
}

/* Writes the STATUS entries added since the last call. */
static void write_status(void)
{
    pthread_mutex_lock(&g.mu);
    size_t from = g.status_written, n = g.n_status - from;
    unsigned char *p = n ? malloc(n) : NULL;
    if (p) {
        memcpy(p, g.status + from, n);
        g.status_written = g.n_status;
    }
    pthread_mutex_unlock(&g.mu);
    if (!p)
        return;
    for (size_t off = 0; off + sizeof(tr_raw_status) <= n;) {
        tr_raw_status st;
        memcpy(&st, p + off, sizeof st);
        st.ts += (uint64_t)g.clock_offset;
        memcpy(p + off, &st, sizeof st);
        off += tr_raw_pad8(sizeof st + st.text_len);
    }
    rec_write_chunk(&g.enc, TR_RAW_CH_STATUS, p, n);
    free(p);
}

/* Writes stacks and stack references gathered since the last call. */
static void drain_stacks(void)
{
    pthread_mutex_lock(&g.mu);
    unsigned char *st = g.new_stacks;
    size_t nst = g.n_new_stacks;
    tr_raw_stackref *refs = g.refs;
    size_t nrefs = g.nrefs;
    g.new_stacks = NULL;
    g.n_new_stacks = g.cap_new_stacks = 0;
    g.refs = NULL;
    g.nrefs = g.cap_refs = 0;
    pthread_mutex_unlock(&g.mu);
    if (nst)
        rec_write_chunk(&g.enc, TR_RAW_CH_STACKS, st, nst);
    for (size_t i = 0; i < nrefs; i++) {
        refs[i].ts += (uint64_t)g.clock_offset;   /* to the file's clock */
        rec_enc_add(&g.enc, TR_RAW_REC_STACKREF, &refs[i]);
    }
    if (nrefs)
        rec_enc_flush(&g.enc);
    free(st);
    free(refs);
}

static void release_buffer(pool_buf *b)
{
    pthread_mutex_lock(&g.mu);
    b->size = g.buf_size;
    b->next = g.free_list;
    g.free_list = b;
    pthread_mutex_unlock(&g.mu);
}

/* Encodes every queued buffer; returns how many. */
static size_t drain_queue(void)
{
    size_t n = 0;
    drain_nvtx();
    for (;;) {
        pthread_mutex_lock(&g.mu);
        pool_buf *b = g.queue_head;
        if (b) {
            g.queue_head = b->next;
            if (!g.queue_head)
                g.queue_tail = NULL;
        }
        pthread_mutex_unlock(&g.mu);
        if (!b)
            return n;
        rec_enc_buffer(&g.enc, (uint8_t *)(b + 1), b->size);
        release_buffer(b);
        n++;
    }
}

static void finish_on_signal(void);

static void *writer_main(void *arg)
{
    (void)arg;
    uint64_t next_flush = mono_ns() + (uint64_t)g.flush_ms * 1000000ull;
    unsigned ticks = 0;
    for (;;) {
        pthread_mutex_lock(&g.mu);
        while (!g.stop && !g.queue_head && !__atomic_load_n(&g.signal_stop, __ATOMIC_SEQ_CST)) {
            uint64_t now = mono_ns();
            if (now >= next_flush)
                break;
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            uint64_t wait = next_flush - now;
            if (wait > WRITER_SLICE_NS)
                wait = WRITER_SLICE_NS;
            until.tv_sec += (time_t)(wait / 1000000000ull);
            until.tv_nsec += (long)(wait % 1000000000ull);
            if (until.tv_nsec >= 1000000000L) {
                until.tv_sec++;
                until.tv_nsec -= 1000000000L;
            }
            pthread_cond_timedwait(&g.cv, &g.mu, &until);
        }
        int stop = g.stop;
        pthread_mutex_unlock(&g.mu);
        if (__atomic_load_n(&g.signal_stop, __ATOMIC_SEQ_CST)) {
            finish_on_signal();
            break;
        }
        drain_queue();
        if (g.backtrace)
            drain_stacks();
        if (stop)
            break;
        if (mono_ns() >= next_flush) {
            if (g.buffers_ok && g.kinds_active)   /* completes buffers into our queue; no lock held */
                flush_watched();
            drain_queue();
            write_status();
            if (++ticks % 5 == 0) {
                write_thread_names();
                rec_enc_flush(&g.enc);
                write_stats();
            }
            next_flush = mono_ns() + (uint64_t)g.flush_ms * 1000000ull;
        }
    }
    return NULL;
}

/* ---------------------------------------------------------------- file */

static void read_small(const char *path, char *buf, size_t size, int nul_to_space)
{
    buf[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return;
    buf[n] = 0;
    if (nul_to_space) {
        for (ssize_t i = 0; i < n - 1; i++)
            if (!buf[i])
                buf[i] = ' ';
    }
}

static void meta_add(char *buf, size_t size, size_t *n, const char *key, const char *val)
{
    int w = snprintf(buf + *n, size - *n, "%s=%s", key, val ? val : "");
    if (w < 0 || (size_t)w + 1 >= size - *n)
        return;
    *n += (size_t)w + 1;
}

static int open_file(uint64_t session)
{
    const char *dir = getenv("TRACE_RECORD_DIR");
    if (!dir || !*dir)
        dir = ".";
    for (int attempt = 0; attempt < 8; attempt++) {
        uint32_t nonce = 0;
        if (getrandom(&nonce, sizeof nonce, GRND_NONBLOCK) != sizeof nonce)
            nonce = (uint32_t)(mono_ns() ^ (uint64_t)getpid() << 16) + (uint32_t)attempt;
        char path[4096];
        snprintf(path, sizeof path, "%s/%016llx.%d.%08x" TR_RAW_FILE_SUFFIX, dir,
                 (unsigned long long)session, (int)getpid(), nonce);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
        if (fd >= 0 || errno != EEXIST)
            return fd;
    }
    return -1;
}

static void write_header_and_meta(uint64_t session)
{
    tr_raw_header h;
    memset(&h, 0, sizeof h);
    /* the clock of CUPTI's timestamps: ours only if the callback took; else
     * CUPTI's own, anchored here, and every timestamp of ours moved onto it */
    uint64_t t0_cupti = 0;
    h.t0_realtime = real_ns();
    h.t0_monotonic = mono_ns();
    if (!g.clock_ok && run_check(cuptiGetTimestamp(&t0_cupti), RC_TIMESTAMP) != CUPTI_SUCCESS)
        t0_cupti = 0;
    g.clock_offset = t0_cupti ? (int64_t)(t0_cupti - h.t0_monotonic) : 0;
    g.enc.clock_offset = g.clock_offset;
    h.t0_cupti = t0_cupti;
    h.flags = (g.clock_ok ? TR_RAW_HF_CLOCK_MONOTONIC : t0_cupti ? TR_RAW_HF_CLOCK_CUPTI : 0)
              | (g.subscribed == 1 ? TR_RAW_HF_SUBSCRIBED : 0)
              | (g.backtrace ? TR_RAW_HF_BACKTRACE : 0)
              | (g.capture != CAP_NONE ? TR_RAW_HF_CAPTURE_RANGE : 0);
    h.session_id = session;
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    uint32_t v = 0;
    if (run_check(cuptiGetVersion(&v), RC_VERSION) == CUPTI_SUCCESS)
        h.cupti_runtime_version = v;
    h.cupti_compile_version = CUPTI_API_VERSION;
    h.recorder_version = RECORDER_VERSION;
    tr_raw_header_seal(&h);
    if (write(g.enc.fd, &h, sizeof h) != (ssize_t)sizeof h)
        g.enc.write_failed = 1;

    char meta[16384], tmp[4096];
    size_t n = 0;
    ssize_t l = readlink("/proc/self/exe", tmp, sizeof tmp - 1);
    tmp[l > 0 ? l : 0] = 0;
    meta_add(meta, sizeof meta, &n, "exe", tmp);
    read_small("/proc/self/cmdline", tmp, sizeof tmp, 1);
    meta_add(meta, sizeof meta, &n, "cmdline", tmp);
    gethostname(tmp, sizeof tmp - 1);
    tmp[sizeof tmp - 1] = 0;
    meta_add(meta, sizeof meta, &n, "hostname", tmp);
    Dl_info di;
    if (dladdr((void *)cuptiGetVersion, &di) && di.dli_fname)
        meta_add(meta, sizeof meta, &n, "libcupti", di.dli_fname);
    meta_add(meta, sizeof meta, &n, "kinds", g.kinds[0] ? g.kinds : "default");
    meta_add(meta, sizeof meta, &n, "subscriber",
             g.subscribed == 1 ? "yes" : g.subscribed < 0 ? "refused (another CUPTI client holds it)"
                                                           : "not needed");
    if (g.capture_lost)
        meta_add(meta, sizeof meta, &n, "capture", "ignored: no callback subscriber, everything recorded");
    meta_add(meta, sizeof meta, &n, "CUDA_VISIBLE_DEVICES", getenv("CUDA_VISIBLE_DEVICES"));
    rec_write_chunk(&g.enc, TR_RAW_CH_META, meta, n);
    write_status();
}

/* ---------------------------------------------------------------- life cycle */

/* The last records and END; the writer thread has stopped or is the caller. */
static void finish_file(void)
{
    drain_queue();
    rec_enc_finish(&g.enc);
    if (g.backtrace) {
        drain_stacks();
        write_maps();
        write_modules();
    }
    write_thread_names();
    rec_enc_flush(&g.enc);
    write_stats();
    write_drops();
    write_status();
    uint64_t end[3] = {real_ns(), mono_ns(), g.enc.seq};
    rec_write_chunk(&g.enc, TR_RAW_CH_END, end, sizeof end);
    g.active = 0;
    close(g.enc.fd);
    g.enc.fd = -1;
}

/* After a forced flush every buffer CUPTI held has come back, unless another
 * client (torch.profiler's Kineto, another injection) registered its own
 * callbacks since: CUPTI then gives ours to it, and records after the last
 * buffer we saw went there.  CUPTI tells no client of another's callbacks, so
 * the time is bracketed: the takeover came after CUPTI last called ours, and
 * by the first periodic flush that gave none of our buffers back (else by
 * this flush).  That flush is the time given; the last call goes with it. */
static void check_takeover(void)
{
    uint64_t now = mono_ns();
    pthread_mutex_lock(&g.mu);
    int lost = g.outstanding > 0 && !g.taken_over;
    uint64_t last = g.last_buffer_mono;
    int by_periodic = g.silent_flush_mono > last;
    uint64_t at = by_periodic ? g.silent_flush_mono : now;
    g.taken_over |= lost;
    pthread_mutex_unlock(&g.mu);
    if (!lost)
        return;
    char detail[256];
    snprintf(detail, sizeof detail,
             "%s gave back none of the recorder's buffers; CUPTI last called its buffer "
             "callbacks %.3f s before: records since went to the other client",
             by_periodic ? "the first periodic flush that" : "the flush at the end",
             (double)(at - last) / 1e9);
    status_add_at(at, TR_RAW_ST_TAKEN, 0, "buffers", detail);
    fprintf(stderr, "trace-record: another CUPTI client (torch.profiler?) took over CUPTI's buffers "
            "%.3f s after the start (%s): later records are lost\n",
            (double)(int64_t)(at - g.t0_mono) / 1e9, detail);
}

static void shutdown_recorder(void)
{
    if (!g.active || g.pid != getpid())
        return;
    if (g.buffers_ok && g.kinds_active
        && run_check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), RC_FLUSH_FORCED) == CUPTI_SUCCESS)
        check_takeover();   /* only a flush that worked shows buffers gone elsewhere */
    pthread_mutex_lock(&g.mu);
    g.stop = 1;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    if (g.writer_running)
        pthread_join(g.writer, NULL);
    g.writer_running = 0;
    if (g.active)   /* not already finished by a stop signal */
        finish_file();
}

/* ---------------------------------------------------------------- stop signals */

/* Fatal signals end a program without atexit.  Where the program left them at
 * their default, the handler has the writer thread finish the file (a handler
 * may not take locks or call CUPTI), waits for it a bounded time, then lets the
 * signal kill the process as it would have, core dump included.  A fault in the
 * writer itself, or in a thread holding the agent's lock, costs at most the
 * wait: the file is then left as the last periodic flush wrote it. */

static void on_stop_signal(int sig)
{
    int saved_errno = errno;
    if (g.active && g.pid == getpid() && g.writer_running
        && !pthread_equal(pthread_self(), g.writer)) {
        __atomic_store_n(&g.signal_stop, sig, __ATOMIC_SEQ_CST);
        struct timespec nap = {0, 1000000};
        for (uint64_t waited = 0; waited < STOP_WAIT_NS; waited += 1000000) {
            if (__atomic_load_n(&g.signal_done, __ATOMIC_SEQ_CST))
                break;
            nanosleep(&nap, NULL);
        }
    }
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig);   /* blocked until this handler returns, then it kills */
    errno = saved_errno;
}

static void install_stop_handler(int sig)
{
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0 || (old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
        return;   /* the program's own handling (or ignoring) stays */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    sigaction(sig, &sa, NULL);
}

static void install_stop_handlers(void)
{
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        install_stop_handler(stop_signals[i]);
    for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++)
        install_stop_handler(crash_signals[i]);
}

/* On the writer thread, when a stop signal came. */
static void finish_on_signal(void)
{
    if (g.buffers_ok && g.kinds_active
        && run_check(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED), RC_FLUSH_FORCED) == CUPTI_SUCCESS)
        check_takeover();   /* only a flush that worked shows buffers gone elsewhere */
    finish_file();
    __atomic_store_n(&g.signal_done, 1, __ATOMIC_SEQ_CST);
}

static void atfork_prepare(void)
{
    pthread_mutex_lock(&g.init_mu);
    pthread_mutex_lock(&g.mu);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&g.mu);
    pthread_mutex_unlock(&g.init_mu);
}

static void atfork_child(void)
{
    g.forked = 1;
    /* NVTX markers the parent queued are the parent's to write */
    for (size_t i = 0; i < g.n_nvtx_q; i++)
        free((char *)g.nvtx_q[i].name);
    g.n_nvtx_q = 0;
    for (size_t i = 0; i < g.n_nvtx_names; i++)
        free(g.nvtx_names[i].name);
    g.n_nvtx_names = 0;
    __atomic_store_n(&cur_pid, getpid(), __ATOMIC_RELAXED);
    pthread_mutex_init(&g.mu, NULL);
    pthread_mutex_init(&g.init_mu, NULL);
    pthread_cond_init(&g.cv, NULL);
    /* The parent's file, queue and writer are not ours: start over if the driver
     * initialises us again in this process.  Buffers still held by CUPTI come back
     * tagged with the parent's pid and are discarded. */
    if (g.enc.fd >= 0)
        close(g.enc.fd);
    g.enc.fd = -1;
    g.active = 0;
    g.inited = 0;
    g.writer_running = 0;
    g.stop = 0;
    g.queue_head = g.queue_tail = NULL;
    g.dropped = g.buffers = g.pool_empty = g.inherited = 0;
    g.outstanding = 0;
    g.returned = 0;
    g.silent_flush_mono = 0;
    g.taken_over = 0;
    g.n_drops = 0;
    /* CUPTI's state, the subscriber included, is copied into the child: a new
     * cuptiSubscribe would be refused as a second subscriber */
    g.sub_inherited = g.subscribed == 1;
    g.init_done = 0;
    g.init_tid = 0;
    pthread_cond_init(&g.init_cv, NULL);
    g.n_status = g.status_written = 0;
    tls_nnest = 0;
    g.nwindows = 0;
    g.captures_open = 0;
    g.n_capture_ids = 0;
    g.nrefs = 0;
    g.n_new_stacks = 0;
    tls_tid = 0;
}

/* The activity kinds behind each --kinds name.  "driver" is a filtered set of
 * cbids (launches, and the queries that tell polls from waits), not the chatty
 * DRIVER kind; "query" only keeps what the others produce. */
static const struct {
    const char *name;
    CUpti_ActivityKind kinds[2];
} kind_tab[] = {
    {"kernel", {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API}},
    {"runtime", {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_INVALID}},
    {"memcpy", {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMCPY2}},
    {"memset", {CUPTI_ACTIVITY_KIND_MEMSET, CUPTI_ACTIVITY_KIND_INVALID}},
    {"sync", {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_INVALID}},
    {"nvtx", {CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_NAME}},
    {"overhead", {CUPTI_ACTIVITY_KIND_OVERHEAD, CUPTI_ACTIVITY_KIND_INVALID}},
};

static const struct {
    CUpti_ActivityKind kind;
    const char *name;
} cupti_kind_names[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL"},
    {CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, "INTERNAL_LAUNCH_API"},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME"}, {CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER"},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"}, {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"},
    {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"}, {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION"},
    {CUPTI_ACTIVITY_KIND_MARKER, "MARKER"}, {CUPTI_ACTIVITY_KIND_NAME, "NAME"},
    {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD"}, {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE"},
    {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT"}, {CUPTI_ACTIVITY_KIND_STREAM, "STREAM"},
};

static const char *cupti_kind_name(CUpti_ActivityKind k)
{
    for (size_t i = 0; i < sizeof cupti_kind_names / sizeof cupti_kind_names[0]; i++)
        if (cupti_kind_names[i].kind == k)
            return cupti_kind_names[i].name;
    return "?";
}

/* Enables one activity kind (dump: also the records of what exists already,
 * with a plain enable if that is refused); returns 1 if it is on. */
static int enable_kind(CUpti_ActivityKind k, int dump)
{
    char call[96], what[64];
    snprintf(call, sizeof call, "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_%s)", cupti_kind_name(k));
    snprintf(what, sizeof what, "kind %s", cupti_kind_name(k));
    char dcall[96];
    snprintf(dcall, sizeof dcall, "cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_%s)", cupti_kind_name(k));
    if ((dump && cupti_ok_or(cuptiActivityEnableAndDump(k), dcall, what,
                             "enabled without the records of what exists already"))
        || cupti_ok(cuptiActivityEnable(k), call, what)) {
        status_add(TR_RAW_ST_ACTIVE, 0, what, NULL);
        g.kinds_active++;
        return 1;
    }
    return 0;
}

static const CUpti_CallbackId query_rt[] = {CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_ptsz_v7000,
                                            CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020};
static const CUpti_CallbackId query_drv[] = {CUPTI_DRIVER_TRACE_CBID_cuStreamQuery,
                                             CUPTI_DRIVER_TRACE_CBID_cuStreamQuery_ptsz,
                                             CUPTI_DRIVER_TRACE_CBID_cuEventQuery};

static void enable_runtime(int queries)
{
    if (!enable_kind(CUPTI_ACTIVITY_KIND_RUNTIME, 0))
        return;
    /* after enabling the kind: RUNTIME overrides per-cbid settings made before it */
    static const CUpti_CallbackId chatty[] = {CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
                                              CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
                                              CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020};
    for (size_t i = 0; i < sizeof chatty / sizeof chatty[0]; i++)
        cupti_ok(cuptiActivityEnableRuntimeApi(chatty[i], 0), "cuptiActivityEnableRuntimeApi",
                 "runtime call filter");
    if (!queries)
        for (size_t i = 0; i < sizeof query_rt / sizeof query_rt[0]; i++)
            cupti_ok(cuptiActivityEnableRuntimeApi(query_rt[i], 0), "cuptiActivityEnableRuntimeApi",
                     "runtime call filter");
}

/* The driver launch calls (and the driver queries, when syncs are recorded,
 * to tell their records apart from waits). */
static void enable_driver(int queries)
{
    int ok = 1;
    static const char *const otherwise = "the whole DRIVER kind is recorded instead";
    for (CUpti_CallbackId id = 1; id < 1024 && ok; id++)
        if (is_launch(CUPTI_CB_DOMAIN_DRIVER_API, id))
            ok = cupti_ok_or(cuptiActivityEnableDriverApi(id, 1), "cuptiActivityEnableDriverApi",
                             "kind DRIVER", otherwise);
    for (size_t i = 0; i < sizeof query_drv / sizeof query_drv[0] && ok && queries; i++)
        ok = cupti_ok_or(cuptiActivityEnableDriverApi(query_drv[i], 1), "cuptiActivityEnableDriverApi",
                         "kind DRIVER", otherwise);
    if (ok) {
        status_add(TR_RAW_ST_ACTIVE, 0, "kind DRIVER", "launch and query calls only");
        g.kinds_active++;
    } else {
        enable_kind(CUPTI_ACTIVITY_KIND_DRIVER, 0);
    }
}

static void subscribe_callbacks(void)
{
    int need_cb = g.backtrace || g.capture == CAP_PROFILER || g.capture == CAP_NVTX;
    g.subscribed = 0;
    if (!need_cb)
        return;
    if (g.sub_inherited) {
        g.subscribed = 1;
        status_add(TR_RAW_ST_ACTIVE, 0, "callback subscriber", "inherited from the parent process");
    } else {
        CUptiResult r = cuptiSubscribe(&g.sub, on_callback, NULL);
        if (!cupti_ok(r, "cuptiSubscribe", "callback subscriber")) {
            g.subscribed = -1;   /* another CUPTI client (or tool) holds the subscriber */
            return;
        }
        g.subscribed = 1;
        status_add(TR_RAW_ST_ACTIVE, 0, "callback subscriber", NULL);
    }
    if (g.capture == CAP_PROFILER) {
        static const struct { CUpti_CallbackDomain d; CUpti_CallbackId id; } ids[] = {
            {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000},
            {CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000},
            {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart},
            {CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop}};
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
            cupti_ok(cuptiEnableCallback(1, g.sub, ids[i].d, ids[i].id), "cuptiEnableCallback",
                     "capture range cudaProfilerApi");
    }
    if (g.capture == CAP_NVTX) {
        static const CUpti_CallbackId ids[] = {
            CUPTI_CBID_NVTX_nvtxRangePushA, CUPTI_CBID_NVTX_nvtxRangePushEx,
            CUPTI_CBID_NVTX_nvtxRangePop, CUPTI_CBID_NVTX_nvtxDomainRangePushEx,
            CUPTI_CBID_NVTX_nvtxDomainRangePop, CUPTI_CBID_NVTX_nvtxRangeStartA,
            CUPTI_CBID_NVTX_nvtxRangeStartEx, CUPTI_CBID_NVTX_nvtxRangeEnd,
            CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, CUPTI_CBID_NVTX_nvtxDomainRangeEnd,
            CUPTI_CBID_NVTX_nvtxRangePushW, CUPTI_CBID_NVTX_nvtxRangeStartW,
            CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, CUPTI_CBID_NVTX_nvtxDomainRegisterStringW};
        for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
            cupti_ok(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_NVTX, ids[i]), "cuptiEnableCallback",
                     "capture range nvtx");
    }
    if (g.backtrace) {
        for (CUpti_CallbackId id = 1; id < 1024; id++) {
            if (is_launch(CUPTI_CB_DOMAIN_RUNTIME_API, id))
                cupti_ok(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, id),
                         "cuptiEnableCallback", "backtrace");
            if (is_launch(CUPTI_CB_DOMAIN_DRIVER_API, id))
                cupti_ok(cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, id),
                         "cuptiEnableCallback", "backtrace");
        }
    }
}

/* Every call checked: what fails is said once (report_failures) and kept in
 * the file's STATUS entries; the rest goes on. */
static void setup_cupti(void)
{
    g.kinds_active = 0;
    g.nvtx_by_cupti = 0;
    g.clock_ok = cupti_ok_or(cuptiActivityRegisterTimestampCallback(timestamp_cb),
                             "cuptiActivityRegisterTimestampCallback", "clock",
                             "timestamps stay on CUPTI's clock, anchored at the start");
    if (g.clock_ok)
        status_add(TR_RAW_ST_ACTIVE, 0, "clock", "CLOCK_MONOTONIC through the timestamp callback");
    cupti_ok_or(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM), "cuptiSetThreadIdType",
                "system thread ids", "thread ids are CUPTI's");
    g.buffers_ok = cupti_ok_or(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                               "cuptiActivityRegisterCallbacks", "buffers",
                               "no CUPTI activity is recorded");
    if (!g.buffers_ok)
        return;   /* no activity record can come back: enabling kinds would only lose them */
    subscribe_callbacks();

    enable_kind(CUPTI_ACTIVITY_KIND_DEVICE, 1);
    enable_kind(CUPTI_ACTIVITY_KIND_CONTEXT, 1);
    enable_kind(CUPTI_ACTIVITY_KIND_STREAM, 0);
    int queries = kind_on("query") || kind_on("sync");
    for (size_t i = 0; i < sizeof kind_tab / sizeof kind_tab[0]; i++) {
        if (!kind_on(kind_tab[i].name)) {
            char what[64];
            snprintf(what, sizeof what, "kind %s", kind_tab[i].name);
            status_add(TR_RAW_ST_OFF, 0, what, "not in --kinds");
            continue;
        }
        if (!strcmp(kind_tab[i].name, "runtime")) {
            enable_runtime(queries);
            continue;
        }
        for (int j = 0; j < 2 && kind_tab[i].kinds[j] != CUPTI_ACTIVITY_KIND_INVALID; j++)
            if (enable_kind(kind_tab[i].kinds[j], 0) && kind_tab[i].kinds[j] == CUPTI_ACTIVITY_KIND_MARKER)
                g.nvtx_by_cupti = 1;
    }
    if (kind_on("driver"))
        enable_driver(queries);
    else
        status_add(TR_RAW_ST_OFF, 0, "kind driver", "not in --kinds");
    /* without the runtime kind, the query calls alone, to tell polls from waits */
    if (queries && !kind_on("runtime"))
        for (size_t i = 0; i < sizeof query_rt / sizeof query_rt[0]; i++)
            cupti_ok(cuptiActivityEnableRuntimeApi(query_rt[i], 1), "cuptiActivityEnableRuntimeApi",
                     "query calls");
    if (!kind_on("query"))
        status_add(TR_RAW_ST_OFF, 0, "kind query",
                   "stream and event queries folded (--kinds query keeps them)");
}

static int init_recorder(void)
{
    g.pid = getpid();
    __atomic_store_n(&cur_pid, g.pid, __ATOMIC_RELAXED);
    const char *only = getenv("TRACE_RECORD_ONLY_PID");
    if (only && *only && atol(only) != (long)getpid()) {
        g.disabled = 1;   /* --no-children: a descendant of the recorded program */
        return 0;
    }
    g.buf_size = (size_t)env_u64("TRACE_RECORD_BUFFER_SIZE", 8u << 20);
    if (g.buf_size < 65536)
        g.buf_size = 65536;
    g.buf_size = tr_raw_pad8(g.buf_size);
    /* the pool grows while the writer lags, up to a memory budget (--buffer-budget;
     * a count of buffers overrides it, for tests) */
    uint64_t budget = env_u64("TRACE_RECORD_POOL_BYTES", 256ull << 20);
    g.pool_cap = (size_t)env_u64("TRACE_RECORD_POOL_BUFFERS", budget / g.buf_size);
    if (g.pool_cap < 2)
        g.pool_cap = 2;
    g.flush_ms = (unsigned)env_u64("TRACE_RECORD_FLUSH_MS", 200);
    if (!g.flush_ms)
        g.flush_ms = 200;
    g.backtrace = env_u64("TRACE_RECORD_BACKTRACE", 0) != 0;
    const char *k = getenv("TRACE_RECORD_KINDS");
    snprintf(g.kinds, sizeof g.kinds, "%s", k ? k : "");
    g.t0_mono = env_u64("TRACE_RECORD_T0", mono_ns());
    uint64_t delay = env_u64("TRACE_RECORD_DELAY_NS", 0), dur = env_u64("TRACE_RECORD_DURATION_NS", 0);
    const char *cap = getenv("TRACE_RECORD_CAPTURE");
    g.capture = CAP_NONE;
    g.nwindows = 0;
    if (cap && strcmp(cap, "cudaProfilerApi") == 0) {
        g.capture = CAP_PROFILER;
    } else if (cap && strncmp(cap, "nvtx:", 5) == 0 && cap[5]) {
        g.capture = CAP_NVTX;
        snprintf(g.capture_name, sizeof g.capture_name, "%s", cap + 5);
        decode_capture_wname();
        g.n_capture_handles = 0;
    } else if (delay || dur) {
        g.capture = CAP_TIME;
        window_open(g.t0_mono + delay);
        if (dur)
            window_close(g.t0_mono + delay + dur);
    }
    uint64_t session = env_u64("TRACE_RECORD_SESSION", 0);
    if (!session && getrandom(&session, sizeof session, GRND_NONBLOCK) != sizeof session)
        session = mono_ns();

    /* preallocate a few buffers so that the first requests do not allocate */
    for (int i = 0; i < 2 && g.allocated < g.pool_cap; i++) {
        pool_buf *b = new_buffer();
        if (!b)
            break;
        b->size = g.buf_size;
        b->next = g.free_list;
        g.free_list = b;
        g.allocated++;
    }
    int fd = open_file(session);
    if (fd < 0)
        return 0;
    rec_enc_free(&g.enc);
    rec_enc_init(&g.enc, fd);
    g.enc.keep_queries = kind_on("query");
    g.enc.str_budget = (size_t)env_u64("TRACE_RECORD_STRING_CACHE", g.enc.str_budget);
    setup_cupti();
    report_failures();
    g.capture_lost = 0;
    if ((g.capture == CAP_PROFILER || g.capture == CAP_NVTX) && g.subscribed != 1) {
        g.capture = CAP_NONE;   /* the range cannot be seen: record everything, say so */
        g.capture_lost = 1;
    }
    g.enc.keep = g.capture != CAP_NONE ? in_capture : NULL;
    write_header_and_meta(session);
    g.stop = 0;
    g.active = 1;
    g.signal_stop = g.signal_done = 0;
    /* the writer is born with the stop signals blocked: the handler waits for it */
    sigset_t block, old_mask;
    sigemptyset(&block);
    for (size_t i = 0; i < sizeof stop_signals / sizeof stop_signals[0]; i++)
        sigaddset(&block, stop_signals[i]);
    pthread_sigmask(SIG_BLOCK, &block, &old_mask);
    if (pthread_create(&g.writer, NULL, writer_main, NULL) == 0)
        g.writer_running = 1;
    pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
    if (g.writer_running)
        install_stop_handlers();
    return 1;
}

/* One set-up per process, run with no lock held: CUPTI set-up can initialise
 * the driver, whose cuInit calls InitializeInjection on this same thread, and
 * the NVTX door may run on one thread while cuInit runs on another.  A call
 * that finds the set-up under way returns at once (the CUDA door: the driver
 * may hold its own locks) or waits for it a bounded time (the NVTX door, which
 * must know whether CUPTI records NVTX). */
static void init_once(int wait)
{
    static int registered;
    pthread_mutex_lock(&g.init_mu);
    if (g.inited) {
        if (wait && !g.init_done && g.init_tid != my_tid()) {
            struct timespec until;
            clock_gettime(CLOCK_REALTIME, &until);
            until.tv_sec += 5;
            while (!g.init_done && pthread_cond_timedwait(&g.init_cv, &g.init_mu, &until) == 0)
                ;
        }
        pthread_mutex_unlock(&g.init_mu);
        return;
    }
    g.inited = 1;
    g.init_tid = my_tid();
    if (!registered) {
        registered = 1;
        pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
        atexit(shutdown_recorder);
    }
    pthread_mutex_unlock(&g.init_mu);
    init_recorder();
    pthread_mutex_lock(&g.init_mu);
    g.init_done = 1;
    pthread_cond_broadcast(&g.init_cv);
    pthread_mutex_unlock(&g.init_mu);
}

EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
    init_once(0);
    return 1;
}

typedef const void *(*nvtx_get_export_table_fn)(uint32_t);
typedef int (*nvtx_init_fn)(nvtx_get_export_table_fn);

EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table_fn get);
int InitializeInjectionNvtx2(nvtx_get_export_table_fn get)
{
    init_once(1);
    if (g.disabled || !g.active || !kind_on("nvtx"))
        return 0;
    if (g.nvtx_by_cupti) {
        /* forward to the libcupti already mapped (ours is linked by soname) */
        void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
        if (!h)
            h = dlopen("libcupti.so.13", RTLD_NOW);
        nvtx_init_fn fn = h ? (nvtx_init_fn)dlsym(h, "InitializeInjectionNvtx2") : NULL;
        if (fn && fn(get))
            return 1;
    }
    /* CUPTI cannot record NVTX here: the recorder does it itself */
    if (!rec_nvtx_install(get))
        return 0;
    if (!__atomic_exchange_n(&g.nvtx_own, 1, __ATOMIC_RELAXED))
        status_add(TR_RAW_ST_ACTIVE, 0, "nvtx", "recorded by the recorder itself: CUPTI does not record NVTX");
    return 1;
}

/* NVTX extensions (payloads, counters, memory) load their injection through
 * this entry.  CUPTI handles them when it records NVTX; the recorder's own
 * NVTX does not, and declines (the extension's calls stay no-ops). */
typedef int (*nvtx_ext_init_fn)(void *module_info);

EXPORT int InitializeInjectionNvtxExtension(void *module_info);
int InitializeInjectionNvtxExtension(void *module_info)
{
    init_once(1);
    if (g.disabled || !g.active || !g.nvtx_by_cupti || !kind_on("nvtx"))
        return 0;
    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    nvtx_ext_init_fn fn = h ? (nvtx_ext_init_fn)dlsym(h, "InitializeInjectionNvtxExtension") : NULL;
    return fn ? fn(module_info) : 0;
}
