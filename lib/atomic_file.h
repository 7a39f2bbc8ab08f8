/*
 * atomic_file.h - write an output file so that it appears complete or not at all.
 *
 * tr_atomic_begin() picks a unique temporary path in the destination's
 * directory; the caller writes there (with stdio, SQLite, ...), then
 * tr_atomic_commit() renames it over the destination, or tr_atomic_abort()
 * removes it.  Ownership: the struct holds its own path buffers.
 */
#ifndef TR_LIB_ATOMIC_FILE_H
#define TR_LIB_ATOMIC_FILE_H

#include <stdio.h>

#include "lib/error.h"

typedef struct {
    char path[4096];
    char tmp_path[4096 + 32];
} tr_atomic_file;

tr_status tr_atomic_begin(tr_atomic_file *af, const char *path, tr_error *err);
tr_status tr_atomic_commit(tr_atomic_file *af, tr_error *err);
void tr_atomic_abort(tr_atomic_file *af);

/* Convenience for stdio writers: begin + fopen(tmp, "wb"). */
FILE *tr_atomic_fopen(tr_atomic_file *af, const char *path, tr_error *err);
/* fflush/fclose the stream, then commit; aborts on any write error. */
tr_status tr_atomic_fclose(tr_atomic_file *af, FILE *f, tr_error *err);

#endif
