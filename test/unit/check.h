/*
 * check.h: the few macros the C unit tests need.  Each CHECK is one test
 * assertion; a test binary ends with check_summary(), which prints
 * "N passed, N failed" (read by test/run) and gives the exit status.
 */
#ifndef SAMPLING_TEST_CHECK_H
#define SAMPLING_TEST_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static unsigned long check_passed, check_failed;

#define CHECK(cond, ...) do { \
    if (cond) { check_passed++; } \
    else { \
        check_failed++; \
        fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
    } \
} while (0)

/* For invariants checked millions of times: count one assertion per call
 * site run, but stop at the first failure so the log stays readable. */
#define REQUIRE(cond, ...) do { \
    if (!(cond)) { \
        check_failed++; \
        fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond); \
        fprintf(stderr, __VA_ARGS__); \
        fputc('\n', stderr); \
        return 0; \
    } \
} while (0)

static inline int
check_summary(void)
{
    printf("%lu passed, %lu failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}

#endif
