/*
 * fuzz_raw.c - libFuzzer target for the trace-record raw reader (ingest/readers/raw.c).
 *
 * Build and run (from the repository root):
 *   mkdir -p build-fuzz
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -iquote . \
 *       $(pkg-config --cflags sqlite3 libpcre2-8 libcjson) tests/fuzz/fuzz_raw.c \
 *       $(find lib ingest analyze export -name '[a-z]*.c' ! -name main.c) \
 *       $(pkg-config --libs sqlite3 libpcre2-8 libcjson zlib libdw) -lstdc++ -lm -o build-fuzz/fuzz_raw
 *   cp -r tests/fuzz/corpus/raw build-fuzz/corpus-raw      # keep the seeds unchanged
 *   build-fuzz/fuzz_raw -max_total_time=60 -max_len=65536 build-fuzz/corpus-raw
 *
 * Each input is handed to the reader as a file (a memfd); the reader must
 * return a status, never crash, leak or read out of bounds, and a trace it
 * accepts must also survive the tree build.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ingest/ingest.h"
#include "lib/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz_raw", 0);
        if (fd < 0)
            return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    tr_trace t;
    tr_error err;
    tr_error_clear(&err);
    if (tr_trace_init(&t, &err) != TR_OK)
        return 0;
    tr_ingest_opts o = {NULL, NULL, NULL};
    if (tr_raw_read(&t, path, &o, &err) == TR_OK)
        tr_tree_build(&t, &err);
    tr_trace_free(&t);
    return 0;
}
