/*
 * nvtx.c - the NVTX injection the recorder implements itself, used when CUPTI
 * cannot record NVTX: no GPU or driver, a CUPTI that refuses to start, a
 * program that never initialises CUDA.  Ranges (push/pop, start/end), marks,
 * domains and registered strings become the same MARKER records CUPTI's
 * would (agent.c queues them for the writer).
 *
 * The NVTX loader of each NVTX instance hands InitializeInjectionNvtx2 a
 * function returning export tables; the CALLBACKS table gives, per module, an
 * array of pointers to the instance's function slots, which are filled here.
 * Slots left alone keep NVTX's no-op.  Handles (domains, registered strings)
 * are the recorder's own UTF-8 copies of their names, kept for the process.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "record/agent/agent.h"

#include <generated_nvtx_meta.h>

#define MAX_DEPTH 256

/* Open push ranges of this thread, innermost last; each domain is a stack of
 * its own, so a pop ends the innermost range of its domain. */
static __thread struct {
    const char *domain;
    uint64_t id;
} tls_stack[MAX_DEPTH];
static __thread int tls_depth;
static uint64_t next_id = 1;

/* UTF-8 from wide characters, malloc'd (NULL for NULL). */
static char *utf8_of(const wchar_t *w)
{
    if (!w)
        return NULL;
    size_t n = wcslen(w);
    char *s = malloc(4 * n + 1), *p = s;
    if (!s)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)w[i];
        if (c < 0x80) {
            *p++ = (char)c;
        } else if (c < 0x800) {
            *p++ = (char)(0xc0 | c >> 6);
            *p++ = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x10000) {
            *p++ = (char)(0xe0 | c >> 12);
            *p++ = (char)(0x80 | (c >> 6 & 0x3f));
            *p++ = (char)(0x80 | (c & 0x3f));
        } else {
            *p++ = (char)(0xf0 | (c >> 18 & 0x07));
            *p++ = (char)(0x80 | (c >> 12 & 0x3f));
            *p++ = (char)(0x80 | (c >> 6 & 0x3f));
            *p++ = (char)(0x80 | (c & 0x3f));
        }
    }
    *p = 0;
    return s;
}

static char *copy_of(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* The message of an event attribute structure, as a malloc'd string. */
static char *message_of(const nvtxEventAttributes_t *at)
{
    if (!at)
        return NULL;
    switch (at->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return copy_of(at->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return utf8_of(at->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:   /* our handles are our strings */
        return copy_of((const char *)(const void *)at->message.registered);
    default: return NULL;
    }
}

static const char *domain_name(nvtxDomainHandle_t d)
{
    return (const char *)(const void *)d;
}

static uint64_t new_id(void)
{
    return __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED);
}

static int depth_in(const char *domain)
{
    int n = 0;
    for (int i = 0; i < tls_depth; i++)
        n += tls_stack[i].domain == domain;
    return n;
}

/* Returns the depth before the push, in the range's domain, as NVTX does. */
static int push(const char *domain, char *name)
{
    uint64_t id = new_id();
    int depth = depth_in(domain);
    if (tls_depth < MAX_DEPTH) {
        tls_stack[tls_depth].domain = domain;
        tls_stack[tls_depth++].id = id;
    }
    rec_nvtx_emit(TR_RAW_MK_START, id, name, domain);
    return depth;
}

static int pop(const char *domain)
{
    for (int i = tls_depth; i-- > 0;)
        if (tls_stack[i].domain == domain) {
            rec_nvtx_emit(TR_RAW_MK_END, tls_stack[i].id, NULL, domain);
            memmove(&tls_stack[i], &tls_stack[i + 1], (size_t)(tls_depth - i - 1) * sizeof tls_stack[0]);
            tls_depth--;
            return depth_in(domain);
        }
    return -1;
}

static nvtxRangeId_t start(const char *domain, char *name)
{
    uint64_t id = new_id();
    rec_nvtx_emit(TR_RAW_MK_START, id, name, domain);
    return id;
}

/* ---------------------------------------------------------------- core */

static void NVTX_API mark_ex(const nvtxEventAttributes_t *at)
{
    rec_nvtx_emit(TR_RAW_MK_MARK, new_id(), message_of(at), NULL);
}
static void NVTX_API mark_a(const char *m)
{
    rec_nvtx_emit(TR_RAW_MK_MARK, new_id(), copy_of(m), NULL);
}
static void NVTX_API mark_w(const wchar_t *m)
{
    rec_nvtx_emit(TR_RAW_MK_MARK, new_id(), utf8_of(m), NULL);
}
static nvtxRangeId_t NVTX_API start_ex(const nvtxEventAttributes_t *at)
{
    nvtxRangeId_t id = start(NULL, message_of(at));
    nvtxRangeStartEx_params p = {at};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangeStartEx, &p, &id);
    return id;
}
static nvtxRangeId_t NVTX_API start_a(const char *m)
{
    nvtxRangeId_t id = start(NULL, copy_of(m));
    nvtxRangeStartA_params p = {m};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangeStartA, &p, &id);
    return id;
}
static nvtxRangeId_t NVTX_API start_w(const wchar_t *m)
{
    nvtxRangeId_t id = start(NULL, utf8_of(m));
    nvtxRangeStartW_params p = {m};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangeStartW, &p, &id);
    return id;
}
static void NVTX_API range_end(nvtxRangeId_t id)
{
    nvtxRangeEnd_params p = {id};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangeEnd, &p, NULL);
    rec_nvtx_emit(TR_RAW_MK_END, id, NULL, NULL);
}
static int NVTX_API push_ex(const nvtxEventAttributes_t *at)
{
    nvtxRangePushEx_params p = {at};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangePushEx, &p, NULL);
    return push(NULL, message_of(at));
}
static int NVTX_API push_a(const char *m)
{
    nvtxRangePushA_params p = {m};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangePushA, &p, NULL);
    return push(NULL, copy_of(m));
}
static int NVTX_API push_w(const wchar_t *m)
{
    nvtxRangePushW_params p = {m};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangePushW, &p, NULL);
    return push(NULL, utf8_of(m));
}
static int NVTX_API range_pop(void)
{
    int depth = pop(NULL);
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxRangePop, NULL, NULL);
    return depth;
}

