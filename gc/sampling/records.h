/*
 * records.h: the sampler's memory: sample records, their stacks, and the
 * references they hold.
 *
 * Model.  A record is one sample: the object (held weakly), its stack
 * (place and class, held strongly), type, slot size, weight and GC numbers.  Records
 * sit in a table of at most `max` slots; the live ones are also listed in a
 * dense array (live[]) that the collector walks at the end of each marking,
 * so that cost grows with the live samples only.  When a record's object
 * is found unmarked it is dead: its object reference is dropped at once
 * (before the sweep can reuse the slot), and its slot index joins the dead
 * queue.  A new sample in a full table evicts the oldest dead record; with
 * no dead record to evict the sample is dropped.  Both are counted.
 *
 * A site is a place, a class and a type: the frames, and the class and
 * type of the objects allocated there.  Each is stored once (hashed on its
 * frames) and shared by every record taken there.  A site keeps totals of
 * every sample taken there (bytes, objects), so the bound on records
 * bounds memory, never counts: allocation totals per site stay exact
 * however many records are evicted or dropped (as Go's buckets).  A site
 * without records stays for its totals; past `max` sites the oldest such
 * site is folded into other_* (counted in `folded`).
 *
 * A record holds nothing itself, and a site holds its class, iseqs and
 * method entries weakly: the collector does not mark them for the
 * sampler (a profiler must not keep what the program dropped).  A live
 * record's object keeps its class alive anyway.  At the end of a
 * marking, sampling_records_check_refs asks which references died; every
 * site holding one is named (its frames and class as text, made before
 * the sweep) and leaves the table: it is never matched again, and shows
 * the names from then on; it keeps its class while the class lives.
 * `refs` counts the references sites hold, once per site.
 *
 * Reads (r->reading > 0) see a fixed set: no record is evicted and no site
 * folded meanwhile; a sample that would need either is dropped as a
 * record (its bytes still go to its site's totals), so a reader's own
 * allocations never crowd out the records it reads.
 *
 * Invariants (checked by sampling_records_verify):
 *   live[i].record's live_pos == i;  a record is dead iff live_pos == NONE
 *   live[i] is old (promoted) iff i < nold
 *   every dead record in use is in the dead queue exactly once
 *   used slots == nlive + dead records;  nlive + ndead + nfree == used high water
 *   a site's refcount == records that point to it;  idle list == sites with refcount 0
 *   every site is in the site list once (nsites);  the table holds exactly the unnamed ones
 *   refs counts == references held by sites
 *   a stored site's hash == sampling_stack_hash of its frames
 *   a stored site sits in the probe run from its home (hash and class)
 *
 * Memory comes from malloc only: nothing here allocates a Ruby object or
 * can start a GC.  No locking: CRuby calls in with the VM lock held.
 * Object references are opaque uintptr_t here (VALUE in CRuby).
 */
#ifndef SAMPLING_RECORDS_H
#define SAMPLING_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "refset.h"

#define SAMPLING_NONE UINT32_MAX

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

/* The stack hash: every frame's pc, innermost first, one multiply a
 * frame, then the count and the cut.  The capture mixes each pc in as it
 * reads it (frames.c), for two instructions a frame however deep the
 * stack.  A pc says where a Ruby frame is (it lies inside its iseq); a C
 * frame has none, so stacks that differ only in the C method called from
 * one place share a hash, and the full comparison on every hit tells them
 * apart.  pcs point into iseq bodies, which compaction does not move: a
 * hash holds across compaction. */
#define SAMPLING_HASH_START UINT64_C(0xcbf29ce484222325)

static inline uint64_t
sampling_hash_pc(uint64_t h, uintptr_t pc)
{
    return (h ^ pc) * UINT64_C(0x9e3779b97f4a7c15);
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
};

