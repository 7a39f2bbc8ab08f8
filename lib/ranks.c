#include "lib/ranks.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/rundb.h"

static tr_status nomem(tr_error *err) { return tr_fail(err, TR_ERR_RUNTIME, "out of memory"); }

/* ---- --rank R[,R...] ---- */

/* One rank of n bytes at s; NULL, or why it is not one. */
static const char *parse_rank(const char *s, size_t n, int64_t *out)
{
    char buf[32];
    if (n == 0)
        return "an empty rank";
    if (n >= sizeof buf)
        return "a rank beyond 64 bits";
    memcpy(buf, s, n);
    buf[n] = '\0';
    if (buf[0] < '0' || buf[0] > '9')
        return "ranks are whole numbers >= 0";
    char *end;
    errno = 0;
    long long v = strtoll(buf, &end, 10);
    if (errno == ERANGE)
        return "a rank beyond 64 bits";
    if (*end)
        return "ranks are whole numbers >= 0";
    *out = v;
    return NULL;
}

tr_status tr_rank_parse(const char *text, int64_t *rank, tr_error *err)
{
    const char *why = parse_rank(text, strlen(text), rank);
    return why ? tr_fail(err, TR_ERR_USAGE, "invalid --rank '%s': %s", text, why) : TR_OK;
}

tr_status tr_rank_set_parse(tr_rank_set *s, const char *text, tr_error *err)
{
    const char *p = text;
    if (!*p)
        return tr_fail(err, TR_ERR_USAGE, "invalid --rank '': no rank (e.g. 0 or 0,2 or 0-3)");
    while (*p) {
        size_t n = strcspn(p, ",");
        const char *dash = memchr(p, '-', n);
        int64_t lo = 0, hi = 0;
        const char *why = dash == p ? "ranks are whole numbers >= 0"
                          : dash    ? parse_rank(p, (size_t)(dash - p), &lo)
                                    : parse_rank(p, n, &lo);
        if (!why && dash)
            why = parse_rank(dash + 1, n - (size_t)(dash - p) - 1, &hi);
        if (!dash)
            hi = lo;
        if (!why && hi < lo)
            why = "a range runs backwards (write it low-high)";
        if (!why && p[n] == ',' && !p[n + 1])
            why = "an empty rank after the last comma";
        if (why)
            return tr_fail(err, TR_ERR_USAGE, "invalid --rank '%s': %s (e.g. 0 or 0,2 or 0-3)", text, why);
        struct tr_rank_range *v = realloc(s->v, (s->n + 1) * sizeof *v);
        if (!v)
            return nomem(err);
        s->v = v;
        s->v[s->n++] = (struct tr_rank_range){lo, hi};
        p += n;
        p += *p == ',';
    }
    return TR_OK;
}

int tr_rank_set_has(const tr_rank_set *s, int64_t rank)
{
    if (!s || !s->n)
        return 1;
    for (size_t i = 0; i < s->n; i++)
        if (rank >= s->v[i].lo && rank <= s->v[i].hi)
            return 1;
    return 0;
}

void tr_rank_set_free(tr_rank_set *s)
{
    free(s->v);
    s->v = NULL;
    s->n = 0;
}

/* ---- the sources' ranks ---- */

static tr_status db_error(sqlite3 *db, const char *what, tr_error *err)
{
    return tr_fail(err, TR_ERR_INPUT, "%s: cannot read %s: %s", tr_rundb_name(db), what, sqlite3_errmsg(db));
}

