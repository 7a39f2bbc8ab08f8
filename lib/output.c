#include "lib/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* ---- removal of temporary files on a signal ---- */

/* The handler may only read what is already complete, so paths live in
 * static storage and a slot becomes visible (used = 1) after its path is
 * written, with the signals blocked meanwhile. */
#define NSLOTS 8
static char slot_path[NSLOTS][4096 + 64];
static volatile sig_atomic_t slot_used[NSLOTS];
static const int handled_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
#define NHANDLED (sizeof handled_signals / sizeof handled_signals[0])

static void block_handled(sigset_t *old)
{
    sigset_t s;
    sigemptyset(&s);
    for (size_t i = 0; i < NHANDLED; i++)
        sigaddset(&s, handled_signals[i]);
    sigprocmask(SIG_BLOCK, &s, old);
}

static void restore_mask(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

static int register_locked(const char *path)
{
    if (strlen(path) >= sizeof slot_path[0])
        return -1;
    for (int i = 0; i < NSLOTS; i++) {
        if (!slot_used[i]) {
            strcpy(slot_path[i], path);
            slot_used[i] = 1;
            return i;
        }
    }
    return -1;
}

int tr_output_register(const char *path)
{
    sigset_t old;
    block_handled(&old);
    int slot = register_locked(path);
    restore_mask(&old);
    return slot;
}

void tr_output_unregister(int slot)
{
    if (slot < 0 || slot >= NSLOTS)
        return;
    sigset_t old;
    block_handled(&old);
    slot_used[slot] = 0;
    restore_mask(&old);
}

static void on_signal(int sig)
{
    int saved = errno;
    for (int i = 0; i < NSLOTS; i++)
        if (slot_used[i])
            unlink(slot_path[i]);
    /* Die of the signal itself, so the parent sees 128 + N and a shell
     * script interrupted by ^C stops too.  The signal is blocked while this
     * handler runs: it is delivered, with its default action, on return. */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = SIG_DFL;
    sigemptyset(&sa.sa_mask);
    sigaction(sig, &sa, NULL);
    raise(sig);
    errno = saved;
}

void tr_output_handle_signals(void)
{
    static int installed;
    if (installed)
        return;
    installed = 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NHANDLED; i++)
        sigaddset(&sa.sa_mask, handled_signals[i]);
    for (size_t i = 0; i < NHANDLED; i++) {
        struct sigaction cur;
        if (handled_signals[i] != SIGPIPE && sigaction(handled_signals[i], NULL, &cur) == 0
            && cur.sa_handler == SIG_IGN)
            continue;
        sigaction(handled_signals[i], &sa, NULL);
    }
}

/* ---- temporary files ---- */

static int mkstemp_registered(char *tmpl, int *slot)
{
    sigset_t old;
    block_handled(&old);
    int fd = mkstemp(tmpl);
    *slot = fd >= 0 ? register_locked(tmpl) : -1;
    restore_mask(&old);
    return fd;
}

int tr_output_mktemp(char *buf, size_t size, const char *stem, int *slot, tr_error *err)
{
    const char *dir = getenv("TMPDIR");
    if (!dir || !*dir)
        dir = "/tmp";
    if ((size_t)snprintf(buf, size, "%s/%s.XXXXXX", dir, stem) >= size) {
        tr_fail(err, TR_ERR_RUNTIME, "temporary directory name too long: %.64s...", dir);
        return -1;
    }
    int fd = mkstemp_registered(buf, slot);
    if (fd < 0)
        tr_fail(err, TR_ERR_RUNTIME, "cannot create a temporary file in %s: %s", dir,
                strerror(errno));
    return fd;
}

static void drop_tmp(tr_output *o)
{
    if (o->tmp_path[0]) {
        unlink(o->tmp_path);
        tr_output_unregister(o->slot);
        o->slot = -1;
        o->tmp_path[0] = '\0';
    }
}

/* ---- classifying the output path ---- */

static int same_file(const struct stat *a, const struct stat *b)
{
    return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

static int is_fd(const struct stat *st, int fd)
{
    struct stat f;
    return fstat(fd, &f) == 0 && same_file(st, &f);
}

static int in_proc(const char *dir)
{
    char res[PATH_MAX];
    return realpath(dir, res) && (strcmp(res, "/proc") == 0 || strncmp(res, "/proc/", 6) == 0);
}

/* 1 when path, or a symbolic link on the way to it, lives in /proc: the
 * target of /dev/stdout or /dev/fd/N is a file some process has open, and
 * replacing it by name would cut it off from that process. */
static int through_proc(const char *path)
{
    char cur[PATH_MAX], dir[PATH_MAX], link[PATH_MAX];
    if (strlen(path) >= sizeof cur)
        return 0;
    strcpy(cur, path);
    for (int hop = 0; hop < 40; hop++) {
        const char *slash = strrchr(cur, '/');
        if (!slash)
            strcpy(dir, ".");
        else if (slash == cur)
            strcpy(dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - cur), cur);
        if (in_proc(dir))
            return 1;
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0)
            return 0;
        link[n] = '\0';
        if (link[0] == '/')
            strcpy(cur, link);
        else if ((size_t)snprintf(cur, sizeof cur, "%s/%s", dir, link) >= sizeof cur)
            return 0;
    }
    return 0;
}

