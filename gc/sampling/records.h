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
 * A stack is a place and a class: the frames, and the class of the
 * objects allocated there.  Each is stored once (hashed on its frames) and
 * shared by every record of that class taken at that place; it leaves
 * with its last record.  So a record holds nothing itself: the class,
 * iseqs and method entries are the stacks', each counted once per stack
 * in `refs`, the set the collector marks (movable) on every GC.  (A place
 * rarely allocates more than one class; keeping the class here saves a
 * lookup in `refs` on every sample.)
 *
 * Invariants (checked by sampling_records_verify):
 *   live[i].record's live_pos == i;  a record is dead iff live_pos == NONE
 *   live[i] is old (promoted) iff i < nold
 *   every dead record in use is in the dead queue exactly once
 *   used slots == nlive + dead records;  nlive + ndead + nfree == used high water
 *   refs counts == references held by stored stacks
 *   a stored stack's hash == sampling_stack_hash of its frames
 *   a stored stack sits in the probe run from its home (hash and class)
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

struct sampling_stack {
    uint64_t hash;          /* of the frames only */
    uintptr_t klass;        /* 0: hidden object or internal (T_IMEMO) */
    uint32_t refcount;      /* records that use it */
    uint32_t nframes;
    bool truncated;         /* cut at depth */
    struct sampling_frame frames[];
};

struct sampling_record {
    uint64_t seq;           /* 1, 2, ... in order taken; 0: slot unused */
    struct sampling_stack *stack;   /* where, and the class */
    double weight;          /* estimated bytes this sample stands for */
    size_t allocated_gc;    /* GC count when allocated */
    size_t freed_gc;        /* GC count of the collection that found it dead */
    uint32_t size;          /* slot bytes */
    uint32_t live_pos;      /* index in live[], SAMPLING_NONE once dead */
    uint16_t type;          /* T_xxx */
    uint8_t imemo_type;     /* for T_IMEMO */
    uint8_t old;            /* promoted to the old generation */
    uint8_t heap;           /* heap index */
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
    size_t max;                         /* max_samples */
    struct sampling_record *items;      /* [used] */
    size_t capacity, used;              /* allocated / high water */
    uint32_t *free_slots;               /* stack of unused slot indices */
    size_t nfree;
    uint32_t *dead;                     /* ring of dead slot indices, oldest first */
    size_t dead_head, ndead, dead_capacity;
    struct sampling_live *live;         /* [0, nold): promoted; [nold, nlive): young */
    size_t nlive, nold, live_capacity;
    struct sampling_stack_table stacks;
    struct refset refs;
    uint64_t next_seq;
    uint64_t dropped;                   /* samples not recorded (table full of live records, or no memory) */
    uint64_t evicted;                   /* dead records pushed out by new samples */
};

/* What a new sample brings. */
struct sampling_sample_in {
    uintptr_t obj, klass;
    const struct sampling_frame *frames;
    uint64_t hash;                      /* sampling_stack_hash of the frames */
    uint32_t nframes;
    bool truncated;
    double weight;
    size_t gc_count;
    uint32_t size;
    uint16_t type;
    uint8_t imemo_type, heap;
};

void sampling_records_init(struct sampling_records *r, size_t max);

/* Sizes every table for `max` records at once (at most
 * SAMPLING_RESERVE_MAX), so that the sampling path never copies one as it
 * grows (a copy of megabytes inside an allocation).  Pages are touched as
 * records fill them.  False when memory runs out; the tables then grow as
 * before, as they do past the reserve. */
#define SAMPLING_RESERVE_MAX ((size_t)1 << 20)     /* records: 80 MB */
bool sampling_records_reserve(struct sampling_records *r);

/* Records a sample; returns its slot index, or SAMPLING_NONE when it was
 * dropped (counted in r->dropped). */
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
    return last > rec->allocated_gc ? last - rec->allocated_gc : 0;
}

/* Compaction moved objects: every held reference k becomes location(k). */
typedef uintptr_t sampling_location_fn(uintptr_t ref, void *data);
void sampling_records_update_references(struct sampling_records *r, sampling_location_fn *location, void *data);

/* The object of a live record, 0 if dead or `index` no longer holds seq. */
uintptr_t sampling_records_object(const struct sampling_records *r, uint32_t index, uint64_t seq);

/* Used records (live + dead). */
static inline size_t
sampling_records_count(const struct sampling_records *r)
{
    return r->used - r->nfree;
}

/* A reader that allocates (and so may see records evicted) keeps a stack
 * from being freed under it. */
void sampling_stack_retain(struct sampling_stack *s);
void sampling_stack_release(struct sampling_records *r, struct sampling_stack *s);

/* Drops every record and stack; keeps max. */
void sampling_records_clear(struct sampling_records *r);
void sampling_records_free(struct sampling_records *r);

/* Checks the invariants above; returns NULL or a message. */
const char *sampling_records_verify(const struct sampling_records *r);

#define SAMPLING_RECORDS_FOREACH(r, rec) \
    for (struct sampling_record *rec = (r)->items; rec < (r)->items + (r)->used; rec++) \
        if (rec->seq)

#endif
