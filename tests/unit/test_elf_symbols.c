/* ELF symbol reader: this binary's own symbols and build-id, a hand-made object
 * with every symbol shape, refused headers, truncation and mutation. */
#include <elf.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/elf_symbols.h"
#include "tests/unit/elf_fixture.h"
#include "tests/unit/unit.h"

/* Kept out of line so that it has an address and a symbol of its own. */
__attribute__((noinline)) static int elf_test_target(volatile int *x)
{
    return *x * 3 + 1;
}

typedef struct {
    void *d;
    size_t len;
} mapped;

static mapped map_path(const char *path)
{
    mapped m = {NULL, 0};
    int fd = open(path, O_RDONLY);
    struct stat sb;
    if (fd >= 0 && fstat(fd, &sb) == 0 && sb.st_size > 0) {
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED)
            m = (mapped){p, (size_t)sb.st_size};
    }
    if (fd >= 0)
        close(fd);
    return m;
}

/* The maps line of this process that holds addr: its start, file offset and path. */
static int maps_line_of(uint64_t addr, uint64_t *lo, uint64_t *off, char *path, size_t pathlen)
{
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f)
        return 0;
    char line[4608];
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long long a, b, o;
        int pos = 0;
        if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &a, &b, &o, &pos) < 3 || !pos)
            continue;
        if (addr < a || addr >= b)
            continue;
        line[strcspn(line, "\n")] = 0;
        snprintf(path, pathlen, "%s", line + pos);
        *lo = a;
        *off = o;
        found = 1;
    }
    fclose(f);
    return found;
}

static void test_own_symbols(void)
{
    volatile int seven = 7;
    int (*volatile fn)(volatile int *) = elf_test_target;
    CU_ASSERT_EQUAL(fn(&seven), 22);
    uint64_t pc = (uint64_t)(uintptr_t)fn, lo, off;
    char path[4096];
    CU_ASSERT_FATAL(maps_line_of(pc, &lo, &off, path, sizeof path));
    mapped m = map_path(path);
    CU_ASSERT_FATAL(m.d != NULL);
    tr_elf e;
    tr_error err;
    CU_ASSERT_FATAL(tr_elf_load(&e, m.d, m.len, &err) == TR_OK);
    CU_ASSERT(e.has_symtab);
    CU_ASSERT(e.nsyms > 100);
    for (size_t i = 1; i < e.nsyms; i++)
        if (e.syms[i - 1].addr >= e.syms[i].addr) {
            CU_FAIL("symbols not sorted by address, or an address twice");
            break;
        }
    uint64_t vaddr;
    CU_ASSERT_FATAL(tr_elf_offset_to_vaddr(&e, pc - lo + off, &vaddr));
    const tr_elf_sym *s = tr_elf_lookup(&e, vaddr);
    CU_ASSERT_FATAL(s != NULL);
    CU_ASSERT_STRING_EQUAL(s->name, "elf_test_target");
    CU_ASSERT_EQUAL(s->addr, vaddr);
    /* the last byte of the function is still the function */
    CU_ASSERT(tr_elf_lookup(&e, s->end - 1) == s);
    /* a library function linked into the binary */
    uint64_t lpc = (uint64_t)(uintptr_t)tr_elf_lookup, llo, loff;
    CU_ASSERT_FATAL(maps_line_of(lpc, &llo, &loff, path, sizeof path));
    CU_ASSERT_FATAL(tr_elf_offset_to_vaddr(&e, lpc + 3 - llo + loff, &vaddr));
    s = tr_elf_lookup(&e, vaddr);
    CU_ASSERT(s && strcmp(s->name, "tr_elf_lookup") == 0);
    tr_elf_free(&e);
    munmap(m.d, m.len);
}

/* The build-id as readelf prints it, when readelf is installed. */
static int readelf_build_id(const char *path, char *hex, size_t size)
{
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", path);
    FILE *p = popen(cmd, "r");
    if (!p)
        return 0;
    char line[512];
    int got = 0;
    while (fgets(line, sizeof line, p)) {
        const char *b = strstr(line, "Build ID: ");
        if (b && !got) {
            snprintf(hex, size, "%s", b + 10);
            hex[strcspn(hex, "\r\n ")] = 0;
            got = 1;
        }
    }
    return pclose(p) == 0 && got;
}

