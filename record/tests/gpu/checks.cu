// checks.cu - CUDA activity whose recording the GPU checks inspect
// (record/tests/gpu/run_gpu.sh, part C).
//
// usage: checks memcpy N   N host-to-device and N device-to-host cudaMemcpy of 1 MiB:
//                          every copy must join to its cudaMemcpy call
//        checks poll       a kernel that spins about 50 ms, polled with cudaStreamQuery
//                          until done, then cudaStreamSynchronize: the queries must
//                          not count as waits and the trace must stay small
//        checks internal   cudaMemset2D on a pitched buffer and a cudaMemcpy2D, which
//                          CUDA may run as kernels it launches itself
// Prints one JSON line with what the recording must show.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cuda_runtime.h>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            fprintf(stderr, "checks: %s: %s\n", #x, cudaGetErrorString(e_));              \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

__global__ void spin(long long cycles)
{
    long long t0 = clock64();
    while (clock64() - t0 < cycles)
        ;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "memcpy";
    if (!strcmp(mode, "memcpy")) {
        int n = argc > 2 ? atoi(argv[2]) : 50;
        size_t bytes = 1 << 20;
        char *h = (char *)malloc(bytes), *d;
        memset(h, 1, bytes);
        CHECK(cudaMalloc(&d, bytes));
        for (int i = 0; i < n; i++) {
            CHECK(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice));
            CHECK(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost));
        }
        printf("{\"memcpy\": %d}\n", 2 * n);
        return 0;
    }
    if (!strcmp(mode, "poll")) {
        cudaStream_t s;
        CHECK(cudaStreamCreate(&s));
        int rate = 0;
        CHECK(cudaDeviceGetAttribute(&rate, cudaDevAttrClockRate, 0));   // kHz
        spin<<<1, 1, 0, s>>>((long long)rate * 50);                      // about 50 ms
        long polls = 0;
        cudaError_t e;
        while ((e = cudaStreamQuery(s)) == cudaErrorNotReady)
            polls++;
        CHECK(e);
        CHECK(cudaStreamSynchronize(s));
        printf("{\"polls\": %ld, \"waits\": 1}\n", polls + 1);
        return 0;
    }
    if (!strcmp(mode, "internal")) {
        char *d;
        size_t pitch;
        CHECK(cudaMallocPitch(&d, &pitch, 1000, 1000));
        CHECK(cudaMemset2D(d, pitch, 0, 1000, 1000));
        char *e;
        size_t pe;
        CHECK(cudaMallocPitch(&e, &pe, 1000, 1000));
        CHECK(cudaMemcpy2D(e, pe, d, pitch, 1000, 1000, cudaMemcpyDeviceToDevice));
        CHECK(cudaDeviceSynchronize());
        printf("{}\n");
        return 0;
    }
    fprintf(stderr, "checks: unknown mode %s\n", mode);
    return 2;
}
