/*
 * any_input.h - any supported input where a tool expects a run database.
 *
 * trace-analyze and trace-export take a trace file (nvprof, Kineto JSON, Nsight
 * Systems export, a recording) as well as a run.db: the trace is ingested once
 * into a cache entry under $XDG_CACHE_HOME/tracekit (default ~/.cache/tracekit),
 * keyed by the input's absolute path, size and modification time and by the tool
 * build, so the next call opens it at once.  Never beside the input, which may
 * be read-only.  An entry is written to a temporary file and renamed, so it is
 * never partial; one that does not open as a run database is rebuilt; an input
 * keeps one entry (a changed input replaces it).  Without a usable cache
 * directory, or with no_cache, the trace goes to a temporary file that
 * tr_input_release() removes (as does SIGINT, SIGTERM or SIGHUP).  On a terminal
 * an ingest shows trace-ingest's progress line (lib/progress.h).
 *
 * Ownership: tr_input_db owns its path; release it with tr_input_release().
 */
#ifndef TR_INGEST_ANY_INPUT_H
#define TR_INGEST_ANY_INPUT_H

#include "ingest/ingest.h"
#include "lib/error.h"

typedef struct {
    char *path;     /* the run database to open: the input itself, a cache entry or a temporary file */
    int ingested;   /* 1: the input was read now; 0: it is a run.db, or its cache entry was reused */
    int temp;       /* path is removed by tr_input_release() */
    int slot;       /* signal-cleanup registration of a temporary path, or -1 */
} tr_input_db;

/* Resolves `path` (or "-", standard input, always read into a temporary file).
 * A run.db, or anything that is not a readable trace, comes back as itself, for
 * tr_rundb_open() to accept or explain.  o: warnings while ingesting (may be NULL). */
tr_status tr_input_open(const char *path, int no_cache, const tr_ingest_opts *o, tr_input_db *out,
                        tr_error *err);
void tr_input_release(tr_input_db *in);

/* The cache directory in use ($XDG_CACHE_HOME/tracekit or ~/.cache/tracekit),
 * written to buf; 0 when there is none (no absolute $XDG_CACHE_HOME and no $HOME). */
int tr_input_cache_dir(char *buf, size_t size);

/* A warning callback for tr_ingest_opts: "PROG: warning: MSG" on stderr, the
 * first few only (trace-ingest lists them all).  ctx: a tr_input_warnings. */
typedef struct {
    const char *prog;
    size_t n;
    struct tr_progress *progress;   /* set while an ingest shows its progress line */
} tr_input_warnings;
void tr_input_warn_stderr(void *ctx, const char *msg);

#endif
