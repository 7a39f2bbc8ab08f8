/*
 * fuzz_file.h - the fuzz targets whose readers take a path: the input's
 * bytes written to a fresh temporary file.  The caller unlinks the file.
 */
#ifndef TR_TESTS_FUZZ_FILE_H
#define TR_TESTS_FUZZ_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <unistd.h>

/* path: a mkstemp() template ("/tmp/fuzz-NAME.XXXXXX"), filled in.  1 when the
 * file holds the n bytes; 0 when it could not be made (nothing is left). */
static int fuzz_write_file(char *path, const void *data, size_t n)
{
    int fd = mkstemp(path);
    if (fd < 0)
        return 0;
    int ok = write(fd, data, n) == (ssize_t)n;
    close(fd);
    if (!ok)
        unlink(path);
    return ok;
}

#endif
