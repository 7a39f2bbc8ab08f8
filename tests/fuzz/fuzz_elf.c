/*
 * fuzz_elf.c - libFuzzer target for the ELF symbol reader (lib/elf_symbols.c).
 *
 * Build and run (from the repository root):
 *   make fuzz
 *   cp -r tests/fuzz/corpus/elf /tmp/fz-elf            # keep the seeds unchanged
 *   build-fuzz/fuzz/fuzz_elf -max_total_time=60 /tmp/fz-elf tests/fuzz/corpus/elf
 *
 * The input is the image itself: the reader must return a status, never
 * crash, leak or read outside it, and what it accepts must keep its
 * promises: names NUL-terminated inside the image, symbols sorted by unique
 * address, each symbol found at its own address.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/elf_symbols.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile size_t sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tr_elf e;
    tr_error err;
    if (tr_elf_load(&e, data, size, &err) != TR_OK) {
        tr_elf_free(&e);
        return 0;
    }
    const char *lo = (const char *)data, *hi = lo + size;
    size_t touched = 0;   /* reading every byte lets the sanitizer check it */
    for (size_t i = 0; i < e.nsyms; i++) {
        const tr_elf_sym *s = &e.syms[i];
        if (s->name < lo || s->name >= hi || !memchr(s->name, 0, (size_t)(hi - s->name)))
            abort();
        if (s->end <= s->addr || (i && e.syms[i - 1].addr >= s->addr))
            abort();
        if (tr_elf_lookup(&e, s->addr) != s)
            abort();
        touched += strlen(s->name);
        (void)tr_elf_lookup(&e, s->end);
        (void)tr_elf_lookup(&e, s->addr - 1);
    }
    if (e.build_id) {
        if (e.build_id < data || e.build_id_len > size
            || (size_t)(e.build_id - data) > size - e.build_id_len)
            abort();
        for (size_t i = 0; i < e.build_id_len; i++)
            touched += e.build_id[i];
    }
    for (size_t i = 0; i < e.nloads; i++) {
        uint64_t v;
        if (e.loads[i].filesz && (!tr_elf_offset_to_vaddr(&e, e.loads[i].offset, &v)))
            abort();
        (void)tr_elf_offset_to_vaddr(&e, e.loads[i].offset + e.loads[i].filesz, &v);
    }
    tr_elf_free(&e);
    sink = touched;
    return 0;
}
