/*
 * error.h - status codes and error context shared by every library function.
 *
 * Library code never prints and never exits: it returns a tr_status and fills
 * a caller-owned tr_error with one line of context (file, table, offset, and
 * the underlying SQLite/PCRE2/errno message).  Only a tool's main() turns the
 * status into an exit code and prints the message.
 *
 * Ownership: tr_error is a plain value owned by the caller; it holds no heap
 * memory and needs no cleanup.
 */
#ifndef TR_LIB_ERROR_H
#define TR_LIB_ERROR_H

#include <stddef.h>

/* The values double as the tools' exit codes. */
typedef enum {
    TR_OK = 0,
    TR_ERR_RUNTIME = 1,   /* I/O failure, out of memory, SQLite error on our own output */
    TR_ERR_USAGE = 2,     /* bad option or argument */
    TR_ERR_INPUT = 3      /* bad, truncated or unsupported input */
} tr_status;

typedef struct {
    tr_status status;
    char msg[1024];
} tr_error;

/* Records status and a printf-style message; returns status for `return tr_fail(...)`. */
tr_status tr_fail(tr_error *err, tr_status status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes an existing message with more context ("nvprof: " + msg). */
tr_status tr_error_prefix(tr_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

void tr_error_clear(tr_error *err);

/* Copies an error recorded elsewhere (another thread's) into err; returns its status. */
tr_status tr_error_copy(tr_error *err, const tr_error *from);

#endif