/* A thread's name: the last one given wins at ingest, before the names the
 * writer samples from /proc at exit. */
static void NVTX_API name_thread_a(uint32_t tid, const char *name)
{
    rec_nvtx_thread_name(tid, copy_of(name));
}
static void NVTX_API name_thread_w(uint32_t tid, const wchar_t *name)
{
    rec_nvtx_thread_name(tid, utf8_of(name));
}

/* ---------------------------------------------------------------- core2 (domains) */

static void NVTX_API d_mark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    rec_nvtx_emit(TR_RAW_MK_MARK, new_id(), message_of(at), domain_name(d));
}
static nvtxRangeId_t NVTX_API d_start_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    nvtxRangeId_t id = start(domain_name(d), message_of(at));
    nvtxDomainRangeStartEx_params p = {d, {at}};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, &p, &id);
    return id;
}
static void NVTX_API d_end(nvtxDomainHandle_t d, nvtxRangeId_t id)
{
    nvtxDomainRangeEnd_params p = {d, {id}};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRangeEnd, &p, NULL);
    rec_nvtx_emit(TR_RAW_MK_END, id, NULL, domain_name(d));
}
static int NVTX_API d_push_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *at)
{
    nvtxDomainRangePushEx_params p = {d, {at}};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &p, NULL);
    return push(domain_name(d), message_of(at));
}
static int NVTX_API d_pop(nvtxDomainHandle_t d)
{
    int depth = pop(domain_name(d));
    nvtxDomainRangePop_params p = {d};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRangePop, &p, NULL);
    return depth;
}

/* Handles live as long as the process: NVTX has no unregistering of strings,
 * and a destroyed domain's name may still sit in a queued record.  They are
 * chained here, so that they stay reachable. */
typedef struct handle {
    struct handle *next;
    char s[];
} handle;
static handle *handles;

/* A handle holding s (taken over and freed); NULL for NULL. */
static void *handle_of(char *s)
{
    if (!s)
        return NULL;
    size_t n = strlen(s) + 1;
    handle *h = malloc(sizeof *h + n);
    if (h) {
        memcpy(h->s, s, n);
        h->next = __atomic_load_n(&handles, __ATOMIC_RELAXED);
        while (!__atomic_compare_exchange_n(&handles, &h->next, h, 1, __ATOMIC_RELEASE, __ATOMIC_RELAXED))
            ;
    }
    free(s);
    return h ? h->s : NULL;
}

