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

static struct {
    pthread_mutex_t init_mu;
    int inited, active, disabled;
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
    uint64_t t0_mono;
} g = {.init_mu = PTHREAD_MUTEX_INITIALIZER, .mu = PTHREAD_MUTEX_INITIALIZER,
       .cv = PTHREAD_COND_INITIALIZER};

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
static __thread int tls_in_runtime;
static __thread int tls_nvtx_depth, tls_capture_depth;

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

static int kind_on(const char *k)
{
    if (!g.kinds[0])
        return 1;
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
    push:
        /* every push is seen, whatever its form, so that pops stay paired */
        tls_nvtx_depth++;
        if (!tls_capture_depth && match) {
            tls_capture_depth = tls_nvtx_depth;
            capture_enter(mono_ns());
        }
        return;
    case CUPTI_CBID_NVTX_nvtxRangePop:
    case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (tls_nvtx_depth <= 0)
            return;
        if (tls_capture_depth == tls_nvtx_depth) {
            tls_capture_depth = 0;
            capture_leave(mono_ns() + 1000);   /* the END marker is taken just after */
        }
        tls_nvtx_depth--;
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
    if (!g.active || g.pid != getpid())
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

/* ---------------------------------------------------------------- buffers */

static void CUPTIAPI buffer_requested(uint8_t **buf, size_t *size, size_t *max_records)
{
    *max_records = 0;
    pthread_mutex_lock(&g.mu);
    pool_buf *b = g.free_list;
    if (b && b->size == g.buf_size) {
        g.free_list = b->next;
    } else if (g.allocated < g.pool_cap) {
        b = aligned_alloc(64, sizeof(pool_buf) + g.buf_size);
        if (b) {
            b->size = g.buf_size;
            g.allocated++;
        }
    } else {
        b = NULL;
    }
    if (!b)
        g.pool_empty++;
    pthread_mutex_unlock(&g.mu);
    if (!b) {
        *buf = NULL;
        *size = 0;
        return;
    }
    b->next = NULL;
    b->owner = getpid();
    *buf = (uint8_t *)(b + 1);
    *size = b->size;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buf, size_t size,
                                      size_t valid)
{
    (void)size;
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped);
    if (!buf)
        return;
    pool_buf *b = (pool_buf *)buf - 1;
    b->size = valid;   /* reused as the valid size while queued; restored on release */
    pthread_mutex_lock(&g.mu);
    g.dropped += dropped;
    if (b->owner != getpid() || !g.active) {
        g.inherited += b->owner != getpid();
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
        rec_enc_thread_name(&g.enc, (uint32_t)atoi(de->d_name), name);
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
    if (cuptiActivityGetNumDroppedRecords(NULL, 0, &late_drops) != CUPTI_SUCCESS)
        late_drops = 0;
    pthread_mutex_lock(&g.mu);
    g.dropped += late_drops;
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
    for (size_t i = 0; i < nrefs; i++)
        rec_enc_add(&g.enc, TR_RAW_REC_STACKREF, &refs[i]);
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
            cuptiActivityFlushAll(0);   /* completes buffers into our queue; no lock held */
            drain_queue();
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
    h.flags = TR_RAW_HF_CLOCK_MONOTONIC | (g.subscribed == 1 ? TR_RAW_HF_SUBSCRIBED : 0)
              | (g.backtrace ? TR_RAW_HF_BACKTRACE : 0)
              | (g.capture != CAP_NONE ? TR_RAW_HF_CAPTURE_RANGE : 0);
    h.session_id = session;
    h.pid = (uint32_t)getpid();
    h.ppid = (uint32_t)getppid();
    h.t0_realtime = real_ns();
    h.t0_monotonic = mono_ns();
    uint32_t v = 0;
    if (cuptiGetVersion(&v) == CUPTI_SUCCESS)
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
}

/* ---------------------------------------------------------------- life cycle */

/* The last records and END; the writer thread has stopped or is the caller. */
static void finish_file(void)
{
    drain_queue();
    if (g.backtrace) {
        drain_stacks();
        write_maps();
        write_modules();
    }
    write_thread_names();
    rec_enc_flush(&g.enc);
    write_stats();
    uint64_t end[3] = {real_ns(), mono_ns(), g.enc.seq};
    rec_write_chunk(&g.enc, TR_RAW_CH_END, end, sizeof end);
    g.active = 0;
    close(g.enc.fd);
    g.enc.fd = -1;
}

static void shutdown_recorder(void)
{
    if (!g.active || g.pid != getpid())
        return;
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
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
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
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
    g.nwindows = 0;
    g.captures_open = 0;
    g.n_capture_ids = 0;
    g.nrefs = 0;
    g.n_new_stacks = 0;
    tls_tid = 0;
}

static void enable(CUpti_ActivityKind k)
{
    cuptiActivityEnable(k);
}

static void setup_cupti(void)
{
    cuptiActivityRegisterTimestampCallback(timestamp_cb);
    cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
    cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);

    int need_cb = g.backtrace || g.capture == CAP_PROFILER || g.capture == CAP_NVTX;
    g.subscribed = 0;
    if (need_cb && cuptiSubscribe(&g.sub, on_callback, NULL) != CUPTI_SUCCESS)
        g.subscribed = -1;   /* another CUPTI client (or tool) holds the subscriber */
    else if (need_cb) {
        g.subscribed = 1;
        if (g.capture == CAP_PROFILER) {
            cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStart_v4000);
            cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API,
                                CUPTI_RUNTIME_TRACE_CBID_cudaProfilerStop_v4000);
            cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStart);
            cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuProfilerStop);
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
                cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_NVTX, ids[i]);
        }
        if (g.backtrace) {
            for (CUpti_CallbackId id = 1; id < 1024; id++) {
                if (is_launch(CUPTI_CB_DOMAIN_RUNTIME_API, id))
                    cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_RUNTIME_API, id);
                if (is_launch(CUPTI_CB_DOMAIN_DRIVER_API, id))
                    cuptiEnableCallback(1, g.sub, CUPTI_CB_DOMAIN_DRIVER_API, id);
            }
        }
    }

    if (cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_DEVICE) != CUPTI_SUCCESS)
        enable(CUPTI_ACTIVITY_KIND_DEVICE);
    if (cuptiActivityEnableAndDump(CUPTI_ACTIVITY_KIND_CONTEXT) != CUPTI_SUCCESS)
        enable(CUPTI_ACTIVITY_KIND_CONTEXT);
    enable(CUPTI_ACTIVITY_KIND_STREAM);
    if (kind_on("kernel"))
        enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (kind_on("runtime")) {
        enable(CUPTI_ACTIVITY_KIND_RUNTIME);
        /* after enabling the kind: RUNTIME overrides per-cbid settings made before it */
        static const CUpti_CallbackId chatty[] = {
            CUPTI_RUNTIME_TRACE_CBID_cudaGetDevice_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaGetLastError_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaPeekAtLastError_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaEventQuery_v3020,
            CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020};
        for (size_t i = 0; i < sizeof chatty / sizeof chatty[0]; i++)
            cuptiActivityEnableRuntimeApi(chatty[i], 0);
    }
    if (kind_on("driver")) {
        int ok = 1;
        for (CUpti_CallbackId id = 1; id < 1024; id++)
            if (is_launch(CUPTI_CB_DOMAIN_DRIVER_API, id)
                && cuptiActivityEnableDriverApi(id, 1) != CUPTI_SUCCESS)
                ok = 0;
        if (!ok)
            enable(CUPTI_ACTIVITY_KIND_DRIVER);
    }
    if (kind_on("memcpy")) {
        enable(CUPTI_ACTIVITY_KIND_MEMCPY);
        enable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    }
    if (kind_on("memset"))
        enable(CUPTI_ACTIVITY_KIND_MEMSET);
    if (kind_on("sync"))
        enable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (kind_on("nvtx")) {
        enable(CUPTI_ACTIVITY_KIND_MARKER);
        enable(CUPTI_ACTIVITY_KIND_NAME);
    }
    if (kind_on("overhead"))
        enable(CUPTI_ACTIVITY_KIND_OVERHEAD);
}

