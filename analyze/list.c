/* trace-analyze --list: what the selection options can pick, with counts. */
#include "analyze/list.h"

#include "analyze/analyze.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lib/rundb.h"

/* Cell types: a count or id (right-aligned), a name (left-aligned, cut in the
 * text table), a duration in ns (ms in the text table, ns elsewhere). */
enum { COL_INT = 'i', COL_NAME = 's', COL_NS = 't' };

typedef struct {
    const char *head;   /* text and markdown header */
    const char *key;    /* csv header and json key */
    char type;
} list_col;

#define MAX_COLS 8

struct tr_list {
    const char *name, *description;
    const char *sql;
    /* for files written before an optional column existed (docs/schema.md):
     * the same rows without it, tried when the first query does not prepare */
    const char *fallback_sql;
    list_col cols[MAX_COLS];
    const char *none;    /* what an empty list says */
    /* --rank: put for the SQL's RANKS comment, each @ the selected sources' ids */
    const char *rank_cond;
};

/* The --rank condition on events (their thread's or stream's source), and the comment
 * of each list's SQL where its --rank condition goes. */
#define EVENT_RANK_COND                                                                       \
    " AND (thread_id IN (SELECT t.id FROM threads t JOIN processes p ON p.id = t.process_id " \
    "WHERE p.source_id IN (@)) OR stream_id IN (SELECT s.id FROM streams s JOIN devices d "   \
    "ON d.id = s.device_id WHERE d.source_id IN (@)))"
#define RANKS "/*ranks*/"

/* GPU activities (kernels, copies, sets: what the summary report counts, not
 * the event records), by the kinds table rather than fixed ids */
#define ON_GPU "e.kind IN (SELECT id FROM kinds WHERE on_gpu AND name IN ('kernel', 'memcpy', 'memset'))"

