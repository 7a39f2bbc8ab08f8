/* Raw (trace-record) reader: round trip, truncation at every offset, CRC damage, versions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "ingest/ingest.h"
#include "record/raw_format.h"
#include "tests/unit/unit.h"

#define T0_REAL 1700000000000000000ull
#define T0_MONO 1000000000ull

typedef struct {
    unsigned char *d;
    size_t n, cap;
    uint64_t seq;
} rbuf;

static void put(rbuf *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 256;
        b->d = realloc(b->d, b->cap);
    }
    memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void header(rbuf *b, uint16_t major)
{
    tr_raw_header h;
    memset(&h, 0, sizeof h);
    h.flags = TR_RAW_HF_CLOCK_MONOTONIC;
    h.session_id = 42;
    h.pid = 4242;
    h.ppid = 1;
    h.t0_realtime = T0_REAL;
    h.t0_monotonic = T0_MONO;
    tr_raw_header_seal(&h);
    if (major != TR_RAW_MAJOR) {
        h.major = major;
        h.header_crc = tr_raw_crc32(&h, offsetof(tr_raw_header, header_crc));
    }
    put(b, &h, sizeof h);
}

static void chunk(rbuf *b, unsigned type, const void *payload, size_t len)
{
    unsigned char tmp[4096] = {0};
    size_t padded = tr_raw_pad8(len);
    memcpy(tmp, payload, len);
    tr_raw_chunk c;
    tr_raw_chunk_fill(&c, type, tmp, (uint32_t)padded, b->seq++);
    put(b, &c, sizeof c);
    put(b, tmp, padded);
}

static void records(rbuf *b, unsigned kind, const void *recs, uint32_t count)
{
    unsigned char tmp[4096];
    uint16_t k = (uint16_t)kind, sz = (uint16_t)tr_raw_rec_size(kind);
    memcpy(tmp, &k, 2);
    memcpy(tmp + 2, &sz, 2);
    memcpy(tmp + 4, &count, 4);
    memcpy(tmp + 8, recs, (size_t)sz * count);
    chunk(b, TR_RAW_CH_RECORDS, tmp, 8 + (size_t)sz * count);
}

static void strings(rbuf *b, const char *const *s, uint32_t first_id, int n)
{
    unsigned char tmp[2048];
    size_t off = 0;
    for (int i = 0; i < n; i++) {
        uint32_t hdr[2] = {first_id + (uint32_t)i, (uint32_t)strlen(s[i])};
        memcpy(tmp + off, hdr, 8);
        memcpy(tmp + off + 8, s[i], hdr[1]);
        size_t padded = (hdr[1] + 3u) & ~3u;
        memset(tmp + off + 8 + hdr[1], 0, padded - hdr[1]);
        off += 8 + padded;
    }
    chunk(b, TR_RAW_CH_STRINGS, tmp, off);
}

/* A small complete file: 3 kernels, 3 runtime + 1 driver calls, 2 copies, 1 set,
 * 1 sync, 2 ranges (one an emit_nvtx op), 1 mark; dropped = 5.
 * *kernel_chunk_at receives the offset of the kernel RECORDS chunk. */
