/*
 * test_refset.c: refset_rekey (compaction moved the references) on random
 * sets and moves that merge keys, with and without memory for a new
 * table: either way every key is found with the sum of its old keys'
 * counts, and refset_verify holds.  (Without memory the table is rebuilt
 * in place; an earlier rebuild left keys cut off from their homes.)
 */
// links: refset.c
#include "check.h"
#include "refset.h"

#include <stdint.h>
#include <string.h>

/* calloc fails while fail_calloc is set (refset.c asks calloc for a new
 * table; the test's own memory comes from malloc) */
static int fail_calloc;
/* (through a volatile pointer: the compiler would turn malloc + memset
 * back into a call of calloc, this one) */
static void *(*volatile zero)(void *, int, size_t) = memset;
void *
calloc(size_t n, size_t size)
{
    if (fail_calloc || (size && n > SIZE_MAX / size)) return NULL;
    void *p = malloc(n * size);
    if (p) zero(p, 0, n * size);
    return p;
}

static uint64_t x = 88172645463325252ULL;
static uint64_t rnd(uint64_t n) { x ^= x << 13; x ^= x >> 7; x ^= x << 17; return x % n; }

enum { KEYS = 400 };
static uintptr_t shift, fold;
/* moves every key by shift; keys that agree modulo fold land on one */
static uintptr_t
moved(uintptr_t key, void *data)
{
    (void)data;
    return 8 * ((key / 8) % fold + 1) + shift;
}

int
main(void)
{
    static size_t model[KEYS + 1], expect[4 * KEYS];
    int found_ok = 1, verify_ok = 1, size_ok = 1;
    for (int round = 0; round < 2000; round++) {
        struct refset s = { 0 };
        memset(model, 0, sizeof(model));
        size_t n = 1 + rnd(120);
        for (size_t i = 0; i < n; i++) {
            size_t k = 1 + rnd(KEYS);
            refset_add(&s, 8 * k);
            model[k]++;
        }
        shift = 8 * rnd(300);
        fold = 1 + rnd(KEYS);
        memset(expect, 0, sizeof(expect));
        for (size_t k = 1; k <= KEYS; k++) expect[moved(8 * k, NULL) / 8] += model[k];
        fail_calloc = round % 2;
        refset_rekey(&s, moved, NULL);
        fail_calloc = 0;
        const char *err = refset_verify(&s);
        if (err && verify_ok) fprintf(stderr, "round %d (%s memory): %s\n", round, round % 2 ? "no" : "with", err);
        if (err) verify_ok = 0;
        size_t distinct = 0;
        for (size_t k = 1; k < 4 * KEYS; k++) {
            if (expect[k]) distinct++;
            if (refset_count(&s, 8 * k) != expect[k]) found_ok = 0;
        }
        if (distinct != s.size) size_ok = 0;
        refset_free(&s);
    }
    CHECK(verify_ok, "refset_verify holds after every rekey");
    CHECK(found_ok, "every moved key is found with its merged count");
    CHECK(size_ok, "size is the number of distinct moved keys");
    return check_summary();
}
