/*
 * fake_cupti.c - a stand-in for libcupti.so.13 for tests on machines without a GPU.
 *
 * Built with the real library's soname and symbol-version node, so the agent
 * (linked against the real libcupti) binds to it unchanged when a test program
 * has loaded it first.  It implements the Activity/Callback subset the agent
 * uses and synthesises records when the test program calls the fake_cupti_*
 * hooks.  Records sit in the buffers in a private packed layout that only
 * cuptiActivityGetNextRecord walks, as with the real library.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <generated_nvtx_meta.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <wchar.h>

#include "fake_cupti.h"

static CUpti_BuffersCallbackRequestFunc g_req;
static CUpti_BuffersCallbackCompleteFunc g_done;
static CUpti_TimestampCallbackFunc g_ts_cb;
static CUpti_CallbackFunc g_cb;
static void *g_cb_user;
static int g_subscribed;
static unsigned char g_enabled[CUPTI_ACTIVITY_KIND_COUNT];
static unsigned char g_cb_enabled[16][1024];
/* per-cbid API record switches: 0 = as the kind, 1 = on, 2 = off */
static unsigned char g_rt_set[1024], g_drv_on[1024];
static size_t g_dropped;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t g_next_corr = 1, g_next_marker = 1;
static long long g_appended, g_drop_after = -2;   /* -2: not read yet; -1: never */

/* Each thread fills a buffer of its own, as CUPTI does, so that several are in
 * flight at once; a flush completes all of them. */
/* Each thread's records go to context 1, a stream of its own (100, 101, ...),
 * which its completed buffers and its dropped records are reported for. */
typedef struct tbuf {
    uint8_t *b;
    size_t cap, used;
    uint32_t stream;
    size_t dropped;              /* not yet asked for by (context, stream) */
    struct tbuf *next;
} tbuf;
static uint32_t g_next_stream = 100;
#define FAKE_CONTEXT ((CUcontext)(uintptr_t)1)
static tbuf *g_tbufs;
static __thread tbuf *tls_buf;

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)
#define SLOT_HDR 8u   /* private layout: u64 slot size, then the record, then its strings */

/* ---------------- failure switch ----------------
 * FAKE_CUPTI_FAIL=NAME:CODE[,NAME:CODE...] makes entry point NAME (or every one
 * for *) return CODE, a CUPTI_ERROR_* name or a number, as the real library does
 * on a machine without a driver, with an old driver, or under another tool. */