static rbuf sample(size_t *kernel_chunk_at)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    const char meta[] = "exe=/opt/app/train\0hostname=h\0";
    chunk(&b, TR_RAW_CH_META, meta, sizeof meta - 1);
    const char *const s[] = {"_Z6vecAddPKfS0_Pfi", "step", "aten::addmm, seq = 12, op_id = 7, sizes = [[64, 128], [128, 256]]",
                             "ready", "Fake H100", "worker-1"};
    strings(&b, s, 1, 6);
    tr_raw_device dev = {80ull << 30, 0, 5, 9, 0, 132, 0};
    records(&b, TR_RAW_REC_DEVICE, &dev, 1);
    tr_raw_context ctx = {1, 0, 1, 0};
    records(&b, TR_RAW_REC_CONTEXT, &ctx, 1);
    tr_raw_stream str = {1, 7, 0, 0, 0, 0};
    records(&b, TR_RAW_REC_STREAM, &str, 1);
    tr_raw_name nm = {TR_RAW_OBJ_THREAD, 11, 6, 0};
    records(&b, TR_RAW_REC_NAME, &nm, 1);
    tr_raw_marker mk[3] = {{T0_MONO + 100, 1, TR_RAW_MK_START, 11, 2, 0},
                           {T0_MONO + 110, 2, TR_RAW_MK_START, 11, 3, 0},
                           {T0_MONO + 120, 3, TR_RAW_MK_MARK, 11, 4, 0}};
    records(&b, TR_RAW_REC_MARKER, mk, 3);
    tr_raw_api api[4];
    memset(api, 0, sizeof api);
    for (int i = 0; i < 4; i++) {
        api[i].start = T0_MONO + 200 + 100 * (uint64_t)i;
        api[i].end = api[i].start + 50;
        api[i].corr = 1 + (uint32_t)i;
        api[i].cbid = i < 3 ? 505 : 307;
        api[i].tid = 11;
        api[i].domain = i < 3 ? TR_RAW_API_RUNTIME : TR_RAW_API_DRIVER;
    }
    records(&b, TR_RAW_REC_API, api, 4);
    *kernel_chunk_at = b.n;
    tr_raw_kernel k[3];
    memset(k, 0, sizeof k);
    for (int i = 0; i < 3; i++) {
        k[i].start = T0_MONO + 1000 + 100 * (uint64_t)i;
        k[i].end = k[i].start + 80;
        k[i].corr = 1 + (uint32_t)i;
        k[i].name_sid = 1;
        k[i].context = 1;
        k[i].stream = 7;
        k[i].grid[0] = 128, k[i].grid[1] = k[i].grid[2] = 1;
        k[i].block[0] = 256, k[i].block[1] = k[i].block[2] = 1;
        k[i].registers = 32;
    }
    records(&b, TR_RAW_REC_KERNEL, k, 3);
    tr_raw_memcpy mc[2];
    memset(mc, 0, sizeof mc);
    for (int i = 0; i < 2; i++) {
        mc[i].start = T0_MONO + 2000 + 100 * (uint64_t)i;
        mc[i].end = mc[i].start + 10;
        mc[i].bytes = 4096;
        mc[i].copy_kind = 1;
        mc[i].context = 1;
        mc[i].stream = 7;
    }
    records(&b, TR_RAW_REC_MEMCPY, mc, 2);
    tr_raw_memset ms = {T0_MONO + 2500, T0_MONO + 2510, 1024, 0, 0, 1, 7, 0, 0, 0};
    records(&b, TR_RAW_REC_MEMSET, &ms, 1);
    tr_raw_sync sy = {T0_MONO + 3000, T0_MONO + 3100, 0, 4, 1, 0xffffffffu, 0, 0};
    records(&b, TR_RAW_REC_SYNC, &sy, 1);
    tr_raw_marker ends[2] = {{T0_MONO + 130, 2, TR_RAW_MK_END, 11, 0, 0},
                             {T0_MONO + 4000, 1, TR_RAW_MK_END, 11, 0, 0}};
    records(&b, TR_RAW_REC_MARKER, ends, 2);
    unsigned char st[8 + 8 * TR_RAW_STAT_COUNT_] = {0};
    uint32_t nst = TR_RAW_STAT_COUNT_;
    uint64_t dropped = 5;
    memcpy(st, &nst, 4);
    memcpy(st + 8, &dropped, 8);
    chunk(&b, TR_RAW_CH_STATS, st, sizeof st);
    uint64_t end[3] = {T0_REAL + 5000, T0_MONO + 5000, b.seq};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);
    return b;
}