static const tr_list lists[] = {
    {"threads", "OS threads (--thread TID): process, name, host events and the GPU work they launched",
     "SELECT t.tid, p.pid, coalesce(tn.value, ''), coalesce(c.n, 0), coalesce(g.n, 0), coalesce(pn.value, '') "
     "FROM threads t JOIN processes p ON p.id = t.process_id "
     "LEFT JOIN strings tn ON tn.id = t.name_id LEFT JOIN strings pn ON pn.id = p.name_id "
     "LEFT JOIN (SELECT thread_id, count(*) AS n FROM events WHERE thread_id IS NOT NULL "
     "GROUP BY thread_id) c ON c.thread_id = t.id "
     "LEFT JOIN (SELECT pe.thread_id, count(*) AS n FROM events e JOIN events pe ON pe.id = e.parent_id "
     "WHERE e.thread_id IS NULL AND " ON_GPU " GROUP BY pe.thread_id) g ON g.thread_id = t.id "
     "WHERE 1" RANKS " ORDER BY p.source_id, p.pid, t.tid",
     NULL,
     {{"thread", "tid", COL_INT}, {"pid", "pid", COL_INT}, {"name", "name", COL_NAME},
      {"events", "events", COL_INT}, {"gpu launches", "gpu_launches", COL_INT},
      {"process", "process", COL_NAME}},
     "no threads", " AND p.source_id IN (@)"},
    {"devices", "GPUs (--device N): name, compute capability, memory, activities and their time",
     "SELECT d.device, coalesce(n.value, ''), "
     "CASE WHEN d.compute_major IS NULL THEN '' ELSE d.compute_major || '.' || coalesce(d.compute_minor, 0) END, "
     "CASE WHEN d.memory_bytes > 0 THEN printf('%.1f GiB', d.memory_bytes / 1073741824.0) ELSE '' END, "
     "d.sm_count, coalesce(c.n, 0), coalesce(c.ns, 0) "
     "FROM devices d LEFT JOIN strings n ON n.id = d.name_id "
     "LEFT JOIN (SELECT s.device_id, count(*) AS n, sum(e.end_ns - e.start_ns) AS ns FROM events e "
     "JOIN streams s ON s.id = e.stream_id WHERE " ON_GPU " GROUP BY s.device_id) c ON c.device_id = d.id "
     "WHERE 1" RANKS " ORDER BY d.source_id, d.device",
     NULL,
     {{"device", "device", COL_INT}, {"name", "name", COL_NAME}, {"compute", "compute", COL_NAME},
      {"memory", "memory", COL_NAME}, {"SMs", "sm_count", COL_INT}, {"activities", "activities", COL_INT},
      {"gpu time (ms)", "gpu_time_ns", COL_NS}},
     "no devices", " AND d.source_id IN (@)"},
    {"streams", "GPU streams (--stream S): device, context, activities and their time",
     "SELECT s.stream, d.device, s.context, coalesce(c.n, 0), coalesce(c.ns, 0) "
     "FROM streams s JOIN devices d ON d.id = s.device_id "
     "LEFT JOIN (SELECT e.stream_id, count(*) AS n, sum(e.end_ns - e.start_ns) AS ns FROM events e "
     "WHERE " ON_GPU " GROUP BY e.stream_id) c ON c.stream_id = s.id "
     "WHERE 1" RANKS " ORDER BY d.source_id, d.device, s.stream",
     NULL,
     {{"stream", "stream", COL_INT}, {"device", "device", COL_INT}, {"context", "context", COL_INT},
      {"activities", "activities", COL_INT}, {"gpu time (ms)", "gpu_time_ns", COL_NS}},
     "no streams", " AND d.source_id IN (@)"},
    {"kinds", "event kinds present (--kind K): where they run, events and their time",
     "SELECT k.name, CASE WHEN k.on_gpu THEN 'gpu' ELSE 'cpu' END, c.n, c.ns "
     "FROM kinds k JOIN (SELECT kind, count(*) AS n, sum(end_ns - start_ns) AS ns FROM events "
     "WHERE 1" RANKS " GROUP BY kind) c ON c.kind = k.id ORDER BY k.id",
     NULL,
     {{"kind", "kind", COL_NAME}, {"on", "on", COL_NAME}, {"events", "events", COL_INT},
      {"time (ms)", "time_ns", COL_NS}},
     "no events", EVENT_RANK_COND},
    {"steps", "ProfilerStep#N ranges (--step N): start and end after the first event, as --time-range takes them",
     "SELECT CAST(substr(s.value, 14) AS INTEGER) AS step, count(*), "
     "min(e.start_ns) - (SELECT min(start_ns) FROM events), max(e.end_ns) - (SELECT min(start_ns) FROM events), "
     "max(e.end_ns) - min(e.start_ns) "
     "FROM events e JOIN strings s ON s.id = e.name_id "
     "WHERE e.kind IN (1, 2) AND s.value GLOB 'ProfilerStep#[0-9]*' AND substr(s.value, 14) NOT GLOB '*[^0-9]*' "
     RANKS "GROUP BY e.name_id ORDER BY step",
     NULL,
     {{"step", "step", COL_INT}, {"ranges", "ranges", COL_INT}, {"start (ns)", "start_ns", COL_INT},
      {"end (ns)", "end_ns", COL_INT}, {"wall (ms)", "wall_ns", COL_NS}},
     "no ProfilerStep#N ranges", EVENT_RANK_COND},
    {"ranks", "sources and their distributed ranks: host, format, events",
     /* a source without a stored rank has its position's (lib/ranks.h): ?1, the
     * sources of the run.dbs before it, + its order among its run.db's */
     "SELECT coalesce(s.rank, ?1 + (SELECT count(*) FROM sources x WHERE x.id < s.id)) AS r, coalesce(s.host, ''), "
     "s.format, s.event_count, s.path FROM sources s WHERE 1" RANKS " ORDER BY r, s.id",
     "SELECT ?1 + (SELECT count(*) FROM sources x WHERE x.id < s.id), '', s.format, s.event_count, s.path "
     "FROM sources s WHERE 1" RANKS " ORDER BY s.id",
     {{"rank", "rank", COL_INT}, {"host", "host", COL_NAME}, {"format", "format", COL_NAME},
      {"events", "events", COL_INT}, {"source", "source", COL_NAME}},
     "no sources", " AND s.id IN (@)"},
};
#define NLISTS (sizeof lists / sizeof lists[0])

