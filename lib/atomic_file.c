#include "lib/atomic_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

tr_status tr_atomic_begin(tr_atomic_file *af, const char *path, tr_error *err)
{
    if (strlen(path) >= sizeof af->path)
        return tr_fail(err, TR_ERR_USAGE, "output path too long: %.64s...", path);
    strcpy(af->path, path);
    snprintf(af->tmp_path, sizeof af->tmp_path, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(af->tmp_path);
    if (fd < 0)
        return tr_fail(err, TR_ERR_RUNTIME, "cannot create a temporary file beside %s: %s",
                       path, strerror(errno));
    /* mkstemp makes the file private; an output should get the usual mode. */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(fd, 0666 & ~mask);
    close(fd);
    return TR_OK;
}

tr_status tr_atomic_commit(tr_atomic_file *af, tr_error *err)
{
    if (rename(af->tmp_path, af->path) != 0) {
        int e = errno;
        unlink(af->tmp_path);
        return tr_fail(err, TR_ERR_RUNTIME, "cannot rename %s to %s: %s", af->tmp_path,
                       af->path, strerror(e));
    }
    return TR_OK;
}

void tr_atomic_abort(tr_atomic_file *af)
{
    unlink(af->tmp_path);
}

FILE *tr_atomic_fopen(tr_atomic_file *af, const char *path, tr_error *err)
{
    if (tr_atomic_begin(af, path, err) != TR_OK)
        return NULL;
    FILE *f = fopen(af->tmp_path, "wb");
    if (!f) {
        tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", af->tmp_path, strerror(errno));
        tr_atomic_abort(af);
    }
    return f;
}

tr_status tr_atomic_fclose(tr_atomic_file *af, FILE *f, tr_error *err)
{
    int bad = ferror(f) != 0;
    if (fclose(f) != 0)
        bad = 1;
    if (bad) {
        int e = errno;
        tr_atomic_abort(af);
        return tr_fail(err, TR_ERR_RUNTIME, "cannot write %s: %s", af->path,
                       e ? strerror(e) : "write error");
    }
    return tr_atomic_commit(af, err);
}