static void test_build_id(void)
{
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CU_ASSERT_FATAL(n > 0);
    exe[n] = 0;
    mapped m = map_path(exe);
    CU_ASSERT_FATAL(m.d != NULL);
    tr_elf a, b;
    tr_error err;
    CU_ASSERT_FATAL(tr_elf_load(&a, m.d, m.len, &err) == TR_OK);
    CU_ASSERT_FATAL(tr_elf_load(&b, m.d, m.len, &err) == TR_OK);
    CU_ASSERT(a.build_id_len == b.build_id_len
              && (!a.build_id_len || memcmp(a.build_id, b.build_id, a.build_id_len) == 0));
    char want[256], got[256] = "";
    for (size_t i = 0; i < a.build_id_len && 2 * i + 3 < sizeof got; i++)
        sprintf(got + 2 * i, "%02x", a.build_id[i]);
    if (readelf_build_id(exe, want, sizeof want)) {
        CU_ASSERT_STRING_EQUAL(got, want);
    } else {
        printf("\n  note: readelf not available: build-id checked for stability only\n");
    }
    tr_elf_free(&a);
    tr_elf_free(&b);
    munmap(m.d, m.len);
}

static const char *name_at(const tr_elf *e, uint64_t vaddr)
{
    const tr_elf_sym *s = tr_elf_lookup(e, vaddr);
    return s ? s->name : "(none)";
}

static void test_symbol_shapes(void)
{
    unsigned char b[TR_TEST_TINY_CAP];
    for (int with_pt_note = 0; with_pt_note < 2; with_pt_note++) {
        size_t len = tr_test_tiny_elf(b, with_pt_note);
        unsigned char *img = malloc(len);
        memcpy(img, b, len);
        tr_elf e;
        tr_error err;
        CU_ASSERT_FATAL(tr_elf_load(&e, img, len, &err) == TR_OK);
        CU_ASSERT(e.has_symtab);
        CU_ASSERT_EQUAL(e.nsyms, 7);   /* f, g, h, ifn, _Z3fooi, ver@@V_1, k */
        CU_ASSERT_EQUAL(e.build_id_len, 8);
        CU_ASSERT(e.build_id && memcmp(e.build_id, "\xde\xad\xbe\xef\x01\x02\x03\x04", 8) == 0);
        /* a sized symbol covers its bytes only; of two aliases the plainer name
         * wins, even weak against global (glibc's fwrite and _IO_fwrite) */
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR - 1), "(none)");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR), "f");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0xf), "f");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x10), "(none)");
        /* size 0: up to the next symbol (objects and undefined ones do not count) */
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x100), "g");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x1ff), "g");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x200), "h");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x380), "h");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x3ff), "h");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x400), "ifn");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x41f), "ifn");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x420), "(none)");
        /* names as they are in the table: demangling is the caller's */
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x600), "_Z3fooi");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x70f), "ver@@V_1");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x710), "(none)");
        /* the last one, to the end of its segment; the unterminated name is skipped */
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x800), "k");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x900), "k");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0xfff), "k");
        CU_ASSERT_STRING_EQUAL(name_at(&e, TR_TEST_TINY_VADDR + 0x1000), "(none)");
        CU_ASSERT_STRING_EQUAL(name_at(&e, 0), "(none)");
        uint64_t v = 0;
        CU_ASSERT(tr_elf_offset_to_vaddr(&e, 0x1010, &v) && v == TR_TEST_TINY_VADDR + 0x10);
        CU_ASSERT(tr_elf_offset_to_vaddr(&e, 0x1fff, &v) && v == TR_TEST_TINY_VADDR + 0xfff);
        CU_ASSERT(!tr_elf_offset_to_vaddr(&e, 0xfff, &v));
        CU_ASSERT(!tr_elf_offset_to_vaddr(&e, 0x2000, &v));
        tr_elf_free(&e);
        free(img);
    }
}

static tr_status load_copy(const unsigned char *b, size_t len, tr_error *err)
{
    unsigned char *img = malloc(len ? len : 1);
    memcpy(img, b, len);
    tr_elf e;
    tr_status s = tr_elf_load(&e, img, len, err);
    tr_elf_free(&e);
    free(img);
    return s;
}

