/* sites.c: see sites.h for the model and invariants.  (Over 450 lines:
 * the table, the two lists, the weak references and the checks of one
 * structure; split, each part would need the others' internals.) */
#include "sites.h"
#include "invariant.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

/* ---- the table ---- */

static uint64_t site_ids;           /* the last site id given (never reset) */
static uint64_t sites_generation;   /* sampling_sites_generation */

uint64_t
sampling_sites_generation(void)
{
    return sites_generation;
}

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
site_home(uint64_t hash, uintptr_t klass, uint32_t labels, size_t mask)
{
    uint64_t h = hash ^ (((uint64_t)klass ^ ((uint64_t)labels << 48)) * PROBE_GOLDEN);
    return (size_t)(h ^ (h >> 29)) & mask;
}

static bool
site_equal(const struct sampling_site *s, const struct sampling_site_key *key)
{
    return s->hash == key->hash && s->nframes == key->nframes && s->truncated == key->truncated &&
        sampling_site_rest_equal(s, key) && memcmp(s->frames, key->frames, key->nframes * sizeof(*key->frames)) == 0;
}

static void
table_insert(struct sampling_site_table *t, struct sampling_site *s)
{
    size_t mask = t->capacity - 1;
    size_t i = site_home(s->hash, s->klass, s->labels, mask);
    while (t->slots[i]) i = probe_next(i, mask);
    t->slots[i] = s;
    t->size++;
}

static bool
table_grow(struct sampling_site_table *t)
{
    struct sampling_site_table bigger = { 0 };
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
table_slot_of(const struct sampling_site_table *t, const struct sampling_site *s)
{
    if (!t->capacity) return SIZE_MAX;
    size_t mask = t->capacity - 1;
    for (size_t i = site_home(s->hash, s->klass, s->labels, mask); t->slots[i]; i = probe_next(i, mask)) {
        if (t->slots[i] == s) return i;
    }
    return SIZE_MAX;
}

static bool slot_empty(void *t, size_t i) { return !((struct sampling_site_table *)t)->slots[i]; }
static size_t
slot_home(void *t, size_t i)
{
    const struct sampling_site *s = ((struct sampling_site_table *)t)->slots[i];
    return site_home(s->hash, s->klass, s->labels, ((struct sampling_site_table *)t)->capacity - 1);
}
static void slot_move(void *t, size_t from, size_t to) { struct sampling_site_table *tt = t; tt->slots[to] = tt->slots[from]; }
static void slot_clear(void *t, size_t i) { ((struct sampling_site_table *)t)->slots[i] = NULL; }
static const struct probe_ops table_probe_ops = { slot_empty, slot_home, slot_move, slot_clear };

static void
table_remove(struct sampling_site_table *t, struct sampling_site *s)
{
    size_t hole = table_slot_of(t, s);
    SAMPLING_ASSERT(hole != SIZE_MAX);  /* every stored site is in its run (sampling_sites_verify) */
    if (hole == SIZE_MAX) return;
    probe_delete(t, hole, t->capacity - 1, &table_probe_ops);
    t->size--;
}

/* The references a site holds, in order: its class, then, until it is
 * named, each frame's iseq and method entry (0: none).  A named site
 * keeps its class while the class lives (Sample#klass), nothing else. */
static inline uint32_t
site_nrefs(const struct sampling_site *s)
{
    return s->names ? 1 : 1 + 2 * s->nframes;
}

static inline uintptr_t
site_ref(const struct sampling_site *s, uint32_t i)
{
    if (i == 0) return s->klass;
    const struct sampling_frame *f = &s->frames[(i - 1) / 2];
    return (i - 1) % 2 ? f->cme : f->iseq;
}

/* Lets go of the first n references of s. */
static void
site_drop_refs(struct sampling_sites *sites, const struct sampling_site *s, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        uintptr_t ref = site_ref(s, i);
        if (ref) refset_remove(&sites->refs, ref);
    }
}

