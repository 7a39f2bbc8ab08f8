/* The Kineto reader's fast JSON parser (ingest/readers/json_subset.h): where
 * it takes a text, it builds cJSON's tree exactly; elsewhere it gives up. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <zlib.h>

#include "ingest/readers/json_subset.h"
#include "unit.h"

/* A bump arena of malloc'd blocks, emptied by arena_clear(). */
typedef struct block { struct block *next; size_t used, cap; max_align_t data[]; } block;
static block *blocks;

static void *arena_alloc(size_t n)
{
    n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    if (!blocks || blocks->cap - blocks->used < n) {
        size_t cap = n > (1u << 20) ? n : (1u << 20);
        block *b = malloc(sizeof *b + cap);
        if (!b)
            return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = blocks;
        blocks = b;
    }
    void *p = (char *)blocks->data + blocks->used;
    blocks->used += n;
    return p;
}

static void arena_clear(void)
{
    while (blocks) {
        block *next = blocks->next;
        free(blocks);
        blocks = next;
    }
}

/* 1 when the two trees are equal field by field (valuedouble bit for bit). */
static int same_tree(const cJSON *a, const cJSON *b)
{
    for (; a || b; a = a->next, b = b->next) {
        if (!a || !b || a->type != b->type || a->valueint != b->valueint
            || memcmp(&a->valuedouble, &b->valuedouble, sizeof(double)) != 0)
            return 0;
        if (!a->valuestring != !b->valuestring || (a->valuestring && strcmp(a->valuestring, b->valuestring)))
            return 0;
        if (!a->string != !b->string || (a->string && strcmp(a->string, b->string)))
            return 0;
        if (a->child && (a->child->prev == NULL || a->child->prev->next != NULL))
            return 0;   /* cJSON's head->prev is the tail */
        if (!same_tree(a->child, b->child))
            return 0;
    }
    return 1;
}

/* 1 if the fast parser takes text and agrees with cJSON; 0 if it gives up;
 * -1 if it takes it and disagrees. */
static int fast_vs_cjson(const char *text, size_t len)
{
    cJSON *fast = tr_json_subset_parse(text, len, arena_alloc);
    if (!fast) {
        arena_clear();
        return 0;
    }
    const char *end = NULL;
    cJSON *ref = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    int ok = ref && (size_t)(end - text) == len && same_tree(fast, ref);
    cJSON_Delete(ref);
    arena_clear();
    return ok ? 1 : -1;
}

static int takes(const char *text)
{
    return fast_vs_cjson(text, strlen(text));
}

static void test_takes_the_subset(void)
{
    CU_ASSERT_EQUAL(takes("{\"ph\":\"X\",\"name\":\"aten::mm\",\"pid\":12,\"tid\":\"stream 7\","
                          "\"ts\":1700000000123.456,\"dur\":4.5,\"args\":{\"Input Dims\":[[2,3],[]],"
                          "\"flops\":0,\"Async\":false,\"x\":null,\"y\":true}}"), 1);
    CU_ASSERT_EQUAL(takes(" \t\n{ \"a\" : [ 1 , -2 ] ,\r\n \"b\" : { } , \"c\":[]}"), 1);
    CU_ASSERT_EQUAL(takes("\"esc \\\" \\\\ \\/ \\b \\f \\n \\r \\t end\""), 1);
    CU_ASSERT_EQUAL(takes("{\"ph\":\"X\",\"ph\":\"B\"}"), 1);   /* both kept, in order */
    CU_ASSERT_EQUAL(takes("\"caf\xc3\xa9\""), 1);
    CU_ASSERT_EQUAL(takes("[-0,0,0.5,1e22,1E+3,2e-5,123456789012345678901234567890,1e400,-1e-400]"), 1);
    CU_ASSERT_EQUAL(takes("[2147483647,2147483648,-2147483648,-2147483649,9007199254740993]"), 1);
    CU_ASSERT_EQUAL(takes("[[[[[[[[[[1]]]]]]]]]]"), 1);
    CU_ASSERT_EQUAL(takes("7"), 1);
}

static void test_gives_up(void)
{
    const char *texts[] = {
        "\"\\u00e9\"",          /* \u escapes are cJSON's */
        "\"\\ud83d\\ude00\"",
        "\"bad \\x escape\"",
        "\"unterminated",
        "\"ends in a backslash\\",
        "[01]", "[1.]", "[-]", "[1e]", "[.5]", "[+1]", "[1.5.5]", "[0x10]",
        "{\"a\":1,}", "[1,]", "{\"a\" 1}", "{a:1}", "[1 2]",
        "{\"a\":1} ",            /* cJSON stops before the space */
        "\xef\xbb\xbf{}",        /* a byte order mark */
        "nul", "nullx", "tru", "[true false]",
        "", " ",
        "[1111111111111111111111111111111111111111111111111111111111111111]",   /* 64 digits */
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++)
        CU_ASSERT_EQUAL(takes(texts[i]), 0);
    char deep[2 * TR_JSON_SUBSET_DEPTH + 8];
    size_t n = 0;
    for (int i = 0; i <= TR_JSON_SUBSET_DEPTH; i++)
        deep[n++] = '[';
    for (int i = 0; i <= TR_JSON_SUBSET_DEPTH; i++)
        deep[n++] = ']';
    CU_ASSERT_EQUAL(fast_vs_cjson(deep, n), 0);
    CU_ASSERT_EQUAL(fast_vs_cjson(deep + 1, n - 2), 1);   /* exactly the limit */
}

