/*
 * labels.h: label sets ("endpoint" => "GET /users", ...) interned to small
 * integer ids, so that the sampling path carries one word per sample.
 *
 * Model.  `with_labels` (labels_api.c) merges its labels into the label
 * set of the code around it, interns the result here and keeps the id in
 * the Fiber storage (Fiber[], which new fibers and threads inherit); a
 * sample reads the id (sampling_labels_current) and its site keys on it
 * (sites.h), so labelled samples form their own sites with their own
 * totals.  Id 0 is the empty set.
 *
 * A set is stored once, as its canonical text: the pairs sorted by key,
 * each "key\0value\0".  Sets are never freed (sites and fibers hold ids
 * for as long as the process runs), so at most SAMPLING_LABELS_MAX are
 * kept; a new set past that is not interned (the caller counts a drop and
 * keeps the enclosing set).
 *
 * Invariants: sets[i] has id i + 1; the table holds every id once, at its
 * probe run from the hash of its text; count <= SAMPLING_LABELS_MAX.
 *
 * Pure C, malloc only.  No locking here: labels_api.c serialises writers;
 * readers may read a set whose id they were given without a lock, as
 * sets[] never moves (allocated whole at first use) and an entry is
 * written before its id is published.
 */
#ifndef SAMPLING_LABELS_H
#define SAMPLING_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLING_LABELS_MAX     4096    /* label sets interned per process */
#define SAMPLING_LABELS_PAIRS   16      /* pairs in one set */
#define SAMPLING_LABELS_TEXT    4096    /* bytes of one set's canonical text */

struct sampling_label_set {
    uint32_t npairs;
    uint32_t len;           /* of text */
    uint64_t hash;
    char text[];            /* "key\0value\0" * npairs, sorted by key */
};

struct sampling_labels {
    struct sampling_label_set **sets;   /* [SAMPLING_LABELS_MAX], sets[id - 1] */
    uint32_t *slots;                    /* open addressing: ids, 0 empty */
    size_t count;
    uint64_t dropped;                   /* sets not interned: past the cap, or no memory */
};

/* The id of the set with this canonical text (npairs pairs), interned now
 * if new; 0 when it cannot be kept (counted in dropped). */
uint32_t sampling_labels_intern(struct sampling_labels *t, const char *text, uint32_t len, uint32_t npairs);

/* The set of id (1 .. count), or NULL. */
const struct sampling_label_set *sampling_labels_get(const struct sampling_labels *t, uint32_t id);

void sampling_labels_free(struct sampling_labels *t);

/* The label set id of the running fiber (ec: its execution context, as
 * the stack capture found it; NULL at boot): 0 unless with_labels is
 * active there (or in the fiber or thread that started it).  On the
 * sampling path: reads a Fixnum from the Fiber storage, in place for a
 * small one (labels_api.c), allocates nothing, calls no Ruby method;
 * costs a flag test while with_labels was never called.
 * (sampling_labels_read is in labels_api.c, which sees the VM.) */
extern bool sampling_labels_on;
uint32_t sampling_labels_read(const void *ec);

static inline uint32_t
sampling_labels_current(const void *ec)
{
    return __builtin_expect(sampling_labels_on, 0) && ec ? sampling_labels_read(ec) : 0;
}

/* A set's pairs: for (p = s->text, i = 0; i < s->npairs; i++, p = value + vlen + 1)
 * with key p and value p + strlen(p) + 1. */

#endif
