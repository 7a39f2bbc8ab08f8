/*
 * sqlite_format.h - what lib/btree_append.c (the writer) and lib/btree_read.c
 * (the reader) both take from SQLite's file format
 * (https://www.sqlite.org/fileformat2.html, section 1.6): the b-tree page
 * types, big-endian integers, and how much of a table row's payload stays
 * on its leaf.  One definition, so the two cannot disagree on a page.
 * Header-only (static inline); nothing to own.
 */
#ifndef TR_LIB_SQLITE_FORMAT_H
#define TR_LIB_SQLITE_FORMAT_H

#include <stddef.h>
#include <stdint.h>

enum { LEAF_TABLE = 0x0D, INTERIOR_TABLE = 0x05, LEAF_INDEX = 0x0A, INTERIOR_INDEX = 0x02 };

#define SQLITE_FORMAT_MAX_LENGTH 1000000000   /* SQLite's default SQLITE_MAX_LENGTH */

static inline uint32_t get2(const unsigned char *p) { return (uint32_t)p[0] << 8 | p[1]; }
static inline uint32_t get4(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The largest payload a table leaf's cell holds without overflow pages, on
 * pages of `usable` bytes. */
static inline uint64_t table_max_local(uint64_t usable) { return usable - 35; }

/* The part of a table row's payload of p bytes that stays on its leaf when
 * the rest goes to overflow pages. */
static inline uint64_t table_local(uint64_t usable, uint64_t p)
{
    uint64_t x = table_max_local(usable), m = (usable - 12) * 32 / 255 - 23;
    uint64_t k = m + (p - m) % (usable - 4);
    return p <= x ? p : k <= x ? k : m;
}

#endif