static void test_refused_headers(void)
{
    unsigned char b[TR_TEST_TINY_CAP];
    size_t len = tr_test_tiny_elf(b, 1);
    tr_error err;
    b[EI_CLASS] = ELFCLASS32;
    CU_ASSERT(load_copy(b, len, &err) == TR_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "64-bit") != NULL);
    tr_test_tiny_elf(b, 1);
    b[EI_DATA] = ELFDATA2MSB;
    CU_ASSERT(load_copy(b, len, &err) == TR_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "little-endian") != NULL);
    tr_test_tiny_elf(b, 1);
    b[18] = EM_PPC64, b[19] = 0;
    CU_ASSERT(load_copy(b, len, &err) == TR_ERR_INPUT);
    tr_test_tiny_elf(b, 1);
    b[1] = 'X';
    CU_ASSERT(load_copy(b, len, &err) == TR_ERR_INPUT);
    /* a symbol table whose string table lies past the end */
    tr_test_tiny_elf(b, 1);
    size_t sh = (size_t)b[40] | (size_t)b[41] << 8;
    size_t strtab_off = sh + 64 * 3 + 24;
    b[strtab_off] = (unsigned char)(len - 2), b[strtab_off + 1] = (unsigned char)((len - 2) >> 8);
    CU_ASSERT(load_copy(b, len, &err) == TR_ERR_INPUT);
    tr_test_tiny_elf(b, 1);
    CU_ASSERT(load_copy(b, len, &err) == TR_OK);
}

/* Every prefix of an image: refused until the section headers are whole,
 * never a crash (each prefix is copied to a buffer of exactly its size, so
 * the sanitizers see any read past it). */
static void test_truncated_and_garbage(void)
{
    unsigned char b[TR_TEST_TINY_CAP];
    size_t len = tr_test_tiny_elf(b, 1);
    tr_error err;
    size_t ok = 0;
    for (size_t n = 0; n <= len; n++)
        ok += load_copy(b, n, &err) == TR_OK;
    CU_ASSERT_EQUAL(ok, 1);

    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof exe - 1);
    CU_ASSERT_FATAL(el > 0);
    exe[el] = 0;
    mapped m = map_path(exe);
    CU_ASSERT_FATAL(m.d != NULL);
    size_t refused = 0, tried = 0;
    for (size_t n = 0; n < m.len; n = n < 512 ? n + 1 : n + n / 7) {
        tr_status s = load_copy(m.d, n, &err);
        CU_ASSERT(s == TR_OK || s == TR_ERR_INPUT);
        refused += s == TR_ERR_INPUT;
        tried++;
    }
    CU_ASSERT_EQUAL(refused, tried);
    CU_ASSERT(load_copy(m.d, m.len, &err) == TR_OK);
    munmap(m.d, m.len);

    /* every byte of the small object set to a few values: a status, and
     * whatever is accepted stays inside the image */
    size_t accepted = 0;
    static const unsigned char vals[] = {0x00, 0xff, 0x80, 0x7f, 0x01, 0x40};
    for (size_t i = 0; i < len; i++)
        for (size_t v = 0; v < sizeof vals; v++) {
            tr_test_tiny_elf(b, 1);
            b[i] = vals[v];
            unsigned char *img = malloc(len);
            memcpy(img, b, len);
            tr_elf e;
            tr_status s = tr_elf_load(&e, img, len, &err);
            CU_ASSERT(s == TR_OK || s == TR_ERR_INPUT);
            if (s == TR_OK) {
                accepted++;
                for (size_t k = 0; k < e.nsyms; k++) {
                    const char *nm = e.syms[k].name;
                    if (nm < (const char *)img || nm >= (const char *)img + len
                        || !memchr(nm, 0, len - (size_t)(nm - (const char *)img)))
                        CU_FAIL("a symbol name outside the image");
                    (void)tr_elf_lookup(&e, e.syms[k].addr);
                }
                if (e.build_id && (e.build_id < img || e.build_id + e.build_id_len > img + len))
                    CU_FAIL("a build-id outside the image");
            }
            tr_elf_free(&e);
            free(img);
        }
    CU_ASSERT(accepted > 0);

    /* random bytes behind a valid identification */
    uint64_t x = 0x9e3779b97f4a7c15ull;
    unsigned char r[1024];
    for (int round = 0; round < 2000; round++) {
        for (size_t i = 0; i < sizeof r; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            r[i] = (unsigned char)x;
        }
        tr_test_tiny_elf(b, 0);
        memcpy(r, b, 20);
        r[40] &= 0x3;   /* section headers within the first KiB */
        memset(r + 41, 0, 7);
        tr_status s = load_copy(r, sizeof r, &err);
        CU_ASSERT(s == TR_OK || s == TR_ERR_INPUT);
    }
}

TR_SUITE(elf_symbols,
         {"this binary's own function symbolised through its maps", test_own_symbols},
         {"build-id equals readelf's", test_build_id},
         {"sized, size-0, alias, ifunc, object and undefined symbols", test_symbol_shapes},
         {"32-bit, big-endian, other machines, bad tables refused", test_refused_headers},
         {"truncated, mutated and random images", test_truncated_and_garbage})
