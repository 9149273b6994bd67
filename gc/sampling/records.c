/* records.c: see records.h for the model and invariants.  (Over 450 lines:
 * the record table, the live list, the dead queue, the lifetimes
 * and the peak's spill are one structure: every path that ends a record
 * goes through release_slot and live_forget, and sampling_records_verify
 * checks their sums together; split, each part would need the others'
 * internals.) */
#include "records.h"
#include "invariant.h"

#include <stdlib.h>
#include <string.h>

/* ---- records ---- */

_Static_assert(sizeof(struct sampling_record) == 64, "a record is one cache line");

/* The owner's hook: live[]'s obj is no longer followed (found dead, or its
 * record dropped while it lives).  sampling.c announces it (usdt.h). */
#ifndef SAMPLING_RECORD_UNFOLLOWED
#define SAMPLING_RECORD_UNFOLLOWED(obj) ((void)0)
#endif

void
sampling_records_init(struct sampling_records *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max;
    r->sites.max = max;
    r->next_seq = 1;
    r->window_seq = UINT64_MAX;
}

/* Growth, to `capacity` entries.  On failure the arrays keep their old
 * capacity (and contents). */
static bool
items_grow(struct sampling_records *r, size_t capacity)
{
    struct sampling_record *items = realloc(r->items, capacity * sizeof(*items));
    if (!items) return false;
    r->items = items;
    uint32_t *free_slots = realloc(r->free_slots, capacity * sizeof(*free_slots));
    if (!free_slots) return false;
    r->free_slots = free_slots;
    r->capacity = capacity;
    return true;
}

static bool
live_grow(struct sampling_records *r, size_t capacity)
{
    struct sampling_live *live = realloc(r->live, capacity * sizeof(*live));
    if (!live) return false;
    r->live = live;
    r->live_capacity = capacity;
    return true;
}

/* The dead queue is a ring whose capacity is a power of two. */
static inline size_t
dead_at(const struct sampling_records *r, size_t i)
{
    return (r->dead_head + i) & (r->dead_capacity - 1);
}

static bool
dead_grow(struct sampling_records *r, size_t capacity)
{
    size_t old = r->dead_capacity;
    uint32_t *dead = realloc(r->dead, capacity * sizeof(*dead));
    if (!dead) return false;
    /* A ring that ran past the old end went on from 0: that part moves
     * past the old end, where it now continues. */
    size_t end = r->dead_head + r->ndead;
    if (end > old) memcpy(dead + old, dead, (end - old) * sizeof(*dead));
    r->dead = dead;
    r->dead_capacity = capacity;
    return true;
}

static inline size_t
doubled(size_t capacity)
{
    return capacity ? capacity * 2 : 1024;
}

bool
sampling_records_reserve(struct sampling_records *r)
{
    size_t n = r->max < SAMPLING_RESERVE_MAX ? r->max : SAMPLING_RESERVE_MAX, pow2 = 1024;
    while (pow2 < n) pow2 *= 2;
    return (n <= r->capacity || items_grow(r, n)) && (n <= r->live_capacity || live_grow(r, n)) &&
        (pow2 <= r->dead_capacity || dead_grow(r, pow2));
}

static bool
ensure_capacity(struct sampling_records *r)
{
    if (r->used < r->capacity) return true;
    size_t capacity = doubled(r->capacity);
    return items_grow(r, capacity < r->max ? capacity : r->max);
}

static inline bool
dead_push(struct sampling_records *r, uint32_t index)
{
    if (r->ndead == r->dead_capacity && !dead_grow(r, doubled(r->dead_capacity))) return false;
    r->dead[dead_at(r, r->ndead)] = index;
    r->ndead++;
    return true;
}

/* A member of the peak's live set loses its record: what the peak needs
 * of it stays in the spill. */
static void
peak_spill(struct sampling_records *r, const struct sampling_record *rec)
{
    struct sampling_peak_set *p = &r->peak;
    if (p->nspill == p->spill_capacity) {
        size_t capacity = doubled(p->spill_capacity);
        struct sampling_peak_entry *spill = realloc(p->spill, capacity * sizeof(*spill));
        if (!spill) {
            p->lost++;
            return;
        }
        p->spill = spill;
        p->spill_capacity = capacity;
    }
    p->spill[p->nspill++] = (struct sampling_peak_entry){ rec->site->id, rec->weight, sampling_record_size(rec) };
}

static void
release_slot(struct sampling_records *r, uint32_t index)
{
    struct sampling_record *rec = &r->items[index];
    if (sampling_record_in_peak(r, rec)) peak_spill(r, rec);
    sampling_site_unuse(&r->sites, rec->site);
    rec->seq = 0;
    r->free_slots[r->nfree++] = index;
}

