/*
 * sites.h: where samples are taken: sites, their totals, and the
 * references they hold weakly.
 *
 * Model.  A site is a place, a class, a type and a label set: the frames
 * of a stack, the class and type of the objects allocated there, and the
 * with_labels in effect (labels.h; 0: none), so each label set has its
 * own totals.  Each is stored once (hashed on its frames; its class and
 * label set mixed into its home slot) and
 * shared by every record taken there (records.h).  A site keeps the
 * totals of every sample taken there (bytes, objects), so a bound on
 * records bounds memory, never counts: allocation totals per site stay
 * exact however many records are evicted or dropped (as Go's buckets).
 * A site without records (idle) stays for its totals; past `max` sites
 * the oldest idle one is folded into other_* (counted in `folded`).
 *
 * The frames of sites are a tree (as JFR's stack-trace repository and
 * pprof's locations share theirs): a node is one frame under the node of
 * the frame that called it, stored once for every stack that has the
 * same frames from there outward, and a site points at the node of its
 * innermost frame; its stack is the path from there out to the root.  So
 * a new site costs the frames it does not share with a stored one (a
 * deep framework's frames are stored once).  Nodes are found by their
 * caller's node and their frame (the node table); a node lives while a
 * site's path runs through it (refcount: the nodes under it and the
 * sites ending at it).  A node holds its iseq and method entry (below)
 * unless its caller's frame holds the same one (recursion: a path holds
 * a reference at its outermost node in a run of equal ones).
 *
 * A site holds its class weakly, and its path's nodes hold their iseqs
 * and method entries weakly: the collector does not mark them for the
 * sampler (a profiler must not keep what the program dropped); a live
 * sampled object keeps its class alive anyway.  At the end of a marking
 * sampling_sites_check_refs asks which references died; every site
 * holding one, itself or on its path, is named (its frames and class as
 * text, made before the sweep) and leaves the table: it is never matched
 * again and shows the names from then on (kept as a path in a tree of
 * locations, sampling_named_names); it lets go of its path (a node
 * no site's path runs through any more is freed: so every node whose
 * code died) and keeps its class while the class lives.  `refs` counts
 * the references held, once per site (its class) and once per node (its
 * iseq and method entry).
 *
 * Invariants (checked by sampling_sites_verify):
 *   every site is in the site list once (count);  the table holds exactly the unnamed ones
 *   idle list == the sites with refcount 0
 *   refs counts == references held by sites and nodes (a node's: those
 *   its caller's frame does not hold too), and refs is a sound refset
 *   (refset_verify)
 *   an unnamed site with frames ends at a stored node whose depth is its
 *   nframes; a named one, or one with no frames, at none
 *   a stored site's hash == sampling_stack_hash of its path's frames
 *   a stored site sits in the probe run from its home (hash and class);
 *   the table is at most half full (probe_verify)
 *   a recent site is a stored site (never named, never freed)
 *   the node tree: every node is in the node table's chain of its home,
 *   once, and is the only node there with its caller and frame; its
 *   caller is a stored node or the end mark, its depth its caller's + 1;
 *   its refcount == the nodes under it + the sites ending at it, > 0 (so
 *   every node is on a site's path)
 *   the slabs hold the nodes and the free list, and nothing else
 *   the location tree: the same, for the name table's nodes and the
 *   named sites (a named site's path n locations long)
 *
 * Memory comes from malloc only; no locking (the owner serialises).
 * Object references are opaque uintptr_t here (VALUE in CRuby).
 */
#ifndef SAMPLING_SITES_H
#define SAMPLING_SITES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "probe.h"
#include "refset.h"

/* One frame as captured on the sampling path: only what identifies it,
 * read from the control frame with no lookups (frames.c).  Ruby frames:
 * the iseq and the pc pointer; C frames: iseq 0.  Both: the method entry
 * (0 for top-level code).  A last frame with SAMPLING_FRAME_LOCATION_ONLY
 * set in pc is not shown: it gives the file and line of the C frames
 * before it when the stack was cut at depth.  Resolved when read
 * (sampling_frames_resolve). */
struct sampling_frame {
    uintptr_t iseq;         /* rb_iseq_t *, or 0 for a C method */
    uintptr_t cme;          /* rb_callable_method_entry_t *, or 0 */
    uintptr_t pc;           /* const VALUE *, the frame's pc (| LOCATION_ONLY) */
};

