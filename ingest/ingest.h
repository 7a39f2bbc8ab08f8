/*
 * ingest.h - turning input files into a run database.
 *
 * Input readers are rows of tr_readers[]: a name, a probe that recognises the
 * format from the file's first bytes (and, for SQLite files, its tables), and
 * a read function that adds the file's events to a tr_trace.  Adding a format
 * is adding a row.  Readers know nothing of analysis; they only fill the model.
 *
 * Ownership: tr_ingest_opts is caller-owned; warnings are passed to its
 * callback as they occur and not kept.
 */
#ifndef TR_INGEST_INGEST_H
#define TR_INGEST_INGEST_H

#include <stddef.h>

#include "lib/model.h"
#include "lib/progress.h"

typedef struct {
    void (*warn)(void *ctx, const char *msg);
    void *warn_ctx;
    const char *force_format;   /* reader name, or NULL to detect */
    tr_progress *progress;      /* told of each phase; NULL = none */
    /* Called once the run database is in place, before the trace is freed:
     * the caller's look at what was read (trace-ingest's summary). */
    void (*done)(void *ctx, const tr_trace *t);
    void *done_ctx;
    /* --rank N: the rank of the i-th input's sources (N + i) where the file
     * gives none; without it they are told apart by their order (lib/ranks.h) */
    int has_rank;
    int64_t rank;
} tr_ingest_opts;

/* The input path that means standard input, and how messages and run.db name it. */
#define TR_INGEST_STDIN "-"
#define TR_INGEST_STDIN_NAME "<stdin>"

void tr_ingest_warn(const tr_ingest_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

typedef struct {
    const char *name;
    const char *description;
    /* 1 if this reader reads the file: head holds its first bytes (may be short). */
    int (*probe)(const char *path, const unsigned char *head, size_t headlen);
    tr_status (*read)(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err);
} tr_reader;

extern const tr_reader tr_readers[];
extern const size_t tr_nreaders;

const tr_reader *tr_reader_by_name(const char *name);
tr_status tr_reader_detect(const char *path, const tr_reader **out, tr_error *err);

/* Reads every path into one trace, rebuilds the tree and writes out atomically.
 * A path of "-" is standard input (a pipe is spooled to a temporary file, as
 * every pipe is).  *nevents receives the number of events written. */
tr_status tr_ingest_files(const char *const *paths, size_t npaths, const char *out,
                          const tr_ingest_opts *o, size_t *nevents, tr_error *err);

/* The readers (one file each under ingest/readers/). */
int tr_nvprof_probe(const char *path, const unsigned char *head, size_t headlen);
tr_status tr_nvprof_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err);
int tr_kineto_probe(const char *path, const unsigned char *head, size_t headlen);
tr_status tr_kineto_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err);
int tr_nsys_probe(const char *path, const unsigned char *head, size_t headlen);
tr_status tr_nsys_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err);
int tr_raw_probe(const char *path, const unsigned char *head, size_t headlen);
tr_status tr_raw_read(tr_trace *t, const char *path, const tr_ingest_opts *o, tr_error *err);

#endif
