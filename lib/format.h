/*
 * format.h - number formatting shared by every table and report, matching
 * PyTorch 1.13's profiler table byte for byte (see docs/semantics.md):
 * times in µs with 3 decimals and an automatic unit, percentages with 2,
 * memory in b/Kb/Mb/Gb.  Ownership: results are written into caller buffers.
 */
#ifndef TR_LIB_FORMAT_H
#define TR_LIB_FORMAT_H

#include <stddef.h>
#include <stdint.h>

typedef enum { TR_UNIT_AUTO = 0, TR_UNIT_US, TR_UNIT_MS, TR_UNIT_S } tr_time_unit;

/* us is a time in microseconds. */
void tr_fmt_time(char *buf, size_t n, double us, tr_time_unit unit);
void tr_fmt_share(char *buf, size_t n, double x, double total);
void tr_fmt_mem(char *buf, size_t n, int64_t bytes);

/* Decimal integers without printf, whose format parsing dominates writers of
 * millions of numbers: the digits are written right to left ending at end
 * (at most 20 bytes, 21 with a sign), and the first is returned. */
extern const char tr_digit_pairs[201];   /* "00" "01" ... "99" */

static inline char *tr_u64_digits(char *end, uint64_t u)
{
    while (u >= 100) {
        const char *d = &tr_digit_pairs[u % 100 * 2];
        u /= 100;
        *--end = d[1];
        *--end = d[0];
    }
    if (u >= 10) {
        *--end = tr_digit_pairs[u * 2 + 1];
        *--end = tr_digit_pairs[u * 2];
    } else {
        *--end = (char)('0' + u);
    }
    return end;
}

static inline char *tr_i64_digits(char *end, int64_t v)
{
    char *p = tr_u64_digits(end, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0)
        *--p = '-';
    return p;
}

/* Number of UTF-8 code points in s[0..len). */
size_t tr_utf8_len(const char *s, size_t len);
/* Byte length of the first `cps` code points of s[0..len). */
size_t tr_utf8_prefix(const char *s, size_t len, size_t cps);

#endif
