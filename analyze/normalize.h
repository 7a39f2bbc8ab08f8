/*
 * normalize.h - the --diff-normalize rule, shared by trace-analyze --diff and
 * trace-export --diff (no analyze.h: the export side has its own types).
 */
#ifndef TR_ANALYZE_NORMALIZE_H
#define TR_ANALYZE_NORMALIZE_H

/* Every number in a template argument list (inside <...>: a run of letters,
 * digits, '_' and '.' that starts with a digit not preceded by a letter, digit
 * or '_') becomes "N", and ProfilerStep#<digits> becomes "ProfilerStep*".
 * Returns a new string (NULL when out of memory). */
char *tr_diff_normalize_name(const char *name);

#endif
