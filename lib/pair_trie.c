#include "lib/pair_trie.h"

#include <string.h>

#include "lib/spill.h"

static int grow_slots(tr_pair_trie *t)
{
    size_t ncap = t->cap ? t->cap * 2 : 1024;
    struct tr_pair_slot *ns = tr_spill_calloc_table(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        tr_spill_tick();
        if (!t->slots[i].id)
            continue;
        size_t j = tr_pair_hash(t->slots[i].parent, t->slots[i].label) & (ncap - 1);
        while (ns[j].id)
            j = (j + 1) & (ncap - 1);
        ns[j] = t->slots[i];
    }
    tr_spill_free(t->slots);
    t->slots = ns;
    t->cap = ncap;
    return 0;
}

static int grow_nodes(tr_pair_trie *t)
{
    size_t nc = t->arr_cap ? t->arr_cap * 2 : 1024;
    int64_t *np = tr_spill_realloc(t->parent, t->arr_cap * sizeof *np, nc * sizeof *np);
    if (!np)
        return -1;
    t->parent = np;
    int64_t *nl = tr_spill_realloc(t->label, t->arr_cap * sizeof *nl, nc * sizeof *nl);
    if (!nl)
        return -1;
    t->label = nl;
    t->arr_cap = nc;
    return 0;
}

int64_t tr_pair_trie_get(tr_pair_trie *t, int64_t parent, int64_t label)
{
    if ((t->n + 1) * 2 > t->cap && grow_slots(t) < 0)
        return -1;
    size_t j = tr_pair_hash(parent, label) & (t->cap - 1);
    while (t->slots[j].id) {
        if (t->slots[j].parent == parent && t->slots[j].label == label)
            return t->slots[j].id;
        j = (j + 1) & (t->cap - 1);
    }
    if (t->n + 1 >= t->arr_cap && grow_nodes(t) < 0)
        return -1;
    int64_t id = (int64_t)++t->n;
    t->parent[id] = parent;
    t->label[id] = label;
    t->slots[j] = (struct tr_pair_slot){parent, label, id};
    return id;
}

void tr_pair_trie_free(tr_pair_trie *t)
{
    tr_spill_free(t->slots);
    tr_spill_free(t->parent);
    tr_spill_free(t->label);
    memset(t, 0, sizeof *t);
}
