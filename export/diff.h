/*
 * diff.h - differential stacks and flamegraphs of two runs (internal to
 * export/).
 *
 * Each run's frame tree is written as folded stacks in memory, and the two
 * lists are joined by their text: --stacks --diff writes "stack BASE NEW"
 * lines, the format of flamegraph.pl's difffolded.pl that flamegraph.pl and
 * inferno-flamegraph read; --flamegraph --diff draws the NEW run's widths
 * coloured by each frame's change (docs/diff.md).
 */
#ifndef TR_EXPORT_DIFF_H
#define TR_EXPORT_DIFF_H

#include <stdio.h>

#include "export/export.h"

/* o->format is the stacks or the flamegraph format; both files are opened
 * with tr_rundb_open() and checked as one run.db is; normalize applies
 * --diff-normalize to every frame. */
tr_status tr_export_diff(const char *base, const char *new_, int normalize, const tr_export_opts *o,
                         FILE *out, tr_error *err);

/* --folded: folded-stack text ("frame;frame;... COUNT" lines, as flamegraph.pl's
 * stackcollapse scripts and --stacks write) instead of run.dbs.  One input is
 * drawn as an ordinary flamegraph (or merged, sorted lines with --stacks), or
 * as a differential one when its lines carry two counts (BASE NEW, as
 * difffolded.pl and --stacks --diff write); two one-column inputs are BASE and
 * NEW, joined as difffolded.pl joins them.  Names are for messages; a line
 * that is not folded stops with TR_ERR_INPUT naming its line number. */
tr_status tr_export_folded(FILE *const *in, const char *const *names, int n, int normalize,
                           const tr_export_opts *o, FILE *out, tr_error *err);

/* The label of a frame box px pixels wide: the name, or a prefix + "..", or
 * nothing; cut on a character boundary (flamegraph.c). */
void tr_flamegraph_put_label(FILE *f, const char *name, size_t name_len, double px);

/* The flamegraph's style sheet and viewer script (flamegraph.c). */
const char *tr_flamegraph_style(void);
const char *tr_flamegraph_script(void);

#endif
