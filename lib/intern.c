#include "lib/intern.h"

#include <stdlib.h>
#include <string.h>

#include "lib/spill.h"

struct tr_arena_block {
    tr_arena_block *next;
    size_t used, cap;
    char data[];
};

#define ARENA_BLOCK 65536

/* Eight bytes a step, then a full 64-bit finaliser (MurmurHash3's fmix64):
 * the slot index takes the low bits, so every input bit must reach them.  A
 * byte-at-a-time hash was a tenth of the ingest time on traces whose NVTX
 * names are all distinct. */
static uint32_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)len;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, s, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 29;
        s += 8;
        len -= 8;
    }
    uint64_t w = 0;
    if (len)
        memcpy(&w, s, len);
    h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return (uint32_t)h;
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
        tr_spill_free(b);
        b = n;
    }
    tr_spill_free(t->entries);
    tr_spill_free(t->slots);
    memset(t, 0, sizeof *t);
}

static char *arena_copy(tr_intern *t, const char *s, size_t len)
{
    tr_arena_block *b = t->arena;
    if (!b || b->cap - b->used < len + 1) {
        /* blocks grow with the strings held, so that a spilled arena
         * (lib/spill.h) is a few files, not one per 64 KiB */
        size_t block = t->arena_bytes / 2 > ARENA_BLOCK ? t->arena_bytes / 2 : ARENA_BLOCK;
        size_t cap = len + 1 > block ? len + 1 : block;
        tr_arena_block *nb = tr_spill_realloc(NULL, 0, sizeof *nb + cap);
        if (!nb)
            return NULL;
        nb->used = 0;
        nb->cap = cap;
        t->arena_bytes += cap;
        if (b && len + 1 > block) {
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

/* A slot is 4 bytes: the id in its low id_bits (ids stay below nslots, the
 * table being at most three quarters full) and above them the same bits of
 * the string's hash, which tell most mismatches apart without a visit to the
 * entry.  At 8 bytes a slot (id, hash) and half full, the slots of a raw
 * recording's 1.2x10^7 distinct NVTX texts took 256 MiB, twice what the hash
 * tables may hold on the heap under the default memory limit (lib/spill.h),
 * and each new string was a page fault; they now take 64 MiB.  A probe at
 * three quarters full reads about seven slots, still a cache line or two. */
static uint32_t tag_bits(unsigned id_bits)
{
    return id_bits >= 32 ? 0 : ~(uint32_t)0 << id_bits;
}

static int too_full(size_t ids, size_t nslots)
{
    return ids * 4 > nslots * 3;
}

typedef struct { uint32_t id, hash; } home_pair;

/* Places the entries in the order of their home slot's top 8 bits (a
 * counting sort of (id, hash) pairs), so that each group's writes stay
 * within 1/256 of the new slots: for a table in a spill file (lib/spill.h)
 * the slots are then written in one sweep, where entry order would cost a
 * page fault an entry. */
static int rehash(tr_intern *t, size_t nslots)
{
    size_t n = t->count ? t->count - 1 : 0;
    uint32_t *slots = tr_spill_calloc_table(nslots, sizeof *slots);
    home_pair *by_home = tr_spill_calloc(n ? n : 1, sizeof *by_home);
    if (!slots || !by_home) {
        tr_spill_free(slots);
        tr_spill_free(by_home);
        return -1;
    }
    int shift = 0;
    while ((nslots >> shift) > 256)
        shift++;
    size_t count[257] = {0};
    for (size_t id = 1; id <= n; id++) {
        tr_spill_tick();
        count[((t->entries[id].hash & (nslots - 1)) >> shift) + 1]++;
    }
    for (int b = 0; b < 256; b++)
        count[b + 1] += count[b];
    for (size_t id = 1; id <= n; id++) {
        tr_spill_tick();
        uint32_t h = t->entries[id].hash;
        by_home[count[(h & (nslots - 1)) >> shift]++] = (home_pair){(uint32_t)id, h};
    }
    unsigned id_bits = 0;
    while (id_bits < 32 && ((size_t)1 << id_bits) < nslots)
        id_bits++;
    uint32_t tags = tag_bits(id_bits);
    for (size_t k = 0; k < n; k++) {
        tr_spill_tick();
        size_t i = by_home[k].hash & (nslots - 1);
        while (slots[i])
            i = (i + 1) & (nslots - 1);
        slots[i] = (by_home[k].hash & tags) | by_home[k].id;
    }
    tr_spill_free(by_home);
    tr_spill_free(t->slots);
    t->slots = slots;
    t->slots_in_file = tr_spill_in_file(slots);
    t->nslots = nslots;
    t->id_bits = id_bits;
    return 0;
}

/* The slot where s (hash h) is, or the empty slot where it would go. */
static size_t probe(const tr_intern *t, const char *s, size_t len, uint32_t h)
{
    uint32_t tags = tag_bits(t->id_bits);
    size_t mask = t->nslots - 1, i = h & mask;
    for (uint32_t slot; (slot = t->slots[i]) != 0; i = (i + 1) & mask) {
        if ((slot ^ h) & tags)
            continue;
        const tr_intern_entry *e = &t->entries[slot & ~tags];
        if (e->hash == h && e->len == len && memcmp(e->str, s, len) == 0)
            break;
    }
    return i;
}

uint32_t tr_intern_find(const tr_intern *t, const char *s, size_t len)
{
    if (!t->nslots) {
        for (size_t id = 1; id < t->count; id++)
            if (t->entries[id].len == len && memcmp(t->entries[id].str, s, len) == 0)
                return (uint32_t)id;
        return 0;
    }
    return t->slots[probe(t, s, len, hash_bytes(s, len))] & ~tag_bits(t->id_bits);
}

/* Makes the table and its index, if this is the first string or the index
 * was dropped; -1 on out-of-memory. */
static int ensure_index(tr_intern *t)
{
    if (t->count == 0) {
        t->cap = 1024;
        t->entries = tr_spill_calloc(t->cap, sizeof *t->entries);
        if (!t->entries || rehash(t, 2048) < 0)
            return -1;
        t->count = 1;
    } else if (!t->nslots) {
        size_t nslots = 2048;
        while (nslots < t->count * 2)
            nslots *= 2;
        if (rehash(t, nslots) < 0)
            return -1;
    }
    return 0;
}

/* tr_intern_add() once the index exists and the hash is known. */
static uint32_t add_hashed(tr_intern *t, const char *s, size_t len, uint32_t h)
{
    /* In a spill file, a new string's slot would be read (a fault that maps
     * its page read-only) and then written (a second fault): an atomic or of 0
     * makes the first touch a write.  On the heap every page is already
     * written (zeroed when made), and the locked instruction would only hold
     * up the probe behind it. */
    if (t->slots_in_file)
        __atomic_fetch_or(&t->slots[h & (t->nslots - 1)], 0, __ATOMIC_RELAXED);
    size_t i = probe(t, s, len, h);
    if (t->slots[i])
        return t->slots[i] & ~tag_bits(t->id_bits);
    if (too_full(t->count, t->nslots)) {
        if (rehash(t, t->nslots * 2) < 0)
            return 0;
        i = probe(t, s, len, h);
    }
    if (t->count == t->cap) {
        tr_intern_entry *ne = tr_spill_realloc(t->entries, t->cap * sizeof *ne, t->cap * 2 * sizeof *ne);
        if (!ne)
            return 0;
        t->entries = ne;
        t->cap *= 2;
    }
    char *copy = arena_copy(t, s, len);
    if (!copy)
        return 0;
    uint32_t id = (uint32_t)t->count++;
    t->entries[id] = (tr_intern_entry){copy, (uint32_t)len, h};
    t->slots[i] = (h & tag_bits(t->id_bits)) | id;
    return id;
}

uint32_t tr_intern_add(tr_intern *t, const char *s, size_t len)
{
    if (len > UINT32_MAX - 1 || ensure_index(t) < 0)
        return 0;
    return add_hashed(t, s, len, hash_bytes(s, len));
}

/* How many strings ahead of the one being added its home slot is fetched:
 * enough to cover a miss to memory with the adds in between. */
#define FETCH_AHEAD 8

static void fetch_slot(const tr_intern *t, uint32_t h)
{
    __builtin_prefetch(&t->slots[h & (t->nslots - 1)], 1, 3);
}

void tr_intern_prefetch(const tr_intern *t, const char *s, size_t len)
{
    if (t->nslots)
        fetch_slot(t, hash_bytes(s, len));
}

int tr_intern_add_many(tr_intern *t, size_t n, const char *const *s, const uint32_t *len,
                       uint32_t *ids)
{
    uint32_t h[TR_INTERN_MANY];
    if (n > TR_INTERN_MANY || (n && ensure_index(t) < 0))
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (len[i] > UINT32_MAX - 1)
            return -1;
        h[i] = hash_bytes(s[i], len[i]);
        if (i < FETCH_AHEAD)
            fetch_slot(t, h[i]);
    }
    for (size_t i = 0; i < n; i++) {
        /* a rehash in between moves the slots: a stale fetch is only wasted */
        if (i + FETCH_AHEAD < n)
            fetch_slot(t, h[i + FETCH_AHEAD]);
        if (!(ids[i] = add_hashed(t, s[i], len[i], h[i])))
            return -1;
    }
    return 0;
}

void tr_intern_drop_index(tr_intern *t)
{
    tr_spill_free(t->slots);
    t->slots = NULL;
    t->slots_in_file = 0;
    t->nslots = 0;
    t->id_bits = 0;
}

uint32_t tr_intern_cstr(tr_intern *t, const char *s)
{
    return tr_intern_add(t, s, strlen(s));
}
