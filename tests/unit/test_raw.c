/* Raw (trace-record) reader: round trip, truncation at every offset, CRC damage, versions,
 * native frames named from the recorded maps and build-ids. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zlib.h>

#include "ingest/ingest.h"
#include "lib/elf_symbols.h"
#include "lib/progress.h"
#include "record/raw_format.h"
#include "tests/unit/elf_fixture.h"
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
        h.minor = 0;
        h.header_crc = tr_raw_crc32(&h, offsetof(tr_raw_header, header_crc));
    }
    put(b, &h, sizeof h);
}

static void chunk(rbuf *b, unsigned type, const void *payload, size_t len)
{
    unsigned char tmp[4096] = {0};
    size_t padded = tr_raw_pad8(len);
    CU_ASSERT_FATAL(padded <= sizeof tmp);
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
    CU_ASSERT_EQUAL(tr_correlation(&t, k), 2);
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
    CU_ASSERT_EQUAL(tr_extra(&t, op).seq, 12);
    CU_ASSERT_EQUAL(tr_extra(&t, op).op_id, 7);
    const tr_event *api = find(&t, TR_KIND_DRIVER, 0);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, api->name), "cuLaunchKernel");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, find(&t, TR_KIND_RUNTIME, 0)->name), "__cudaLaunchKernel");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, find(&t, TR_KIND_MEMCPY, 0)->name), "[CUDA memcpy HtoD]");
    CU_ASSERT_EQUAL(tr_extra(&t, find(&t, TR_KIND_MEMCPY, 0)).bytes, 4096);
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

    /* a damaged length, odd or past the end of the file, loses that chunk alone:
     * the chunks after it are found again, not skipped by the length */
    b.d[kat] ^= 0xff;
    uint32_t pl = tr_raw_ld32(b.d + kat + 8);
    const uint32_t lengths[] = {pl ^ 1, pl ^ 8, pl ^ (1u << 20)};
    for (size_t k = 0; k < sizeof lengths / sizeof lengths[0]; k++) {
        memcpy(b.d + kat + 8, &lengths[k], 4);
        CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
        CU_ASSERT(read_bytes(b.d, b.n, &t, &w, &err) == TR_OK);
        CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_KERNEL], 0);
        CU_ASSERT_EQUAL(count(&t).kind[TR_KIND_MEMCPY], 2);
        CU_ASSERT(strstr(w.all, "truncated") == NULL);
        tr_trace_free(&t);
    }
    memcpy(b.d + kat + 8, &pl, 4);

    /* a damaged header is refused */
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
    char ours[32];
    snprintf(ours, sizeof ours, "(%u.%u)", TR_RAW_MAJOR, TR_RAW_MINOR);
    CU_ASSERT(strstr(err.msg, "version 2.0 is newer") != NULL);
    CU_ASSERT(strstr(err.msg, ours) != NULL);
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

    /* the writer's sliced CRC: every length and alignment around its 8-byte
     * steps, and a running value carried across two calls */
    static tr_raw_crc32_slices sl;
    tr_raw_crc32_slices_init(&sl);
    int sliced_same = 1;
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n + off <= 300; n++)
            sliced_same &= tr_raw_crc32_update_sliced(&sl, 0, buf + off, n)
                           == (uint32_t)crc32(0L, buf + off, (uInt)n);
    for (size_t n = 0; n <= sizeof buf; n += 97) {
        uint32_t c = tr_raw_crc32_update_sliced(&sl, 0, buf, n / 3);
        sliced_same &= tr_raw_crc32_update_sliced(&sl, c, buf + n / 3, n - n / 3)
                       == (uint32_t)crc32(0L, buf, (uInt)n);
    }
    CU_ASSERT(sliced_same);
    CU_ASSERT_EQUAL(tr_raw_crc32_update_sliced(&sl, 0, "123456789", 9), 0xcbf43926u);
}

/* Native frames.  The stacks point into this test binary, whose own maps
 * lines, build-id and symbols are the recorded process's. */

/* Out of line, so that each has an address and a symbol of its own. */
__attribute__((noinline)) static int frame_target(volatile int *x)
{
    return *x * 7 + 3;
}

__attribute__((noinline)) static int frame_caller(volatile int *x)
{
    return frame_target(x) + *x * 5;
}

#define AGENT_LO 0x7f1000000000ull
#define GONE_LO 0x7f2000000000ull

typedef struct {
    char exe[1024];
    struct { unsigned long long lo, hi, off, inode; char perms[8]; } line[32];
    int nlines;
    unsigned char id[64];
    size_t idlen, id_at;                     /* the build-id and its file offset */
    uint64_t target, caller;                 /* frame_target's first and frame_caller's last byte */
} self_image;

