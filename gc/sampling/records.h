/*
 * records.h: the sampler's memory: sample records, and the sites they
 * were taken at.
 *
 * Model.  A record is one sample: the object (held weakly), its site,
 * slot size, weight and GC numbers.  Records
 * sit in a table of at most `max` slots; the live ones are also listed in a
 * dense array (live[]) that the collector walks at the end of each marking,
 * so that cost grows with the live samples only.  When a record's object
 * is found unmarked it is dead: its object reference is dropped at once
 * (before the sweep can reuse the slot), and its slot index joins the dead
 * queue.  A new sample in a full table evicts the oldest dead record; with
 * no dead record to evict the sample is dropped.  Both are counted.
 *
 * Where each was taken is its site (sites.h): a stack, a class and a
 * type, shared by the records taken there, with totals of every sample
 * (so evicting or dropping a record never changes a total).
 *
 * Lifetimes.  A record carries two clocks at its allocation and at its
 * death: the GC count and the allocation clock (struct sampling_now;
 * sampling.c: slot bytes the process has allocated, which does not
 * depend on when GCs run).  What a record does is counted into its site
 * when it happens (sites.h, struct sampling_lifetimes): its promotion
 * in the walk that finds it old, its death (age bucket, promoted or not,
 * heaptime) in the walk that finds it dead or when its block is freed.
 * A record that survives a walk costs that walk nothing more: survivors
 * are censored, read from the live records when asked.  live_space[]
 * keeps the sum of the live records' weights, slots and malloc'd blocks
 * apart, moved by every add and every end: the live estimate at each
 * GC costs O(1).  Deaths are numbered (`death`), so that the live set of
 * a past moment (the peak) is known from the records without a copy
 * (struct sampling_peak_set).
 *
 * Reads (r->reading > 0) see a fixed set: no record is evicted and no site
 * folded meanwhile; a sample that would need either is dropped as a
 * record (its bytes still go to its site's totals), so a reader's own
 * allocations never crowd out the records it reads.
 *
 * Invariants (checked by sampling_records_verify):
 *   live[i].record's live_pos == i, and the record is not dead
 *   live[i] is a malloc'd block's iff i < nmalloc, old (promoted) iff
 *   nmalloc <= i < nold
 *   every dead record in use is in the dead queue exactly once
 *   used slots == nlive + dead records;  nlive + ndead + nfree == used high water
 *   the sites' refcounts add up to the records in use;  and sites.h's own
 *   live_space[k] == the weights of the live records of kind k (to rounding)
 *   young_space[k], young_count: the same of the live records with
 *   seq >= window_seq
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

#include "sites.h"

#define SAMPLING_NONE UINT32_MAX

/* What a sample is when it is taken, beyond its site: one struct that
 * what a new sample brings (sampling_sample_in) and a Ruby Sample
 * (sample.c) embed, and that a record holds packed (sampling_record_sample
 * gives it back).  A new attribute starts as a field here: HACKING.md's
 * "A sample attribute" has the rest. */
#define SAMPLING_HEAP_MALLOC UINT8_MAX
struct sampling_sample {
    double weight;          /* estimated bytes this sample stands for */
    size_t allocated_gc;    /* GC count when allocated */
    uint64_t allocated_bytes;   /* the allocation clock when allocated */
    uint64_t size;          /* slot bytes; a malloc'd block's bytes (at most SAMPLING_SIZE_MAX) */
    uint8_t heap;           /* heap index; SAMPLING_HEAP_MALLOC: a malloc'd block */
};

/* A record is 64 bytes, one cache line: a sample's record is new memory
 * the sample path writes (the table fills before it reuses a slot), so
 * its size is what each sample costs in cache misses.  The sample's
 * fields are spelled out (sampling_record_sample gives them back as one
 * struct); what only a live or only a dead record needs shares a word. */