static const struct { CUptiResult r; const char *name; } g_results[] = {
    {CUPTI_SUCCESS, "CUPTI_SUCCESS"},
    {CUPTI_ERROR_INVALID_PARAMETER, "CUPTI_ERROR_INVALID_PARAMETER"},
    {CUPTI_ERROR_INVALID_DEVICE, "CUPTI_ERROR_INVALID_DEVICE"},
    {CUPTI_ERROR_INVALID_CONTEXT, "CUPTI_ERROR_INVALID_CONTEXT"},
    {CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID, "CUPTI_ERROR_INVALID_EVENT_DOMAIN_ID"},
    {CUPTI_ERROR_INVALID_EVENT_ID, "CUPTI_ERROR_INVALID_EVENT_ID"},
    {CUPTI_ERROR_INVALID_EVENT_NAME, "CUPTI_ERROR_INVALID_EVENT_NAME"},
    {CUPTI_ERROR_INVALID_OPERATION, "CUPTI_ERROR_INVALID_OPERATION"},
    {CUPTI_ERROR_OUT_OF_MEMORY, "CUPTI_ERROR_OUT_OF_MEMORY"},
    {CUPTI_ERROR_HARDWARE, "CUPTI_ERROR_HARDWARE"},
    {CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT, "CUPTI_ERROR_PARAMETER_SIZE_NOT_SUFFICIENT"},
    {CUPTI_ERROR_API_NOT_IMPLEMENTED, "CUPTI_ERROR_API_NOT_IMPLEMENTED"},
    {CUPTI_ERROR_MAX_LIMIT_REACHED, "CUPTI_ERROR_MAX_LIMIT_REACHED"},
    {CUPTI_ERROR_NOT_READY, "CUPTI_ERROR_NOT_READY"},
    {CUPTI_ERROR_NOT_COMPATIBLE, "CUPTI_ERROR_NOT_COMPATIBLE"},
    {CUPTI_ERROR_NOT_INITIALIZED, "CUPTI_ERROR_NOT_INITIALIZED"},
    {CUPTI_ERROR_INVALID_METRIC_ID, "CUPTI_ERROR_INVALID_METRIC_ID"},
    {CUPTI_ERROR_INVALID_METRIC_NAME, "CUPTI_ERROR_INVALID_METRIC_NAME"},
    {CUPTI_ERROR_QUEUE_EMPTY, "CUPTI_ERROR_QUEUE_EMPTY"},
    {CUPTI_ERROR_INVALID_HANDLE, "CUPTI_ERROR_INVALID_HANDLE"},
    {CUPTI_ERROR_INVALID_STREAM, "CUPTI_ERROR_INVALID_STREAM"},
    {CUPTI_ERROR_INVALID_KIND, "CUPTI_ERROR_INVALID_KIND"},
    {CUPTI_ERROR_INVALID_EVENT_VALUE, "CUPTI_ERROR_INVALID_EVENT_VALUE"},
    {CUPTI_ERROR_DISABLED, "CUPTI_ERROR_DISABLED"},
    {CUPTI_ERROR_INVALID_MODULE, "CUPTI_ERROR_INVALID_MODULE"},
    {CUPTI_ERROR_INVALID_METRIC_VALUE, "CUPTI_ERROR_INVALID_METRIC_VALUE"},
    {CUPTI_ERROR_HARDWARE_BUSY, "CUPTI_ERROR_HARDWARE_BUSY"},
    {CUPTI_ERROR_NOT_SUPPORTED, "CUPTI_ERROR_NOT_SUPPORTED"},
    {CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED"},
    {CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_DEVICE"},
    {CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_ON_NON_P2P_DEVICES"},
    {CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS, "CUPTI_ERROR_UM_PROFILING_NOT_SUPPORTED_WITH_MPS"},
    {CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED, "CUPTI_ERROR_CDP_TRACING_NOT_SUPPORTED"},
    {CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_VIRTUALIZED_DEVICE_NOT_SUPPORTED"},
    {CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE, "CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE"},
    {CUPTI_ERROR_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"},
    {CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED, "CUPTI_ERROR_OLD_PROFILER_API_INITIALIZED"},
    {CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE, "CUPTI_ERROR_OPENACC_UNDEFINED_ROUTINE"},
    {CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED, "CUPTI_ERROR_LEGACY_PROFILER_NOT_SUPPORTED"},
    {CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"},
    {CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES, "CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES"},
    {CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED, "CUPTI_ERROR_CONFIDENTIAL_COMPUTING_NOT_SUPPORTED"},
    {CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_CMP_DEVICE_NOT_SUPPORTED"},
    {CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_MIG_DEVICE_NOT_SUPPORTED"},
    {CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_SLI_DEVICE_NOT_SUPPORTED"},
    {CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED, "CUPTI_ERROR_WSL_DEVICE_NOT_SUPPORTED"},
    {CUPTI_ERROR_INVALID_CHIP_NAME, "CUPTI_ERROR_INVALID_CHIP_NAME"},
    {CUPTI_ERROR_UNKNOWN, "CUPTI_ERROR_UNKNOWN"}
};

typedef struct { char fn[64]; CUptiResult r; } fail_rule;
static fail_rule g_fail[32];
static int g_nfail;
static pthread_once_t g_fail_once = PTHREAD_ONCE_INIT;

static void parse_fail(void)
{
    const char *e = getenv("FAKE_CUPTI_FAIL");
    while (e && *e && g_nfail < 32) {
        const char *comma = strchr(e, ','), *colon = strchr(e, ':');
        size_t len = comma ? (size_t)(comma - e) : strlen(e);
        if (colon && colon < e + len && (size_t)(colon - e) < sizeof g_fail[0].fn) {
            fail_rule *f = &g_fail[g_nfail];
            memcpy(f->fn, e, (size_t)(colon - e));
            f->fn[colon - e] = 0;
            char code[64];
            size_t cl = len - (size_t)(colon + 1 - e);
            if (cl >= sizeof code)
                cl = sizeof code - 1;
            memcpy(code, colon + 1, cl);
            code[cl] = 0;
            f->r = (CUptiResult)atoi(code);
            for (size_t i = 0; i < sizeof g_results / sizeof g_results[0]; i++)
                if (!strcmp(code, g_results[i].name))
                    f->r = g_results[i].r;
            if (f->r != CUPTI_SUCCESS)
                g_nfail++;
        }
        e = comma ? comma + 1 : NULL;
    }
}

static CUptiResult injected(const char *fn)
{
    pthread_once(&g_fail_once, parse_fail);
    for (int i = 0; i < g_nfail; i++)
        if (!strcmp(g_fail[i].fn, fn) || !strcmp(g_fail[i].fn, "*"))
            return g_fail[i].r;
    return CUPTI_SUCCESS;
}

/* FAKE_CUPTI_REENTER=NAME: entry point NAME calls the CUDA injection's
 * InitializeInjection once, as real CUPTI set-up can initialise the driver,
 * whose cuInit calls the injection: a recorder holding a lock there deadlocks. */
static void reenter(const char *fn)
{
    static int done;
    const char *e = getenv("FAKE_CUPTI_REENTER");
    if (!e || strcmp(e, fn) || __atomic_exchange_n(&done, 1, __ATOMIC_SEQ_CST))
        return;
    const char *path = getenv("CUDA_INJECTION64_PATH");
    void *h = path ? dlopen(path, RTLD_NOW) : NULL;
    int (*init)(void) = h ? (int (*)(void))dlsym(h, "InitializeInjection") : NULL;
    if (init)
        init();
}

#define FAKE_ENTRY()                           \
    do {                                       \
        reenter(__func__);                     \
        CUptiResult fr_ = injected(__func__);  \
        if (fr_ != CUPTI_SUCCESS)              \
            return fr_;                        \
    } while (0)

/* Without a timestamp callback CUPTI's timestamps are its own: here the
 * realtime clock 3 s ahead and running 20 ppm fast, so that a reader that takes
 * them for CLOCK_MONOTONIC, or for CLOCK_REALTIME, is visibly wrong. */
static uint64_t now_ns(void)
{
    if (g_ts_cb)
        return g_ts_cb();
    struct timespec r, m;
    clock_gettime(CLOCK_REALTIME, &r);
    clock_gettime(CLOCK_MONOTONIC, &m);
    uint64_t real = (uint64_t)r.tv_sec * 1000000000ull + (uint64_t)r.tv_nsec;
    uint64_t mono = (uint64_t)m.tv_sec * 1000000000ull + (uint64_t)m.tv_nsec;
    return real + 3000000000ull + mono / 50000u;
}

static size_t rec_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    case CUPTI_ACTIVITY_KIND_CONTEXT: return sizeof(CUpti_ActivityContext3);
    case CUPTI_ACTIVITY_KIND_STREAM: return sizeof(CUpti_ActivityStream);
    case CUPTI_ACTIVITY_KIND_NAME: return sizeof(CUpti_ActivityName);
    default: return 0;
    }
}

/* Completes t's buffer through whatever completion callback is registered now
 * (another client's, after a takeover). */
static void complete_locked(tbuf *t)
{
    if (!t->b)
        return;
    uint8_t *b = t->b;
    size_t cap = t->cap, used = t->used;
    CUpti_BuffersCallbackCompleteFunc done = g_done;
    t->b = NULL;
    t->cap = t->used = 0;
    pthread_mutex_unlock(&g_mu);
    done(FAKE_CONTEXT, t->stream, b, cap, used);   /* without our lock, like CUPTI's worker */
    pthread_mutex_lock(&g_mu);
}

static tbuf *my_buf_locked(void)
{
    if (!tls_buf) {
        tls_buf = calloc(1, sizeof *tls_buf);
        if (!tls_buf)
            return NULL;
        tls_buf->stream = g_next_stream++;
        tls_buf->next = g_tbufs;
        g_tbufs = tls_buf;
    }
    return tls_buf;
}

/* Like CUPTI, never loses a record silently: one that finds no buffer is
 * counted as dropped.  extra: bytes kept after the record for its strings. */
static void *append_locked(CUpti_ActivityKind k, size_t extra)
{
    size_t sz = ALIGN8(SLOT_HDR + rec_size(k) + extra);
    tbuf *t = my_buf_locked();
    /* API records are switched per cbid by the caller (api_recorded) */
    int api = k == CUPTI_ACTIVITY_KIND_RUNTIME || k == CUPTI_ACTIVITY_KIND_DRIVER;
    if (!t || !g_req || (!api && !g_enabled[k]) || rec_size(k) == 0)
        return NULL;
    if (g_drop_after == -2) {
        /* FAKE_CUPTI_DROP_AFTER=N: after N records no buffer has room (the
         * last one is completed), as when the tool's pool stays empty to the end */
        const char *e = getenv("FAKE_CUPTI_DROP_AFTER");
        g_drop_after = e && *e ? atoll(e) : -1;
    }
    if (g_drop_after >= 0 && g_appended >= g_drop_after) {
        complete_locked(t);
        t->dropped++;
        return NULL;
    }
    /* FAKE_CUPTI_DROP_EVERY=N: every Nth record is dropped, counted for its stream */
    static long long drop_every = -2;
    if (drop_every == -2) {
        const char *e = getenv("FAKE_CUPTI_DROP_EVERY");
        drop_every = e && *e ? atoll(e) : -1;
    }
    static long long seen;
    if (drop_every > 0 && ++seen % drop_every == 0) {
        t->dropped++;
        return NULL;
    }
    while (!t->b || t->used + sz > t->cap) {
        if (t->b) {
            complete_locked(t);   /* unlocks: look again after */
            continue;
        }
        size_t max = 0, cap = 0;
        uint8_t *b = NULL;
        CUpti_BuffersCallbackRequestFunc req = g_req;
        pthread_mutex_unlock(&g_mu);
        req(&b, &cap, &max);
        pthread_mutex_lock(&g_mu);
        if (!b || cap < sz) {
            if (b) {
                CUpti_BuffersCallbackCompleteFunc done = g_done;
                pthread_mutex_unlock(&g_mu);
                done(NULL, 0, b, cap, 0);
                pthread_mutex_lock(&g_mu);
            }
            t->dropped++;
            return NULL;
        }
        t->b = b;
        t->cap = cap;
        t->used = 0;
    }
    uint8_t *slot = t->b + t->used;
    memset(slot, 0, sz);
    uint64_t ssz = sz;
    memcpy(slot, &ssz, 8);
    t->used += sz;
    g_appended++;
    ((CUpti_Activity *)(slot + SLOT_HDR))->kind = k;
    return slot + SLOT_HDR;
}

/* Copies s after the record of size rsz at rec: CUPTI owns the names it hands out. */
static const char *keep_str(void *rec, size_t rsz, const char *s)
{
    if (!s)
        return NULL;
    char *d = (char *)rec + rsz;
    memcpy(d, s, strlen(s) + 1);
    return d;
}

static void fork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    for (tbuf *t = g_tbufs; t; t = t->next) {   /* the parent's buffers stay the parent's */
        t->b = NULL;
        t->cap = t->used = 0;
        t->dropped = 0;
    }
}

__attribute__((constructor)) static void fake_init(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/* ---------------- CUPTI API subset ---------------- */
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
    FAKE_ENTRY();
    if (!v)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
    if (!s)
        return CUPTI_ERROR_INVALID_PARAMETER;
    for (size_t i = 0; i < sizeof g_results / sizeof g_results[0]; i++)
        if (g_results[i].r == r) {
            *s = g_results[i].name;
            return CUPTI_SUCCESS;
        }
    *s = "CUPTI_ERROR_UNKNOWN";
    return CUPTI_ERROR_INVALID_PARAMETER;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *ts)
{
    FAKE_ENTRY();
    if (!ts)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *ts = now_ns();
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
    FAKE_ENTRY();
    if (!f)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_ts_cb = f;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                    CUpti_BuffersCallbackCompleteFunc c)
{
    FAKE_ENTRY();
    if (!r || !c)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    g_req = r;
    g_done = c;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k)
{
    FAKE_ENTRY();
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT || !rec_size(k))
        return CUPTI_ERROR_INVALID_KIND;   /* kinds this fake cannot make, as an old CUPTI */
    g_enabled[k] = 1;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind k)
{
    FAKE_ENTRY();
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT || !rec_size(k))
        return CUPTI_ERROR_INVALID_KIND;
    g_enabled[k] = 1;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k)
{
    FAKE_ENTRY();
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    g_enabled[k] = 0;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t en)
{
    FAKE_ENTRY();
    if (cbid >= 1024)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_rt_set[cbid] = en ? 1 : 2;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t en)
{
    FAKE_ENTRY();
    if (cbid >= 1024)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_drv_on[cbid] = en;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *sz, void *v)
{
    FAKE_ENTRY();
    (void)a;
    (void)sz;
    (void)v;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType t)
{
    FAKE_ENTRY();
    (void)t;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    FAKE_ENTRY();
    (void)flag;
    if (!g_done)
        return CUPTI_ERROR_INVALID_OPERATION;
    pthread_mutex_lock(&g_mu);
    for (tbuf *t = g_tbufs; t; t = t->next)
        complete_locked(t);
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
/* For (context, stream): that stream's drops not yet asked for; for (NULL, 0):
 * every drop not yet asked for, whatever its stream. */
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *d)
{
    FAKE_ENTRY();
    if (!d)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    *d = g_dropped;
    g_dropped = 0;
    for (tbuf *t = g_tbufs; t; t = t->next)
        if (!c || (c == FAKE_CONTEXT && s == t->stream)) {
            *d += t->dropped;
            t->dropped = 0;
        }
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetContextId(CUcontext c, uint32_t *id)
{
    FAKE_ENTRY();
    if (!c || !id)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *id = (uint32_t)(uintptr_t)c;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    if (!buf)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    if (*rec) {
        uint8_t *slot = (uint8_t *)*rec - SLOT_HDR;
        uint64_t ssz;
        memcpy(&ssz, slot, 8);
        off = (size_t)(slot - buf) + (size_t)ssz;
    }
    if (off + SLOT_HDR + sizeof(CUpti_Activity) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    uint64_t ssz;
    memcpy(&ssz, buf + off, 8);
    CUpti_Activity *r = (CUpti_Activity *)(buf + off + SLOT_HDR);
    if (ssz < SLOT_HDR + rec_size(r->kind) || rec_size(r->kind) == 0 || off + ssz > valid)
        return CUPTI_ERROR_INVALID_KIND;
    *rec = r;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user)
{
    FAKE_ENTRY();
    if (g_subscribed)
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    g_subscribed = 1;
    g_cb = cb;
    g_cb_user = user;
    *h = (CUpti_SubscriberHandle)(uintptr_t)1;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
    FAKE_ENTRY();
    (void)h;
    g_subscribed = 0;
    g_cb = NULL;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t en, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain d, CUpti_CallbackId id)
{
    FAKE_ENTRY();
    (void)h;
    if ((unsigned)d >= 16 || id >= 1024)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_cb_enabled[d][id] = (unsigned char)en;
    return CUPTI_SUCCESS;
}

/* ---------------- test hooks (not part of CUPTI) ---------------- */
static uint32_t tid_now(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

static int api_recorded(int driver, uint32_t cbid)
{
    if (driver)
        return g_enabled[CUPTI_ACTIVITY_KIND_DRIVER] || (cbid < 1024 && g_drv_on[cbid]);
    unsigned set = cbid < 1024 ? g_rt_set[cbid] : 0;
    return set == 1 || (set == 0 && g_enabled[CUPTI_ACTIVITY_KIND_RUNTIME]);
}

/* An API call: ENTER/EXIT callbacks, then a RUNTIME or DRIVER record (if that
 * cbid is traced); returns its correlation id.  Each call gets an id of its
 * own, a driver call made by a runtime call included. */
uint32_t fake_cupti_api_ret(int driver, uint32_t cbid, uint32_t ret)
{
    CUpti_CallbackDomain dom = driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API;
    pthread_mutex_lock(&g_mu);
    uint32_t corr = g_next_corr++;
    pthread_mutex_unlock(&g_mu);
    uint64_t t0 = now_ns();
    CUpti_CallbackData cbd;
    memset(&cbd, 0, sizeof cbd);
    uint64_t corrdata = 0;
    cbd.functionName = "fake";
    cbd.correlationId = corr;
    cbd.correlationData = &corrdata;
    if (g_cb && cbid < 1024 && g_cb_enabled[dom][cbid]) {
        cbd.callbackSite = CUPTI_API_ENTER;
        g_cb(g_cb_user, dom, cbid, &cbd);
        cbd.callbackSite = CUPTI_API_EXIT;
        g_cb(g_cb_user, dom, cbid, &cbd);
    }
    uint64_t t1 = now_ns() + 1;
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityAPI *a = api_recorded(driver, cbid)
        ? append_locked(driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME, 0)
        : NULL;
    if (a) {
        a->cbid = cbid;
        a->start = t0;
        a->end = t1;
        a->processId = (uint32_t)getpid();
        a->threadId = tid_now();
        a->correlationId = corr;
        a->returnValue = ret;
    }
    pthread_mutex_unlock(&g_mu);
    return corr;
}

uint32_t fake_cupti_api(int driver, uint32_t cbid)
{
    return fake_cupti_api_ret(driver, cbid, 0);
}

void fake_cupti_kernel(uint32_t corr, const char *name, uint32_t stream, int complete)
{
    uint64_t t = now_ns();
    size_t nl = name ? strlen(name) + 1 : 0;
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityKernel10 *k = append_locked(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, nl);
    if (k) {
        k->start = complete ? t + 100 : 0;
        k->end = complete ? t + 1100 : 0;
        k->deviceId = 0;
        k->contextId = 1;
        k->streamId = stream;
        k->gridX = 128;
        k->gridY = k->gridZ = 1;
        k->blockX = 256;
        k->blockY = k->blockZ = 1;
        k->registersPerThread = 32;
        k->correlationId = corr;
        k->name = keep_str(k, sizeof *k, name);
    }
    pthread_mutex_unlock(&g_mu);
}

/* A kernel CUDA launched by itself (a library's internal launch): an
 * INTERNAL_LAUNCH_API record and the kernel share a correlation id of their own. */
uint32_t fake_cupti_internal_launch(const char *name)
{
    pthread_mutex_lock(&g_mu);
    uint32_t corr = g_next_corr++;
    uint64_t t = now_ns();
    CUpti_ActivityAPI *a = append_locked(CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, 0);
    if (a) {
        a->cbid = 0;
        a->start = t;
        a->end = t + 50;
        a->processId = (uint32_t)getpid();
        a->threadId = tid_now();
        a->correlationId = corr;
    }
    pthread_mutex_unlock(&g_mu);
    fake_cupti_kernel(corr, name, 7, 1);
    return corr;
}

/* As CUpti_ActivityMemcpy6 defines them: correlationId is the driver call's id,
 * runtimeCorrelationId the runtime call's (0 for a copy made by the driver API). */
void fake_cupti_memcpy(uint32_t driver_corr, uint32_t runtime_corr, uint8_t kind, uint64_t bytes)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMemcpy6 *m = append_locked(CUPTI_ACTIVITY_KIND_MEMCPY, 0);
    if (m) {
        m->copyKind = kind;
        m->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m->bytes = bytes;
        m->start = t + 10;
        m->end = t + 510;
        m->contextId = 1;
        m->streamId = 7;
        m->correlationId = driver_corr;
        m->runtimeCorrelationId = runtime_corr;
    }
    pthread_mutex_unlock(&g_mu);
}

void fake_cupti_memset(uint32_t corr, uint64_t bytes, uint32_t value)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMemset4 *m = append_locked(CUPTI_ACTIVITY_KIND_MEMSET, 0);
    if (m) {
        m->value = value;
        m->bytes = bytes;
        m->start = t + 10;
        m->end = t + 210;
        m->contextId = 1;
        m->streamId = 7;
        m->correlationId = corr;
    }
    pthread_mutex_unlock(&g_mu);
}

void fake_cupti_sync_as(uint32_t corr, uint32_t type, uint32_t stream, uint32_t ret)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivitySynchronization2 *s = append_locked(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, 0);
    if (s) {
        s->type = (CUpti_ActivitySynchronizationType)type;
        s->start = t;
        s->end = t + 300;
        s->correlationId = corr;
        s->contextId = 1;
        s->streamId = stream;
        s->cudaEventId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;
        s->returnValue = ret;
    }
    pthread_mutex_unlock(&g_mu);
}

void fake_cupti_sync(uint32_t corr)
{
    fake_cupti_sync_as(corr, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, (uint32_t)-1, 0);
}

/* cudaStreamQuery as CUPTI reports it: the runtime call with its result and a
 * synchronization record of the stream carrying the same result. */
void fake_cupti_stream_query(uint32_t stream, int ready)
{
    uint32_t ret = ready ? 0 : 600;   /* cudaErrorNotReady / CUDA_ERROR_NOT_READY */
    uint32_t c = fake_cupti_api_ret(0, CUPTI_RUNTIME_TRACE_CBID_cudaStreamQuery_v3020, ret);
    fake_cupti_sync_as(c, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, stream, ret);
}

/* A second CUPTI client (torch.profiler's Kineto, another injection): it
 * registers buffer callbacks of its own, which CUPTI holds for the whole
 * process, and disables the kinds when it stops.  Buffers it did not hand out
 * are counted, not freed. */
static size_t g_second_foreign;
static void CUPTIAPI second_request(uint8_t **b, size_t *sz, size_t *max)
{
    *b = aligned_alloc(8, 1 << 16);
    *sz = *b ? 1 << 16 : 0;
    *max = 0;
}
static void CUPTIAPI second_complete(CUcontext c, uint32_t s, uint8_t *b, size_t sz, size_t valid)
{
    (void)c;
    (void)s;
    (void)valid;
    if (sz == (1 << 16))
        free(b);
    else
        __atomic_add_fetch(&g_second_foreign, 1, __ATOMIC_RELAXED);
}
void fake_cupti_second_client(int start)
{
    if (start) {
        cuptiActivityRegisterCallbacks(second_request, second_complete);
        cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    } else {
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
        static const CUpti_ActivityKind kinds[] = {
            CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_RUNTIME,
            CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
            CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            cuptiActivityDisable(kinds[i]);
    }
}

/* CUPTI's own overhead on the calling thread: a buffer flush of 2 us. */
void fake_cupti_overhead(void)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityOverhead3 *o = append_locked(CUPTI_ACTIVITY_KIND_OVERHEAD, 0);
    if (o) {
        o->overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
        o->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
        o->objectId.pt.processId = (uint32_t)getpid();
        o->objectId.pt.threadId = tid_now();
        o->start = t;
        o->end = t + 2000;
    }
    pthread_mutex_unlock(&g_mu);
}

/* Device 0, context 1, stream 7. */
void fake_cupti_context(void)
{
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityDevice5 *d = append_locked(CUPTI_ACTIVITY_KIND_DEVICE, 0);
    if (d) {
        d->id = 0;
        d->name = "Fake H100";
        d->computeCapabilityMajor = 9;
        d->computeCapabilityMinor = 0;
        d->numMultiprocessors = 132;
        d->globalMemorySize = 80ull << 30;
    }
    CUpti_ActivityContext3 *c = append_locked(CUPTI_ACTIVITY_KIND_CONTEXT, 0);
    if (c) {
        c->contextId = 1;
        c->deviceId = 0;
        c->nullStreamId = 1;
    }
    CUpti_ActivityStream *s = append_locked(CUPTI_ACTIVITY_KIND_STREAM, 0);
    if (s) {
        s->contextId = 1;
        s->streamId = 7;
    }
    pthread_mutex_unlock(&g_mu);
}

static void marker_at(uint64_t t, uint32_t id, CUpti_ActivityFlag flags, const char *name)
{
    size_t nl = name ? strlen(name) + 1 : 0;
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMarker2 *m = append_locked(CUPTI_ACTIVITY_KIND_MARKER, nl);
    if (m) {
        m->flags = flags;
        m->timestamp = t;
        m->id = id;
        m->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
        m->objectId.pt.processId = (uint32_t)getpid();
        m->objectId.pt.threadId = tid_now();
        m->name = keep_str(m, sizeof *m, name);
    }
    pthread_mutex_unlock(&g_mu);
}

static void marker(uint32_t id, CUpti_ActivityFlag flags, const char *name)
{
    marker_at(now_ns(), id, flags, name);
}

static __thread uint32_t tls_stack[64];
static __thread int tls_depth;

/* The NVTX callback of one call, if the subscriber enabled it. */
static void nvtx_callback(CUpti_CallbackId cbid, const char *fn, const void *params, const void *ret)
{
    if (g_cb && g_cb_enabled[CUPTI_CB_DOMAIN_NVTX][cbid]) {
        CUpti_NvtxData d = {fn, params, ret};
        g_cb(g_cb_user, CUPTI_CB_DOMAIN_NVTX, cbid, &d);
    }
}

/* ASCII names only, as the tests use */
static void widen(const char *s, wchar_t *w, size_t cap)
{
    size_t i = 0;
    for (; s[i] && i + 1 < cap; i++)
        w[i] = (wchar_t)(unsigned char)s[i];
    w[i] = 0;
}

/* nvtxDomainRegisterStringA/W: one handle per name for the process, as an
 * application registers a string once and reuses its handle. */
static nvtxStringHandle_t registered(const char *name, int wide)
{
    static struct { const char *name; int wide; nvtxStringHandle_t h; } reg[16];
    static int nreg;
    static pthread_mutex_t reg_mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&reg_mu);
    nvtxStringHandle_t h = NULL;
    for (int i = 0; i < nreg; i++)
        if (reg[i].wide == wide && strcmp(reg[i].name, name) == 0)
            h = reg[i].h;
    if (!h && nreg < 16) {
        h = (nvtxStringHandle_t)(uintptr_t)(0x1000 + nreg);
        reg[nreg].name = name;
        reg[nreg].wide = wide;
        reg[nreg++].h = h;
        wchar_t w[256];
        widen(name, w, 256);
        if (wide) {
            nvtxDomainRegisterStringW_params p = {NULL, (const char *)(const void *)w};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRegisterStringW, "nvtxDomainRegisterStringW", &p, &h);
        } else {
            nvtxDomainRegisterStringA_params p = {NULL, name};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, "nvtxDomainRegisterStringA", &p, &h);
        }
    }
    pthread_mutex_unlock(&reg_mu);
    return h;
}

/* The callback of a push or start of the given form; ret is the start's range id. */
static void push_or_start_callback(int start, fake_nvtx_form form, const char *name, const void *ret)
{
    wchar_t w[256];
    widen(name, w, 256);
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    switch (form) {
    case FAKE_NVTX_A:
        if (start) {
            nvtxRangeStartA_params p = {name};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxRangeStartA, "nvtxRangeStartA", &p, ret);
        } else {
            nvtxRangePushA_params p = {name};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxRangePushA, "nvtxRangePushA", &p, ret);
        }
        return;
    case FAKE_NVTX_W:
        if (start) {
            nvtxRangeStartW_params p = {w};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxRangeStartW, "nvtxRangeStartW", &p, ret);
        } else {
            nvtxRangePushW_params p = {w};
            nvtx_callback(CUPTI_CBID_NVTX_nvtxRangePushW, "nvtxRangePushW", &p, ret);
        }
        return;
    case FAKE_NVTX_EX_UNICODE:
        at.messageType = NVTX_MESSAGE_TYPE_UNICODE;
        at.message.unicode = w;
        break;
    case FAKE_NVTX_REGISTERED:
    case FAKE_NVTX_REGISTERED_W:
        at.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        at.message.registered = registered(name, form == FAKE_NVTX_REGISTERED_W);
        break;
    }
    if (start) {
        nvtxDomainRangeStartEx_params p = {NULL, {&at}};
        nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, "nvtxDomainRangeStartEx", &p, ret);
    } else {
        nvtxDomainRangePushEx_params p = {NULL, {&at}};
        nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, ret);
    }
}

