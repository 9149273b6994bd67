/*
 * probe.h: linear probing, the one scheme of the library's open-addressing
 * tables (refset.c's references, sites.c's sites, pprof.c's interned
 * strings, functions and locations).
 *
 * Model.  A table has a power-of-two capacity and is kept at most half
 * full (probe_full); an entry's home slot comes from its hash, and a
 * lookup walks from home to the first empty slot.  Deletion leaves no
 * tombstone: it shifts the later entries of the run back into the hole
 * (probe_delete), so every entry stays reachable from its home:
 *
 *   invariant: for every entry at slot i with home h, no slot in the
 *              cyclic range [h, i) is empty.
 *
 * Pure C, no allocation, no locking: each table's owner serialises it.
 */
#ifndef SAMPLING_PROBE_H
#define SAMPLING_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The slot after i. */
static inline size_t
probe_next(size_t i, size_t mask)
{
    return (i + 1) & mask;
}

/* A home slot for a hash: Fibonacci hashing, so that keys close together
 * (object addresses, small ids) spread over the high bits. */
static inline size_t
probe_home(uint64_t hash, size_t mask)
{
    return (size_t)((hash * UINT64_C(0x9e3779b97f4a7c15)) >> 32) & mask;
}

/* Whether one more entry would make the table more than half full. */
static inline bool
probe_full(size_t size, size_t capacity)
{
    return (size + 1) * 2 > capacity;
}

/* After a hole at `hole`, the entry at slot i whose home is `home` must
 * stay where it is iff home lies in the cyclic range (hole, i]: moving it
 * into the hole would put it before its home. */
static inline bool
probe_entry_stays(size_t hole, size_t i, size_t home)
{
    return hole <= i ? (hole < home && home <= i) : (hole < home || home <= i);
}

/* A table, as probe_delete sees it. */
struct probe_ops {
    bool (*empty)(void *table, size_t i);
    size_t (*home)(void *table, size_t i);          /* of the entry at slot i */
    void (*move)(void *table, size_t from, size_t to);
    void (*clear)(void *table, size_t i);
};

/* Removes the entry at slot `hole` (backward-shift deletion). */
static inline void
probe_delete(void *table, size_t hole, size_t mask, const struct probe_ops *ops)
{
    for (size_t i = hole;;) {
        i = probe_next(i, mask);
        if (ops->empty(table, i)) break;
        if (probe_entry_stays(hole, i, ops->home(table, i))) continue;
        ops->move(table, i, hole);
        hole = i;
    }
    ops->clear(table, hole);
}

#endif
