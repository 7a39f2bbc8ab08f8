#include "lib/names.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* libstdc++'s demangler: the reference implementation, callable from C. */
extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

char *tr_demangle(const char *name)
{
    /* Only Itanium-mangled symbols: a bare "t" would otherwise become a type name. */
    if (!name || name[0] != '_' || name[1] != 'Z' || name[2] == '\0')
        return NULL;
    int status = 0;
    char *out = __cxa_demangle(name, NULL, NULL, &status);
    if (status != 0) {
        free(out);
        return NULL;
    }
    return out;
}

/*
 * The suffixes PyTorch appends to an op's name, as one pattern anchored at
 * the offset it is tried from and at the end.  A message is "<name><suffix>"
 * with the shortest name that leaves a suffix this matches, so commas inside
 * the name are harmless.  A non-empty suffix opens with ", ", so only those
 * offsets are tried, left to right: one match per annotation, where a pattern
 * opening with a lazy ".*?" tried the suffix at every byte of the name.
 * seq: ", seq = N" (1.2+), ", seq=N" and ", stashed seq=N" (0.4-1.1).
 */
static const char suffix_pattern[] =
    "(?:, (?:stashed )?seq ?= ?(?<seq>-?\\d{1,18}))?"
    "(?:, op_id = (?<op>\\d{1,19}))?"
    "(?:, sizes = (?<sizes>\\[(?:\\[[-\\d, ]*\\](?:, )?)*\\]))?"
    "(?:, input_op_ids = (?<ids>\\[(?:\\(\\d+,-?\\d+\\)(?:, )?)*\\]))?$";

struct tr_nvtx_parser {
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    uint32_t g_seq, g_op, g_sizes, g_ids;
    int jit;   /* compiled to machine code: matched through pcre2_jit_match() */
};

tr_status tr_nvtx_parser_new(tr_nvtx_parser **out, tr_error *err)
{
    int ec;
    PCRE2_SIZE eo;
    tr_nvtx_parser *p = calloc(1, sizeof *p);
    if (!p)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    p->re = pcre2_compile((PCRE2_SPTR)suffix_pattern, PCRE2_ZERO_TERMINATED, PCRE2_ANCHORED,
                          &ec, &eo, NULL);
    if (!p->re) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(ec, buf, sizeof buf);
        free(p);
        return tr_fail(err, TR_ERR_RUNTIME, "internal regex error at %zu: %s", (size_t)eo, buf);
    }
    /* optional: without it, pcre2_match() interprets the pattern */
    p->jit = pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE) == 0;
    p->md = pcre2_match_data_create_from_pattern(p->re, NULL);
    p->mctx = pcre2_match_context_create(NULL);
    if (!p->md || !p->mctx) {
        tr_nvtx_parser_free(p);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    /* One try never backtracks far (each group's first bytes decide it), but
     * a hostile message is bounded all the same. */
    pcre2_set_match_limit(p->mctx, 1000000);
    p->g_seq = (uint32_t)pcre2_substring_number_from_name(p->re, (PCRE2_SPTR) "seq");
    p->g_op = (uint32_t)pcre2_substring_number_from_name(p->re, (PCRE2_SPTR) "op");
    p->g_sizes = (uint32_t)pcre2_substring_number_from_name(p->re, (PCRE2_SPTR) "sizes");
    p->g_ids = (uint32_t)pcre2_substring_number_from_name(p->re, (PCRE2_SPTR) "ids");
    *out = p;
    return TR_OK;
}

void tr_nvtx_parser_free(tr_nvtx_parser *p)
{
    if (!p)
        return;
    pcre2_match_data_free(p->md);
    pcre2_match_context_free(p->mctx);
    pcre2_code_free(p->re);
    free(p);
}

static int group(tr_nvtx_parser *p, uint32_t g, const char *msg, const char **s, size_t *len)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(p->md);
    if (ov[2 * g] == PCRE2_UNSET)
        return 0;
    *s = msg + ov[2 * g];
    *len = ov[2 * g + 1] - ov[2 * g];
    return 1;
}

static int64_t parse_i64(const char *s, size_t len)
{
    int64_t v = 0;
    int neg = len && *s == '-';
    for (size_t i = neg; i < len; i++)
        v = v * 10 + (s[i] - '0');
    return neg ? -v : v;
}

/* 1 when the suffix pattern matches msg from at to its end.  The JIT's own
 * entry skips pcre2_match()'s checks of the arguments, a quarter of a match
 * of a PyTorch annotation; the result is the same. */
static int match_at(tr_nvtx_parser *p, const char *msg, size_t len, size_t at)
{
    int rc = p->jit ? pcre2_jit_match(p->re, (PCRE2_SPTR)msg, len, at, 0, p->md, p->mctx)
                    : pcre2_match(p->re, (PCRE2_SPTR)msg, len, at, 0, p->md, p->mctx);
    return rc >= 0;
}

