/* records.c: see records.h for the model and invariants. */
#include "records.h"
#include "invariant.h"

#include <stdlib.h>
#include <string.h>

/* ---- stacks ---- */

uint64_t
sampling_stack_hash(const struct sampling_frame *frames, uint32_t nframes, bool truncated)
{
    uint64_t h = SAMPLING_HASH_START;
    for (uint32_t i = 0; i < nframes; i++) h = sampling_hash_pc(h, frames[i].pc);
    return sampling_hash_end(h, nframes, truncated);
}

/* A stack's home slot in the table: its hash with its class mixed in, so
 * that a place allocating many classes (dup, Marshal.load, a factory)
 * spreads them over the table instead of one run of slots.  The class
 * moves under compaction, the hash does not: compaction rebuilds the
 * table when a class moved. */
static inline size_t
stack_home(uint64_t hash, uintptr_t klass, size_t mask)
{
    uint64_t h = hash ^ ((uint64_t)klass * UINT64_C(0x9e3779b97f4a7c15));
    return (size_t)(h ^ (h >> 29)) & mask;
}

static bool
site_equal(const struct sampling_stack *s, const struct sampling_sample_in *in)
{
    return s->hash == in->hash && s->klass == in->klass && s->nframes == in->nframes &&
        s->truncated == in->truncated && s->kind.word == in->kind.word && memcmp(s->frames, in->frames, in->nframes * sizeof(*in->frames)) == 0;
}

static void
table_insert(struct sampling_stack_table *t, struct sampling_stack *s)
{
    size_t mask = t->capacity - 1;
    size_t i = stack_home(s->hash, s->klass, mask);
    while (t->slots[i]) i = (i + 1) & mask;
    t->slots[i] = s;
    t->size++;
}

static bool
table_grow(struct sampling_stack_table *t)
{
    struct sampling_stack_table bigger = { 0 };
    bigger.capacity = t->capacity ? t->capacity * 2 : 256;
    bigger.slots = calloc(bigger.capacity, sizeof(*bigger.slots));
    if (!bigger.slots) return false;
    for (size_t i = 0; i < t->capacity; i++) if (t->slots[i]) table_insert(&bigger, t->slots[i]);
    free(t->slots);
    *t = bigger;
    return true;
}

/* The slot holding s, or SIZE_MAX: its probe run from home, to the first
 * empty slot. */
static size_t
table_slot_of(const struct sampling_stack_table *t, const struct sampling_stack *s)
{
    if (!t->capacity) return SIZE_MAX;
    size_t mask = t->capacity - 1;
    for (size_t i = stack_home(s->hash, s->klass, mask); t->slots[i]; i = (i + 1) & mask) {
        if (t->slots[i] == s) return i;
    }
    return SIZE_MAX;
}

static void
table_remove(struct sampling_stack_table *t, struct sampling_stack *s)
{
    size_t mask = t->capacity - 1;
    size_t hole = table_slot_of(t, s);
    SAMPLING_ASSERT(hole != SIZE_MAX);  /* every stored site is in its run (sampling_records_verify) */
    if (hole == SIZE_MAX) return;
    /* backward-shift deletion, as in refset.c */
    for (size_t i = hole;;) {
        i = (i + 1) & mask;
        struct sampling_stack *next = t->slots[i];
        if (!next) break;
        size_t home = stack_home(next->hash, next->klass, mask);
        if (probe_entry_stays(hole, i, home)) continue;
        t->slots[hole] = next;
        hole = i;
    }
    t->slots[hole] = NULL;
    t->size--;
}

/* The references a site holds, in order: its class, then, until it is
 * named, each frame's iseq and method entry (0: none).  A named site
 * keeps its class while the class lives (Sample#klass), nothing else. */
static inline uint32_t
stack_nrefs(const struct sampling_stack *s)
{
    return s->names ? 1 : 1 + 2 * s->nframes;
}

static inline uintptr_t
stack_ref(const struct sampling_stack *s, uint32_t i)
{
    if (i == 0) return s->klass;
    const struct sampling_frame *f = &s->frames[(i - 1) / 2];
    return (i - 1) % 2 ? f->cme : f->iseq;
}