/* The prefix form, as the reader runs it on its input buffer. */
static void test_prefix(void)
{
    static const char events[] = "{\"ph\":\"X\",\"ts\":1.5},\n{\"ph\":\"i\"}]";
    size_t used = 0;
    cJSON *j = tr_json_subset_parse_prefix(events, strlen(events), arena_alloc, &used);
    CU_ASSERT_PTR_NOT_NULL(j);
    CU_ASSERT_EQUAL(used, strlen("{\"ph\":\"X\",\"ts\":1.5}"));
    CU_ASSERT_EQUAL(fast_vs_cjson(events, used), 1);
    /* cut short by the end of the buffer: not taken, whatever is missing */
    for (size_t n = 1; n < used; n++)
        CU_ASSERT_PTR_NULL(tr_json_subset_parse_prefix(events, n, arena_alloc, &used));
    /* a number may go on past the buffer; a closed value may not */
    CU_ASSERT_PTR_NULL(tr_json_subset_parse_prefix("123", 3, arena_alloc, &used));
    CU_ASSERT_PTR_NOT_NULL(tr_json_subset_parse_prefix("123,", 4, arena_alloc, &used));
    CU_ASSERT_EQUAL(used, 3);
    CU_ASSERT_PTR_NOT_NULL(tr_json_subset_parse_prefix("[1] x", 5, arena_alloc, &used));
    CU_ASSERT_EQUAL(used, 3);
    arena_clear();
}

/* The root's members' numbers as text: the first member of a name decides,
 * nested members and other roots are not the root's. */