#define SAMPLING_FRAME_LOCATION_ONLY ((uintptr_t)1)
/* The pc of the mark past a stored path's outermost frame
 * (sampling_frame_end): no control frame's pc (0 or aligned), so a
 * compare stops there. */
#define SAMPLING_FRAME_END (~(uintptr_t)0)

/* The stack hash: every frame's pc, innermost first, one multiply a
 * frame, then the count and the cut.  The capture mixes each pc in as it
 * reads it (frames.c), a multiply and a xor a frame however deep the
 * stack.  A pc says where a Ruby frame is (it lies inside its iseq); a C
 * frame has none, so stacks that differ only in the C method called from
 * one place share a hash, and the full comparison on every hit tells them
 * apart.  pcs point into iseq bodies, which compaction does not move: a
 * hash holds across compaction. */
#define SAMPLING_HASH_START PROBE_FNV_OFFSET

static inline uint64_t
sampling_hash_pc(uint64_t h, uintptr_t pc)
{
    return (h ^ pc) * PROBE_GOLDEN;
}

static inline uint64_t
sampling_hash_end(uint64_t h, uint32_t nframes, bool truncated)
{
    h ^= nframes ^ ((uint64_t)truncated << 63);
    return h ^ (h >> 32);
}

/* The same hash from stored frames. */
uint64_t sampling_stack_hash(const struct sampling_frame *frames, uint32_t nframes, bool truncated);

/* Where a site with no usable frames comes from (nframes == 0). */
enum sampling_origin {
    SAMPLING_ORIGIN_FRAMES = 0,     /* the frames say */
    SAMPLING_ORIGIN_BOOT,           /* before the VM could show a stack (RUBY_GC_SAMPLING at boot) */
    SAMPLING_ORIGIN_NO_FRAME,       /* a thread or fiber running no Ruby frame (its start, its end) */
    SAMPLING_ORIGIN_NO_GVL,         /* malloc'd by a thread without the GVL: its stack is not ours to walk */
    SAMPLING_ORIGIN_GC,             /* malloc'd by the collector during a GC: no stack is walked then */
};

/* A site as text: what a reader shows of its frames and class.  Made when
 * one of the site's references dies (the site keeps it, as a path of
 * locations: sampling_named below, and drops its references), or for a
 * read (then freed).  One malloc'd block; built
 * without allocating a Ruby object (frames.c), so the collector can make
 * it at the end of marking, while the dying objects are still readable. */
struct sampling_name {
    const char *path;       /* NULL: none (a C method no Ruby code called) */
    const char *label;
    uint32_t pathlen, labellen;
    int lineno;
};
struct sampling_names {
    const char *klass;      /* the class's name; NULL: none */
    uint32_t n;             /* 0: unknown (no memory to name it) */
    struct sampling_name locs[];    /* innermost first; the text follows */
};
extern struct sampling_names sampling_names_unknown;

/* Bytes of a names block: the header, the locations, then the text up to
 * its last NUL (sampling_names_of writes the class name first, then each
 * location's path and label in order, and ends the text with one more
 * NUL).  0 for sampling_names_unknown (static). */
size_t sampling_names_memsize(const struct sampling_names *names);

/* A named site's text is kept as its frames were: its locations are a
 * path in a tree of locations (a node: one location under the location
 * outward of it, stored once for every named site with the same
 * locations from there outward), found in the name table by their
 * caller and text.  A named site keeps its class's name and its
 * innermost location's node; sampling_named_names gives the names block
 * back, byte for byte what the name function made. */
struct sampling_name_node {
    struct sampling_name_node *caller;      /* NULL past the outermost */
    struct sampling_name_node *next;        /* the name table's chain */
    uint64_t hash;                          /* of its caller and its location (its home) */
    uint32_t refcount;                      /* name nodes it is the caller of + named sites ending at it */
    uint32_t size;                          /* bytes, its text included */
    struct sampling_name loc;               /* path (NULL: none) and label point into text */
    char text[];                            /* the path, then the label */
};

struct sampling_name_table {
    struct sampling_name_node **heads;      /* NULL: an empty chain */
    size_t capacity, size, bytes;           /* a power of two; nodes; their bytes */
};