/* nvtxRangePush* / nvtxRangePop as CUPTI sees them: NVTX callback, then a MARKER
 * record, whose name CUPTI has resolved to text whatever the call's form. */
void fake_cupti_push_as(fake_nvtx_form form, const char *name)
{
    /* CUPTI takes the START marker's time on entry, before the NVTX callback */
    uint64_t t = now_ns();
    push_or_start_callback(0, form, name, NULL);
    pthread_mutex_lock(&g_mu);
    uint32_t id = g_next_marker++;
    pthread_mutex_unlock(&g_mu);
    if (tls_depth < 64)
        tls_stack[tls_depth] = id;
    tls_depth++;
    marker_at(t, id, CUPTI_ACTIVITY_FLAG_MARKER_START, name);
}

void fake_cupti_push(const char *name)
{
    fake_cupti_push_as(FAKE_NVTX_A, name);
}

void fake_cupti_pop(void)
{
    if (tls_depth <= 0)
        return;
    tls_depth--;
    uint32_t id = tls_depth < 64 ? tls_stack[tls_depth] : 0;
    marker(id, CUPTI_ACTIVITY_FLAG_MARKER_END, NULL);
    nvtxRangePop_params p = {NULL};
    nvtx_callback(CUPTI_CBID_NVTX_nvtxRangePop, "nvtxRangePop", &p, NULL);
}

