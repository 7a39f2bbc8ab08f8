/*
 * unit.h - self-registering CUnit suites.
 *
 * Each tests/unit/test_*.c file declares its suite with TR_SUITE(name, tests...);
 * a constructor records it and the runner (runner.c) registers every recorded
 * suite, so adding a test file needs no edit elsewhere.  Fixture paths:
 * TR_SHARED_TRACES is the shared third-party trace directory (tests that need
 * it skip when it is absent).
 */
#ifndef TR_TESTS_UNIT_H
#define TR_TESTS_UNIT_H

#include <CUnit/CUnit.h>
#include <sqlite3.h>
#include <stdint.h>

void tr_unit_add_suite(const char *name, CU_TestInfo *tests);

#define TR_SUITE(name, ...)                                                    \
    static CU_TestInfo name##_tests[] = {__VA_ARGS__, CU_TEST_INFO_NULL};      \
    __attribute__((constructor)) static void name##_register(void)            \
    {                                                                          \
        tr_unit_add_suite(#name, name##_tests);                                \
    }

/* Directory of the shared traces, or NULL when absent. */
const char *tr_unit_traces_dir(void);
/* The first column of the first row of sql as an integer; -1 when it fails. */
int64_t tr_unit_query_int(sqlite3 *db, const char *sql);

/* A fresh temporary directory for this run (removed at exit). */
const char *tr_unit_tmpdir(void);

#endif
