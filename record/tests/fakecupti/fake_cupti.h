/* fake_cupti.h - test hooks of the fake libcupti (fake_cupti.c). */
#ifndef TR_RECORD_FAKE_CUPTI_H
#define TR_RECORD_FAKE_CUPTI_H

#include <stdint.h>

uint32_t fake_cupti_api(int driver, uint32_t cbid);
uint32_t fake_cupti_api_ret(int driver, uint32_t cbid, uint32_t ret);
void fake_cupti_kernel(uint32_t corr, const char *name, uint32_t stream, int complete);
uint32_t fake_cupti_internal_launch(const char *name);
void fake_cupti_memcpy(uint32_t driver_corr, uint32_t runtime_corr, uint8_t kind, uint64_t bytes);
void fake_cupti_memset(uint32_t corr, uint64_t bytes, uint32_t value);
void fake_cupti_sync(uint32_t corr);
void fake_cupti_sync_as(uint32_t corr, uint32_t type, uint32_t stream, uint32_t ret);
void fake_cupti_stream_query(uint32_t stream, int ready);
void fake_cupti_second_client(int start);
void fake_cupti_overhead(void);
void fake_cupti_context(void);
/* The forms of an NVTX push or start: nvtxRangePushA, nvtxRangePushW, an Ex
 * call with a Unicode message, an Ex call with a string registered with
 * nvtxDomainRegisterStringA or ...W. */
typedef enum {
    FAKE_NVTX_A,
    FAKE_NVTX_W,
    FAKE_NVTX_EX_UNICODE,
    FAKE_NVTX_REGISTERED,
    FAKE_NVTX_REGISTERED_W
} fake_nvtx_form;

void fake_cupti_push(const char *name);
void fake_cupti_push_as(fake_nvtx_form form, const char *name);
void fake_cupti_pop(void);
void fake_cupti_domain_push(const char *domain, const char *name);
void fake_cupti_domain_pop(const char *domain);
void fake_cupti_mark(const char *name);
uint64_t fake_cupti_range_start(const char *name);
uint64_t fake_cupti_range_start_as(fake_nvtx_form form, const char *name);
void fake_cupti_range_end(uint64_t id);
extern int fake_cupti_nvtx_inits;
typedef const void *(*NvtxGetExportTableFunc_t)(uint32_t);
int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get);

#endif