typedef struct {
    int n;
    char last[1024];
    char all[4096];
} warns;

static void on_warn(void *ctx, const char *msg)
{
    warns *w = ctx;
    w->n++;
    snprintf(w->last, sizeof w->last, "%s", msg);
    size_t l = strlen(w->all);
    snprintf(w->all + l, sizeof w->all - l, "%s\n", msg);
}

typedef struct {
    size_t kind[TR_KIND_COUNT_];
    size_t total;
} counts;

/* Writes data to a temp file and reads it. */
static tr_status read_bytes(const unsigned char *d, size_t n, tr_trace *t, warns *w, tr_error *err)
{
    char path[512];
    snprintf(path, sizeof path, "%s/raw-test.ctr", tr_unit_tmpdir());
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    if (n)
        fwrite(d, 1, n, f);
    fclose(f);
    tr_ingest_opts o = {on_warn, w, NULL};
    memset(w, 0, sizeof *w);
    tr_error_clear(err);
    return tr_raw_read(t, path, &o, err);
}

static counts count(const tr_trace *t)
{
    counts c;
    memset(&c, 0, sizeof c);
    for (size_t i = 0; i < t->events.n; i++)
        c.kind[t->events.v[i].kind]++;
    c.total = t->events.n;
    return c;
}

static const tr_event *find(const tr_trace *t, tr_kind kind, size_t nth)
{
    for (size_t i = 0; i < t->events.n; i++)
        if (t->events.v[i].kind == kind && nth-- == 0)
            return &t->events.v[i];
    return NULL;
}

static void test_round_trip(void)
{
    size_t kat;
    rbuf b = sample(&kat);
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(tr_raw_probe("x", b.d, b.n));
    CU_ASSERT_FATAL(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
    counts c = count(&t);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_KERNEL], 3);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_RUNTIME], 3);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_DRIVER], 1);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_MEMCPY], 2);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_MEMSET], 1);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_SYNC], 1);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_RANGE], 1);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_OP], 1);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_MARK], 1);
    CU_ASSERT_EQUAL(c.total, 14);
    /* timestamps moved to the realtime clock with the header's anchor */
    const tr_event *k = find(&t, TR_KIND_KERNEL, 1);
    CU_ASSERT_FATAL(k != NULL);
    CU_ASSERT_EQUAL(k->start, (int64_t)(T0_REAL + 1100));
    CU_ASSERT_EQUAL(k->end - k->start, 80);
    CU_ASSERT_EQUAL(k->correlation, 2);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, k->name), "vecAdd(float const*, float const*, float*, int)");
    CU_ASSERT(k->flags & TR_FLAG_DEMANGLED);
    CU_ASSERT_EQUAL(t.kernels.v[k->detail].grid[0], 128);
    CU_ASSERT_EQUAL(t.kernels.v[k->detail].registers, 32);
    CU_ASSERT(k->stream != 0);
    const tr_event *range = find(&t, TR_KIND_RANGE, 0);
    CU_ASSERT_FATAL(range != NULL);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, range->name), "step");
    CU_ASSERT_EQUAL(range->end - range->start, 3900);
    const tr_event *op = find(&t, TR_KIND_OP, 0);
    CU_ASSERT_FATAL(op != NULL);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, op->name), "aten::addmm");
    CU_ASSERT_EQUAL(op->seq, 12);
    CU_ASSERT_EQUAL(op->op_id, 7);
    const tr_event *api = find(&t, TR_KIND_DRIVER, 0);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, api->name), "cuLaunchKernel");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, find(&t, TR_KIND_RUNTIME, 0)->name), "__cudaLaunchKernel");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, find(&t, TR_KIND_MEMCPY, 0)->name), "[CUDA memcpy HtoD]");
    CU_ASSERT_EQUAL(find(&t, TR_KIND_MEMCPY, 0)->bytes, 4096);
    /* process, thread, device */
    CU_ASSERT_EQUAL(t.processes.n - 1, 1);
    CU_ASSERT_EQUAL(t.processes.v[1].pid, 4242);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.processes.v[1].name), "train");
    CU_ASSERT_EQUAL(t.threads.n - 1, 1);
    CU_ASSERT_EQUAL(t.threads.v[1].tid, 11);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.threads.v[1].name), "worker-1");
    CU_ASSERT_EQUAL(t.devices.n - 1, 1);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.devices.v[1].name), "Fake H100");
    CU_ASSERT_EQUAL(t.devices.v[1].sm_count, 132);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, t.sources.v[1].format), "raw");
    /* the only warning: CUPTI's dropped records */
    CU_ASSERT_EQUAL(w.n, 1);
    CU_ASSERT(strstr(w.last, "dropped 5") != NULL);
    tr_trace_free(&t);
    free(b.d);
}