/* A site as text: what a reader shows of its frames and class.  Made when
 * one of the site's references dies (the site keeps it and drops its
 * references), or for a read (then freed).  One malloc'd block; built
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

/* A site: a stack, the class and the type of what was allocated there.
 * Stored once (found by the hash of the frames and the class), shared by
 * its records, and kept after its last record goes, for its totals: the
 * bytes and objects of every sample taken there (records may be evicted
 * or dropped; the totals are not).  Its references (class, iseqs, method
 * entries) are held weakly: when one dies the site is named (`names`,
 * the text it shows) and leaves the table, holding no reference. */
struct sampling_stack {
    uint64_t hash;          /* of the frames only */
    uintptr_t klass;        /* 0: hidden object or internal (T_IMEMO), or a class that died */
    struct sampling_names *names;   /* set once named; then frames are not read */
    struct sampling_stack *older, *newer;           /* every site, oldest first */
    struct sampling_stack *idle_older, *idle_newer; /* sites no record uses, oldest first */
    double alloc_space;     /* estimated bytes allocated here (every sample's weight) */
    double alloc_objects;   /* estimated objects (every sample's weight / size) */
    uint32_t refcount;      /* records that use it */
    uint32_t nframes;
    struct sampling_kind kind;
    bool truncated;         /* cut at depth */
    bool refs_old;          /* every reference was old at the last look (check_refs) */
    struct sampling_frame frames[];
};

/* What a sample is when it is taken, beyond its site: one struct that the
 * record, what a new sample brings (sampling_sample_in) and a Ruby Sample
 * (sample.c) all embed, so a new attribute is one field here. */
struct sampling_sample {
    double weight;          /* estimated bytes this sample stands for */
    size_t allocated_gc;    /* GC count when allocated */
    uint32_t size;          /* slot bytes */
    uint8_t heap;           /* heap index */
};

struct sampling_record {
    uint64_t seq;           /* 1, 2, ... in order taken; 0: slot unused */
    struct sampling_stack *stack;   /* where, the class and the type */
    struct sampling_sample sample;
    size_t freed_gc;        /* GC count of the collection that found it dead */
    uint32_t live_pos;      /* index in live[], SAMPLING_NONE once dead */
    uint8_t old;            /* promoted to the old generation */
};

struct sampling_live {
    uintptr_t obj;
    uint32_t record;
};

struct sampling_stack_table {
    struct sampling_stack **slots;  /* open addressing, NULL: empty */
    size_t capacity, size;
};

struct sampling_records {
    size_t max;                         /* max_samples: records, and sites */
    struct sampling_record *items;      /* [used] */
    size_t capacity, used;              /* allocated / high water */
    uint32_t *free_slots;               /* stack of unused slot indices */
    size_t nfree;
    uint32_t *dead;                     /* ring of dead slot indices, oldest first */
    size_t dead_head, ndead, dead_capacity;
    struct sampling_live *live;         /* [0, nold): promoted; [nold, nlive): young */
    size_t nlive, nold, live_capacity;
    struct sampling_stack_table stacks; /* sites not named */
    struct sampling_stack *oldest, *newest;             /* every site */
    struct sampling_stack *idle_oldest, *idle_newest;   /* sites without records */
    size_t nsites;
    struct refset refs;                 /* references the sites in the table hold */
    double other_space, other_objects;  /* totals of folded sites, and of samples no site could take */
    uint64_t folded;                    /* sites folded into other_* to stay within max */
    uint64_t named;                     /* sites named because a reference died */
    uint64_t next_seq;
    uint64_t dropped;                   /* samples not recorded (table full of live records, a read, no memory) */
    uint64_t evicted;                   /* dead records pushed out by new samples */
    int reading;                        /* readers: no record is evicted and no site folded meanwhile */
};

/* What a new sample brings: the object, its site, and the sample. */
struct sampling_sample_in {
    uintptr_t obj, klass;
    const struct sampling_frame *frames;
    uint64_t hash;                      /* sampling_stack_hash of the frames */
    uint32_t nframes;
    bool truncated;
    struct sampling_kind kind;
    struct sampling_sample sample;
};

void sampling_records_init(struct sampling_records *r, size_t max);

