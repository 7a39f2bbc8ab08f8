/*
 * i64map.h - a hash map from int64 keys to int64 values (open addressing,
 * linear probing, with deletion by backward shift).  Readers use it to pair
 * range starts with ends and to look up ids.  Ownership: the map owns its
 * slot array; tr_i64map_free() releases it.
 */
#ifndef TR_LIB_I64MAP_H
#define TR_LIB_I64MAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    struct tr_i64slot { int64_t key, val; uint8_t used; } *slots;
    size_t n, cap;
} tr_i64map;

void tr_i64map_init(tr_i64map *m);
void tr_i64map_free(tr_i64map *m);
/* Inserts or replaces; -1 on out-of-memory. */
int tr_i64map_put(tr_i64map *m, int64_t key, int64_t val);
/* 1 and *val if found, else 0. */
int tr_i64map_get(const tr_i64map *m, int64_t key, int64_t *val);
/* Removes key; 1 if it was present. */
int tr_i64map_del(tr_i64map *m, int64_t key);

#endif