const tr_list *tr_list_lookup(const char *name)
{
    for (size_t i = 0; i < NLISTS; i++)
        if (!strcmp(lists[i].name, name))
            return &lists[i];
    return NULL;
}

const char *tr_list_names(void)
{
    static char buf[128];
    if (!buf[0]) {
        size_t n = 0;
        for (size_t i = 0; i < NLISTS; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? " " : "", lists[i].name);
    }
    return buf;
}

void tr_list_print_choices(FILE *out)
{
    for (size_t i = 0; i < NLISTS; i++)
        fprintf(out, "%-8s  %s\n", lists[i].name, lists[i].description);
}

/* ---- collecting and printing ---- */

/* Names longer than this are cut in the text table: a command line as a
 * process name would push every other column off the screen. */
#define NAME_COLS 48

typedef struct {
    char *text;      /* NULL for SQL NULL */
    size_t len;
    int sqltype;     /* what the file holds: a hostile one may put text in any column */
} cell;

/* The rows of one list; over several run.dbs, each row led by its file. */
typedef struct {
    const tr_list *l;
    list_col cols[MAX_COLS + 1];   /* the list's, after the file's column when there is one */
    size_t ncols;
    int file_col;    /* column 0 names the run.db of the row */
    cell *cells;     /* rows * ncols */
    size_t rows, cap;
} grid;

static void grid_init(grid *g, const tr_list *l, int file_col)
{
    memset(g, 0, sizeof *g);
    g->l = l;
    g->file_col = file_col;
    if (file_col)
        g->cols[g->ncols++] = (list_col){"run.db", "run_db", COL_NAME};
    for (size_t c = 0; c < MAX_COLS && l->cols[c].head; c++)
        g->cols[g->ncols++] = l->cols[c];
}

static void grid_free(grid *g)
{
    for (size_t i = 0; i < g->rows * g->ncols; i++)
        free(g->cells[i].text);
    free(g->cells);
}

/* sql with its RANKS comment replaced by the list's --rank condition on ids
 * (the selected sources, "1,3"); NULL when out of memory. */
static char *with_ranks(const char *sql, const char *cond, const char *ids)
{
    const char *at = strstr(sql, RANKS);
    if (!at || !ids || !cond)
        return strdup(sql);
    size_t n = strlen(sql) + strlen(cond) * (strlen(ids) + 1) + 1, k = 0;
    char *out = malloc(n);
    if (!out)
        return NULL;
    memcpy(out, sql, (size_t)(at - sql));
    k = (size_t)(at - sql);
    for (const char *c = cond; *c; c++)
        if (*c == '@') {
            memcpy(out + k, ids, strlen(ids));
            k += strlen(ids);
        } else {
            out[k++] = *c;
        }
    strcpy(out + k, at + strlen(RANKS));
    return out;
}

/* A copy of text (n bytes) into c; -1 when out of memory. */
static int cell_set(cell *c, const char *text, size_t n, int sqltype)
{
    c->text = NULL;
    c->len = 0;
    c->sqltype = sqltype;
    if (!text || sqltype == SQLITE_NULL)
        return 0;
    if (!(c->text = malloc(n + 1)))
        return -1;
    memcpy(c->text, text, n);
    c->text[n] = '\0';
    c->len = n;
    return 0;
}

/* The list's rows from db appended to g; base is the run.db's rank base
 * (lib/ranks.h: the sources of the run.dbs before it), which the lists' SQL
 * may take as ?1. */
