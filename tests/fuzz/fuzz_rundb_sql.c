/*
 * libFuzzer target: SQL-level mutations of a valid run.db.  The input bytes
 * choose and parameterize statements (UPDATE, DELETE, views and triggers in
 * place of tables, parent loops, deep stack chains, generated columns,
 * user_version) applied to a copy of a seed run.db built at start-up from a
 * small Kineto trace; then trace-analyze's and trace-export's read paths run
 * over the result in-process.  Byte-level mutation rarely gets past SQLite's
 * own checks; this reaches the tools' handling of hostile but well-formed
 * databases.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_rundb_sql tests/fuzz/corpus/rundb_sql
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ingest/kineto.h"
#include "lib/tree.h"
#include "tests/fuzz/rundb_paths.h"
#include "tests/fuzz/fuzz_file.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char seed_trace[] =
    "{\"schemaVersion\":1,\"traceEvents\":["
    "{\"ph\":\"X\",\"cat\":\"user_annotation\",\"name\":\"ProfilerStep#1\",\"pid\":1,\"tid\":1,\"ts\":0,\"dur\":40},"
    "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"a.py(1): f\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":30,"
    "\"args\":{\"Python id\":1,\"Python parent id\":null}},"
    "{\"ph\":\"X\",\"cat\":\"python_function\",\"name\":\"b.py(2): g\",\"pid\":1,\"tid\":1,\"ts\":2,\"dur\":20,"
    "\"args\":{\"Python id\":2,\"Python parent id\":1}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::mm\",\"pid\":1,\"tid\":1,\"ts\":3,\"dur\":10,"
    "\"args\":{\"Input Dims\":[[2,3],[3,4]],\"Sequence number\":3}},"
    "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"aten::add\",\"pid\":1,\"tid\":2,\"ts\":3,\"dur\":10,"
    "\"args\":{\"Input Dims\":[[2],[2]]}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaLaunchKernel\",\"pid\":1,\"tid\":1,\"ts\":4,\"dur\":2,"
    "\"args\":{\"correlation\":9,\"cbid\":211}},"
    "{\"ph\":\"X\",\"cat\":\"cuda_runtime\",\"name\":\"cudaMemcpyAsync\",\"pid\":1,\"tid\":1,\"ts\":7,\"dur\":2,"
    "\"args\":{\"correlation\":10,\"cbid\":41}},"
    "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":8,\"dur\":2.25,"
    "\"args\":{\"device\":0,\"stream\":7,\"correlation\":9,\"grid\":[1,2,3],\"block\":[32,1,1]}},"
    "{\"ph\":\"X\",\"cat\":\"gpu_memcpy\",\"name\":\"Memcpy HtoD (Pageable -> Device)\",\"pid\":0,\"tid\":7,"
    "\"ts\":11,\"dur\":1,\"args\":{\"device\":0,\"stream\":7,\"correlation\":10,\"bytes\":64}},"
    "{\"ph\":\"X\",\"cat\":\"gpu_memset\",\"name\":\"Memset (Device)\",\"pid\":0,\"tid\":8,\"ts\":12,\"dur\":1,"
    "\"args\":{\"device\":0,\"stream\":8,\"bytes\":32}},"
    "{\"ph\":\"i\",\"cat\":\"cpu_instant_event\",\"s\":\"t\",\"name\":\"[memory]\",\"pid\":1,\"tid\":1,\"ts\":5,"
    "\"args\":{\"Bytes\":64,\"Device Type\":1}},"
    "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"tid\":0,\"args\":{\"name\":\"python\"}}"
    "]}";

static unsigned char *seed;
static size_t seed_len;

/* Tables and columns of the seed, read from the database itself. */
#define MAX_TABLES 32
#define MAX_COLS 32
static struct { char name[32]; char cols[MAX_COLS][32]; int ncols; } tables[MAX_TABLES];
static int ntables;

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *buf = n > 0 ? malloc((size_t)n) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *len = buf ? (size_t)n : 0;
    return buf;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    rundb_paths_init();
    char path[] = "/tmp/fuzz-rundb-seed.XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        abort();
    close(fd);
    tr_trace t;
    tr_error err;
    tr_error_clear(&err);
    if (tr_trace_init(&t, &err) != TR_OK
        || tr_kineto_read_mem(&t, "seed.json", seed_trace, sizeof seed_trace - 1, NULL, &err) != TR_OK
        || tr_tree_build(&t, &err) != TR_OK || tr_rundb_write(&t, path, NULL, 0, &err) != TR_OK) {
        fprintf(stderr, "fuzz_rundb_sql: cannot build the seed run.db: %s\n", err.msg);
        abort();
    }
    tr_trace_free(&t);
    seed = slurp(path, &seed_len);
    sqlite3 *db = NULL;
    if (!seed || sqlite3_open(path, &db) != SQLITE_OK)
        abort();
    for (size_t i = 0; i < tr_rundb_ntables && ntables < MAX_TABLES; i++) {
        sqlite3_stmt *st;
        char q[96];
        snprintf(q, sizeof q, "SELECT name FROM pragma_table_info('%s')", tr_rundb_tables[i].table);
        if (sqlite3_prepare_v2(db, q, -1, &st, NULL) != SQLITE_OK)
            continue;
        snprintf(tables[ntables].name, sizeof tables[ntables].name, "%s", tr_rundb_tables[i].table);
        while (sqlite3_step(st) == SQLITE_ROW && tables[ntables].ncols < MAX_COLS)
            snprintf(tables[ntables].cols[tables[ntables].ncols++], 32, "%s",
                     (const char *)sqlite3_column_text(st, 0));
        sqlite3_finalize(st);
        ntables++;
    }
    sqlite3_close(db);
    unlink(path);
    return 0;
}