static void self_load(self_image *si)
{
    memset(si, 0, sizeof *si);
    ssize_t n = readlink("/proc/self/exe", si->exe, sizeof si->exe - 1);
    CU_ASSERT_FATAL(n > 0);
    FILE *f = fopen("/proc/self/maps", "r");
    CU_ASSERT_FATAL(f != NULL);
    char line[4608];
    while (fgets(line, sizeof line, f) && si->nlines < 32) {
        unsigned long long lo, hi, off, ino;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%llx-%llx %7s %llx %*s %llu %n", &lo, &hi, perms, &off, &ino, &pos) < 5
            || !pos)
            continue;
        line[strcspn(line, "\n")] = 0;
        if (strcmp(line + pos, si->exe) != 0)
            continue;
        si->line[si->nlines].lo = lo;
        si->line[si->nlines].hi = hi;
        si->line[si->nlines].off = off;
        si->line[si->nlines].inode = ino;
        memcpy(si->line[si->nlines].perms, perms, sizeof perms);
        si->nlines++;
    }
    fclose(f);
    CU_ASSERT_FATAL(si->nlines > 0 && si->line[0].off == 0);
    int fd = open(si->exe, O_RDONLY);
    struct stat sb;
    CU_ASSERT_FATAL(fd >= 0 && fstat(fd, &sb) == 0);
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    CU_ASSERT_FATAL(m != MAP_FAILED);
    tr_elf e;
    tr_error err;
    CU_ASSERT_FATAL(tr_elf_load(&e, m, (size_t)sb.st_size, &err) == TR_OK);
    if (e.build_id && e.build_id_len <= sizeof si->id) {
        memcpy(si->id, e.build_id, e.build_id_len);
        si->idlen = e.build_id_len;
        si->id_at = (size_t)(e.build_id - (const unsigned char *)m);
    }
    int (*volatile t)(volatile int *) = frame_target, (*volatile c)(volatile int *) = frame_caller;
    volatile int two = 2;
    CU_ASSERT_EQUAL(c(&two), 27);
    si->target = (uint64_t)(uintptr_t)t;
    /* the last byte of frame_caller: a return address one past it must
     * still be named frame_caller, not whatever follows */
    uint64_t pc = (uint64_t)(uintptr_t)c, vaddr = 0;
    for (int i = 0; i < si->nlines; i++)
        if (pc >= si->line[i].lo && pc < si->line[i].hi)
            CU_ASSERT_FATAL(tr_elf_offset_to_vaddr(&e, pc - si->line[i].lo + si->line[i].off,
                                                   &vaddr));
    const tr_elf_sym *sym = tr_elf_lookup(&e, vaddr);
    CU_ASSERT_FATAL(sym && sym->addr == vaddr && sym->end > vaddr);
    si->caller = pc + (sym->end - vaddr) - 1;
    tr_elf_free(&e);
    munmap(m, (size_t)sb.st_size);
}

/* "unit-tests+0x1234": the name of an unresolved pc of the binary. */
static void self_unresolved(const self_image *si, uint64_t pc, char *out, size_t size)
{
    const char *base = strrchr(si->exe, '/');
    snprintf(out, size, "(not mapped)");
    for (int i = 0; i < si->nlines; i++)
        if (pc >= si->line[i].lo && pc < si->line[i].hi)
            snprintf(out, size, "%s+0x%llx", base ? base + 1 : si->exe,
                     (unsigned long long)(pc - si->line[i].lo + si->line[i].off));
}

/* Maps text: an agent library, the binary (under `path`, its inode plus
 * bump), and a library that no longer exists. */
static void self_maps(const self_image *si, const char *path, unsigned long long bump, char *out,
                      size_t size)
{
    size_t n = (size_t)snprintf(out, size, "%llx-%llx r-xp 00000000 00:00 1    "
                                "/opt/rec/lib/libtracekit-agent.so\n",
                                AGENT_LO, AGENT_LO + 0x10000);
    for (int i = 0; i < si->nlines && n < size; i++)
        n += (size_t)snprintf(out + n, size - n, "%llx-%llx %s %08llx fd:01 %llu      %s\n",
                              si->line[i].lo, si->line[i].hi, si->line[i].perms, si->line[i].off,
                              si->line[i].inode + bump, path);
    if (n < size)
        snprintf(out + n, size - n,
                 "%llx-%llx r-xp 00002000 fd:01 4242   /nonexistent/dir/libgone.so\n",
                 GONE_LO, GONE_LO + 0x10000);
}

/* Two launches sharing one stack of the given pcs (innermost first), with
 * the maps text and, unless NULL, a MODULES payload. */