static tr_status grid_fill(sqlite3 *db, const char *path, grid *g, const char *ids, int64_t base,
                           tr_error *err)
{
    sqlite3_stmt *st = NULL;
    char *sql = with_ranks(g->l->sql, g->l->rank_cond, ids);
    char *fallback = g->l->fallback_sql ? with_ranks(g->l->fallback_sql, g->l->rank_cond, ids) : NULL;
    int ok = sql && (!g->l->fallback_sql || fallback);
    if (ok && sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK
        && (!fallback || sqlite3_prepare_v2(db, fallback, -1, &st, NULL) != SQLITE_OK))
        ok = -1;
    free(sql);
    free(fallback);
    if (!ok)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    if (ok < 0)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot list %s: %s", path, g->l->name, sqlite3_errmsg(db));
    if (sqlite3_bind_parameter_count(st) >= 1)
        sqlite3_bind_int64(st, 1, base);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (g->rows == g->cap) {
            size_t cap = g->cap ? 2 * g->cap : 16;
            cell *nc = realloc(g->cells, cap * g->ncols * sizeof *nc);
            if (!nc) {
                sqlite3_finalize(st);
                return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
            }
            g->cells = nc;
            g->cap = cap;
        }
        cell *row = &g->cells[g->rows * g->ncols];
        size_t c = 0;
        int failed = g->file_col && cell_set(&row[c++], path, strlen(path), SQLITE_TEXT) < 0;
        for (int k = 0; !failed && c < g->ncols; c++, k++) {
            int type = sqlite3_column_type(st, k);   /* before the text conversion */
            const char *text = (const char *)sqlite3_column_text(st, k);
            failed = cell_set(&row[c], text, (size_t)sqlite3_column_bytes(st, k), type) < 0;
        }
        if (failed) {
            for (size_t k = 0; k < c; k++)
                free(row[k].text);
            sqlite3_finalize(st);
            return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
        }
        g->rows++;
    }
    if (rc != SQLITE_DONE) {
        tr_fail(err, TR_ERR_INPUT, "%s: cannot list %s: %s", path, g->l->name, sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return TR_ERR_INPUT;
    }
    sqlite3_finalize(st);
    return TR_OK;
}

/* The text of a cell in the text table (durations in ms). */
static const char *text_of(const cell *c, char type, char *buf, size_t n, size_t *len)
{
    if (!c->text) {
        *len = 1;
        return "-";
    }
    if (type == COL_NS) {
        *len = (size_t)snprintf(buf, n, "%.3f", (double)strtoll(c->text, NULL, 10) / 1e6);
        return buf;
    }
    *len = c->len;
    return c->text;
}

static size_t cell_cols(const cell *c, char type, size_t *bytes)
{
    char buf[48];
    size_t len;
    const char *t = text_of(c, type, buf, sizeof buf, &len);
    size_t w = tr_text_width(t, len);
    *bytes = len;
    if (type == COL_NAME && w > NAME_COLS) {
        *bytes = tr_utf8_cut(t, len, NAME_COLS - 1);
        w = tr_text_width(t, *bytes) + 1;
    }
    return w;
}