/* A slot for a new record: a never used one, a free one, or the oldest
 * dead record's. */
static uint32_t
take_slot(struct sampling_records *r)
{
    /* a fresh slot or a free one while fewer than max are used (the high
     * water `used` passes max only after max was lowered) */
    if (!r->nfree) {
        if (r->used < r->max && ensure_capacity(r)) return (uint32_t)r->used++;
    }
    else if (r->used - r->nfree < r->max) {
        return r->free_slots[--r->nfree];
    }
    if (r->ndead && !r->reading) {
        uint32_t index = r->dead[r->dead_head];
        r->dead_head = dead_at(r, 1);
        r->ndead--;
        release_slot(r, index);
        r->evicted++;
        return r->free_slots[--r->nfree];
    }
    return SAMPLING_NONE;
}

/* A new record's gc_word: live, not promoted.  (Built in a temporary,
 * so no bit layout is assumed; the compiler folds it to shifts.) */
static inline uint64_t
gc_word(size_t allocated_gc, uint8_t heap, uint64_t size)
{
    struct sampling_record t;
    t.gc_word = 0;
    t.allocated_gc = allocated_gc;
    t.heap = heap;
    t.size_hi = size >> 32;
    return t.gc_word;
}

/* Moves live[from] to live[to], keeping its record's live_pos true. */
static inline void
live_move(struct sampling_records *r, size_t from, size_t to)
{
    r->live[to] = r->live[from];
    r->items[r->live[to].record].live_pos = (uint32_t)to;
}

static bool
live_push(struct sampling_records *r, uintptr_t obj, uint32_t index, bool block)
{
    if (r->nlive == r->live_capacity && !live_grow(r, doubled(r->live_capacity))) return false;
    size_t pos = r->nlive++;
    if (block) {
        /* a malloc'd block goes to the front part: the first young entry
         * makes room at the end, the first old one at the old part's end */
        if (r->nold < pos) live_move(r, r->nold, pos);
        pos = r->nold++;
        if (r->nmalloc < pos) live_move(r, r->nmalloc, pos);
        pos = r->nmalloc++;
    }
    r->items[index].live_pos = (uint32_t)pos;
    r->live[pos].obj = obj;
    r->live[pos].record = index;
    return true;
}

uint32_t
sampling_records_add(struct sampling_records *r, const struct sampling_sample_in *in)
{
    /* the slot first: an eviction may leave a site idle, to fold */
    uint32_t index = take_slot(r);
    struct sampling_site *site = sampling_sites_find(&r->sites, &in->site, !r->reading);
    sampling_sites_count(&r->sites, site, in->sample.weight, in->sample.weight / in->sample.size);
    if (index == SAMPLING_NONE) goto dropped;
    if (!site) goto give_back;

    struct sampling_record *rec = &r->items[index];
    sampling_site_use(&r->sites, site);
    rec->seq = r->next_seq++;
    rec->site = site;
    rec->weight = in->sample.weight;
    rec->allocated_bytes = in->sample.allocated_bytes;
    rec->freed_bytes = 0;
    rec->death = 0;
    uint64_t size = in->sample.size < SAMPLING_SIZE_MAX ? in->sample.size : SAMPLING_SIZE_MAX;
    rec->gc_word = gc_word(in->sample.allocated_gc, in->sample.heap, size);
    rec->size = (uint32_t)size;
    if (!live_push(r, in->obj, index, in->sample.heap == SAMPLING_HEAP_MALLOC)) {    /* (sets live_pos) */
        release_slot(r, index);
        goto dropped;
    }
    int kind = sampling_record_kind(rec);
    r->live_space[kind] += rec->weight;
    r->live_count[kind]++;
    if (r->window_seq != UINT64_MAX) {     /* (its seq is past the window's start) */
        r->young_space[kind] += rec->weight;
        r->young_count++;
    }
    return index;

  give_back:
    r->items[index].seq = 0;
    r->free_slots[r->nfree++] = index;
  dropped:
    r->dropped++;
    return SAMPLING_NONE;
}

/* A record leaves live[]: the live estimate forgets its weight (and is
 * exactly 0 once no record of the kind is left, so rounding never
 * accumulates past an empty set). */
