/*
 * libFuzzer target: trace-analyze's and trace-export's read paths over
 * arbitrary bytes presented as a run.db (mutated SQLite files; the seeds are
 * small run.dbs made by trace-ingest).
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_rundb tests/fuzz/corpus/rundb
 */
#include <stdint.h>
#include <unistd.h>

#include "tests/fuzz/rundb_paths.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rundb_paths_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz-rundb.XXXXXX";
    if (!fuzz_write_file(path, data, size))
        return 0;
    rundb_paths_run(path);
    unlink(path);
    return 0;
}
