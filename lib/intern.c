#include "lib/intern.h"

#include <stdlib.h>
#include <string.h>

struct tr_arena_block {
    tr_arena_block *next;
    size_t used, cap;
    char data[];
};

#define ARENA_BLOCK 65536

static uint32_t hash_bytes(const char *s, size_t len)
{
    /* FNV-1a: short strings dominate, and it is fast enough for them. */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 16777619u;
    }
    return h;
}

void tr_intern_init(tr_intern *t)
{
    memset(t, 0, sizeof *t);
}

void tr_intern_free(tr_intern *t)
{
    tr_arena_block *b = t->arena;
    while (b) {
        tr_arena_block *n = b->next;
        free(b);
        b = n;
    }
    free(t->entries);
    free(t->slots);
    memset(t, 0, sizeof *t);
}

static char *arena_copy(tr_intern *t, const char *s, size_t len)
{
    tr_arena_block *b = t->arena;
    if (!b || b->cap - b->used < len + 1) {
        size_t cap = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;
        tr_arena_block *nb = malloc(sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        if (b && len + 1 > ARENA_BLOCK) {
            /* keep the current block as the head: it still has room for small strings */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            t->arena = nb;
        }
        b = nb;
    }
    char *p = b->data + b->used;
    memcpy(p, s, len);
    p[len] = '\0';
    b->used += len + 1;
    return p;
}

static int rehash(tr_intern *t, size_t nslots)
{
    uint32_t *slots = calloc(nslots, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t id = 1; id < t->count; id++) {
        size_t i = t->entries[id].hash & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (uint32_t)id;
    }
    free(t->slots);
    t->slots = slots;
    t->nslots = nslots;
    return 0;
}

uint32_t tr_intern_find(const tr_intern *t, const char *s, size_t len)
{
    if (!t->nslots)
        return 0;
    uint32_t h = hash_bytes(s, len);
    size_t i = h & (t->nslots - 1);
    while (t->slots[i]) {
        const tr_intern_entry *e = &t->entries[t->slots[i]];
        if (e->hash == h && e->len == len && memcmp(e->str, s, len) == 0)
            return t->slots[i];
        i = (i + 1) & (t->nslots - 1);
    }
    return 0;
}

uint32_t tr_intern_add(tr_intern *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1)
        return 0;
    if (t->count == 0) {
        t->cap = 1024;
        t->entries = calloc(t->cap, sizeof *t->entries);
        if (!t->entries || rehash(t, 2048) < 0)
            return 0;
        t->count = 1;
    }
    uint32_t found = tr_intern_find(t, s, len);
    if (found)
        return found;
    if ((t->count + 1) * 2 > t->nslots && rehash(t, t->nslots * 2) < 0)
        return 0;
    if (t->count == t->cap) {
        tr_intern_entry *ne = realloc(t->entries, t->cap * 2 * sizeof *ne);
        if (!ne)
            return 0;
        t->entries = ne;
        t->cap *= 2;
    }
    char *copy = arena_copy(t, s, len);
    if (!copy)
        return 0;
    uint32_t id = (uint32_t)t->count++;
    uint32_t h = hash_bytes(s, len);
    t->entries[id] = (tr_intern_entry){copy, (uint32_t)len, h};
    size_t i = h & (t->nslots - 1);
    while (t->slots[i])
        i = (i + 1) & (t->nslots - 1);
    t->slots[i] = id;
    return id;
}

uint32_t tr_intern_cstr(tr_intern *t, const char *s)
{
    return tr_intern_add(t, s, strlen(s));
}