static inline void
live_forget(struct sampling_records *r, const struct sampling_record *rec)
{
    int kind = sampling_record_kind(rec);
    r->live_space[kind] -= rec->weight;
    if (--r->live_count[kind] == 0) r->live_space[kind] = 0;
    if (__builtin_expect(rec->seq >= r->window_seq, 0)) {
        r->young_space[kind] -= rec->weight;
        if (--r->young_count == 0) r->young_space[SAMPLING_LIVE_SLOT] = r->young_space[SAMPLING_LIVE_MALLOC] = 0;
    }
}

/* A record's object died now (it has left live[]): its clocks, and its
 * life counted into its site (sites.h). */
static inline void
record_end_life(struct sampling_records *r, struct sampling_record *rec, struct sampling_now now)
{
    size_t gcs = sampling_record_set_freed_gc(rec, now.gc);
    rec->death = r->deaths++;
    rec->freed_bytes = now.bytes;
    struct sampling_lifetimes *life = &rec->site->life;
    double w = rec->weight;
    /* its age (sampling_record_age): the collections before this one */
    life->died_space[sampling_age_bucket(gcs ? gcs - 1 : 0)] += w;
    if (rec->old) life->promoted_dead_space += w;
    double lived = (double)sampling_record_age_bytes(rec, now.bytes);
    life->heaptime += w * lived;
    life->objtime += w / (double)sampling_record_size(rec) * lived;
}

/* A dead record for the queue when the queue is full: it grows, or with
 * no memory the record is forgotten instead. */
static __attribute__((noinline, cold)) void
dead_push_grow(struct sampling_records *r, uint32_t index)
{
    if (!dead_push(r, index)) release_slot(r, index);
}

/* The walk's dead branch, live[i] found dead: out of line, so that the
 * walk stays small enough for the compiler to inline it with its
 * liveness function (sampling.c) and the survivors' path stays short.
 * Its own common path calls nothing (the queue was sized for max records
 * at start: sampling_records_reserve), so it saves fewer registers
 * (benchmark/results/versions.md has the counts). */
static __attribute__((noinline)) void
walk_dead(struct sampling_records *r, size_t i, const struct sampling_now *now)
{
    uint32_t index = r->live[i].record;
    /* Dead: drop the reference now, before the sweep reuses the slot. */
    struct sampling_record *rec = &r->items[index];
    live_forget(r, rec);
    record_end_life(r, rec, *now);     /* (sets dead) */
    /* Fill the hole with an entry not yet checked, keeping the old
     * part contiguous: the last old entry fills an old hole, the last
     * entry fills the old part's new end. */
    if (i < r->nold) {
        r->nold--;
        if (i < r->nold) live_move(r, r->nold, i);
        if (r->nold < r->nlive - 1) live_move(r, r->nlive - 1, r->nold);
    }
    else if (i < r->nlive - 1) {
        live_move(r, r->nlive - 1, i);
    }
    r->nlive--;
    if (__builtin_expect(r->ndead < r->dead_capacity, 1)) {
        r->dead[dead_at(r, r->ndead)] = index;
        r->ndead++;
        return;
    }
    dead_push_grow(r, index);
}

void
sampling_records_check_liveness(struct sampling_records *r, sampling_liveness_fn *liveness,
                                void *data, struct sampling_now now, bool major)
{
    size_t i = major ? r->nmalloc : r->nold;
    while (i < r->nlive) {
        struct sampling_live l = r->live[i];
        int state = liveness(l.obj, data);
        if (state < 0) {
            /* not this marking's object: as it was */
            i++;
            continue;
        }
        if (state == 2 && i >= r->nold) {
            /* promoted: swap into the old part (the young entry it
             * displaces was checked already); once in its life */
            struct sampling_record *rec = &r->items[l.record];
            rec->old = 1;
            rec->site->life.promoted_space += rec->weight;
            live_move(r, r->nold, i);
            r->live[r->nold] = l;
            rec->live_pos = (uint32_t)r->nold;
            r->nold++;
            i++;
            continue;
        }
        if (state) {
            i++;
            continue;
        }
        /* (here, not in walk_dead, whose common path calls nothing) */
        SAMPLING_RECORD_UNFOLLOWED(l.obj);
        walk_dead(r, i, &now);
    }
}

void
sampling_records_update_references(struct sampling_records *r, sampling_location_fn *location, void *data)
{
    for (size_t i = 0; i < r->nlive; i++) r->live[i].obj = location(r->live[i].obj, data);
    sampling_sites_update_references(&r->sites, location, data);
}

void
sampling_records_after_fork(struct sampling_records *r)
{
    sampling_sites_reset_totals(&r->sites);
    r->dropped = r->evicted = 0;
    while (r->ndead) {
        uint32_t index = r->dead[r->dead_head];
        r->dead_head = dead_at(r, 1);
        r->ndead--;
        release_slot(r, index);
    }
}

