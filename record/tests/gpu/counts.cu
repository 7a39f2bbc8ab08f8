// counts.cu - a CUDA program with exactly known activity counts, for checking
// trace-record on a GPU (record/tests/gpu/run_gpu.sh).
//
// usage: counts [ITERS] [--profiler] [--start-end [--wide | --registered]] [--term]
// Prints one JSON line with the counts the recorder must find:
//   kernels 2*ITERS (vec_add ITERS, scale ITERS), all on one non-default stream;
//   launch API calls (__cudaLaunchKernel, cbid 505) 2*ITERS, one kernel each;
//   memsets 2; memcpys 1 (DtoH, 4 bytes); NVTX ranges ITERS+1 ("setup", which
//   starts before CUDA is initialised, and ITERS "iter"); NVTX marks 1.
// With --profiler, cudaProfilerStart/Stop enclose iterations [10, 20): a
// --capture-range cudaProfilerApi recording keeps 20 kernels.  With --start-end,
// nvtxRangeStartA/End("window") enclose the same iterations (--nvtx-capture window);
// --wide makes it nvtxRangeStartW(L"window"), --registered an nvtxDomainRangeStartEx
// whose message is a string registered with nvtxDomainRegisterStringA.
// With --term the program ends by raising SIGTERM after printing its counts.
#include <cstdio>
#include <cstdlib>
#include <csignal>
#include <cstring>
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

__global__ void vec_add(const float *a, const float *b, float *c, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] = a[i] + b[i];
}

__global__ void scale(float *c, float s, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n)
        c[i] *= s;
}

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "counts: %s: %s\n", #x, cudaGetErrorString(e_));              \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

enum window_form { WINDOW_ASCII, WINDOW_WIDE, WINDOW_REGISTERED };
static nvtxDomainHandle_t window_domain;

static nvtxRangeId_t window_start(window_form form)
{
    if (form == WINDOW_WIDE)
        return nvtxRangeStartW(L"window");
    if (form == WINDOW_REGISTERED) {
        window_domain = nvtxDomainCreateA("counts");
        nvtxEventAttributes_t at;
        memset(&at, 0, sizeof at);
        at.version = NVTX_VERSION;
        at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
        at.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
        at.message.registered = nvtxDomainRegisterStringA(window_domain, "window");
        return nvtxDomainRangeStartEx(window_domain, &at);
    }
    return nvtxRangeStartA("window");
}

static void window_end(window_form form, nvtxRangeId_t id)
{
    if (form == WINDOW_REGISTERED)
        nvtxDomainRangeEnd(window_domain, id);
    else
        nvtxRangeEnd(id);
}

int main(int argc, char **argv)
{
    int iters = 100, profiler = 0, start_end = 0, term = 0;
    window_form form = WINDOW_ASCII;
    nvtxRangeId_t window = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profiler"))
            profiler = 1;
        else if (!strcmp(argv[i], "--start-end"))
            start_end = 1;
        else if (!strcmp(argv[i], "--term"))
            term = 1;
        else if (!strcmp(argv[i], "--wide"))
            form = WINDOW_WIDE;
        else if (!strcmp(argv[i], "--registered"))
            form = WINDOW_REGISTERED;
        else
            iters = atoi(argv[i]);
    }
    const int n = 1 << 20;
    size_t bytes = n * sizeof(float);
    float *a, *b, *c;
    nvtxRangePushA("setup");   // before cuInit: the NVTX door initialises the recorder
    CHECK(cudaMalloc(&a, bytes));
    CHECK(cudaMalloc(&b, bytes));
    CHECK(cudaMalloc(&c, bytes));
    CHECK(cudaMemset(a, 0, bytes));
    CHECK(cudaMemset(b, 0, bytes));
    nvtxRangePop();
    cudaStream_t s;
    CHECK(cudaStreamCreate(&s));
    for (int it = 0; it < iters; ++it) {
        if (profiler && it == 10)
            cudaProfilerStart();
        if (start_end && it == 10)
            window = window_start(form);
        nvtxRangePushA("iter");
        vec_add<<<(n + 255) / 256, 256, 0, s>>>(a, b, c, n);
        scale<<<(n + 255) / 256, 256, 0, s>>>(c, 2.0f, n);
        nvtxRangePop();
        if (profiler && it == 19) {
            cudaStreamSynchronize(s);
            cudaProfilerStop();
        }
        if (start_end && it == 19) {
            cudaStreamSynchronize(s);
            window_end(form, window);
        }
    }
    float h = 0;
    CHECK(cudaMemcpyAsync(&h, c, sizeof(float), cudaMemcpyDeviceToHost, s));
    CHECK(cudaStreamSynchronize(s));
    nvtxMarkA("done");
    printf("{\"kernels\": %d, \"vec_add\": %d, \"scale\": %d, \"launch_api\": %d, \"memset\": 2, "
           "\"memcpy\": 1, \"memcpy_bytes\": 4, \"ranges\": %d, \"marks\": 1, \"streams\": 1}\n",
           2 * iters, iters, iters, 2 * iters, iters + 1);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    cudaStreamDestroy(s);
    if (term) {
        fflush(stdout);
        raise(SIGTERM);
    }
    return 0;
}
