/*
 * libFuzzer target: the Nsight Systems reader and the tree rebuild on
 * arbitrary bytes presented as an SQLite file.  Any outcome but a crash, a
 * hang or a leak is fine; a failure must come with a message.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_nsys tests/fuzz/corpus/nsys
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "ingest/ingest.h"
#include "lib/tree.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz-nsys.XXXXXX";
    if (!fuzz_write_file(path, data, size))
        return 0;
    tr_trace t;
    tr_error err;
    tr_error_clear(&err);
    tr_trace_init(&t, &err);
    tr_status st = TR_ERR_INPUT;
    int claimed = tr_nsys_probe(path, data, size);
    if (claimed)
        st = tr_nsys_read(&t, path, NULL, &err);
    if (st == TR_OK)
        st = tr_tree_build(&t, &err);
    else if (claimed && err.msg[0] == '\0')
        abort();   /* failures must say why */
    tr_trace_free(&t);
    unlink(path);
    return 0;
}
