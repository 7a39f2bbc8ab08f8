/*
 * json_subset.c - see json_subset.h.  Each function returns 0, or -1 to give
 * the text back to cJSON; none of them reports an error itself.
 */
#include "ingest/readers/json_subset.h"

#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const unsigned char *p, *end;
    void *(*alloc)(size_t);
    tr_json_region *region;   /* NULL: every allocation through alloc() */
    int depth;
    const unsigned char *text;          /* where the root's text starts */
    tr_json_member_numbers *members;    /* NULL: none wanted */
} js_parser;

/* n bytes from the region when they fit (a call per node and string was a
 * tenth of the parse), else from alloc(). */
static inline void *js_alloc(js_parser *js, size_t n)
{
    void *p = js->region ? tr_json_region_take(js->region, n) : NULL;
    return p ? p : js->alloc(n);
}

/* cJSON skips every byte up to ' ' between tokens, control bytes included. */
static inline void skip_space(js_parser *js)
{
    while (js->p < js->end && *js->p <= ' ')
        js->p++;
}

static cJSON *new_node(js_parser *js)
{
    cJSON *n = js_alloc(js, sizeof *n);
    if (n)
        memset(n, 0, sizeof *n);
    return n;
}

/* The escapes cJSON turns into one byte; 0 for the others (\u among them). */
static unsigned char simple_escape(unsigned char c)
{
    switch (c) {
    case '"': case '\\': case '/': return c;
    case 'b': return '\b';
    case 'f': return '\f';
    case 'n': return '\n';
    case 'r': return '\r';
    case 't': return '\t';
    default: return 0;
    }
}

/* js->p at the opening '"'; *out: the unescaped text, NUL-terminated, *len
 * (when not NULL) its length. */
static int parse_string(js_parser *js, char **out, size_t *len)
{
    const unsigned char *start = js->p + 1, *q = start;
    size_t escapes = 0;
    for (;;) {
        q = tr_json_string_special(q, js->end);
        if (q >= js->end)
            return -1;
        if (*q == '"')
            break;
        if (js->end - q < 2 || !simple_escape(q[1]))
            return -1;
        escapes++;
        q += 2;
    }
    size_t n = (size_t)(q - start) - escapes;
    char *s = js_alloc(js, n + 1);
    if (!s)
        return -1;
    if (!escapes) {
        memcpy(s, start, n);
    } else {
        char *o = s;
        for (const unsigned char *i = start; i < q;) {
            const unsigned char *run = tr_json_string_special(i, q);
            memcpy(o, i, (size_t)(run - i));
            o += run - i;
            if (run == q)
                break;
            *o++ = (char)simple_escape(run[1]);
            i = run + 2;
        }
    }
    s[n] = '\0';
    *out = s;
    if (len)
        *len = n;
    js->p = q + 1;
    return 0;
}

static int is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

/* A byte cJSON copies into a number's text: the number must end before one. */
static int number_byte(unsigned char c)
{
    return is_digit(c) || c == '.' || c == '-' || c == '+' || c == 'e' || c == 'E';
}

#define JS_EXACT_MAX ((uint64_t)1 << 53)

/* Digits from js->p into *w while it stays exact; *dropped counts those that
 * did not fit, *count all of them. */
static void read_digits(js_parser *js, uint64_t *w, int *dropped, int *count)
{
    for (; js->p < js->end && is_digit(*js->p); js->p++, (*count)++) {
        if (*w <= (UINT64_MAX - 9) / 10)
            *w = *w * 10 + (uint64_t)(*js->p - '0');
        else
            (*dropped)++;
    }
}

