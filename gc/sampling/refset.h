/*
 * refset.h: a counted set of object references (VALUEs as uintptr_t).
 *
 * The sites hold their classes, iseqs and method entries weakly (sites.h):
 * nothing here is marked.  Many sites share a few of them, so the end of
 * each marking asks which references died once per distinct reference,
 * over this set, not over the sites (sampling_sites_check_refs), and
 * compaction moves them here (refset_rekey).  Each is added once per
 * holder (refset_add) and leaves when its last holder goes
 * (refset_remove).
 *
 * Open addressing (probe.h: linear probing, backward-shift deletion, at
 * most half full).  0 is not a valid key.
 *
 * Invariants (refset_verify): every key sits in the probe run from its
 * home (probe.h); size is the number of keys; every key's count >= 1.
 *
 * Memory comes from malloc only (never the Ruby heap, never a GC).  No
 * locking: the owner serialises access.
 */
#ifndef SAMPLING_REFSET_H
#define SAMPLING_REFSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct refset_entry {
    uintptr_t key;      /* 0: empty */
    size_t count;       /* holders */
};

struct refset {
    struct refset_entry *entries;
    size_t capacity;    /* a power of two, or 0 */
    size_t size;        /* distinct keys */
};

/* Counts one more holder of key.  False only when memory runs out (the
 * set is unchanged then). */
bool refset_add(struct refset *set, uintptr_t key);

/* One holder of key is gone; the key leaves with its last holder. */
void refset_remove(struct refset *set, uintptr_t key);

/* The holders of key (0 if absent). */
size_t refset_count(const struct refset *set, uintptr_t key);

/* Replaces every key k by map(k, data) (compaction moved objects), merging
 * counts of keys that map to one. */
void refset_rekey(struct refset *set, uintptr_t (*map)(uintptr_t key, void *data), void *data);

void refset_free(struct refset *set);

/* Checks the invariants above; NULL or a message. */
const char *refset_verify(const struct refset *set);

/* Bytes the set holds (its entries). */
static inline size_t
refset_memsize(const struct refset *set)
{
    return set->capacity * sizeof(*set->entries);
}

#define REFSET_FOREACH(set, e) \
    for (struct refset_entry *e = (set)->entries; e && e < (set)->entries + (set)->capacity; e++) \
        if (e->key)

#endif