static rbuf stack_file(const char *maps, const uint64_t *pcs, uint16_t depth,
                       const unsigned char *modules, size_t modules_len)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    tr_raw_api api[2];
    memset(api, 0, sizeof api);
    for (int i = 0; i < 2; i++) {
        api[i].start = T0_MONO + 100 + 100 * (uint64_t)i;
        api[i].end = api[i].start + 50;
        api[i].corr = 1 + (uint32_t)i;
        api[i].cbid = 211;
        api[i].tid = 11;
        api[i].domain = TR_RAW_API_RUNTIME;
    }
    records(&b, TR_RAW_REC_API, api, 2);
    unsigned char st[8 + 16 * 8] = {0};
    uint32_t sid = 1;
    CU_ASSERT_FATAL(depth <= 16);
    memcpy(st, &sid, 4);
    memcpy(st + 4, &depth, 2);
    memcpy(st + 8, pcs, 8 * (size_t)depth);
    chunk(&b, TR_RAW_CH_STACKS, st, 8 + 8 * (size_t)depth);
    tr_raw_stackref refs[2] = {{T0_MONO + 100, 1, 1, 11, 0}, {T0_MONO + 200, 2, 1, 11, 0}};
    records(&b, TR_RAW_REC_STACKREF, refs, 2);
    unsigned char mp[4096] = {0};
    uint32_t ml = (uint32_t)strlen(maps);
    CU_ASSERT_FATAL(16 + ml <= sizeof mp);
    memcpy(mp + 8, &ml, 4);
    memcpy(mp + 16, maps, ml);
    chunk(&b, TR_RAW_CH_MAPS, mp, 16 + ml);
    if (modules)
        chunk(&b, TR_RAW_CH_MODULES, modules, modules_len);
    uint64_t end[3] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);
    return b;
}

/* An agent frame (dropped), frame_target, frame_caller, libgone.so, an
 * address outside every mapping.  id: the build-id recorded for the binary,
 * or NULL for no MODULES chunk. */
static rbuf native_file(const self_image *si, const char *maps, const unsigned char *id)
{
    /* return addresses: one past the call, named by the byte before */
    uint64_t pcs[5] = {AGENT_LO + 0x40, si->target + 1, si->caller + 1, GONE_LO + 0x124, 0x10};
    if (!id)
        return stack_file(maps, pcs, 5, NULL, 0);
    unsigned char md[512] = {0};
    size_t n = 0;
    uint64_t addr = si->line[0].lo + 16;
    uint16_t len = (uint16_t)si->idlen;
    memcpy(md, &addr, 8);
    memcpy(md + 8, &len, 2);
    memcpy(md + 16, id, si->idlen);
    n = 16 + tr_raw_pad8(si->idlen);
    /* malformed: a non-zero reserved field (ignored, or it would win) */
    memcpy(md + n, &addr, 8);
    memcpy(md + n + 8, &len, 2);
    md[n + 12] = 1;
    memset(md + n + 16, 0x5a, si->idlen);
    n += 16 + tr_raw_pad8(si->idlen);
    /* an entry of an unmapped address, then one running past the end */
    uint64_t nowhere = 0x1000;
    memcpy(md + n, &nowhere, 8);
    memcpy(md + n + 8, &len, 2);
    n += 16 + tr_raw_pad8(si->idlen);
    uint16_t huge = 4000;
    memcpy(md + n, &addr, 8);
    memcpy(md + n + 8, &huge, 2);
    n += 16;
    return stack_file(maps, pcs, 5, md, n);
}

/* The frames of the nth runtime call's stack, outermost first, joined by " ; ". */
static void stack_text(const tr_trace *t, size_t nth, char *out, size_t size)
{
    const tr_event *e = find(t, TR_KIND_RUNTIME, nth);
    uint32_t chain[64];
    size_t n = 0;
    for (uint32_t node = e ? e->stack : 0; node && n < 64; node = t->stack_nodes.v[node].parent)
        chain[n++] = t->stack_nodes.v[node].frame;
    size_t len = 0;
    out[0] = 0;
    while (n-- > 0 && len < size)
        len += (size_t)snprintf(out + len, size - len, "%s%s", tr_str_of(t, chain[n]),
                                n ? " ; " : "");
}

static void read_stack(rbuf b, char *stack, size_t size, warns *w)
{
    tr_trace t;
    tr_error err;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    CU_ASSERT_FATAL(read_bytes(b.d, b.n, &t, w, &err) == TR_OK);
    stack_text(&t, 0, stack, size);
    char second[2048];
    stack_text(&t, 1, second, sizeof second);
    CU_ASSERT_STRING_EQUAL(stack, second);
    CU_ASSERT(find(&t, TR_KIND_RUNTIME, 0)->stack == find(&t, TR_KIND_RUNTIME, 1)->stack);
    tr_trace_free(&t);
    free(b.d);
}

/* This binary has DWARF when built with -g: its frames then end in
 * " (test_raw.c:N)" (tests/cli/t-backtrace-lines.sh checks the lines); the
 * tests here compare the names. */
static void drop_lines(char *s)
{
    char *p, *e;
    while ((p = strstr(s, " (test_raw.c:")) && (e = strchr(p, ')')))
        memmove(p, e + 1, strlen(e + 1) + 1);
}

static void read_native(const self_image *si, const char *maps, const unsigned char *id,
                        char *stack, size_t size, warns *w)
{
    read_stack(native_file(si, maps, id), stack, size, w);
    drop_lines(stack);
}

#define GONE_WARNING "1 frame(s) in /nonexistent/dir/libgone.so left unsymbolised: " \
                     "cannot read the file (No such file or directory)"
#define NAMED "0xf ; libgone.so+0x2123 ; frame_caller ; frame_target"

