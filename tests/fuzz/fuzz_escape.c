/*
 * libFuzzer target: the escapers every writer goes through (lib/escape.h),
 * on arbitrary bytes.  Beyond not crashing, each output must keep its
 * format's rules whatever the input: valid UTF-8, no raw control
 * characters, no unescaped delimiters.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_escape tests/fuzz/corpus/escape
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Strict UTF-8: no overlong forms, no surrogates, nothing past U+10FFFF. */
static int valid_utf8(const unsigned char *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3
                   : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (!len || i + len > n)
            return 0;
        uint32_t cp = len == 1 ? c : c & (0x7f >> len);
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return 0;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        static const uint32_t min[] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return 0;
        i += len;
    }
    return 1;
}

typedef void (*put_fn)(FILE *f, const char *s, size_t len);

static char *render(put_fn put, const char *s, size_t len, size_t *outlen)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, outlen);
    if (!f)
        abort();
    put(f, s, len);
    fclose(f);
    return buf;
}

static size_t json_max;
static void put_json_max(FILE *f, const char *s, size_t len) { tr_put_json_str_max(f, s, len, json_max); }
static size_t text_cols;
static void put_text(FILE *f, const char *s, size_t len) { text_cols = tr_put_text_cell(f, s, len); }

static int has_control(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 1;
    return 0;
}

static int has_c0(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20)
            return 1;
    return 0;
}

static void check_json(const char *o, size_t n)
{
    if (n < 2 || o[0] != '"' || o[n - 1] != '"' || has_control(o, n) || !valid_utf8((const unsigned char *)o, n))
        abort();
    for (size_t i = 1; i + 1 < n; i++) {   /* every '"' inside is escaped */
        if (o[i] == '\\')
            i++;
        else if (o[i] == '"')
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    size_t n, len = size;
    char *o;

    o = render(tr_put_json_str, s, len, &n);
    check_json(o, n);
    free(o);

    json_max = size ? data[0] : 0;
    o = render(put_json_max, s, len, &n);
    check_json(o, n);
    free(o);

    o = render(tr_put_xml_text, s, len, &n);   /* DEL is a character XML 1.0 allows */
    if (!valid_utf8((const unsigned char *)o, n) || has_c0(o, n) || memchr(o, '<', n)
        || memchr(o, '>', n) || memchr(o, '"', n))
        abort();
    free(o);

    o = render(tr_put_folded_frame, s, len, &n);
    if (!n || !valid_utf8((const unsigned char *)o, n) || has_control(o, n) || memchr(o, ';', n))
        abort();
    free(o);

    o = render(tr_put_torch_frame, s, len, &n);
    if (memchr(o, ';', n) || memchr(o, ' ', n) || memchr(o, '\t', n) || memchr(o, '\n', n))
        abort();
    free(o);

    o = render(tr_put_csv_field, s, len, &n);
    if (!valid_utf8((const unsigned char *)o, n))
        abort();
    if (n && o[0] == '"') {   /* quoted: every inner '"' doubled */
        if (n < 2 || o[n - 1] != '"')
            abort();
        for (size_t i = 1; i + 1 < n; i++)
            if (o[i] == '"' && o[++i] != '"')
                abort();
    } else if (memchr(o, ',', n) || memchr(o, '"', n) || memchr(o, '\n', n) || memchr(o, '\r', n)) {
        abort();
    }
    free(o);

    o = render(tr_put_md_cell, s, len, &n);
    if (!valid_utf8((const unsigned char *)o, n) || has_control(o, n))
        abort();
    for (size_t i = 0; i < n; i++) {   /* every '|' escaped */
        if (o[i] == '\\')
            i++;
        else if (o[i] == '|')
            abort();
    }
    free(o);

    o = render(put_text, s, len, &n);
    if (!valid_utf8((const unsigned char *)o, n) || has_control(o, n) || text_cols != tr_text_width(s, len))
        abort();
    free(o);

    char *z = malloc(size + 1);
    if (!z)
        return 0;
    memcpy(z, data, size);
    z[size] = 0;
    char *buf = NULL;
    FILE *f = open_memstream(&buf, &n);
    tr_put_line(f, z);
    fclose(f);
    if (!n || buf[n - 1] != '\n' || memchr(buf, '\n', n - 1) || memchr(buf, '\r', n))
        abort();
    free(buf);
    free(z);
    return 0;
}
