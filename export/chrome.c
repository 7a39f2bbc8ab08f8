/*
 * chrome.c - chrome-trace JSON (object form) for Perfetto UI and chrome://tracing.
 *
 * Streamed: metadata first, then one event per run.db event as the scan
 * visits it; nothing is held per event.  CPU events sit on (pid, tid) of
 * their process and thread; GPU activities on (pid = device, tid = stream);
 * a flow arrow (ph s -> ph f, bp e) joins each API call to the GPU work it
 * launched when both are written.  ts/dur are µs relative to the trace start,
 * printed with ns precision.
 */
#include <string.h>

#include "export/export.h"
#include "export/scan.h"
#include "lib/model.h"

/* Names and shapes repeat in every event: one huge name must not multiply
 * into gigabytes (lib/escape.h, tr_name_cap).  Names up to NAME_SOFT bytes
 * (all real kernel names) are never cut. */
#define NAME_SOFT (8 * 1024)
#define NAME_HARD (64 * 1024)
#define NAME_BUDGET (64 * 1024 * 1024)

typedef struct {
    FILE *out;
    int first;
    tr_name_cap cap;
} chrome_ctx;

static void put_us(FILE *f, int64_t ns)
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    fprintf(f, "%s%llu.%03llu", sign, (unsigned long long)(a / 1000), (unsigned long long)(a % 1000));
}

static void sep(chrome_ctx *c)
{
    fputs(c->first ? "\n" : ",\n", c->out);
    c->first = 0;
}

static void put_cstr(FILE *f, const char *s) { tr_put_json_str(f, s, strlen(s)); }

static void put_name(chrome_ctx *c, const char *s, size_t len)
{
    tr_put_json_str_max(c->out, s, len, tr_name_cap_take(&c->cap, s, len));
}

static void meta_event(chrome_ctx *c, const char *what, int64_t pid, int has_tid, int64_t tid,
                       const char *key, const char *value, size_t len)
{
    sep(c);
    fprintf(c->out, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%lld,", what, (long long)pid);
    if (has_tid)
        fprintf(c->out, "\"tid\":%lld,", (long long)tid);
    fprintf(c->out, "\"args\":{\"%s\":", key);
    if (value)
        tr_put_json_str(c->out, value, len);
    else
        fprintf(c->out, "%lld", (long long)len);
    fputs("}}", c->out);
}

static tr_status write_metadata(tr_scan *sc, chrome_ctx *c, tr_error *err)
{
    static const char sql[] =
        "SELECT 0, p.pid, 0, s.value FROM processes p LEFT JOIN strings s ON s.id = p.name_id "
        "UNION ALL SELECT 1, p.pid, t.tid, s.value FROM threads t "
        "LEFT JOIN processes p ON p.id = t.process_id LEFT JOIN strings s ON s.id = t.name_id "
        "UNION ALL SELECT 2, d.device, 0, s.value FROM devices d LEFT JOIN strings s ON s.id = d.name_id "
        "UNION ALL SELECT 3, d.device, st.stream, NULL FROM streams st "
        "LEFT JOIN devices d ON d.id = st.device_id ORDER BY 1, 2, 3";
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(sc->db, sql, -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "run database: cannot read threads: %s",
                       sqlite3_errmsg(sc->db));
    char buf[512];
    int64_t last_kind = -1, last_a = 0, last_b = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int kind = sqlite3_column_int(st, 0);
        int64_t a = sqlite3_column_int64(st, 1), b = sqlite3_column_int64(st, 2);
        const char *name = (const char *)sqlite3_column_text(st, 3);
        if (kind == last_kind && a == last_a && b == last_b)
            continue;   /* one track per (pid, tid) even when several rows map to it */
        last_kind = kind, last_a = a, last_b = b;
        switch (kind) {
        case 0:
            if (name && *name)
                snprintf(buf, sizeof buf, "%s", name);
            else
                snprintf(buf, sizeof buf, "process %lld", (long long)a);
            meta_event(c, "process_name", a, 0, 0, "name", buf, strlen(buf));
            meta_event(c, "process_sort_index", a, 0, 0, "sort_index", NULL, 0);
            break;
        case 1:
            if (name && *name)
                snprintf(buf, sizeof buf, "%s", name);
            else
                snprintf(buf, sizeof buf, "thread %lld", (long long)b);
            meta_event(c, "thread_name", a, 1, b, "name", buf, strlen(buf));
            break;
        case 2:
            snprintf(buf, sizeof buf, "GPU %lld%s%s", (long long)a, name && *name ? ": " : "",
                     name ? name : "");
            meta_event(c, "process_name", a, 0, 0, "name", buf, strlen(buf));
            meta_event(c, "process_sort_index", a, 0, 0, "sort_index", NULL, 1000 + (size_t)(a & 0xffff));
            break;
        default:
            snprintf(buf, sizeof buf, "stream %lld", (long long)b);
            meta_event(c, "thread_name", a, 1, b, "name", buf, strlen(buf));
        }
    }
    sqlite3_finalize(st);
    return TR_OK;
}