static nvtxStringHandle_t NVTX_API d_register_a(nvtxDomainHandle_t d, const char *s)
{
    nvtxStringHandle_t h = (nvtxStringHandle_t)handle_of(copy_of(s));
    nvtxDomainRegisterStringA_params p = {d, s};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRegisterStringA, &p, &h);
    return h;
}
static nvtxStringHandle_t NVTX_API d_register_w(nvtxDomainHandle_t d, const wchar_t *s)
{
    nvtxStringHandle_t h = (nvtxStringHandle_t)handle_of(utf8_of(s));
    /* CUPTI's header declares this string char *; NVTX passes wchar_t * */
    nvtxDomainRegisterStringW_params p = {d, (const char *)(const void *)s};
    rec_nvtx_capture(CUPTI_CBID_NVTX_nvtxDomainRegisterStringW, &p, &h);
    return h;
}
static nvtxDomainHandle_t NVTX_API d_create_a(const char *name)
{
    return (nvtxDomainHandle_t)handle_of(copy_of(name ? name : ""));
}
static nvtxDomainHandle_t NVTX_API d_create_w(const wchar_t *name)
{
    return name ? (nvtxDomainHandle_t)handle_of(utf8_of(name)) : d_create_a("");
}
static void NVTX_API d_destroy(nvtxDomainHandle_t d)
{
    (void)d;
}
static void NVTX_API initialize(const void *reserved)
{
    (void)reserved;
}

/* ---------------------------------------------------------------- tables */

typedef struct {
    unsigned cbid;
    NvtxFunctionPointer fn;
} slot;

#define FP(f) ((NvtxFunctionPointer)(void (*)(void))(f))

static const slot core_slots[] = {
    {NVTX_CBID_CORE_MarkEx, FP(mark_ex)},         {NVTX_CBID_CORE_MarkA, FP(mark_a)},
    {NVTX_CBID_CORE_MarkW, FP(mark_w)},           {NVTX_CBID_CORE_RangeStartEx, FP(start_ex)},
    {NVTX_CBID_CORE_RangeStartA, FP(start_a)},    {NVTX_CBID_CORE_RangeStartW, FP(start_w)},
    {NVTX_CBID_CORE_RangeEnd, FP(range_end)},     {NVTX_CBID_CORE_RangePushEx, FP(push_ex)},
    {NVTX_CBID_CORE_RangePushA, FP(push_a)},      {NVTX_CBID_CORE_RangePushW, FP(push_w)},
    {NVTX_CBID_CORE_RangePop, FP(range_pop)},     {NVTX_CBID_CORE_NameOsThreadA, FP(name_thread_a)},
    {NVTX_CBID_CORE_NameOsThreadW, FP(name_thread_w)},
};

static const slot core2_slots[] = {
    {NVTX_CBID_CORE2_DomainMarkEx, FP(d_mark_ex)},
    {NVTX_CBID_CORE2_DomainRangeStartEx, FP(d_start_ex)},
    {NVTX_CBID_CORE2_DomainRangeEnd, FP(d_end)},
    {NVTX_CBID_CORE2_DomainRangePushEx, FP(d_push_ex)},
    {NVTX_CBID_CORE2_DomainRangePop, FP(d_pop)},
    {NVTX_CBID_CORE2_DomainRegisterStringA, FP(d_register_a)},
    {NVTX_CBID_CORE2_DomainRegisterStringW, FP(d_register_w)},
    {NVTX_CBID_CORE2_DomainCreateA, FP(d_create_a)},
    {NVTX_CBID_CORE2_DomainCreateW, FP(d_create_w)},
    {NVTX_CBID_CORE2_DomainDestroy, FP(d_destroy)},
    {NVTX_CBID_CORE2_Initialize, FP(initialize)},
};

static int fill(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const slot *slots,
                size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (slots[i].cbid < size && table[slots[i].cbid])
            *table[slots[i].cbid] = slots[i].fn;
    return 1;
}

int rec_nvtx_install(const void *(*get)(uint32_t))
{
    const NvtxExportTableCallbacks *cb = get ? get(NVTX_ETID_CALLBACKS) : NULL;
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    return fill(cb, NVTX_CB_MODULE_CORE, core_slots, sizeof core_slots / sizeof core_slots[0])
           && fill(cb, NVTX_CB_MODULE_CORE2, core2_slots, sizeof core2_slots / sizeof core2_slots[0]);
}
