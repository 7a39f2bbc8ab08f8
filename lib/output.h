/*
 * output.h - the one way the tools write an output file.
 *
 * Rules (docs/export.md, "Output files"), the same for every tool:
 * - "-" is standard output; "" is a usage error.
 * - A regular file is written to a temporary file beside it and renamed over
 *   it when complete, so it is either the old file or the complete new one.
 *   A symbolic link is followed: its target is replaced and the link kept.
 *   The new file keeps the permissions of the one it replaces; a new file
 *   gets the umask's default (0666 & ~umask).
 * - A character device or a FIFO (/dev/null, a named pipe) is written
 *   directly, never renamed over; so is anything reached through /proc (the
 *   target of /dev/stdout, /dev/fd/N) and whatever standard output or
 *   standard error already is.  A FIFO without a reader is an error after a
 *   few seconds, not a hang.
 * - A directory, a block device or a socket is refused (TR_ERR_USAGE).
 * - An output that is the same file as an input (device and inode, so also
 *   through links) is refused (TR_ERR_USAGE): tr_output_check_inputs().
 *
 * Temporary files are registered for removal by the handlers of
 * tr_output_handle_signals(): SIGINT, SIGTERM, SIGHUP and SIGPIPE remove
 * them, then the process dies of the signal (status 128 + N in the shell).
 *
 * Ownership: tr_output is caller-owned and holds its own path buffers; after
 * tr_output_begin() succeeds, exactly one of tr_output_commit() and
 * tr_output_abort() must follow.
 */
#ifndef TR_LIB_OUTPUT_H
#define TR_LIB_OUTPUT_H

#include <stdio.h>

#include "lib/error.h"

enum {
    /* The writer needs a named, seekable regular file (SQLite): when the
     * output is a stream, the file is spooled under $TMPDIR and copied to the
     * stream by tr_output_commit(). */
    TR_OUTPUT_NEED_FILE = 1,
};

typedef enum {
    TR_OUTPUT_REPLACE,   /* temporary file beside the target, renamed over it */
    TR_OUTPUT_STREAM     /* written to fd directly (stdout, a device, a FIFO) */
} tr_output_mode;

typedef struct {
    char path[4096];            /* as given, for messages */
    char target[4096];          /* the file that is replaced (symbolic links followed) */
    char tmp_path[4096 + 32];   /* the file to write when it is non-empty */
    tr_output_mode mode;
    int fd;                     /* stream mode: where the bytes go; -1 otherwise */
    int close_fd;               /* fd was opened here */
    int slot;                   /* signal-cleanup registration of tmp_path, or -1 */
    FILE *f;                    /* from tr_output_fopen(), or NULL */
} tr_output;

/* Prepares writing path.  After it, write tmp_path when it is non-empty (or
 * use tr_output_fopen() instead); TR_OUTPUT_NEED_FILE guarantees a tmp_path. */
tr_status tr_output_begin(tr_output *o, const char *path, unsigned flags, tr_error *err);
/* Finishes: closes the stream of tr_output_fopen(), renames the temporary
 * file over the target or copies the spool to the stream.  On failure the
 * temporary file is gone and the target untouched. */
tr_status tr_output_commit(tr_output *o, tr_error *err);
/* Gives up: the temporary file is removed, the target untouched. */
void tr_output_abort(tr_output *o);

/* begin + a stdio stream on the temporary file or the output stream. */
FILE *tr_output_fopen(tr_output *o, const char *path, tr_error *err);

/* TR_ERR_USAGE when output names the same file as one of the inputs. */
tr_status tr_output_check_inputs(const char *output, const char *const *inputs, size_t ninputs,
                                 tr_error *err);

/* Installs the cleanup handlers (once per process).  SIGINT, SIGTERM and
 * SIGHUP keep an inherited SIG_IGN (nohup, background jobs); SIGPIPE always
 * gets the handler, so a closed pipe ends every tool quietly the same way. */
void tr_output_handle_signals(void);

/* Registers another temporary file (a spooled input) for removal on a
 * signal; returns the slot for tr_output_unregister(), or -1 when full.
 * Both block the handled signals while they run. */
int tr_output_register(const char *path);
void tr_output_unregister(int slot);

/* A temporary file under $TMPDIR (or /tmp): mkstemp, registered. Returns the
 * fd, the path in buf, the registration in *slot; -1 and err on failure. */
int tr_output_mktemp(char *buf, size_t size, const char *stem, int *slot, tr_error *err);

#endif
