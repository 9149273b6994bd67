/*
 * probe.h: linear probing, the one scheme of the library's open-addressing
 * tables (refset.c's references, sites.c's sites, blocks.c's sampled
 * malloc'd blocks, labels.c's label sets, retention.c's targets, and
 * intern.h's maps and pprof.c's and addresses.c's string and frame
 * tables), and the constants of the library's hashes, named here once.
 *
 * Model.  A table has a power-of-two capacity and is kept at most half
 * full (probe_full); an entry's home slot comes from its hash, and a
 * lookup walks from home to the first empty slot.  Deletion leaves no
 * tombstone: it shifts the later entries of the run back into the hole
 * (probe_delete), so every entry stays reachable from its home:
 *
 *   invariant: for every entry at slot i with home h, no slot in the
 *              cyclic range [h, i) is empty.  (probe_verify checks it.)
 *
 * (Tables that never delete use only the first half: probe_home or their
 * own mix of a hash, probe_next, probe_full.)
 *
 * Pure C, no allocation, no locking: each table's owner serialises it.
 */
#ifndef SAMPLING_PROBE_H
#define SAMPLING_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 2^64 / the golden ratio, odd: a multiply by it carries every bit of
 * a key into the high bits of the product (Fibonacci hashing).  Also
 * splitmix64's step (gap.c) and the spacing of per-thread seeds. */
#define PROBE_GOLDEN        UINT64_C(0x9e3779b97f4a7c15)

/* FNV-1a, 64 bits: the hash of byte strings (and the start of the stack
 * hash, sites.h). */
#define PROBE_FNV_OFFSET    UINT64_C(0xcbf29ce484222325)
#define PROBE_FNV_PRIME     UINT64_C(0x100000001b3)

/* h, with len bytes hashed in (FNV-1a; start from PROBE_FNV_OFFSET). */
static inline uint64_t
probe_fnv1a(uint64_t h, const void *bytes, size_t len)
{
    const uint8_t *s = bytes;
    for (size_t i = 0; i < len; i++) h = (h ^ s[i]) * PROBE_FNV_PRIME;
    return h;
}

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
    return (size_t)((hash * PROBE_GOLDEN) >> 32) & mask;
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

/* Checks a whole table against the invariant above, and that it holds
 * `size` entries in a power-of-two capacity at most half full: NULL or a
 * message.  Uses ops->empty and ops->home only.  O(capacity x longest
 * run): for --enable-checks and the unit tests, never on a hot path. */
static inline const char *
probe_verify(const void *table, size_t capacity, size_t size, const struct probe_ops *ops)
{
    void *t = (void *)table;    /* (ops take a mutable table; these two only read it) */
    if (capacity & (capacity - 1)) return "a probe table's capacity is not a power of two";
    if (size * 2 > capacity) return "a probe table is more than half full";
    size_t entries = 0, mask = capacity - 1;
    for (size_t i = 0; i < capacity; i++) {
        if (ops->empty(t, i)) continue;
        entries++;
        for (size_t j = ops->home(t, i) & mask; j != i; j = probe_next(j, mask)) {
            if (ops->empty(t, j)) return "a probe table's entry is not in the probe run from its home";
        }
    }
    return entries == size ? NULL : "a probe table's size is not its number of entries";
}

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
