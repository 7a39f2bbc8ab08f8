/*
 * intern.h - a string table that gives each distinct string a small id.
 *
 * Ids start at 1; id 0 means "no string".  Strings live in an arena owned by
 * the table and stay valid (same address) until tr_intern_free().  The table
 * grows as needed; memory is the sum of distinct strings, not of lookups.
 * Its large arrays live in spill files (lib/spill.h) once they pass a few MB.
 */
#ifndef TR_LIB_INTERN_H
#define TR_LIB_INTERN_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *str;
    uint32_t len;
    uint32_t hash;
} tr_intern_entry;

typedef struct tr_arena_block tr_arena_block;

typedef struct {
    tr_intern_entry *entries;   /* index = id; entries[0] unused */
    size_t count;               /* number of ids handed out + 1 */
    size_t cap;
    uint32_t *slots;            /* open addressing, at most three quarters full:
                                   0 empty, else the id in the low id_bits and
                                   the hash's bits above them (see intern.c) */
    size_t nslots;              /* 2^id_bits, or more when id_bits is 32 */
    unsigned id_bits;
    int slots_in_file;          /* the slots are a spill file's pages (lib/spill.h) */
    tr_arena_block *arena;
    size_t arena_bytes;         /* capacity of the arena's blocks */
} tr_intern;

void tr_intern_init(tr_intern *t);
void tr_intern_free(tr_intern *t);

/* Returns the id of s[0..len), adding it if new; 0 on out-of-memory. */
uint32_t tr_intern_add(tr_intern *t, const char *s, size_t len);
uint32_t tr_intern_cstr(tr_intern *t, const char *s);
/* Asks for the memory where s[0..len) is or would go, ahead of its
 * tr_intern_add(), for a caller that sees its next strings coming; it
 * changes nothing. */
void tr_intern_prefetch(const tr_intern *t, const char *s, size_t len);
/* Adds s[i][0..len[i]) for i < n (n at most TR_INTERN_MANY) in that order, as
 * n calls of tr_intern_add() would, and puts their ids in ids[]; 0, or -1 on
 * out-of-memory or n too large.  Faster where many strings are new: each
 * one's slot is fetched from memory while those before it are added. */
#define TR_INTERN_MANY 64
int tr_intern_add_many(tr_intern *t, size_t n, const char *const *s, const uint32_t *len,
                       uint32_t *ids);
/* Returns the id if present, else 0. */
uint32_t tr_intern_find(const tr_intern *t, const char *s, size_t len);
/* Frees the hash index, keeping every string and id: for when the lookups
 * are over (the readers are done) and memory counts more.  The next add
 * builds it again; a find without it reads the entries in turn. */
void tr_intern_drop_index(tr_intern *t);

static inline const char *tr_intern_str(const tr_intern *t, uint32_t id)
{
    return id && id < t->count ? t->entries[id].str : "";
}

static inline size_t tr_intern_count(const tr_intern *t)
{
    return t->count ? t->count - 1 : 0;
}

#endif