struct sampling_named {
    struct sampling_name_node *locs;        /* the innermost location; NULL: none (n == 0, unknown) */
    uint32_t n;                             /* locations */
    bool has_klass;
    char klass[];                           /* the class's name, with its NUL, if has_klass */
};
extern struct sampling_named sampling_named_unknown;   /* no memory to name it (static) */

/* The names block of a named site (one malloc'd block: free it), laid
 * out as sampling_names_of's; NULL without memory. */
struct sampling_names *sampling_named_names(const struct sampling_named *named);

/* What was allocated at a site, and where an empty stack comes from:
 * compared as one word when a sample looks for its site. */
struct sampling_kind {
    union {
        struct {
            uint16_t type;          /* T_xxx */
            uint8_t imemo_type;     /* for T_IMEMO */
            uint8_t origin;         /* enum sampling_origin */
        };
        uint32_t word;
    };
};

/* kind.type of a malloc'd block's sample (malloc.c): past every T_xxx
 * (RUBY_T_MASK is 0x1f). */
#define SAMPLING_TYPE_MALLOC 0x20

/* What the samples of a site did over their lives, as estimated bytes
 * (weights), counted when it happened: so these stay exact however many
 * dead records are evicted later.  A death is counted once, by the
 * records that saw it (a dropped sample has no record, and no life).
 * Deaths by collections survived: 0 (died in the first GC after its
 * allocation), 1, 2-3, 4-7, 8-15, 16 or more.  Still-alive samples are
 * censored: they are not here (their ages are read from the live
 * records).  heaptime is bytes x bytes lived, the second factor on the
 * allocation clock (slot bytes the process allocated meanwhile),
 * summed over deaths; objtime the same in objects x bytes lived (DHAT's
 * total lifetime: dhat.h), exact where a site's objects differ in size. */
#define SAMPLING_AGE_BUCKETS 6
struct sampling_lifetimes {
    double died_space[SAMPLING_AGE_BUCKETS];
    double promoted_space;          /* promoted to the old generation (alive or dead) */
    double promoted_dead_space;     /* promoted, then died: old-generation garbage */
    double heaptime;                /* sum of weight * (freed_bytes - allocated_bytes) over deaths */
    double objtime;                 /* sum of weight / size * (freed_bytes - allocated_bytes) over deaths */
};

/* The bucket of a death after surviving `age` collections. */
static inline unsigned
sampling_age_bucket(size_t age)
{
    unsigned b = age ? 64 - (unsigned)__builtin_clzll((unsigned long long)age) : 0;  /* 1: 1, 2: 2-3, ... */
    return b < SAMPLING_AGE_BUCKETS - 1 ? b : SAMPLING_AGE_BUCKETS - 1;
}

static inline void
sampling_lifetimes_add(struct sampling_lifetimes *to, const struct sampling_lifetimes *from)
{
    for (int i = 0; i < SAMPLING_AGE_BUCKETS; i++) to->died_space[i] += from->died_space[i];
    to->promoted_space += from->promoted_space;
    to->promoted_dead_space += from->promoted_dead_space;
    to->heaptime += from->heaptime;
    to->objtime += from->objtime;
}

/* A node of the frame tree (see the model above): a frame, and the
 * frames outward of it by `caller`.  The end mark (sampling_frame_end)
 * is past the outermost frame of every path: its pc is no control
 * frame's (SAMPLING_FRAME_END), so a comparison walking a path stops
 * there. */
struct sampling_frame_node {
    struct sampling_frame frame;
    struct sampling_frame_node *caller;     /* the end mark past the outermost frame */
    struct sampling_frame_node *next;       /* the node table's chain */
    uint32_t refcount;                      /* nodes it is the caller of + sites ending at it */
    uint16_t depth;                         /* frames of its path, itself included (the end mark: 0) */
    uint8_t flags;                          /* check_refs' (sites.c) */
};
extern struct sampling_frame_node sampling_frame_end;

/* Nodes come from slabs of SAMPLING_NODE_SLAB (one malloc each, not one
 * a node: a new site's nodes cost a few instructions each); a freed node
 * goes back to the free list, and the slabs go once the tree is empty. */
#define SAMPLING_NODE_SLAB 64
struct sampling_node_slab {
    struct sampling_node_slab *next;
    struct sampling_frame_node nodes[SAMPLING_NODE_SLAB];
};