struct sampling_record {
    uint64_t seq;           /* 1, 2, ... in order taken; 0: slot unused */
    struct sampling_site *site;     /* where, the class and the type */
    double weight;          /* the sample's (struct sampling_sample) */
    uint64_t allocated_bytes;
    uint64_t freed_bytes;   /* dead: the allocation clock when found dead */
    uint64_t death;         /* dead: the records' deaths count then: the order of deaths */
    union {
        struct {
            uint64_t allocated_gc : 42;     /* (4.4e12 collections: more than any process runs) */
            uint64_t heap : 8;
            uint64_t old : 1;               /* promoted to the old generation */
            uint64_t dead : 1;
            uint64_t size_hi : 12;          /* size's bits 32-43 (malloc'd blocks over 4 GiB) */
        };
        uint64_t gc_word;   /* the five, written at once by a new record */
    };
    uint32_t size;          /* size's low 32 bits (sampling_record_size) */
    union {
        uint32_t live_pos;  /* live: index in live[] */
        uint32_t freed_gcs; /* dead: freed_gc - allocated_gc (UINT32_MAX at most) */
    };
};

/* The largest size a record holds exactly (16 TiB, more memory than any
 * machine a Ruby runs on); larger ones read as this. */
#define SAMPLING_SIZE_MAX ((UINT64_C(1) << 44) - 1)

static inline uint64_t
sampling_record_size(const struct sampling_record *rec)
{
    return (uint64_t)rec->size | ((uint64_t)rec->size_hi << 32);
}

static inline void
sampling_record_set_size(struct sampling_record *rec, uint64_t size)
{
    if (size > SAMPLING_SIZE_MAX) size = SAMPLING_SIZE_MAX;
    rec->size = (uint32_t)size;
    rec->size_hi = size >> 32;
}

struct sampling_live {
    uintptr_t obj;
    uint32_t record;
};

/* The two clocks a lifetime is measured on: GC.count, and the allocation
 * clock (bytes; the owner says which bytes). */
struct sampling_now {
    size_t gc;
    uint64_t bytes;
};

/* Kinds of live estimate: a Ruby object's slot, a malloc'd block. */
enum { SAMPLING_LIVE_SLOT, SAMPLING_LIVE_MALLOC, SAMPLING_LIVE_KINDS };

/* One record of the peak's live set whose record has gone since. */
struct sampling_peak_entry {
    uint64_t site;          /* its site's id (sites.h: never reused) */
    double weight;
    uint64_t size;
};

/* The live set at a chosen moment (the peak, timeline.h), kept without a
 * copy: a record was live then iff it had been taken (seq < seq) and
 * had not died (live now, or death >= deaths).  Marking the moment is
 * O(1); a member whose record goes (eviction, a lower max, no memory)
 * leaves its site id, weight and size in spill, so the set stays whole
 * (spill holds at most the members: bounded by max). */
struct sampling_peak_set {
    bool taken;
    uint64_t seq, deaths;
    struct sampling_peak_entry *spill;
    size_t nspill, spill_capacity;
    uint64_t lost;          /* members that went with no memory to spill them */
};

struct sampling_records {
    size_t max;                         /* max_samples: records, and sites */
    struct sampling_record *items;      /* [used] */
    size_t capacity, used;              /* allocated / high water */
    uint32_t *free_slots;               /* stack of unused slot indices */
    size_t nfree;
    uint32_t *dead;                     /* ring of dead slot indices, oldest first */
    size_t dead_head, ndead, dead_capacity;
    /* [0, nmalloc): malloc'd blocks (ended by their frees: no marking
     * asks about them); [nmalloc, nold): promoted; [nold, nlive): young */
    struct sampling_live *live;
    size_t nlive, nold, nmalloc, live_capacity;
    double live_space[SAMPLING_LIVE_KINDS];     /* weights of the live records, by kind */
    size_t live_count[SAMPLING_LIVE_KINDS];     /* live records, by kind */
    uint64_t deaths;                            /* records found dead or ended so far */
    struct sampling_peak_set peak;              /* the live set at the peak */
    /* The window from the end of a marking to the end of its sweep
     * (timeline.h): records taken since (seq >= window_seq) are young,
     * their weights kept apart; UINT64_MAX: no window open. */
    uint64_t window_seq;
    double young_space[SAMPLING_LIVE_KINDS];
    size_t young_count;
    struct sampling_sites sites;        /* where they were taken (sites.h) */
    uint64_t next_seq;
    uint64_t dropped;                   /* samples not recorded (table full of live records, a read, no memory) */
    uint64_t evicted;                   /* dead records pushed out by new samples */
    int reading;                        /* reads (read.h): no record is evicted and no site folded meanwhile */
};