/* A number by JSON's grammar, as strtod would read it: js->p at '-' or a digit. */
static int parse_number(js_parser *js, cJSON *item)
{
    static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                   1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                   1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    const unsigned char *text = js->p;
    int neg = *js->p == '-';
    js->p += neg;
    if (js->p >= js->end || !is_digit(*js->p))
        return -1;
    uint64_t w = 0;
    int dropped = 0, digits = 0, exp10 = 0;
    if (*js->p == '0')
        js->p++;
    else
        read_digits(js, &w, &dropped, &digits);
    if (js->p < js->end && *js->p == '.') {
        js->p++;
        int frac = 0;
        read_digits(js, &w, &dropped, &frac);
        if (!frac)
            return -1;
        exp10 -= frac;
    }
    if (js->p < js->end && (*js->p == 'e' || *js->p == 'E')) {
        js->p++;
        int eneg = js->p < js->end && *js->p == '-';
        if (js->p < js->end && (*js->p == '-' || *js->p == '+'))
            js->p++;
        int e = 0, n = 0;
        for (; js->p < js->end && is_digit(*js->p); js->p++, n++)
            if (e < 10000)
                e = e * 10 + (*js->p - '0');
        if (!n)
            return -1;
        exp10 += eneg ? -e : e;
    }
    size_t len = (size_t)(js->p - text);
    /* cJSON reads at most 63 bytes of a number, and all the bytes it copies */
    if (len > 63 || (js->p < js->end && number_byte(*js->p)))
        return -1;
    double d;
    if (!dropped && w <= JS_EXACT_MAX && exp10 >= -22 && exp10 <= 22) {
        d = (double)w;
        d = exp10 < 0 ? d / pow10[-exp10] : d * pow10[exp10];
        if (neg)
            d = -d;
    } else {
        char buf[64];
        memcpy(buf, text, len);
        buf[len] = '\0';
        char *after;
        d = strtod(buf, &after);
        if (after != buf + len)
            return -1;
    }
    item->type = cJSON_Number;
    item->valuedouble = d;
    item->valueint = d >= INT_MAX ? INT_MAX : d <= (double)INT_MIN ? INT_MIN : (int)d;
    return 0;
}

static int parse_value(js_parser *js, cJSON *item);

/* Links the items as cJSON does: next to the last, prev back, and the head's
 * prev to the tail. */
static void link_item(cJSON **head, cJSON **tail, cJSON *n)
{
    if (!*head) {
        *head = n;
    } else {
        (*tail)->next = n;
        n->prev = *tail;
    }
    *tail = n;
}

static int finish_container(cJSON *item, int type, cJSON *head, cJSON *tail)
{
    if (head)
        head->prev = tail;
    item->type = type;
    item->child = head;
    return 0;
}

/* strcmp(name, s) == 0 for s of n bytes and a NUL, as a lookup in the tree
 * compares (a key may hold a NUL byte: the lookup stops there), without a
 * call (strcmp was 5% of the parsing thread's time at 10^7 events). */
static int same_name(const char *name, const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && s[i] && name[i] == s[i])
        i++;
    return !name[i] && (i == n || !s[i]);
}

/* Notes the root object's member n, whose key is keylen bytes long and whose
 * value's text is [value, js->p), when it is the first of a wanted name. */
static void note_member(js_parser *js, const cJSON *n, size_t keylen, const unsigned char *value)
{
    tr_json_member_numbers *m = js->members;
    for (int k = 0; k < m->nkeys; k++) {
        if (n->string[0] != m->keys[k][0] || !same_name(m->keys[k], n->string, keylen))
            continue;
        if ((m->number | m->other) >> k & 1)
            return;
        if (n->type == cJSON_Number) {
            m->number |= 1u << k;
            m->off[k] = (size_t)(value - js->text);
            m->len[k] = (size_t)(js->p - value);
        } else {
            m->other |= 1u << k;
        }
        return;
    }
}