/* Values a hostile file may hold in any column. */
static const char *const values[] = {
    "NULL", "0", "1", "-1", "2", "7", "9223372036854775807", "-9223372036854775808",
    "4611686018427387904", "-4611686018427387904", "4294967295", "-4294967296", "id", "id + 1",
    "id - 1", "rowid", "1e300", "-0.5", "'x'", "''", "x'ff00fe41'", "'a;b' || char(10) || 'c'",
    "'a' || char(0) || 'b'", "zeroblob(70000)", "(SELECT max(id) FROM events)",
    "(SELECT min(id) FROM events)", "(SELECT max(id) FROM stack_nodes)", "start_ns", "end_ns",
    "end_ns - start_ns", "-start_ns", "start_ns + 9223372036854775000",
};
#define NVALUES (sizeof values / sizeof values[0])

typedef struct {
    const uint8_t *p;
    size_t n;
} input;

static unsigned take(input *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

/* One statement from the input; 0 when the input is used up. */
static int next_sql(input *in, char *sql, size_t cap)
{
    if (!in->n || !ntables)
        return 0;
    unsigned op = take(in) % 12, ti = take(in) % (unsigned)ntables;
    const char *t = tables[ti].name;
    const char *c = tables[ti].ncols ? tables[ti].cols[take(in) % (unsigned)tables[ti].ncols] : "id";
    const char *v = values[take(in) % NVALUES];
    unsigned m = take(in) % 8 + 1, r = take(in) % 8;
    int k = (int)(take(in) % 16) - 8;
    switch (op) {
    case 0:
        snprintf(sql, cap, "UPDATE %s SET %s = %s WHERE rowid %% %u = %u", t, c, v, m, r % m);
        break;
    case 1:
        snprintf(sql, cap, "DELETE FROM %s WHERE rowid %% %u = %u", t, m, r % m);
        break;
    case 2:   /* parent loops and self-parents, GPU events included */
        snprintf(sql, cap, "UPDATE events SET parent_id = id + %d WHERE rowid %% %u = %u", k, m, r % m);
        break;
    case 3:
        snprintf(sql, cap, "UPDATE stack_nodes SET parent_id = id + %d WHERE rowid %% %u = %u", k, m,
                 r % m);
        break;
    case 4: {  /* a deep stack chain under a sparse id, used by an event */
        unsigned depth = (unsigned)take(in) * 50 + 1;
        long long base = (long long)(take(in) % 4) * 2147483647LL + 1000;
        snprintf(sql, cap, "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c "
                 "WHERE i < %u) INSERT OR IGNORE INTO stack_nodes(id, parent_id, frame_id) "
                 "SELECT %lld + i, CASE WHEN i > 1 THEN %lld + i - 1 END, 1 FROM c; "
                 "UPDATE events SET stack_id = %lld + %u WHERE rowid %% %u = %u",
                 depth, base, base, base, depth, m, r % m);
        break;
    }
    case 5:   /* a view, maybe recursive, in place of a table */
        snprintf(sql, cap, "ALTER TABLE %s RENAME TO %s_t; CREATE VIEW %s AS %s", t, t, t,
                 m & 1 ? "SELECT * FROM " : "WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
                 "SELECT x + 1 FROM r) SELECT * FROM r, ");
        if (m & 1)
            snprintf(sql + strlen(sql), cap - strlen(sql), "%s_t", t);
        else
            snprintf(sql + strlen(sql), cap - strlen(sql), "%s_t", t);
        break;
    case 6:
        snprintf(sql, cap, "CREATE TRIGGER IF NOT EXISTS tg%u AFTER UPDATE ON %s BEGIN "
                 "DELETE FROM %s; END", ti, t, t);
        break;
    case 7:
        snprintf(sql, cap, "PRAGMA user_version = %d", k);
        break;
    case 8:   /* a column dropped, or replaced by a generated one */
        snprintf(sql, cap, "ALTER TABLE %s DROP COLUMN %s; ALTER TABLE %s ADD COLUMN %s %s", t, c,
                 t, c, m & 1 ? "INTEGER" : "AS (1) VIRTUAL");
        break;
    case 9:
        snprintf(sql, cap, "CREATE INDEX IF NOT EXISTS ix%u ON %s(%s %s)", op * 64 + ti, t, c,
                 m & 1 ? "DESC" : "COLLATE NOCASE");
        break;
    case 10:  /* duplicate rows under new ids */
        snprintf(sql, cap, "INSERT INTO %s SELECT * FROM %s WHERE rowid %% %u = %u", t, t, m, r % m);
        break;
    default:
        snprintf(sql, cap, "UPDATE %s SET %s = %s WHERE rowid IN (SELECT rowid FROM %s LIMIT %u)",
                 t, c, v, t, m);
        break;
    }
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[] = "/tmp/fuzz-rundb-sql.XXXXXX";
    if (!fuzz_write_file(path, seed, seed_len))
        return 0;
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) == SQLITE_OK) {
        input in = {data, size};
        char sql[1024];
        for (int i = 0; i < 16 && next_sql(&in, sql, sizeof sql); i++)
            sqlite3_exec(db, sql, NULL, NULL, NULL);   /* a statement that fails is no change */
    }
    sqlite3_close(db);
    rundb_paths_run(path);
    unlink(path);
    return 0;
}
