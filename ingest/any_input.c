#include "ingest/any_input.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/escape.h"
#include "lib/output.h"
#include "lib/progress.h"
#include "lib/rundb.h"
#include "lib/version.h"

#define CACHE_SUBDIR "tracekit"

static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

int tr_input_cache_dir(char *buf, size_t size)
{
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    int n;
    /* the XDG rule: a relative $XDG_CACHE_HOME is ignored */
    if (xdg && xdg[0] == '/')
        n = snprintf(buf, size, "%s/" CACHE_SUBDIR, xdg);
    else if (home && home[0] == '/')
        n = snprintf(buf, size, "%s/.cache/" CACHE_SUBDIR, home);
    else
        return 0;
    return n > 0 && (size_t)n < size;
}

/* mkdir -p, private: the entries hold whatever the traces hold. */
static int make_dirs(char *path)
{
    struct stat sb;
    if (stat(path, &sb) == 0)
        return S_ISDIR(sb.st_mode) ? 0 : -1;
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        int r = mkdir(path, 0700);
        *p = '/';
        if (r != 0 && errno != EEXIST)
            return -1;
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* A run database is an SQLite file that no trace reader claims (an Nsight
 * Systems export is SQLite too). */
static int is_sqlite(const char *path)
{
    char hdr[16];
    int fd = open(path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return 0;
    ssize_t got = read(fd, hdr, sizeof hdr);
    close(fd);
    return got == (ssize_t)sizeof hdr && memcmp(hdr, "SQLite format 3", 16) == 0;
}

static int opens_as_rundb(const char *path)
{
    sqlite3 *db = NULL;
    tr_error e;
    tr_error_clear(&e);
    tr_status st = tr_rundb_open(path, &db, &e);
    if (db)
        sqlite3_close(db);
    return st == TR_OK;
}

static tr_status take_path(tr_input_db *out, const char *path, tr_error *err)
{
    if (!(out->path = strdup(path)))
        return tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    return TR_OK;
}

/* tr_ingest_files, with the progress line on a terminal (the caller's own
 * warnings printed through it, so that the two never mix). */
static tr_status ingest(const char *path, const char *out, const tr_ingest_opts *o, tr_error *err)
{
    tr_ingest_opts io;
    memset(&io, 0, sizeof io);
    if (o)
        io = *o;
    tr_progress *pg = NULL;
    if (!io.progress && tr_progress_wanted())
        io.progress = pg = tr_progress_start(program_invocation_short_name, &tr_events_added, "events");
    tr_input_warnings *w = io.warn == tr_input_warn_stderr ? io.warn_ctx : NULL;
    if (w)
        w->progress = io.progress;
    const char *const in[] = {path};
    tr_status st = tr_ingest_files(in, 1, out, &io, NULL, err);
    if (w)
        w->progress = NULL;
    tr_progress_stop(pg);
    return st;
}

static tr_status ingest_to_temp(const char *path, const tr_ingest_opts *o, tr_input_db *out,
                                tr_error *err)
{
    char tmp[4096];
    int fd = tr_output_mktemp(tmp, sizeof tmp, "tracekit-input.db", &out->slot, err);
    if (fd < 0)
        return err->status ? err->status : TR_ERR_RUNTIME;
    close(fd);
    out->temp = 1;
    tr_status st = take_path(out, tmp, err);
    if (st != TR_OK) {
        unlink(tmp);
        tr_output_unregister(out->slot);
        out->slot = -1;
        out->temp = 0;
        return st;
    }
    st = ingest(path, out->path, o, err);
    out->ingested = st == TR_OK;
    if (st != TR_OK)
        tr_input_release(out);
    return st;
}

/* Entries of other versions of the same input ("<path hash>-*.db"): replaced. */
static void drop_stale(const char *dir, const char *prefix, const char *keep)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    size_t pl = strlen(prefix);
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, prefix, pl) != 0 || strcmp(e->d_name, keep) == 0 || n < 3
            || strcmp(e->d_name + n - 3, ".db") != 0)
            continue;
        char p[PATH_MAX + 256];
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, e->d_name) < sizeof p)
            unlink(p);
    }
    closedir(d);
}

tr_status tr_input_open(const char *path, int no_cache, const tr_ingest_opts *o, tr_input_db *out,
                        tr_error *err)
{
    memset(out, 0, sizeof *out);
    out->slot = -1;
    if (strcmp(path, TR_INGEST_STDIN) == 0)
        return ingest_to_temp(path, o, out, err);
    struct stat sb;
    /* what cannot be read as a regular file is the run.db opener's to explain */
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return take_path(out, path, err);
    const tr_reader *r;
    tr_error derr;
    tr_error_clear(&derr);
    if (tr_reader_detect(path, &r, &derr) != TR_OK) {
        if (is_sqlite(path) || derr.status != TR_ERR_INPUT)
            return take_path(out, path, err);
        *err = derr;   /* neither a run database nor a trace: say what was tried */
        return derr.status;
    }
    char dir[PATH_MAX], abs[PATH_MAX];
    if (no_cache || !tr_input_cache_dir(dir, sizeof dir) || !realpath(path, abs) || make_dirs(dir) != 0
        || access(dir, W_OK | X_OK) != 0)
        return ingest_to_temp(path, o, out, err);
    /* the key: where the input is, which version of it, and which build of the
     * library reads it (this file's build stamp: both tools link the same one) */
    uint64_t ph = fnv1a(0xcbf29ce484222325ull, abs, strlen(abs));
    char state[512];
    int n = snprintf(state, sizeof state, "%lld %lld.%09ld %s %d %s %s", (long long)sb.st_size,
                     (long long)sb.st_mtim.tv_sec, (long)sb.st_mtim.tv_nsec, TR_VERSION,
                     TR_RUNDB_SCHEMA_VERSION, __DATE__, __TIME__);
    uint64_t kh = fnv1a(ph, state, (size_t)n);
    char prefix[32], name[64], entry[PATH_MAX + 64];
    snprintf(prefix, sizeof prefix, "%016llx-", (unsigned long long)ph);
    snprintf(name, sizeof name, "%s%016llx.db", prefix, (unsigned long long)kh);
    if ((size_t)snprintf(entry, sizeof entry, "%s/%s", dir, name) >= sizeof entry)
        return ingest_to_temp(path, o, out, err);
    struct stat eb;
    if (stat(entry, &eb) == 0 && S_ISREG(eb.st_mode) && opens_as_rundb(entry))
        return take_path(out, entry, err);
    /* none yet, or one that does not open: (re)built, through a temporary file
     * and a rename, so a reader never sees half of it */
    drop_stale(dir, prefix, name);
    unlink(entry);
    tr_status st = ingest(path, entry, o, err);
    if (st != TR_OK)
        return st;
    out->ingested = 1;
    return take_path(out, entry, err);
}

void tr_input_release(tr_input_db *in)
{
    if (in->temp && in->path) {
        unlink(in->path);
        tr_output_unregister(in->slot);
    }
    free(in->path);
    memset(in, 0, sizeof *in);
    in->slot = -1;
}

void tr_input_warn_stderr(void *ctx, const char *msg)
{
    enum { SHOWN = 5 };
    tr_input_warnings *w = ctx;
    if (++w->n > SHOWN + 1)
        return;
    char line[1200];
    if (w->n > SHOWN)
        snprintf(line, sizeof line, "%s: further warnings not shown (trace-ingest lists them all)", w->prog);
    else
        snprintf(line, sizeof line, "%s: warning: %s", w->prog, msg);
    if (w->progress)
        tr_progress_puts(w->progress, line);
    else
        tr_put_line(stderr, line);
}