/* The offset the suffix starts at, len when the message has none. */
static size_t find_suffix(tr_nvtx_parser *p, const char *msg, size_t len)
{
    for (const char *c = memchr(msg, ',', len); c; c = memchr(c + 1, ',', len - (size_t)(c + 1 - msg))) {
        size_t at = (size_t)(c - msg);
        if (at + 1 < len && c[1] == ' ' && match_at(p, msg, len, at))
            return at;
    }
    return len;
}

void tr_nvtx_parse(tr_nvtx_parser *p, const char *msg, size_t len, tr_nvtx_annotation *out)
{
    memset(out, 0, sizeof *out);
    out->name = msg;
    out->name_len = len;
    out->seq = out->op_id = -1;
    size_t at = find_suffix(p, msg, len);
    if (at == len)
        return;
    const char *s;
    size_t n;
    if (group(p, p->g_seq, msg, &s, &n))
        out->seq = parse_i64(s, n);
    if (group(p, p->g_op, msg, &s, &n))
        out->op_id = parse_i64(s, n);
    if (group(p, p->g_sizes, msg, &s, &n)) {
        out->sizes = s;
        out->sizes_len = n;
    }
    if (group(p, p->g_ids, msg, &s, &n)) {
        out->input_op_ids = s;
        out->input_op_ids_len = n;
    }
    out->annotated = 1;
    /* An empty name (pre-1.5 builds dropped it when seq < 0): keep the whole message. */
    if (at > 0)
        out->name_len = at;
}

/* ---- short C++ names for narrow tables ---- */

typedef struct { char *p; size_t n, cap; int oom; } sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) {
            b->oom = 1;
            return;
        }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static const char ellipsis[] = "\xe2\x80\xa6";   /* U+2026: one column where "..." takes three */

static int is_open(char c) { return c == '<' || c == '(' || c == '{' || c == '['; }
static int is_close(char c) { return c == '>' || c == ')' || c == '}' || c == ']'; }
static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* Index just past the group opened at s[i]; len when it never closes.  One
 * counter for every bracket kind: demangled names nest them properly. */
static size_t skip_group(const char *s, size_t len, size_t i)
{
    int depth = 0;
    for (; i < len; i++) {
        if (is_open(s[i]))
            depth++;
        else if (is_close(s[i]) && --depth == 0)
            return i + 1;
    }
    return len;
}

/* "operator()" and "operator<": their brackets are a name, not a group. */
static size_t operator_len(const char *s, size_t len, size_t i)
{
    if (i + 8 > len || memcmp(s + i, "operator", 8) != 0 || (i && is_ident(s[i - 1])))
        return 0;
    size_t j = i + 8;
    if (j + 1 < len && s[j] == '(' && s[j + 1] == ')')
        return 10;
    while (j < len && strchr("<>=!+-*/%&|^~[]", s[j]) && s[j])
        j++;
    return j - i;
}

static void trim(const char **s, size_t *len)
{
    while (*len && **s == ' ')
        (*s)++, (*len)--;
    while (*len && (*s)[*len - 1] == ' ')
        (*len)--;
}

static void emit_templated(sbuf *b, const char *s, size_t len, int depth, int detail);

/* One template argument at nesting `depth`: its last meaningful scope (no
 * namespaces, lambdas, operator() or parameter lists), and its own template
 * arguments while detail allows; an argument that still has some at the
 * limit becomes the ellipsis. */
static void emit_arg(sbuf *b, const char *s, size_t len, int depth, int detail)
{
    trim(&s, &len);
    const char *best = s;
    size_t best_len = len, start = 0;
    int found = 0;
    for (size_t i = 0; i <= len;) {
        size_t op = i < len ? operator_len(s, len, i) : 0;
        if (i == len || (s[i] == ':' && i + 1 < len && s[i + 1] == ':')) {
            const char *c = s + start;
            size_t cl = i - start;
            trim(&c, &cl);
            if (cl && c[0] != '{' && operator_len(c, cl, 0) == 0) {
                best = c;
                best_len = cl;
                found = 1;
            }
            if (i == len)
                break;
            start = i += 2;
        } else if (op) {
            i += op;
        } else if (is_open(s[i])) {
            i = skip_group(s, len, i);
        } else {
            i++;
        }
    }
    if (!found) {   /* only lambdas: keep the last one as written */
        put(b, s, len);
        return;
    }
    /* the parameter list and what follows it (" const") go */
    int templated = 0;
    for (size_t i = 0; i < best_len;) {
        if (best[i] == '(' && i > 0) {
            best_len = i;
            break;
        }
        if (best[i] == '<')
            templated = 1;
        i = is_open(best[i]) ? skip_group(best, best_len, i) : i + 1;
    }
    trim(&best, &best_len);
    if (templated && depth > detail)
        put(b, ellipsis, sizeof ellipsis - 1);
    else if (templated)
        emit_templated(b, best, best_len, depth + 1, detail);
    else
        put(b, best, best_len);
}