tr_status tr_source_ranks_load(sqlite3 *db, int64_t base, tr_source_rank **out, size_t *n, tr_error *err)
{
    *out = NULL;
    *n = 0;
    sqlite3_stmt *st = NULL;
    /* sources.rank came after the first v1 files: those have positions only */
    if (sqlite3_prepare_v2(db, "SELECT id, rank FROM sources ORDER BY id", -1, &st, NULL) != SQLITE_OK
        && sqlite3_prepare_v2(db, "SELECT id, NULL FROM sources ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return db_error(db, "table sources", err);
    tr_source_rank *v = NULL;
    size_t cap = 0, k = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (k == cap) {
            cap = cap ? 2 * cap : 8;
            tr_source_rank *nv = realloc(v, cap * sizeof *nv);
            if (!nv) {
                free(v);
                sqlite3_finalize(st);
                return nomem(err);
            }
            v = nv;
        }
        int type = sqlite3_column_type(st, 1), stored = type != SQLITE_NULL;
        if (stored && (type != SQLITE_INTEGER || sqlite3_column_int64(st, 1) < 0)) {
            /* a hand-edited or foreign file: 'abc', 2.7 or -5 would read as some other rank */
            const unsigned char *text = sqlite3_column_text(st, 1);
            tr_status bad = tr_fail(err, TR_ERR_INPUT, "%s: table sources: source %lld has rank '%.40s', "
                                    "not a whole number >= 0", tr_rundb_name(db),
                                    (long long)sqlite3_column_int64(st, 0), text ? (const char *)text : "");
            free(v);
            sqlite3_finalize(st);
            return bad;
        }
        v[k] = (tr_source_rank){sqlite3_column_int64(st, 0),
                                stored ? sqlite3_column_int64(st, 1) : base + (int64_t)k, 0, stored};
        k++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) {
        free(v);
        return db_error(db, "table sources", err);
    }
    /* world sizes are meta rows world_size.<source id>, so older run.dbs read as they are */
    if (sqlite3_prepare_v2(db, "SELECT key, value FROM meta WHERE key GLOB 'world_size.[0-9]*'", -1, &st, NULL)
        == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const char *key = (const char *)sqlite3_column_text(st, 0);
            int64_t id = key ? strtoll(key + 11, NULL, 10) : -1, w = sqlite3_column_int64(st, 1);
            for (size_t i = 0; i < k; i++)
                if (v[i].id == id && w > 0)
                    v[i].world_size = w;
        }
        sqlite3_finalize(st);
    }
    *out = v;
    *n = k;
    return TR_OK;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The sources' distinct ranks, sorted; *n of them. */
static int64_t *distinct_ranks(const tr_source_rank *v, size_t nv, size_t *n)
{
    int64_t *r = malloc((nv ? nv : 1) * sizeof *r);
    *n = 0;
    if (!r)
        return NULL;
    for (size_t i = 0; i < nv; i++)
        r[i] = v[i].rank;
    qsort(r, nv, sizeof *r, cmp_i64);
    for (size_t i = 0; i < nv; i++)
        if (!*n || r[*n - 1] != r[i])
            r[(*n)++] = r[i];
    return r;
}

static tr_status load_rows(tr_rank_map *m, sqlite3 *db, const char *sql, tr_i64map *to, tr_error *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_error(db, "the threads and streams", err);
    int rc;
    tr_status s = TR_OK;
    while (s == TR_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
        if (tr_i64map_put(to, sqlite3_column_int64(st, 0),
                          tr_rank_map_source(m, sqlite3_column_int64(st, 1))) < 0)
            s = nomem(err);
    if (s == TR_OK && rc != SQLITE_DONE)
        s = db_error(db, "the threads and streams", err);
    sqlite3_finalize(st);
    return s;
}

tr_status tr_rank_map_load(tr_rank_map *m, sqlite3 *db, int64_t base, const tr_rank_set *want, tr_error *err)
{
    memset(m, 0, sizeof *m);
    tr_i64map_init(&m->thread_rank);
    tr_i64map_init(&m->stream_rank);
    m->want = want;
    tr_status st = tr_source_ranks_load(db, base, &m->src, &m->nsrc, err);
    if (st != TR_OK)
        return st;
    m->fallback = m->nsrc ? m->src[0].rank : base;
    int64_t *d = distinct_ranks(m->src, m->nsrc, &m->nranks);
    if (!d)
        return nomem(err);
    free(d);
    if ((st = load_rows(m, db, "SELECT t.id, p.source_id FROM threads t JOIN processes p ON p.id = t.process_id",
                        &m->thread_rank, err)) != TR_OK)
        return st;
    return load_rows(m, db, "SELECT s.id, d.source_id FROM streams s JOIN devices d ON d.id = s.device_id",
                     &m->stream_rank, err);
}

void tr_rank_map_free(tr_rank_map *m)
{
    free(m->src);
    tr_i64map_free(&m->thread_rank);
    tr_i64map_free(&m->stream_rank);
    memset(m, 0, sizeof *m);
}

int64_t tr_rank_map_source(const tr_rank_map *m, int64_t source_id)
{
    /* sources are few and sorted by id */
    size_t lo = 0, hi = m->nsrc;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->src[mid].id < source_id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->nsrc && m->src[lo].id == source_id ? m->src[lo].rank : m->fallback;
}

int64_t tr_rank_map_event(const tr_rank_map *m, int64_t thread_row, int64_t stream_row)
{
    int64_t r;
    if (thread_row >= 0 && tr_i64map_get(&m->thread_rank, thread_row, &r))
        return r;
    if (stream_row >= 0 && tr_i64map_get(&m->stream_rank, stream_row, &r))
        return r;
    return m->fallback;
}

int tr_rank_map_ok(const tr_rank_map *m, int64_t thread_row, int64_t stream_row)
{
    if (!m || !m->want || !m->want->n)
        return 1;
    return tr_rank_set_has(m->want, tr_rank_map_event(m, thread_row, stream_row));
}

int tr_rank_map_any(const tr_rank_map *m)
{
    for (size_t i = 0; i < m->nsrc; i++)
        if (tr_rank_set_has(m->want, m->src[i].rank))
            return 1;
    return 0;
}

/* "0-3, 5" into buf; "" for none. */
static void describe(const int64_t *r, size_t n, char *buf, size_t size)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k < size; i++) {
        size_t j = i;
        while (j + 1 < n && r[j + 1] == r[j] + 1)
            j++;
        if (j > i)
            k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64 "-%" PRId64, k ? ", " : "", r[i], r[j]);
        else
            k += (size_t)snprintf(buf + k, size - k, "%s%" PRId64, k ? ", " : "", r[i]);
        i = j;
    }
}

