/* Event selection for trace-analyze (and any tool that filters events). */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/analyze.h"
#include "lib/model.h"
#include "lib/suggest.h"

struct tr_regex {
    pcre2_code *re;
    pcre2_match_data *md;
    struct tr_regex *next;   /* several --include: any may match */
};

#define KBIT(k) (1u << (k))
#define GPU_MASK (KBIT(TR_KIND_KERNEL) | KBIT(TR_KIND_MEMCPY) | KBIT(TR_KIND_MEMSET) | KBIT(TR_KIND_CUDA_EVENT))

/* --kind choices: a kind's own name selects it; these add groups and plurals. */
static const struct { const char *name; unsigned mask; } kind_choices[] = {
    {"ops", KBIT(TR_KIND_OP)},
    {"ranges", KBIT(TR_KIND_RANGE)},
    {"marks", KBIT(TR_KIND_MARK)},
    {"api", KBIT(TR_KIND_RUNTIME) | KBIT(TR_KIND_DRIVER)},
    {"kernels", KBIT(TR_KIND_KERNEL)},
    {"copies", KBIT(TR_KIND_MEMCPY)},
    {"sets", KBIT(TR_KIND_MEMSET)},
    {"gpu", GPU_MASK},
    {"cpu", ~GPU_MASK & ~1u},
};

const char *tr_kind_choices(void)
{
    static char buf[512];
    if (!buf[0]) {
        size_t n = 0;
        for (size_t i = 0; i < sizeof kind_choices / sizeof kind_choices[0]; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", n ? " " : "", kind_choices[i].name);
        for (int k = 1; k < TR_KIND_COUNT_; k++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, " %s", tr_kinds[k].name);
    }
    return buf;
}

tr_status tr_selection_parse_kinds(tr_selection *s, const char *list, tr_error *err)
{
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ",");
        unsigned mask = 0;
        for (size_t i = 0; i < sizeof kind_choices / sizeof kind_choices[0]; i++)
            if (strlen(kind_choices[i].name) == n && !strncmp(kind_choices[i].name, p, n))
                mask = kind_choices[i].mask;
        for (int k = 1; k < TR_KIND_COUNT_ && !mask; k++)
            if (strlen(tr_kinds[k].name) == n && !strncmp(tr_kinds[k].name, p, n))
                mask = KBIT(k);
        if (!mask) {
            char hint[128];
            return tr_fail(err, TR_ERR_USAGE, "unknown kind '%.*s'%s (valid: %s)", (int)n, p,
                           tr_suggest_hint(hint, sizeof hint, p, n, tr_kind_choices()), tr_kind_choices());
        }
        s->kind_mask |= mask;
        p += n;
        p += *p == ',';
    }
    return TR_OK;
}

tr_status tr_selection_add_regex(tr_selection *s, int exclude, const char *pattern, tr_error *err)
{
    int ec;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_MATCH_INVALID_UTF,
                                   &ec, &off, NULL);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(ec, msg, sizeof msg);
        return tr_fail(err, TR_ERR_USAGE, "invalid regular expression '%s' at offset %zu: %s",
                       pattern, (size_t)off, (char *)msg);
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    struct tr_regex *r = calloc(1, sizeof *r);
    if (!r || !(r->md = pcre2_match_data_create_from_pattern(re, NULL))) {
        free(r);
        pcre2_code_free(re);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    r->re = re;
    struct tr_regex **head = exclude ? &s->exclude : &s->include;
    r->next = *head;
    *head = r;
    return TR_OK;
}

static int any_match(struct tr_regex *r, const char *s, size_t len)
{
    for (; r; r = r->next)
        if (pcre2_match(r->re, (PCRE2_SPTR)s, len, 0, 0, r->md, NULL) >= 0)
            return 1;
    return 0;
}

static int name_ok(const tr_selection *s, const char *name, size_t len)
{
    if (s->include && !any_match(s->include, name, len))
        return 0;
    if (s->exclude && any_match(s->exclude, name, len))
        return 0;
    return 1;
}

