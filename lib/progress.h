/*
 * progress.h - a one-line progress indicator on standard error.
 *
 * A long run on a terminal shows what it is doing: the phase, a count of
 * things done (events) and its rate, and, when the phase reads a file of
 * known size, the bytes read and an ETA.  A thread redraws the line at most
 * ten times a second, padding it with spaces rather than using escape
 * sequences, so that it works on any terminal; tr_progress_stop() clears
 * it.  The count is read from a counter the worker updates (relaxed
 * atomics: a hint, never a result).  Bytes read are the growth of the
 * process's rchar (/proc/self/io) since the phase began, so a reader is
 * observed without knowing of the indicator; where /proc is missing the
 * line simply has no bytes.
 *
 * Lines printed while the indicator runs must go through tr_progress_puts(),
 * which clears the line first, so that messages and the line never mix.
 *
 * Ownership: tr_progress_start() returns an object that tr_progress_stop()
 * frees; a NULL indicator makes every function a no-op (plain fputs for
 * tr_progress_puts), so callers need not test for it.
 */
#ifndef TR_LIB_PROGRESS_H
#define TR_LIB_PROGRESS_H

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>

typedef struct tr_progress tr_progress;
/* Bytes read from files mapped into memory: rchar does not see them, so a
 * reader that maps its input adds here (relaxed) what it has gone past, and
 * the line counts them with rchar's growth. */
extern atomic_uint_least64_t tr_progress_mapped_bytes;

/* 1 when a progress line is wanted on stderr: TR_PROGRESS=1 forces it,
 * TR_PROGRESS=0 turns it off, otherwise only when stderr is a terminal. */
int tr_progress_wanted(void);

/* Starts the indicator, prefixing its line with prog; counter counts the
 * `unit`s done (e.g. "events") and may be NULL.  NULL when the thread cannot
 * start: the run goes on without a line. */
tr_progress *tr_progress_start(const char *prog, const atomic_size_t *counter, const char *unit);

/* A new phase: its label ("reading x.json.gz (1/2)") and, when the phase
 * reads a file, the file's size in bytes (0 = no bytes shown). */
void tr_progress_phase(tr_progress *p, const char *label, uint64_t bytes_total);

/* Writes one line (the newline is added) to stderr without mixing it with
 * the progress line. */
void tr_progress_puts(tr_progress *p, const char *line);

/* Stops the thread, clears the line and frees p. */
void tr_progress_stop(tr_progress *p);

/* The line's numbers, for summaries that go with it: 1234567 -> "1,234,567";
 * bytes in decimal units, "12.3 MB". */
void tr_progress_fmt_count(char *buf, size_t n, uint64_t v);
void tr_progress_fmt_bytes(char *buf, size_t n, uint64_t bytes);

#endif
