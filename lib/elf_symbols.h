/*
 * elf_symbols.h - function symbols, load segments and the GNU build-id of an
 * ELF object held in memory.
 *
 * The reader works on a caller-supplied image (a const buffer and its length,
 * typically a read-only mmap of a shared object or executable), so it never
 * does I/O and can be fed hostile bytes: every offset and size is checked
 * against the image, and anything it cannot read safely is refused with
 * TR_ERR_INPUT, never a crash.  Only ELF64 little-endian objects for x86-64
 * and aarch64 are accepted.
 *
 * Symbols are the defined functions (STT_FUNC, STT_GNU_IFUNC with a non-zero
 * value) of .symtab and .dynsym together, sorted by address with one symbol
 * per address: among aliases, one with a size, then the fewest leading
 * underscores, global before weak before local, the shortest, the first in byte
 * order, so the choice does not depend on table order.  A symbol with a size
 * covers [addr, addr + size); one without covers up to the next symbol (the
 * last one, to the end of its load segment).
 *
 * Ownership: tr_elf_load() fills a caller-owned tr_elf whose arrays are
 * malloc'd and released by tr_elf_free().  Symbol names and the build-id
 * point into the image (names are NUL-terminated inside their string table),
 * so the image must outlive every use of the tr_elf.
 */
#ifndef TR_LIB_ELF_SYMBOLS_H
#define TR_LIB_ELF_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/error.h"

typedef struct {
    uint64_t addr;
    uint64_t end;           /* one past the last address the symbol covers */
    const char *name;       /* into the image */
} tr_elf_sym;

typedef struct {
    uint64_t offset, filesz, vaddr, memsz;
} tr_elf_segment;

typedef struct {
    uint16_t type;                  /* e_type: ET_EXEC, ET_DYN, ... */
    uint16_t machine;               /* e_machine */
    tr_elf_segment *loads;          /* PT_LOAD, in header order */
    size_t nloads;
    const unsigned char *build_id;  /* into the image, or NULL */
    size_t build_id_len;
    tr_elf_sym *syms;               /* sorted by addr, unique addrs */
    size_t nsyms;
    int has_symtab;                 /* a .symtab with at least one entry was found */
} tr_elf;

/* Reads the headers, the load segments, the build-id and the function
 * symbols of image[0, len).  On failure *e is left empty (tr_elf_free is
 * still safe) and err says why. */
tr_status tr_elf_load(tr_elf *e, const void *image, size_t len, tr_error *err);
void tr_elf_free(tr_elf *e);

/* The symbol covering vaddr, or NULL. */
const tr_elf_sym *tr_elf_lookup(const tr_elf *e, uint64_t vaddr);

/* Virtual address of a file offset through the PT_LOAD headers: 1 and
 * *vaddr when a segment's file bytes hold the offset, else 0. */
int tr_elf_offset_to_vaddr(const tr_elf *e, uint64_t offset, uint64_t *vaddr);

#endif
