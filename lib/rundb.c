#include "lib/rundb.h"
#include "lib/aggregates.h"
#include "lib/collectives.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/output.h"
#include "lib/btree_append.h"
#include "lib/bulk_insert.h"
#include "lib/checked.h"
#include "lib/spill.h"
#include "lib/version.h"

/* the columns of aggregates, and of stack_aggregates after its own two */
#define AGGREGATE_COLUMNS \
    "name_id INTEGER NOT NULL REFERENCES strings(id), " \
    "on_gpu INTEGER NOT NULL, shape_id INTEGER REFERENCES strings(id), " \
    "events INTEGER NOT NULL, cpu_total_ns INTEGER NOT NULL, " \
    "cpu_self_ns INTEGER NOT NULL, gpu_total_ns INTEGER NOT NULL, " \
    "gpu_self_ns INTEGER NOT NULL, cpu_mem_total INTEGER NOT NULL, " \
    "cpu_mem_self INTEGER NOT NULL, gpu_mem_total INTEGER NOT NULL, " \
    "gpu_mem_self INTEGER NOT NULL, flops INTEGER, first_start_ns INTEGER NOT NULL, " \
    "first_end_ns INTEGER NOT NULL, first_id INTEGER NOT NULL, " \
    "first_async INTEGER NOT NULL"

const tr_rundb_table tr_rundb_tables[] = {
    {"meta", "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)"},
    {"strings", "CREATE TABLE strings(id INTEGER PRIMARY KEY, value TEXT NOT NULL)"},
    {"sources", "CREATE TABLE sources(id INTEGER PRIMARY KEY, path TEXT NOT NULL, "
                "format TEXT NOT NULL, format_version TEXT, host TEXT, rank INTEGER, "
                "event_count INTEGER NOT NULL)"},
    {"processes", "CREATE TABLE processes(id INTEGER PRIMARY KEY, "
                  "source_id INTEGER NOT NULL REFERENCES sources(id), pid INTEGER NOT NULL, "
                  "name_id INTEGER REFERENCES strings(id))"},
    {"threads", "CREATE TABLE threads(id INTEGER PRIMARY KEY, "
                "process_id INTEGER NOT NULL REFERENCES processes(id), tid INTEGER NOT NULL, "
                "name_id INTEGER REFERENCES strings(id))"},
    {"devices", "CREATE TABLE devices(id INTEGER PRIMARY KEY, "
                "source_id INTEGER NOT NULL REFERENCES sources(id), device INTEGER NOT NULL, "
                "name_id INTEGER REFERENCES strings(id), compute_major INTEGER, "
                "compute_minor INTEGER, memory_bytes INTEGER, sm_count INTEGER)"},
    {"streams", "CREATE TABLE streams(id INTEGER PRIMARY KEY, "
                "device_id INTEGER NOT NULL REFERENCES devices(id), context INTEGER, "
                "stream INTEGER NOT NULL)"},
    {"kinds", "CREATE TABLE kinds(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, "
              "on_gpu INTEGER NOT NULL)"},
    {"events", "CREATE TABLE events(id INTEGER PRIMARY KEY, "
               "kind INTEGER NOT NULL REFERENCES kinds(id), "
               "name_id INTEGER NOT NULL REFERENCES strings(id), "
               "raw_name_id INTEGER REFERENCES strings(id), "
               "start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, "
               "thread_id INTEGER REFERENCES threads(id), "
               "stream_id INTEGER REFERENCES streams(id), "
               "correlation INTEGER, parent_id INTEGER REFERENCES events(id), "
               "depth INTEGER NOT NULL, shape_id INTEGER REFERENCES strings(id), "
               "stack_id INTEGER REFERENCES stack_nodes(id), seq INTEGER, op_id INTEGER, "
               "bytes INTEGER, flops INTEGER, flags INTEGER NOT NULL, "
               "cpu_total_ns INTEGER NOT NULL, cpu_self_ns INTEGER NOT NULL, "
               "gpu_total_ns INTEGER NOT NULL, gpu_self_ns INTEGER NOT NULL, "
               "cpu_mem_total INTEGER NOT NULL, cpu_mem_self INTEGER NOT NULL, "
               "gpu_mem_total INTEGER NOT NULL, gpu_mem_self INTEGER NOT NULL)"},
    {"stack_nodes", "CREATE TABLE stack_nodes(id INTEGER PRIMARY KEY, "
                    "parent_id INTEGER REFERENCES stack_nodes(id), "
                    "frame_id INTEGER NOT NULL REFERENCES strings(id))"},
    {"kernels", "CREATE TABLE kernels(event_id INTEGER PRIMARY KEY REFERENCES events(id), "
                "grid_x INTEGER, grid_y INTEGER, grid_z INTEGER, block_x INTEGER, "
                "block_y INTEGER, block_z INTEGER, registers_per_thread INTEGER, "
                "static_shared_bytes INTEGER, dynamic_shared_bytes INTEGER)"},
    {"copies", "CREATE TABLE copies(event_id INTEGER PRIMARY KEY REFERENCES events(id), "
               "copy_kind TEXT, src_kind TEXT, dst_kind TEXT)"},
    {"memsets", "CREATE TABLE memsets(event_id INTEGER PRIMARY KEY REFERENCES events(id), "
                "value INTEGER)"},
    {"api_calls", "CREATE TABLE api_calls(event_id INTEGER PRIMARY KEY REFERENCES events(id), "
                  "cbid INTEGER NOT NULL, return_value INTEGER)"},
    /* per-group totals for the default tables (lib/aggregates.h) */
    {"aggregates", "CREATE TABLE aggregates(" AGGREGATE_COLUMNS ")", 1},
    /* the same per (tree path, recorded stack) too, for --group-by-stack (lib/aggregates.h) */
    {"stack_paths", "CREATE TABLE stack_paths(id INTEGER PRIMARY KEY, "
                    "parent_id INTEGER REFERENCES stack_paths(id), "
                    "name_id INTEGER NOT NULL REFERENCES strings(id))", 1},
    {"stack_aggregates", "CREATE TABLE stack_aggregates(path_id INTEGER NOT NULL, "
                         "stack_id INTEGER REFERENCES stack_nodes(id), " AGGREGATE_COLUMNS ")", 1},
    /* NCCL/RCCL collective kernels and their parameters (lib/collectives.h) */
    {"collectives", "CREATE TABLE collectives(event_id INTEGER PRIMARY KEY REFERENCES events(id), "
                    "op TEXT NOT NULL, pg TEXT, pg_desc TEXT, pg_ranks TEXT, seq INTEGER, in_nelems INTEGER, "
                    "out_nelems INTEGER, dtype TEXT, group_size INTEGER, bytes INTEGER)", 1},
    /* each source's clock offset to the lowest rank's, when one ingest holds several ranks */
    {"clock_offsets", "CREATE TABLE clock_offsets(source_id INTEGER PRIMARY KEY REFERENCES sources(id), "
                      "offset_ns INTEGER NOT NULL, anchor_ns INTEGER NOT NULL, method TEXT NOT NULL, "
                      "residual_ns INTEGER, calls INTEGER NOT NULL)", 1},
};
const size_t tr_rundb_ntables = sizeof tr_rundb_tables / sizeof tr_rundb_tables[0];