static int init_locked(void)
{
    g.pid = getpid();
    const char *only = getenv("TRACE_RECORD_ONLY_PID");
    if (only && *only && atol(only) != (long)getpid()) {
        g.disabled = 1;   /* --no-children: a descendant of the recorded program */
        return 0;
    }
    g.buf_size = (size_t)env_u64("TRACE_RECORD_BUFFER_SIZE", 8u << 20);
    if (g.buf_size < 65536)
        g.buf_size = 65536;
    g.buf_size = tr_raw_pad8(g.buf_size);
    g.pool_cap = (size_t)env_u64("TRACE_RECORD_POOL_BUFFERS", 32);
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
        pool_buf *b = aligned_alloc(64, sizeof(pool_buf) + g.buf_size);
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
    setup_cupti();
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

static void init_once(void)
{
    static int registered;
    pthread_mutex_lock(&g.init_mu);
    if (!g.inited) {
        g.inited = 1;
        if (!registered) {
            registered = 1;
            pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
            atexit(shutdown_recorder);
        }
        init_locked();
    }
    pthread_mutex_unlock(&g.init_mu);
}

EXPORT int InitializeInjection(void);
int InitializeInjection(void)
{
    init_once();
    return 1;
}

typedef const void *(*nvtx_get_export_table_fn)(uint32_t);
typedef int (*nvtx_init_fn)(nvtx_get_export_table_fn);

EXPORT int InitializeInjectionNvtx2(nvtx_get_export_table_fn get);
int InitializeInjectionNvtx2(nvtx_get_export_table_fn get)
{
    init_once();
    if (g.disabled)
        return 0;
    /* forward to the libcupti already mapped (ours is linked by soname) */
    void *h = dlopen("libcupti.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcupti.so.13", RTLD_NOW);
    nvtx_init_fn fn = h ? (nvtx_init_fn)dlsym(h, "InitializeInjectionNvtx2") : NULL;
    return fn ? fn(get) : 0;
}