/* Opens a FIFO, a device or a /proc link for writing.  A FIFO without a
 * reader would block open() for ever: wait a few seconds for one instead. */
static tr_status open_stream(tr_output *o, const struct stat *st, tr_error *err)
{
    int flags = O_WRONLY | O_NOCTTY | O_CLOEXEC;
    if (S_ISREG(st->st_mode))
        flags |= O_TRUNC;
    else
        flags |= O_NONBLOCK;
    int fd = -1;
    for (int tries = 0; tries < 100; tries++) {
        fd = open(o->path, flags);
        if (fd >= 0 || errno != ENXIO || !S_ISFIFO(st->st_mode))
            break;
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    if (fd < 0)
        return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", o->path,
                       errno == ENXIO ? "no process reads the FIFO" : strerror(errno));
    if (flags & O_NONBLOCK)
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    o->fd = fd;
    o->close_fd = 1;
    return TR_OK;
}

static mode_t default_mode(void)
{
    mode_t mask = umask(0);
    umask(mask);
    return 0666 & ~mask;
}

/* The temporary name: "<target>.tmp.XXXXXX", or a short hidden one in the
 * same directory when the target's name leaves no room for the suffix. */
static int tmp_name(tr_output *o)
{
    const char *base = strrchr(o->target, '/');
    base = base ? base + 1 : o->target;
    if (strlen(base) + 11 <= NAME_MAX) {
        snprintf(o->tmp_path, sizeof o->tmp_path, "%s.tmp.XXXXXX", o->target);
        return 0;
    }
    snprintf(o->tmp_path, sizeof o->tmp_path, "%.*s.trace-out.tmp.XXXXXX",
             (int)(base - o->target), o->target);
    return 0;
}

static tr_status begin_replace(tr_output *o, const struct stat *st, unsigned flags,
                               tr_error *err)
{
    struct stat lst;
    if (st && lstat(o->path, &lst) == 0 && S_ISLNK(lst.st_mode)) {
        if (!realpath(o->path, o->target))
            return tr_fail(err, TR_ERR_RUNTIME, "cannot resolve %s: %s", o->path,
                           strerror(errno));
    } else {
        strcpy(o->target, o->path);
    }
    tmp_name(o);
    int fd = mkstemp_registered(o->tmp_path, &o->slot);
    if (fd < 0) {
        int e = errno;
        o->tmp_path[0] = '\0';
        return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s%s", o->path,
                       e == EACCES || e == EROFS ? "cannot create a file beside it: " : "",
                       strerror(e));
    }
    /* mkstemp makes the file private: give it the mode of the file it
     * replaces, or the usual one for a new file */
    if (fchmod(fd, st ? st->st_mode & 0777 : default_mode()) != 0) {
        int e = errno;
        close(fd);
        drop_tmp(o);
        return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", o->path, strerror(e));
    }
    if (st && (st->st_uid != geteuid() || st->st_gid != getegid())
        && fchown(fd, st->st_uid, st->st_gid) != 0) {
        /* only the owner's own groups or root may keep another owner: the
         * mode is kept, the owner becomes ours */
    }
    if (flags & TR_OUTPUT_NEED_FILE) {
        close(fd);
    } else {
        o->fd = fd;
        o->close_fd = 1;
    }
    o->mode = TR_OUTPUT_REPLACE;
    return TR_OK;
}

tr_status tr_output_begin(tr_output *o, const char *path, unsigned flags, tr_error *err)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    if (!path || !*path)
        return tr_fail(err, TR_ERR_USAGE, "empty output file name (use -o - for standard output)");
    if (strlen(path) >= sizeof o->path)
        return tr_fail(err, TR_ERR_USAGE, "output path too long: %.64s...", path);
    strcpy(o->path, path);
    o->mode = TR_OUTPUT_STREAM;
    tr_status st = TR_OK;
    struct stat sb;
    if (strcmp(path, "-") == 0) {
        strcpy(o->path, "standard output");
        o->fd = 1;
    } else if (stat(path, &sb) == 0) {
        if (is_fd(&sb, 1))
            o->fd = 1;   /* -o /dev/stdout, or the very file stdout is redirected to */
        else if (is_fd(&sb, 2))
            o->fd = 2;
        else if (S_ISDIR(sb.st_mode))
            return tr_fail(err, TR_ERR_USAGE, "cannot write %s: it is a directory", path);
        else if (S_ISCHR(sb.st_mode) || S_ISFIFO(sb.st_mode)
                 || (S_ISREG(sb.st_mode) && through_proc(path)))
            st = open_stream(o, &sb, err);
        else if (!S_ISREG(sb.st_mode))
            return tr_fail(err, TR_ERR_USAGE, "cannot write %s: not a regular file, a "
                           "character device or a FIFO", path);
        else
            return begin_replace(o, &sb, flags, err);
    } else if (errno == ENOENT) {
        struct stat lst;
        if (lstat(path, &lst) == 0)
            return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: a symbolic link to a "
                           "missing file", path);
        return begin_replace(o, NULL, flags, err);
    } else {
        return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", path, strerror(errno));
    }
    if (st == TR_OK && (flags & TR_OUTPUT_NEED_FILE)) {
        int fd = tr_output_mktemp(o->tmp_path, sizeof o->tmp_path, "trace-out", &o->slot, err);
        if (fd < 0) {
            o->tmp_path[0] = '\0';
            st = err ? err->status : TR_ERR_RUNTIME;
        } else {
            close(fd);
        }
    }
    if (st != TR_OK && o->close_fd) {
        close(o->fd);
        o->fd = -1;
    }
    return st;
}