/* The node table: chains from home slots (caller and pc). */
struct sampling_node_table {
    struct sampling_frame_node **heads;     /* NULL: an empty chain */
    size_t capacity, size;                  /* a power of two; nodes */
    struct sampling_node_slab *slabs;
    struct sampling_frame_node *free;       /* unused nodes of the slabs, by next */
    size_t nslabs;
};

/* A site (see the model above). */
struct sampling_site {
    uint64_t hash;          /* of the frames only */
    uintptr_t klass;        /* 0: hidden object or internal (T_IMEMO), or a class that died */
    struct sampling_named *names;   /* set once named (then frames is NULL) */
    struct sampling_frame_node *frames;     /* its innermost frame's node; NULL: no frames, or named */
    struct sampling_site *older, *newer;            /* every site, oldest first */
    struct sampling_site *idle_older, *idle_newer;  /* sites no record uses, oldest first */
    double alloc_space;     /* estimated bytes allocated here (every sample's weight) */
    double alloc_objects;   /* estimated objects (every sample's weight / size) */
    struct sampling_lifetimes life;     /* what its recorded samples did (above) */
    uint64_t id;            /* 1, 2, ... never reused in the process (delta readers key on it) */
    uint32_t labels;        /* label set id (labels.h), 0: none */
    uint32_t refcount;      /* records that use it (sampling_site_use) */
    uint32_t cfps;          /* control frames of the stack it was last found for (a filter for the capture) */
    uint32_t nframes;
    struct sampling_kind kind;
    bool truncated;         /* cut at depth */
    bool refs_old;          /* every reference (its class, its path's) was old at the last look (check_refs) */
};

/* The frames of an unnamed site, innermost first, into out (nframes). */
static inline void
sampling_site_frames(const struct sampling_site *site, struct sampling_frame *out)
{
    const struct sampling_frame_node *n = site->frames;
    for (uint32_t i = 0; i < site->nframes; i++, n = n->caller) out[i] = n->frame;
}

struct sampling_site_table {
    struct sampling_site **slots;   /* open addressing, NULL: empty */
    size_t capacity, size;
};

/* The sites last found, a few per slot the caller picks (a heap): a
 * sample's stack is often one of its predecessors', and the capture
 * compares the live stack with these before storing or hashing it. */
#define SAMPLING_RECENT_SLOTS 16
#define SAMPLING_RECENT_WAYS 4
struct sampling_recent {
    struct sampling_site *ways[SAMPLING_RECENT_WAYS];   /* NULL: none; never a named or freed site */
    uint32_t next;                                      /* the way a new site replaces */
};

struct sampling_sites {
    size_t max;                         /* sites kept (max_samples) */
    struct sampling_recent recent[SAMPLING_RECENT_SLOTS];
    struct sampling_site_table table;   /* the sites not named */
    struct sampling_node_table nodes;   /* the frame tree */
    struct sampling_name_table names;   /* the named sites' locations */
    struct sampling_site *oldest, *newest;              /* every site */
    struct sampling_site *idle_oldest, *idle_newest;    /* sites without records */
    size_t count;
    struct refset refs;                 /* the references sites hold */
    double other_space, other_objects;  /* totals of folded sites, and of samples no site could take */
    struct sampling_lifetimes other_life;   /* the lifetimes of folded sites */
    uint64_t folded;                    /* sites folded into other_* to stay within max */
    uint64_t named;                     /* sites named because a reference died */
};

/* What identifies the site of a new sample. */
struct sampling_site_key {
    uintptr_t klass;                    /* 0: none (hidden, internal) */
    const struct sampling_frame *frames;
    uint64_t hash;                      /* sampling_stack_hash of the frames */
    uint32_t nframes;
    bool truncated;
    struct sampling_kind kind;
    uint32_t labels;                    /* label set id (labels.h), 0: none */
    uint8_t recent;                     /* the recent slot to set (< SAMPLING_RECENT_SLOTS) */
    uint32_t cfps;                      /* control frames the capture saw (not part of the key) */
    struct sampling_site *site;         /* non-NULL: this site equals the key (the capture found it) */
    struct sampling_frame_node *path;   /* non-NULL: frames are this node's path (a stored site's) */
};

/* Whether site s has key's class, kind and label set: every part of the
 * key but the stack (the one list of them: a new key field goes here). */
static inline bool
sampling_site_rest_equal(const struct sampling_site *s, const struct sampling_site_key *key)
{
    return s->klass == key->klass && s->kind.word == key->kind.word && s->labels == key->labels;
}

