/*
 * fake_cuda.c - a stand-in libcuda.so.1 with only cuDriverGetVersion, for the
 * recorder's diagnosis of a driver older than its CUPTI: FAKE_CUDA_VERSION
 * (default 13000, as the driver reports it: 1000 * major + 10 * minor).
 */
#include <stdlib.h>

int cuDriverGetVersion(int *v);
int cuDriverGetVersion(int *v)
{
    const char *e = getenv("FAKE_CUDA_VERSION");
    if (!v)
        return 1;   /* CUDA_ERROR_INVALID_VALUE */
    *v = e && *e ? atoi(e) : 13000;
    return 0;
}