/* nvtxDomainRangePushEx / nvtxDomainRangePop in domain (its handle is its name
 * here): each domain's ranges nest on a stack of their own. */
static __thread struct { const char *domain; uint32_t id; } tls_dstack[64];
static __thread int tls_ddepth;

void fake_cupti_domain_push(const char *domain, const char *name)
{
    uint64_t t = now_ns();
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = name;
    nvtxDomainRangePushEx_params p = {(nvtxDomainHandle_t)(uintptr_t)domain, {&at}};
    nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, "nvtxDomainRangePushEx", &p, NULL);
    pthread_mutex_lock(&g_mu);
    uint32_t id = g_next_marker++;
    pthread_mutex_unlock(&g_mu);
    if (tls_ddepth < 64) {
        tls_dstack[tls_ddepth].domain = domain;
        tls_dstack[tls_ddepth++].id = id;
    }
    marker_at(t, id, CUPTI_ACTIVITY_FLAG_MARKER_START, name);
}

void fake_cupti_domain_pop(const char *domain)
{
    for (int i = tls_ddepth; i-- > 0;)
        if (tls_dstack[i].domain == domain) {
            marker(tls_dstack[i].id, CUPTI_ACTIVITY_FLAG_MARKER_END, NULL);
            memmove(&tls_dstack[i], &tls_dstack[i + 1], (size_t)(tls_ddepth - i - 1) * sizeof tls_dstack[0]);
            tls_ddepth--;
            break;
        }
    nvtxDomainRangePop_params p = {(nvtxDomainHandle_t)(uintptr_t)domain};
    nvtx_callback(CUPTI_CBID_NVTX_nvtxDomainRangePop, "nvtxDomainRangePop", &p, NULL);
}

