/*
 * json_subset.h - a fast JSON parser for the common subset of a trace's
 * values, building the same cJSON tree cJSON would.
 *
 * cJSON's parse was most of the Kineto reader's parser thread: before each
 * value it compares the text against "null", "false" and "true" with strncmp,
 * and each number calls localeconv() and strtod().  Trace events use a small
 * part of JSON: strings with few escapes, integers and decimals of at most
 * 16 digits.  tr_json_subset_parse() parses exactly that part, and gives up
 * (returns NULL) on anything else: a \u escape, a number it cannot convert
 * exactly, nesting deeper than TR_JSON_SUBSET_DEPTH, a byte order mark,
 * anything that is not valid JSON.  The caller then hands the same text to
 * cJSON, which decides: the tree, or the error and its position.  So where
 * this parser succeeds, cJSON succeeds with an equal tree (same types,
 * strings, valuedouble bit for bit, valueint, and the next/prev/child links as
 * cJSON sets them); tests/fuzz/fuzz_json_subset.c checks that on every input.
 *
 * Numbers: an integer or decimal whose digits, read as one integer, are at
 * most 2^53 and whose power of ten is within 10^+-22 is converted with one
 * exact multiplication or division, which IEEE rounds correctly, as strtod
 * does; any other number goes to strtod.
 *
 * Ownership: every node and string comes from alloc() (zeroed here where
 * needed); nothing is freed, so alloc is meant to be an arena emptied in bulk.
 * A NULL return may leave nodes allocated.  Thread-safe: no global state.
 */
#ifndef TR_INGEST_JSON_SUBSET_H
#define TR_INGEST_JSON_SUBSET_H

#include <stddef.h>

#include <cjson/cJSON.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define TR_JSON_SUBSET_DEPTH 64

/* The root of text[0..len) (text[len] need not be readable), or NULL when the
 * text is outside the subset or alloc() failed. */
cJSON *tr_json_subset_parse(const char *text, size_t len, void *(*alloc)(size_t));

/* The same for the first value in text[0..len), which may go on: *used is
 * where the value ends, and text[0..*used) is a text tr_json_subset_parse()
 * takes, to the same tree.  A value cut short by len is not taken (NULL),
 * nor a number that reaches len, which may have more digits beyond it. */
cJSON *tr_json_subset_parse_prefix(const char *text, size_t len, void *(*alloc)(size_t),
                                   size_t *used);

/* Memory the parser may take its nodes and strings from without a call:
 * while a request, rounded up to TR_JSON_REGION_ALIGN bytes, fits in
 * [next, end), it moves next past it; otherwise it calls alloc(), which may
 * move the region to new memory (an arena's next block) for the requests
 * after.  Every pointer the parser so takes is TR_JSON_REGION_ALIGN-aligned
 * when next is. */
#define TR_JSON_REGION_ALIGN 16
typedef struct { char *next, *end; } tr_json_region;

/* n rounded up to TR_JSON_REGION_ALIGN. */
static inline size_t tr_json_region_size(size_t n)
{
    return (n + TR_JSON_REGION_ALIGN - 1) & ~(size_t)(TR_JSON_REGION_ALIGN - 1);
}

/* tr_json_region_size(n) bytes from the region, or NULL where they do not fit. */
static inline void *tr_json_region_take(tr_json_region *r, size_t n)
{
    n = tr_json_region_size(n);
    if (!r->next || (size_t)(r->end - r->next) < n)
        return NULL;
    void *p = r->next;
    r->next += n;
    return p;
}

/* tr_json_subset_parse_prefix() allocating from region first. */
cJSON *tr_json_subset_parse_prefix_in(const char *text, size_t len, tr_json_region *region,
                                      void *(*alloc)(size_t), size_t *used);

/* Where the root object's members named keys[k] hold their numbers in the
 * text: for a reader that needs a number's digits, not its double (a
 * timestamp in microseconds with a nanosecond fraction has more digits than a
 * double holds).  The first member of a name decides, as a lookup in the
 * tree does.  The caller sets keys and nkeys; the parse sets the rest. */
#define TR_JSON_MEMBER_NUMBERS_MAX 8
typedef struct {
    const char *const *keys;
    int nkeys;                 /* at most TR_JSON_MEMBER_NUMBERS_MAX */
    unsigned number;           /* bit k: the first keys[k] holds a number, text[off[k]..+len[k]) */
    unsigned other;            /* bit k: the first keys[k] holds some other value */
    size_t off[TR_JSON_MEMBER_NUMBERS_MAX], len[TR_JSON_MEMBER_NUMBERS_MAX];
} tr_json_member_numbers;

/* tr_json_subset_parse_prefix_in() that also fills *members (when not NULL)
 * for a root that is an object; left unset when it returns NULL. */
cJSON *tr_json_subset_parse_prefix_members(const char *text, size_t len, tr_json_region *region,
                                           void *(*alloc)(size_t), size_t *used,
                                           tr_json_member_numbers *members);

/* The first '"' or '\\' in [p, end), or end: inside a string nothing else
 * matters, and most of a trace's bytes are inside strings (names, keys). */
static inline const unsigned char *tr_json_string_special(const unsigned char *p,
                                                          const unsigned char *end)
{
#ifdef __SSE2__
    const __m128i quote = _mm_set1_epi8('"'), backslash = _mm_set1_epi8('\\');
    for (; end - p >= 16; p += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        int m = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)));
        if (m)
            return p + __builtin_ctz((unsigned)m);
    }
#endif
    while (p < end && *p != '"' && *p != '\\')
        p++;
    return p;
}

#endif
