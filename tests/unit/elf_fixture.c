/* The hand-made ELF object of elf_fixture.h, written field by field in
 * little-endian order. */
#include <elf.h>
#include <stdint.h>
#include <string.h>

#include "tests/unit/elf_fixture.h"

static void st16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}

static void st32(unsigned char *p, uint32_t v)
{
    st16(p, (uint16_t)v);
    st16(p + 2, (uint16_t)(v >> 16));
}

static void st64(unsigned char *p, uint64_t v)
{
    st32(p, (uint32_t)v);
    st32(p + 4, (uint32_t)(v >> 32));
}

static void sym(unsigned char *p, uint32_t name, unsigned bind, unsigned type, uint16_t shndx,
                uint64_t value, uint64_t size)
{
    st32(p, name);
    p[4] = (unsigned char)(bind << 4 | type);
    p[5] = 0;
    st16(p + 6, shndx);
    st64(p + 8, value);
    st64(p + 16, size);
}

static void shdr(unsigned char *p, uint32_t type, uint64_t off, uint64_t size, uint32_t link,
                 uint64_t align, uint64_t entsize)
{
    memset(p, 0, 64);
    st32(p + 4, type);
    st64(p + 24, off);
    st64(p + 32, size);
    st32(p + 40, link);
    st64(p + 48, align);
    st64(p + 56, entsize);
}

size_t tr_test_tiny_elf(unsigned char *b, int with_pt_note)
{
    memset(b, 0, TR_TEST_TINY_CAP);
    size_t phoff = 64, nph = with_pt_note ? 2 : 1;
    size_t note = phoff + 56 * nph;
    static const unsigned char id[8] = {0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4};
    st32(b + note, 4);
    st32(b + note + 4, sizeof id);
    st32(b + note + 8, NT_GNU_BUILD_ID);
    memcpy(b + note + 12, "GNU", 4);
    memcpy(b + note + 16, id, sizeof id);
    size_t note_len = 24;
    static const char strs[] = "\0f\0__f_alias\0g\0h\0obj\0undef\0ifn\0k\0zero"
                               "\0_Z3fooi\0ver@@V_1\0bad";
    size_t str = note + note_len, str_len = sizeof strs - 1;   /* "bad" unterminated */
    memcpy(b + str, strs, str_len);
    size_t symtab = (str + str_len + 7) & ~(size_t)7, nsym = 13;
    unsigned char *s = b + symtab;
    const uint64_t v = TR_TEST_TINY_VADDR;
    sym(s + 24 * 0, 0, 0, 0, 0, 0, 0);
    sym(s + 24 * 1, 1, STB_WEAK, STT_FUNC, 1, v, 0x10);                  /* f */
    sym(s + 24 * 2, 3, STB_GLOBAL, STT_FUNC, 1, v, 0x10);                /* __f_alias */
    sym(s + 24 * 3, 13, STB_GLOBAL, STT_FUNC, 1, v + 0x100, 0);          /* g */
    sym(s + 24 * 4, 15, STB_WEAK, STT_FUNC, 1, v + 0x200, 0);            /* h */
    sym(s + 24 * 5, 17, STB_GLOBAL, STT_OBJECT, 1, v + 0x300, 8);        /* obj */
    sym(s + 24 * 6, 21, STB_GLOBAL, STT_FUNC, SHN_UNDEF, v + 0x380, 0);  /* undef */
    sym(s + 24 * 7, 27, STB_GLOBAL, STT_GNU_IFUNC, 1, v + 0x400, 0x20);  /* ifn */
    sym(s + 24 * 8, 31, STB_LOCAL, STT_FUNC, 1, v + 0x800, 0);           /* k */
    sym(s + 24 * 9, 33, STB_GLOBAL, STT_FUNC, 1, 0, 0);                  /* zero */
    sym(s + 24 * 10, 55, STB_GLOBAL, STT_FUNC, 1, v + 0x900, 0);         /* bad */
    sym(s + 24 * 11, 38, STB_GLOBAL, STT_FUNC, 1, v + 0x600, 0x10);      /* _Z3fooi */
    sym(s + 24 * 12, 46, STB_GLOBAL, STT_FUNC, 1, v + 0x700, 0x10);      /* ver@@V_1 */
    size_t sh = symtab + 24 * nsym, nsh = 5;
    shdr(b + sh + 64 * 0, SHT_NULL, 0, 0, 0, 0, 0);
    shdr(b + sh + 64 * 1, SHT_PROGBITS, 0x1000, 0x1000, 0, 16, 0);
    shdr(b + sh + 64 * 2, SHT_SYMTAB, symtab, 24 * nsym, 3, 8, 24);
    shdr(b + sh + 64 * 3, SHT_STRTAB, str, str_len, 0, 1, 0);
    shdr(b + sh + 64 * 4, SHT_NOTE, note, note_len, 0, 4, 0);
    memcpy(b, ELFMAG, SELFMAG);
    b[EI_CLASS] = ELFCLASS64;
    b[EI_DATA] = ELFDATA2LSB;
    b[EI_VERSION] = EV_CURRENT;
    st16(b + 16, ET_DYN);
    st16(b + 18, EM_X86_64);
    st32(b + 20, EV_CURRENT);
    st64(b + 32, phoff);
    st64(b + 40, sh);
    st16(b + 52, 64);
    st16(b + 54, 56);
    st16(b + 56, (uint16_t)nph);
    st16(b + 58, 64);
    st16(b + 60, (uint16_t)nsh);
    unsigned char *ph = b + phoff;
    st32(ph, PT_LOAD);
    st32(ph + 4, PF_R | PF_X);
    st64(ph + 8, 0x1000);
    st64(ph + 16, TR_TEST_TINY_VADDR);
    st64(ph + 24, TR_TEST_TINY_VADDR);
    st64(ph + 32, 0x1000);
    st64(ph + 40, 0x1000);
    st64(ph + 48, 0x1000);
    if (with_pt_note) {
        ph += 56;
        st32(ph, PT_NOTE);
        st64(ph + 8, note);
        st64(ph + 16, note);
        st64(ph + 32, note_len);
        st64(ph + 40, note_len);
        st64(ph + 48, 4);
    }
    return sh + 64 * nsh;
}
