/* escape.c - name escaping for every writer (see escape.h).
 *
 * Runs of plain ASCII, most of every name, are copied in one call. */
#include "lib/escape.h"

#include <string.h>

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

size_t tr_utf8_cut(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t cut = max;
    /* back over at most 3 continuation bytes to the start of their sequence */
    for (int k = 0; k < 3 && cut > 0 && ((unsigned char)s[cut] & 0xc0) == 0x80; k++)
        cut--;
    if (((unsigned char)s[cut] & 0xc0) == 0x80)
        cut = max;   /* not UTF-8 there anyway */
    return cut;
}

size_t tr_name_cap_take(tr_name_cap *c, const char *s, size_t len)
{
    if (len <= c->soft)
        return len;
    size_t want = len < c->hard ? len : c->hard;
    size_t extra = want - c->soft;
    if (extra > c->budget)
        extra = 0;   /* spent: the rest of the output gets short names */
    c->budget -= extra;
    return tr_utf8_cut(s, len, c->soft + extra);
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

static void put_json_body(FILE *f, const char *s, size_t len);

void tr_put_json_str(FILE *f, const char *s, size_t len)
{
    putc_unlocked('"', f);
    put_json_body(f, s, len);
    putc_unlocked('"', f);
}

void tr_put_json_str_max(FILE *f, const char *s, size_t len, size_t max)
{
    size_t cut = tr_utf8_cut(s, len, max);
    putc_unlocked('"', f);
    put_json_body(f, s, cut);
    if (cut < len)
        fputs_unlocked(TR_ELLIPSIS, f);
    putc_unlocked('"', f);
}

static void put_json_body(FILE *f, const char *s, size_t len)
{
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

void tr_put_csv_field(FILE *f, const char *s, size_t len)
{
    int quote = 0;
    for (size_t i = 0; i < len && !quote; i++)
        quote = s[i] == ',' || s[i] == '"' || s[i] == '\n' || s[i] == '\r';
    if (quote)
        putc_unlocked('"', f);
    for (size_t i = 0; i < len;) {
        size_t run = put_plain_run(f, s + i, len - i, "\"");
        if (run) {
            i += run;
            continue;
        }
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        if (cp == '"')
            putc_unlocked('"', f);
        put_cp(f, cp);
    }
    if (quote)
        putc_unlocked('"', f);
}

void tr_put_md_cell(FILE *f, const char *s, size_t len)
{
    static const char special[] = "|\\`*_<";
    for (size_t i = 0; i < len;) {
        size_t run = put_plain_run(f, s + i, len - i, special);
        if (run) {
            i += run;
            continue;
        }
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        if (cp < 0x20 || cp == 0x7f) {
            putc_unlocked(' ', f);
            continue;
        }
        if (cp < 0x80 && strchr(special, (int)cp))
            putc_unlocked('\\', f);
        put_cp(f, cp >= 0x80 && cp < 0xa0 ? 0xfffd : cp);
    }
}

/* The one-column stand-in of a code point in a text table. */
static uint32_t text_cp(uint32_t cp)
{
    if (cp < 0x20)
        return 0x2400 + cp;   /* Control Pictures: U+2400 NUL .. U+241F US */
    if (cp == 0x7f)
        return 0x2421;
    if (cp >= 0x80 && cp < 0xa0)
        return 0xfffd;
    return cp;
}

size_t tr_put_text_cell(FILE *f, const char *s, size_t len)
{
    size_t cols = 0;
    for (size_t i = 0; i < len;) {
        size_t run = put_plain_run(f, s + i, len - i, "");
        if (run) {
            i += run;
            cols += run;
            continue;
        }
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
        put_cp(f, text_cp(cp));
        cols++;
    }
    return cols;
}

size_t tr_text_width(const char *s, size_t len)
{
    size_t cols = 0;
    for (size_t i = 0; i < len; cols++) {
        uint32_t cp;
        i += tr_utf8_next(s + i, len - i, &cp);
    }
    return cols;
}

void tr_put_line(FILE *f, const char *s)
{
    for (; *s; s++)
        putc_unlocked((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, f);
    putc_unlocked('\n', f);
}