static void test_native_by_build_id(void)
{
    self_image si;
    self_load(&si);
    if (!si.idlen) {
        printf("\n  note: this binary has no build-id: skipped\n");
        return;
    }
    char maps[4096], stack[2048];
    warns w;
    self_maps(&si, si.exe, 0, maps, sizeof maps);
    read_native(&si, maps, si.id, stack, sizeof stack, &w);
    CU_ASSERT_STRING_EQUAL(stack, NAMED);
    CU_ASSERT_EQUAL(w.n, 1);
    CU_ASSERT(strstr(w.all, GONE_WARNING) != NULL);

    /* a recorded build-id the file does not have: offsets, and a warning */
    unsigned char other[64];
    memcpy(other, si.id, si.idlen);
    other[0] ^= 1;
    read_native(&si, maps, other, stack, sizeof stack, &w);
    char want[4096], t[1100], c[1100], msg[1400];
    self_unresolved(&si, si.target, t, sizeof t);
    self_unresolved(&si, si.caller, c, sizeof c);
    snprintf(want, sizeof want, "0xf ; libgone.so+0x2123 ; %s ; %s", c, t);
    CU_ASSERT_STRING_EQUAL(stack, want);
    snprintf(msg, sizeof msg, "2 frame(s) in %s left unsymbolised: file changed since recording "
             "(build-id differs)", si.exe);
    CU_ASSERT(strstr(w.all, msg) != NULL);
    CU_ASSERT(strstr(w.all, GONE_WARNING) != NULL);
    CU_ASSERT_EQUAL(w.n, 2);
}

static void test_native_by_inode(void)
{
    self_image si;
    self_load(&si);
    char maps[4096], stack[2048];
    warns w;
    self_maps(&si, si.exe, 0, maps, sizeof maps);
    read_native(&si, maps, NULL, stack, sizeof stack, &w);
    CU_ASSERT_STRING_EQUAL(stack, NAMED);
    CU_ASSERT_EQUAL(w.n, 1);

    self_maps(&si, si.exe, 1, maps, sizeof maps);
    read_native(&si, maps, NULL, stack, sizeof stack, &w);
    char t[1100], msg[1400];
    self_unresolved(&si, si.target, t, sizeof t);
    CU_ASSERT(strstr(stack, t) != NULL);
    CU_ASSERT(strstr(stack, "frame_") == NULL);
    snprintf(msg, sizeof msg, "2 frame(s) in %s left unsymbolised: file changed since recording "
             "(inode differs, and no build-id was recorded)", si.exe);
    CU_ASSERT(strstr(w.all, msg) != NULL);
}

static void write_file(const char *path, const unsigned char *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    CU_ASSERT_FATAL(f != NULL);
    CU_ASSERT(fwrite(d, 1, n, f) == n);
    fclose(f);
}

/* A copy of the binary without .symtab finds its symbols in the debug file
 * of its build-id under TRACE_DEBUG_ROOT, and only in one of that build-id. */
static void test_native_debug_file(void)
{
    self_image si;
    self_load(&si);
    if (!si.idlen) {
        printf("\n  note: this binary has no build-id: skipped\n");
        return;
    }
    FILE *f = fopen(si.exe, "rb");
    CU_ASSERT_FATAL(f != NULL);
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    rewind(f);
    unsigned char *img = malloc(n);
    CU_ASSERT_FATAL(fread(img, 1, n, f) == n);
    fclose(f);

    const char *tmp = tr_unit_tmpdir();
    char stripped[600], root[600], dir[700], debug[900];
    snprintf(stripped, sizeof stripped, "%s/stripped-unit-tests", tmp);
    snprintf(root, sizeof root, "%s/debug-root", tmp);
    snprintf(dir, sizeof dir, "%s/.build-id", root);
    mkdir(root, 0755);
    mkdir(dir, 0755);
    size_t dl = (size_t)snprintf(dir, sizeof dir, "%s/.build-id/%02x", root, si.id[0]);
    mkdir(dir, 0755);
    size_t k = (size_t)snprintf(debug, sizeof debug, "%s/", dir);
    (void)dl;
    for (size_t i = 1; i < si.idlen; i++)
        k += (size_t)snprintf(debug + k, sizeof debug - k, "%02x", si.id[i]);
    snprintf(debug + k, sizeof debug - k, ".debug");

    /* the stripped copy: its .symtab section header turned into SHT_NULL */
    unsigned char *cp = malloc(n);
    memcpy(cp, img, n);
    uint64_t shoff = tr_raw_ld64(cp + 40);
    unsigned shentsize = tr_raw_ld16(cp + 58), shnum = tr_raw_ld16(cp + 60);
    for (unsigned i = 0; i < shnum; i++)
        if (tr_raw_ld32(cp + shoff + (uint64_t)i * shentsize + 4) == 2 /* SHT_SYMTAB */)
            memset(cp + shoff + (uint64_t)i * shentsize + 4, 0, 4);
    write_file(stripped, cp, n);

    char maps[4096], stack[2048], t[1100];
    warns w;
    self_maps(&si, stripped, 0, maps, sizeof maps);
    setenv("TRACE_DEBUG_ROOT", root, 1);
    /* no debug file yet */
    read_native(&si, maps, si.id, stack, sizeof stack, &w);
    CU_ASSERT(strstr(stack, "frame_target") == NULL);
    self_unresolved(&si, si.target, t, sizeof t);
    CU_ASSERT(strstr(stack, "stripped-unit-tests+0x") != NULL);
    /* a debug file of another build-id is not used */
    img[si.id_at] ^= 1;
    write_file(debug, img, n);
    img[si.id_at] ^= 1;
    read_native(&si, maps, si.id, stack, sizeof stack, &w);
    CU_ASSERT(strstr(stack, "frame_target") == NULL);
    /* the right one */
    write_file(debug, img, n);
    read_native(&si, maps, si.id, stack, sizeof stack, &w);
    CU_ASSERT_STRING_EQUAL(stack, NAMED);
    CU_ASSERT_EQUAL(w.n, 1);
    unsetenv("TRACE_DEBUG_ROOT");
    free(cp);
    free(img);
}

