#include "lib/i64map.h"

#include <stdlib.h>
#include <string.h>

#include "lib/spill.h"

/* Keys that are close (correlation ids, marker ids: numbered as they are
 * made) land in neighbouring slots, so a reader that looks them up in about
 * the order they were made touches few pages, which matters once the map is
 * spilled to a file (lib/spill.h); runs of 64 keys are scattered by a full
 * mix, so keys far apart do not pile up. */
static size_t slot_of(int64_t key, size_t cap)
{
    uint64_t k = (uint64_t)key, h = (k >> 6) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    return (size_t)((h << 6) ^ (k & 63)) & (cap - 1);
}

void tr_i64map_init(tr_i64map *m)
{
    memset(m, 0, sizeof *m);
}

void tr_i64map_free(tr_i64map *m)
{
    tr_spill_free(m->slots);
    memset(m, 0, sizeof *m);
}

static int grow(tr_i64map *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    struct tr_i64slot *ns = tr_spill_calloc_table(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t j = 0; j < m->cap; j++) {
        tr_spill_tick();
        if (!m->slots[j].used)
            continue;
        size_t i = slot_of(m->slots[j].key, ncap);
        while (ns[i].used)
            i = (i + 1) & (ncap - 1);
        ns[i] = m->slots[j];
    }
    tr_spill_free(m->slots);
    m->slots = ns;
    m->cap = ncap;
    return 0;
}

int tr_i64map_put(tr_i64map *m, int64_t key, int64_t val)
{
    if ((m->n + 1) * 2 > m->cap && grow(m) < 0)
        return -1;
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].used && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].used)
        m->n++;
    m->slots[i] = (struct tr_i64slot){key, val, 1};
    return 0;
}

int tr_i64map_get(const tr_i64map *m, int64_t key, int64_t *val)
{
    if (!m->cap)
        return 0;
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].used) {
        if (m->slots[i].key == key) {
            *val = m->slots[i].val;
            return 1;
        }
        i = (i + 1) & (m->cap - 1);
    }
    return 0;
}

int tr_i64map_del(tr_i64map *m, int64_t key)
{
    if (!m->cap)
        return 0;
    size_t i = slot_of(key, m->cap);
    while (m->slots[i].used && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].used)
        return 0;
    /* backward-shift deletion keeps probe chains intact without tombstones */
    size_t j = i;
    for (;;) {
        m->slots[i].used = 0;
        for (;;) {
            j = (j + 1) & (m->cap - 1);
            if (!m->slots[j].used)
                goto done;
            size_t home = slot_of(m->slots[j].key, m->cap);
            /* move j to i if its home is not cyclically in (i, j] */
            if (i <= j ? (home <= i || home > j) : (home <= i && home > j))
                break;
        }
        m->slots[i] = m->slots[j];
        i = j;
    }
done:
    m->n--;
    return 1;
}