static void test_truncation_every_offset(void)
{
    size_t kat;
    rbuf b = sample(&kat);
    size_t prev = 0, ok = 0, refused = 0;
    for (size_t len = 0; len <= b.n; len++) {
        tr_trace t;
        tr_error err;
        warns w;
        CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
        tr_status s = read_bytes(b.d, len, &t, &w, &err);
        if (s == TR_OK) {
            ok++;
            CU_ASSERT(t.events.n >= prev);
            prev = t.events.n;
            if (len < b.n && w.n == 0)
                CU_FAIL("a truncated file was read without a warning");
        } else {
            refused++;
            CU_ASSERT_EQUAL(s, TR_ERR_INPUT);
            CU_ASSERT(len < TR_RAW_HEADER_LEN);
        }
        tr_trace_free(&t);
    }
    CU_ASSERT_EQUAL(refused, TR_RAW_HEADER_LEN);
    CU_ASSERT_EQUAL(ok, b.n + 1 - TR_RAW_HEADER_LEN);
    CU_ASSERT_EQUAL(prev, 14);
    free(b.d);
}

static void test_truncated_warning_says_what(void)
{
    size_t kat;
    rbuf b = sample(&kat);
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, kat + 40, &t, &w, &err) == TR_OK);
    CU_ASSERT(strstr(w.all, "file truncated: the last 40 byte(s) (1 partial chunk) lost") != NULL);
    CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_KERNEL], 0);
    CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_RUNTIME], 3);
    tr_trace_free(&t);
    free(b.d);
}

static void test_bad_crc_skips_chunk(void)
{
    size_t kat;
    rbuf b = sample(&kat);
    b.d[kat + TR_RAW_CHUNK_HDR + 20] ^= 0x40;   /* inside the kernel records */
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
    counts c = count(&t);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_KERNEL], 0);
    CU_ASSERT_EQUAL(c.kind[TR_KIND_MEMCPY], 2);
    CU_ASSERT_EQUAL(c.total, 11);
    CU_ASSERT(strstr(w.all, "1 chunk(s) with a bad CRC skipped (296 bytes lost)") != NULL);
    tr_trace_free(&t);

    /* a damaged chunk header: resynchronise on the next chunk */
    b.d[kat + TR_RAW_CHUNK_HDR + 20] ^= 0x40;
    b.d[kat] ^= 0xff;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
    CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_KERNEL], 0);
    CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_MEMCPY], 2);
    CU_ASSERT(strstr(w.all, "296 byte(s) of damaged data skipped") != NULL);
    tr_trace_free(&t);

    /* a damaged header is refused */
    b.d[kat] ^= 0xff;
    b.d[30] ^= 1;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "corrupted header") != NULL);
    tr_trace_free(&t);
    free(b.d);
}

static void test_newer_version_refused(void)
{
    rbuf b = {0};
    header(&b, 2);
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "version 2.0 is newer") != NULL);
    CU_ASSERT(strstr(err.msg, "(1.0)") != NULL);
    CU_ASSERT(!tr_raw_probe("x", (const unsigned char *)"SQLite format 3", 16));
    tr_trace_free(&t);
    free(b.d);
}

