/*
 * invariant.h: SAMPLING_ASSERT, the library's one assertion, for the
 * invariants each header states.
 *
 *   unit tests (SAMPLING_UNIT_TEST)        always on: prints and aborts
 *   the library built with --enable-checks on: rb_bug (SAMPLING_CHECKS,
 *                                          with GC_ASSERT on as well)
 *   the library otherwise                  off: the condition is not
 *                                          evaluated
 *
 * Never put work the program needs inside the condition.
 */
#ifndef SAMPLING_INVARIANT_H
#define SAMPLING_INVARIANT_H

#if defined(SAMPLING_UNIT_TEST)
# include <stdio.h>
# include <stdlib.h>
# define SAMPLING_ASSERT(cond) \
    ((cond) ? (void)0 : (fprintf(stderr, "%s:%d: assertion failed: %s\n", __FILE__, __LINE__, #cond), abort()))
#elif defined(SAMPLING_CHECKS)
void rb_bug(const char *fmt, ...);
# define SAMPLING_ASSERT(cond) \
    ((cond) ? (void)0 : rb_bug("sampling: %s:%d: assertion failed: %s", __FILE__, __LINE__, #cond))
#else
# define SAMPLING_ASSERT(cond) ((void)0)
#endif

#endif
