/* blocks.c: see blocks.h. */
#include "blocks.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

/* (glibc's blocks are 16-byte aligned: the bits above those) */
static inline size_t
block_home(uintptr_t ptr, size_t mask)
{
    return probe_home(ptr >> 4, mask);
}

/* 4 slots a block, so that the next rebuild is a quarter of the table's
 * adds (or removes) away: O(1) a block, amortised. */
static size_t
capacity_for(size_t blocks)
{
    size_t capacity = SAMPLING_BLOCKS_MIN;
    while (capacity < 4 * (blocks + 1)) capacity *= 2;
    return capacity;
}

/* false without memory (the table unchanged). */
static bool
rebuild(struct sampling_blocks *t, size_t capacity)
{
    struct sampling_block *slots = calloc(capacity, sizeof(*slots));
    if (!slots) return false;
    for (size_t i = 0; i < t->capacity; i++) {
        const struct sampling_block *b = &t->slots[i];
        if (!b->ptr) continue;
        size_t j = block_home(b->ptr, capacity - 1);
        while (slots[j].ptr) j = probe_next(j, capacity - 1);
        slots[j] = *b;
    }
    free(t->slots);
    t->slots = slots;
    t->capacity = capacity;
    return true;
}

struct sampling_block *
sampling_blocks_find(struct sampling_blocks *t, const void *ptr)
{
    if (!t->capacity || !ptr) return NULL;
    size_t mask = t->capacity - 1;
    for (size_t i = block_home((uintptr_t)ptr, mask); t->slots[i].ptr; i = probe_next(i, mask)) {
        if (t->slots[i].ptr == (uintptr_t)ptr) return &t->slots[i];
    }
    return NULL;
}

/* A new entry for ptr, every field but ptr zero. */
static struct sampling_block *
insert(struct sampling_blocks *t, const void *ptr)
{
    if (probe_full(t->size, t->capacity) && !rebuild(t, capacity_for(t->size))) return NULL;
    size_t mask = t->capacity - 1;
    size_t i = block_home((uintptr_t)ptr, mask);
    while (t->slots[i].ptr) i = probe_next(i, mask);
    struct sampling_block *b = &t->slots[i];
    memset(b, 0, sizeof(*b));
    b->ptr = (uintptr_t)ptr;
    if (++t->size > t->peak) t->peak = t->size;
    uint8_t *f = &t->filter[sampling_blocks_filter_index(ptr)];
    if (*f < UINT8_MAX) (*f)++;
    return b;
}

struct sampling_block *
sampling_blocks_add(struct sampling_blocks *t, const void *ptr)
{
    struct sampling_block *b = insert(t, ptr);
    if (b) b->serial = ++t->serials;
    return b;
}

static bool slot_empty(void *t, size_t i) { return ((struct sampling_blocks *)t)->slots[i].ptr == 0; }
static size_t slot_home(void *t, size_t i) { struct sampling_blocks *b = t; return block_home(b->slots[i].ptr, b->capacity - 1); }
static void slot_move(void *t, size_t from, size_t to) { struct sampling_blocks *b = t; b->slots[to] = b->slots[from]; }
static void slot_clear(void *t, size_t i) { struct sampling_blocks *b = t; memset(&b->slots[i], 0, sizeof(b->slots[i])); }
static const struct probe_ops blocks_probe_ops = { slot_empty, slot_home, slot_move, slot_clear };

void
sampling_blocks_remove(struct sampling_blocks *t, struct sampling_block *b)
{
    uint8_t *f = &t->filter[sampling_blocks_filter_index((const void *)b->ptr)];
    if (*f < UINT8_MAX) (*f)--;
    probe_delete(t, (size_t)(b - t->slots), t->capacity - 1, &blocks_probe_ops);
    t->size--;
}

void
sampling_blocks_trim(struct sampling_blocks *t)
{
    if (t->capacity > SAMPLING_BLOCKS_MIN && t->peak * 16 < t->capacity) rebuild(t, capacity_for(t->peak));
    t->peak = t->size;
}

struct sampling_block *
sampling_blocks_move(struct sampling_blocks *t, const void *from, const void *to)
{
    /* the new entry first: without memory, nothing has changed */
    struct sampling_block *b = insert(t, to);
    if (!b) return NULL;
    struct sampling_block *old = sampling_blocks_find(t, from);
    b->record = old->record;
    b->pending = old->pending;
    b->moving = old->moving;
    b->seq = old->seq;
    b->serial = old->serial;
    sampling_blocks_remove(t, old);     /* (may move b) */
    return sampling_blocks_find(t, to);
}

size_t
sampling_blocks_memsize(const struct sampling_blocks *t)
{
    return sizeof(t->filter) + t->capacity * sizeof(*t->slots);
}

const char *
sampling_blocks_verify(const struct sampling_blocks *t)
{
    if (t->capacity & (t->capacity - 1)) return "the table's capacity is not a power of two";
    if (t->size && t->size * 2 > t->capacity) return "the table is more than half full";
    if (t->size > t->peak) return "the table holds more than its peak";
    uint8_t *counts = calloc(sizeof(t->filter), 1);
    if (!counts) return NULL;   /* (nothing to count with: not checked) */
    const char *err = NULL;
    size_t n = 0;
    for (size_t i = 0; i < t->capacity && !err; i++) {
        const struct sampling_block *b = &t->slots[i];
        if (!b->ptr) continue;
        n++;
        uint8_t *c = &counts[sampling_blocks_filter_index((const void *)b->ptr)];
        if (*c < UINT8_MAX) (*c)++;
        /* (finds the first entry from the home: a second entry for the
         * address, or one cut off from its home, is not it) */
        if (sampling_blocks_find((struct sampling_blocks *)t, (const void *)b->ptr) != b) {
            err = "a block's entry is not the one found for it";
        }
        else if (!b->serial || b->serial > t->serials) {
            err = "an entry's serial was never given";
        }
    }
    if (!err && n != t->size) err = "the table's size != its entries";
    for (size_t i = 0; i < sizeof(t->filter) && !err; i++) {
        if (t->filter[i] != UINT8_MAX && t->filter[i] != counts[i]) err = "a filter byte != the sampled blocks that map to it";
    }
    free(counts);
    return err;
}

void
sampling_blocks_free(struct sampling_blocks *t)
{
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