static void put_text(FILE *out, const grid *g)
{
    size_t width[MAX_COLS];
    const list_col *cols = g->cols;
    for (size_t c = 0; c < g->ncols; c++) {
        width[c] = strlen(cols[c].head);
        for (size_t r = 0; r < g->rows; r++) {
            size_t bytes, w = cell_cols(&g->cells[r * g->ncols + c], cols[c].type, &bytes);
            if (w > width[c])
                width[c] = w;
        }
    }
    for (size_t c = 0; c < g->ncols; c++) {
        int last = c + 1 == g->ncols;
        if (cols[c].type == COL_NAME)
            fprintf(out, "%s%-*s", c ? "  " : "", last ? 0 : (int)width[c], cols[c].head);
        else
            fprintf(out, "%s%*s", c ? "  " : "", (int)width[c], cols[c].head);
    }
    fputc('\n', out);
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t c = 0; c < g->ncols; c++) {
            const cell *x = &g->cells[r * g->ncols + c];
            char buf[48];
            size_t len, bytes, w = cell_cols(x, cols[c].type, &bytes);
            const char *t = text_of(x, cols[c].type, buf, sizeof buf, &len);
            size_t pad = width[c] - w;
            int last = c + 1 == g->ncols;
            if (c)
                fputs("  ", out);
            if (cols[c].type != COL_NAME)
                fprintf(out, "%*s", (int)pad, "");
            tr_put_text_cell(out, t, bytes);
            if (bytes < len)
                fputs(TR_ELLIPSIS, out);
            if (cols[c].type == COL_NAME && !last)
                fprintf(out, "%*s", (int)pad, "");
        }
        fputc('\n', out);
    }
}

static void put_csv(FILE *out, const grid *g)
{
    for (size_t c = 0; c < g->ncols; c++)
        fprintf(out, "%s%s", c ? "," : "", g->cols[c].key);
    fputc('\n', out);
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t c = 0; c < g->ncols; c++) {
            const cell *x = &g->cells[r * g->ncols + c];
            if (c)
                fputc(',', out);
            if (x->text)
                tr_put_csv_field(out, x->text, x->len);
        }
        fputc('\n', out);
    }
}

static void put_json(FILE *out, const grid *g)
{
    fputs("[", out);
    for (size_t r = 0; r < g->rows; r++) {
        fputs(r ? ",\n {" : "\n {", out);
        for (size_t c = 0; c < g->ncols; c++) {
            const cell *x = &g->cells[r * g->ncols + c];
            fprintf(out, "%s\"%s\": ", c ? ", " : "", g->cols[c].key);
            if (!x->text)
                fputs("null", out);
            else if (g->cols[c].type != COL_NAME && x->sqltype == SQLITE_INTEGER)
                fputs(x->text, out);   /* SQLite's decimal digits */
            else if (g->cols[c].type != COL_NAME && x->sqltype == SQLITE_FLOAT) {
                double d = strtod(x->text, NULL);
                if (isfinite(d))
                    fprintf(out, "%.17g", d);
                else
                    fputs("null", out);
            } else
                tr_put_json_str(out, x->text, x->len);
        }
        fputs("}", out);
    }
    fputs(g->rows ? "\n]\n" : "]\n", out);
}

static void put_markdown(FILE *out, const grid *g)
{
    for (size_t c = 0; c < g->ncols; c++)
        fprintf(out, "| %s ", g->cols[c].head);
    fputs("|\n", out);
    for (size_t c = 0; c < g->ncols; c++)
        fputs(g->cols[c].type == COL_NAME ? "|---" : "|---:", out);
    fputs("|\n", out);
    for (size_t r = 0; r < g->rows; r++) {
        for (size_t c = 0; c < g->ncols; c++) {
            const cell *x = &g->cells[r * g->ncols + c];
            char buf[48];
            size_t len;
            const char *t = text_of(x, g->cols[c].type, buf, sizeof buf, &len);
            fputs("| ", out);
            tr_put_md_cell(out, t, len);
            fputc(' ', out);
        }
        fputs("|\n", out);
    }
}

static const struct {
    const char *name;
    void (*put)(FILE *out, const grid *g);
} writers[] = {
    {"text", put_text}, {"csv", put_csv}, {"json", put_json}, {"markdown", put_markdown},
};

/* "1,3": the ids of the sources of the ranks --rank selects; NULL without --rank. */
static tr_status selected_sources(const tr_selection *sel, char **out, tr_error *err)
{
    *out = NULL;
    if (!sel || !sel->rank_map)
        return TR_OK;
    const tr_rank_map *m = sel->rank_map;
    char *s = malloc(m->nsrc * 24 + 8);
    if (!s)
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    size_t k = 0;
    for (size_t i = 0; i < m->nsrc; i++)
        if (tr_rank_set_has(m->want, m->src[i].rank))
            k += (size_t)sprintf(s + k, "%s%" PRId64, k ? "," : "", m->src[i].id);
    if (!k)
        strcpy(s, "NULL");   /* matches nothing */
    *out = s;
    return TR_OK;
}