/* Takes live[pos] out of live[] (keeping the old part contiguous); its
 * record is dead from now on.  Returns the record's index. */
static uint32_t
live_unlink(struct sampling_records *r, size_t pos)
{
    uint32_t index = r->live[pos].record;
    if (pos < r->nmalloc) {
        r->nmalloc--;
        if (pos < r->nmalloc) live_move(r, r->nmalloc, pos);
        pos = r->nmalloc;
    }
    if (pos < r->nold) {
        r->nold--;
        if (pos < r->nold) live_move(r, r->nold, pos);
        pos = r->nold;
    }
    if (pos < r->nlive - 1) live_move(r, r->nlive - 1, pos);
    r->nlive--;
    r->items[index].dead = 1;
    live_forget(r, &r->items[index]);
    return index;
}

/* Drops live[pos]'s record (its object is not followed any more).  Not
 * a death: it was live until now, so it is in the peak's set iff it was
 * taken before the peak, and release_slot spills it then (its death
 * number, unset, would say it died before any peak). */
static void
live_drop(struct sampling_records *r, size_t pos)
{
    SAMPLING_RECORD_UNFOLLOWED(r->live[pos].obj);
    uint32_t index = live_unlink(r, pos);
    r->items[index].death = r->deaths;
    release_slot(r, index);
}

/* A record whose object the owner knows to be gone (a freed malloc'd
 * block, malloc.c): dead as if a marking had found it so. */
bool
sampling_records_end(struct sampling_records *r, uint32_t index, uint64_t seq, struct sampling_now now)
{
    if (index >= r->used) return false;
    struct sampling_record *rec = &r->items[index];
    if (rec->seq != seq || rec->dead) return false;
    live_unlink(r, rec->live_pos);
    record_end_life(r, rec, now);
    if (!dead_push(r, index)) release_slot(r, index);
    return true;
}

bool
sampling_records_resize(struct sampling_records *r, uint32_t index, uint64_t seq, uint64_t size, double add_weight,
                        uintptr_t obj)
{
    if (index >= r->used) return false;
    struct sampling_record *rec = &r->items[index];
    if (rec->seq != seq || rec->dead) return false;
    uint64_t old = sampling_record_size(rec);
    double weight = rec->weight;
    if (size < old) weight *= (double)size / (double)old;
    weight += add_weight;
    double delta = weight - rec->weight;
    int kind = sampling_record_kind(rec);
    r->live_space[kind] += delta;
    if (rec->seq >= r->window_seq) r->young_space[kind] += delta;
    rec->weight = weight;
    sampling_record_set_size(rec, size);
    r->live[rec->live_pos].obj = obj;
    return true;
}

void
sampling_records_tally(struct sampling_records *r, const struct sampling_sample_in *in)
{
    struct sampling_site *site = sampling_sites_find(&r->sites, &in->site, !r->reading);
    sampling_sites_count(&r->sites, site, in->sample.weight, in->sample.weight / (double)in->sample.size);
}

void
sampling_records_open_window(struct sampling_records *r)
{
    r->window_seq = r->next_seq;
    r->young_space[SAMPLING_LIVE_SLOT] = r->young_space[SAMPLING_LIVE_MALLOC] = 0;
    r->young_count = 0;
}

void
sampling_records_close_window(struct sampling_records *r)
{
    r->window_seq = UINT64_MAX;
    r->young_space[SAMPLING_LIVE_SLOT] = r->young_space[SAMPLING_LIVE_MALLOC] = 0;
    r->young_count = 0;
}

void
sampling_records_mark_peak(struct sampling_records *r)
{
    r->peak.taken = true;
    r->peak.seq = r->window_seq < r->next_seq ? r->window_seq : r->next_seq;
    r->peak.deaths = r->deaths;
    r->peak.nspill = 0;
}

void
sampling_records_forget_peak(struct sampling_records *r)
{
    free(r->peak.spill);
    memset(&r->peak, 0, sizeof(r->peak));
}