/* What a new sample brings: the object, its site, and the sample. */
struct sampling_sample_in {
    uintptr_t obj;
    struct sampling_site_key site;
    struct sampling_sample sample;
};

void sampling_records_init(struct sampling_records *r, size_t max);

/* Sizes every table for `max` records at once (at most
 * SAMPLING_RESERVE_MAX), so that the sampling path never copies one as it
 * grows (a copy of megabytes inside an allocation).  Pages are touched as
 * records fill them.  False when memory runs out; the tables then grow as
 * before, as they do past the reserve. */
#define SAMPLING_RESERVE_MAX ((size_t)1 << 20)     /* records: 88 MB */
bool sampling_records_reserve(struct sampling_records *r);

/* Records a sample: its weight goes to its site's totals, and it gets a
 * record.  Returns the record's slot index, or SAMPLING_NONE when no
 * record could be kept (counted in r->dropped; the totals have it). */
uint32_t sampling_records_add(struct sampling_records *r, const struct sampling_sample_in *in);

/* The end of a marking: asks `liveness` about live records' objects (0:
 * unmarked, dead; 1: marked; 2: marked and old; -1: not this marking's,
 * left as it was: another objspace's, on Ruby 4.1).  Dead ones get freed_gc
 * and freed_bytes from now, lose their object, and count their death in
 * their site; old ones move to the promoted part of live[] and count
 * their promotion.  A minor marking (major false) asks about young
 * records only: it never frees an old object, so the promoted part costs
 * it nothing.  No marking asks about malloc'd blocks (heap
 * SAMPLING_HEAP_MALLOC): their records end when they are freed
 * (sampling_records_end), and they sit apart at the front of live[]. */
typedef int sampling_liveness_fn(uintptr_t obj, void *data);
void sampling_records_check_liveness(struct sampling_records *r, sampling_liveness_fn *liveness,
                                     void *data, struct sampling_now now, bool major);

/* The GC count of the collection that found a dead record dead. */
static inline size_t
sampling_record_freed_gc(const struct sampling_record *rec)
{
    return (size_t)rec->allocated_gc + rec->freed_gcs;
}

/* Marks a record dead, found so by the collection numbered freed_gc
 * (kept as its difference from allocated_gc, at most UINT32_MAX).
 * Returns the difference. */
static inline size_t
sampling_record_set_freed_gc(struct sampling_record *rec, size_t freed_gc)
{
    size_t gcs = freed_gc > (size_t)rec->allocated_gc ? freed_gc - (size_t)rec->allocated_gc : 0;
    rec->dead = 1;
    rec->freed_gcs = gcs < UINT32_MAX ? (uint32_t)gcs : UINT32_MAX;
    return gcs;
}

/* Collections a record's object has survived, given the current count:
 * every one since its allocation while it lives; those before the one
 * that found it dead otherwise. */
static inline size_t
sampling_record_age(const struct sampling_record *rec, size_t gc_count)
{
    size_t freed = rec->dead ? sampling_record_freed_gc(rec) : 0;
    size_t last = !rec->dead ? gc_count : freed ? freed - 1 : 0;
    return last > (size_t)rec->allocated_gc ? last - (size_t)rec->allocated_gc : 0;
}

/* The sample a record holds, as it was taken. */
static inline struct sampling_sample
sampling_record_sample(const struct sampling_record *rec)
{
    return (struct sampling_sample){ rec->weight, rec->allocated_gc, rec->allocated_bytes, sampling_record_size(rec),
                                     (uint8_t)rec->heap };
}

/* The end of a marking, after check_liveness: sampling_sites_check_refs
 * on the records' sites (sites.h). */
static inline void
sampling_records_check_refs(struct sampling_records *r, sampling_ref_state_fn *state, sampling_name_fn *name,
                            void *data, bool major)
{
    sampling_sites_check_refs(&r->sites, state, name, data, major);
}

/* Ends the live record at index if it still holds sample seq: it is
 * dead from now on, as if a marking had found it so (malloc.c: a freed
 * block).  Returns whether it did. */
