/* sites.c: see sites.h for the model and invariants.  (Over 450 lines:
 * the table, the frame tree, the two lists, the weak references and the
 * checks of one structure; split, each part would need the others'
 * internals.) */
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

static inline bool
frame_equal(const struct sampling_frame *a, const struct sampling_frame *b)
{
    return a->pc == b->pc && a->cme == b->cme && a->iseq == b->iseq;
}

/* Whether path (nframes nodes from it) holds frames.  (A key with a path
 * compares nodes: a frame's node is one, sites.h.) */
static bool
path_equal(const struct sampling_frame_node *path, const struct sampling_frame *frames, uint32_t nframes)
{
    for (uint32_t i = 0; i < nframes; i++, path = path->caller) {
        if (!frame_equal(&path->frame, &frames[i])) return false;
    }
    return true;
}

static bool
site_equal(const struct sampling_site *s, const struct sampling_site_key *key)
{
    return s->hash == key->hash && s->nframes == key->nframes && s->truncated == key->truncated &&
        sampling_site_rest_equal(s, key) &&
        (key->path ? s->frames == key->path : path_equal(s->frames, key->frames, key->nframes));
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

/* ---- the frame tree ---- */

struct sampling_frame_node sampling_frame_end = { { 0, 0, SAMPLING_FRAME_END }, NULL, NULL, 0, 0, 0 };

/* check_refs' flags on a node (for this marking, and the next) */
#define NODE_OLD    1   /* its references were old at the last look */
#define NODE_DEAD   2   /* one of its references dies in this collection */

/* A node's home slot: its caller (a slab's: never moves) and its pc
 * (inside an iseq body, which compaction does not move), so a home holds
 * across compaction. */
static inline size_t
node_home(const struct sampling_frame_node *caller, uintptr_t pc, size_t mask)
{
    uint64_t h = ((uint64_t)(uintptr_t)caller ^ ((uint64_t)pc * PROBE_GOLDEN)) * PROBE_GOLDEN;
    return (size_t)(h ^ (h >> 32)) & mask;
}

/* The node of frame f under caller, or NULL. */
static struct sampling_frame_node *
node_find(const struct sampling_node_table *t, const struct sampling_frame_node *caller, const struct sampling_frame *f)
{
    if (!t->capacity) return NULL;
    for (struct sampling_frame_node *n = t->heads[node_home(caller, f->pc, t->capacity - 1)]; n; n = n->next) {
        if (n->caller == caller && frame_equal(&n->frame, f)) return n;
    }
    return NULL;
}

static void
node_table_link(struct sampling_node_table *t, struct sampling_frame_node *n)
{
    struct sampling_frame_node **head = &t->heads[node_home(n->caller, n->frame.pc, t->capacity - 1)];
    n->next = *head;
    *head = n;
}

/* Doubles the table (256 heads first); false without memory (then the
 * chains grow longer). */
static bool
node_table_grow(struct sampling_node_table *t)
{
    struct sampling_node_table bigger = *t;     /* (the same slabs) */
    bigger.capacity = t->capacity ? t->capacity * 2 : 256;
    bigger.heads = calloc(bigger.capacity, sizeof(*bigger.heads));
    if (!bigger.heads) return false;
    for (size_t i = 0; i < t->capacity; i++) {
        for (struct sampling_frame_node *n = t->heads[i], *next; n; n = next) {
            next = n->next;
            node_table_link(&bigger, n);
        }
    }
    free(t->heads);
    *t = bigger;
    return true;
}

#define NODES_FOREACH(t, n) \
    for (size_t n##_i = 0; n##_i < (t)->capacity; n##_i++) \
        for (struct sampling_frame_node *n = (t)->heads[n##_i]; n; n = n->next)

/* A node from the slabs (a new slab when none is free); NULL without
 * memory. */
static struct sampling_frame_node *
node_alloc(struct sampling_node_table *t)
{
    if (!t->free) {
        struct sampling_node_slab *slab = malloc(sizeof(*slab));
        if (!slab) return NULL;
        slab->next = t->slabs;
        t->slabs = slab;
        t->nslabs++;
        for (int i = SAMPLING_NODE_SLAB - 1; i >= 0; i--) {
            slab->nodes[i].next = t->free;
            t->free = &slab->nodes[i];
        }
    }
    struct sampling_frame_node *n = t->free;
    t->free = n->next;
    return n;
}

static void
node_table_free_slabs(struct sampling_node_table *t)
{
    for (struct sampling_node_slab *slab = t->slabs, *next; slab; slab = next) {
        next = slab->next;
        free(slab);
    }
    t->slabs = NULL;
    t->free = NULL;
    t->nslabs = 0;
}

/* n back to the free list; the slabs go with the last node. */
static void
node_dealloc(struct sampling_node_table *t, struct sampling_frame_node *n)
{
    n->next = t->free;
    t->free = n;
    if (!t->size) node_table_free_slabs(t);
}

/* The references a node holds: its iseq and method entry, each unless
 * its caller's frame holds it too (then the caller's is the one held). */
static inline uintptr_t
node_iseq_ref(const struct sampling_frame *f, const struct sampling_frame_node *caller)
{
    return f->iseq != caller->frame.iseq ? f->iseq : 0;
}

static inline uintptr_t
node_cme_ref(const struct sampling_frame *f, const struct sampling_frame_node *caller)
{
    return f->cme != caller->frame.cme ? f->cme : 0;
}

/* A new node for frame f under caller (whose refcount counts it), holding
 * f's references; NULL without memory. */
static struct sampling_frame_node *
node_new(struct sampling_sites *sites, struct sampling_frame_node *caller, const struct sampling_frame *f)
{
    struct sampling_node_table *t = &sites->nodes;
    if (t->size >= t->capacity && !node_table_grow(t) && !t->capacity) return NULL;
    uintptr_t iseq = node_iseq_ref(f, caller), cme = node_cme_ref(f, caller);
    if (iseq && !refset_add(&sites->refs, iseq)) return NULL;
    if (cme && !refset_add(&sites->refs, cme)) {
        if (iseq) refset_remove(&sites->refs, iseq);
        return NULL;
    }
    struct sampling_frame_node *n = node_alloc(t);
    if (!n) {
        if (iseq) refset_remove(&sites->refs, iseq);
        if (cme) refset_remove(&sites->refs, cme);
        return NULL;
    }
    *n = (struct sampling_frame_node){ *f, caller, NULL, 0, (uint16_t)(caller->depth + 1), 0 };
    node_table_link(t, n);
    t->size++;
    if (caller != &sampling_frame_end) caller->refcount++;
    return n;
}

/* One holder of n fewer (a site ending at it, or a node it is the caller
 * of): a node no path runs through any more is freed, with its
 * references, and lets go of its caller. */
static void
node_release(struct sampling_sites *sites, struct sampling_frame_node *n)
{
    while (n != &sampling_frame_end && --n->refcount == 0) {
        struct sampling_frame_node *caller = n->caller;
        struct sampling_node_table *t = &sites->nodes;
        struct sampling_frame_node **at = &t->heads[node_home(caller, n->frame.pc, t->capacity - 1)];
        while (*at != n) at = &(*at)->next;
        *at = n->next;
        t->size--;
        uintptr_t iseq = node_iseq_ref(&n->frame, caller), cme = node_cme_ref(&n->frame, caller);
        if (iseq) refset_remove(&sites->refs, iseq);
        if (cme) refset_remove(&sites->refs, cme);
        node_dealloc(t, n);
        n = caller;
    }
}

/* The deepest node of hint's path whose path is the outer part of frames
 * (nframes, innermost first): frames[nframes - depth .. nframes - 1];
 * the end mark when none.  A walk of hint's path, no lookup. */
static struct sampling_frame_node *
path_shared(struct sampling_frame_node *hint, const struct sampling_frame *frames, uint32_t nframes)
{
    struct sampling_frame_node *shared = NULL;
    while (hint->depth > nframes) hint = hint->caller;
    for (; hint != &sampling_frame_end; hint = hint->caller) {
        if (!frame_equal(&hint->frame, &frames[nframes - hint->depth])) shared = NULL;
        else if (!shared) shared = hint;
    }
    return shared ? shared : &sampling_frame_end;
}

/* The node whose path is frames (nframes > 0, innermost first), held
 * once more (for a site); NULL without memory (then nothing is made).
 * The frames outward share a stored path as far as one goes: found
 * first along hint's path (a stored path likely to share them: the
 * newest site of the key's recent slot; one walk costs about what two
 * lookups do), then in the node table a frame at a time; from the first
 * frame not found on, every node is new (a new node has no node under
 * it), so no more lookups. */
static struct sampling_frame_node *
path_hold(struct sampling_sites *sites, const struct sampling_frame *frames, uint32_t nframes,
          const struct sampling_site *hint)
{
    struct sampling_frame_node *at = hint && hint->frames ? path_shared(hint->frames, frames, nframes)
                                                          : &sampling_frame_end;
    uint32_t k = at->depth;
    for (struct sampling_frame_node *next; k < nframes && (next = node_find(&sites->nodes, at, &frames[nframes - k - 1]));
         k++) {
        at = next;
    }
    struct sampling_frame_node *stored = at;
    for (; k < nframes; k++) {
        struct sampling_frame_node *n = node_new(sites, at, &frames[nframes - k - 1]);
        if (!n) {
            if (at != stored) {
                at->refcount++;
                node_release(sites, at);    /* (frees the new ones) */
            }
            return NULL;
        }
        at = n;
    }
    at->refcount++;
    return at;
}

/* A named site whose text could not be made (no memory): it shows as
 * unknown. */
struct sampling_names sampling_names_unknown = { NULL, 0 };
struct sampling_named sampling_named_unknown = { NULL, 0, false };

/* ---- the location tree: named sites' text ---- */

static uint64_t
name_hash(const struct sampling_name_node *caller, const struct sampling_name *loc)
{
    uint64_t h = PROBE_FNV_OFFSET ^ ((uint64_t)(uintptr_t)caller * PROBE_GOLDEN);
    h = probe_fnv1a(h, loc->path ? loc->path : "", loc->path ? loc->pathlen : 0);
    h = (h ^ (loc->path ? 1 : 2)) * PROBE_FNV_PRIME;
    h = probe_fnv1a(h, loc->label, loc->labellen);
    return (h ^ (uint64_t)(uint32_t)loc->lineno) * PROBE_GOLDEN;
}

static inline size_t
name_home(uint64_t hash, size_t mask)
{
    return (size_t)(hash ^ (hash >> 32)) & mask;
}

static bool
name_equal(const struct sampling_name *a, const struct sampling_name *b)
{
    return !a->path == !b->path && a->pathlen == b->pathlen && a->labellen == b->labellen && a->lineno == b->lineno &&
        (!a->path || memcmp(a->path, b->path, a->pathlen) == 0) && memcmp(a->label, b->label, a->labellen) == 0;
}

static struct sampling_name_node *
name_find(const struct sampling_name_table *t, const struct sampling_name_node *caller, const struct sampling_name *loc,
          uint64_t hash)
{
    if (!t->capacity) return NULL;
    for (struct sampling_name_node *n = t->heads[name_home(hash, t->capacity - 1)]; n; n = n->next) {
        if (n->hash == hash && n->caller == caller && name_equal(&n->loc, loc)) return n;
    }
    return NULL;
}

static void
name_table_link(struct sampling_name_table *t, struct sampling_name_node *n)
{
    struct sampling_name_node **head = &t->heads[name_home(n->hash, t->capacity - 1)];
    n->next = *head;
    *head = n;
}

static bool
name_table_grow(struct sampling_name_table *t)
{
    struct sampling_name_table bigger = { NULL, t->capacity ? t->capacity * 2 : 64, t->size, t->bytes };
    bigger.heads = calloc(bigger.capacity, sizeof(*bigger.heads));
    if (!bigger.heads) return false;
    for (size_t i = 0; i < t->capacity; i++) {
        for (struct sampling_name_node *n = t->heads[i], *next; n; n = next) {
            next = n->next;
            name_table_link(&bigger, n);
        }
    }
    free(t->heads);
    *t = bigger;
    return true;
}

#define NAMES_FOREACH(t, n) \
    for (size_t n##_i = 0; n##_i < (t)->capacity; n##_i++) \
        for (struct sampling_name_node *n = (t)->heads[n##_i]; n; n = n->next)

/* One holder of n fewer: a location no named site's path runs through
 * any more is freed, and lets go of its caller. */
static void
name_release(struct sampling_name_table *t, struct sampling_name_node *n)
{
    while (n && --n->refcount == 0) {
        struct sampling_name_node *caller = n->caller;
        struct sampling_name_node **at = &t->heads[name_home(n->hash, t->capacity - 1)];
        while (*at != n) at = &(*at)->next;
        *at = n->next;
        t->size--;
        t->bytes -= n->size;
        free(n);
        n = caller;
    }
}

/* A new location node under caller (whose refcount counts it); NULL
 * without memory. */
static struct sampling_name_node *
name_new(struct sampling_name_table *t, struct sampling_name_node *caller, const struct sampling_name *loc, uint64_t hash)
{
    if (t->size >= t->capacity && !name_table_grow(t) && !t->capacity) return NULL;
    size_t pathlen = loc->path ? loc->pathlen : 0, size = sizeof(struct sampling_name_node) + pathlen + loc->labellen;
    struct sampling_name_node *n = malloc(size);
    if (!n) return NULL;
    if (pathlen) memcpy(n->text, loc->path, pathlen);
    if (loc->labellen) memcpy(n->text + pathlen, loc->label, loc->labellen);
    *n = (struct sampling_name_node){ caller, NULL, hash, 0, (uint32_t)size,
                                      { loc->path ? n->text : NULL, n->text + pathlen, loc->pathlen, loc->labellen,
                                        loc->lineno } };
    name_table_link(t, n);
    t->size++;
    t->bytes += size;
    if (caller) caller->refcount++;
    return n;
}

/* A named site's text from the name function's block (freed here): its
 * locations held as a path of the location tree, outermost first (found
 * while stored, made from the first one that is not).  The unknown one
 * without memory. */
static struct sampling_named *
named_hold(struct sampling_name_table *t, struct sampling_names *names)
{
    if (!names || !names->n) {
        free(names);
        return &sampling_named_unknown;
    }
    size_t klass = names->klass ? strlen(names->klass) + 1 : 0;
    struct sampling_named *named = malloc(sizeof(*named) + klass);
    struct sampling_name_node *at = NULL, *stored = NULL;
    uint32_t i = names->n;
    if (!named) goto fail;
    named->n = names->n;
    named->has_klass = names->klass != NULL;
    if (klass) memcpy(named->klass, names->klass, klass);
    for (; i > 0; i--) {
        uint64_t hash = name_hash(at, &names->locs[i - 1]);
        struct sampling_name_node *next = name_find(t, at, &names->locs[i - 1], hash);
        if (!next) break;
        at = next;
    }
    stored = at;
    for (; i > 0; i--) {
        struct sampling_name_node *n = name_new(t, at, &names->locs[i - 1], name_hash(at, &names->locs[i - 1]));
        if (!n) goto fail;
        at = n;
    }
    at->refcount++;
    named->locs = at;
    free(names);
    return named;
  fail:
    if (at != stored) {
        at->refcount++;
        name_release(t, at);    /* (frees the new ones) */
    }
    free(named);
    free(names);
    return &sampling_named_unknown;
}

static void
named_free(struct sampling_name_table *t, struct sampling_named *named)
{
    if (named == &sampling_named_unknown) return;
    name_release(t, named->locs);
    free(named);
}

struct sampling_names *
sampling_named_names(const struct sampling_named *named)
{
    /* as sampling_names_of lays it out: the header, the locations, the
     * class's name with its NUL, each path and label, one more NUL */
    size_t klass = named->has_klass ? strlen(named->klass) + 1 : 0, text = klass + 1;
    const struct sampling_name_node *n = named->locs;
    for (uint32_t i = 0; i < named->n; i++, n = n->caller) text += (n->loc.path ? n->loc.pathlen : 0) + n->loc.labellen;
    size_t head = sizeof(struct sampling_names) + named->n * sizeof(struct sampling_name);
    struct sampling_names *names = malloc(head + text);
    if (!names) return NULL;
    char *at = (char *)names + head;
    if (klass) memcpy(at, named->klass, klass);
    names->klass = named->has_klass ? at : NULL;
    names->n = named->n;
    at += klass;
    n = named->locs;
    for (uint32_t i = 0; i < named->n; i++, n = n->caller) {
        struct sampling_name *loc = &names->locs[i];
        *loc = n->loc;
        if (n->loc.path) {
            loc->path = memcpy(at, n->loc.path, n->loc.pathlen);
            at += n->loc.pathlen;
        }
        loc->label = memcpy(at, n->loc.label, n->loc.labellen);
        at += n->loc.labellen;
    }
    *at = '\0';
    return names;
}

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
    if (s->frames) node_release(sites, s->frames);
    if (s->klass) refset_remove(&sites->refs, s->klass);
    if (s->names) named_free(&sites->names, s->names);
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
    /* a key's path is held first: a fold may free the site it came from */
    struct sampling_frame_node *path = key->path;
    if (path) path->refcount++;
    struct sampling_site *s = NULL;
    if (sites->count >= sites->max && !(may_fold && site_fold_oldest_idle(sites))) goto fail;
    if (probe_full(t->size, t->capacity) && !table_grow(t)) goto fail;
    if (!path && key->nframes) {
        const struct sampling_recent *r = &sites->recent[key->recent];
        path = path_hold(sites, key->frames, key->nframes,
                         r->ways[(r->next + SAMPLING_RECENT_WAYS - 1) % SAMPLING_RECENT_WAYS]);
        if (!path) return NULL;
    }
    s = malloc(sizeof(*s));
    if (!s) goto fail;
    memset(s, 0, sizeof(*s));
    if (key->klass && !refset_add(&sites->refs, key->klass)) goto fail;
    s->hash = key->hash;
    s->klass = key->klass;
    s->frames = path;
    s->nframes = key->nframes;
    s->truncated = key->truncated;
    s->kind = key->kind;
    s->labels = key->labels;
    s->id = ++site_ids;
    table_insert(t, s);
    site_link(sites, s);
    idle_link(sites, s);
    return s;
  fail:
    free(s);
    if (path) node_release(sites, path);
    return NULL;
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
    /* One look at each distinct reference; the nodes and sites only when
     * one died (a class, or code that was unloaded or redefined). */
    bool any = false;
    REFSET_FOREACH(&sites->refs, e) {
        if (!state(e->key, data)) {
            any = true;
            break;
        }
    }
    if (!any) return;
    /* Each node's own references (a minor GC frees no old object: a node
     * whose references were old at its last look cannot lose one now),
     * then each site's class and path. */
    NODES_FOREACH(&sites->nodes, n) {
        if (!major && (n->flags & NODE_OLD)) continue;
        int iseq = n->frame.iseq ? state(n->frame.iseq, data) : 2;
        int cme = n->frame.cme ? state(n->frame.cme, data) : 2;
        n->flags = iseq == 0 || cme == 0 ? NODE_DEAD : iseq == 2 && cme == 2 ? NODE_OLD : 0;
    }
    SAMPLING_SITES_FOREACH(sites, site) {
        if (!major && site->refs_old) continue;
        bool dead_klass = false, dead_frame = false, all_old = true;
        if (site->klass) {
            int st = state(site->klass, data);
            dead_klass = st == 0;
            all_old = st == 2;  /* (young, or not this marking's: looked at again) */
        }
        for (const struct sampling_frame_node *n = site->frames; n && n != &sampling_frame_end; n = n->caller) {
            dead_frame |= (n->flags & NODE_DEAD) != 0;
            all_old &= (n->flags & NODE_OLD) != 0;
        }
        site->refs_old = all_old && !dead_klass && !dead_frame;
        if ((dead_klass || dead_frame) && !site->names) {
            /* as text from now on, out of the table (never matched again):
             * lets go of its path (the nodes no other site's path runs
             * through are freed: every node whose code died, once each
             * site under it is named), keeps a live class */
            struct sampling_named *named = named_hold(&sites->names, name(site, data));
            table_remove(&sites->table, site);
            recent_forget(sites, site);
            if (site->frames) node_release(sites, site->frames);
            site->frames = NULL;
            site->names = named;
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
    }
    /* (a node's home reads its caller and pc, which do not move) */
    NODES_FOREACH(&sites->nodes, n) {
        if (n->frame.iseq) n->frame.iseq = location(n->frame.iseq, data);
        if (n->frame.cme) n->frame.cme = location(n->frame.cme, data);
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
    size_t bytes = sites->table.capacity * sizeof(*sites->table.slots) + refset_memsize(&sites->refs) +
        sites->nodes.capacity * sizeof(*sites->nodes.heads) + sites->nodes.nslabs * sizeof(struct sampling_node_slab) +
        sites->names.capacity * sizeof(*sites->names.heads) + sites->names.bytes;
    SAMPLING_SITES_FOREACH(sites, s) {
        bytes += sizeof(*s);
        if (s->names && s->names != &sampling_named_unknown) {
            bytes += sizeof(*s->names) + (s->names->has_klass ? strlen(s->names->klass) + 1 : 0);
        }
    }
    return bytes;
}

void
sampling_sites_free(struct sampling_sites *sites)
{
    for (struct sampling_site *s = sites->oldest, *next; s; s = next) {
        next = s->newer;
        if (s->names != &sampling_named_unknown) free(s->names);
        free(s);
    }
    for (size_t i = 0; i < sites->names.capacity; i++) {
        for (struct sampling_name_node *n = sites->names.heads[i], *next; n; n = next) {
            next = n->next;
            free(n);
        }
    }
    free(sites->names.heads);
    node_table_free_slabs(&sites->nodes);
    free(sites->nodes.heads);
    free(sites->table.slots);
    refset_free(&sites->refs);
    memset(sites, 0, sizeof(*sites));
    sites_generation++;
}

/* sampling_stack_hash of a path's frames. */
static uint64_t
path_hash(const struct sampling_frame_node *path, uint32_t nframes, bool truncated)
{
    uint64_t h = SAMPLING_HASH_START;
    for (uint32_t i = 0; i < nframes; i++, path = path->caller) h = sampling_hash_pc(h, path->frame.pc);
    return sampling_hash_end(h, nframes, truncated);
}

/* The frame tree's invariants (sites.h), and each unnamed site's path. */
static const char *
tree_verify(const struct sampling_sites *sites)
{
    const struct sampling_node_table *t = &sites->nodes;
    const struct sampling_frame_node *end = &sampling_frame_end;
    if (end->frame.pc != SAMPLING_FRAME_END || end->frame.iseq || end->frame.cme || end->caller || end->next ||
        end->refcount || end->depth || end->flags) {
        return "the end mark was written";
    }
    if (t->capacity & (t->capacity - 1)) return "the node table's capacity is no power of two";
    const char *err = NULL;
    struct refset nodes = { 0 }, holders = { 0 };
    size_t count = 0;
    NODES_FOREACH(t, n) {
        if (++count > t->size) {
            err = "more nodes in the table than counted";
            goto done;
        }
        if (node_home(n->caller, n->frame.pc, t->capacity - 1) != n_i) err = "a node is not in its home's chain";
        refset_add(&nodes, (uintptr_t)n);
    }
    if (!err && count != t->size) err = "node count is wrong";
    size_t nslabs = 0, nfree = 0;
    for (const struct sampling_node_slab *slab = t->slabs; slab && nslabs <= t->nslabs; slab = slab->next) nslabs++;
    for (const struct sampling_frame_node *n = t->free; n && nfree <= t->nslabs * SAMPLING_NODE_SLAB; n = n->next) nfree++;
    if (!err && (nslabs != t->nslabs || nfree + t->size != nslabs * SAMPLING_NODE_SLAB)) {
        err = "the slabs do not hold the nodes and the free list";
    }
    if (!err && nodes.size != count) err = "a node is in the table twice";
    NODES_FOREACH(t, n) {
        if (err) break;
        if (n->caller != end && !refset_count(&nodes, (uintptr_t)n->caller)) err = "a node's caller is not stored";
        else if (n->depth != n->caller->depth + 1) err = "a node's depth is not its caller's + 1";
        else if (node_find(t, n->caller, &n->frame) != n) err = "two nodes of one frame under one caller";
        if (n->caller != end) refset_add(&holders, (uintptr_t)n->caller);
    }
    for (const struct sampling_site *s = sites->oldest; s && !err; s = s->newer) {
        if (s->names || !s->nframes) {
            if (s->frames) err = "a named site or one with no frames has a path";
            continue;
        }
        if (!s->frames || !refset_count(&nodes, (uintptr_t)s->frames)) err = "a site's path is not stored";
        else if (s->frames->depth != s->nframes) err = "a site's path is not nframes long";
        else if (s->hash != path_hash(s->frames, s->nframes, s->truncated)) {
            err = "a site's hash is not the hash of its frames";
        }
        else refset_add(&holders, (uintptr_t)s->frames);
    }
    NODES_FOREACH(t, n) {
        if (err) break;
        if (!n->refcount) err = "a node no path runs through";
        else if (refset_count(&holders, (uintptr_t)n) != n->refcount) err = "a node's refcount != the nodes and sites under it";
    }
  done:
    refset_free(&nodes);
    refset_free(&holders);
    return err;
}

/* The location tree's invariants, as the frame tree's. */
static const char *
names_verify(const struct sampling_sites *sites)
{
    const struct sampling_name_table *t = &sites->names;
    if (t->capacity & (t->capacity - 1)) return "the name table's capacity is no power of two";
    const char *err = NULL;
    struct refset nodes = { 0 }, holders = { 0 };
    size_t count = 0, bytes = 0;
    NAMES_FOREACH(t, n) {
        if (++count > t->size) {
            err = "more locations in the name table than counted";
            goto done;
        }
        bytes += n->size;
        if (n->hash != name_hash(n->caller, &n->loc) || name_home(n->hash, t->capacity - 1) != n_i) {
            err = "a location is not in its home's chain";
        }
        refset_add(&nodes, (uintptr_t)n);
    }
    if (!err && (count != t->size || bytes != t->bytes)) err = "location count or bytes wrong";
    NAMES_FOREACH(t, n) {
        if (err) break;
        if (n->caller && !refset_count(&nodes, (uintptr_t)n->caller)) err = "a location's caller is not stored";
        else if (name_find(t, n->caller, &n->loc, n->hash) != n) err = "two locations of one text under one caller";
        if (n->caller) refset_add(&holders, (uintptr_t)n->caller);
    }
    for (const struct sampling_site *s = sites->oldest; s && !err; s = s->newer) {
        if (!s->names || s->names == &sampling_named_unknown) continue;
        uint32_t len = 0;
        for (const struct sampling_name_node *n = s->names->locs; n && len <= s->names->n; n = n->caller) len++;
        if (!s->names->locs || !refset_count(&nodes, (uintptr_t)s->names->locs)) err = "a named site's path is not stored";
        else if (len != s->names->n) err = "a named site's path is not n locations long";
        else refset_add(&holders, (uintptr_t)s->names->locs);
    }
    NAMES_FOREACH(t, n) {
        if (err) break;
        if (!n->refcount || refset_count(&holders, (uintptr_t)n) != n->refcount) {
            err = "a location's refcount != the locations and named sites under it";
        }
    }
  done:
    refset_free(&nodes);
    refset_free(&holders);
    return err;
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
    if (!err) err = tree_verify(sites);
    if (!err) err = names_verify(sites);
    for (int i = 0; i < SAMPLING_RECENT_SLOTS * SAMPLING_RECENT_WAYS && !err; i++) {
        const struct sampling_site *r = sites->recent[i / SAMPLING_RECENT_WAYS].ways[i % SAMPLING_RECENT_WAYS];
        const struct sampling_site *s = sites->oldest;
        while (r && s && s != r) s = s->newer;
        if (r && (!s || r->names)) err = "a recent site is named or gone";
    }
    /* every reference held is counted once per site (its class) and
     * once per node (its iseq and method entry) that holds it */
    struct refset expected = { 0 };
    for (const struct sampling_site *s = sites->oldest; s; s = s->newer) {
        if (s->klass) refset_add(&expected, s->klass);
    }
    NODES_FOREACH(&sites->nodes, n) {
        if (node_iseq_ref(&n->frame, n->caller)) refset_add(&expected, n->frame.iseq);
        if (node_cme_ref(&n->frame, n->caller)) refset_add(&expected, n->frame.cme);
    }
    if (!err && expected.size != sites->refs.size) err = "refs hold a different set";
    REFSET_FOREACH(&expected, e) {
        if (!err && refset_count(&sites->refs, e->key) != e->count) err = "a reference is miscounted";
    }
    refset_free(&expected);
    return err;
}