static int
compare_seq(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void
sampling_records_set_max(struct sampling_records *r, size_t max)
{
    r->max = max;
    while (sampling_records_count(r) > max && r->ndead) {
        uint32_t index = r->dead[r->dead_head];
        r->dead_head = dead_at(r, 1);
        r->ndead--;
        release_slot(r, index);
        r->evicted++;
    }
    size_t excess = sampling_records_count(r) > max ? sampling_records_count(r) - max : 0;
    if (excess) {
        /* the oldest live records (lowest seq): sorted once */
        struct { uint64_t seq; uint32_t record; } *order = malloc(r->nlive * sizeof(*order));
        if (order) {
            for (size_t i = 0; i < r->nlive; i++) {
                order[i].seq = r->items[r->live[i].record].seq;
                order[i].record = r->live[i].record;
            }
            qsort(order, r->nlive, sizeof(*order), compare_seq);
            for (size_t i = 0; i < excess; i++) live_drop(r, r->items[order[i].record].live_pos);
            free(order);
        }
        else {
            for (size_t i = 0; i < excess; i++) live_drop(r, r->nlive - 1);    /* no memory to sort: any of them */
        }
        r->dropped += excess;
    }
    r->sites.max = max;
    sampling_sites_fold_to(&r->sites, max);
}

uintptr_t
sampling_records_object(const struct sampling_records *r, uint32_t index, uint64_t seq)
{
    if (index >= r->used) return 0;
    const struct sampling_record *rec = &r->items[index];
    if (rec->seq != seq || rec->dead) return 0;
    return r->live[rec->live_pos].obj;
}

void
sampling_records_clear(struct sampling_records *r)
{
    size_t max = r->max;
    uint64_t next_seq = r->next_seq;
    int reading = r->reading;
    sampling_records_free(r);
    sampling_records_init(r, max);
    r->reading = reading;
    /* a Sample read before clear never matches a new record; 0 is "unused" */
    if (next_seq > r->next_seq) r->next_seq = next_seq;
}

size_t
sampling_records_memsize(const struct sampling_records *r)
{
    return r->capacity * (sizeof(*r->items) + sizeof(*r->free_slots)) + r->dead_capacity * sizeof(*r->dead) +
        r->live_capacity * sizeof(*r->live) + r->peak.spill_capacity * sizeof(*r->peak.spill);
}

void
sampling_records_free(struct sampling_records *r)
{
    sampling_sites_free(&r->sites);
    free(r->items);
    free(r->free_slots);
    free(r->dead);
    free(r->live);
    free(r->peak.spill);
    memset(r, 0, sizeof(*r));
}

const char *
sampling_records_verify(const struct sampling_records *r)
{
    size_t used = 0, dead = 0;
    for (size_t i = 0; i < r->used; i++) {
        const struct sampling_record *rec = &r->items[i];
        if (!rec->seq) continue;
        used++;
        if (rec->dead) dead++;
        else if (rec->live_pos >= r->nlive || r->live[rec->live_pos].record != i) return "live_pos does not point back";
    }
    if (used + r->nfree != r->used) return "used + free != high water";
    if (used - dead != r->nlive) return "live records != live[]";
    if (r->nold > r->nlive || r->nmalloc > r->nold) return "more old than live, or more blocks than old";
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = &r->items[r->live[i].record];
        if ((i < r->nmalloc) != (rec->heap == SAMPLING_HEAP_MALLOC)) return "live[] is not malloc'd blocks first";
        if ((i >= r->nmalloc && i < r->nold) != (rec->old != 0)) return "live[] is not old-first (after the blocks)";
    }
    if (dead != r->ndead) return "dead records != dead queue";
    double space[SAMPLING_LIVE_KINDS] = { 0 }, young[SAMPLING_LIVE_KINDS] = { 0 };
    size_t count[SAMPLING_LIVE_KINDS] = { 0 }, nyoung = 0;
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = &r->items[r->live[i].record];
        space[sampling_record_kind(rec)] += rec->weight;
        count[sampling_record_kind(rec)]++;
        if (rec->seq >= r->window_seq) {
            young[sampling_record_kind(rec)] += rec->weight;
            nyoung++;
        }
    }
    if (nyoung != r->young_count) return "young_count != live records taken in the window";
    for (int k = 0; k < SAMPLING_LIVE_KINDS; k++) {
        if (count[k] != r->live_count[k]) return "live_count != live records of the kind";
        double d = space[k] - r->live_space[k];
        if (d > 1e-6 * space[k] + 1 || d < -(1e-6 * space[k] + 1)) return "live_space != weights of live records";
        d = young[k] - r->young_space[k];
        if (d > 1e-6 * young[k] + 1 || d < -(1e-6 * young[k] + 1)) return "young_space != weights of young records";
    }
    for (size_t i = 0; i < r->ndead; i++) {
        uint32_t index = r->dead[dead_at(r, i)];
        if (!r->items[index].seq || !r->items[index].dead) return "dead queue holds a live or unused slot";
    }
    return sampling_sites_verify(&r->sites, used);
}