/* Files that are not objects: a directory, an empty file, a text file. */
static void test_native_not_objects(void)
{
    self_image si;
    self_load(&si);
    char text[600], empty[600];
    snprintf(text, sizeof text, "%s/not-elf.so", tr_unit_tmpdir());
    snprintf(empty, sizeof empty, "%s/empty.so", tr_unit_tmpdir());
    unsigned char junk[256];
    memset(junk, 'x', sizeof junk);
    write_file(text, junk, sizeof junk);
    write_file(empty, junk, 0);
    const char *paths[] = {tr_unit_tmpdir(), empty, text, "/proc/self/maps"};
    const char *why[] = {"not a regular file", "not a readable ELF object: too short",
                         "not a readable ELF object: no ELF magic", "not a regular file on disk"};
    for (int i = 0; i < 4; i++) {
        char maps[4096], stack[2048], msg[1024];
        warns w;
        self_maps(&si, paths[i], 0, maps, sizeof maps);
        read_native(&si, maps, NULL, stack, sizeof stack, &w);
        CU_ASSERT(strstr(stack, "frame_") == NULL);
        snprintf(msg, sizeof msg, "2 frame(s) in %s left unsymbolised: %s", paths[i], why[i]);
        CU_ASSERT(strstr(w.all, msg) != NULL);
    }
}

/* Names as users read them: demangled, without a symbol version. */
static void test_native_display_names(void)
{
    unsigned char img[TR_TEST_TINY_CAP];
    size_t n = tr_test_tiny_elf(img, 1);
    char path[600], maps[1024], stack[2048];
    snprintf(path, sizeof path, "%s/libtiny.so", tr_unit_tmpdir());
    write_file(path, img, n);
    struct stat sb;
    CU_ASSERT_FATAL(stat(path, &sb) == 0);
    /* the segment's file offset 0x1000 mapped at 0x7f3000001000 */
    const uint64_t lo = 0x7f3000001000ull;
    snprintf(maps, sizeof maps, "%llx-%llx r-xp 00001000 fd:01 %llu %s\n",
             (unsigned long long)lo, (unsigned long long)lo + 0x1000,
             (unsigned long long)sb.st_ino, path);
    uint64_t pcs[4] = {lo + 0x600, lo + 0x701, lo + 0x10, lo + 0x1001};
    warns w;
    read_stack(stack_file(maps, pcs, 4, NULL, 0), stack, sizeof stack, &w);
    CU_ASSERT_STRING_EQUAL(stack, "0x7f3000002000 ; f ; ver ; foo(int)");
    CU_ASSERT_EQUAL(w.n, 0);
}

/* One STATUS entry: what and detail after the fixed part, padded to 8. */
static size_t status_entry(unsigned char *p, uint64_t ts, uint32_t result, unsigned state,
                           const char *what, const char *detail)
{
    size_t lw = strlen(what), ld = strlen(detail), text = lw + 1 + ld;
    tr_raw_status st = {ts, result, (uint16_t)state, (uint16_t)text};
    size_t n = tr_raw_pad8(sizeof st + text);
    memset(p, 0, n);
    memcpy(p, &st, sizeof st);
    memcpy(p + sizeof st, what, lw);
    memcpy(p + sizeof st + lw + 1, detail, ld);
    return n;
}

/* A 1.2 file: CUPTI's own clock (the timestamp callback refused), copies with
 * both ids, syncs of queries and of a failed call, STATUS failures and a takeover. */