static void (*writer_of(const char *format))(FILE *, const grid *)
{
    for (size_t i = 0; format && i < sizeof writers / sizeof writers[0]; i++)
        if (!strcmp(writers[i].name, format))
            return writers[i].put;
    return put_text;
}

/* The rows of one open run.db, of the ranks sel has bound to it. */
static tr_status grid_add_db(grid *g, sqlite3 *db, const char *path, const tr_selection *sel, int64_t base,
                             tr_error *err)
{
    char *ids = NULL;
    tr_status st = selected_sources(sel, &ids, err);
    if (st == TR_OK)
        st = grid_fill(db, path, g, ids, base, err);
    free(ids);
    return st;
}

/* what: the file(s) an empty list is about */
static void grid_put(const grid *g, const char *format, const char *what, FILE *out)
{
    void (*put)(FILE *, const grid *) = writer_of(format);
    if (g->rows == 0 && put == put_text)
        fprintf(stderr, "trace-analyze: %s: %s\n", what, g->l->none);   /* a header alone says nothing */
    else
        put(out, g);
}

tr_status tr_list_print(sqlite3 *db, const char *path, const tr_list *l, const struct tr_selection *sel,
                        const char *format, FILE *out, tr_error *err)
{
    grid g;
    grid_init(&g, l, 0);
    tr_status st = grid_add_db(&g, db, path, sel, 0, err);
    if (st == TR_OK)
        grid_put(&g, format, path, out);
    grid_free(&g);
    return st;
}

tr_status tr_list_print_many(const char *const *paths, const char *const *names, const int64_t *bases, size_t n,
                             const tr_list *l, struct tr_selection *sel, const char *format, FILE *out,
                             tr_error *err)
{
    grid g;
    grid_init(&g, l, 1);
    tr_status st = TR_OK;
    for (size_t i = 0; i < n && st == TR_OK; i++) {
        sqlite3 *db = NULL;
        sel->rank_base = bases[i];
        st = tr_rundb_open(paths[i], &db, err);
        if (st == TR_OK)
            st = tr_selection_bind(sel, db, err);
        if (st == TR_OK)
            st = grid_add_db(&g, db, names[i], sel, bases[i], err);
        tr_selection_unbind(sel);
        sqlite3_close(db);
    }
    if (st == TR_OK)
        grid_put(&g, format, "the run databases", out);
    grid_free(&g);
    return st;
}

/* ---- does the filter name something that exists? ---- */

static const struct {
    const char *what, *plural;
    const char *exists_sql;   /* ?1 = the value */
    const char *list_sql;     /* value, label or NULL; in order, a few more than shown */
} filters[] = {
    {"thread", "threads", "SELECT 1 FROM threads WHERE tid = ?1 LIMIT 1",
     "SELECT t.tid, n.value FROM threads t LEFT JOIN strings n ON n.id = t.name_id "
     "GROUP BY t.tid ORDER BY t.tid LIMIT 9"},
    {"device", "devices", "SELECT 1 FROM devices WHERE device = ?1 LIMIT 1",
     "SELECT d.device, n.value FROM devices d LEFT JOIN strings n ON n.id = d.name_id "
     "GROUP BY d.device ORDER BY d.device LIMIT 9"},
    {"stream", "streams", "SELECT 1 FROM streams WHERE stream = ?1 LIMIT 1",
     "SELECT stream, NULL FROM streams GROUP BY stream ORDER BY stream LIMIT 9"},
};

/* Labels are names from the file: kept short, and tr_put_line makes the
 * message one line whatever they hold. */
