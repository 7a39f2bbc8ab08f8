/*
 * nvtx_only.c - a program that uses NVTX and never CUDA, for the recorder's
 * test with the real libcupti on a machine without a GPU: CUPTI cannot start
 * there, so the recorder must record these ranges itself.
 *
 * Per run: 10 push/pop ranges "step" each holding a wide push "inner", 1
 * start/end range "epoch", 1 domain range in "mydomain" named by a registered
 * string "registered", and 1 mark "ready": 22 ranges and 1 mark.
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>

int main(void)
{
    nvtxMarkA("ready");
    nvtxRangeId_t epoch = nvtxRangeStartA("epoch");
    for (int i = 0; i < 10; i++) {
        nvtxRangePushA("step");
        nvtxRangePushW(L"inner");
        nvtxRangePop();
        nvtxRangePop();
    }
    nvtxRangeEnd(epoch);
    nvtxDomainHandle_t d = nvtxDomainCreateA("mydomain");
    nvtxStringHandle_t s = nvtxDomainRegisterStringA(d, "registered");
    nvtxEventAttributes_t at = {0};
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    at.message.registered = s;
    nvtxDomainRangePushEx(d, &at);
    nvtxDomainRangePop(d);
    puts("nvtx_only: done");
    return 0;
}
