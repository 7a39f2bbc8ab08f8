/*
 * pair_trie.h - an interner of (parent, label) pairs: the nodes of a path
 * trie, such as the range tree's ancestry paths (parent path, name) or a list
 * of stack frames.  Nodes are numbered from 1 in the order they are made, so
 * a node's parent is numbered below it; 0 stands for the root.
 *
 * Ownership: a zeroed tr_pair_trie is empty; tr_pair_trie_free() releases
 * what it holds.  Its arrays are lib/spill.h's, so a trie of a large trace
 * stays within the memory limit.  Not thread-safe.
 */
#ifndef TR_LIB_PAIR_TRIE_H
#define TR_LIB_PAIR_TRIE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    struct tr_pair_slot { int64_t parent, label, id; } *slots;
    size_t cap, n;
    int64_t *parent, *label;   /* by node number (1-based) */
    size_t arr_cap;
} tr_pair_trie;

/* A hash of two 64-bit values, mixed as unsigned (ids from a file may be any int64). */
static inline uint64_t tr_pair_hash(int64_t a, int64_t b)
{
    uint64_t h = (uint64_t)a * 0x9e3779b97f4a7c15ull ^ ((uint64_t)b + 0x7f4a7c159e3779b9ull);
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

/* The node of (parent, label), made on first use; -1 when out of memory. */
int64_t tr_pair_trie_get(tr_pair_trie *t, int64_t parent, int64_t label);
void tr_pair_trie_free(tr_pair_trie *t);

#endif