void tr_rank_map_describe(const tr_rank_map *m, char *buf, size_t size)
{
    size_t n;
    int64_t *d = distinct_ranks(m->src, m->nsrc, &n);
    if (!d) {
        snprintf(buf, size, "?");
        return;
    }
    describe(d, n, buf, size);
    free(d);
}

/* ---- warnings ---- */

typedef struct { int64_t rank; size_t at; } rank_at;

static int cmp_rank_at(const void *a, const void *b)
{
    const rank_at *x = a, *y = b;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->at < y->at ? -1 : x->at > y->at;
}

/* The ranks of 0..world-1 that the sorted, distinct d[] lacks, as ranges
 * ("2-4097, 5000"), from the gaps between held ranks: linear in nd however
 * large world is; "..." when they do not fit.  Returns whether any is missing. */
static int describe_gaps(const int64_t *d, size_t nd, int64_t world, char *buf, size_t size)
{
    size_t k = 0;
    int any = 0;
    buf[0] = '\0';
    int64_t next = 0;   /* the lowest rank not yet accounted for */
    for (size_t i = 0; i <= nd && next < world; i++) {
        int64_t upto = i < nd ? (d[i] < world ? d[i] : world) : world;   /* the gap is [next, upto) */
        if (upto > next) {
            any = 1;
            if (k < size) {
                int w = upto - 1 > next
                            ? snprintf(buf + k, size - k, "%s%" PRId64 "-%" PRId64, k ? ", " : "", next, upto - 1)
                            : snprintf(buf + k, size - k, "%s%" PRId64, k ? ", " : "", next);
                k += (size_t)w;
            }
        }
        if (i < nd && d[i] >= next)
            next = d[i] + 1;
    }
    if (k >= size && size > 4)
        memcpy(buf + size - 4, "...", 4);
    return any;
}

static const char *base_name(const char *label)
{
    const char *slash = strrchr(label, '/');
    return slash ? slash + 1 : label;
}

/* The numbers two file names hold where they first differ ("rank10.db" and
 * "rank2.db": 10 and 2); 0 when they do not differ there by a number
 * ("h100_bert.db" and "h100_qwen-0.5B.db" differ by a name). */
static int numbers_where_differ(const char *a, const char *b, long long *na, long long *nb)
{
    a = base_name(a), b = base_name(b);
    size_t i = 0;
    while (a[i] && a[i] == b[i])
        i++;
    while (i > 0 && isdigit((unsigned char)a[i - 1]))
        i--;   /* the same digits before the difference belong to both numbers */
    if (!isdigit((unsigned char)a[i]) || !isdigit((unsigned char)b[i]))
        return 0;
    *na = strtoll(a + i, NULL, 10);
    *nb = strtoll(b + i, NULL, 10);
    return 1;
}