static void test_member_numbers(void)
{
    static const char *const keys[] = {"ts", "dur"};
    static const struct {
        const char *text;
        unsigned number, other;
        const char *ts, *dur;   /* the texts found, where number has the bit */
    } cases[] = {
        {"{\"ph\":\"X\",\"ts\": 1695835542514261.123 ,\"dur\":-2.5e3}", 3, 0,
         "1695835542514261.123", "-2.5e3"},
        {"{\"args\":{\"ts\":1,\"dur\":2},\"ts\":7}", 1, 0, "7", NULL},
        {"{\"ts\":\"12.5\",\"dur\":3,\"ts\":4}", 2, 1, NULL, "3"},
        {"{\"dur\":null,\"dur\":4,\"ts\":0}", 1, 2, "0", NULL},
        {"{\"ts\":1,\"ts\":2}", 1, 0, "1", NULL},
        {"{\"name\":\"\\\"ts\\\":9\",\"t\":1,\"tss\":2}", 0, 0, NULL, NULL},
        {"[{\"ts\":1}]", 0, 0, NULL, NULL},
        {"{}", 0, 0, NULL, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *text = cases[i].text;
        tr_json_member_numbers m = {.keys = keys, .nkeys = 2, .number = ~0u, .other = ~0u};
        size_t used = 0;
        cJSON *j = tr_json_subset_parse_prefix_members(text, strlen(text) + 1, NULL, arena_alloc,
                                                       &used, &m);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_EQUAL(m.number, cases[i].number);
        CU_ASSERT_EQUAL(m.other, cases[i].other);
        const char *want[2] = {cases[i].ts, cases[i].dur};
        for (int k = 0; k < 2; k++) {
            if (!(m.number >> k & 1) || !want[k])
                continue;
            CU_ASSERT_EQUAL(m.len[k], strlen(want[k]));
            CU_ASSERT(m.off[k] + m.len[k] <= used
                      && strncmp(text + m.off[k], want[k], m.len[k]) == 0);
        }
    }
    /* a key holding a NUL byte is found as a lookup finds it: up to the NUL */
    static const char nul_keys[] = "{\"t\0\":1,\"ts\0x\":6,\"d\0ur\":2,\"dur\0\":3}";
    tr_json_member_numbers m = {.keys = keys, .nkeys = 2};
    size_t used = 0;
    CU_ASSERT_PTR_NOT_NULL(tr_json_subset_parse_prefix_members(nul_keys, sizeof nul_keys - 1, NULL,
                                                               arena_alloc, &used, &m));
    CU_ASSERT_EQUAL(m.number, 3u);
    CU_ASSERT_EQUAL(m.other, 0u);
    CU_ASSERT(m.len[0] == 1 && nul_keys[m.off[0]] == '6');
    CU_ASSERT(m.len[1] == 1 && nul_keys[m.off[1]] == '3');
    arena_clear();
}

static int counted_allocs;

static void *counted_alloc(size_t n)
{
    counted_allocs++;
    return arena_alloc(n);
}

/* Allocating from a region first: the same tree for every size of region,
 * from none to more than the text needs, its pieces inside the region and
 * aligned, and alloc() called only past the region's end. */
static void test_region(void)
{
    static const char text[] =
        "{\"ph\":\"X\",\"name\":\"aten::mm\",\"ts\":12.5,\"args\":{\"Input Dims\":[[4,8],[8,2]],"
        "\"External id\":7,\"s\":\"a\\\"b\"}}, ";
    size_t len = strlen(text), used = 0, used_plain = 0;
    cJSON *plain = tr_json_subset_parse_prefix(text, len, arena_alloc, &used_plain);
    CU_ASSERT_PTR_NOT_NULL_FATAL(plain);
    static max_align_t room[256];
    int all_in_region = 0;
    for (size_t size = 0; size <= sizeof room; size += 16) {
        tr_json_region r = {(char *)room, (char *)room + size};
        counted_allocs = 0;
        cJSON *j = tr_json_subset_parse_prefix_in(text, len, &r, counted_alloc, &used);
        CU_ASSERT_PTR_NOT_NULL_FATAL(j);
        CU_ASSERT_EQUAL(used, used_plain);
        CU_ASSERT(same_tree(j, plain));
        CU_ASSERT(r.next >= (char *)room && r.next <= (char *)room + size);
        CU_ASSERT_EQUAL(((size_t)(r.next - (char *)room)) % TR_JSON_REGION_ALIGN, 0);
        int inside = (char *)j >= (char *)room && (char *)j < (char *)room + size;
        CU_ASSERT(inside == (size >= sizeof(cJSON)));   /* the root is the first piece */
        if (size == 0)
            CU_ASSERT(counted_allocs > 0);
        if (!counted_allocs)
            all_in_region = 1;
    }
    CU_ASSERT(all_in_region);   /* the largest region held the whole tree */
    arena_clear();
}

/* Decimals as traces write them (integer part, 1-6 fraction digits, some
 * exponents): the exact conversion and strtod agree bit for bit. */
static void test_numbers_match_strtod(void)
{
    unsigned long long x = 88172645463325252ull;
    int bad = 0, exact = 0;
    for (int i = 0; i < 200000; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        char text[64];
        unsigned long long ip = x % 10000000000000000ull >> (x % 40);
        int frac = (int)(x >> 50) % 6 + 1, e = (int)(x >> 40) % 50 - 25;
        unsigned long long p10 = 1;
        for (int k = 0; k < frac; k++)
            p10 *= 10;
        if (x >> 60 & 1)
            snprintf(text, sizeof text, "%s%llu.%0*llu", x >> 61 & 1 ? "-" : "", ip, frac,
                     (x >> 20) % p10);
        else
            snprintf(text, sizeof text, "%llue%d", ip, e);
        cJSON *j = tr_json_subset_parse(text, strlen(text), arena_alloc);
        if (!j) {
            bad++;
            continue;
        }
        double d = strtod(text, NULL);
        if (memcmp(&d, &j->valuedouble, sizeof d) != 0)
            bad++;
        else
            exact++;
        arena_clear();
    }
    arena_clear();
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(exact, 200000);
}

/* The whole of each shared Kineto trace, as one text. */
static void test_shared_traces(void)
{
    const char *dir = tr_unit_traces_dir();
    if (!dir)
        return;
    char path[4096];
    snprintf(path, sizeof path, "%s/kineto", dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    int taken = 0, disagree = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strstr(de->d_name, ".json"))
            continue;
        snprintf(path, sizeof path, "%s/kineto/%s", dir, de->d_name);
        gzFile gz = gzopen(path, "rb");
        if (!gz)
            continue;
        size_t cap = 1 << 20, len = 0;
        char *text = malloc(cap);
        int n;
        while (text && (n = gzread(gz, text + len, (unsigned)(cap - len - 1))) > 0) {
            len += (size_t)n;
            if (cap - len < 2) {
                char *bigger = realloc(text, cap *= 2);
                if (!bigger) {
                    free(text);
                    text = NULL;
                }
                text = bigger;
            }
        }
        gzclose(gz);
        if (!text)
            continue;
        while (len && (unsigned char)text[len - 1] <= ' ')
            len--;   /* the newline after the document */
        text[len] = '\0';
        int r = fast_vs_cjson(text, len);
        taken += r == 1;
        disagree += r < 0;
        if (r < 0)
            fprintf(stderr, "json_subset: %s differs from cJSON\n", de->d_name);
        free(text);
    }
    closedir(d);
    CU_ASSERT_EQUAL(disagree, 0);
    CU_ASSERT(taken >= 5);
}

TR_SUITE(json_subset,
         {"takes the subset, as cJSON", test_takes_the_subset},
         {"gives the rest to cJSON", test_gives_up},
         {"a leading value of a buffer", test_prefix},
         {"the root's members' numbers as text", test_member_numbers},
         {"a region allocated from first", test_region},
         {"numbers as strtod", test_numbers_match_strtod},
         {"shared Kineto traces whole", test_shared_traces})
