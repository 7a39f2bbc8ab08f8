/*
 * libFuzzer target: the Kineto reader's fast JSON parser
 * (ingest/readers/json_subset.h) against cJSON itself.  Where the fast parser
 * takes a text, cJSON must take the whole text too and build an equal tree:
 * the same types, strings, valuedouble bit for bit, valueint and links.  The
 * fast parser may give up on any text; it must never disagree.  Its prefix
 * form must take only a leading value cJSON takes whole, to the same tree,
 * with or without a region to allocate from first, and where it reports a
 * root member's number as text, that text is cJSON's number there.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_json_subset tests/fuzz/corpus/json_subset
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ingest/readers/json_subset.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every allocation of one input, freed together. */
static void **allocs;
static size_t nallocs, capallocs;

static void *tracked_alloc(size_t n)
{
    if (nallocs == capallocs) {
        size_t cap = capallocs ? 2 * capallocs : 256;
        void **v = realloc(allocs, cap * sizeof *v);
        if (!v)
            return NULL;
        allocs = v;
        capallocs = cap;
    }
    void *p = malloc(n ? n : 1);
    if (p)
        allocs[nallocs++] = p;
    return p;
}

static void free_tracked(void)
{
    for (size_t i = 0; i < nallocs; i++)
        free(allocs[i]);
    nallocs = 0;
}

static int same_string(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void check_equal(const cJSON *fast, const cJSON *ref)
{
    for (; fast || ref; fast = fast->next, ref = ref->next) {
        if (!fast || !ref || fast->type != ref->type || fast->valueint != ref->valueint
            || memcmp(&fast->valuedouble, &ref->valuedouble, sizeof(double)) != 0
            || !same_string(fast->valuestring, ref->valuestring)
            || !same_string(fast->string, ref->string)
            || !fast->child != !ref->child) {
            fprintf(stderr, "fast parse differs from cJSON at key '%s'\n",
                    ref && ref->string ? ref->string : "(none)");
            abort();
        }
        /* cJSON's links: the head's prev is the tail, the others' the one before */
        if (fast->child && (!fast->child->prev || fast->child->prev->next))
            abort();
        check_equal(fast->child, ref->child);
    }
}

/* cJSON must take text[0..len) whole, to the tree the fast parser built. */
static void expect_cjson_agrees(const cJSON *fast, const char *text, size_t len, const char *form)
{
    const char *end = NULL;
    cJSON *ref = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    if (!ref || (size_t)(end - text) != len) {
        fprintf(stderr, "%s parse took a text cJSON does not take whole\n", form);
        abort();
    }
    check_equal(fast, ref);
    cJSON_Delete(ref);
}

/* The root's members' numbers as text (tr_json_subset_parse_prefix_members())
 * against cJSON's lookup of the same keys in its own tree of text[0..used):
 * a number bit where that member is a number whose text strtod reads to its
 * value bit for bit, an other bit where it is another value, neither where
 * there is none. */
static void expect_member_numbers(const tr_json_member_numbers *m, const char *text, size_t used)
{
    cJSON *ref = cJSON_ParseWithLengthOpts(text, used, NULL, 0);
    if (!ref)
        abort();
    for (int k = 0; k < m->nkeys; k++) {
        const cJSON *v = cJSON_IsObject(ref) ? cJSON_GetObjectItemCaseSensitive(ref, m->keys[k]) : NULL;
        int number = m->number >> k & 1, other = m->other >> k & 1;
        if (number + other != (v != NULL) || number != (v && cJSON_IsNumber(v)))
            abort();
        if (!number)
            continue;
        char digits[64];
        if (m->len[k] == 0 || m->len[k] >= sizeof digits || m->off[k] + m->len[k] > used)
            abort();
        memcpy(digits, text + m->off[k], m->len[k]);
        digits[m->len[k]] = '\0';
        char *end;
        double d = strtod(digits, &end);
        if (*end || memcmp(&d, &v->valuedouble, sizeof d) != 0)
            abort();
    }
    cJSON_Delete(ref);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';   /* the reader's texts are NUL-terminated */
    cJSON *fast = tr_json_subset_parse(text, size, tracked_alloc);
    if (fast)
        expect_cjson_agrees(fast, text, size, "fast");
    free_tracked();
    /* the prefix form, as the reader uses it on its input buffer: what it
     * takes is a whole text the full form takes, to the same tree */
    size_t used = 0;
    cJSON *prefix = tr_json_subset_parse_prefix(text, size, tracked_alloc, &used);
    if (prefix) {
        if (used == 0 || used > size)
            abort();
        expect_cjson_agrees(prefix, text, used, "prefix");
    }
    free_tracked();
    /* and from a region first, as the reader's arenas give one: a region of
     * the input's first byte's size (0..4080 bytes), then malloc */
    static max_align_t room[256];
    tr_json_region region = {(char *)room, (char *)room + (size ? data[0] : 0) * 16};
    size_t used_region = 0;
    cJSON *in_region = tr_json_subset_parse_prefix_in(text, size, &region, tracked_alloc, &used_region);
    if (!in_region != !prefix || (in_region && used_region != used)
        || region.next > (char *)room + sizeof room)
        abort();
    if (in_region)
        expect_cjson_agrees(in_region, text, used_region, "region");
    free_tracked();
    /* and with the root's members' numbers found, as the reader finds ts and dur */
    static const char *const keys[] = {"ts", "dur", "id"};
    tr_json_member_numbers m = {.keys = keys, .nkeys = 3};
    size_t used_members = 0;
    cJSON *members = tr_json_subset_parse_prefix_members(text, size, NULL, tracked_alloc,
                                                         &used_members, &m);
    if (!members != !prefix || (members && used_members != used))
        abort();
    if (members)
        expect_member_numbers(&m, text, used_members);
    free_tracked();
    free(text);
    return 0;
}