/* Ranks from the argument order follow the shell's sort, which puts
 * rank10.db before rank2.db: say so when the names' numbers disagree. */
static void check_position_order(const tr_source_rank *v, const char *const *label, size_t n,
                                 tr_rank_warn_fn warn, void *ctx)
{
    const char *prev_label = NULL;
    for (size_t i = 0; i < n; i++) {
        if (v[i].stored || (prev_label && !strcmp(label[i], prev_label)))
            continue;
        long long prev, num;
        if (prev_label && numbers_where_differ(prev_label, label[i], &prev, &num) && num < prev) {
            char msg[1024];
            snprintf(msg, sizeof msg, "ranks follow the order of the inputs, and %s comes after %s although "
                     "its number is lower (the shell sorts names as text): zero-pad the names, or set "
                     "ranks with trace-ingest --rank", label[i], prev_label);
            warn(ctx, msg);
            return;
        }
        prev_label = label[i];
    }
}

#define SHOWN_DUPLICATES 4

void tr_ranks_check(const tr_source_rank *v, const char *const *label, size_t n, tr_rank_warn_fn warn, void *ctx)
{
    if (!warn || n < 2)
        return;
    check_position_order(v, label, n, warn, ctx);
    rank_at *r = malloc(n * sizeof *r);
    if (!r)
        return;
    for (size_t i = 0; i < n; i++)
        r[i] = (rank_at){v[i].rank, i};
    qsort(r, n, sizeof *r, cmp_rank_at);
    char msg[1024];
    size_t dups = 0, distinct = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && r[j + 1].rank == r[i].rank)
            j++;
        distinct++;
        /* sources of one input with one rank are one rank's processes: only
         * different inputs claiming a rank are a mistake */
        int other = 0, derived = !v[r[i].at].stored;
        for (size_t k = i + 1; k <= j; k++) {
            other |= strcmp(label[r[k].at], label[r[i].at]) != 0;
            derived |= !v[r[k].at].stored;
        }
        if (other && ++dups <= SHOWN_DUPLICATES) {
            size_t k2 = (size_t)snprintf(msg, sizeof msg, "rank %" PRId64 " is claimed by %s", r[i].rank,
                                         label[r[i].at]);
            for (size_t k = i + 1; k <= j && k2 < sizeof msg; k++)
                if (strcmp(label[r[k].at], label[r[k - 1].at]) != 0)
                    k2 += (size_t)snprintf(msg + k2, sizeof msg - k2, " and %s", label[r[k].at]);
            if (k2 < sizeof msg)
                snprintf(msg + k2, sizeof msg - k2, "%s",
                         !derived ? "" : " (a rank from the order of the inputs: "
                                                                                 "trace-ingest --rank sets it)");
            warn(ctx, msg);
        }
        i = j + 1;
    }
    if (dups > SHOWN_DUPLICATES) {
        snprintf(msg, sizeof msg, "%zu more ranks are claimed twice", dups - SHOWN_DUPLICATES);
        warn(ctx, msg);
    }
    /* the world size: checked once the inputs are more than one rank, so a
     * run.db of one rank of a big job (the scale-out recipe) says nothing */
    int64_t world = 0;
    int differ = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].world_size > 0) {
            differ |= world && world != v[i].world_size;
            world = v[i].world_size > world ? v[i].world_size : world;
        }
    if (world > 0 && distinct > 1) {
        int64_t *d = malloc(distinct * sizeof *d);
        size_t nd = 0, inside = 0;
        for (size_t i = 0; d && i < n; i++)
            if (!nd || d[nd - 1] != r[i].rank)
                d[nd++] = r[i].rank;
        for (size_t i = 0; i < nd; i++)
            inside += d[i] >= 0 && d[i] < world;
        if (d && (differ || (int64_t)nd != world || inside != nd)) {
            char have[256], missing[256] = "";
            describe(d, nd, have, sizeof have);
            int nm = describe_gaps(d, nd, world, missing, sizeof missing);
            snprintf(msg, sizeof msg, "the traces give world size %" PRId64 "%s but the inputs hold %zu "
                     "rank(s): %s%s%s", world, differ ? " (and smaller ones)" : "", nd, have,
                     nm ? "; missing " : "", missing);
            warn(ctx, msg);
        }
        free(d);
    }
    free(r);
}

