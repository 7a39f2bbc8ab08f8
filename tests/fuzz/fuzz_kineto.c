/*
 * fuzz_kineto.c - libFuzzer target for the Kineto chrome-trace reader.
 *
 * The bytes are read from memory as a whole document (tr_kineto_read_mem:
 * the same tokenizer and event mapping as files), then the tree is rebuilt.
 *
 * Build and run (from the repository root, no Makefile needed; the first corpus
 * directory receives new inputs, the seeds stay untouched):
 *
 *   clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -iquote . \
 *       tests/fuzz/fuzz_kineto.c $(find lib ingest -name '*.c' ! -name main.c) \
 *       $(pkg-config --cflags --libs libcjson zlib sqlite3 libpcre2-8) -lstdc++ -lm \
 *       -o /tmp/fuzz-kineto
 *   mkdir -p /tmp/fuzz-kineto-corpus
 *   /tmp/fuzz-kineto -max_total_time=60 -max_len=4096 /tmp/fuzz-kineto-corpus tests/fuzz/corpus/kineto
 */
#include <stddef.h>
#include <stdint.h>

#include "ingest/kineto.h"
#include "lib/model.h"
#include "lib/tree.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tr_trace t;
    tr_error err;
    if (tr_trace_init(&t, &err) != TR_OK)
        return 0;
    if (tr_kineto_read_mem(&t, "fuzz.json", data, size, NULL, &err) == TR_OK)
        tr_tree_build(&t, &err);
    tr_trace_free(&t);
    return 0;
}