static void track_of(const tr_scan *sc, const tr_xrow *r, int64_t *pid, int64_t *tid)
{
    *pid = *tid = 0;
    if (r->on_gpu)
        tr_scan_stream(sc, r->stream_id, pid, tid);
    else
        tr_scan_thread(sc, r->thread_id, pid, tid);
}

static tr_status on_row(tr_scan *sc, tr_xrow *r, void *vctx, tr_error *err)
{
    (void)err;
    chrome_ctx *c = vctx;
    FILE *f = c->out;
    if (!r->selected)
        return TR_OK;
    const tr_fnode *n = &sc->nodes[r->node];
    int kind = r->kind > 0 && r->kind < TR_KIND_COUNT_ ? (int)r->kind : 0;
    const char *cat = kind ? tr_kinds[kind].name : "unknown";
    int64_t pid, tid, dur = r->end > r->start ? r->end - r->start : 0;
    track_of(sc, r, &pid, &tid);
    int instant = dur == 0 && (kind == TR_KIND_MARK || kind == TR_KIND_MEMORY);
    sep(c);
    fputs("{\"name\":", f);
    put_name(c, n->name, n->name_len);
    fprintf(f, ",\"cat\":\"%s\",\"ph\":\"%s\",\"ts\":", cat, instant ? "i" : "X");
    put_us(f, r->start - sc->trace_start);
    if (instant) {
        fputs(",\"s\":\"t\"", f);
    } else {
        fputs(",\"dur\":", f);
        put_us(f, dur);
    }
    fprintf(f, ",\"pid\":%lld,\"tid\":%lld,\"args\":{\"id\":%lld", (long long)pid, (long long)tid,
            (long long)r->id);
    if (r->correlation >= 0)
        fprintf(f, ",\"correlation\":%lld", (long long)r->correlation);
    if (r->shape_id) {
        size_t len;
        const char *s = tr_scan_string(sc, r->shape_id, &len);
        fputs(",\"shapes\":", f);
        put_name(c, s, len);
    }
    if (r->has_kernel)
        fprintf(f, ",\"grid\":[%lld,%lld,%lld],\"block\":[%lld,%lld,%lld],"
                   "\"registers_per_thread\":%lld,\"static_shared_bytes\":%lld,"
                   "\"dynamic_shared_bytes\":%lld",
                (long long)r->grid[0], (long long)r->grid[1], (long long)r->grid[2],
                (long long)r->block[0], (long long)r->block[1], (long long)r->block[2],
                (long long)r->registers, (long long)r->smem_static, (long long)r->smem_dynamic);
    if (r->bytes)
        fprintf(f, ",\"bytes\":%lld", (long long)r->bytes);
    if (r->copy_kind) {
        fputs(",\"copy_kind\":", f);
        put_cstr(f, r->copy_kind);
    }
    if (r->has_memset)
        fprintf(f, ",\"value\":%lld", (long long)r->memset_value);
    if (r->has_api)
        fprintf(f, ",\"cbid\":%lld", (long long)r->cbid);
    if (r->on_gpu)
        fprintf(f, ",\"device\":%lld,\"stream\":%lld", (long long)pid, (long long)tid);
    fputs("}}", f);
    if (r->on_gpu && r->launcher && r->launcher->selected) {
        int64_t lpid, ltid;
        if (tr_scan_thread(sc, r->launcher->thread_id, &lpid, &ltid)) {
            sep(c);
            fprintf(f, "{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"s\",\"id\":%lld,"
                       "\"pid\":%lld,\"tid\":%lld,\"ts\":",
                    (long long)r->id, (long long)lpid, (long long)ltid);
            put_us(f, r->launcher->start - sc->trace_start);
            fputs("}", f);
            sep(c);
            fprintf(f, "{\"name\":\"launch\",\"cat\":\"launch\",\"ph\":\"f\",\"bp\":\"e\","
                       "\"id\":%lld,\"pid\":%lld,\"tid\":%lld,\"ts\":",
                    (long long)r->id, (long long)pid, (long long)tid);
            put_us(f, r->start - sc->trace_start);
            fputs("}", f);
        }
    }
    return ferror(f) ? tr_fail(err, TR_ERR_RUNTIME, "write error") : TR_OK;
}

tr_status tr_export_chrome(sqlite3 *db, const tr_export_opts *o, FILE *out, tr_error *err)
{
    tr_scan sc;
    chrome_ctx c = {out, 1, {NAME_SOFT, NAME_HARD, NAME_BUDGET}};
    tr_status st = tr_scan_init(&sc, db, o, err);
    if (st == TR_OK) {
        fprintf(out, "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"trace-export\","
                     "\"trace_start_ns\":\"%lld\",\"time_origin\":\"ts is in microseconds "
                     "after trace_start_ns\"},\"traceEvents\":[",
                (long long)sc.trace_start);
        st = write_metadata(&sc, &c, err);
    }
    if (st == TR_OK)
        st = tr_scan_run(&sc, TR_SCAN_DETAILS, on_row, &c, err);
    if (st == TR_OK)
        fputs("\n]}\n", out);
    tr_scan_free(&sc);
    if (st == TR_OK && ferror(out))
        st = tr_fail(err, TR_ERR_RUNTIME, "write error");
    return st;
}