static void test_clock_joins_queries_status(void)
{
    const uint64_t t0_cupti = 5000000000000ull;
    rbuf b = {0};
    tr_raw_header h;
    memset(&h, 0, sizeof h);
    h.flags = TR_RAW_HF_CLOCK_CUPTI;
    h.pid = 7;
    h.t0_realtime = T0_REAL;
    h.t0_monotonic = T0_MONO;
    h.t0_cupti = t0_cupti;
    tr_raw_header_seal(&h);
    put(&b, &h, sizeof h);
    unsigned char st[512];
    size_t n = status_entry(st, t0_cupti + 2000000000ull, 0, TR_RAW_ST_TAKEN, "buffers", "another client");
    n += status_entry(st + n, t0_cupti, 21, TR_RAW_ST_FAILED, "kind MEMSET",
                      "cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) failed: CUPTI_ERROR_INVALID_KIND; not recorded");
    n += status_entry(st + n, t0_cupti, 0, TR_RAW_ST_ACTIVE, "kind MEMCPY", "");
    chunk(&b, TR_RAW_CH_STATUS, st, n);
    const char *const s[] = {"k"};
    strings(&b, s, 1, 1);
    tr_raw_kernel k;
    memset(&k, 0, sizeof k);
    k.start = t0_cupti + 1000;
    k.end = t0_cupti + 2000;
    k.corr = 30;
    k.name_sid = 1;
    records(&b, TR_RAW_REC_KERNEL, &k, 1);
    /* cudaMemcpy (10) made cuMemcpyHtoD (11); a driver-only file has 21 but not 20 */
    tr_raw_api api[3];
    memset(api, 0, sizeof api);
    api[0] = (tr_raw_api){t0_cupti, t0_cupti + 10, 10, 31, 1, 0, TR_RAW_API_RUNTIME, {0}};
    api[1] = (tr_raw_api){t0_cupti + 1, t0_cupti + 9, 11, 276, 1, 0, TR_RAW_API_DRIVER, {0}};
    api[2] = (tr_raw_api){t0_cupti + 20, t0_cupti + 30, 21, 276, 1, 0, TR_RAW_API_DRIVER, {0}};
    records(&b, TR_RAW_REC_API, api, 3);
    tr_raw_memcpy m[2];
    memset(m, 0, sizeof m);
    m[0].start = t0_cupti + 100, m[0].end = t0_cupti + 200, m[0].corr = 11, m[0].runtime_corr = 10;
    m[1].start = t0_cupti + 300, m[1].end = t0_cupti + 400, m[1].corr = 21, m[1].runtime_corr = 20;
    records(&b, TR_RAW_REC_MEMCPY, m, 2);
    tr_raw_sync sy[3];
    memset(sy, 0, sizeof sy);
    for (int i = 0; i < 3; i++) {
        sy[i].start = t0_cupti + 500;
        sy[i].end = t0_cupti + 600;
        sy[i].type = 3;
        sy[i].stream = 0xffffffffu;
    }
    sy[1].type |= TR_RAW_SYNC_QUERY;
    sy[2].ret = 600;
    records(&b, TR_RAW_REC_SYNC, sy, 3);
    uint64_t end[3] = {T0_REAL + 5000, T0_MONO + 5000, b.seq};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);

    tr_trace tt, *t = &tt;
    warns w;
    tr_error err;
    CU_ASSERT_FATAL(tr_trace_init(t, &err) == TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_bytes(b.d, b.n, t, &w, &err), TR_OK);
    const tr_event *ke = find(t, TR_KIND_KERNEL, 0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ke);
    CU_ASSERT_EQUAL(ke->start, (int64_t)(T0_REAL + 1000));   /* CUPTI's clock, anchored */
    const tr_event *m0 = find(t, TR_KIND_MEMCPY, 0), *m1 = find(t, TR_KIND_MEMCPY, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m1);
    CU_ASSERT_EQUAL(tr_correlation(t, m0), 10);   /* the runtime call */
    CU_ASSERT_EQUAL(tr_correlation(t, m1), 21);   /* no runtime call in the file: the driver's */
    CU_ASSERT_EQUAL(count(t).kind[TR_KIND_SYNC], 1);   /* the query and the failed call are no waits */
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "trace truncated at 2.000 s: another CUPTI client took over"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "kind MEMSET: cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) failed"));
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "2 sync record(s) of queries or failed calls"));
    CU_ASSERT_PTR_NULL(strstr(w.all, "kind MEMCPY"));   /* active entries are not warnings */
    tr_trace_free(t);
    free(b.d);
}

/* A runtime call takes the GPU work and stack of its correlation over a
 * driver call or an internal launch with the same number, in whatever order
 * they come; among those, the first.  The join is made after the whole file
 * is read, from the calls in order. */
/* The reader keeps the last thread and stream it looked up: calls of two
 * threads, and copies on streams that differ by one of device, context and
 * stream, each interleaved, must each keep their own. */
