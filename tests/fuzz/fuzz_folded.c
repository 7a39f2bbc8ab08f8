/*
 * fuzz_folded.c - libFuzzer target for the folded-stack reader of
 * `trace-export --folded` (export/diff.c).
 *
 * The bytes are one folded file; the first half and the second half are also
 * read as BASE and NEW of a differential graph.  Beyond not crashing, a
 * successful read must write a complete SVG.
 * Build and run: make fuzz && build-fuzz/fuzz/fuzz_folded tests/fuzz/corpus/folded
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/diff.h"
#include "export/export.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void draw(FILE **in, const char **names, int n, int normalize, int stacks)
{
    tr_export_opts o;
    tr_export_opts_init(&o);
    o.format = tr_export_format_lookup(stacks ? "stacks" : "flamegraph");
    char *buf = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&buf, &len);
    tr_error err;
    tr_error_clear(&err);
    if (out) {
        tr_status st = tr_export_folded(in, names, n, normalize, &o, out, &err);
        fclose(out);
        if (st == TR_OK && !stacks && (len < 7 || memcmp(buf + len - 7, "</svg>\n", 7) != 0))
            abort();
    }
    free(buf);
    tr_export_opts_free(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    const char *names[2] = {"base", "new"};
    FILE *one = fmemopen((void *)data, size, "r");
    if (one) {
        draw(&one, names, 1, data[0] & 1, data[0] & 2);
        fclose(one);
    }
    size_t half = size / 2;
    FILE *two[2] = {half ? fmemopen((void *)data, half, "r") : NULL,
                    fmemopen((void *)(data + half), size - half, "r")};
    if (two[0] && two[1])
        draw(two, names, 2, data[0] & 4, 0);
    for (int i = 0; i < 2; i++)
        if (two[i])
            fclose(two[i]);
    return 0;
}
