/* The escapers of lib/escape.h (folded stacks, XML, JSON, CSV, markdown, text table);
 * determinism of the export writers. */
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "lib/escape.h"
#include "lib/model.h"
#include "lib/rundb.h"
#include "lib/tree.h"
#include "tests/unit/unit.h"

typedef void (*escaper)(FILE *, const char *, size_t);

static char *esc(escaper fn, const char *s, size_t len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    fn(f, s, len);
    fclose(f);
    return buf;
}

#define CHECK_ESC(fn, in, want)                                   \
    do {                                                          \
        char *got_ = esc(fn, in, sizeof(in) - 1);                 \
        CU_ASSERT_STRING_EQUAL(got_, want);                       \
        free(got_);                                               \
    } while (0)

static void test_json(void)
{
    CHECK_ESC(tr_put_json_str, "plain", "\"plain\"");
    CHECK_ESC(tr_put_json_str, "say \"hi\"\\", "\"say \\\"hi\\\"\\\\\"");
    CHECK_ESC(tr_put_json_str, "a\nb\tc\x01", "\"a\\nb\\tc\\u0001\"");
    CHECK_ESC(tr_put_json_str, "\xff" "A", "\"\xef\xbf\xbd" "A\"");         /* invalid byte -> U+FFFD */
    CHECK_ESC(tr_put_json_str, "\xc3\xa9", "\"\xc3\xa9\"");                 /* valid UTF-8 kept */
    CHECK_ESC(tr_put_json_str, "\xed\xa0\x80", "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\"");  /* surrogate */
    CHECK_ESC(tr_put_json_str, "\xe2\x80\xa8", "\"\\u2028\"");
    CHECK_ESC(tr_put_json_str, "a\0b", "\"a\\u0000b\"");
}

static void test_xml(void)
{
    CHECK_ESC(tr_put_xml_text, "<script>alert(1)</script>", "&lt;script&gt;alert(1)&lt;/script&gt;");
    CHECK_ESC(tr_put_xml_text, "a&b \"c\" 'd'", "a&amp;b &quot;c&quot; &#39;d&#39;");
    CHECK_ESC(tr_put_xml_text, "x\x01y\nz", "x\xef\xbf\xbdy z");   /* no XML-forbidden characters */
    CHECK_ESC(tr_put_xml_text, "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd");   /* overlong */
}

static void test_folded(void)
{
    CHECK_ESC(tr_put_folded_frame, "a;b\nc\rd", "a_b c d");
    CHECK_ESC(tr_put_folded_frame, "", "[unnamed]");
    CHECK_ESC(tr_put_folded_frame, "void k<float>(int)", "void k<float>(int)");
    CHECK_ESC(tr_put_torch_frame, "my file.py(3): f;g\tx", "my_file.py(3):_f_g_x");
}

static void test_cut(void)
{
    CHECK_ESC(tr_put_json_str, "", "\"\"");
    char *got = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&got, &n);
    tr_put_json_str_max(f, "ab\xc3\xa9z", 5, 3);   /* never splits the e-acute */
    fputc('|', f);
    tr_put_json_str_max(f, "abc", 3, 3);
    fclose(f);
    CU_ASSERT_STRING_EQUAL(got, "\"ab" TR_ELLIPSIS "\"|\"abc\"");
    free(got);
    CU_ASSERT_EQUAL(tr_utf8_cut("\xf0\x9f\x94\xa5x", 5, 3), 0);
    CU_ASSERT_EQUAL(tr_utf8_cut("\xf0\x9f\x94\xa5x", 5, 4), 4);
    CU_ASSERT_EQUAL(tr_utf8_cut("\x80\x80\x80\x80\x80", 5, 4), 4);   /* not UTF-8: any cut */
    /* repeated huge names: short ones whole, long ones from the budget, then cut short */
    tr_name_cap cap = {4, 8, 6};
    CU_ASSERT_EQUAL(tr_name_cap_take(&cap, "abcd", 4), 4);
    CU_ASSERT_EQUAL(tr_name_cap_take(&cap, "abcdefghij", 10), 8);
    CU_ASSERT_EQUAL(tr_name_cap_take(&cap, "abcdefghij", 10), 4);   /* 2 left: not enough */
    CU_ASSERT_EQUAL(tr_name_cap_take(&cap, "abcdef", 6), 6);
    CU_ASSERT_EQUAL(tr_name_cap_take(&cap, "abcdef", 6), 4);
}

