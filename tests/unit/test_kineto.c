/* Kineto reader: tokenizer edge cases, unit conversion, mapping, bad input. */
#include <stdio.h>
#include <string.h>

#include "ingest/ingest.h"
#include "ingest/kineto.h"
#include "lib/model.h"
#include "tests/unit/unit.h"

static tr_status read_str(tr_trace *t, const char *json, tr_error *err)
{
    tr_error_clear(err);
    return tr_kineto_read_mem(t, "mem.json", json, strlen(json), NULL, err);
}

static void test_us_to_ns(void)
{
    int64_t v;
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("1", 1, &v), 0);
    CU_ASSERT_EQUAL(v, 1000);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("1.5", 3, &v), 0);
    CU_ASSERT_EQUAL(v, 1500);
    /* beyond double precision: 16 significant digits plus 3 decimals */
    const char *big = "1669783687464181.123";
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns(big, strlen(big), &v), 0);
    CU_ASSERT_EQUAL(v, 1669783687464181123LL);
    /* rounding of sub-ns digits, half up */
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("0.0015", 6, &v), 0);
    CU_ASSERT_EQUAL(v, 2);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("0.0014", 6, &v), 0);
    CU_ASSERT_EQUAL(v, 1);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("1.5e3", 5, &v), 0);
    CU_ASSERT_EQUAL(v, 1500000);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("25E-1", 5, &v), 0);
    CU_ASSERT_EQUAL(v, 2500);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("-2.25", 5, &v), 0);
    CU_ASSERT_EQUAL(v, -2250);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("0", 1, &v), 0);
    CU_ASSERT_EQUAL(v, 0);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("", 0, &v), -1);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("abc", 3, &v), -1);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("1e", 2, &v), -1);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("1x", 2, &v), -1);
    CU_ASSERT_EQUAL(tr_kineto_us_to_ns("99999999999999999999", 20, &v), -1);
}

static void test_tokenizer_strings(void)
{
    /* braces, brackets and escaped quotes inside strings must not confuse the tokenizer */
    const char *json =
        "{\"schemaVersion\": 1, \"note\": \"}]{[\\\"\", \"traceEvents\": [\n"
        " {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"we}ird]\\\"{name\", \"pid\": 1, \"tid\": 2,"
        "  \"ts\": 10.25, \"dur\": 1, \"args\": {\"x\": \"\\\\\", \"ts\": 99, \"Input Dims\": [[1, 2], []]}},\n"
        " {\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"a,b\",\"pid\":\"1\",\"tid\":\"2\",\"ts\":\"5\",\"dur\":20}\n"
        "], \"displayTimeUnit\": \"ms\"}";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(read_str(&t, json, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 2);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.events.v[0].name), "we}ird]\"{name");
    CU_ASSERT_EQUAL(t.events.v[0].kind, TR_KIND_OP);
    CU_ASSERT_EQUAL(t.events.v[0].start, 10250);   /* top-level ts, not args.ts */
    CU_ASSERT_EQUAL(t.events.v[0].end, 11250);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, tr_extra(&t, &t.events.v[0]).shape), "[[1, 2], []]");
    CU_ASSERT_EQUAL(t.events.v[1].kind, TR_KIND_RANGE);
    CU_ASSERT_EQUAL(t.events.v[1].start, 5000);
    /* string and numeric pid/tid name the same thread */
    CU_ASSERT_EQUAL(t.events.v[0].thread, t.events.v[1].thread);
    tr_trace_free(&t);
}

