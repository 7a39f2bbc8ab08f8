/* escape.c - name escaping for the folded, XML (SVG) and JSON writers.
 *
 * The writers own their FILE and are single-threaded, so characters go out
 * with the unlocked stdio calls; runs of plain ASCII, most of every name,
 * are copied in one call. */
#include <stdio.h>
#include <string.h>

#include "export/export.h"

size_t tr_utf8_next(const char *str, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned char c = s[0];
    size_t n;
    uint32_t v, min;
    if (c < 0x80) {
        *cp = c;
        return 1;
    } else if (c >= 0xc2 && c <= 0xdf) {
        n = 2, v = c & 0x1f, min = 0x80;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3, v = c & 0x0f, min = 0x800;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4, v = c & 0x07, min = 0x10000;
    } else {
        *cp = 0xfffd;
        return 1;
    }
    if (len < n) {
        *cp = 0xfffd;
        return 1;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            *cp = 0xfffd;
            return 1;
        }
        v = (v << 6) | (s[i] & 0x3f);
    }
    if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) {
        *cp = 0xfffd;
        return 1;
    }
    *cp = v;
    return n;
}

static void put_cp(FILE *f, uint32_t cp)
{
    if (cp < 0x80) {
        putc_unlocked((int)cp, f);
    } else if (cp < 0x800) {
        putc_unlocked((int)(0xc0 | (cp >> 6)), f);
        putc_unlocked((int)(0x80 | (cp & 0x3f)), f);
    } else if (cp < 0x10000) {
        putc_unlocked((int)(0xe0 | (cp >> 12)), f);
        putc_unlocked((int)(0x80 | ((cp >> 6) & 0x3f)), f);
        putc_unlocked((int)(0x80 | (cp & 0x3f)), f);
    } else {
        putc_unlocked((int)(0xf0 | (cp >> 18)), f);
        putc_unlocked((int)(0x80 | ((cp >> 12) & 0x3f)), f);
        putc_unlocked((int)(0x80 | ((cp >> 6) & 0x3f)), f);
        putc_unlocked((int)(0x80 | (cp & 0x3f)), f);
    }
}

/* Length of the run at s of printable ASCII other than the bytes in `special`. */
static size_t plain_run(const char *s, size_t len, const char *special)
{
    size_t n = 0;
    while (n < len && (unsigned char)s[n] >= 0x20 && (unsigned char)s[n] < 0x7f
           && !strchr(special, s[n]))
        n++;
    return n;
}

/* Writes the plain run at s, if any; returns its length. */
static size_t put_plain_run(FILE *f, const char *s, size_t len, const char *special)
{
    size_t n = plain_run(s, len, special);
    if (n)
        fwrite_unlocked(s, 1, n, f);
    return n;
}

void tr_put_json_str(FILE *f, const char *s, size_t len)
{
    putc_unlocked('"', f);
    for (size_t i = 0; i < len;) {
        size_t run = put_plain_run(f, s + i, len - i, "\"\\");
        if (run) {
            i += run;
            continue;
        }
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        switch (cp) {
        case '"': fputs_unlocked("\\\"", f); break;
        case '\\': fputs_unlocked("\\\\", f); break;
        case '\n': fputs_unlocked("\\n", f); break;
        case '\r': fputs_unlocked("\\r", f); break;
        case '\t': fputs_unlocked("\\t", f); break;
        default:
            /* U+2028/2029 are valid JSON but break JavaScript string literals */
            if (cp < 0x20 || cp == 0x7f || cp == 0x2028 || cp == 0x2029)
                fprintf(f, "\\u%04x", (unsigned)cp);
            else
                put_cp(f, cp);
        }
    }
    putc_unlocked('"', f);
}

/* XML 1.0 allows tab, LF, CR, U+0020..U+D7FF, U+E000..U+FFFD, U+10000..U+10FFFF. */
static int xml_char_ok(uint32_t cp)
{
    return cp == 0x9 || cp == 0xa || cp == 0xd || (cp >= 0x20 && cp <= 0xd7ff)
           || (cp >= 0xe000 && cp <= 0xfffd) || cp >= 0x10000;
}

void tr_put_xml_text(FILE *f, const char *s, size_t len)
{
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        switch (cp) {
        case '<': fputs_unlocked("&lt;", f); break;
        case '>': fputs_unlocked("&gt;", f); break;
        case '&': fputs_unlocked("&amp;", f); break;
        case '"': fputs_unlocked("&quot;", f); break;
        case '\'': fputs_unlocked("&#39;", f); break;
        case '\n': case '\r': case '\t': putc_unlocked(' ', f); break;
        default: put_cp(f, xml_char_ok(cp) ? cp : 0xfffd);
        }
    }
}

void tr_put_folded_frame(FILE *f, const char *s, size_t len)
{
    if (len == 0) {
        fputs_unlocked("[unnamed]", f);
        return;
    }
    for (size_t i = 0; i < len;) {
        size_t run = put_plain_run(f, s + i, len - i, ";");
        if (run) {
            i += run;
            continue;
        }
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        if (cp == ';')
            putc_unlocked('_', f);
        else if (cp < 0x20 || cp == 0x7f)
            putc_unlocked(' ', f);
        else
            put_cp(f, cp);
    }
}

void tr_put_torch_frame(FILE *f, const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        char c = s[i];
        putc_unlocked(c == ' ' || c == ';' || c == '\t' || c == '\n' ? '_' : c, f);
    }
}
