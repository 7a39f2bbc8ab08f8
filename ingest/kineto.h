/*
 * kineto.h - internals of the PyTorch/Kineto chrome-trace reader that tests
 * and the fuzz target call directly.
 *
 * tr_kineto_read_mem() reads a trace held in memory (plain JSON text, not
 * gzip); `name` stands in for the path in messages and in the sources table.
 * tr_kineto_us_to_ns() converts the text of a JSON number of microseconds to
 * integer nanoseconds without going through a double (round half up).
 *
 * Ownership: the caller keeps the buffer; the trace owns what is added.
 */
#ifndef TR_INGEST_KINETO_H
#define TR_INGEST_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "ingest/ingest.h"

tr_status tr_kineto_read_mem(tr_trace *t, const char *name, const void *data, size_t len,
                             const tr_ingest_opts *o, tr_error *err);

/* 0 and *ns on success; -1 when the text is not a number or overflows. */
int tr_kineto_us_to_ns(const char *text, size_t len, int64_t *ns);

#endif