/* Views for people querying a run.db by hand or from pandas: names instead of
 * string ids, and the joins everyone writes.  The tools never read them (a
 * run.db is opened with views off, see below). */
const tr_rundb_table tr_rundb_views[] = {
    {"ops", "CREATE VIEW ops AS SELECT e.id, CASE e.kind WHEN 1 THEN 'range' ELSE 'op' END AS kind, "
            "n.value AS name, sh.value AS shape, p.pid, t.tid, e.start_ns, e.end_ns, "
            "e.end_ns - e.start_ns AS dur_ns, e.parent_id, e.depth, e.cpu_total_ns, e.cpu_self_ns, "
            "e.gpu_total_ns, e.gpu_self_ns, e.cpu_mem_total, e.cpu_mem_self, e.gpu_mem_total, "
            "e.gpu_mem_self, e.flops, e.seq, e.op_id "
            "FROM events e JOIN strings n ON n.id = e.name_id LEFT JOIN strings sh ON sh.id = e.shape_id "
            "LEFT JOIN threads t ON t.id = e.thread_id LEFT JOIN processes p ON p.id = t.process_id "
            "WHERE e.kind IN (1, 2) AND (e.flags & 32) = 0"},
    /* the op is the launching call's caller, or its caller's caller when a
     * runtime call wraps the driver call that launched */
    {"kernel_launches",
     "CREATE VIEW kernel_launches AS SELECT e.id, n.value AS kernel, d.device, s.stream, e.start_ns, "
     "e.end_ns, e.end_ns - e.start_ns AS dur_ns, k.grid_x, k.grid_y, k.grid_z, k.block_x, k.block_y, "
     "k.block_z, k.registers_per_thread, k.static_shared_bytes, k.dynamic_shared_bytes, "
     "a.id AS launch_id, an.value AS launched_by, t.tid AS launch_tid, a.start_ns AS launch_start_ns, "
     "e.start_ns - a.start_ns AS launch_delay_ns, "
     "CASE WHEN o.kind IN (1, 2) THEN o.id WHEN o2.kind IN (1, 2) THEN o2.id END AS op_event_id, "
     "CASE WHEN o.kind IN (1, 2) THEN onm.value WHEN o2.kind IN (1, 2) THEN o2nm.value END AS op "
     "FROM events e JOIN strings n ON n.id = e.name_id LEFT JOIN kernels k ON k.event_id = e.id "
     "LEFT JOIN streams s ON s.id = e.stream_id LEFT JOIN devices d ON d.id = s.device_id "
     "LEFT JOIN events a ON a.id = e.parent_id LEFT JOIN strings an ON an.id = a.name_id "
     "LEFT JOIN threads t ON t.id = a.thread_id "
     "LEFT JOIN events o ON o.id = a.parent_id LEFT JOIN strings onm ON onm.id = o.name_id "
     "LEFT JOIN events o2 ON o2.id = o.parent_id LEFT JOIN strings o2nm ON o2nm.id = o2.name_id "
     "WHERE e.kind = 7"},
    {"steps", "CREATE VIEW steps AS SELECT CAST(substr(n.value, 14) AS INTEGER) AS step, "
              "min(e.start_ns) AS start_ns, max(e.end_ns) AS end_ns, max(e.end_ns) - min(e.start_ns) AS dur_ns, "
              "sum(e.gpu_total_ns) AS gpu_ns, count(*) AS ranges "
              "FROM events e JOIN strings n ON n.id = e.name_id "
              "WHERE e.kind IN (1, 2) AND n.value GLOB 'ProfilerStep#[0-9]*' "
              "AND substr(n.value, 14) NOT GLOB '*[^0-9]*' GROUP BY e.name_id"},
};
const size_t tr_rundb_nviews = sizeof tr_rundb_views / sizeof tr_rundb_views[0];

/* Analyses are single scans; the one index serves tree walks (children of an
 * event).  Each further index would cost about a tenth of the ingest time.
 * SQLite creates it empty; its entries are written as pages with the events'
 * (write_event_pages()), so another index on events would need the same. */
static const char events_parent_ddl[] = "CREATE INDEX events_parent ON events(parent_id)";

static tr_status sql_exec(sqlite3 *db, const char *sql, tr_error *err)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s (in: %.80s)", msg ? msg : "error", sql);
        sqlite3_free(msg);
        return TR_ERR_RUNTIME;
    }
    return TR_OK;
}

tr_status tr_rundb_create_schema(sqlite3 *db, tr_error *err)
{
    tr_status st;
    for (size_t i = 0; i < tr_rundb_ntables; i++)
        if ((st = sql_exec(db, tr_rundb_tables[i].ddl, err)) != TR_OK)
            return st;
    for (size_t i = 0; i < tr_rundb_nviews; i++)
        if ((st = sql_exec(db, tr_rundb_views[i].ddl, err)) != TR_OK)
            return st;
    char pragma[64];
    snprintf(pragma, sizeof pragma, "PRAGMA user_version=%d", TR_RUNDB_SCHEMA_VERSION);
    return sql_exec(db, pragma, err);
}

/* Opens path for reading without blocking (a FIFO with no writer would block a
 * plain open) and refuses anything but a regular file; -1 with errno set. */
static int open_regular(const char *path, const char **what)
{
    *what = NULL;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        *what = S_ISDIR(sb.st_mode) ? "a directory" : S_ISFIFO(sb.st_mode) ? "a FIFO"
              : S_ISSOCK(sb.st_mode) ? "a socket" : S_ISCHR(sb.st_mode) || S_ISBLK(sb.st_mode)
              ? "a device" : "not a regular file";
        close(fd);
        errno = EINVAL;
        return -1;
    }
    return fd;
}

/* Whether a file of size bytes whose first got bytes are h (the SQLite magic
 * checked) is shorter than its header says: the page count (at byte 28, valid
 * when the counter at 92 matches the one at 24) times the page size (at 16;
 * 1 stands for 65536). */
static int header_cut_short(const unsigned char *h, ssize_t got, int64_t size)
{
    if (got < 100)
        return 1;   /* not even the header */
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1)
        page = 65536;
    uint32_t pages = (uint32_t)h[28] << 24 | (uint32_t)h[29] << 16 | (uint32_t)h[30] << 8 | h[31];
    if (memcmp(h + 24, h + 92, 4) != 0 || page < 512 || (page & (page - 1)) || !pages)
        return 0;   /* an older writer's header: the count is not kept */
    return (uint64_t)size < (uint64_t)page * pages;
}

int tr_sqlite_probe(const char *path, int *cut_short)
{
    unsigned char h[100];
    const char *what;
    *cut_short = 0;
    int fd = open_regular(path, &what);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, h, sizeof h);
    struct stat sb;
    int have_size = fstat(fd, &sb) == 0;
    close(fd);
    if (got < 16 || memcmp(h, "SQLite format 3", 16) != 0)
        return 0;
    *cut_short = have_size && header_cut_short(h, got, (int64_t)sb.st_size);
    return 1;
}