static void test_unknown_kind_and_chunk_skipped(void)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    unsigned char odd[40] = {0};
    uint16_t kind = 99, sz = 16;
    uint32_t n = 2;
    memcpy(odd, &kind, 2);
    memcpy(odd + 2, &sz, 2);
    memcpy(odd + 4, &n, 4);
    chunk(&b, TR_RAW_CH_RECORDS, odd, sizeof odd);
    chunk(&b, 77, odd, 8);
    uint64_t end[3] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
    CU_ASSERT_EQUAL(t.events.n, 0);
    CU_ASSERT(strstr(w.all, "2 record(s) of unknown kinds skipped") != NULL);
    tr_trace_free(&t);
    free(b.d);
}

/* Syncs and streams written before the record of their context (the recorder
 * flushes record kinds in numeric order) still land on the context's device;
 * a context-level sync (stream "not applicable") gets no stream at all. */
static void test_context_after_its_streams(void)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    tr_raw_stream str = {5, 9, 0, 0, 0, 0};
    records(&b, TR_RAW_REC_STREAM, &str, 1);
    tr_raw_sync sy[2] = {{T0_MONO + 10, T0_MONO + 20, 1, 3, 5, 9, 0, 0},
                         {T0_MONO + 30, T0_MONO + 40, 2, 4, 5, 0xffffffffu, 0, 0}};
    records(&b, TR_RAW_REC_SYNC, sy, 2);
    tr_raw_context ctx = {5, 3, 1, 0};
    records(&b, TR_RAW_REC_CONTEXT, &ctx, 1);
    uint64_t end[3] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);
    tr_trace t;
    tr_error err;
    warns w;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT_FATAL(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
    const tr_event *s0 = find(&t, TR_KIND_SYNC, 0), *s1 = find(&t, TR_KIND_SYNC, 1);
    CU_ASSERT_FATAL(s0 && s1);
    CU_ASSERT_EQUAL(t.streams.n, 2);   /* [0] unused: one stream */
    CU_ASSERT_FATAL(s0->stream != 0);
    const tr_stream *st = &t.streams.v[s0->stream];
    CU_ASSERT_EQUAL(st->stream, 9);
    CU_ASSERT_EQUAL(st->context, 5);
    CU_ASSERT_EQUAL(t.devices.v[st->device].device, 3);
    CU_ASSERT_EQUAL(s1->stream, 0);
    tr_trace_free(&t);
    free(b.d);
}

/* The reader checks CRCs with zlib; the recorder writes them with its own
 * table: the two must agree. */
static void test_crc_matches_recorder(void)
{
    unsigned char buf[4099];
    uint64_t x = 88172645463325252ull;
    for (size_t i = 0; i < sizeof buf; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        buf[i] = (unsigned char)x;
    }
    int same = 1;
    for (size_t n = 0; n <= sizeof buf; n += 97)
        same &= tr_raw_crc32(buf, n) == (uint32_t)crc32(0L, buf, (uInt)n);
    CU_ASSERT(same);
    CU_ASSERT_EQUAL(tr_raw_crc32("123456789", 9), 0xcbf43926u);
}

TR_SUITE(raw_reader,
         {"round trip of every record kind", test_round_trip},
         {"truncation at every byte offset", test_truncation_every_offset},
         {"truncation warning says what was lost", test_truncated_warning_says_what},
         {"bad CRC, damaged chunk header, damaged file header", test_bad_crc_skips_chunk},
         {"newer major version refused", test_newer_version_refused},
         {"unknown record kinds and chunk types skipped", test_unknown_kind_and_chunk_skipped},
         {"streams and syncs before their context record", test_context_after_its_streams},
         {"zlib's CRC-32 is the recorder's", test_crc_matches_recorder})
