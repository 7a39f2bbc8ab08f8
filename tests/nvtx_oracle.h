/*
 * nvtx_oracle.h - the split of an emit_nvtx annotation by its definition, one
 * pattern with a lazy name before the suffixes, which lib/names.c's parser
 * (an anchored suffix pattern tried at each ", ") must agree with.  For the
 * unit test and the fuzz target.
 *
 * Ownership: nvtx_oracle_init() compiles the pattern into the caller's
 * nvtx_oracle, nvtx_oracle_free() releases it.  Header-only (static).
 */
#ifndef TR_TESTS_NVTX_ORACLE_H
#define TR_TESTS_NVTX_ORACLE_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdint.h>

#include "lib/names.h"

static const char nvtx_oracle_pattern[] =
    "^(?<name>.*?)"
    "(?:, (?:stashed )?seq ?= ?(?<seq>-?\\d{1,18}))?"
    "(?:, op_id = (?<op>\\d{1,19}))?"
    "(?:, sizes = (?<sizes>\\[(?:\\[[-\\d, ]*\\](?:, )?)*\\]))?"
    "(?:, input_op_ids = (?<ids>\\[(?:\\(\\d+,-?\\d+\\)(?:, )?)*\\]))?$";

typedef struct {
    pcre2_code *re;
    pcre2_match_data *md;
    pcre2_match_context *mctx;
} nvtx_oracle;

static inline int nvtx_oracle_init(nvtx_oracle *o)
{
    int ec;
    PCRE2_SIZE eo;
    o->re = pcre2_compile((PCRE2_SPTR)nvtx_oracle_pattern, PCRE2_ZERO_TERMINATED, PCRE2_DOTALL, &ec,
                          &eo, NULL);
    o->md = o->re ? pcre2_match_data_create_from_pattern(o->re, NULL) : NULL;
    o->mctx = pcre2_match_context_create(NULL);
    if (o->mctx)
        pcre2_set_match_limit(o->mctx, 1000000);
    return o->re && o->md && o->mctx ? 0 : -1;
}

static inline void nvtx_oracle_free(nvtx_oracle *o)
{
    pcre2_match_data_free(o->md);
    pcre2_match_context_free(o->mctx);
    pcre2_code_free(o->re);
}

/* The group's offsets in the last match, 0 when it did not take part. */
static inline int nvtx_oracle_group(const nvtx_oracle *o, const char *name, size_t *from, size_t *to)
{
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(o->md);
    int g = pcre2_substring_number_from_name(o->re, (PCRE2_SPTR)name);
    if (g < 0 || ov[2 * g] == PCRE2_UNSET)
        return 0;
    *from = ov[2 * g];
    *to = ov[2 * g + 1];
    return 1;
}

/* The group's number (digits, an optional leading '-'), -1 when it did not
 * take part. */
static inline int64_t nvtx_oracle_number(const nvtx_oracle *o, const char *name, const char *msg)
{
    size_t from, to;
    if (!nvtx_oracle_group(o, name, &from, &to))
        return -1;
    int neg = msg[from] == '-';
    int64_t v = 0;
    for (size_t i = from + (size_t)neg; i < to; i++)
        v = v * 10 + (msg[i] - '0');
    return neg ? -v : v;
}

static inline int nvtx_oracle_span_is(const nvtx_oracle *o, const char *name, const char *msg,
                               const char *got, size_t got_len)
{
    size_t from, to;
    if (!nvtx_oracle_group(o, name, &from, &to))
        return got == NULL;
    return got == msg + from && got_len == to - from;
}

/* 1 when a, the parse of msg[0..len), is the split the pattern gives, or
 * when the pattern gives none within its match limit (a hostile message);
 * 0 when they differ. */
static inline int nvtx_oracle_agrees(nvtx_oracle *o, const char *msg, size_t len, const tr_nvtx_annotation *a)
{
    int rc = pcre2_match(o->re, (PCRE2_SPTR)msg, len, 0, 0, o->md, o->mctx);
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT || rc == PCRE2_ERROR_HEAPLIMIT)
        return 1;
    if (rc < 0)
        return 0;   /* its suffixes are optional: it always matches */
    size_t from, to;
    int annotated = 0;
    static const char *const suffixes[] = {"seq", "op", "sizes", "ids"};
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++)
        annotated |= nvtx_oracle_group(o, suffixes[i], &from, &to);
    size_t name_len = len;
    if (annotated && nvtx_oracle_group(o, "name", &from, &to) && to > from)
        name_len = to - from;
    return a->annotated == annotated && a->name == msg && a->name_len == name_len
           && a->seq == nvtx_oracle_number(o, "seq", msg) && a->op_id == nvtx_oracle_number(o, "op", msg)
           && nvtx_oracle_span_is(o, "sizes", msg, a->sizes, a->sizes_len)
           && nvtx_oracle_span_is(o, "ids", msg, a->input_op_ids, a->input_op_ids_len);
}

#endif
