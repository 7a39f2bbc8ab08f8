/* The CUnit runner: registers every TR_SUITE and exits non-zero on any failure. */
#include <CUnit/Basic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "tests/unit/unit.h"

#define MAX_SUITES 128
static struct { const char *name; CU_TestInfo *tests; } suites[MAX_SUITES];
static int nsuites;
static char tmpdir[256];

void tr_unit_add_suite(const char *name, CU_TestInfo *tests)
{
    if (nsuites < MAX_SUITES)
        suites[nsuites++].name = name, suites[nsuites - 1].tests = tests;
}

const char *tr_unit_traces_dir(void)
{
    static const char *dir;
    static int checked;
    if (!checked) {
        checked = 1;
        const char *env = getenv("TR_SHARED_TRACES");
        const char *cand = env && *env ? env : "../shared/traces";
        struct stat sb;
        if (stat(cand, &sb) == 0 && S_ISDIR(sb.st_mode))
            dir = cand;
    }
    return dir;
}

int64_t tr_unit_query_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

const char *tr_unit_tmpdir(void)
{
    if (!tmpdir[0]) {
        snprintf(tmpdir, sizeof tmpdir, "/tmp/tracekit-unit.XXXXXX");
        if (!mkdtemp(tmpdir))
            return "/tmp";
    }
    return tmpdir;
}

static void cleanup(void)
{
    if (tmpdir[0]) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    }
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : NULL;
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 2;
    atexit(cleanup);
    for (int i = 0; i < nsuites; i++) {
        if (only && strcmp(only, suites[i].name) != 0)
            continue;
        CU_SuiteInfo info[] = {{suites[i].name, NULL, NULL, NULL, NULL, suites[i].tests},
                               CU_SUITE_INFO_NULL};
        if (CU_register_suites(info) != CUE_SUCCESS) {
            fprintf(stderr, "cannot register suite %s: %s\n", suites[i].name, CU_get_error_msg());
            return 2;
        }
    }
    if (!tr_unit_traces_dir())
        printf("note: ../shared/traces not found: tests that use the shared traces are skipped\n");
    CU_basic_set_mode(CU_BRM_NORMAL);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    unsigned run = CU_get_number_of_tests_run();
    CU_cleanup_registry();
    return failed || run == 0 ? 1 : 0;
}