/* Sizes every table for `max` records at once (at most
 * SAMPLING_RESERVE_MAX), so that the sampling path never copies one as it
 * grows (a copy of megabytes inside an allocation).  Pages are touched as
 * records fill them.  False when memory runs out; the tables then grow as
 * before, as they do past the reserve. */
#define SAMPLING_RESERVE_MAX ((size_t)1 << 20)     /* records: 80 MB */
bool sampling_records_reserve(struct sampling_records *r);

/* Records a sample: its weight goes to its site's totals, and it gets a
 * record.  Returns the record's slot index, or SAMPLING_NONE when no
 * record could be kept (counted in r->dropped; the totals have it). */
uint32_t sampling_records_add(struct sampling_records *r, const struct sampling_sample_in *in);

/* The end of a marking: asks `liveness` about live records' objects (0:
 * unmarked, dead; 1: marked; 2: marked and old).  Dead ones get freed_gc =
 * gc_count and lose their object; old ones move to the promoted part of
 * live[].  A minor marking (major false) asks about young records only:
 * it never frees an old object, so the promoted part costs it nothing. */
typedef int sampling_liveness_fn(uintptr_t obj, void *data);
void sampling_records_check_liveness(struct sampling_records *r, sampling_liveness_fn *liveness,
                                     void *data, size_t gc_count, bool major);

/* Collections a record's object has survived, given the current count:
 * every one since its allocation while it lives; those before the one
 * that found it dead otherwise. */
static inline size_t
sampling_record_age(const struct sampling_record *rec, size_t gc_count)
{
    size_t last = rec->live_pos == SAMPLING_NONE ? rec->freed_gc - 1 : gc_count;
    return last > rec->sample.allocated_gc ? last - rec->sample.allocated_gc : 0;
}

/* The end of a marking, after check_liveness: `state` says of a
 * reference (class, iseq, method entry) 0: unmarked, it dies in this
 * collection; 1: marked; 2: marked and old.  Every site holding a dead
 * one is named by `name` (NULL when memory ran out: it then shows as
 * unknown) and drops its frames' references; it keeps its class while
 * the class lives.  When nothing died it costs one look at each distinct
 * reference; otherwise a look at each site's references, skipping in a
 * minor marking (major false) the sites whose references were all old. */
typedef int sampling_ref_state_fn(uintptr_t ref, void *data);
typedef struct sampling_names *sampling_name_fn(const struct sampling_stack *site, void *data);
void sampling_records_check_refs(struct sampling_records *r, sampling_ref_state_fn *state, sampling_name_fn *name,
                                 void *data, bool major);

/* Compaction moved objects: every held reference k becomes location(k). */
typedef uintptr_t sampling_location_fn(uintptr_t ref, void *data);
void sampling_records_update_references(struct sampling_records *r, sampling_location_fn *location, void *data);

/* In a forked child: totals start again from zero and dead records go;
 * live records stay (objects the child inherited, still in use). */
void sampling_records_after_fork(struct sampling_records *r);

/* A new bound: the oldest dead records go first (evicted), then the
 * oldest live ones (dropped), until at most max are left. */
void sampling_records_set_max(struct sampling_records *r, size_t max);

/* The object of a live record, 0 if dead or `index` no longer holds seq. */
uintptr_t sampling_records_object(const struct sampling_records *r, uint32_t index, uint64_t seq);

/* Used records (live + dead). */
static inline size_t
sampling_records_count(const struct sampling_records *r)
{
    return r->used - r->nfree;
}

/* Drops every record and site; keeps max. */
void sampling_records_clear(struct sampling_records *r);
void sampling_records_free(struct sampling_records *r);

/* Checks the invariants above; returns NULL or a message. */
const char *sampling_records_verify(const struct sampling_records *r);

#define SAMPLING_RECORDS_FOREACH(r, rec) \
    for (struct sampling_record *rec = (r)->items; rec < (r)->items + (r)->used; rec++) \
        if (rec->seq)

#define SAMPLING_SITES_FOREACH(r, s) \
    for (struct sampling_stack *s = (r)->oldest; s; s = s->newer)

#endif