int tr_file_is_sqlite(const char *path)
{
    int cut_short;
    return tr_sqlite_probe(path, &cut_short);
}

/* Prepared insert with positional binds. */
typedef struct {
    sqlite3_stmt *st;
    int col;
} ins;

static void b_int(ins *s, int64_t v) { sqlite3_bind_int64(s->st, ++s->col, v); }
static void b_null(ins *s) { sqlite3_bind_null(s->st, ++s->col); }
static void b_opt(ins *s, int64_t v, int64_t none) { if (v == none) b_null(s); else b_int(s, v); }
static void b_text(ins *s, const char *v)
{
    if (v)
        sqlite3_bind_text(s->st, ++s->col, v, -1, SQLITE_STATIC);
    else
        b_null(s);
}

static tr_status step(sqlite3 *db, ins *s, tr_error *err)
{
    /* every column is bound on every row, so bindings need no clearing */
    int rc = sqlite3_step(s->st);
    sqlite3_reset(s->st);
    s->col = 0;
    if (rc != SQLITE_DONE)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s", sqlite3_errmsg(db));
    return TR_OK;
}

static tr_status prep(sqlite3 *db, const char *sql, ins *s, tr_error *err)
{
    s->col = 0;
    if (sqlite3_prepare_v2(db, sql, -1, &s->st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s", sqlite3_errmsg(db));
    return TR_OK;
}

#define ID_OR_NULL(s, v) b_opt((s), (int64_t)(v), 0)

/* The event-sized tables, written row by row straight from the event array:
 * events itself and one detail table per kind that has details. */
static int fill_event(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_event *e = &t->events.v[i];
    const tr_event_extra x = tr_extra(t, e);
    tr_cell_int(&c[0], (int64_t)i + 1);
    tr_cell_int(&c[1], e->kind);
    tr_cell_int(&c[2], e->name);
    tr_cell_opt(&c[3], tr_event_raw_name(t, e), 0);
    tr_cell_int(&c[4], e->start);
    tr_cell_int(&c[5], e->end);
    tr_cell_opt(&c[6], e->thread, 0);
    tr_cell_opt(&c[7], e->stream, 0);
    tr_cell_opt(&c[8], tr_correlation(t, e), -1);
    tr_cell_opt(&c[9], e->parent + 1, 0);
    tr_cell_int(&c[10], tr_depth(t, e));
    tr_cell_opt(&c[11], x.shape, 0);
    tr_cell_opt(&c[12], e->stack, 0);
    tr_cell_opt(&c[13], x.seq, -1);
    tr_cell_opt(&c[14], x.op_id, -1);
    tr_cell_int(&c[15], x.bytes);
    tr_cell_opt(&c[16], x.flops, -1);
    tr_cell_int(&c[17], e->flags & TR_FLAGS_STORED);
    tr_cell_int(&c[18], tr_kinds[e->kind].on_gpu ? 0 : tr_sat_sub(e->end, e->start));
    tr_cell_int(&c[19], tr_cpu_self(t, e));
    tr_cell_int(&c[20], tr_gpu_total(t, e));
    tr_cell_int(&c[21], tr_gpu_self(t, e));
    static const tr_event_mem none;
    const tr_event_mem *m = t->mem ? &t->mem[i] : &none;
    tr_cell_int(&c[22], m->cpu_total);
    tr_cell_int(&c[23], m->cpu_self);
    tr_cell_int(&c[24], m->gpu_total);
    tr_cell_int(&c[25], m->gpu_self);
    return 1;
}

static int fill_string(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_intern_entry *s = &t->strings.entries[i + 1];
    tr_cell_int(&c[0], (int64_t)i + 1);
    tr_cell_text(&c[1], s->str, (int)s->len);
    return 1;
}

static int fill_kernel(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_event *e = &t->events.v[i];
    if (e->kind != TR_KIND_KERNEL || !e->detail)
        return 0;
    const tr_kernel_detail *k = &t->kernels.v[e->detail];
    tr_cell_int(&c[0], (int64_t)i + 1);
    for (int j = 0; j < 3; j++) {
        tr_cell_opt(&c[1 + j], k->grid[j], -1);
        tr_cell_opt(&c[4 + j], k->block[j], -1);
    }
    tr_cell_opt(&c[7], k->registers, -1);
    tr_cell_opt(&c[8], k->static_smem, -1);
    tr_cell_opt(&c[9], k->dynamic_smem, -1);
    return 1;
}

static void cell_string(const tr_trace *t, tr_cell *c, uint32_t id)
{
    if (id)
        tr_cell_text(c, t->strings.entries[id].str, (int)t->strings.entries[id].len);
    else
        tr_cell_null(c);
}

static int fill_copy(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_event *e = &t->events.v[i];
    if (e->kind != TR_KIND_MEMCPY || !e->detail)
        return 0;
    const tr_copy_detail *d = &t->copies.v[e->detail];
    tr_cell_int(&c[0], (int64_t)i + 1);
    cell_string(t, &c[1], d->copy_kind);
    cell_string(t, &c[2], d->src_kind);
    cell_string(t, &c[3], d->dst_kind);
    return 1;
}

static int fill_memset(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_event *e = &t->events.v[i];
    if (e->kind != TR_KIND_MEMSET || !e->detail)
        return 0;
    tr_cell_int(&c[0], (int64_t)i + 1);
    tr_cell_int(&c[1], t->memset_values.v[e->detail]);
    return 1;
}

static int fill_api_call(const void *ctx, size_t i, tr_cell *c)
{
    const tr_trace *t = ctx;
    const tr_event *e = &t->events.v[i];
    if (!tr_kinds[e->kind].is_api || !e->detail)
        return 0;
    const tr_api_detail *a = &t->apis.v[e->detail];
    tr_cell_int(&c[0], (int64_t)i + 1);
    tr_cell_int(&c[1], a->cbid);
    tr_cell_int(&c[2], a->return_value);
    return 1;
}

static const struct {
    const char *table;
    int ncols;
    tr_row_fill fill;
} detail_tables[] = {
    {"kernels", 10, fill_kernel},
    {"copies", 4, fill_copy},
    {"memsets", 2, fill_memset},
    {"api_calls", 3, fill_api_call},
};

/* Strings first..last-1 (ids), through the bulk insert. */
typedef struct { const tr_trace *t; size_t first; } string_range;

static int fill_string_in(const void *ctx, size_t i, tr_cell *c)
{
    const string_range *r = ctx;
    return fill_string(r->t, r->first - 1 + i, c);
}

static tr_status write_strings(sqlite3 *db, const tr_trace *t, size_t first, size_t last,
                               tr_error *err)
{
    string_range r = {t, first};
    return last > first
               ? tr_bulk_append(db, "strings", 2, last - first, (int64_t)first, fill_string_in, &r, err)
               : TR_OK;
}

/* The small tables go through prepared statements, a row at a time; each
 * macro leaves the function through `out` on failure. */
#define PREP(sql) do { if ((st = prep(db, (sql), &s, err)) != TR_OK) goto out; } while (0)
#define STEP() do { if ((st = step(db, &s, err)) != TR_OK) goto out; } while (0)
#define DONE() do { sqlite3_finalize(s.st); s.st = NULL; } while (0)

/* The small tables the call tree leaves as they are: kinds, processes,
 * threads, devices, streams and stack nodes (the strings so far and the
 * detail tables go in as pages, write_pages_before_tree()). */
static tr_status write_before_tree(sqlite3 *db, const tr_trace *t, tr_error *err)
{
    tr_status st = TR_OK;
    ins s = {0};

    PREP("INSERT INTO kinds(id, name, on_gpu) VALUES(?, ?, ?)");
    for (int k = 1; k < TR_KIND_COUNT_; k++) {
        b_int(&s, k);
        b_text(&s, tr_kinds[k].name);
        b_int(&s, tr_kinds[k].on_gpu);
        STEP();
    }
    DONE();

    PREP("INSERT INTO processes(id, source_id, pid, name_id) VALUES(?,?,?,?)");
    for (size_t i = 1; i < t->processes.n; i++) {
        const tr_process *p = &t->processes.v[i];
        b_int(&s, (int64_t)i);
        b_int(&s, p->source);
        b_int(&s, p->pid);
        ID_OR_NULL(&s, p->name);
        STEP();
    }
    DONE();

    PREP("INSERT INTO threads(id, process_id, tid, name_id) VALUES(?,?,?,?)");
    for (size_t i = 1; i < t->threads.n; i++) {
        const tr_thread *th = &t->threads.v[i];
        b_int(&s, (int64_t)i);
        b_int(&s, th->process);
        b_int(&s, th->tid);
        ID_OR_NULL(&s, th->name);
        STEP();
    }
    DONE();

    PREP("INSERT INTO devices(id, source_id, device, name_id, compute_major, compute_minor, "
         "memory_bytes, sm_count) VALUES(?,?,?,?,?,?,?,?)");
    for (size_t i = 1; i < t->devices.n; i++) {
        const tr_device *d = &t->devices.v[i];
        b_int(&s, (int64_t)i);
        b_int(&s, d->source);
        b_int(&s, d->device);
        ID_OR_NULL(&s, d->name);
        b_opt(&s, d->cc_major, -1);
        b_opt(&s, d->cc_minor, -1);
        b_opt(&s, d->memory_bytes, -1);
        b_opt(&s, d->sm_count, -1);
        STEP();
    }
    DONE();

    PREP("INSERT INTO streams(id, device_id, context, stream) VALUES(?,?,?,?)");
    for (size_t i = 1; i < t->streams.n; i++) {
        const tr_stream *sr = &t->streams.v[i];
        b_int(&s, (int64_t)i);
        b_int(&s, sr->device);
        b_opt(&s, sr->context, -1);
        b_int(&s, sr->stream);
        STEP();
    }
    DONE();

    PREP("INSERT INTO stack_nodes(id, parent_id, frame_id) VALUES(?,?,?)");
    for (size_t i = 1; i < t->stack_nodes.n; i++) {
        b_int(&s, (int64_t)i);
        ID_OR_NULL(&s, t->stack_nodes.v[i].parent);
        b_int(&s, t->stack_nodes.v[i].frame);
        STEP();
    }
    DONE();
out:
    if (s.st)
        sqlite3_finalize(s.st);
    return st;
}

/* ---- the events table and events_parent, as b-tree pages ----
 *
 * SQLite creates both empty; once its connection is closed, their pages are
 * appended to the file (lib/btree_append.h): the rows in id order, the index
 * entries (parent_id, id) in index order, which a counting sort by parent
 * gives.  docs/ingest.md, "The events table as pages", says why. */

typedef struct {
    uint32_t *order;       /* event indices in events_parent's order */
    /* bit b: bucket b (parent index + 1; 0: no parent) has entries; bit k:
     * entry k is the first of its bucket.  Two bits an event, where the
     * buckets' bounds took 32, at the write's peak */
    uint64_t *nonempty, *first;
    size_t *bucket;        /* the bucket of the entry asked for last (the entries come in order) */
} parent_order;

static int bit(const uint64_t *bits, size_t i)
{
    return (bits[i / 64] >> (i % 64)) & 1;
}

static void set_bit(uint64_t *bits, size_t i)
{
    bits[i / 64] |= (uint64_t)1 << (i % 64);
}

static int fill_parent_entry(const void *ctx, size_t k, tr_cell *c)
{
    const parent_order *p = ctx;
    size_t b = *p->bucket;
    if (bit(p->first, k)) {   /* the next bucket with entries; the first entry's is bucket 0 or on */
        b = k ? b + 1 : 0;
        while (!bit(p->nonempty, b))
            b++;
    }
    *p->bucket = b;
    tr_cell_opt(&c[0], (int64_t)b, 0);            /* parent_id, as fill_event() writes it */
    tr_cell_int(&c[1], (int64_t)p->order[k] + 1);
    return 1;
}

static void parent_order_free(parent_order *p)
{
    tr_spill_free(p->order);
    tr_spill_free(p->nonempty);
    tr_spill_free(p->first);
    p->order = NULL;
    p->nonempty = p->first = NULL;
}

/* A stable counting sort of the events by parent. */
static tr_status sort_by_parent(const tr_trace *t, parent_order *p, tr_error *err)
{
    size_t n = t->events.n;
    p->order = tr_spill_calloc(n ? n : 1, sizeof *p->order);
    p->nonempty = tr_spill_calloc(n / 64 + 1, sizeof *p->nonempty);
    p->first = tr_spill_calloc(n / 64 + 1, sizeof *p->first);
    uint32_t *start = tr_spill_calloc(n + 1, sizeof *start);   /* where each bucket starts */
    if (!p->order || !p->nonempty || !p->first || !start || n > UINT32_MAX - 1) {
        tr_spill_free(start);
        parent_order_free(p);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    const tr_event *ev = t->events.v;
    for (size_t i = 0; i < n; i++, tr_spill_tick())
        start[ev[i].parent + 1]++;
    uint32_t sum = 0;
    for (size_t b = 0; b <= n; b++) {
        uint32_t count = start[b];
        if (count) {
            set_bit(p->nonempty, b);
            set_bit(p->first, sum);
        }
        start[b] = sum;
        sum += count;
    }
    for (size_t i = 0; i < n; i++, tr_spill_tick())
        p->order[start[ev[i].parent + 1]++] = (uint32_t)i;
    tr_spill_free(start);
    return TR_OK;
}

/* While the first thread writes the events' pages, a second sorts the events
 * by parent and builds events_parent's pages apart (lib/btree_append.h),
 * then gathers the aggregates' groups; it only reads the trace.  The first
 * thread waits for the index before appending its pages after the events',
 * and for the groups before it inserts them, last.  Where the index cannot
 * be built apart (no file for it), the first thread builds it from the
 * order, as it would without a second thread. */
typedef struct {
    const tr_trace *t;
    tr_btree_file *index;   /* events_parent built apart, or NULL */
    uint32_t index_root;
    parent_order order;
    size_t bucket;
    tr_status sort_st, agg_st;
    tr_error sort_err, agg_err;
    tr_aggregates *ag;
    int sorted;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    pthread_t th;
    int threaded;
} beside_events_job;

/* The events' order by parent, and events_parent's pages from it where
 * they are built apart (the order's memory then goes back at once).  When
 * the side file fails (a full disk), the order stays for the first thread
 * to build them in place. */
static tr_status index_by_parent(beside_events_job *j, tr_error *err)
{
    tr_status st = sort_by_parent(j->t, &j->order, err);
    if (st == TR_OK && j->index) {
        tr_error ignored;
        if (tr_btree_index(j->index, j->index_root, 2, j->t->events.n, fill_parent_entry, &j->order,
                           &ignored) == TR_OK) {
            parent_order_free(&j->order);
        } else {
            tr_btree_abort(j->index);
            j->index = NULL;
        }
    }
    return st;
}

static void *run_beside_events(void *arg)
{
    beside_events_job *j = arg;
    tr_status st = index_by_parent(j, &j->sort_err);
    pthread_mutex_lock(&j->lock);
    j->sort_st = st;
    j->sorted = 1;
    pthread_cond_signal(&j->cond);
    pthread_mutex_unlock(&j->lock);
    j->agg_st = tr_aggregates_compute(j->t, &j->ag, &j->agg_err);
    return NULL;
}

static void beside_events_start(beside_events_job *j, const tr_trace *t, const char *path,
                                uint32_t index_root)
{
    memset(j, 0, sizeof *j);
    j->t = t;
    j->order.bucket = &j->bucket;
    j->index_root = index_root;
    tr_error ignored;
    if (tr_btree_open_apart(&j->index, path, &ignored) != TR_OK)
        j->index = NULL;
    j->threaded = pthread_mutex_init(&j->lock, NULL) == 0;
    if (j->threaded && pthread_cond_init(&j->cond, NULL) != 0) {
        pthread_mutex_destroy(&j->lock);
        j->threaded = 0;
    }
    if (j->threaded && pthread_create(&j->th, NULL, run_beside_events, j) != 0) {
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
        j->threaded = 0;
    }
}

/* events_parent built apart, or else the events in its order (made here,
 * without a thread). */
static tr_status beside_events_indexed(beside_events_job *j, tr_error *err)
{
    if (j->threaded) {
        pthread_mutex_lock(&j->lock);
        while (!j->sorted)
            pthread_cond_wait(&j->cond, &j->lock);
        pthread_mutex_unlock(&j->lock);
    } else if (!j->sorted) {
        j->sort_st = index_by_parent(j, &j->sort_err);
        j->sorted = 1;
    }
    return j->sort_st == TR_OK ? TR_OK : tr_error_copy(err, &j->sort_err);
}

/* Waits for the second thread (or gathers the groups here, without one) and
 * inserts the aggregates' rows when st, the write's status so far, is TR_OK. */
static tr_status beside_events_finish(beside_events_job *j, sqlite3 *db, tr_status st, tr_error *err)
{
    if (j->threaded) {
        pthread_join(j->th, NULL);
        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
    } else if (st == TR_OK) {
        j->agg_st = tr_aggregates_compute(j->t, &j->ag, &j->agg_err);
    }
    parent_order_free(&j->order);
    tr_btree_abort(j->index);   /* left when the write failed first */
    j->index = NULL;
    if (st == TR_OK && j->agg_st != TR_OK)
        st = tr_error_copy(err, &j->agg_err);
    if (st == TR_OK)
        st = tr_aggregates_insert(db, j->ag, err);
    tr_aggregates_free(j->ag);
    return st;
}

static tr_status root_page(sqlite3 *db, const char *name, uint32_t *root, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE name = ?", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        rc = sqlite3_step(st);
    }
    *root = rc == SQLITE_ROW ? (uint32_t)sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: no root page for %s: %s", name, sqlite3_errmsg(db));
    return TR_OK;
}

/* The tables and the index written as pages, and their root pages. */
enum {
    ROOT_STRINGS, ROOT_EVENTS, ROOT_EVENTS_PARENT, ROOT_DETAILS,
    NROOTS = ROOT_DETAILS + sizeof detail_tables / sizeof detail_tables[0]
};

static tr_status find_roots(sqlite3 *db, uint32_t roots[NROOTS], tr_error *err)
{
    tr_status st = TR_OK;
    const char *names[NROOTS] = {"strings", "events", "events_parent"};
    for (size_t i = 0; i < sizeof detail_tables / sizeof detail_tables[0]; i++)
        names[ROOT_DETAILS + i] = detail_tables[i].table;
    for (size_t i = 0; i < NROOTS && st == TR_OK; i++)
        st = root_page(db, names[i], &roots[i], err);
    return st;
}

static tr_status close_pages(tr_btree_file *f, tr_status st, tr_error *err)
{
    if (st == TR_OK)
        return tr_btree_close(f, err);
    tr_btree_abort(f);
    return st;
}

/* Before the tree: the strings interned so far (nstrings; a trace of
 * distinct NVTX names has nearly a string per event) and the detail tables.
 * Reads only the event's kind and detail, which the tree leaves as they are. */
static tr_status write_pages_before_tree(const char *path, const tr_trace *t, size_t nstrings,
                                         const uint32_t roots[NROOTS], tr_error *err)
{
    tr_btree_file *f = NULL;
    string_range strings = {t, 1};
    tr_status st = tr_btree_open(&f, path, err);
    if (st == TR_OK)
        st = tr_btree_table(f, roots[ROOT_STRINGS], 2, nstrings, fill_string_in, &strings, err);
    for (size_t i = 0; i < sizeof detail_tables / sizeof detail_tables[0] && st == TR_OK; i++)
        st = tr_btree_table(f, roots[ROOT_DETAILS + i], detail_tables[i].ncols, t->events.n,
                            detail_tables[i].fill, t, err);
    return close_pages(f, st, err);
}

/* After the tree: the events and events_parent. */
static tr_status write_event_pages(const char *path, const tr_trace *t, const uint32_t roots[NROOTS],
                                   beside_events_job *job, tr_error *err)
{
    tr_btree_file *f = NULL;
    tr_status st = tr_btree_open(&f, path, err);
    if (st == TR_OK
        && (st = tr_btree_table(f, roots[ROOT_EVENTS], 26, t->events.n, fill_event, t, err)) == TR_OK
        && (st = beside_events_indexed(job, err)) == TR_OK) {
        if (job->index) {
            st = tr_btree_append_apart(f, job->index, err);
            job->index = NULL;
        } else {
            st = tr_btree_index(f, roots[ROOT_EVENTS_PARENT], 2, t->events.n, fill_parent_entry, &job->order, err);
        }
        parent_order_free(&job->order);   /* the second thread is done with it: its memory back now */
    }
    return close_pages(f, st, err);
}

/* What SQLite writes once the tree is built, after the events' pages: the
 * meta rows (the tree counts GPU activities without a launching call),
 * strings interned since, sources and collectives. */
static tr_status write_after_tree(sqlite3 *db, const tr_trace *t, size_t nstrings,
                                  const tr_meta_kv *meta, size_t nmeta, tr_error *err)
{
    tr_status st = TR_OK;
    ins s = {0};

    PREP("INSERT INTO meta(key, value) VALUES(?, ?)");
    char ver[16];
    snprintf(ver, sizeof ver, "%d", TR_RUNDB_SCHEMA_VERSION);
    const tr_meta_kv fixed[] = {
        {"schema_version", ver},
        {"tool_version", TR_VERSION},
        {"time_unit", "ns"},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) {
        b_text(&s, fixed[i].key);
        b_text(&s, fixed[i].value);
        STEP();
    }
    for (size_t i = 0; i < nmeta; i++) {
        b_text(&s, meta[i].key);
        b_text(&s, meta[i].value);
        STEP();
    }
    /* GPU activities without a launching call, by reason, where there are some; and
     * their total, 0 included, which spares trace-analyze looking for them */
    static const char *const unlaunched[] = {"gpu_unlaunched_no_correlation",
                                             "gpu_unlaunched_before_capture", "gpu_unlaunched_not_found"};
    size_t total = 0;
    for (size_t i = 0; i < sizeof unlaunched / sizeof unlaunched[0]; i++) {
        total += t->gpu_unlaunched[i];
        if (!t->gpu_unlaunched[i])
            continue;
        char n[32];
        snprintf(n, sizeof n, "%zu", t->gpu_unlaunched[i]);
        b_text(&s, unlaunched[i]);
        b_text(&s, n);
        STEP();
    }
    char n[32];
    snprintf(n, sizeof n, "%zu", total);
    b_text(&s, "gpu_unlaunched");
    b_text(&s, n);
    STEP();
    DONE();

    if ((st = write_strings(db, t, nstrings + 1, tr_intern_count(&t->strings) + 1, err)) != TR_OK)
        goto out;

    PREP("INSERT INTO sources(id, path, format, format_version, host, rank, event_count) "
         "VALUES(?,?,?,?,?,?,?)");
    for (size_t i = 1; i < t->sources.n; i++) {
        const tr_source *src = &t->sources.v[i];
        b_int(&s, (int64_t)i);
        b_text(&s, tr_str_of(t, src->path));
        b_text(&s, tr_str_of(t, src->format));
        b_text(&s, src->format_version ? tr_str_of(t, src->format_version) : NULL);
        b_text(&s, src->host ? tr_str_of(t, src->host) : NULL);
        b_opt(&s, src->rank, -1);
        b_int(&s, src->events);
        STEP();
    }
    DONE();

    st = tr_coll_write(db, t, err);
out:
    if (s.st)
        sqlite3_finalize(s.st);
    return st;
}

#undef PREP
#undef STEP
#undef DONE

struct tr_rundb_writer {
    tr_output af;
    sqlite3 *db;
    size_t nstrings;          /* written by tr_rundb_write_begin() */
    uint32_t roots[NROOTS];   /* of the tables written as pages */
};

void tr_rundb_write_abort(tr_rundb_writer *w)
{
    if (!w)
        return;
    if (w->db)
        sqlite3_close(w->db);
    tr_output_abort(&w->af);
    free(w);
}

static tr_status close_db(tr_rundb_writer *w, tr_error *err)
{
    tr_status st = TR_OK;
    if (sqlite3_close(w->db) != SQLITE_OK)
        st = tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s", sqlite3_errmsg(w->db));
    w->db = NULL;
    return st;
}

/* Opens the file again after the events' pages, for the rows that follow. */
static tr_status reopen_db(tr_rundb_writer *w, tr_error *err)
{
    if (sqlite3_open_v2(w->af.tmp_path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK)
        return tr_fail(err, TR_ERR_RUNTIME, "SQLite: %s", w->db ? sqlite3_errmsg(w->db) : "out of memory");
    return sql_exec(w->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN", err);
}

tr_status tr_rundb_write_begin(tr_rundb_writer **out, const tr_trace *t, const char *path,
                               tr_error *err)
{
    *out = NULL;
    tr_rundb_writer *w = calloc(1, sizeof *w);
    if (!w)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    tr_status st = tr_output_begin(&w->af, path, TR_OUTPUT_NEED_FILE, err);
    if (st != TR_OK) {
        free(w);
        return st;
    }
    if (sqlite3_open_v2(w->af.tmp_path, &w->db,
                        SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK) {
        st = tr_fail(err, TR_ERR_RUNTIME, "cannot create %s: %s", path,
                     w->db ? sqlite3_errmsg(w->db) : "out of memory");
        tr_rundb_write_abort(w);
        return st;
    }
    /* The file is a temporary one until its rename: no journal, no syncs.
     * 16 KiB pages were chosen when SQLite appended the events (a few percent
     * cheaper than 8 KiB); the pages written by lib/btree_append.c keep the
     * size SQLite gives the file.  The large tables go in as pages: SQLite
     * writes the small ones, closes the file, and opens it again after. */
    w->nstrings = tr_intern_count(&t->strings);
    if ((st = sql_exec(w->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; "
                              "PRAGMA page_size=16384; BEGIN", err)) != TR_OK
        || (st = tr_rundb_create_schema(w->db, err)) != TR_OK
        || (st = sql_exec(w->db, events_parent_ddl, err)) != TR_OK
        || (st = write_before_tree(w->db, t, err)) != TR_OK
        || (st = find_roots(w->db, w->roots, err)) != TR_OK
        || (st = sql_exec(w->db, "COMMIT", err)) != TR_OK || (st = close_db(w, err)) != TR_OK
        || (st = write_pages_before_tree(w->af.tmp_path, t, w->nstrings, w->roots, err)) != TR_OK) {
        tr_error_prefix(err, "cannot write %s: ", path);
        tr_rundb_write_abort(w);
        return st;
    }
    *out = w;
    return TR_OK;
}

/* The events' pages go in while SQLite has the file closed, and the events'
 * order by parent and the aggregates' groups are made beside them; then
 * SQLite opens the file again for the rest and the aggregates' rows. */
tr_status tr_rundb_write_end(tr_rundb_writer *w, const tr_trace *t, const tr_meta_kv *meta,
                             size_t nmeta, tr_error *err)
{
    beside_events_job job;
    beside_events_start(&job, t, w->af.tmp_path, w->roots[ROOT_EVENTS_PARENT]);
    tr_status st = write_event_pages(w->af.tmp_path, t, w->roots, &job, err);
    if (st == TR_OK && (st = reopen_db(w, err)) == TR_OK)
        st = write_after_tree(w->db, t, w->nstrings, meta, nmeta, err);
    st = beside_events_finish(&job, w->db, st, err);
    if (st == TR_OK && (st = sql_exec(w->db, "COMMIT", err)) == TR_OK)
        st = close_db(w, err);
    if (st != TR_OK) {
        tr_error_prefix(err, "cannot write %s: ", w->af.path);
        tr_rundb_write_abort(w);
        return st;
    }
    st = tr_output_commit(&w->af, err);
    free(w);
    return st;
}

tr_status tr_rundb_write(const tr_trace *t, const char *path,
                         const tr_meta_kv *meta, size_t nmeta, tr_error *err)
{
    tr_rundb_writer *w;
    tr_status st = tr_rundb_write_begin(&w, t, path, err);
    return st == TR_OK ? tr_rundb_write_end(w, t, meta, nmeta, err) : st;
}

/* ---- opening a run.db for reading ----
 *
 * A run.db may come from anywhere, so it is opened as hostile: read-only, with
 * SQLite's defensive mode, no views or triggers, an untrusted schema, and a
 * wall-clock limit on every query.  Every table the tools read must be a
 * plain table holding the schema's columns, so no query over it can run
 * user-defined SQL. */

/* Columns of schema v1 that were added after the first v1 files were written:
 * the tools read none of them, so older files without them stay readable. */
static const struct { const char *table, *column; } optional_columns[] = {
    {"sources", "host"},
    {"sources", "rank"},
};

static int column_optional(const char *table, const char *column)
{
    for (size_t i = 0; i < sizeof optional_columns / sizeof optional_columns[0]; i++)
        if (!strcmp(optional_columns[i].table, table) && !strcmp(optional_columns[i].column, column))
            return 1;
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The deadline travels in the handler's pointer argument (CLOCK_MONOTONIC ms):
 * the handle is closed by callers with sqlite3_close(), so there is no place
 * to free a separately allocated context. */
static int past_deadline(void *arg)
{
    return now_ms() > (int64_t)(intptr_t)arg;
}

/* How long queries over this file may run: generous for real work and growing
 * with the file (1 s per 8 MiB over a minute), TRACEKIT_QUERY_TIMEOUT seconds
 * when set (0: no limit). */
static int64_t query_limit_ms(int64_t size)
{
    const char *env = getenv("TRACEKIT_QUERY_TIMEOUT");
    if (env && *env) {
        char *end;
        double s = strtod(env, &end);
        if (*end == '\0' && s >= 0 && s < 1e9)
            return s > 0 && s < 0.001 ? 1 : (int64_t)(s * 1000);
    }
    return 60000 + size / (8 << 20) * 1000;
}

static tr_status bad(tr_error *err, sqlite3 *db, const char *path, const char *fmt, const char *a,
                     const char *b)
{
    tr_fail(err, TR_ERR_INPUT, fmt, path, a, b ? b : (db ? sqlite3_errmsg(db) : ""));
    return TR_ERR_INPUT;
}

/* The reference columns of each table, from the schema itself. */
static tr_status check_tables(sqlite3 *db, const char *path, tr_error *err)
{
    sqlite3 *ref = NULL;
    tr_status st = TR_OK;
    if (sqlite3_open_v2(":memory:", &ref, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL)
        != SQLITE_OK || tr_rundb_create_schema(ref, err) != TR_OK) {
        sqlite3_close(ref);
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    }
    sqlite3_stmt *obj = NULL, *have = NULL, *want = NULL;
    if (sqlite3_prepare_v2(db, "SELECT type, sql FROM sqlite_master WHERE name = ?1 COLLATE NOCASE",
                           -1, &obj, NULL) != SQLITE_OK) {
        st = bad(err, db, path, "%s: not a readable run database%s: %s", "", NULL);
        goto out;
    }
    for (size_t t = 0; t < tr_rundb_ntables && st == TR_OK; t++) {
        const char *table = tr_rundb_tables[t].table;
        sqlite3_reset(obj);
        sqlite3_bind_text(obj, 1, table, -1, SQLITE_STATIC);
        int rc = sqlite3_step(obj);
        if (rc == SQLITE_DONE && tr_rundb_tables[t].optional)
            continue;
        if (rc == SQLITE_DONE) {
            st = bad(err, db, path, "%s: not a run database: table %s is missing%s", table, "");
            break;
        }
        if (rc != SQLITE_ROW) {
            st = bad(err, db, path, "%s: not a readable run database (table %s): %s", table, NULL);
            break;
        }
        const char *type = (const char *)sqlite3_column_text(obj, 0);
        const char *sql = (const char *)sqlite3_column_text(obj, 1);
        if (!type || strcmp(type, "table") != 0) {
            st = bad(err, db, path, "%s: not a run database: %s is a %s, not a table", table,
                     type ? type : "nameless object");
            break;
        }
        if (!sql || !strncasecmp(sql, "CREATE VIRTUAL", 14)) {
            st = bad(err, db, path, "%s: not a run database: %s is a %s, not a plain table", table,
                     "virtual table");
            break;
        }
        /* the file's columns; a generated column (hidden 2 or 3) runs SQL on read */
        char q[128];
        snprintf(q, sizeof q, "SELECT name, hidden FROM pragma_table_xinfo('%s')", table);
        if (sqlite3_prepare_v2(db, q, -1, &have, NULL) != SQLITE_OK
            || sqlite3_prepare_v2(ref, "SELECT name FROM pragma_table_xinfo(?1)", -1, &want, NULL)
                   != SQLITE_OK) {
            st = bad(err, db, path, "%s: not a readable run database (table %s): %s", table, NULL);
            break;
        }
        sqlite3_bind_text(want, 1, table, -1, SQLITE_STATIC);
        /* schema tables are small: a quadratic match is cheaper than a set */
        char cols[64][32];
        size_t ncols = 0;
        while ((rc = sqlite3_step(have)) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(have, 0);
            if (sqlite3_column_int(have, 1) > 1) {
                st = bad(err, db, path, "%s: not a run database: %s.%s is a generated column",
                         table, name ? name : "?");
                break;
            }
            if (name && ncols < 64 && strlen(name) < sizeof cols[0])
                strcpy(cols[ncols++], name);
        }
        if (st == TR_OK && rc != SQLITE_DONE)
            st = bad(err, db, path, "%s: not a readable run database (table %s): %s", table, NULL);
        while (st == TR_OK && sqlite3_step(want) == SQLITE_ROW) {
            const char *name = (const char *)sqlite3_column_text(want, 0);
            size_t i = 0;
            while (i < ncols && strcasecmp(cols[i], name) != 0)
                i++;
            if (i == ncols && !column_optional(table, name))
                st = bad(err, db, path, "%s: not a run database: table %s has no column %s",
                         table, name);
        }
        sqlite3_finalize(have);
        sqlite3_finalize(want);
        have = want = NULL;
    }
out:
    sqlite3_finalize(obj);
    sqlite3_finalize(have);
    sqlite3_finalize(want);
    sqlite3_close(ref);
    return st;
}

/* Every source's path and every event's name are strings: a run.db with
 * sources or events and no strings was emptied after the ingest, and would
 * print blank names.  (Two probes of a b-tree's first row: cheap on any size.) */
static tr_status check_names(sqlite3 *db, const char *path, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, "SELECT (EXISTS(SELECT 1 FROM sources) OR EXISTS(SELECT 1 FROM events)) "
                                    "AND NOT EXISTS(SELECT 1 FROM strings)", -1, &st, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_step(st);
    int emptied = rc == SQLITE_ROW && sqlite3_column_int(st, 0);
    tr_status s = TR_OK;
    if (rc != SQLITE_ROW)
        s = bad(err, db, path, "%s: not a readable run database (table %s): %s", "strings", NULL);
    else if (emptied)
        s = tr_fail(err, TR_ERR_INPUT, "%s: damaged run database: its strings table is empty, "
                    "though it has sources or events", path);
    sqlite3_finalize(st);
    return s;
}

/* An older run.db still has its events table; any other SQLite file is version 0 too. */
static int has_events_table(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    int found = sqlite3_prepare_v2(db, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'events'",
                                   -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

int tr_sqlite_open_ro(const char *path, sqlite3 **db)
{
    *db = NULL;
    char *uri = malloc(5 + 3 * strlen(path) + 13);
    if (!uri)
        return SQLITE_NOMEM;
    char *w = uri + sprintf(uri, "file:");
    for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9')
            || strchr("/-._~", *c))
            *w++ = (char)*c;
        else
            w += sprintf(w, "%%%02X", *c);
    }
    strcpy(w, "?immutable=1");
    int rc = sqlite3_open_v2(uri, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                             NULL);
    free(uri);
    return rc;
}

tr_status tr_rundb_open(const char *path, sqlite3 **out, tr_error *err)
{
    *out = NULL;
    const char *what;
    int fd = open_regular(path, &what);
    if (fd < 0)
        return what ? tr_fail(err, TR_ERR_INPUT, "%s: not a run database (%s)", path, what)
                    : tr_fail(err, TR_ERR_INPUT, "cannot open %s: %s", path, strerror(errno));
    unsigned char hdr[100];
    ssize_t got = read(fd, hdr, sizeof hdr);
    struct stat sb;
    int64_t size = fstat(fd, &sb) == 0 ? (int64_t)sb.st_size : 0;
    close(fd);
    if (got < 16 || memcmp(hdr, "SQLite format 3", 16) != 0)
        return tr_fail(err, TR_ERR_INPUT, "%s: not a run database (not an SQLite file)", path);
    if (header_cut_short(hdr, got, size))
        return tr_fail(err, TR_ERR_INPUT, "%s: the run database is cut short (its header counts more pages "
                       "than the file holds)", path);
    sqlite3 *db = NULL;
    int orc = tr_sqlite_open_ro(path, &db);
    if (orc != SQLITE_OK) {
        tr_fail(err, TR_ERR_INPUT, "cannot open %s: %s", path,
                db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return TR_ERR_INPUT;
    }
    static const int off[] = {SQLITE_DBCONFIG_ENABLE_TRIGGER, SQLITE_DBCONFIG_ENABLE_VIEW,
                              SQLITE_DBCONFIG_TRUSTED_SCHEMA, SQLITE_DBCONFIG_ENABLE_LOAD_EXTENSION};
    for (size_t i = 0; i < sizeof off / sizeof off[0]; i++)
        sqlite3_db_config(db, off[i], 0, (int *)NULL);
    sqlite3_db_config(db, SQLITE_DBCONFIG_DEFENSIVE, 1, (int *)NULL);
    sqlite3_limit(db, SQLITE_LIMIT_ATTACHED, 0);
    int64_t limit = query_limit_ms(size);
    if (limit > 0)
        sqlite3_progress_handler(db, 1000, past_deadline, (void *)(intptr_t)(now_ms() + limit));
    /* cell_size_check makes SQLite report a corrupt page instead of reading past a cell */
    sqlite3_exec(db, "PRAGMA cell_size_check=ON", NULL, NULL, NULL);

    sqlite3_stmt *st = NULL;
    int version = 0, readable = 0;
    if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK
        && sqlite3_step(st) == SQLITE_ROW) {
        version = sqlite3_column_int(st, 0);
        readable = 1;
    }
    sqlite3_finalize(st);
    tr_status s = TR_ERR_INPUT;
    if (!readable) {
        tr_fail(err, TR_ERR_INPUT, "%s: not a readable SQLite database: %s", path, sqlite3_errmsg(db));
    } else if (version > TR_RUNDB_SCHEMA_VERSION) {
        tr_fail(err, TR_ERR_INPUT,
                "%s: run database schema version %d is newer than this tool reads (%d); "
                "upgrade the toolkit", path, version, TR_RUNDB_SCHEMA_VERSION);
    } else if (version < TR_RUNDB_SCHEMA_VERSION && has_events_table(db)) {
        tr_fail(err, TR_ERR_INPUT, "%s: run database schema version %d is older than this tool reads "
                "(%d); ingest the trace again", path, version, TR_RUNDB_SCHEMA_VERSION);
    } else if (version < TR_RUNDB_SCHEMA_VERSION) {
        tr_fail(err, TR_ERR_INPUT, "%s: not a run database (schema version %d)", path, version);
    } else {
        s = check_tables(db, path, err);
        if (s == TR_OK)
            s = check_names(db, path, err);
    }
    if (s == TR_OK) {
        *out = db;
        return TR_OK;
    }
    sqlite3_close(db);
    return s;
}

int tr_rundb_open_peers(sqlite3 *db, sqlite3 **out, int n)
{
    /* TR_ONE_THREAD=1: none, so the readers that would use them work alone (tests
     * compare the two ways) */
    const char *one = getenv("TR_ONE_THREAD");
    int wanted = one && *one && strcmp(one, "0") != 0 ? 0 : n;
    const char *file = db ? sqlite3_db_filename(db, "main") : NULL;
    tr_error ignored;
    int k = 0;
    while (k < wanted && file && *file && tr_rundb_open(file, &out[k], &ignored) == TR_OK)
        k++;
    for (int i = k; i < n; i++)
        out[i] = NULL;
    return k;
}

int tr_rundb_event_ids(sqlite3 *db, int64_t *min_id, int64_t *max_id)
{
    /* one aggregate a query: SQLite answers a lone min() or max() of the rowid from the
     * tree's edge, and both in one query by reading every row */
    static const char *const sql[2] = {"SELECT min(id) FROM events", "SELECT max(id) FROM events"};
    int ok = 1;
    for (int i = 0; i < 2 && ok; i++) {
        sqlite3_stmt *st = NULL;
        ok = sqlite3_prepare_v2(db, sql[i], -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW
             && sqlite3_column_type(st, 0) == SQLITE_INTEGER;
        if (ok)
            *(i ? max_id : min_id) = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return ok;
}

const char *tr_rundb_name(sqlite3 *db)
{
    const char *p = db ? sqlite3_db_filename(db, "main") : NULL;
    return p && *p ? p : "run database";
}
