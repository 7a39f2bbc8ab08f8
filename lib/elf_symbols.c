/*
 * elf_symbols.c - function symbols, load segments and build-id of an in-memory
 * ELF64 little-endian image (elf_symbols.h).
 *
 * Fields are read with byte-wise little-endian loads at checked offsets,
 * never through a cast struct, so any alignment and any host works and no
 * value from the image is trusted before it has been bounded.
 */
#include <elf.h>
#include <stdlib.h>
#include <string.h>

#include "lib/elf_symbols.h"

#define EHDR_SIZE 64u
#define PHDR_SIZE 56u
#define SHDR_SIZE 64u
#define SYM_SIZE 24u

static uint16_t ld16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t ld32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t ld64(const unsigned char *p)
{
    return (uint64_t)ld32(p) | (uint64_t)ld32(p + 4) << 32;
}

/* 1 if [off, off + size) lies inside an image of len bytes. */
static int within(size_t len, uint64_t off, uint64_t size)
{
    return off <= len && size <= len - off;
}

/* 1 if count entries of entsize bytes from off lie inside the image. */
static int table_within(size_t len, uint64_t off, uint64_t count, uint64_t entsize)
{
    return off <= len && entsize && count <= (len - off) / entsize;
}

typedef struct {
    const unsigned char *d;
    size_t len;
    uint64_t shoff;
    size_t shnum, shentsize;
} image;

static const unsigned char *shdr(const image *im, size_t i)
{
    return im->d + im->shoff + i * im->shentsize;
}

/* A candidate symbol before deduplication. */
typedef struct {
    uint64_t addr, size;
    const char *name;
    int sized;              /* a sized alias wins over a size-0 one */
    int rank;               /* binding: lower wins among equally plain names */
} cand;

typedef struct {
    cand *v;
    size_t n, cap;
} cands;

static int binding_rank(unsigned bind)
{
    /* Among aliases equally plain, the exported name is the one users know. */
    switch (bind) {
    case STB_GLOBAL: return 0;
    case STB_WEAK: return 1;
    case STB_LOCAL: return 2;
    default: return 3;
    }
}

/* Adds the function symbols of the symbol table in section i; 1 if the
 * table had entries, 0 if it had none, -1 when its bounds are broken, -2 on
 * out-of-memory. */
