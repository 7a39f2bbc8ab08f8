/*
 * nvtx_only.c - a program that uses NVTX and never CUDA, for the recorder's
 * test with the real libcupti on a machine without a GPU: CUPTI cannot start
 * there, so the recorder must record these ranges itself.
 *
 * Per run: 10 push/pop ranges "step" each holding a wide push "inner", 1
 * start/end range "epoch", 1 domain range in "mydomain" named by a registered
 * string "registered", and 1 mark "ready": 22 ranges and 1 mark.
 * The main thread is named "nvtx-main" with nvtxNameOsThreadA.
 * With --fork, a child forked without exec then opens 5 ranges "child".
 */
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    nvtxNameOsThreadA((uint32_t)syscall(SYS_gettid), "nvtx-main");
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
    if (argc > 1 && !strcmp(argv[1], "--fork")) {
        fflush(stdout);
        pid_t p = fork();
        if (p == 0) {
            for (int i = 0; i < 5; i++) {
                nvtxRangePushA("child");
                nvtxRangePop();
            }
            return 0;
        }
        int st = 0;
        if (p < 0 || waitpid(p, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
            return 1;
    }
    puts("nvtx_only: done");
    return 0;
}
