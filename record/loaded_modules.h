/*
 * loaded_modules.h - the payload of a raw-format MODULES chunk, built from the
 * objects loaded in the calling process (dl_iterate_phdr).
 *
 * Header-only so that the agent (which links only libc and CUPTI) and the
 * bench generator build it the same way.  Each loaded ELF object with a GNU
 * build-id gives one entry {u64 addr, u16 build_id_len, u16 0, u32 0, id,
 * zero pad to 8}, addr inside its first PT_LOAD segment (docs/raw-format.md).
 *
 * Ownership: tr_loaded_modules() returns a malloc'd payload the caller frees;
 * NULL with *len = 0 when there is nothing to write or memory ran out.
 */
#ifndef TR_RECORD_LOADED_MODULES_H
#define TR_RECORD_LOADED_MODULES_H

#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/raw_format.h"

/* The GNU build-id of a loaded object, read from its PT_NOTE segments. */
static inline const unsigned char *tr_loaded_build_id(const struct dl_phdr_info *info, size_t *len)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t align = ph->p_align == 8 ? 8 : 4;
        const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
        size_t off = 0, size = ph->p_memsz;
        while (off + sizeof(ElfW(Nhdr)) <= size) {
            ElfW(Nhdr) nh;
            memcpy(&nh, p + off, sizeof nh);
            size_t name_at = off + sizeof nh;
            size_t desc_at = name_at + ((nh.n_namesz + align - 1) & ~(align - 1));
            size_t next = desc_at + ((nh.n_descsz + align - 1) & ~(align - 1));
            if (desc_at > size || nh.n_descsz > size - desc_at)
                break;
            if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4
                && memcmp(p + name_at, "GNU", 4) == 0 && nh.n_descsz > 0 && nh.n_descsz <= 64) {
                *len = nh.n_descsz;
                return p + desc_at;
            }
            off = next;
        }
    }
    return NULL;
}

typedef struct {
    unsigned char *b;
    size_t n, cap;
    int failed;
} tr_modules_buf;

static inline int tr_loaded_modules_add(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    tr_modules_buf *m = arg;
    uint64_t addr = 0;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD) {
            addr = (uint64_t)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            break;
        }
    size_t len = 0;
    const unsigned char *id = tr_loaded_build_id(info, &len);
    if (!addr || !id)
        return 0;
    size_t need = m->n + 16 + tr_raw_pad8(len);
    if (need + 8 > m->cap) {   /* 8 spare bytes: writers may pad in place */
        size_t nc = m->cap ? m->cap * 2 : 4096;
        while (nc < need + 8)
            nc *= 2;
        unsigned char *b = realloc(m->b, nc);
        if (!b) {
            m->failed = 1;
            return 1;
        }
        m->b = b;
        m->cap = nc;
    }
    unsigned char *e = m->b + m->n;
    memset(e, 0, need - m->n);
    uint16_t len16 = (uint16_t)len;
    memcpy(e, &addr, 8);
    memcpy(e + 8, &len16, 2);
    memcpy(e + 16, id, len);
    m->n = need;
    return 0;
}

static inline unsigned char *tr_loaded_modules(size_t *len)
{
    tr_modules_buf m = {0};
    dl_iterate_phdr(tr_loaded_modules_add, &m);
    if (m.failed || !m.n) {
        free(m.b);
        *len = 0;
        return NULL;
    }
    *len = m.n;
    return m.b;
}

#endif