static void test_mapping(void)
{
    const char *json =
        "[{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,"
        "\"ts\":100,\"dur\":5,\"args\":{\"correlation\":7,\"cbid\":211}},"
        "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"k\",\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":3,"
        "\"args\":{\"device\":0,\"stream\":7,\"correlation\":7,\"grid\":[4,2,1],\"block\":[128,1,1]}},"
        "{\"ph\":\"X\",\"cat\":\"gpu_user_annotation\",\"name\":\"step\",\"pid\":0,\"tid\":7,\"ts\":110,\"dur\":3},"
        "{\"ph\":\"s\",\"cat\":\"ac2g\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":100},"
        "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":1,\"tid\":1,"
        "\"ts\":101,\"args\":{\"Bytes\":-512,\"Device Type\":1}},"
        "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"b.py(2): g\",\"pid\":1,\"tid\":1,\"ts\":99,"
        "\"dur\":8,\"args\":{\"Python id\":2,\"Python parent id\":1}},"
        "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"a.py(1): f\",\"pid\":1,\"tid\":1,\"ts\":98,"
        "\"dur\":10,\"args\":{\"Python id\":1,\"Python parent id\":null}},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::is_leaf\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},"
        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"main\"}},"
        "{}]";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_str(&t, json, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 5);   /* annotation, flow, skipped op, metadata: none */
    const tr_event *rt = &t.events.v[0], *k = &t.events.v[1], *mem = &t.events.v[2];
    CU_ASSERT_EQUAL(rt->kind, TR_KIND_RUNTIME);
    CU_ASSERT_EQUAL(tr_correlation(&t, rt), 7);
    CU_ASSERT_EQUAL(k->kind, TR_KIND_KERNEL);
    CU_ASSERT_NOT_EQUAL(k->stream, 0);
    CU_ASSERT_EQUAL(k->thread, 0);
    CU_ASSERT_EQUAL(t.kernels.v[k->detail].grid[0], 4);
    CU_ASSERT_EQUAL(t.kernels.v[k->detail].block[0], 128);
    CU_ASSERT_EQUAL(mem->kind, TR_KIND_MEMORY);
    CU_ASSERT_EQUAL(tr_extra(&t, mem).bytes, -512);
    CU_ASSERT(mem->flags & TR_FLAG_GPU_MEMORY);
    /* python frames: g's stack is f;g whatever the order in the file */
    const tr_event *g = &t.events.v[3], *f = &t.events.v[4];
    CU_ASSERT_EQUAL(g->kind, TR_KIND_PYTHON);
    CU_ASSERT_NOT_EQUAL_FATAL(g->stack, 0);
    CU_ASSERT_EQUAL(t.stack_nodes.v[g->stack].parent, f->stack);
    /* the runtime call inherits the innermost enclosing python frame */
    CU_ASSERT_EQUAL(rt->stack, g->stack);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.threads.v[rt->thread].name), "main");
    tr_trace_free(&t);
}

/* Each category under both its names, names that nearly are one, and the
 * op names PyTorch leaves out beside names that nearly are one. */
static void test_category_names(void)
{
    static const struct { const char *cat; int kind; } cats[] = {
        {"cpu_op", TR_KIND_OP}, {"Operator", TR_KIND_OP}, {"user_annotation", TR_KIND_RANGE},
        {"cuda_runtime", TR_KIND_RUNTIME}, {"Runtime", TR_KIND_RUNTIME}, {"cuda_driver", TR_KIND_DRIVER},
        {"Driver", TR_KIND_DRIVER}, {"cuda_sync", TR_KIND_SYNC}, {"kernel", TR_KIND_KERNEL},
        {"Kernel", TR_KIND_KERNEL}, {"gpu_memcpy", TR_KIND_MEMCPY}, {"Memcpy", TR_KIND_MEMCPY},
        {"gpu_memset", TR_KIND_MEMSET}, {"Memset", TR_KIND_MEMSET}, {"python_function", TR_KIND_PYTHON},
        {"openacc_data", TR_KIND_OPENACC_DATA}, {"openacc_launch", TR_KIND_OPENACC_LAUNCH},
        {"openacc_other", TR_KIND_OPENACC_OTHER}, {"cuda_event", TR_KIND_CUDA_EVENT},
        /* left out: */
        {"gpu_user_annotation", -1}, {"Trace", -1}, {"overhead", -1}, {"kerne", -1}, {"kernels", -1},
        {"Kernel ", -1}, {"", -1}, {"cpu_opx", -1}, {"Overhead", -1}, {"runtime", -1}};
    static const struct { const char *name; int kept; } ops[] = {
        {"profiler::_record_function_enter", 0}, {"profiler::_record_function_enter_new", 0},
        {"profiler::_record_function_exit", 0}, {"aten::is_leaf", 0}, {"aten::output_nr", 0},
        {"aten::_version", 0}, {"aten::is_lea", 1}, {"aten::is_leaf_", 1}, {"aten::output_nR", 1},
        {"profiler::_record_function_exi", 1}, {"aten::_versioN", 1}, {"", 1}};
    char json[16384];
    size_t n = 0;
    int ts = 1, want[TR_KIND_COUNT_] = {0};
    n += (size_t)snprintf(json + n, sizeof json - n, "[");
    for (size_t i = 0; i < sizeof cats / sizeof cats[0]; i++, ts += 10) {
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "{\"ph\":\"X\",\"cat\":\"%s\",\"name\":\"n\",\"pid\":1,\"tid\":1,\"ts\":%d,"
                              "\"dur\":5,\"args\":{\"device\":0,\"stream\":7}},", cats[i].cat, ts);
        if (cats[i].kind >= 0)
            want[cats[i].kind]++;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++, ts += 10) {
        n += (size_t)snprintf(json + n, sizeof json - n,
                              "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"%s\",\"pid\":1,\"tid\":1,"
                              "\"ts\":%d,\"dur\":5},", ops[i].name, ts);
        want[TR_KIND_OP] += ops[i].kept;
    }
    snprintf(json + n, sizeof json - n, "{}]");
    CU_ASSERT_FATAL(n < sizeof json - 8);
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_str(&t, json, &err), TR_OK);
    int got[TR_KIND_COUNT_] = {0};
    for (size_t i = 0; i < t.events.n; i++)
        got[t.events.v[i].kind]++;
    for (int k = 0; k < TR_KIND_COUNT_; k++) {
        if (got[k] != want[k])
            fprintf(stderr, "kind %d: %d events, %d expected\n", k, got[k], want[k]);
        CU_ASSERT_EQUAL(got[k], want[k]);
    }
    tr_trace_free(&t);
}

