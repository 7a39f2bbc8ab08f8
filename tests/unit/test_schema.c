/* docs/schema.md and the schema the code creates list the same tables and columns. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/rundb.h"
#include "tests/unit/unit.h"

/* Columns documented for `table`: the first-cell `name` of each row of the
 * markdown table under "### `table`", space-separated, in order. */
static void doc_columns(const char *table, char *out, size_t n)
{
    const char *dir = getenv("TR_SOURCE_DIR");
    char path[512];
    snprintf(path, sizeof path, "%s/docs/schema.md", dir && *dir ? dir : ".");
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    char line[1024], heading[256];
    snprintf(heading, sizeof heading, "### `%s`", table);
    int in = 0;
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "### ", 4)) {
            in = strncmp(line, heading, strlen(heading)) == 0 && line[strlen(heading)] == '\n';
            continue;
        }
        if (in && !strncmp(line, "| `", 3)) {
            char *end = strchr(line + 3, '`');
            if (end) {
                size_t l = strlen(out);
                snprintf(out + l, n - l, "%s%.*s", l ? " " : "", (int)(end - line - 3), line + 3);
            }
        }
    }
    fclose(f);
}

/* The tables, then the views: both are documented under "### `name`". */
static const tr_rundb_table *object(size_t i)
{
    return i < tr_rundb_ntables ? &tr_rundb_tables[i] : &tr_rundb_views[i - tr_rundb_ntables];
}

static void test_doc_matches_code(void)
{
    sqlite3 *db;
    CU_ASSERT_EQUAL_FATAL(sqlite3_open(":memory:", &db), SQLITE_OK);
    CU_ASSERT_EQUAL_FATAL(tr_rundb_create_schema(db, NULL), TR_OK);
    for (size_t i = 0; i < tr_rundb_ntables + tr_rundb_nviews; i++) {
        char code[2048] = "", doc[2048];
        sqlite3_stmt *st;
        CU_ASSERT_EQUAL_FATAL(sqlite3_prepare_v2(db, "SELECT name FROM pragma_table_info(?)", -1, &st, NULL), SQLITE_OK);
        sqlite3_bind_text(st, 1, object(i)->table, -1, SQLITE_STATIC);
        while (sqlite3_step(st) == SQLITE_ROW) {
            size_t l = strlen(code);
            snprintf(code + l, sizeof code - l, "%s%s", l ? " " : "", sqlite3_column_text(st, 0));
        }
        sqlite3_finalize(st);
        doc_columns(object(i)->table, doc, sizeof doc);
        if (strcmp(code, doc) != 0)
            fprintf(stderr, "\n  table %s:\n    code: %s\n    doc:  %s\n", object(i)->table, code, doc);
        CU_ASSERT_STRING_EQUAL(code, doc);
    }
    sqlite3_stmt *st;
    sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, NULL);
    sqlite3_step(st);
    CU_ASSERT_EQUAL(sqlite3_column_int(st, 0), TR_RUNDB_SCHEMA_VERSION);
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static void test_every_table_documented(void)
{
    /* and the document describes no table the code lacks */
    const char *dir = getenv("TR_SOURCE_DIR");
    char path[512], line[1024];
    snprintf(path, sizeof path, "%s/docs/schema.md", dir && *dir ? dir : ".");
    FILE *f = fopen(path, "r");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "### `", 5) != 0)
            continue;
        char *end = strchr(line + 5, '`');
        int known = 0;
        for (size_t i = 0; end && i < tr_rundb_ntables + tr_rundb_nviews; i++)
            if ((size_t)(end - line - 5) == strlen(object(i)->table)
                && !strncmp(line + 5, object(i)->table, (size_t)(end - line - 5)))
                known = 1;
        if (!known)
            fprintf(stderr, "\n  documented table not in the code: %s", line);
        CU_ASSERT(known);
    }
    fclose(f);
}

TR_SUITE(schema_doc,
         {"docs/schema.md lists the code's columns", test_doc_matches_code},
         {"docs/schema.md names no unknown table", test_every_table_documented})
