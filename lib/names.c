#include "lib/names.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
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
 * One pattern, anchored at both ends, with a lazy name: the suffixes PyTorch
 * appends are matched right to left, so commas inside the name are harmless.
 * seq: ", seq = N" (1.2+), ", seq=N" and ", stashed seq=N" (0.4-1.1).
 */
static const char annotation_pattern[] =
    "^(?<name>.*?)"
    "(?:, (?:stashed )?seq ?= ?(?<seq>-?\\d{1,18}))?"
    "(?:, op_id = (?<op>\\d{1,19}))?"
    "(?:, sizes = (?<sizes>\\[(?:\\[[-\\d, ]*\\](?:, )?)*\\]))?"
    "(?:, input_op_ids = (?<ids>\\[(?:\\(\\d+,-?\\d+\\)(?:, )?)*\\]))?$";

struct tr_nvtx_parser {
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
    uint32_t g_name, g_seq, g_op, g_sizes, g_ids;
};

tr_status tr_nvtx_parser_new(tr_nvtx_parser **out, tr_error *err)
{
    int ec;
    PCRE2_SIZE eo;
    tr_nvtx_parser *p = calloc(1, sizeof *p);
    if (!p)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    p->re = pcre2_compile((PCRE2_SPTR)annotation_pattern, PCRE2_ZERO_TERMINATED, PCRE2_DOTALL,
                          &ec, &eo, NULL);
    if (!p->re) {
        PCRE2_UCHAR buf[256];
        pcre2_get_error_message(ec, buf, sizeof buf);
        free(p);
        return tr_fail(err, TR_ERR_RUNTIME, "internal regex error at %zu: %s", (size_t)eo, buf);
    }
    pcre2_jit_compile(p->re, PCRE2_JIT_COMPLETE);   /* optional: falls back to the interpreter */
    p->md = pcre2_match_data_create_from_pattern(p->re, NULL);
    p->mctx = pcre2_match_context_create(NULL);
    if (!p->md || !p->mctx) {
        tr_nvtx_parser_free(p);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    /* Hostile names must not make a lazy match quadratic for long: bound it. */
    pcre2_set_match_limit(p->mctx, 1000000);
    p->g_name = (uint32_t)pcre2_substring_number_from_name(p->re, (PCRE2_SPTR) "name");
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

void tr_nvtx_parse(tr_nvtx_parser *p, const char *msg, size_t len, tr_nvtx_annotation *out)
{
    memset(out, 0, sizeof *out);
    out->name = msg;
    out->name_len = len;
    out->seq = out->op_id = -1;
    /* Cheap pre-filter: every annotation has ", " followed by one of the keys. */
    if (!memchr(msg, ',', len))
        return;
    int rc = pcre2_match(p->re, (PCRE2_SPTR)msg, len, 0, 0, p->md, p->mctx);
    if (rc < 0)
        return;
    const char *s;
    size_t n;
    if (group(p, p->g_seq, msg, &s, &n)) {
        out->seq = parse_i64(s, n);
        out->annotated = 1;
    }
    if (group(p, p->g_op, msg, &s, &n)) {
        out->op_id = parse_i64(s, n);
        out->annotated = 1;
    }
    if (group(p, p->g_sizes, msg, &s, &n)) {
        out->sizes = s;
        out->sizes_len = n;
        out->annotated = 1;
    }
    if (group(p, p->g_ids, msg, &s, &n)) {
        out->input_op_ids = s;
        out->input_op_ids_len = n;
        out->annotated = 1;
    }
    if (out->annotated && group(p, p->g_name, msg, &s, &n) && n > 0) {
        out->name = s;
        out->name_len = n;
    }
    /* An empty name (pre-1.5 builds dropped it when seq < 0): keep the whole message. */
}