/* The same file twice (by device and inode, whatever the names) counts its
 * events twice: a mistake more often than not, so it is said, once a repeat.
 * Each file is looked at once. */
static void warn_repeated_files(const char *const *paths, const char *const *names, size_t n,
                                tr_rank_warn_fn warn, void *ctx)
{
    struct stat *st = warn ? malloc(n * sizeof *st) : NULL;
    unsigned char *ok = st ? malloc(n) : NULL;
    for (size_t i = 0; ok && i < n; i++) {
        ok[i] = stat(paths[i], &st[i]) == 0;
        for (size_t k = 0; ok[i] && k < i; k++)
            if (ok[k] && st[i].st_dev == st[k].st_dev && st[i].st_ino == st[k].st_ino) {
                char msg[2200];
                snprintf(msg, sizeof msg, "%s is %s again: its events count twice", names[i], names[k]);
                warn(ctx, msg);
                break;
            }
    }
    free(ok);
    free(st);
}

tr_status tr_ranks_prepare(const char *const *paths, const char *const *names, size_t n, int separate,
                           const tr_rank_set *want, int64_t *bases, tr_rank_warn_fn warn, void *ctx,
                           tr_error *err)
{
    tr_source_rank *all = NULL;
    const char **label = NULL;
    size_t nall = 0, cap = 0;
    int64_t base = 0;
    int found = !want || !want->n;
    tr_status st = TR_OK;
    char have[256] = "";
    if (!separate)
        warn_repeated_files(paths, names, n, warn, ctx);
    for (size_t i = 0; i < n && st == TR_OK; i++) {
        sqlite3 *db = NULL;
        tr_source_rank *v = NULL;
        size_t nv = 0;
        bases[i] = separate ? 0 : base;
        if ((st = tr_rundb_open(paths[i], &db, err)) == TR_OK)
            st = tr_source_ranks_load(db, bases[i], &v, &nv, err);
        if (db)
            sqlite3_close(db);
        if (st != TR_OK)
            break;
        base += (int64_t)nv;
        int here = 0;
        for (size_t k = 0; k < nv; k++)
            here |= tr_rank_set_has(want, v[k].rank);
        found |= here;
        if (separate && want && want->n && !here && warn) {
            /* a --diff whose one side the selection empties compares nothing: say why */
            char msg[1024];
            snprintf(msg, sizeof msg, "%s holds none of the selected ranks: its side of the comparison is empty",
                     names[i]);
            warn(ctx, msg);
        }
        if (nall + nv > cap) {
            cap = 2 * (nall + nv);
            tr_source_rank *na = realloc(all, cap * sizeof *na);
            const char **nl = na ? realloc(label, cap * sizeof *nl) : NULL;
            if (na)
                all = na;
            if (nl)
                label = nl;
            if (!na || !nl)
                st = nomem(err);
        }
        for (size_t k = 0; st == TR_OK && k < nv; k++) {
            all[nall] = v[k];
            label[nall++] = names[i];
        }
        free(v);
    }
    if (st == TR_OK && !separate)
        tr_ranks_check(all, label, nall, warn, ctx);
    if (st == TR_OK && !found) {
        size_t nd;
        int64_t *d = distinct_ranks(all, nall, &nd);
        if (d)
            describe(d, nd, have, sizeof have);
        free(d);
        const char *who = n == 1 ? names[0] : "the inputs";
        const char *pre = nall ? "ranks: " : "no sources";
        /* --list reads one run.db: over several, the ranks named here are the list */
        const char *hint = n == 1 ? "; trace-analyze --list ranks shows them" : "";
        if (want->n == 1 && want->v[0].lo == want->v[0].hi)
            st = tr_fail(err, TR_ERR_INPUT, "%s: no rank %" PRId64 " (%s%s%s)", who, want->v[0].lo, pre, have,
                         hint);
        else
            st = tr_fail(err, TR_ERR_INPUT, "%s: none of the selected ranks (%s%s%s)", who, pre, have, hint);
    }
    free(all);
    free(label);
    return st;
}