/* js->p at '[' or '{'. */
static int parse_container(js_parser *js, cJSON *item)
{
    int object = *js->p == '{';
    unsigned char close = object ? '}' : ']';
    if (++js->depth > TR_JSON_SUBSET_DEPTH)
        return -1;
    js->p++;
    skip_space(js);
    cJSON *head = NULL, *tail = NULL;
    if (js->p < js->end && *js->p == close) {
        js->p++;
        js->depth--;
        return finish_container(item, object ? cJSON_Object : cJSON_Array, NULL, NULL);
    }
    for (;;) {
        cJSON *n = new_node(js);
        if (!n)
            return -1;
        link_item(&head, &tail, n);
        size_t keylen = 0;
        if (object) {
            if (js->p >= js->end || *js->p != '"' || parse_string(js, &n->string, &keylen) < 0)
                return -1;
            skip_space(js);
            if (js->p >= js->end || *js->p != ':')
                return -1;
            js->p++;
            skip_space(js);
        }
        const unsigned char *value = js->p;
        if (parse_value(js, n) < 0)
            return -1;
        if (object && js->depth == 1 && js->members)
            note_member(js, n, keylen, value);
        skip_space(js);
        if (js->p >= js->end)
            return -1;
        if (*js->p == close)
            break;
        if (*js->p != ',')
            return -1;
        js->p++;
        skip_space(js);
    }
    js->p++;
    js->depth--;
    return finish_container(item, object ? cJSON_Object : cJSON_Array, head, tail);
}

static int literal(js_parser *js, const char *word, size_t n, cJSON *item, int type)
{
    if ((size_t)(js->end - js->p) < n || memcmp(js->p, word, n) != 0)
        return -1;
    js->p += n;
    item->type = type;
    item->valueint = type == cJSON_True;
    return 0;
}

/* js->p at the value's first byte. */
static int parse_value(js_parser *js, cJSON *item)
{
    if (js->p >= js->end)
        return -1;
    switch (*js->p) {
    case '"':
        item->type = cJSON_String;
        return parse_string(js, &item->valuestring, NULL);
    case '{': case '[':
        return parse_container(js, item);
    case 'n':
        return literal(js, "null", 4, item, cJSON_NULL);
    case 't':
        return literal(js, "true", 4, item, cJSON_True);
    case 'f':
        return literal(js, "false", 5, item, cJSON_False);
    default:
        return *js->p == '-' || is_digit(*js->p) ? parse_number(js, item) : -1;
    }
}

/* The first value of text[0..len) and where it ends. */
static cJSON *parse_root(const char *text, size_t len, tr_json_region *region, void *(*alloc)(size_t),
                         size_t *used, tr_json_member_numbers *members)
{
    if (!text || !len || (unsigned char)text[0] == 0xEF)   /* cJSON skips a byte order mark */
        return NULL;
    const unsigned char *u = (const unsigned char *)text;
    js_parser js = {u, u + len, alloc, region, 0, u, members};
    if (members)
        members->number = members->other = 0;
    skip_space(&js);
    cJSON *root = new_node(&js);
    if (!root || parse_value(&js, root) < 0)
        return NULL;
    *used = (size_t)(js.p - (const unsigned char *)text);
    return root;
}

cJSON *tr_json_subset_parse_prefix_members(const char *text, size_t len, tr_json_region *region,
                                           void *(*alloc)(size_t), size_t *used,
                                           tr_json_member_numbers *members)
{
    cJSON *root = parse_root(text, len, region, alloc, used, members);
    /* a number that reaches len may have more digits beyond it */
    return root && !(root->type == cJSON_Number && *used == len) ? root : NULL;
}

cJSON *tr_json_subset_parse_prefix_in(const char *text, size_t len, tr_json_region *region,
                                      void *(*alloc)(size_t), size_t *used)
{
    return tr_json_subset_parse_prefix_members(text, len, region, alloc, used, NULL);
}

cJSON *tr_json_subset_parse_prefix(const char *text, size_t len, void *(*alloc)(size_t),
                                   size_t *used)
{
    return tr_json_subset_parse_prefix_in(text, len, NULL, alloc, used);
}

cJSON *tr_json_subset_parse(const char *text, size_t len, void *(*alloc)(size_t))
{
    size_t used = 0;
    cJSON *root = parse_root(text, len, NULL, alloc, &used, NULL);
    /* cJSON does not skip the spaces after the value: the caller's check that
     * it read the whole text fails there */
    return root && used == len ? root : NULL;
}