static void test_base_time(void)
{
    const char *json = "{\"traceEvents\":[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"x\",\"pid\":1,"
                       "\"tid\":1,\"ts\":2.001,\"dur\":0.001}],\"baseTimeNanoseconds\":1700000000000000000}";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_str(&t, json, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 1);
    CU_ASSERT_EQUAL(t.events.v[0].start, 1700000000000002001LL);
    CU_ASSERT_EQUAL(t.events.v[0].end, 1700000000000002002LL);
    tr_trace_free(&t);
}

static void expect_bad(const char *json, const char *needle)
{
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(read_str(&t, json, &err), TR_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "mem.json"));
    if (needle && !strstr(err.msg, needle))
        fprintf(stderr, "\n  message without '%s': %s\n", needle, err.msg);
    CU_ASSERT(!needle || strstr(err.msg, needle));
    CU_ASSERT_PTR_NULL(strchr(err.msg, '\n'));
    tr_trace_free(&t);
}

static void test_bad_input(void)
{
    expect_bad("", "empty");
    expect_bad("   ", "empty");
    expect_bad("{\"a\": 1}", "no traceEvents");
    expect_bad("42", "expected a JSON object or array");
    expect_bad("[1, 2]", "not a JSON object");
    /* truncated at several places */
    expect_bad("{\"traceEvents\": [", "unexpected end");
    expect_bad("{\"traceEvents\": [{\"ph\": \"X\", \"name\": \"a", "unexpected end");
    expect_bad("{\"traceEvents\": [{\"ph\": \"X\"}", "unexpected end");
    expect_bad("{\"traceEvents\": [{\"ph\": \"X\"}]", "unexpected end");
    expect_bad("[{\"ph\": \"X\", \"name\": \"a\\\"}]", "unexpected end");
    /* invalid JSON inside an event: the offset points into the file */
    expect_bad("[{\"ph\": \"X\", \"name\": tru}]", "offset=");
    expect_bad("[{\"ph\": \"X\"} {\"ph\": \"X\"}]", "expected ','");
    expect_bad("{\"traceEvents\": []} x", "after the document");
    expect_bad("[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":-1}]",
               "duration");
}

static void test_empty_ok(void)
{
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL(read_str(&t, "\xEF\xBB\xBF {\"traceEvents\": []}\n", &err), TR_OK);
    CU_ASSERT_EQUAL(read_str(&t, "[]", &err), TR_OK);
    CU_ASSERT_EQUAL(t.events.n, 0);
    tr_trace_free(&t);
}

static void test_probe(void)
{
    const unsigned char a[] = "  {\"traceEvents\": [";
    const unsigned char b[] = "[{\"ph\": \"X\"";
    const unsigned char c[] = "SQLite format 3";
    const unsigned char d[] = "{\"foo\": 1}";
    CU_ASSERT(tr_kineto_probe("x.bin", a, sizeof a - 1));
    CU_ASSERT(tr_kineto_probe("x.bin", b, sizeof b - 1));
    CU_ASSERT(!tr_kineto_probe("x.json", c, sizeof c));
    CU_ASSERT(!tr_kineto_probe("x.bin", d, sizeof d - 1));
    CU_ASSERT(tr_kineto_probe("x.json", d, sizeof d - 1));
}

/* ts and dur come from the event text (the parse's spans or one scan):
 * numeric strings, either order, a nested "ts" that is not the event's, the
 * first of two keys, a string beside a number, all the digits, no dur. */
