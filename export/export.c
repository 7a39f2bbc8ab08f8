/* export.c - the metric and format tables, options and the entry point. */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "export/scan.h"

static int64_t m_self_cpu(const tr_xrow *r) { return r->cpu_self; }
/* GPU time is counted once: on the activity itself (a leaf under its launching call).
 * The copy of it in the enclosing range's gpu_self_ns would count it twice. */
static int64_t m_self_gpu(const tr_xrow *r) { return r->on_gpu ? r->gpu_self : 0; }
static int64_t m_cpu_total(const tr_xrow *r) { return r->cpu_total; }
static int64_t m_gpu_total(const tr_xrow *r) { return r->gpu_total; }
static int64_t m_count(const tr_xrow *r) { (void)r; return 1; }
static int64_t m_self_cpu_mem(const tr_xrow *r) { return r->mem_cpu_self; }
static int64_t m_self_gpu_mem(const tr_xrow *r) { return r->mem_gpu_self; }

const tr_export_metric tr_export_metrics[] = {
    [TR_M_SELF_CPU] = {"self_cpu", "self_cpu_time_total", "self CPU time", "ns", 0, m_self_cpu},
    [TR_M_SELF_GPU] = {"self_gpu", "self_cuda_time_total", "GPU time", "ns", 0, m_self_gpu},
    [TR_M_CPU_TOTAL] = {"cpu_total", NULL, "CPU total time", "ns", 1, m_cpu_total},
    [TR_M_GPU_TOTAL] = {"gpu_total", NULL, "GPU total time", "ns", 1, m_gpu_total},
    [TR_M_COUNT] = {"count", NULL, "calls", "calls", 0, m_count},
    [TR_M_SELF_CPU_MEM] = {"self_cpu_mem", NULL, "self CPU memory", "bytes", 0, m_self_cpu_mem},
    [TR_M_SELF_GPU_MEM] = {"self_gpu_mem", NULL, "self GPU memory", "bytes", 0, m_self_gpu_mem},
    {NULL, NULL, NULL, NULL, 0, NULL},
};

const tr_export_metric *tr_export_metric_lookup(const char *name)
{
    for (const tr_export_metric *m = tr_export_metrics; m->name; m++)
        if (strcmp(m->name, name) == 0 || (m->torch && strcmp(m->torch, name) == 0))
            return m;
    return NULL;
}

const tr_export_format tr_export_formats[] = {
    {"stacks", tr_export_stacks},
    {"flamegraph", tr_export_flamegraph},
    {"chrome", tr_export_chrome},
    {"events", tr_export_events_jsonl},
    {"events-csv", tr_export_events_csv},
};
const size_t tr_export_nformats = sizeof tr_export_formats / sizeof tr_export_formats[0];

const tr_export_format *tr_export_format_lookup(const char *name)
{
    for (size_t i = 0; i < tr_export_nformats; i++)
        if (strcmp(tr_export_formats[i].name, name) == 0)
            return &tr_export_formats[i];
    return NULL;
}

void tr_export_opts_init(tr_export_opts *o)
{
    memset(o, 0, sizeof *o);
    o->t_start = INT64_MIN;
    o->t_end = INT64_MAX;
    o->width = 1200;
    o->minwidth = 0.1;
}

void tr_export_opts_free(tr_export_opts *o)
{
    pcre2_code_free(o->include_re);
    pcre2_code_free(o->exclude_re);
    o->include_re = o->exclude_re = NULL;
    tr_rank_set_free(&o->ranks);
}

tr_status tr_export_set_regex(tr_export_opts *o, int which, const char *pattern, tr_error *err)
{
    int code;
    PCRE2_SIZE off;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF
                                   | PCRE2_MATCH_INVALID_UTF, &code, &off, NULL);
    const char *opt = which ? "--exclude" : "--include";
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return tr_fail(err, TR_ERR_USAGE, "invalid %s regex at offset %zu: %s", opt, (size_t)off,
                       (const char *)msg);
    }
    void **slot = which ? &o->exclude_re : &o->include_re;
    pcre2_code_free(*slot);
    *slot = re;
    return TR_OK;
}

static int parse_i64(const char *s, size_t len, int64_t *v)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *end;
    errno = 0;
    long long x = strtoll(buf, &end, 10);
    if (*end || errno)
        return 0;
    *v = x;
    return 1;
}

tr_status tr_export_parse_time_range(tr_export_opts *o, const char *arg, tr_error *err)
{
    const char *s = arg;
    int absolute = 0;
    if (*s == '@')
        absolute = 1, s++;
    const char *colon = strchr(s, ':');
    int64_t a = INT64_MIN, b = INT64_MAX;
    if (!colon || (colon > s && !parse_i64(s, (size_t)(colon - s), &a))
        || (colon[1] && !parse_i64(colon + 1, strlen(colon + 1), &b)) || a > b)
        return tr_fail(err, TR_ERR_USAGE, "invalid --time-range '%s' (START:END in ns, "
                       "relative to the trace start; '@START:END' for absolute times)", arg);
    o->has_time_range = 1;
    o->time_absolute = absolute;
    o->t_start = a;
    o->t_end = b;
    return TR_OK;
}

tr_status tr_export_run(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    if (!o->format)
        return tr_fail(err, TR_ERR_USAGE, "no output format chosen");
    return o->format->write(db, o, out, err);
}