/* Copies s, rewriting each template argument list at this level; args are at `depth`. */
static void emit_templated(sbuf *b, const char *s, size_t len, int depth, int detail)
{
    for (size_t i = 0; i < len;) {
        size_t op = operator_len(s, len, i);
        if (op) {
            put(b, s + i, op);
            i += op;
        } else if (s[i] == '<') {
            size_t end = skip_group(s, len, i);
            size_t inner_end = end > i + 1 && s[end - 1] == '>' ? end - 1 : end;
            put(b, "<", 1);
            size_t a = i + 1;
            for (size_t j = a; j <= inner_end;) {
                if (j == inner_end || s[j] == ',') {
                    if (a > i + 1)
                        put(b, ", ", 2);
                    emit_arg(b, s + a, j - a, depth, detail);
                    a = ++j;
                } else {
                    j = is_open(s[j]) ? skip_group(s, inner_end, j) : j + 1;
                }
            }
            put(b, ">", 1);
            i = end;
        } else if (is_open(s[i])) {
            size_t end = skip_group(s, len, i);
            put(b, s + i, end - i);
            i = end;
        } else {
            put(b, s + i, 1);
            i++;
        }
    }
}

static int is_cxx_name(const char *s)
{
    return s[0] != '<' && (strstr(s, "::") || strncmp(s, "void ", 5) == 0);
}

char *tr_short_name(const char *name, int detail)
{
    if (!is_cxx_name(name))
        return strdup(name);
    /* (anonymous namespace) never tells two names apart */
    static const char anon[] = "(anonymous namespace)";
    sbuf t = {0};
    put(&t, "", 0);
    for (const char *p = name; *p;) {
        const char *a = strstr(p, anon);
        if (!a) {
            put(&t, p, strlen(p));
            break;
        }
        put(&t, p, (size_t)(a - p));
        p = a + sizeof anon - 1;
        if (p[0] == ':' && p[1] == ':')
            p += 2;
    }
    if (t.oom) {
        free(t.p);
        return NULL;
    }
    const char *s = t.p;
    size_t len = t.n, head = len;
    int has_params = 0;
    /* the parameter list: a top-level "(" right after the name, closing at the end
     * but for qualifiers (" const") */
    for (size_t i = 0; i < len;) {
        size_t op = operator_len(s, len, i);
        if (op) {
            i += op;
            continue;
        }
        if (s[i] == '(' && i > 0 && (is_ident(s[i - 1]) || s[i - 1] == '>'
                                     || (i >= 10 && memcmp(s + i - 10, "operator()", 10) == 0))) {
            size_t end = skip_group(s, len, i), k = end;
            while (k < len && (s[k] == ' ' || s[k] == '&' || (s[k] >= 'a' && s[k] <= 'z')))
                k++;
            if (k == len && end <= len && s[end - 1] == ')') {
                head = i;
                has_params = 1;
                break;
            }
        }
        i = is_open(s[i]) ? skip_group(s, len, i) : i + 1;
    }
    /* the return type: everything up to the last top-level space after a type */
    size_t from = 0;
    if (has_params || strncmp(s, "void ", 5) == 0) {
        for (size_t i = 0; i < head;) {
            size_t op = operator_len(s, head, i);
            if (op) {
                i += op;
                continue;
            }
            if (s[i] == ' ' && i > from && i + 1 < head
                && (is_ident(s[i - 1]) || s[i - 1] == '>' || s[i - 1] == '*' || s[i - 1] == '&'))
                from = i + 1;
            i = is_open(s[i]) ? skip_group(s, head, i) : i + 1;
        }
    }
    sbuf b = {0};
    put(&b, "", 0);
    const char *h = s + from;
    size_t hl = head - from;
    trim(&h, &hl);
    emit_templated(&b, h, hl, 1, detail);
    free(t.p);
    if (b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* CUpti_ActivityOverheadKind */
static const struct {
    int64_t kind;
    const char *name;
} overhead_names[] = {
    {0, "[overhead: unknown]"},
    {1, "[overhead: driver compiler]"},
    {1 << 16, "[overhead: CUPTI buffer flush]"},
    {2 << 16, "[overhead: CUPTI instrumentation]"},
    {3 << 16, "[overhead: CUPTI resource]"},
    {4 << 16, "[overhead: runtime triggered module loading]"},
    {5 << 16, "[overhead: lazy function loading]"},
    {6 << 16, "[overhead: command buffer full]"},
    {7 << 16, "[overhead: activity buffer request]"},
    {8 << 16, "[overhead: UVM activity init]"},
};

void tr_overhead_name(char *buf, size_t n, int64_t kind)
{
    for (size_t i = 0; i < sizeof overhead_names / sizeof overhead_names[0]; i++)
        if (overhead_names[i].kind == kind) {
            snprintf(buf, n, "%s", overhead_names[i].name);
            return;
        }
    snprintf(buf, n, "[overhead: kind %lld]", (long long)kind);
}