#define LABEL_BYTES 32
#define SHOWN 8

tr_status tr_list_check_filter(sqlite3 *db, const char *path, const char *what, int64_t value, tr_error *err)
{
    size_t f = 0;
    while (f < sizeof filters / sizeof filters[0] && strcmp(filters[f].what, what) != 0)
        f++;
    if (f == sizeof filters / sizeof filters[0])
        return TR_OK;
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, filters[f].exists_sql, -1, &st, NULL) != SQLITE_OK)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read the %s: %s", path, filters[f].plural,
                       sqlite3_errmsg(db));
    sqlite3_bind_int64(st, 1, value);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc == SQLITE_ROW)
        return TR_OK;
    if (rc != SQLITE_DONE)
        return tr_fail(err, TR_ERR_INPUT, "%s: cannot read the %s: %s", path, filters[f].plural,
                       sqlite3_errmsg(db));
    char have[512];
    size_t n = 0, shown = 0;
    have[0] = '\0';
    if (sqlite3_prepare_v2(db, filters[f].list_sql, -1, &st, NULL) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW && n < sizeof have) {
            if (shown == SHOWN) {
                n += (size_t)snprintf(have + n, sizeof have - n, ", ...");
                break;
            }
            const char *label = (const char *)sqlite3_column_text(st, 1);
            int len = label ? (int)tr_utf8_cut(label, (size_t)sqlite3_column_bytes(st, 1), LABEL_BYTES) : 0;
            n += (size_t)snprintf(have + n, sizeof have - n, "%s%" PRId64 "%s%.*s%s", shown ? ", " : "",
                                  (int64_t)sqlite3_column_int64(st, 0), label ? " '" : "", len,
                                  label ? label : "", label ? "'" : "");
            shown++;
        }
        sqlite3_finalize(st);
    }
    if (!shown)
        return tr_fail(err, TR_ERR_INPUT, "%s: no %s %" PRId64 " (the run database has no %s)", path, what,
                       value, filters[f].plural);
    return tr_fail(err, TR_ERR_INPUT, "%s: no %s %" PRId64 " (%s: %s; trace-analyze --list %s shows them all)", path, what,
                   value, filters[f].plural, have, filters[f].plural);
}

tr_status tr_list_check_selection(sqlite3 *db, const char *path, const tr_selection *sel, tr_error *err)
{
    tr_status st = TR_OK;
    if (sel->has_thread)
        st = tr_list_check_filter(db, path, "thread", sel->thread, err);
    if (st == TR_OK && sel->has_device)
        st = tr_list_check_filter(db, path, "device", sel->device, err);
    if (st == TR_OK && sel->has_stream)
        st = tr_list_check_filter(db, path, "stream", sel->stream, err);
    return st;
}

tr_status tr_list_check_selection_any(const char *const *paths, const char *const *names, int n,
                                      const struct tr_selection *sel, tr_error *err)
{
    /* each filter must match in one of the files at least; when none has it,
     * the message is the first file's, naming what that one has */
    static const char *const what[] = {"thread", "device", "stream"};
    const int has[] = {sel->has_thread, sel->has_device, sel->has_stream};
    const int64_t value[] = {sel->thread, sel->device, sel->stream};
    for (size_t f = 0; f < sizeof what / sizeof what[0]; f++) {
        if (!has[f])
            continue;
        tr_error first;
        tr_error_clear(&first);
        int found = 0;
        for (int i = 0; i < n && !found; i++) {
            sqlite3 *db = NULL;
            tr_status st = tr_rundb_open(paths[i], &db, err);
            if (st != TR_OK)
                return st;
            tr_error e;
            tr_error_clear(&e);
            found = tr_list_check_filter(db, names[i], what[f], value[f], &e) == TR_OK;
            sqlite3_close(db);
            if (!found && i == 0)
                first = e;
        }
        if (!found) {
            *err = first;
            return first.status;
        }
    }
    return TR_OK;
}
