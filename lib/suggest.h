/*
 * suggest.h - "did you mean ...?" for a mistyped name.
 *
 * The candidates are offered one at a time (they live in different tables in
 * each tool: sort keys, kinds, reports, formats, metrics), and the closest one
 * by edit distance wins, ignoring case.  A candidate only counts when it is
 * close enough to be the likely intent: a few edits for the word's length, or
 * a candidate that starts with the word ("self_cuda" -> "self_cuda_time_total").
 * Nothing allocates.
 */
#ifndef TR_LIB_SUGGEST_H
#define TR_LIB_SUGGEST_H

#include <stddef.h>

typedef struct {
    const char *word;
    size_t wlen;
    const char *best;     /* NUL-terminated candidate, or NULL */
    size_t best_len;      /* its length (candidates may come from a list) */
    size_t best_cost;
} tr_suggest;

void tr_suggest_init(tr_suggest *s, const char *word, size_t wlen);
/* Offers cand[0..len). */
void tr_suggest_add(tr_suggest *s, const char *cand, size_t len);
/* Offers each word of a space-separated list ("ops ranges marks ..."). */
void tr_suggest_add_list(tr_suggest *s, const char *list);
/* The best candidate's length and text, or 0 when none is close enough. */
size_t tr_suggest_best(const tr_suggest *s, const char **text);

/* "; did you mean NAME?" for the closest word of a space-separated list, or
 * "" when none is close; written into buf, which is returned. */
const char *tr_suggest_hint(char *buf, size_t n, const char *word, size_t wlen, const char *list);

/* Edit distance between a[0..na) and b[0..nb) ignoring ASCII case, capped:
 * any distance above cap is returned as cap + 1. */
size_t tr_edit_distance(const char *a, size_t na, const char *b, size_t nb, size_t cap);

#endif