static int add_symtab(const image *im, size_t i, cands *out)
{
    const unsigned char *sh = shdr(im, i);
    uint64_t off = ld64(sh + 24), size = ld64(sh + 32), entsize = ld64(sh + 56);
    uint32_t link = ld32(sh + 40);
    if (entsize == 0)
        entsize = SYM_SIZE;
    if (entsize < SYM_SIZE || !within(im->len, off, size))
        return -1;
    uint64_t count = size / entsize;
    if (count == 0)
        return 0;
    if (link == 0 || link >= im->shnum)
        return -1;
    const unsigned char *ssh = shdr(im, link);
    if (ld32(ssh + 4) != SHT_STRTAB)
        return -1;
    uint64_t stroff = ld64(ssh + 24), strsize = ld64(ssh + 32);
    if (!within(im->len, stroff, strsize))
        return -1;
    const char *strtab = (const char *)im->d + stroff;
    for (uint64_t k = 0; k < count; k++) {
        const unsigned char *s = im->d + off + k * entsize;
        unsigned info = s[4], type = info & 0xf;
        uint32_t name = ld32(s);
        uint16_t shndx = ld16(s + 6);
        uint64_t value = ld64(s + 8), ssize = ld64(s + 16);
        /* the last address cannot start a half-open range */
        if ((type != STT_FUNC && type != STT_GNU_IFUNC) || shndx == SHN_UNDEF || value == 0
            || value == UINT64_MAX)
            continue;
        if (name == 0 || name >= strsize || !memchr(strtab + name, 0, strsize - name))
            continue;
        if (out->n == out->cap) {
            size_t nc = out->cap ? out->cap * 2 : 1024;
            cand *a = realloc(out->v, nc * sizeof *a);
            if (!a)
                return -2;
            out->v = a;
            out->cap = nc;
        }
        out->v[out->n++] = (cand){value, ssize, strtab + name, ssize != 0, binding_rank(info >> 4)};
    }
    return 1;
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    if (x->sized != y->sized)
        return x->sized ? -1 : 1;
    /* then the plainest spelling, the one users call: glibc exports fwrite as a
     * weak alias of the global _IO_fwrite, clone3 beside __GI___clone3 */
    size_t ux = strspn(x->name, "_"), uy = strspn(y->name, "_");
    if (ux != uy)
        return ux < uy ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    size_t lx = strlen(x->name), ly = strlen(y->name);
    if (lx != ly)
        return lx < ly ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* The first GNU build-id note in [off, off + size), with 4- or 8-byte
 * alignment; 1 if found. */
static int find_build_id(tr_elf *e, const unsigned char *d, size_t len, uint64_t off,
                         uint64_t size, uint64_t align)
{
    if (!within(len, off, size))
        return 0;
    uint64_t a = align == 8 ? 8 : 4;
    const unsigned char *p = d + off;
    uint64_t left = size;
    while (left >= 12) {
        uint64_t namesz = ld32(p), descsz = ld32(p + 4);
        uint32_t type = ld32(p + 8);
        uint64_t name_pad = (namesz + a - 1) & ~(a - 1), desc_pad = (descsz + a - 1) & ~(a - 1);
        if (name_pad > left - 12 || desc_pad > left - 12 - name_pad)
            return 0;
        if (type == NT_GNU_BUILD_ID && namesz == 4 && memcmp(p + 12, "GNU", 4) == 0
            && descsz > 0) {
            e->build_id = p + 12 + name_pad;
            e->build_id_len = (size_t)descsz;
            return 1;
        }
        p += 12 + name_pad + desc_pad;
        left -= 12 + name_pad + desc_pad;
    }
    return 0;
}

void tr_elf_free(tr_elf *e)
{
    free(e->loads);
    free(e->syms);
    memset(e, 0, sizeof *e);
}

static tr_status refuse(tr_elf *e, tr_error *err, const char *why)
{
    tr_elf_free(e);
    return tr_fail(err, TR_ERR_INPUT, "not a readable ELF object: %s", why);
}

static tr_status out_of_memory(tr_elf *e, tr_error *err)
{
    tr_elf_free(e);
    return tr_fail(err, TR_ERR_RUNTIME, "out of memory reading an ELF object");
}

/* Where the program headers are, from the ELF header. */
typedef struct {
    uint64_t off;
    size_t entsize, num;
} program_headers;

/* Checks the ELF header and fills im (the section headers) and ph. */
static tr_status read_header(tr_elf *e, const unsigned char *d, size_t len, image *im,
                             program_headers *ph, tr_error *err)
{
    if (len < EI_NIDENT || memcmp(d, ELFMAG, SELFMAG) != 0)
        return refuse(e, err, "no ELF magic");
    if (d[EI_CLASS] != ELFCLASS64)
        return refuse(e, err, "not a 64-bit object");
    if (d[EI_DATA] != ELFDATA2LSB)
        return refuse(e, err, "not little-endian");
    if (len < EHDR_SIZE)
        return refuse(e, err, "truncated in its header");
    e->type = ld16(d + 16);
    e->machine = ld16(d + 18);
    if (e->machine != EM_X86_64 && e->machine != EM_AARCH64)
        return refuse(e, err, "machine is neither x86-64 nor aarch64");
    uint64_t shoff = ld64(d + 40);
    size_t shentsize = ld16(d + 58), shnum = ld16(d + 60);
    *ph = (program_headers){ld64(d + 32), ld16(d + 54), ld16(d + 56)};
    *im = (image){d, len, shoff, 0, shentsize};
    /* Section 0 holds the real counts when they do not fit the header. */
    if (shoff) {
        if (shentsize < SHDR_SIZE || !table_within(len, shoff, 1, shentsize))
            return refuse(e, err, "section headers out of bounds");
        if (shnum == 0)
            shnum = ld64(d + shoff + 32) > SIZE_MAX ? SIZE_MAX : (size_t)ld64(d + shoff + 32);
        if (ph->num == PN_XNUM)
            ph->num = ld32(d + shoff + 44);
        if (!table_within(len, shoff, shnum, shentsize))
            return refuse(e, err, "section headers out of bounds");
        im->shnum = shnum;
    }
    if (ph->num && (ph->entsize < PHDR_SIZE || !table_within(len, ph->off, ph->num, ph->entsize)))
        return refuse(e, err, "program headers out of bounds");
    return TR_OK;
}

/* The load segments, and the build id from a note segment or, failing that, a note
 * section. */
static tr_status read_segments(tr_elf *e, const image *im, const program_headers *ph, tr_error *err)
{
    const unsigned char *d = im->d;
    if (ph->num && !(e->loads = malloc(ph->num * sizeof *e->loads)))
        return out_of_memory(e, err);
    for (size_t i = 0; i < ph->num; i++) {
        const unsigned char *h = d + ph->off + i * ph->entsize;
        uint32_t type = ld32(h);
        uint64_t off = ld64(h + 8), vaddr = ld64(h + 16), filesz = ld64(h + 32),
                 memsz = ld64(h + 40), align = ld64(h + 48);
        if (type == PT_NOTE && !e->build_id)
            find_build_id(e, d, im->len, off, filesz, align);
        /* A load segment's bytes are never read here (a separate debug file
         * keeps the headers but not the bytes): only its arithmetic must hold. */
        if (type == PT_LOAD && off + filesz >= off && vaddr + memsz >= vaddr && filesz <= memsz)
            e->loads[e->nloads++] = (tr_elf_segment){off, filesz, vaddr, memsz};
    }
    for (size_t i = 0; i < im->shnum && !e->build_id; i++) {
        const unsigned char *sh = shdr(im, i);
        if (ld32(sh + 4) == SHT_NOTE)
            find_build_id(e, d, im->len, ld64(sh + 24), ld64(sh + 32), ld64(sh + 48));
    }
    return TR_OK;
}

/* The function symbols of every symbol table, into c. */
static tr_status read_symtabs(tr_elf *e, const image *im, cands *c, tr_error *err)
{
    for (size_t i = 0; i < im->shnum; i++) {
        uint32_t type = ld32(shdr(im, i) + 4);
        if (type != SHT_SYMTAB && type != SHT_DYNSYM)
            continue;
        int got = add_symtab(im, i, c);
        if (got == -2)
            return out_of_memory(e, err);
        if (got < 0)
            return refuse(e, err, "symbol table out of bounds");
        if (got && type == SHT_SYMTAB)
            e->has_symtab = 1;
    }
    return TR_OK;
}

/* e->syms from the candidates: sorted by address, one per address, each with an end. */
static tr_status index_symbols(tr_elf *e, cands *c, tr_error *err)
{
    if (!c->n)
        return TR_OK;
    qsort(c->v, c->n, sizeof *c->v, cand_cmp);
    if (!(e->syms = malloc(c->n * sizeof *e->syms)))
        return out_of_memory(e, err);
    for (size_t i = 0; i < c->n; i++) {
        if (e->nsyms && e->syms[e->nsyms - 1].addr == c->v[i].addr)
            continue;
        uint64_t end = c->v[i].addr + c->v[i].size;
        e->syms[e->nsyms++] = (tr_elf_sym){c->v[i].addr, end < c->v[i].addr ? UINT64_MAX : end,
                                           c->v[i].name};
    }
    /* A symbol without a size runs to the next symbol, the last one to
     * the end of its segment: never past code that may be someone else's. */
    for (size_t i = 0; i < e->nsyms; i++) {
        tr_elf_sym *s = &e->syms[i];
        if (s->end != s->addr)
            continue;
        if (i + 1 < e->nsyms) {
            s->end = e->syms[i + 1].addr;
            continue;
        }
        s->end = s->addr + 1;
        for (size_t k = 0; k < e->nloads; k++)
            if (s->addr >= e->loads[k].vaddr && s->addr - e->loads[k].vaddr < e->loads[k].memsz)
                s->end = e->loads[k].vaddr + e->loads[k].memsz;
    }
    return TR_OK;
}

tr_status tr_elf_load(tr_elf *e, const void *data, size_t len, tr_error *err)
{
    memset(e, 0, sizeof *e);
    image im = {0};
    program_headers ph = {0};
    cands c = {0};
    tr_status st = read_header(e, data, len, &im, &ph, err);
    if (st == TR_OK)
        st = read_segments(e, &im, &ph, err);
    if (st == TR_OK)
        st = read_symtabs(e, &im, &c, err);
    if (st == TR_OK)
        st = index_symbols(e, &c, err);
    free(c.v);
    return st;
}

const tr_elf_sym *tr_elf_lookup(const tr_elf *e, uint64_t vaddr)
{
    size_t lo = 0, hi = e->nsyms;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e->syms[mid].addr <= vaddr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    const tr_elf_sym *s = &e->syms[lo - 1];
    return vaddr < s->end ? s : NULL;
}

int tr_elf_offset_to_vaddr(const tr_elf *e, uint64_t offset, uint64_t *vaddr)
{
    for (size_t i = 0; i < e->nloads; i++) {
        const tr_elf_segment *s = &e->loads[i];
        if (offset >= s->offset && offset - s->offset < s->filesz) {
            *vaddr = s->vaddr + (offset - s->offset);
            return 1;
        }
    }
    return 0;
}