static void test_interleaved_threads_and_streams(void)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    const uint32_t tid[5] = {11, 12, 11, 12, 12};
    tr_raw_api api[5];
    memset(api, 0, sizeof api);
    for (int i = 0; i < 5; i++) {
        api[i].start = T0_MONO + 100 * (uint64_t)(i + 1);
        api[i].end = api[i].start + 50;
        api[i].cbid = 211;
        api[i].tid = tid[i];
        api[i].domain = TR_RAW_API_RUNTIME;
    }
    records(&b, TR_RAW_REC_API, api, 5);
    /* each neighbour differs by one: context, device, stream; then all, then none */
    const uint32_t where[6][3] = {{0, 1, 7}, {0, 2, 7}, {1, 2, 7}, {1, 2, 8}, {0, 1, 7}, {0, 1, 7}};
    tr_raw_memcpy m[6];
    memset(m, 0, sizeof m);
    for (int i = 0; i < 6; i++) {
        m[i].start = T0_MONO + 1000 + 100 * (uint64_t)i;
        m[i].end = m[i].start + 10;
        m[i].bytes = 64;
        m[i].copy_kind = 1;
        m[i].device = where[i][0], m[i].context = where[i][1], m[i].stream = where[i][2];
    }
    records(&b, TR_RAW_REC_MEMCPY, m, 6);
    uint64_t end[3] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);

    tr_trace tt, *t = &tt;
    warns w;
    tr_error err;
    CU_ASSERT_FATAL(tr_trace_init(t, &err) == TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_bytes(b.d, b.n, t, &w, &err), TR_OK);
    for (int i = 0; i < 5; i++) {
        const tr_event *e = find(t, TR_KIND_RUNTIME, (size_t)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        CU_ASSERT_EQUAL(t->threads.v[e->thread].tid, tid[i]);
    }
    for (int i = 0; i < 6; i++) {
        const tr_event *e = find(t, TR_KIND_MEMCPY, (size_t)i);
        CU_ASSERT_PTR_NOT_NULL_FATAL(e);
        const tr_stream *s = &t->streams.v[e->stream];
        CU_ASSERT_EQUAL(t->devices.v[s->device].device, where[i][0]);
        CU_ASSERT_EQUAL(s->context, where[i][1]);
        CU_ASSERT_EQUAL(s->stream, where[i][2]);
    }
    CU_ASSERT_EQUAL(t->threads.n, 3);   /* 0 is none */
    CU_ASSERT_EQUAL(t->streams.n, 5);
    tr_trace_free(t);
    free(b.d);
}

static void test_join_prefers_runtime_call(void)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    const uint8_t domain[6] = {TR_RAW_API_DRIVER, TR_RAW_API_RUNTIME, TR_RAW_API_DRIVER,
                               TR_RAW_API_INTERNAL, TR_RAW_API_DRIVER, TR_RAW_API_RUNTIME};
    const uint32_t corr[6] = {50, 50, 50, 60, 60, 0};
    tr_raw_api api[6];
    memset(api, 0, sizeof api);
    for (int i = 0; i < 6; i++) {
        api[i].start = T0_MONO + 100 * (uint64_t)(i + 1);
        api[i].end = api[i].start + 50;
        api[i].corr = corr[i];
        api[i].cbid = 211;
        api[i].tid = 11;
        api[i].domain = domain[i];
    }
    records(&b, TR_RAW_REC_API, api, 6);
    unsigned char st[16] = {0};
    uint32_t sid = 1;
    uint16_t depth = 1;
    uint64_t pc = 0x10;
    memcpy(st, &sid, 4);
    memcpy(st + 4, &depth, 2);
    memcpy(st + 8, &pc, 8);
    chunk(&b, TR_RAW_CH_STACKS, st, sizeof st);
    tr_raw_stackref refs[3] = {{T0_MONO + 100, 50, 1, 11, 0}, {T0_MONO + 400, 60, 1, 11, 0},
                               {T0_MONO + 900, 0, 1, 11, 0}};
    records(&b, TR_RAW_REC_STACKREF, refs, 3);
    /* the driver ids 61 and 50 with runtime ids 60 (an internal launch's) and 70 (no call) */
    tr_raw_memcpy m[2];
    memset(m, 0, sizeof m);
    m[0].start = T0_MONO + 1000, m[0].end = T0_MONO + 1100, m[0].corr = 61, m[0].runtime_corr = 60;
    m[1].start = T0_MONO + 1200, m[1].end = T0_MONO + 1300, m[1].corr = 50, m[1].runtime_corr = 70;
    records(&b, TR_RAW_REC_MEMCPY, m, 2);
    uint64_t end[3] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);

    tr_trace tt, *t = &tt;
    warns w;
    tr_error err;
    CU_ASSERT_FATAL(tr_trace_init(t, &err) == TR_OK);
    CU_ASSERT_EQUAL_FATAL(read_bytes(b.d, b.n, t, &w, &err), TR_OK);
    int with_stack[6] = {0};
    for (size_t i = 0; i < t->events.n; i++) {
        const tr_event *e = &t->events.v[i];
        if (e->kind == TR_KIND_RUNTIME || e->kind == TR_KIND_DRIVER)
            for (int k = 0; k < 6; k++)
                if (e->start == (int64_t)(T0_REAL + 100 * (uint64_t)(k + 1)))
                    with_stack[k] = e->stack != 0;
    }
    const int expect[6] = {0, 1, 0, 1, 0, 0};   /* the runtime call of 50, the launch of 60 */
    for (int k = 0; k < 6; k++)
        CU_ASSERT_EQUAL(with_stack[k], expect[k]);
    const tr_event *m0 = find(t, TR_KIND_MEMCPY, 0), *m1 = find(t, TR_KIND_MEMCPY, 1);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m0);
    CU_ASSERT_PTR_NOT_NULL_FATAL(m1);
    CU_ASSERT_EQUAL(tr_correlation(t, m0), 60);
    CU_ASSERT_EQUAL(tr_correlation(t, m1), 50);
    CU_ASSERT_PTR_NOT_NULL(strstr(w.all, "1 stack(s) without a matching API call ignored"));
    tr_trace_free(t);
    free(b.d);
}