static void test_csv_md(void)
{
    CHECK_ESC(tr_put_csv_field, "plain name", "plain name");
    CHECK_ESC(tr_put_csv_field, "a,b \"q\"\nc", "\"a,b \"\"q\"\"\nc\"");
    CHECK_ESC(tr_put_csv_field, "\xff" "x", "\xef\xbf\xbd" "x");   /* invalid UTF-8 */
    CHECK_ESC(tr_put_md_cell, "a|b_c*\\`<d>", "a\\|b\\_c\\*\\\\\\`\\<d>");
    CHECK_ESC(tr_put_md_cell, "x\ny\tz\x1b", "x y z ");
    CHECK_ESC(tr_put_md_cell, "\xc2\x9b" "\xfe", "\xef\xbf\xbd\xef\xbf\xbd");   /* C1 CSI, invalid */
}

static void text_cell(FILE *f, const char *s, size_t len) { tr_put_text_cell(f, s, len); }

static void test_text_cell(void)
{
    /* one column per character: the table stays aligned */
    CHECK_ESC(text_cell, "a\nb\tc", "a\xe2\x90\x8a" "b\xe2\x90\x89" "c");
    CHECK_ESC(text_cell, "\x1b[31m", "\xe2\x90\x9b[31m");   /* no terminal escapes */
    CHECK_ESC(text_cell, "\x7f\xc2\x85\xff", "\xe2\x90\xa1\xef\xbf\xbd\xef\xbf\xbd");
    CHECK_ESC(text_cell, "\xc3\xa9t\xc3\xa9", "\xc3\xa9t\xc3\xa9");
    CU_ASSERT_EQUAL(tr_text_width("a\nb\xff\xc3\xa9", 6), 5);
    char *got = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&got, &n);
    CU_ASSERT_EQUAL(tr_put_text_cell(f, "a\nb\xff\xc3\xa9", 6), 5);
    tr_put_line(f, "bad\nname\x1b");
    fclose(f);
    CU_ASSERT_PTR_NOT_NULL(strstr(got, "bad?name?\n"));
    free(got);
}

static void test_utf8_next(void)
{
    uint32_t cp;
    CU_ASSERT_EQUAL(tr_utf8_next("\xf0\x9f\x94\xa5", 4, &cp), 4);
    CU_ASSERT_EQUAL(cp, 0x1f525);
    CU_ASSERT_EQUAL(tr_utf8_next("\xf0\x9f\x94", 3, &cp), 1);   /* truncated */
    CU_ASSERT_EQUAL(cp, 0xfffd);
    CU_ASSERT_EQUAL(tr_utf8_next("\xf4\x90\x80\x80", 4, &cp), 1);   /* above U+10FFFF */
}

/* A tiny run.db: range R > op > cudaLaunchKernel -> kernel, with a hostile range name. */
static const char *make_db(void)
{
    static char path[512];
    snprintf(path, sizeof path, "%s/export-unit.db", tr_unit_tmpdir());
    tr_trace t;
    tr_error err;
    if (tr_trace_init(&t, &err) != TR_OK)
        return NULL;
    uint32_t src = tr_add_source(&t, "unit", "unit", NULL);
    uint32_t th = tr_thread_get(&t, tr_process_get(&t, src, 42), 7);
    uint32_t st = tr_stream_get(&t, tr_device_get(&t, src, 0), 1, 7);
    struct { tr_kind k; const char *name; int64_t s, e, corr; } ev[] = {
        {TR_KIND_RANGE, "step;\"<script>\"\n\\", 0, 1000, -1},
        {TR_KIND_OP, "aten::mm", 100, 900, -1},
        {TR_KIND_RUNTIME, "cudaLaunchKernel", 200, 300, 5},
        {TR_KIND_KERNEL, "k<float>&", 400, 700, 5},
        {TR_KIND_OP, "aten::add", 920, 990, -1},
    };
    for (size_t i = 0; i < sizeof ev / sizeof ev[0]; i++) {
        tr_event *e = tr_add_event(&t, ev[i].k);
        e->name = tr_str(&t, ev[i].name);
        e->start = ev[i].s;
        e->end = ev[i].e;
        tr_set_correlation(&t, e, ev[i].corr);
        if (tr_kinds[ev[i].k].on_gpu)
            e->stream = st;
        else
            e->thread = th;
    }
    int ok = tr_tree_build(&t, &err) == TR_OK && tr_rundb_write(&t, path, NULL, 0, &err) == TR_OK;
    tr_trace_free(&t);
    return ok ? path : NULL;
}

