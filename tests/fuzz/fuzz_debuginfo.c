/*
 * fuzz_debuginfo.c - libFuzzer target for the DWARF source locations of
 * native frames (lib/debuginfo.c, through elfutils' libdwfl).
 *
 * Build and run (from the repository root):
 *   make fuzz
 *   cp -r tests/fuzz/corpus/debuginfo /tmp/fz-dw       # keep the seeds unchanged
 *   build-fuzz/fuzz/fuzz_debuginfo -max_total_time=60 /tmp/fz-dw tests/fuzz/corpus/debuginfo
 *
 * The input is an object file (a memfd, opened by libdwfl by its path): every
 * lookup must return, never crash, leak or hang, and what it returns must
 * keep its promises: at most the locations asked for, only the outermost
 * one without a function name, each file a base name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/debuginfo.h"
#include "lib/elf_symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

static void check(tr_debuginfo *d, uint64_t vaddr)
{
    tr_srcloc loc[4];
    size_t n = tr_debuginfo_lookup(d, vaddr, loc, 4);
    if (n > 4)
        abort();
    for (size_t i = 0; i < n; i++) {
        if ((loc[i].func == NULL) != (i == n - 1) || (loc[i].file && strchr(loc[i].file, '/')))
            abort();
        sink += loc[i].line + (loc[i].file ? strlen(loc[i].file) : 0)
                + (loc[i].func ? strlen(loc[i].func) : 0);
    }
    const char *f = tr_debuginfo_function(d, vaddr);
    sink += f ? strlen(f) : 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz_debuginfo", 0);
        if (fd < 0)
            return 0;
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        return 0;
    /* the addresses to look up: the symbols' own, as native frames ask */
    tr_elf e;
    tr_error err;
    int have = tr_elf_load(&e, data, size, &err) == TR_OK;
    tr_debuginfo *d;
    if (tr_debuginfo_open(&d, path, have ? e.build_id : NULL, have ? e.build_id_len : 0,
                          "/nonexistent-debug-root", &err) == TR_OK) {
        sink += (size_t)tr_debuginfo_has_functions(d);
        for (size_t i = 0; have && i < e.nsyms && i < 64; i++) {
            check(d, e.syms[i].addr);
            check(d, e.syms[i].addr + (e.syms[i].end - e.syms[i].addr) / 2);
        }
        check(d, 0);
        check(d, UINT64_MAX);
    }
    tr_debuginfo_free(d);
    tr_elf_free(&e);
    return 0;
}
