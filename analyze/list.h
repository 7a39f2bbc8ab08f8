/*
 * list.h - `trace-analyze --list WHAT`: what a run.db holds that the
 * selection options can pick (threads, devices, streams, kinds, steps,
 * ranks), with names and counts; and the check that a --thread, --device or
 * --stream names something that exists.
 *
 * Each list is one row of tr_lists[] (its query and columns): adding one is
 * adding a row.
 */
#ifndef TR_ANALYZE_LIST_H
#define TR_ANALYZE_LIST_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/error.h"

struct tr_selection;   /* analyze.h; not included, so export can use the checks */

typedef struct tr_list tr_list;

const tr_list *tr_list_lookup(const char *name);
/* The list names, space-separated, for help, errors and completion. */
const char *tr_list_names(void);
/* Prints the list as a text table, or csv/json/markdown (raw numbers) when
 * format names one; path names the file in messages.  With sel bound to db
 * and --rank, only what the selected ranks hold (NULL: everything). */
tr_status tr_list_print(sqlite3 *db, const char *path, const tr_list *l, const struct tr_selection *sel,
                        const char *format, FILE *out, tr_error *err);
/* The same over several run.dbs (paths; names for the output), one table
 * whose first column names each row's run.db; bases are the run.dbs' rank
 * bases (tr_ranks_prepare), and sel is bound to each in turn for --rank. */
tr_status tr_list_print_many(const char *const *paths, const char *const *names, const int64_t *bases, size_t n,
                             const tr_list *l, struct tr_selection *sel, const char *format, FILE *out,
                             tr_error *err);
/* Writes "name  description" lines, for --list help. */
void tr_list_print_choices(FILE *out);

/* TR_ERR_INPUT, naming what the file has, when the selection asks for a
 * thread, device or stream the run.db does not have (an empty table would
 * not say which filter was wrong). */
tr_status tr_list_check_selection(sqlite3 *db, const char *path, const struct tr_selection *sel,
                                  tr_error *err);
/* The same for one filter: what is "thread", "device" or "stream". */
tr_status tr_list_check_filter(sqlite3 *db, const char *path, const char *what, int64_t value, tr_error *err);
/* For several run.dbs (paths; names for messages): each filter must match in
 * one of them. */
tr_status tr_list_check_selection_any(const char *const *paths, const char *const *names, int n,
                                      const struct tr_selection *sel, tr_error *err);

#endif
