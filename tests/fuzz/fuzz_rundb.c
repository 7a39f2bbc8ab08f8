/*
 * libFuzzer target: trace-analyze's and trace-export's read paths over
 * arbitrary bytes presented as a run.db (mutated SQLite files; the seeds are
 * small run.dbs made by trace-ingest).
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_rundb tests/fuzz/corpus/rundb
 */
#include <stdint.h>
#include <unistd.h>

#include "tests/fuzz/rundb_paths.h"

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
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    if (write(fd, data, size) != (ssize_t)size) {
        close(fd);
        unlink(path);
        return 0;
    }
    close(fd);
    rundb_paths_run(path);
    unlink(path);
    return 0;
}