static void test_time_keys(void)
{
    const char *json =
        "[{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"a\",\"pid\":1,\"tid\":1,"
        "\"ts\":\"5\",\"dur\":\"2\"},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"b\",\"pid\":1,\"tid\":1,"
        "\"args\":{\"ts\":99,\"dur\":99},\"dur\":3,\"ts\":10},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"c\",\"pid\":1,\"tid\":1,"
        "\"ts\":20,\"dur\":4,\"dur\":7},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"d\",\"pid\":1,\"tid\":1,"
        "\"ts\":30,\"dur\":\"5\"},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"e\",\"pid\":1,\"tid\":2,"
        "\"dur\":6.25,\"ts\":1669783687464181.123},"
        "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"f\",\"pid\":1,\"tid\":3,\"ts\":40}]";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_str(&t, json, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 6);
    /* a numeric string beside a number; more digits than a double holds; no dur */
    CU_ASSERT_EQUAL(t.events.v[3].start, 30000);
    CU_ASSERT_EQUAL(t.events.v[3].end, 35000);
    CU_ASSERT_EQUAL(t.events.v[4].start, 1669783687464181123LL);
    CU_ASSERT_EQUAL(t.events.v[4].end, 1669783687464181123LL + 6250);
    CU_ASSERT_EQUAL(t.events.v[5].start, 40000);
    CU_ASSERT_EQUAL(t.events.v[5].end, 40000);
    CU_ASSERT_EQUAL(t.events.v[0].start, 5000);
    CU_ASSERT_EQUAL(t.events.v[0].end, 7000);
    CU_ASSERT_EQUAL(t.events.v[1].start, 10000);
    CU_ASSERT_EQUAL(t.events.v[1].end, 13000);
    CU_ASSERT_EQUAL(t.events.v[2].start, 20000);
    CU_ASSERT_EQUAL(t.events.v[2].end, 24000);
    tr_trace_free(&t);
}

static void test_async_slices(void)
{
    /* "b" and "e" with one id and category are one event (trace-export --chrome writes so
     * an event that does not nest); an "e" of another category, an "e" without its "b",
     * another tool's category, a "b" without one and a "b" without its "e" (zero length)
     * are what they were: not read, not an unknown category */
    const char *json =
        "{\"traceEvents\":["
        "{\"ph\":\"b\",\"cat\":\"python_function\",\"name\":\"p\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":5},"
        "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"S\",\"pid\":1,\"tid\":1,\"ts\":6,\"dur\":100},"
        "{\"ph\":\"e\",\"cat\":\"NET\",\"name\":\"p\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":7},"
        "{\"ph\":\"e\",\"cat\":\"cpu_op\",\"name\":\"p\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":8},"
        "{\"ph\":\"b\",\"name\":\"n\",\"id\":11,\"pid\":\"CPU functions\",\"tid\":1,\"ts\":8},"
        "{\"ph\":\"e\",\"cat\":\"python_function\",\"name\":\"p\",\"id\":7,\"pid\":1,\"tid\":1,\"ts\":9.5},"
        "{\"ph\":\"e\",\"cat\":\"cpu_op\",\"name\":\"q\",\"id\":8,\"pid\":1,\"tid\":1,\"ts\":12},"
        "{\"ph\":\"b\",\"cat\":\"blink\",\"name\":\"r\",\"id\":9,\"pid\":1,\"tid\":1,\"ts\":12},"
        "{\"ph\":\"e\",\"cat\":\"blink\",\"name\":\"r\",\"id\":9,\"pid\":1,\"tid\":1,\"ts\":14},"
        "{\"ph\":\"b\",\"cat\":\"cpu_op\",\"name\":\"o\",\"id\":\"10\",\"pid\":1,\"tid\":1,\"ts\":20,"
        "\"args\":{\"Async\":1}}]}";
    tr_trace t;
    tr_error err;
    CU_ASSERT_EQUAL_FATAL(tr_trace_init(&t, &err), TR_OK);
    tr_ingest_opts o = {0};
    tr_error_clear(&err);
    CU_ASSERT_EQUAL_FATAL(tr_kineto_read_mem(&t, "mem.json", json, strlen(json), &o, &err), TR_OK);
    CU_ASSERT_EQUAL_FATAL(t.events.n, 3);
    CU_ASSERT_EQUAL(t.events.v[0].kind, TR_KIND_PYTHON);
    CU_ASSERT_EQUAL(t.events.v[0].start, 5000);
    CU_ASSERT_EQUAL(t.events.v[0].end, 9500);
    CU_ASSERT_EQUAL(t.events.v[1].end - t.events.v[1].start, 100000);
    CU_ASSERT_EQUAL(t.events.v[2].kind, TR_KIND_OP);
    CU_ASSERT_EQUAL(t.events.v[2].end, t.events.v[2].start);
    CU_ASSERT(t.events.v[2].flags & TR_FLAG_ASYNC);
    tr_trace_free(&t);
}

TR_SUITE(kineto,
         {"microseconds text to ns", test_us_to_ns},
         {"tokenizer: strings with braces and escaped quotes", test_tokenizer_strings},
         {"category mapping, stacks, memory", test_mapping},
         {"categories by either name; the ops left out", test_category_names},
         {"baseTimeNanoseconds", test_base_time},
         {"ts and dur: strings, order, nesting, duplicates", test_time_keys},
         {"bad and truncated input", test_bad_input},
         {"empty traces", test_empty_ok},
         {"async slices: begin and end one event", test_async_slices},
         {"probe", test_probe})