/* nvtxRangeStart* / nvtxRangeEnd: CUPTI hands the start callback the new range id
 * as the call's return value; the end may come from any thread. */
uint64_t fake_cupti_range_start_as(fake_nvtx_form form, const char *name)
{
    pthread_mutex_lock(&g_mu);
    uint64_t id = g_next_marker++;
    pthread_mutex_unlock(&g_mu);
    marker((uint32_t)id, CUPTI_ACTIVITY_FLAG_MARKER_START, name);
    nvtxRangeId_t ret = id;
    /* FAKE_CUPTI_NO_RANGE_ID: a CUPTI that does not pass the id to the callback */
    const char *no_id = getenv("FAKE_CUPTI_NO_RANGE_ID");
    push_or_start_callback(1, form, name, no_id && *no_id ? NULL : &ret);
    return id;
}

uint64_t fake_cupti_range_start(const char *name)
{
    return fake_cupti_range_start_as(FAKE_NVTX_A, name);
}

void fake_cupti_range_end(uint64_t id)
{
    marker((uint32_t)id, CUPTI_ACTIVITY_FLAG_MARKER_END, NULL);
    nvtxRangeEnd_params p = {id};
    nvtx_callback(CUPTI_CBID_NVTX_nvtxRangeEnd, "nvtxRangeEnd", &p, NULL);
}

void fake_cupti_mark(const char *name)
{
    pthread_mutex_lock(&g_mu);
    uint32_t id = g_next_marker++;
    pthread_mutex_unlock(&g_mu);
    marker(id, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, name);
}

/* NVTX door of the real libcupti; counts calls so tests can check forwarding. */
int fake_cupti_nvtx_inits;
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    (void)get;
    fake_cupti_nvtx_inits++;
    return 1;
}
