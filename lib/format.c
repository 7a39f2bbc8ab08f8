#include "lib/format.h"

#include <stdio.h>
#include <stdlib.h>

const char tr_digit_pairs[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

void tr_fmt_time(char *buf, size_t n, double us, tr_time_unit unit)
{
    switch (unit) {
    case TR_UNIT_US: snprintf(buf, n, "%.3fus", us); return;
    case TR_UNIT_MS: snprintf(buf, n, "%.3fms", us / 1000.0); return;
    case TR_UNIT_S: snprintf(buf, n, "%.3fs", us / 1e6); return;
    case TR_UNIT_AUTO: break;
    }
    /* Thresholds are tested before rounding, as PyTorch does. */
    if (us >= 1e6)
        snprintf(buf, n, "%.3fs", us / 1e6);
    else if (us >= 1000.0)
        snprintf(buf, n, "%.3fms", us / 1000.0);
    else
        snprintf(buf, n, "%.3fus", us);
}

void tr_fmt_share(char *buf, size_t n, double x, double total)
{
    /* PyTorch asserts when total is 0 but x is not; NaN says the same without crashing. */
    if (total == 0)
        snprintf(buf, n, "NaN");
    else
        snprintf(buf, n, "%.2f%%", x * 100.0 / total);
}

void tr_fmt_mem(char *buf, size_t n, int64_t b)
{
    const double KB = 1024.0, MB = 1024.0 * 1024.0, GB = 1024.0 * 1024.0 * 1024.0;
    double a = (double)llabs(b);
    if (a >= GB)
        snprintf(buf, n, "%.2f Gb", (double)b / GB);
    else if (a >= MB)
        snprintf(buf, n, "%.2f Mb", (double)b / MB);
    else if (a >= KB)
        snprintf(buf, n, "%.2f Kb", (double)b / KB);
    else
        snprintf(buf, n, "%lld b", (long long)b);
}

size_t tr_utf8_len(const char *s, size_t len)
{
    size_t cps = 0;
    for (size_t i = 0; i < len; i++)
        if (((unsigned char)s[i] & 0xC0) != 0x80)
            cps++;
    return cps;
}

size_t tr_utf8_prefix(const char *s, size_t len, size_t cps)
{
    size_t i = 0, seen = 0;
    for (; i < len; i++) {
        if (((unsigned char)s[i] & 0xC0) != 0x80) {
            if (seen == cps)
                break;
            seen++;
        }
    }
    return i;
}