/* A file of many STRINGS chunks, some ids given twice: an id names the last
 * text given it, every text is interned, and the bytes the reader went past
 * count for the progress line (rchar does not see a mapping). */
static void test_many_strings(void)
{
    rbuf b = {0};
    header(&b, TR_RAW_MAJOR);
    enum { PER_CHUNK = 40, CHUNKS = 10000 };
    char text[PER_CHUNK][32];
    const char *s[PER_CHUNK];
    for (int c = 0; c < CHUNKS; c++) {
        for (int i = 0; i < PER_CHUNK; i++) {
            snprintf(text[i], sizeof text[i], "text %d of chunk %d", c * PER_CHUNK + i, c);
            s[i] = text[i];
        }
        /* every 100th chunk gives the ids of the chunk before again */
        uint32_t first = 1 + (uint32_t)(c % 100 == 99 ? c - 1 : c) * PER_CHUNK;
        strings(&b, s, first, PER_CHUNK);
    }
    /* marks named by the first id, and by an id chunk 99 gave again */
    tr_raw_marker mk[2] = {{T0_MONO + 100, 0, TR_RAW_MK_MARK, 11, 1, 0},
                           {T0_MONO + 200, 0, TR_RAW_MK_MARK, 11, 1 + 98 * PER_CHUNK + 5, 0}};
    records(&b, TR_RAW_REC_MARKER, mk, 2);
    unsigned char end[8] = {0};
    chunk(&b, TR_RAW_CH_END, end, sizeof end);
    tr_trace t;
    warns w;
    tr_error err;
    CU_ASSERT_FATAL(tr_trace_init(&t, &err) == TR_OK);
    uint64_t mapped0 = atomic_load(&tr_progress_mapped_bytes);
    CU_ASSERT_EQUAL_FATAL(read_bytes(b.d, b.n, &t, &w, &err), TR_OK);
    uint64_t mapped = atomic_load(&tr_progress_mapped_bytes) - mapped0;
    CU_ASSERT(b.n > (12u << 20));
    CU_ASSERT(mapped <= b.n && mapped + (5u << 20) >= b.n);
    CU_ASSERT_EQUAL(w.n, 0);
    const tr_event *m0 = find(&t, TR_KIND_MARK, 0), *m1 = find(&t, TR_KIND_MARK, 1);
    CU_ASSERT_FATAL(m0 && m1);
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, m0->name), "text 0 of chunk 0");
    CU_ASSERT_STRING_EQUAL(tr_str_of(&t, m1->name), "text 3965 of chunk 99");
    size_t texts = (size_t)CHUNKS * PER_CHUNK, wrong = 0;
    CU_ASSERT(tr_intern_count(&t.strings) >= texts);
    for (size_t k = 0; k < texts; k += 7) {
        char want[32];
        snprintf(want, sizeof want, "text %zu of chunk %zu", k, k / PER_CHUNK);
        wrong += tr_intern_find(&t.strings, want, strlen(want)) == 0;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    tr_trace_free(&t);
    free(b.d);
}

TR_SUITE(raw_reader,
         {"CUPTI's clock, copy joins, queries, STATUS warnings", test_clock_joins_queries_status},
         {"a runtime call's correlation over a driver call's", test_join_prefers_runtime_call},
         {"interleaved threads and streams keep their own", test_interleaved_threads_and_streams},
         {"round trip of every record kind", test_round_trip},
         {"truncation at every byte offset", test_truncation_every_offset},
         {"truncation warning says what was lost", test_truncated_warning_says_what},
         {"bad CRC, damaged chunk header, damaged file header", test_bad_crc_skips_chunk},
         {"newer major version refused", test_newer_version_refused},
         {"unknown record kinds and chunk types skipped", test_unknown_kind_and_chunk_skipped},
         {"streams and syncs before their context record", test_context_after_its_streams},
         {"zlib's CRC-32 is the recorder's", test_crc_matches_recorder},
         {"many strings chunks: every text, and the bytes gone past", test_many_strings})

TR_SUITE(raw_native_frames,
         {"frames named through the recorded build-id", test_native_by_build_id},
         {"frames named through the maps inode without a build-id", test_native_by_inode},
         {"a stripped file's symbols from its build-id debug file", test_native_debug_file},
         {"directories, empty, non-ELF and pseudo files keep offsets", test_native_not_objects},
         {"names demangled, symbol versions dropped", test_native_display_names})
