/*
 * libFuzzer target: the emit_nvtx annotation parser.  Checks that the parse
 * never reads outside the message, that its pieces lie inside it, and that
 * it splits the message as the one-pattern definition does
 * (tests/nvtx_oracle.h).
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_nvtx tests/fuzz/corpus/nvtx
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/names.h"
#include "tests/nvtx_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tr_nvtx_parser *p;
    static nvtx_oracle oracle;
    if (!p && (tr_nvtx_parser_new(&p, NULL) != TR_OK || nvtx_oracle_init(&oracle) < 0))
        abort();
    char *msg = malloc(size ? size : 1);
    if (!msg)
        return 0;
    memcpy(msg, data, size);
    tr_nvtx_annotation a;
    tr_nvtx_parse(p, msg, size, &a);
    const char *end = msg + size;
    if (a.name < msg || a.name + a.name_len > end)
        abort();
    if (a.sizes && (a.sizes < msg || a.sizes + a.sizes_len > end))
        abort();
    if (size && !a.name_len)
        abort();   /* a non-empty message never yields an empty name */
    if (!nvtx_oracle_agrees(&oracle, msg, size, &a))
        abort();
    free(msg);
    return 0;
}