FILE *tr_output_fopen(tr_output *o, const char *path, tr_error *err)
{
    if (tr_output_begin(o, path, 0, err) != TR_OK)
        return NULL;
    /* A stream of our own even on fd 1 or 2: full buffering, and fclose()
     * reports the write errors. */
    int fd = o->close_fd ? o->fd : dup(o->fd);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        int e = errno;
        if (fd >= 0 && fd != o->fd)
            close(fd);
        tr_output_abort(o);
        tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", path, strerror(e));
        return NULL;
    }
    if (o->close_fd) {   /* the stream owns it now */
        o->close_fd = 0;
        o->fd = -1;
    }
    o->f = f;
    return f;
}

static tr_status copy_to_fd(tr_output *o, tr_error *err)
{
    int in = open(o->tmp_path, O_RDONLY | O_CLOEXEC);
    if (in < 0)
        return tr_fail(err, TR_ERR_RUNTIME, "cannot read %s: %s", o->tmp_path, strerror(errno));
    enum { BUF = 1 << 18 };
    char *buf = malloc(BUF);
    tr_status st = buf ? TR_OK : tr_fail(err, TR_ERR_RUNTIME, "out of memory");
    while (st == TR_OK) {
        ssize_t n = read(in, buf, BUF);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            st = tr_fail(err, TR_ERR_RUNTIME, "cannot read %s: %s", o->tmp_path, strerror(errno));
            break;
        }
        if (n == 0)
            break;
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(o->fd, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                st = tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", o->path,
                             w < 0 ? strerror(errno) : "short write");
                break;
            }
            off += w;
        }
    }
    free(buf);
    close(in);
    return st;
}

tr_status tr_output_commit(tr_output *o, tr_error *err)
{
    tr_status st = TR_OK;
    if (o->f) {
        int bad = fflush(o->f) != 0 || ferror(o->f);
        int e = errno;
        if (fclose(o->f) != 0 && !bad)
            bad = 1, e = errno;
        o->f = NULL;
        if (bad)
            st = tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", o->path,
                         e ? strerror(e) : "write error");
    }
    if (st == TR_OK && o->mode == TR_OUTPUT_STREAM && o->tmp_path[0])
        st = copy_to_fd(o, err);
    if (o->close_fd && o->fd >= 0) {
        if (close(o->fd) != 0 && st == TR_OK && o->mode == TR_OUTPUT_REPLACE)
            st = tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", o->path, strerror(errno));
        o->fd = -1;
        o->close_fd = 0;
    }
    /* No fsync: the rename makes the file whole or absent for any process
     * that dies or is killed; surviving a power cut is the file system's
     * business, and syncing a multi-GB run.db would cost more than the ingest. */
    if (st == TR_OK && o->mode == TR_OUTPUT_REPLACE) {
        sigset_t old;
        block_handled(&old);
        if (rename(o->tmp_path, o->target) != 0)
            st = tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: cannot rename the temporary "
                         "file over it: %s", o->path, strerror(errno));
        else
            o->tmp_path[0] = '\0';
        if (o->slot >= 0 && !o->tmp_path[0])
            slot_used[o->slot] = 0, o->slot = -1;
        restore_mask(&old);
    }
    drop_tmp(o);
    return st;
}

void tr_output_abort(tr_output *o)
{
    if (o->f) {
        fclose(o->f);
        o->f = NULL;
    }
    if (o->close_fd && o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    o->close_fd = 0;
    drop_tmp(o);
}

tr_status tr_output_check_inputs(const char *output, const char *const *inputs, size_t ninputs,
                                 tr_error *err)
{
    struct stat out;
    if (!output || !*output || strcmp(output, "-") == 0 || stat(output, &out) != 0)
        return TR_OK;
    for (size_t i = 0; i < ninputs; i++) {
        struct stat in;
        if (inputs[i] && stat(inputs[i], &in) == 0 && same_file(&in, &out))
            return tr_fail(err, TR_ERR_USAGE, "output %s is the input %s itself: refusing to "
                           "overwrite it", output, inputs[i]);
    }
    return TR_OK;
}