/* The recent sites of slot (SAMPLING_RECENT_WAYS, some NULL) for a
 * capture to compare with (sampling_frames_capture). */
static inline struct sampling_site *const *
sampling_sites_recent(const struct sampling_sites *sites, uint8_t slot)
{
    return sites->recent[slot].ways;
}

/* The site of key, stored now if new (idle, no record yet); NULL when
 * it would pass max sites and none can be folded (none is idle, or
 * may_fold is false: a read is on), or without memory. */
struct sampling_site *sampling_sites_find(struct sampling_sites *sites, const struct sampling_site_key *key,
                                          bool may_fold);

/* Counts a sample's weight and objects to site (NULL: to other_*). */
static inline void
sampling_sites_count(struct sampling_sites *sites, struct sampling_site *site, double weight, double objects)
{
    if (site) {
        site->alloc_space += weight;
        site->alloc_objects += objects;
    }
    else {
        sites->other_space += weight;
        sites->other_objects += objects;
    }
}

/* A record takes the site / lets it go: a site no record uses is idle. */
void sampling_site_use(struct sampling_sites *sites, struct sampling_site *site);
void sampling_site_unuse(struct sampling_sites *sites, struct sampling_site *site);

/* The end of a marking: `state` says of a reference (class, iseq, method
 * entry) 0: unmarked, it dies in this collection; 1: marked; 2: marked
 * and old.  Every site holding a dead one (its class, or on its path) is
 * named by `name` (NULL when memory ran out: it then shows as unknown;
 * the block is the site's to keep as its locations, and freed here) and
 * lets go of its path; it keeps its class while the class lives.
 * When nothing died it costs one look at each distinct reference;
 * otherwise a look at each node's references and each site's class and
 * path, skipping in a minor marking (major false) the nodes and sites
 * whose references were all old. */
typedef int sampling_ref_state_fn(uintptr_t ref, void *data);  /* as records.h's liveness, -1 included */
typedef struct sampling_names *sampling_name_fn(const struct sampling_site *site, void *data);
void sampling_sites_check_refs(struct sampling_sites *sites, sampling_ref_state_fn *state, sampling_name_fn *name,
                               void *data, bool major);

/* Compaction moved objects: every held reference k becomes location(k). */
typedef uintptr_t sampling_location_fn(uintptr_t ref, void *data);
void sampling_sites_update_references(struct sampling_sites *sites, sampling_location_fn *location, void *data);

/* Totals start again from zero (a forked child counts its own). */
void sampling_sites_reset_totals(struct sampling_sites *sites);

/* Bumped whenever totals go back to zero (reset_totals, free): a delta
 * reader's baseline from an older generation no longer applies. */
uint64_t sampling_sites_generation(void);

/* Folds idle sites, oldest first, until at most max are left or none is
 * idle. */
void sampling_sites_fold_to(struct sampling_sites *sites, size_t max);

void sampling_sites_free(struct sampling_sites *sites);

/* Bytes the sites hold: each site, the nodes of frames and of locations,
 * the three tables, the set of references; O(sites), read only.  Bound:
 * at most max sites, each sizeof(struct sampling_site) and, once named,
 * its class's name (sizeof(struct sampling_named) + the name); at most
 * depth + 1 frame nodes a site (the location-only frame of a cut stack),
 * sizeof(struct sampling_frame_node) each, and as many location nodes
 * (sizeof(struct sampling_name_node) + the location's text) a named
 * site, fewer as sites share them; frame nodes are held in slabs of
 * SAMPLING_NODE_SLAB, as many as the most nodes held since the tree was
 * last empty needed; a site table of at most 2 x max pointers (rounded up
 * to a power of two) and node and name tables of at most 2 x the most
 * nodes they held (rounded up); a reference set of at most 2 x the
 * distinct references (16 bytes each). */
size_t sampling_sites_memsize(const struct sampling_sites *sites);

/* Checks the invariants above, and that the sites' refcounts add up to
 * `uses` (the records); returns NULL or a message. */
const char *sampling_sites_verify(const struct sampling_sites *sites, size_t uses);

#define SAMPLING_SITES_FOREACH(sites, s) \
    for (struct sampling_site *s = (sites)->oldest; s; s = s->newer)

#endif