/* Lets go of the first n references of s. */
static void
stack_drop_refs(struct sampling_records *r, const struct sampling_stack *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t ref = stack_ref(s, i);
        if (ref) refset_remove(&r->refs, ref);
    }
}

/* Holds every reference of s, or (out of memory) none. */
static bool
stack_hold_refs(struct sampling_records *r, const struct sampling_stack *s)
{
    for (uint32_t i = 0; i < stack_nrefs(s); i++) {
        uintptr_t ref = stack_ref(s, i);
        if (ref && !refset_add(&r->refs, ref)) {
            stack_drop_refs(r, s, i);
            return false;
        }
    }
    return true;
}

/* A named site whose text could not be made (no memory): it shows as
 * unknown. */
struct sampling_names sampling_names_unknown = { NULL, 0 };

/* ---- the site list and the idle list ---- */

static void
site_link(struct sampling_records *r, struct sampling_stack *s)
{
    s->older = r->newest;
    s->newer = NULL;
    if (r->newest) r->newest->newer = s;
    else r->oldest = s;
    r->newest = s;
    r->nsites++;
}

static void
site_unlink(struct sampling_records *r, struct sampling_stack *s)
{
    if (s->older) s->older->newer = s->newer;
    else r->oldest = s->newer;
    if (s->newer) s->newer->older = s->older;
    else r->newest = s->older;
    r->nsites--;
}

static void
idle_link(struct sampling_records *r, struct sampling_stack *s)
{
    s->idle_older = r->idle_newest;
    s->idle_newer = NULL;
    if (r->idle_newest) r->idle_newest->idle_newer = s;
    else r->idle_oldest = s;
    r->idle_newest = s;
}

static void
idle_unlink(struct sampling_records *r, struct sampling_stack *s)
{
    if (s->idle_older) s->idle_older->idle_newer = s->idle_newer;
    else r->idle_oldest = s->idle_newer;
    if (s->idle_newer) s->idle_newer->idle_older = s->idle_older;
    else r->idle_newest = s->idle_older;
}

/* A record takes the site / lets it go: a site no record uses is idle. */
static inline void
site_use(struct sampling_records *r, struct sampling_stack *s)
{
    if (s->refcount++ == 0) idle_unlink(r, s);
}

static inline void
site_unuse(struct sampling_records *r, struct sampling_stack *s)
{
    SAMPLING_ASSERT(s->refcount > 0);
    if (--s->refcount == 0) idle_link(r, s);
}

static void
site_free(struct sampling_records *r, struct sampling_stack *s)
{
    if (!s->names) table_remove(&r->stacks, s);
    stack_drop_refs(r, s, stack_nrefs(s));
    if (s->names != &sampling_names_unknown) free(s->names);
    site_unlink(r, s);
    free(s);
}

/* Folds the oldest idle site's totals into other_* and frees it (to stay
 * within max sites).  False when there is none, or a read is on. */
static bool
site_fold_oldest_idle(struct sampling_records *r)
{
    struct sampling_stack *s = r->idle_oldest;
    if (!s || r->reading) return false;
    r->other_space += s->alloc_space;
    r->other_objects += s->alloc_objects;
    r->folded++;
    idle_unlink(r, s);
    site_free(r, s);
    return true;
}

/* The site of a sample, stored now if new (idle, no record yet); NULL
 * when it would pass max sites and none can be folded, or without memory. */
static struct sampling_stack *
site_for(struct sampling_records *r, const struct sampling_sample_in *in)
{
    struct sampling_stack_table *t = &r->stacks;
    if (t->capacity) {
        size_t mask = t->capacity - 1;
        for (size_t i = stack_home(in->hash, in->klass, mask); t->slots[i]; i = (i + 1) & mask) {
            if (site_equal(t->slots[i], in)) return t->slots[i];
        }
    }
    if (r->nsites >= r->max && !site_fold_oldest_idle(r)) return NULL;
    if ((t->size + 1) * 2 > t->capacity && !table_grow(t)) return NULL;
    struct sampling_stack *s = malloc(sizeof(*s) + in->nframes * sizeof(*in->frames));
    if (!s) return NULL;
    memset(s, 0, sizeof(*s));
    s->hash = in->hash;
    s->klass = in->klass;
    s->nframes = in->nframes;
    s->truncated = in->truncated;
    s->kind = in->kind;
    memcpy(s->frames, in->frames, in->nframes * sizeof(*in->frames));
    if (!stack_hold_refs(r, s)) {
        free(s);
        return NULL;
    }
    table_insert(t, s);
    site_link(r, s);
    idle_link(r, s);
    return s;
}

