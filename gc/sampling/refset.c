/* refset.c: see refset.h. */
#include "refset.h"
#include "probe.h"

#include <stdlib.h>

/* (object addresses are 8-byte aligned and close together: probe_home
 * spreads them) */
static inline size_t
slot_of(uintptr_t key, size_t capacity)
{
    return probe_home(key, capacity - 1);
}

static struct refset_entry *
find(const struct refset *set, uintptr_t key)
{
    if (!set->capacity) return NULL;
    for (size_t i = slot_of(key, set->capacity);; i = probe_next(i, set->capacity - 1)) {
        struct refset_entry *e = &set->entries[i];
        if (e->key == key) return e;
        if (e->key == 0) return NULL;
    }
}

static void
insert_fresh(struct refset_entry *entries, size_t capacity, uintptr_t key, size_t count)
{
    size_t i = slot_of(key, capacity);
    while (entries[i].key) i = probe_next(i, capacity - 1);
    entries[i].key = key;
    entries[i].count = count;
}

static bool
grow(struct refset *set)
{
    size_t capacity = set->capacity ? set->capacity * 2 : 64;
    struct refset_entry *entries = calloc(capacity, sizeof(*entries));
    if (!entries) return false;
    for (size_t i = 0; i < set->capacity; i++) {
        if (set->entries[i].key) insert_fresh(entries, capacity, set->entries[i].key, set->entries[i].count);
    }
    free(set->entries);
    set->entries = entries;
    set->capacity = capacity;
    return true;
}

static bool entry_empty(void *t, size_t i) { return ((struct refset *)t)->entries[i].key == 0; }
static size_t entry_home(void *t, size_t i) { struct refset *s = t; return slot_of(s->entries[i].key, s->capacity); }
static void entry_move(void *t, size_t from, size_t to) { struct refset *s = t; s->entries[to] = s->entries[from]; }
static void entry_clear(void *t, size_t i) { struct refset *s = t; s->entries[i].key = 0; s->entries[i].count = 0; }
static const struct probe_ops refset_probe_ops = { entry_empty, entry_home, entry_move, entry_clear };

bool
refset_add(struct refset *set, uintptr_t key)
{
    struct refset_entry *e = find(set, key);
    if (e) {
        e->count++;
        return true;
    }
    if (probe_full(set->size, set->capacity) && !grow(set)) return false;
    insert_fresh(set->entries, set->capacity, key, 1);
    set->size++;
    return true;
}

void
refset_remove(struct refset *set, uintptr_t key)
{
    struct refset_entry *e = find(set, key);
    if (!e) return;
    if (--e->count > 0) return;

    probe_delete(set, (size_t)(e - set->entries), set->capacity - 1, &refset_probe_ops);
    set->size--;
}

size_t
refset_count(const struct refset *set, uintptr_t key)
{
    struct refset_entry *e = find(set, key);
    return e ? e->count : 0;
}

/* Out of memory in refset_rekey: the keys rewritten in place, the table
 * rebuilt within itself.  An entry is placed (PLACED in its count) at the
 * first slot of its run from its home that holds no placed entry, taking
 * the place of the unplaced entry there (swapped into the slot being
 * processed, and processed next): placed entries never move again, so
 * every slot between a placed entry's home and its slot stays full.
 * Keys that map to one merge their counts. */
#define PLACED ((size_t)1 << (sizeof(size_t) * 8 - 1))

static void
rekey_in_place(struct refset *set, uintptr_t (*map)(uintptr_t key, void *data), void *data)
{
    struct refset_entry *t = set->entries;
    size_t mask = set->capacity - 1;
    for (size_t i = 0; i <= mask; i++) if (t[i].key) t[i].key = map(t[i].key, data);
    for (size_t i = 0; i <= mask; i++) {
        while (t[i].key && !(t[i].count & PLACED)) {
            size_t j = slot_of(t[i].key, set->capacity);
            while (t[j].key && (t[j].count & PLACED) && t[j].key != t[i].key) j = probe_next(j, mask);
            if (t[j].key == t[i].key && (t[j].count & PLACED)) {     /* the same key, placed: merge */
                t[j].count += t[i].count;
                t[i].key = 0;
                t[i].count = 0;
                set->size--;
            }
            else if (j == i) {
                t[i].count |= PLACED;
            }
            else {      /* j is empty or holds an unplaced entry: swap */
                struct refset_entry e = t[j];
                t[j] = t[i];
                t[j].count |= PLACED;
                t[i] = e;
            }
        }
    }
    for (size_t i = 0; i <= mask; i++) t[i].count &= ~PLACED;
}

void
refset_rekey(struct refset *set, uintptr_t (*map)(uintptr_t key, void *data), void *data)
{
    if (!set->capacity) return;
    struct refset_entry *old = set->entries;
    size_t capacity = set->capacity;
    struct refset_entry *entries = calloc(capacity, sizeof(*entries));
    if (!entries) {
        rekey_in_place(set, map, data);
        return;
    }
    set->entries = entries;
    set->size = 0;
    for (size_t i = 0; i < capacity; i++) {
        if (!old[i].key) continue;
        uintptr_t key = map(old[i].key, data);
        struct refset_entry *e = find(set, key);
        if (e) e->count += old[i].count;
        else {
            insert_fresh(entries, capacity, key, old[i].count);
            set->size++;
        }
    }
    free(old);
}

void
refset_free(struct refset *set)
{
    free(set->entries);
    set->entries = NULL;
    set->capacity = set->size = 0;
}

const char *
refset_verify(const struct refset *set)
{
    if (!set->capacity) return set->size || set->entries ? "an empty refset holds something" : NULL;
    const char *err = probe_verify(set, set->capacity, set->size, &refset_probe_ops);
    if (err) return err;
    REFSET_FOREACH(set, e) {
        if (e->count == 0) return "a refset key has no holder";
    }
    return NULL;
}
