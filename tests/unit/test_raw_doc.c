/* docs/raw-format.md and record/raw_format.h describe the same chunk types,
 * record kinds, record sizes and version. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record/raw_format.h"
#include "tests/unit/unit.h"

typedef struct {
    unsigned id;
    const char *name;
} named_id;

static const named_id chunk_types[] = {
    {TR_RAW_CH_META, "META"},         {TR_RAW_CH_STRINGS, "STRINGS"}, {TR_RAW_CH_RECORDS, "RECORDS"},
    {TR_RAW_CH_STACKS, "STACKS"},     {TR_RAW_CH_MAPS, "MAPS"},       {TR_RAW_CH_STATS, "STATS"},
    {TR_RAW_CH_MODULES, "MODULES"},   {TR_RAW_CH_END, "END"},         {TR_RAW_CH_STATUS, "STATUS"},
};

static const named_id record_kinds[] = {
    {TR_RAW_REC_KERNEL, "KERNEL"}, {TR_RAW_REC_API, "API"},         {TR_RAW_REC_MEMCPY, "MEMCPY"},
    {TR_RAW_REC_MEMSET, "MEMSET"}, {TR_RAW_REC_SYNC, "SYNC"},       {TR_RAW_REC_MARKER, "MARKER"},
    {TR_RAW_REC_DEVICE, "DEVICE"}, {TR_RAW_REC_CONTEXT, "CONTEXT"}, {TR_RAW_REC_STREAM, "STREAM"},
    {TR_RAW_REC_NAME, "NAME"},     {TR_RAW_REC_STACKREF, "STACKREF"}, {TR_RAW_REC_OVERHEAD, "OVERHEAD"},
};

#define MAX_ROWS 64

typedef struct {
    unsigned id;
    char name[32];
    unsigned bytes;   /* third column when it is a number, else 0 */
} doc_row;

/* Rows "| N | NAME | ..." of the markdown table whose header line starts with
 * `header`; returns how many. */
static size_t doc_table(const char *header, doc_row *rows)
{
    const char *dir = getenv("TR_SOURCE_DIR");
    char path[512], line[2048];
    snprintf(path, sizeof path, "%s/docs/raw-format.md", dir && *dir ? dir : ".");
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    size_t n = 0;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, header, strlen(header))) {
            in = 1;
            continue;
        }
        if (in && line[0] != '|')
            break;
        doc_row r = {0};
        if (in && n < MAX_ROWS && sscanf(line, "| %u | %31[A-Z] | %u", &r.id, r.name, &r.bytes) >= 2)
            rows[n++] = r;
    }
    fclose(f);
    return n;
}

static void expect_same(const named_id *code, size_t ncode, const doc_row *doc, size_t ndoc,
                        int check_sizes)
{
    CU_ASSERT_EQUAL(ndoc, ncode);
    for (size_t i = 0; i < ncode; i++) {
        const doc_row *d = NULL;
        for (size_t k = 0; k < ndoc; k++)
            if (doc[k].id == code[i].id)
                d = &doc[k];
        if (!d || strcmp(d->name, code[i].name) != 0)
            fprintf(stderr, "\n  %u %s: documented as %s", code[i].id, code[i].name, d ? d->name : "nothing");
        CU_ASSERT(d && strcmp(d->name, code[i].name) == 0);
        if (d && check_sizes) {
            if (d->bytes != tr_raw_rec_size(code[i].id))
                fprintf(stderr, "\n  %s: %u bytes documented, %zu in the code", code[i].name, d->bytes,
                        tr_raw_rec_size(code[i].id));
            CU_ASSERT_EQUAL(d->bytes, tr_raw_rec_size(code[i].id));
        }
    }
}

static void test_chunk_types(void)
{
    unsigned last = 0;
    for (size_t i = 0; i < sizeof chunk_types / sizeof chunk_types[0]; i++)
        last = chunk_types[i].id > last ? chunk_types[i].id : last;
    CU_ASSERT_EQUAL(last, TR_RAW_CH_LAST_);   /* a chunk type this list lacks */
    doc_row rows[MAX_ROWS];
    size_t n = doc_table("| type | name | payload |", rows);
    expect_same(chunk_types, sizeof chunk_types / sizeof chunk_types[0], rows, n, 0);
}

static void test_record_kinds(void)
{
    doc_row rows[MAX_ROWS];
    size_t n = doc_table("| kind | name | bytes |", rows);
    CU_ASSERT_EQUAL(sizeof record_kinds / sizeof record_kinds[0], TR_RAW_REC_COUNT_ - 1);
    expect_same(record_kinds, sizeof record_kinds / sizeof record_kinds[0], rows, n, 1);
}

static void test_version(void)
{
    const char *dir = getenv("TR_SOURCE_DIR");
    char path[512], line[2048], want[64];
    snprintf(path, sizeof path, "%s/docs/raw-format.md", dir && *dir ? dir : ".");
    snprintf(want, sizeof want, "major = %u, minor = %u", TR_RAW_MAJOR, TR_RAW_MINOR);
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    int found = 0;
    while (fgets(line, sizeof line, f))
        found |= strstr(line, want) != NULL;
    fclose(f);
    if (!found)
        fprintf(stderr, "\n  docs/raw-format.md does not say \"%s\"", want);
    CU_ASSERT(found);
}

TR_SUITE(raw_doc,
         {"docs/raw-format.md lists the code's chunk types", test_chunk_types},
         {"docs/raw-format.md lists the code's record kinds and sizes", test_record_kinds},
         {"docs/raw-format.md states the code's version", test_version})
