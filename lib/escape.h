/*
 * escape.h - the one place where names become output text.
 *
 * Every writer of every tool (folded stacks, SVG, chrome JSON, analyze's
 * text, csv, json and markdown) goes through these, so a name is safe in all
 * of them the same way.  Each reads s[0..len) as UTF-8 (NUL bytes included)
 * and replaces each invalid byte by U+FFFD, so its output is valid UTF-8
 * whatever the input; none allocates.  The writers own their FILE and are
 * single-threaded: characters go out with the unlocked stdio calls.
 */
#ifndef TR_LIB_ESCAPE_H
#define TR_LIB_ESCAPE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "…", appended where a name is cut */
#define TR_ELLIPSIS "\xe2\x80\xa6"

/* Decodes one code point at s[0..len) (len >= 1); returns its byte length
 * (>= 1) and sets *cp, or U+FFFD with length 1 for an invalid or truncated
 * sequence. */
size_t tr_utf8_next(const char *s, size_t len, uint32_t *cp);
/* The longest prefix of s[0..len) of at most max bytes that does not split a
 * UTF-8 sequence. */
size_t tr_utf8_cut(const char *s, size_t len, size_t max);

/* A cap for names that may repeat through a whole output (a flamegraph's
 * tooltips, a chrome trace's events), so one huge name cannot multiply into
 * gigabytes: every name is kept up to `soft` bytes; what is beyond comes out
 * of `budget`, each name cut at `hard`; once the budget is spent, names are
 * cut at `soft`.  Names up to `soft` bytes, nearly all of them, are never
 * touched. */
typedef struct {
    size_t soft, hard, budget;
} tr_name_cap;
/* How many bytes of s[0..len) to write (never splitting a UTF-8 sequence);
 * less than len means the caller marks the cut (TR_ELLIPSIS). */
size_t tr_name_cap_take(tr_name_cap *c, const char *s, size_t len);

/* A JSON string, with the quotes.  Control characters, U+2028 and U+2029 as
 * \u escapes (the last two break JavaScript string literals). */
void tr_put_json_str(FILE *f, const char *s, size_t len);
/* The same, cut after max bytes of s with TR_ELLIPSIS inside the quotes. */
void tr_put_json_str_max(FILE *f, const char *s, size_t len, size_t max);
/* XML text and attribute values: & < > " ' as entities, tab/CR/LF as a
 * space, characters XML 1.0 forbids as U+FFFD. */
void tr_put_xml_text(FILE *f, const char *s, size_t len);
/* One folded-stack frame: ';' -> '_', control characters -> ' ', empty -> "[unnamed]". */
void tr_put_folded_frame(FILE *f, const char *s, size_t len);
/* PyTorch 1.13's frame rule: ' ', ';', '\t', '\n' -> '_' (other bytes as they are). */
void tr_put_torch_frame(FILE *f, const char *s, size_t len);
/* One CSV field (RFC 4180): quoted, with '"' doubled, when it holds ',', '"',
 * CR or LF. */
void tr_put_csv_field(FILE *f, const char *s, size_t len);
/* One markdown table cell: | \ ` * _ < backslash-escaped, control characters
 * as spaces. */
void tr_put_md_cell(FILE *f, const char *s, size_t len);
/* One cell of a fixed-width text table: every character takes one column, so
 * control characters become their visible pictures (LF -> U+240A, TAB ->
 * U+2409, ESC -> U+241B, DEL -> U+2421) and C1 controls U+FFFD.  Returns the
 * columns written, which tr_text_width() gives beforehand. */
size_t tr_put_text_cell(FILE *f, const char *s, size_t len);
size_t tr_text_width(const char *s, size_t len);
/* A message line for stderr: control characters as '?', then '\n', so a
 * hostile file name cannot add lines or move the cursor. */
void tr_put_line(FILE *f, const char *s);

#endif
