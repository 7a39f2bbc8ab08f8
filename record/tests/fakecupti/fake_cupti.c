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
static size_t g_dropped;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_buf;
static size_t g_cap, g_used;
static uint32_t g_next_corr = 1, g_next_marker = 1;
static long long g_appended, g_drop_after = -2;   /* -2: not read yet; -1: never */

#define ALIGN8(x) (((x) + 7u) & ~(size_t)7u)

static uint64_t now_ns(void)
{
    if (g_ts_cb)
        return g_ts_cb();
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static size_t rec_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
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

static void complete_current_locked(void)
{
    if (!g_buf)
        return;
    uint8_t *b = g_buf;
    size_t cap = g_cap, used = g_used;
    g_buf = NULL;
    g_cap = g_used = 0;
    pthread_mutex_unlock(&g_mu);
    g_done(NULL, 0, b, cap, used);   /* without our lock, like CUPTI's worker */
    pthread_mutex_lock(&g_mu);
}

/* Like CUPTI, never loses a record silently: one that finds no buffer is
 * counted as dropped. */
static void *append_locked(CUpti_ActivityKind k)
{
    size_t sz = ALIGN8(rec_size(k));
    if (!g_req || !g_enabled[k] || sz == 0)
        return NULL;
    if (g_drop_after == -2) {
        /* FAKE_CUPTI_DROP_AFTER=N: after N records no buffer has room (the
         * last one is completed), as when the tool's pool stays empty to the end */
        const char *e = getenv("FAKE_CUPTI_DROP_AFTER");
        g_drop_after = e && *e ? atoll(e) : -1;
    }
    if (g_drop_after >= 0 && g_appended >= g_drop_after) {
        complete_current_locked();
        g_dropped++;
        return NULL;
    }
    while (!g_buf || g_used + sz > g_cap) {
        if (g_buf) {
            complete_current_locked();   /* unlocks: look again after */
            continue;
        }
        size_t max = 0, cap = 0;
        uint8_t *b = NULL;
        pthread_mutex_unlock(&g_mu);
        g_req(&b, &cap, &max);
        pthread_mutex_lock(&g_mu);
        if (!b || cap < sz) {
            if (b) {
                pthread_mutex_unlock(&g_mu);
                g_done(NULL, 0, b, cap, 0);
                pthread_mutex_lock(&g_mu);
            }
            g_dropped++;
            return NULL;
        }
        if (g_buf) {   /* another thread got one meanwhile: give ours back empty */
            pthread_mutex_unlock(&g_mu);
            g_done(NULL, 0, b, cap, 0);
            pthread_mutex_lock(&g_mu);
            continue;
        }
        g_buf = b;
        g_cap = cap;
        g_used = 0;
    }
    void *p = g_buf + g_used;
    memset(p, 0, sz);
    g_used += sz;
    g_appended++;
    ((CUpti_Activity *)p)->kind = k;
    return p;
}

static void fork_child(void)
{
    pthread_mutex_init(&g_mu, NULL);
    g_buf = NULL;   /* the parent's partly filled buffer stays the parent's */
    g_cap = g_used = 0;
}

__attribute__((constructor)) static void fake_init(void)
{
    pthread_atfork(NULL, NULL, fork_child);
}

/* ---------------- CUPTI API subset ---------------- */
CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *v)
{
    if (!v)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *v = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS" : "CUPTI_ERROR(fake)";
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiGetTimestamp(uint64_t *ts)
{
    if (!ts)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *ts = now_ns();
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
    if (!f)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_ts_cb = f;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc r,
                                                    CUpti_BuffersCallbackCompleteFunc c)
{
    if (!r || !c)
        return CUPTI_ERROR_INVALID_PARAMETER;
    g_req = r;
    g_done = c;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnable(CUpti_ActivityKind k)
{
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    g_enabled[k] = 1;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableAndDump(CUpti_ActivityKind k)
{
    return cuptiActivityEnable(k);
}
CUptiResult CUPTIAPI cuptiActivityDisable(CUpti_ActivityKind k)
{
    if ((unsigned)k >= CUPTI_ACTIVITY_KIND_COUNT)
        return CUPTI_ERROR_INVALID_KIND;
    g_enabled[k] = 0;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableRuntimeApi(CUpti_CallbackId cbid, uint8_t en)
{
    (void)cbid;
    (void)en;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityEnableDriverApi(CUpti_CallbackId cbid, uint8_t en)
{
    (void)cbid;
    if (en)
        g_enabled[CUPTI_ACTIVITY_KIND_DRIVER] = 1;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivitySetAttribute(CUpti_ActivityAttribute a, size_t *sz, void *v)
{
    (void)a;
    (void)sz;
    (void)v;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSetThreadIdType(CUpti_ActivityThreadIdType t)
{
    (void)t;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    if (!g_done)
        return CUPTI_ERROR_INVALID_OPERATION;
    pthread_mutex_lock(&g_mu);
    complete_current_locked();
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNumDroppedRecords(CUcontext c, uint32_t s, size_t *d)
{
    (void)c;
    (void)s;
    if (!d)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&g_mu);
    *d = g_dropped;
    g_dropped = 0;
    pthread_mutex_unlock(&g_mu);
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiActivityGetNextRecord(uint8_t *buf, size_t valid, CUpti_Activity **rec)
{
    if (!buf)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    if (*rec)
        off = (size_t)((uint8_t *)*rec - buf) + ALIGN8(rec_size((*rec)->kind));
    if (off + sizeof(CUpti_Activity) > valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    CUpti_Activity *r = (CUpti_Activity *)(buf + off);
    size_t sz = rec_size(r->kind);
    if (sz == 0 || off + sz > valid)
        return CUPTI_ERROR_INVALID_KIND;
    *rec = r;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *user)
{
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
    (void)h;
    g_subscribed = 0;
    g_cb = NULL;
    return CUPTI_SUCCESS;
}
CUptiResult CUPTIAPI cuptiEnableCallback(uint32_t en, CUpti_SubscriberHandle h,
                                         CUpti_CallbackDomain d, CUpti_CallbackId id)
{
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

/* An API call: ENTER/EXIT callbacks, then a RUNTIME or DRIVER record; returns its correlation id. */
uint32_t fake_cupti_api(int driver, uint32_t cbid)
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
    CUpti_ActivityAPI *a = append_locked(driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME);
    if (a) {
        a->cbid = cbid;
        a->start = t0;
        a->end = t1;
        a->processId = (uint32_t)getpid();
        a->threadId = tid_now();
        a->correlationId = corr;
    }
    pthread_mutex_unlock(&g_mu);
    return corr;
}

void fake_cupti_kernel(uint32_t corr, const char *name, uint32_t stream, int complete)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityKernel10 *k = append_locked(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
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
        k->name = name;
    }
    pthread_mutex_unlock(&g_mu);
}

void fake_cupti_memcpy(uint32_t corr, uint8_t kind, uint64_t bytes)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMemcpy6 *m = append_locked(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (m) {
        m->copyKind = kind;
        m->srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
        m->dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
        m->bytes = bytes;
        m->start = t + 10;
        m->end = t + 510;
        m->contextId = 1;
        m->streamId = 7;
        m->correlationId = corr;
    }
    pthread_mutex_unlock(&g_mu);
}

void fake_cupti_memset(uint32_t corr, uint64_t bytes, uint32_t value)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMemset4 *m = append_locked(CUPTI_ACTIVITY_KIND_MEMSET);
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

void fake_cupti_sync(uint32_t corr)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivitySynchronization2 *s = append_locked(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    if (s) {
        s->type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE;
        s->start = t;
        s->end = t + 300;
        s->correlationId = corr;
        s->contextId = 1;
        s->streamId = (uint32_t)-1;
    }
    pthread_mutex_unlock(&g_mu);
}

/* Device 0, context 1, stream 7. */
void fake_cupti_context(void)
{
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityDevice5 *d = append_locked(CUPTI_ACTIVITY_KIND_DEVICE);
    if (d) {
        d->id = 0;
        d->name = "Fake H100";
        d->computeCapabilityMajor = 9;
        d->computeCapabilityMinor = 0;
        d->numMultiprocessors = 132;
        d->globalMemorySize = 80ull << 30;
    }
    CUpti_ActivityContext3 *c = append_locked(CUPTI_ACTIVITY_KIND_CONTEXT);
    if (c) {
        c->contextId = 1;
        c->deviceId = 0;
        c->nullStreamId = 1;
    }
    CUpti_ActivityStream *s = append_locked(CUPTI_ACTIVITY_KIND_STREAM);
    if (s) {
        s->contextId = 1;
        s->streamId = 7;
    }
    pthread_mutex_unlock(&g_mu);
}

static void marker(uint32_t id, CUpti_ActivityFlag flags, const char *name)
{
    uint64_t t = now_ns();
    pthread_mutex_lock(&g_mu);
    CUpti_ActivityMarker2 *m = append_locked(CUPTI_ACTIVITY_KIND_MARKER);
    if (m) {
        m->flags = flags;
        m->timestamp = t;
        m->id = id;
        m->objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
        m->objectId.pt.processId = (uint32_t)getpid();
        m->objectId.pt.threadId = tid_now();
        m->name = name;
    }
    pthread_mutex_unlock(&g_mu);
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
    push_or_start_callback(0, form, name, NULL);
    pthread_mutex_lock(&g_mu);
    uint32_t id = g_next_marker++;
    pthread_mutex_unlock(&g_mu);
    if (tls_depth < 64)
        tls_stack[tls_depth] = id;
    tls_depth++;
    marker(id, CUPTI_ACTIVITY_FLAG_MARKER_START, name);
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
