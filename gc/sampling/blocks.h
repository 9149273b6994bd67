/*
 * blocks.h: the table of sampled malloc'd blocks and its filter (malloc.c's
 * steps 3 and 4): which addresses hold a block whose sample is not ended
 * yet, found by the free that ends it.
 *
 * Model.  An entry per sampled block not freed yet: its address, an entry
 * number of its own (serial: a realloc finds its entry again by it) and
 * what malloc.c keeps with it (record, seq, pending, moving; this module
 * only carries them).  The entries are an open-addressing table on probe.h's
 * scheme (home from the address, half full at most, deletion by backward
 * shift: no tombstones).  Its capacity is a power of two, at least
 * SAMPLING_BLOCKS_MIN, set at a rebuild to 4 slots a block (the first
 * power of two >= 4 x blocks): a rebuild comes when an add would make it
 * more than half full, and at a trim (the owner's: at a major GC's end)
 * when it held less than 1/16 of its capacity all the time since the
 * last trim (peak: the most entries since then), cut to 4 slots a block
 * of that peak.  So the table follows the blocks it held since the last
 * trim, never the blocks sampled and freed before it
 * (test_fleet_memory_malloc_table.rb), at O(1) a block amortised; and a
 * program that fills and empties it between two trims (a batch of
 * blocks, freed, again and again) does not rebuild it each time.
 *
 * The filter: a byte per 16-byte granule of a 1 MiB window (the address's
 * bits 4 to 19: glibc's blocks are 16-byte aligned), counting the entries
 * that map to it and saturating at 255 (then it says "maybe" for good).
 * Every free asks it first (sampling_blocks_maybe: a shift, a mask, a
 * load, a test); only a non-zero byte goes on to the table.
 *
 * Invariants (sampling_blocks_verify): every entry is found from its home
 * (probe.h's invariant); no address has two entries; size is the number
 * of entries, size * 2 <= capacity and size <= peak; each entry's serial is non-zero
 * and at most `serials`; each filter byte is 255 or exactly the number of
 * entries that map to it.
 *
 * Pure C (malloc only, no Ruby).  No locking here: the owner serialises
 * every call but sampling_blocks_maybe (malloc.c: malloc_lock), which
 * reads the filter without it: a block's byte is set before the block is
 * handed out, so the thread that frees it sees it.  An add or a remove
 * may move any entry: a pointer to an entry lasts until the next one.
 */
#ifndef SAMPLING_BLOCKS_H
#define SAMPLING_BLOCKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLING_BLOCKS_FILTER_BITS 16
#define SAMPLING_BLOCKS_MIN         1024    /* slots */

/* An entry. */
struct sampling_block {
    uintptr_t ptr;          /* the block's address; 0: an empty slot */
    uint32_t record;        /* the owner's (malloc.c: record index) */
    uint32_t pending : 31;  /* the owner's (malloc.c: queued events naming it) */
    uint32_t moving : 1;    /* the owner's (malloc.c: a realloc of it is under way) */
    uint64_t seq;           /* the owner's (malloc.c: the record's sample) */
    uint64_t serial;        /* this entry's own number, from 1 */
};

struct sampling_blocks {
    uint8_t filter[1 << SAMPLING_BLOCKS_FILTER_BITS];
    struct sampling_block *slots;
    size_t capacity, size;
    size_t peak;            /* the most entries since the last trim */
    uint64_t serials;       /* entries made so far */
};

static inline size_t
sampling_blocks_filter_index(const void *ptr)
{
    return ((uintptr_t)ptr >> 4) & (((size_t)1 << SAMPLING_BLOCKS_FILTER_BITS) - 1);
}

/* Whether ptr may have an entry (false: it has none).  Without a lock. */
static inline bool
sampling_blocks_maybe(const struct sampling_blocks *t, const void *ptr)
{
    return t->filter[sampling_blocks_filter_index(ptr)] != 0;
}

/* ptr's entry, or NULL. */
struct sampling_block *sampling_blocks_find(struct sampling_blocks *t, const void *ptr);

/* A new entry for ptr (which has none), with a new serial and the owner's
 * fields zero; NULL without memory (the table unchanged). */
struct sampling_block *sampling_blocks_add(struct sampling_blocks *t, const void *ptr);

/* Removes an entry (the table keeps its capacity until a trim). */
void sampling_blocks_remove(struct sampling_blocks *t, struct sampling_block *b);

/* A table that held less than 1/16 of its capacity since the last trim
 * is rebuilt at 4 slots a block of that peak (without memory it stays);
 * the peak starts again from the entries now. */
void sampling_blocks_trim(struct sampling_blocks *t);

/* Moves from's entry (serial and owner's fields) to `to`, which has none;
 * returns it.  NULL without memory: the table unchanged. */
struct sampling_block *sampling_blocks_move(struct sampling_blocks *t, const void *from, const void *to);

/* Bytes held: the filter and the table. */
size_t sampling_blocks_memsize(const struct sampling_blocks *t);

/* The invariants above: NULL, or what is wrong.  O(capacity). */
const char *sampling_blocks_verify(const struct sampling_blocks *t);

/* Frees the table (the filter cleared). */
void sampling_blocks_free(struct sampling_blocks *t);

#endif
