/*
 * labels.h: label sets ("endpoint" => "GET /users", ...) interned to small
 * integer ids, so that the sampling path carries one word per sample.
 *
 * Model.  `with_labels` (labels_api.c) merges its labels into the label
 * set of the code around it, interns the result in the process's table
 * (labels_fiber.h) and keeps the id in the Fiber storage (Fiber[], which
 * new fibers and threads inherit); a sample reads the id
 * (sampling_labels_current) and its site keys on it (sites.h), so
 * labelled samples form their own sites with their own totals.  Id 0 is
 * the empty set.
 *
 * A set is stored once, as its canonical text: the pairs sorted by key,
 * each "key\0value\0".  Sets are never freed (sites and fibers hold ids
 * for as long as the process runs), so at most SAMPLING_LABELS_MAX are
 * kept; a new set past that is not interned (the caller counts a drop and
 * keeps the enclosing set).
 *
 * Invariants (sampling_labels_verify): sets[i] has id i + 1 (sets[] is
 * filled exactly up to count); the table holds every id once, in the
 * probe run from the hash of its text (probe.h); a set's text is
 * canonical and its hash is the hash of that text;
 * count <= SAMPLING_LABELS_MAX.
 *
 * Pure C, malloc only.  No locking here: labels_fiber.c serialises writers;
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

/* The label keys every profile writes itself (profile.c, retention_view.c):
 * with_labels refuses them, so that a user's label never mixes into them.
 * A new label key a profile writes goes here. */
#define SAMPLING_LABELS_RESERVED        "class", "type", "memory", "retention"
#define SAMPLING_LABELS_RESERVED_TEXT   "class, type, memory and retention"

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

/* Checks the invariants above; NULL or a message.  O(the table): for
 * --enable-checks (labels_api.c, after each new set) and the tests. */
const char *sampling_labels_verify(const struct sampling_labels *t);

/* Bytes the table holds: its two arrays (fixed at first use: 64 KiB)
 * and each set (at most SAMPLING_LABELS_MAX sets of at most
 * SAMPLING_LABELS_TEXT bytes of text each, 16 more a set). */
size_t sampling_labels_memsize(const struct sampling_labels *t);

/* A set's pairs: for (p = s->text, i = 0; i < s->npairs; i++, p = value + vlen + 1)
 * with key p and value p + strlen(p) + 1. */

#endif