int tr_selection_name_id_ok(const tr_selection *s, sqlite3_stmt *name_stmt, tr_i64map *cache,
                            int64_t name_id)
{
    if (!s || (!s->include && !s->exclude))
        return 1;
    int64_t ok;
    if (tr_i64map_get(cache, name_id, &ok))
        return (int)ok;
    const char *v = "";
    int len = 0;
    sqlite3_bind_int64(name_stmt, 1, name_id);
    if (sqlite3_step(name_stmt) == SQLITE_ROW && sqlite3_column_text(name_stmt, 0)) {
        v = (const char *)sqlite3_column_text(name_stmt, 0);
        len = sqlite3_column_bytes(name_stmt, 0);
    }
    ok = name_ok(s, v, (size_t)len);
    sqlite3_reset(name_stmt);
    tr_i64map_put(cache, name_id, ok);
    return (int)ok;
}

void tr_selection_free(tr_selection *s)
{
    for (int which = 0; which < 2; which++) {
        struct tr_regex *r = which ? s->exclude : s->include;
        while (r) {
            struct tr_regex *n = r->next;
            pcre2_match_data_free(r->md);
            pcre2_code_free(r->re);
            free(r);
            r = n;
        }
    }
    s->include = s->exclude = NULL;
    tr_selection_unbind(s);
    tr_rank_set_free(&s->ranks);
}

tr_status tr_selection_bind(tr_selection *s, sqlite3 *db, tr_error *err)
{
    s->rank_map = NULL;
    if (!s->ranks.n)
        return TR_OK;
    tr_rank_map *m = calloc(1, sizeof *m);
    if (!m)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    tr_status st = tr_rank_map_load(m, db, s->rank_base, &s->ranks, err);
    if (st != TR_OK) {
        tr_rank_map_free(m);
        free(m);
        return st;
    }
    s->rank_map = m;
    return TR_OK;
}

void tr_selection_unbind(tr_selection *s)
{
    if (s->rank_map) {
        tr_rank_map_free(s->rank_map);
        free(s->rank_map);
        s->rank_map = NULL;
    }
}

/* "1500", "1.5us", "2ms", "0.1s", "" (open end) -> ns; -1 on error, -2 for empty. */
static int64_t parse_time(const char *s, size_t n)
{
    if (n == 0)
        return -2;
    char buf[64];
    if (n >= sizeof buf)
        return -1;
    memcpy(buf, s, n);
    buf[n] = '\0';
    char *end;
    double v = strtod(buf, &end);
    double scale = 1;
    if (end == buf || v < 0)
        return -1;
    if (!strcmp(end, "") || !strcmp(end, "ns")) scale = 1;
    else if (!strcmp(end, "us")) scale = 1e3;
    else if (!strcmp(end, "ms")) scale = 1e6;
    else if (!strcmp(end, "s")) scale = 1e9;
    else return -1;
    double ns = v * scale;
    return ns > 9.2e18 ? -1 : (int64_t)(ns + 0.5);
}

tr_status tr_parse_time_range(const char *text, int64_t *start, int64_t *end, tr_error *err)
{
    const char *colon = strchr(text, ':');
    if (!colon)
        return tr_fail(err, TR_ERR_USAGE, "invalid --time-range '%s' (START:END, e.g. 1.5ms:20ms)", text);
    int64_t s = parse_time(text, (size_t)(colon - text));
    int64_t e = parse_time(colon + 1, strlen(colon + 1));
    if (s == -1 || e == -1 || (s >= 0 && e >= 0 && e <= s))
        return tr_fail(err, TR_ERR_USAGE,
                       "invalid --time-range '%s' (START:END with START < END; units ns, us, ms, s)", text);
    *start = s == -2 ? 0 : s;
    *end = e == -2 ? INT64_MAX : e;
    return TR_OK;
}