/* Holds every reference of s, or (out of memory) none. */
static bool
site_hold_refs(struct sampling_sites *sites, const struct sampling_site *s)
{
    for (uint32_t i = 0; i < site_nrefs(s); i++) {
        uintptr_t ref = site_ref(s, i);
        if (ref && !refset_add(&sites->refs, ref)) {
            site_drop_refs(sites, s, i);
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
site_link(struct sampling_sites *sites, struct sampling_site *s)
{
    s->older = sites->newest;
    s->newer = NULL;
    if (sites->newest) sites->newest->newer = s;
    else sites->oldest = s;
    sites->newest = s;
    sites->count++;
}

static void
site_unlink(struct sampling_sites *sites, struct sampling_site *s)
{
    if (s->older) s->older->newer = s->newer;
    else sites->oldest = s->newer;
    if (s->newer) s->newer->older = s->older;
    else sites->newest = s->older;
    sites->count--;
}

static void
idle_link(struct sampling_sites *sites, struct sampling_site *s)
{
    s->idle_older = sites->idle_newest;
    s->idle_newer = NULL;
    if (sites->idle_newest) sites->idle_newest->idle_newer = s;
    else sites->idle_oldest = s;
    sites->idle_newest = s;
}

static void
idle_unlink(struct sampling_sites *sites, struct sampling_site *s)
{
    if (s->idle_older) s->idle_older->idle_newer = s->idle_newer;
    else sites->idle_oldest = s->idle_newer;
    if (s->idle_newer) s->idle_newer->idle_older = s->idle_older;
    else sites->idle_newest = s->idle_older;
}

void
sampling_site_use(struct sampling_sites *sites, struct sampling_site *s)
{
    if (s->refcount++ == 0) idle_unlink(sites, s);
}

void
sampling_site_unuse(struct sampling_sites *sites, struct sampling_site *s)
{
    SAMPLING_ASSERT(s->refcount > 0);
    if (--s->refcount == 0) idle_link(sites, s);
}

/* s is named or freed: no longer a site a capture may match. */
static void
recent_forget(struct sampling_sites *sites, const struct sampling_site *s)
{
    for (int i = 0; i < SAMPLING_RECENT_SLOTS; i++) {
        for (int j = 0; j < SAMPLING_RECENT_WAYS; j++) {
            if (sites->recent[i].ways[j] == s) sites->recent[i].ways[j] = NULL;
        }
    }
}

static void
site_free(struct sampling_sites *sites, struct sampling_site *s)
{
    recent_forget(sites, s);
    if (!s->names) table_remove(&sites->table, s);
    site_drop_refs(sites, s, site_nrefs(s));
    if (s->names != &sampling_names_unknown) free(s->names);
    site_unlink(sites, s);
    free(s);
}

/* Folds the oldest idle site's totals into other_* and frees it (to stay
 * within max sites).  False when there is none. */
static bool
site_fold_oldest_idle(struct sampling_sites *sites)
{
    struct sampling_site *s = sites->idle_oldest;
    if (!s) return false;
    sites->other_space += s->alloc_space;
    sites->other_objects += s->alloc_objects;
    sampling_lifetimes_add(&sites->other_life, &s->life);
    sites->folded++;
    idle_unlink(sites, s);
    site_free(sites, s);
    return true;
}

static struct sampling_site *
sites_lookup(struct sampling_sites *sites, const struct sampling_site_key *key, bool may_fold)
{
    if (key->site) {
        SAMPLING_ASSERT(site_equal(key->site, key));
        return key->site;
    }
    struct sampling_site_table *t = &sites->table;
    if (t->capacity) {
        size_t mask = t->capacity - 1;
        for (size_t i = site_home(key->hash, key->klass, key->labels, mask); t->slots[i]; i = probe_next(i, mask)) {
            if (site_equal(t->slots[i], key)) return t->slots[i];
        }
    }
    if (sites->count >= sites->max && !(may_fold && site_fold_oldest_idle(sites))) return NULL;
    if (probe_full(t->size, t->capacity) && !table_grow(t)) return NULL;
    /* (one frame more: the end mark the capture's compare stops at) */
    struct sampling_site *s = malloc(sizeof(*s) + (key->nframes + 1) * sizeof(*key->frames));
    if (!s) return NULL;
    memset(s, 0, sizeof(*s));
    s->hash = key->hash;
    s->klass = key->klass;
    s->nframes = key->nframes;
    s->truncated = key->truncated;
    s->kind = key->kind;
    s->labels = key->labels;
    s->id = ++site_ids;
    memcpy(s->frames, key->frames, key->nframes * sizeof(*key->frames));
    s->frames[s->nframes] = (struct sampling_frame){ 0, 0, SAMPLING_FRAME_END };
    if (!site_hold_refs(sites, s)) {
        free(s);
        return NULL;
    }
    table_insert(t, s);
    site_link(sites, s);
    idle_link(sites, s);
    return s;
}

struct sampling_site *
sampling_sites_find(struct sampling_sites *sites, const struct sampling_site_key *key, bool may_fold)
{
    struct sampling_site *s = sites_lookup(sites, key, may_fold);
    if (s && !key->site) {
        s->cfps = key->cfps;
        struct sampling_recent *r = &sites->recent[key->recent];
        bool known = false;
        for (int j = 0; j < SAMPLING_RECENT_WAYS; j++) known |= r->ways[j] == s;
        if (!known) {
            r->ways[r->next] = s;
            r->next = (r->next + 1) % SAMPLING_RECENT_WAYS;
        }
    }
    return s;
}

/* ---- references ---- */

void
sampling_sites_check_refs(struct sampling_sites *sites, sampling_ref_state_fn *state, sampling_name_fn *name,
                          void *data, bool major)
{
    /* One look at each distinct reference; the sites only when one died
     * (a class, or code that was unloaded or redefined). */
    bool any = false;
    REFSET_FOREACH(&sites->refs, e) {
        if (!state(e->key, data)) {
            any = true;
            break;
        }
    }
    if (!any) return;
    SAMPLING_SITES_FOREACH(sites, site) {
        /* a minor GC frees no old object: a site whose references were
         * all old at its last look cannot lose one now */
        if (!major && site->refs_old) continue;
        uint32_t n = site_nrefs(site);
        bool dead_klass = false, dead_frame = false, all_old = true;
        for (uint32_t i = 0; i < n; i++) {
            uintptr_t ref = site_ref(site, i);
            if (!ref) continue;
            int st = state(ref, data);
            if (st == 0) {
                if (i == 0) dead_klass = true;
                else dead_frame = true;
            }
            else if (st != 2) {
                all_old = false;    /* (young, or not this marking's: looked at again) */
            }
        }
        site->refs_old = all_old && !dead_klass && !dead_frame;
        if ((dead_klass || dead_frame) && !site->names) {
            /* as text from now on, out of the table (never matched again):
             * drops its frames' references, keeps a live class */
            struct sampling_names *names = name(site, data);
            table_remove(&sites->table, site);
            recent_forget(sites, site);
            for (uint32_t i = 1; i < n; i++) {
                uintptr_t ref = site_ref(site, i);
                if (ref) refset_remove(&sites->refs, ref);
            }
            site->names = names ? names : &sampling_names_unknown;
            sites->named++;
        }
        if (dead_klass) {
            refset_remove(&sites->refs, site->klass);
            site->klass = 0;
        }
    }
}

void
sampling_sites_update_references(struct sampling_sites *sites, sampling_location_fn *location, void *data)
{
    bool klass_moved = false;
    SAMPLING_SITES_FOREACH(sites, s) {
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
        struct sampling_site_table *t = &sites->table;
        memset(t->slots, 0, t->capacity * sizeof(*t->slots));
        t->size = 0;
        SAMPLING_SITES_FOREACH(sites, site) {
            if (!site->names) table_insert(t, site);
        }
    }
    refset_rekey(&sites->refs, location, data);
}

/* ---- totals, teardown, checks ---- */

void
sampling_sites_reset_totals(struct sampling_sites *sites)
{
    SAMPLING_SITES_FOREACH(sites, s) {
        s->alloc_space = s->alloc_objects = 0;
        memset(&s->life, 0, sizeof(s->life));
    }
    sites->other_space = sites->other_objects = 0;
    memset(&sites->other_life, 0, sizeof(sites->other_life));
    sites->folded = 0;
    sites_generation++;
}

void
sampling_sites_fold_to(struct sampling_sites *sites, size_t max)
{
    while (sites->count > max && site_fold_oldest_idle(sites)) {}
}

size_t
sampling_names_memsize(const struct sampling_names *names)
{
    if (names == &sampling_names_unknown) return 0;
    const char *text = (const char *)&names->locs[names->n], *end = text;
    if (names->klass) end = names->klass + strlen(names->klass) + 1;
    for (uint32_t i = 0; i < names->n; i++) {
        const char *label_end = names->locs[i].label + names->locs[i].labellen;
        if (label_end > end) end = label_end;
    }
    return (size_t)(end - (const char *)names) + 1;
}

size_t
sampling_sites_memsize(const struct sampling_sites *sites)
{
    size_t bytes = sites->table.capacity * sizeof(*sites->table.slots) + refset_memsize(&sites->refs);
    SAMPLING_SITES_FOREACH(sites, s) {
        bytes += sizeof(*s) + (s->nframes + 1) * sizeof(s->frames[0]);
        if (s->names) bytes += sampling_names_memsize(s->names);
    }
    return bytes;
}

void
sampling_sites_free(struct sampling_sites *sites)
{
    for (struct sampling_site *s = sites->oldest, *next; s; s = next) {
        next = s->newer;
        if (s->names != &sampling_names_unknown) free(s->names);
        free(s);
    }
    free(sites->table.slots);
    refset_free(&sites->refs);
    memset(sites, 0, sizeof(*sites));
    sites_generation++;
}

const char *
sampling_sites_verify(const struct sampling_sites *sites, size_t uses)
{
    size_t count = 0, idle = 0, in_table = 0, refcounts = 0;
    const char *err = probe_verify(&sites->table, sites->table.capacity, sites->table.size, &table_probe_ops);
    if (!err) err = refset_verify(&sites->refs);
    for (const struct sampling_site *s = sites->oldest; s && !err; s = s->newer) {
        count++;
        if (s->newer ? s->newer->older != s : sites->newest != s) err = "the site list is broken";
        if (s->refcount == 0) idle++;
        refcounts += s->refcount;
        if (!s->names) in_table++;
        if (!s->names && table_slot_of(&sites->table, s) == SIZE_MAX) err = "a site is not in its probe run";
        if (!s->names && s->hash != sampling_stack_hash(s->frames, s->nframes, s->truncated)) {
            err = "a site's hash is not the hash of its frames";
        }
        if (!s->names && s->frames[s->nframes].pc != SAMPLING_FRAME_END) err = "a site's frames lost their end mark";
        if (count > sites->count) err = "more sites in the list than counted";
    }
    if (!err && count != sites->count) err = "site count is wrong";
    if (!err && in_table != sites->table.size) err = "the table does not hold exactly the unnamed sites";
    if (!err && refcounts != uses) err = "site refcounts != records";
    size_t idle_listed = 0;
    for (const struct sampling_site *s = sites->idle_oldest; s && !err; s = s->idle_newer) {
        idle_listed++;
        if (s->refcount) err = "a used site is on the idle list";
        if (s->idle_newer ? s->idle_newer->idle_older != s : sites->idle_newest != s) err = "the idle list is broken";
        if (idle_listed > count) err = "the idle list loops";
    }
    if (!err && idle_listed != idle) err = "idle sites != the idle list";
    for (int i = 0; i < SAMPLING_RECENT_SLOTS * SAMPLING_RECENT_WAYS && !err; i++) {
        const struct sampling_site *r = sites->recent[i / SAMPLING_RECENT_WAYS].ways[i % SAMPLING_RECENT_WAYS];
        const struct sampling_site *s = sites->oldest;
        while (r && s && s != r) s = s->newer;
        if (r && (!s || r->names)) err = "a recent site is named or gone";
    }
    /* every reference held is counted once per site that holds it */
    struct refset expected = { 0 };
    for (const struct sampling_site *s = sites->oldest; s; s = s->newer) {
        for (uint32_t j = 0; j < site_nrefs(s); j++) {
            if (site_ref(s, j)) refset_add(&expected, site_ref(s, j));
        }
    }
    if (!err && expected.size != sites->refs.size) err = "refs hold a different set";
    REFSET_FOREACH(&expected, e) {
        if (!err && refset_count(&sites->refs, e->key) != e->count) err = "a reference is miscounted";
    }
    refset_free(&expected);
    return err;
}