static char *run_export(const char *db_path, const char *format, const char *metric)
{
    sqlite3 *db = NULL;
    tr_error err;
    if (tr_rundb_open(db_path, &db, &err) != TR_OK)
        return NULL;
    tr_export_opts o;
    tr_export_opts_init(&o);
    o.format = tr_export_format_lookup(format);
    o.metric = metric ? tr_export_metric_lookup(metric) : NULL;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    tr_status st = tr_export_run(db, &o, f, &err);
    fclose(f);
    sqlite3_close(db);
    tr_export_opts_free(&o);
    if (st != TR_OK) {
        free(buf);
        return NULL;
    }
    return buf;
}

static void test_writers(void)
{
    const char *db = make_db();
    CU_ASSERT_PTR_NOT_NULL_FATAL(db);
    char *a = run_export(db, "stacks", "self_cpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    /* range self 1000-800-70 = 130; op: 800-100; api 100; add 70; sorted by stack */
    CU_ASSERT_STRING_EQUAL(a, "step_\"<script>\" \\ 130\n"
                              "step_\"<script>\" \\;aten::add 70\n"
                              "step_\"<script>\" \\;aten::mm 700\n"
                              "step_\"<script>\" \\;aten::mm;cudaLaunchKernel 100\n");
    free(a);
    a = run_export(db, "stacks", "self_gpu");
    CU_ASSERT_PTR_NOT_NULL_FATAL(a);
    CU_ASSERT_STRING_EQUAL(a, "step_\"<script>\" \\;aten::mm;cudaLaunchKernel;k<float>& 300\n");
    free(a);
    for (int i = 0; i < 2; i++) {
        const char *fmt = i ? "chrome" : "flamegraph";
        const char *m = i ? NULL : "self_gpu";
        char *x = run_export(db, fmt, m), *y = run_export(db, fmt, m);
        CU_ASSERT_PTR_NOT_NULL_FATAL(x);
        CU_ASSERT_PTR_NOT_NULL_FATAL(y);
        CU_ASSERT_STRING_EQUAL(x, y);   /* deterministic */
        CU_ASSERT_PTR_NULL(strstr(x, "<script>\""));
        if (i) {
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "\"name\":\"step;\\\"<script>\\\"\\n\\\\\""));
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "\"ph\":\"s\""));
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "\"ph\":\"f\",\"bp\":\"e\""));
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "\"ts\":0.400,\"dur\":0.300,\"pid\":0,\"tid\":7"));
        } else {
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "step;&quot;&lt;script&gt;&quot; \\"));
            CU_ASSERT_PTR_NOT_NULL(strstr(x, "k&lt;float&gt;&amp;"));
        }
        free(x);
        free(y);
    }
}

static void test_tables(void)
{
    CU_ASSERT_PTR_NOT_NULL(tr_export_metric_lookup("self_cuda_time_total"));
    CU_ASSERT_PTR_NULL(tr_export_metric_lookup("bogus"));
    CU_ASSERT_PTR_NULL(tr_export_format_lookup("svg"));
    tr_export_opts o;
    tr_error err;
    tr_export_opts_init(&o);
    CU_ASSERT_EQUAL(tr_export_set_regex(&o, 0, "a(b", &err), TR_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "offset 3"));
    CU_ASSERT_EQUAL(tr_export_parse_time_range(&o, "5:", &err), TR_OK);
    CU_ASSERT_EQUAL(o.t_start, 5);
    CU_ASSERT_EQUAL(o.t_end, INT64_MAX);
    CU_ASSERT_EQUAL(tr_export_parse_time_range(&o, "@:9", &err), TR_OK);
    CU_ASSERT(o.time_absolute && o.t_end == 9);
    CU_ASSERT_EQUAL(tr_export_parse_time_range(&o, "9:5", &err), TR_ERR_USAGE);
    tr_export_opts_free(&o);
}

TR_SUITE(export_escape,
         {"JSON strings", test_json},
         {"XML text", test_xml},
         {"folded frames", test_folded},
         {"UTF-8 decoding", test_utf8_next},
         {"cutting at a character boundary", test_cut},
         {"CSV fields and markdown cells", test_csv_md},
         {"text table cells and message lines", test_text_cell},
         {"writers: values, escaping, determinism", test_writers},
         {"metric/format tables and option parsing", test_tables})