bool sampling_records_end(struct sampling_records *r, uint32_t index, uint64_t seq, struct sampling_now now);

/* A live record's block changed size (malloc.c: a realloc): a shrink
 * scales its weight by size / its old size (each of the block's bytes
 * stood for as much as before), then add_weight is added (the growth's
 * own sample, if it held a point), and size becomes its size.  The live
 * estimate follows; obj (the block's new address) replaces its object.
 * Returns whether index still held seq. */
bool sampling_records_resize(struct sampling_records *r, uint32_t index, uint64_t seq, uint64_t size,
                             double add_weight, uintptr_t obj);

/* A sample counted into its site's totals without a record of its own
 * (malloc.c: a sampled block's growth, whose bytes in use its block's
 * record carries). */
void sampling_records_tally(struct sampling_records *r, const struct sampling_sample_in *in);

/* The window of a marking (timeline.h): open_window at its end makes the
 * records taken from then on young; close_window forgets them. */
void sampling_records_open_window(struct sampling_records *r);
void sampling_records_close_window(struct sampling_records *r);

/* Compaction moved objects: every held reference k becomes location(k). */
void sampling_records_update_references(struct sampling_records *r, sampling_location_fn *location, void *data);

/* In a forked child: totals start again from zero and dead records go;
 * live records stay (objects the child inherited, still in use). */
void sampling_records_after_fork(struct sampling_records *r);

/* A new bound: the oldest dead records go first (evicted), then the
 * oldest live ones (dropped), until at most max are left. */
void sampling_records_set_max(struct sampling_records *r, size_t max);

/* The object of a live record, 0 if dead or `index` no longer holds seq. */
uintptr_t sampling_records_object(const struct sampling_records *r, uint32_t index, uint64_t seq);

/* The kind of live estimate a record counts in. */
static inline int
sampling_record_kind(const struct sampling_record *rec)
{
    /* (its own field, not its site's kind: a death reads no site line for it) */
    return rec->heap == SAMPLING_HEAP_MALLOC ? SAMPLING_LIVE_MALLOC : SAMPLING_LIVE_SLOT;
}

/* Bytes on the allocation clock a record's object lived (dead) or has
 * lived so far (live: censored), given the clock now. */
static inline uint64_t
sampling_record_age_bytes(const struct sampling_record *rec, uint64_t clock)
{
    uint64_t end = rec->dead ? rec->freed_bytes : clock;
    return end > rec->allocated_bytes ? end - rec->allocated_bytes : 0;
}

/* The live set now becomes the peak's (O(1)); forget_peak forgets it.
 * With a window open, the live set now less the young records: those
 * live at the window's start that are still live. */
void sampling_records_mark_peak(struct sampling_records *r);
void sampling_records_forget_peak(struct sampling_records *r);

/* Whether a record in use was in the peak's live set. */
static inline bool
sampling_record_in_peak(const struct sampling_records *r, const struct sampling_record *rec)
{
    return r->peak.taken && rec->seq < r->peak.seq && (!rec->dead || rec->death >= r->peak.deaths);
}

/* Used records (live + dead). */
static inline size_t
sampling_records_count(const struct sampling_records *r)
{
    return r->used - r->nfree;
}

/* Bytes the record tables hold (items, free slots, the dead ring, live[],
 * the peak's spill), by capacity: what was asked of malloc, sites apart
 * (sampling_sites_memsize).  Bound: max x 88 bytes (reserved at start up
 * to SAMPLING_RESERVE_MAX records), the dead ring rounded up to a power
 * of two, and a spill of at most max entries (its capacity doubles from
 * 1,024: at most the power of two >= max) of 24 bytes. */
size_t sampling_records_memsize(const struct sampling_records *r);

/* Drops every record and site; keeps max. */
void sampling_records_clear(struct sampling_records *r);
void sampling_records_free(struct sampling_records *r);

/* Checks the invariants above; returns NULL or a message. */
const char *sampling_records_verify(const struct sampling_records *r);

#define SAMPLING_RECORDS_FOREACH(r, rec) \
    for (struct sampling_record *rec = (r)->items; rec < (r)->items + (r)->used; rec++) \
        if (rec->seq)


#endif
