#include "lib/suggest.h"

#include <stdio.h>
#include <string.h>

/* Names are short; a longer word is never a typo of one of them. */
#define SUGGEST_MAX_LEN 64

static int lower(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

size_t tr_edit_distance(const char *a, size_t na, const char *b, size_t nb, size_t cap)
{
    if (na > SUGGEST_MAX_LEN || nb > SUGGEST_MAX_LEN)
        return cap + 1;
    size_t diff = na > nb ? na - nb : nb - na;
    if (diff > cap)
        return cap + 1;
    /* one row of the Levenshtein matrix, with transpositions counted as one
     * edit (two swapped letters are the commonest typo) */
    size_t prev2[SUGGEST_MAX_LEN + 1], prev[SUGGEST_MAX_LEN + 1], cur[SUGGEST_MAX_LEN + 1];
    for (size_t j = 0; j <= nb; j++)
        prev[j] = j;
    for (size_t i = 1; i <= na; i++) {
        cur[0] = i;
        size_t rowmin = cur[0];
        for (size_t j = 1; j <= nb; j++) {
            int same = lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 1]);
            size_t v = prev[j - 1] + !same;
            if (prev[j] + 1 < v)
                v = prev[j] + 1;
            if (cur[j - 1] + 1 < v)
                v = cur[j - 1] + 1;
            if (i > 1 && j > 1 && lower((unsigned char)a[i - 1]) == lower((unsigned char)b[j - 2])
                && lower((unsigned char)a[i - 2]) == lower((unsigned char)b[j - 1]) && prev2[j - 2] + 1 < v)
                v = prev2[j - 2] + 1;
            cur[j] = v;
            if (v < rowmin)
                rowmin = v;
        }
        if (rowmin > cap)
            return cap + 1;
        memcpy(prev2, prev, (nb + 1) * sizeof prev[0]);
        memcpy(prev, cur, (nb + 1) * sizeof cur[0]);
    }
    return prev[nb] > cap ? cap + 1 : prev[nb];
}

void tr_suggest_init(tr_suggest *s, const char *word, size_t wlen)
{
    s->word = word;
    s->wlen = wlen;
    s->best = NULL;
    s->best_len = 0;
    s->best_cost = (size_t)-1;
}

static int starts_with(const char *cand, size_t len, const char *word, size_t wlen)
{
    if (wlen > len)
        return 0;
    for (size_t i = 0; i < wlen; i++)
        if (lower((unsigned char)cand[i]) != lower((unsigned char)word[i]))
            return 0;
    return 1;
}

void tr_suggest_add(tr_suggest *s, const char *cand, size_t len)
{
    if (!s->wlen || !len)
        return;
    /* a third of the word's letters may be wrong, at least one and at most
     * three: "sefl_cpu" finds self_cpu, "x" finds nothing */
    size_t cap = s->wlen / 3;
    cap = cap < 1 ? 1 : cap > 3 ? 3 : cap;
    size_t cost = tr_edit_distance(s->word, s->wlen, cand, len, cap);
    if (cost > cap) {
        if (s->wlen < 3 || !starts_with(cand, len, s->word, s->wlen))
            return;
        cost = cap + 1;   /* a prefix ranks after every near miss */
    }
    if (cost < s->best_cost) {
        s->best = cand;
        s->best_len = len;
        s->best_cost = cost;
    }
}

void tr_suggest_add_list(tr_suggest *s, const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, " ");
        tr_suggest_add(s, p, n);
        p += n;
        p += strspn(p, " ");
    }
}

size_t tr_suggest_best(const tr_suggest *s, const char **text)
{
    *text = s->best;
    return s->best ? s->best_len : 0;
}

const char *tr_suggest_hint(char *buf, size_t n, const char *word, size_t wlen, const char *list)
{
    tr_suggest s;
    tr_suggest_init(&s, word, wlen);
    tr_suggest_add_list(&s, list);
    const char *best;
    size_t len = tr_suggest_best(&s, &best);
    if (n)
        buf[0] = '\0';
    if (len && n)
        snprintf(buf, n, "; did you mean %.*s?", (int)len, best);
    return buf;
}