/* ---- records ---- */

void
sampling_records_init(struct sampling_records *r, size_t max)
{
    memset(r, 0, sizeof(*r));
    r->max = max;
    r->next_seq = 1;
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

static bool
dead_push(struct sampling_records *r, uint32_t index)
{
    if (r->ndead == r->dead_capacity && !dead_grow(r, doubled(r->dead_capacity))) return false;
    r->dead[dead_at(r, r->ndead)] = index;
    r->ndead++;
    return true;
}

static void
release_slot(struct sampling_records *r, uint32_t index)
{
    struct sampling_record *rec = &r->items[index];
    site_unuse(r, rec->stack);
    rec->seq = 0;
    r->free_slots[r->nfree++] = index;
}

/* A slot for a new record: a never used one, a free one, or the oldest
 * dead record's. */
static uint32_t
take_slot(struct sampling_records *r)
{
    if (sampling_records_count(r) < r->max) {
        if (r->nfree) return r->free_slots[--r->nfree];
        if (ensure_capacity(r)) return (uint32_t)r->used++;
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

static bool
live_push(struct sampling_records *r, uintptr_t obj, uint32_t index)
{
    if (r->nlive == r->live_capacity && !live_grow(r, doubled(r->live_capacity))) return false;
    r->items[index].live_pos = (uint32_t)r->nlive;
    r->live[r->nlive].obj = obj;
    r->live[r->nlive].record = index;
    r->nlive++;
    return true;
}

uint32_t
sampling_records_add(struct sampling_records *r, const struct sampling_sample_in *in)
{
    /* the slot first: an eviction may leave a site idle, to fold */
    uint32_t index = take_slot(r);
    struct sampling_stack *stack = site_for(r, in);
    double weight = in->sample.weight, objects = weight / in->sample.size;
    if (stack) {
        stack->alloc_space += weight;
        stack->alloc_objects += objects;
    }
    else {
        r->other_space += weight;
        r->other_objects += objects;
    }
    if (index == SAMPLING_NONE) goto dropped;
    if (!stack) goto give_back;

    struct sampling_record *rec = &r->items[index];
    site_use(r, stack);
    rec->seq = r->next_seq++;
    rec->stack = stack;
    rec->sample = in->sample;
    rec->freed_gc = 0;
    rec->old = 0;
    if (!live_push(r, in->obj, index)) {    /* (sets live_pos) */
        release_slot(r, index);
        goto dropped;
    }
    return index;

  give_back:
    r->items[index].seq = 0;
    r->free_slots[r->nfree++] = index;
  dropped:
    r->dropped++;
    return SAMPLING_NONE;
}

/* Moves live[from] to live[to], keeping its record's live_pos true. */
static inline void
live_move(struct sampling_records *r, size_t from, size_t to)
{
    r->live[to] = r->live[from];
    r->items[r->live[to].record].live_pos = (uint32_t)to;
}

void
sampling_records_check_liveness(struct sampling_records *r, sampling_liveness_fn *liveness,
                                void *data, size_t gc_count, bool major)
{
    size_t i = major ? 0 : r->nold;
    while (i < r->nlive) {
        struct sampling_live l = r->live[i];
        int state = liveness(l.obj, data);
        if (state == 2 && i >= r->nold) {
            /* promoted: swap into the old part (the young entry it
             * displaces was checked already) */
            r->items[l.record].old = 1;
            live_move(r, r->nold, i);
            r->live[r->nold] = l;
            r->items[l.record].live_pos = (uint32_t)r->nold;
            r->nold++;
            i++;
            continue;
        }
        if (state) {
            i++;
            continue;
        }
        /* Dead: drop the reference now, before the sweep reuses the slot. */
        struct sampling_record *rec = &r->items[l.record];
        rec->freed_gc = gc_count;
        rec->live_pos = SAMPLING_NONE;
        if (!dead_push(r, l.record)) {
            /* No memory to queue it: forget the record instead. */
            release_slot(r, l.record);
        }
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
    }
}

void
sampling_records_update_references(struct sampling_records *r, sampling_location_fn *location, void *data)
{
    for (size_t i = 0; i < r->nlive; i++) r->live[i].obj = location(r->live[i].obj, data);
    bool klass_moved = false;
    SAMPLING_SITES_FOREACH(r, s) {
        if (s->klass) {
            uintptr_t to = location(s->klass, data);
            klass_moved |= to != s->klass && !s->names;
            s->klass = to;
        }
        if (s->names) continue;
        for (uint32_t j = 0; j < s->nframes; j++) {
            if (s->frames[j].iseq) s->frames[j].iseq = location(s->frames[j].iseq, data);
            if (s->frames[j].cme) s->frames[j].cme = location(s->frames[j].cme, data);
        }
    }
    /* Hashes read pcs, which do not move; homes mix in the class, which
     * may have.  Then the table is rebuilt in place from the site list,
     * needing no memory. */
    if (klass_moved) {
        struct sampling_stack_table *t = &r->stacks;
        memset(t->slots, 0, t->capacity * sizeof(*t->slots));
        t->size = 0;
        SAMPLING_SITES_FOREACH(r, site) {
            if (!site->names) table_insert(t, site);
        }
    }
    refset_rekey(&r->refs, location, data);
}

void
sampling_records_check_refs(struct sampling_records *r, sampling_ref_state_fn *state, sampling_name_fn *name,
                            void *data, bool major)
{
    /* One look at each distinct reference; the sites only when one died
     * (a class, or code that was unloaded or redefined). */
    bool any = false;
    REFSET_FOREACH(&r->refs, e) {
        if (!state(e->key, data)) {
            any = true;
            break;
        }
    }
    if (!any) return;
    SAMPLING_SITES_FOREACH(r, site) {
        /* a minor GC frees no old object: a site whose references were
         * all old at its last look cannot lose one now */
        if (!major && site->refs_old) continue;
        uint32_t n = stack_nrefs(site);
        bool dead_klass = false, dead_frame = false, all_old = true;
        for (uint32_t i = 0; i < n; i++) {
            uintptr_t ref = stack_ref(site, i);
            if (!ref) continue;
            int st = state(ref, data);
            if (st == 0) {
                if (i == 0) dead_klass = true;
                else dead_frame = true;
            }
            else if (st == 1) {
                all_old = false;
            }
        }
        site->refs_old = all_old && !dead_klass && !dead_frame;
        if ((dead_klass || dead_frame) && !site->names) {
            /* as text from now on, out of the table (never matched again):
             * drops its frames' references, keeps a live class */
            struct sampling_names *names = name(site, data);
            table_remove(&r->stacks, site);
            for (uint32_t i = 1; i < n; i++) {
                uintptr_t ref = stack_ref(site, i);
                if (ref) refset_remove(&r->refs, ref);
            }
            site->names = names ? names : &sampling_names_unknown;
            r->named++;
        }
        if (dead_klass) {
            refset_remove(&r->refs, site->klass);
            site->klass = 0;
        }
    }
}

void
sampling_records_after_fork(struct sampling_records *r)
{
    SAMPLING_SITES_FOREACH(r, site) site->alloc_space = site->alloc_objects = 0;
    r->other_space = r->other_objects = 0;
    r->folded = r->dropped = r->evicted = 0;
    while (r->ndead) {
        uint32_t index = r->dead[r->dead_head];
        r->dead_head = dead_at(r, 1);
        r->ndead--;
        release_slot(r, index);
    }
}

/* Drops live[pos]'s record (its object is not followed any more). */
static void
live_drop(struct sampling_records *r, size_t pos)
{
    uint32_t index = r->live[pos].record;
    if (pos < r->nold) {
        r->nold--;
        if (pos < r->nold) live_move(r, r->nold, pos);
        pos = r->nold;
    }
    if (pos < r->nlive - 1) live_move(r, r->nlive - 1, pos);
    r->nlive--;
    r->items[index].live_pos = SAMPLING_NONE;
    release_slot(r, index);
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
    while (r->nsites > max && site_fold_oldest_idle(r)) {}
}

uintptr_t
sampling_records_object(const struct sampling_records *r, uint32_t index, uint64_t seq)
{
    if (index >= r->used) return 0;
    const struct sampling_record *rec = &r->items[index];
    if (rec->seq != seq || rec->live_pos == SAMPLING_NONE) return 0;
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

void
sampling_records_free(struct sampling_records *r)
{
    for (struct sampling_stack *s = r->oldest, *next; s; s = next) {
        next = s->newer;
        if (s->names != &sampling_names_unknown) free(s->names);
        free(s);
    }
    free(r->stacks.slots);
    free(r->items);
    free(r->free_slots);
    free(r->dead);
    free(r->live);
    refset_free(&r->refs);
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
        if (rec->live_pos == SAMPLING_NONE) dead++;
        else if (rec->live_pos >= r->nlive || r->live[rec->live_pos].record != i) return "live_pos does not point back";
    }
    if (used + r->nfree != r->used) return "used + free != high water";
    if (used - dead != r->nlive) return "live records != live[]";
    if (r->nold > r->nlive) return "more old than live";
    for (size_t i = 0; i < r->nlive; i++) {
        if ((i < r->nold) != (r->items[r->live[i].record].old != 0)) return "live[] is not old-first";
    }
    if (dead != r->ndead) return "dead records != dead queue";
    for (size_t i = 0; i < r->ndead; i++) {
        uint32_t index = r->dead[dead_at(r, i)];
        if (!r->items[index].seq || r->items[index].live_pos != SAMPLING_NONE) return "dead queue holds a live or unused slot";
    }
    /* sites: the list, the idle list, refcounts, the table, the references */
    size_t sites = 0, idle = 0, in_table = 0;
    const char *err = NULL;
    for (const struct sampling_stack *s = r->oldest; s && !err; s = s->newer) {
        sites++;
        if (s->newer ? s->newer->older != s : r->newest != s) err = "the site list is broken";
        if (s->refcount == 0) idle++;
        if (!s->names) in_table++;
        if (!s->names && table_slot_of(&r->stacks, s) == SIZE_MAX) err = "a site is not in its probe run";
        if (!s->names && s->hash != sampling_stack_hash(s->frames, s->nframes, s->truncated)) {
            err = "a site's hash is not the hash of its frames";
        }
        if (sites > r->nsites) err = "more sites in the list than counted";
    }
    if (!err && sites != r->nsites) err = "site count is wrong";
    if (!err && in_table != r->stacks.size) err = "the table does not hold exactly the unnamed sites";
    size_t idle_listed = 0;
    for (const struct sampling_stack *s = r->idle_oldest; s && !err; s = s->idle_newer) {
        idle_listed++;
        if (s->refcount) err = "a used site is on the idle list";
        if (s->idle_newer ? s->idle_newer->idle_older != s : r->idle_newest != s) err = "the idle list is broken";
        if (idle_listed > sites) err = "the idle list loops";
    }
    if (!err && idle_listed != idle) err = "idle sites != the idle list";
    if (!err) {
        /* refcount == records pointing to the site: count them down */
        size_t uses = 0;
        for (const struct sampling_stack *s = r->oldest; s; s = s->newer) uses += s->refcount;
        if (uses != used) err = "site refcounts != records";
    }
    /* every reference held is counted once per site that holds it */
    struct refset expected = { 0 };
    for (const struct sampling_stack *s = r->oldest; s; s = s->newer) {
        for (uint32_t j = 0; j < stack_nrefs(s); j++) {
            if (stack_ref(s, j)) refset_add(&expected, stack_ref(s, j));
        }
    }
    if (!err && expected.size != r->refs.size) err = "refs hold a different set";
    REFSET_FOREACH(&expected, e) {
        if (!err && refset_count(&r->refs, e->key) != e->count) err = "a reference is miscounted";
    }
    refset_free(&expected);
    return err;
}
