/*
 * sampler.h: the sampler as the Ruby API sees it (implemented in
 * sampling.c, the one file that knows the collector's internals).
 *
 * Every function here is called from a Ruby thread holding the GVL,
 * outside GC, and takes the VM lock itself.  Start, stop and clear also
 * wait at the VM barrier, so no other Ractor runs Ruby code meanwhile; a
 * Ractor parked inside newobj_cache_miss may find its cache's list changed
 * when it gets the lock (sampling.c's cache miss hook allows for that).
 */
#ifndef SAMPLING_SAMPLER_H
#define SAMPLING_SAMPLER_H

#include <stdbool.h>
#include <stdint.h>

#include "ruby/ruby.h"
#include "config.h"
#include "records.h"
#include "timeline.h"

#define SAMPLER_MAX_HEAPS 12

/* The collector's part of the library's entry points.  api.c defines
 * rb_gc_impl_init, rb_gc_impl_set_params and rb_gc_impl_after_fork
 * (gc.c finds them by name in the library); each calls its part here
 * first, then starts the API's, so the core never calls up into the
 * files above it (HACKING.md's "Layers").  init: the default GC's, then
 * the sampler's state, before any Ruby code runs.  set_params: once the
 * VM can run threads (ruby_gc_set_params, from process_options).
 * after_fork: pid 0 in the child of a Ruby-level fork. */
void sampler_gc_init(void);
void sampler_gc_set_params(void *objspace);
void sampler_gc_after_fork(void *objspace, rb_pid_t pid);

struct sampler_heap_stats {
    size_t slot_size;
    uint64_t allocated_bytes;   /* slot bytes allocated on this heap while enabled */
    uint64_t samples;           /* samples taken on this heap */
    uint64_t points;            /* sample points crossed (>= samples) */
};

struct sampler_stats {
    bool enabled;
    enum sampling_mode mode;
    uint64_t interval;
    uint32_t depth;
    size_t max_samples;
    uint64_t samples;           /* every sample taken: the heaps' and malloc_samples; samples + carried ==
                                 * records + dropped + evicted + reader_samples + merged */
    uint64_t live, dropped, evicted, allocated_bytes;
    uint64_t records, sites, folded;    /* records kept, sites, sites folded into <other sites> */
    uint64_t named;                     /* sites whose class or code died (kept as text) */
    bool malloc;                        /* malloc'd bytes sampled (malloc.c) */
    uint64_t malloc_allocated_bytes;    /* bytes through rb_gc_impl_malloc/calloc/realloc (growth) while enabled */
    uint64_t malloc_samples, malloc_points;
    double live_space[SAMPLING_LIVE_KINDS];     /* estimated live bytes: slots, malloc'd blocks (records.h) */
    uint64_t total_allocated_bytes;             /* the allocation clock (records.h) */
    bool peak;                                  /* a peak was seen (timeline.h) */
    uint64_t peak_gc;
    double peak_live;                           /* its estimate, slots + malloc'd bytes */
    uint64_t peak_lost;                         /* records of its set lost (records.h) */
    uint64_t timeline_rows;
    uint64_t reader_samples;                    /* samples of readers' own allocations, not recorded */
    uint64_t merged;                            /* malloc growth samples merged into their block's record */
    uint64_t carried;                           /* records held when counting began (start, fork) */
    uint64_t lost_frees;                        /* frees of sampled blocks lost to a full queue (malloc.c) */
    size_t nheaps;
    struct sampler_heap_stats per_heap[SAMPLER_MAX_HEAPS];
};

/* The sampler's own memory, by part: the bytes each structure asked
 * malloc for (by capacity; malloc's own overhead per block not
 * included), and the malloc side's static arrays.  Computed when read,
 * never counted on the sampling path: O(sites) for the sites, O(1) for
 * the rest.  Each part's bound is stated where its structure is
 * declared (records.h, sites.h, labels.h, timeline.h, malloc.c,
 * addresses.h); scratch is the capture's buffer, depth + 1 frames. */
enum sampler_memory_part {
    SAMPLER_MEMORY_RECORDS,         /* records.h: the record tables */
    SAMPLER_MEMORY_SITES,           /* sites.h: sites, their frames and names, the table, the references */
    SAMPLER_MEMORY_LABEL_SETS,      /* labels.h */
    SAMPLER_MEMORY_TIMELINE,        /* timeline.h: the rows */
    SAMPLER_MEMORY_MALLOC_TABLE,    /* malloc.c: sampled blocks, the filter, the queue */
    SAMPLER_MEMORY_ADDRESSES,       /* addresses.h: the Locations' addresses */
    SAMPLER_MEMORY_SCRATCH,         /* the capture's buffer */
    SAMPLER_MEMORY_PARTS
};
extern const char *const sampler_memory_names[SAMPLER_MEMORY_PARTS];

/* Fills parts[] and returns their sum (takes the VM lock; may be called
 * inside a read). */
size_t sampler_memory(size_t parts[SAMPLER_MEMORY_PARTS]);

/* Starts (or restarts with new settings): counters start from zero and
 * points are placed in the lists caches already hold, so counting is exact
 * from the next allocation.  Records are kept (clear drops them). */
void sampler_start(const struct sampling_params *params);

/* Stops; every cut list is rejoined.  Returns whether it was running. */
bool sampler_stop(void);

/* Drops every record and counter; a running sampler starts counting anew. */
void sampler_clear(void);

bool sampler_enabled(void);
void sampler_get_stats(struct sampler_stats *stats);

/* The records, for reading between sampler_read_begin and _end only. */
struct sampling_records *sampler_records(void);

/* Brackets a read that allocates Ruby objects.  Holds the VM lock (other
 * Ractors that sample wait; a Ractor's own samples go on) and keeps GC off,
 * so no record changes state and nothing moves or is freed but records
 * evicted by new samples; samples taken meanwhile have seq >= the returned
 * value.  Pair every begin with an end (rb_ensure), passing *lev back. */
uint64_t sampler_read_begin(unsigned int *lev);
void sampler_read_end(unsigned int lev);

/* Brackets a reader, from its first allocation to the last of what it
 * returns (read.h: read_scope): samples of what the running fiber
 * allocates meanwhile are counted, not recorded (sampling.c says how).
 * Nests; pair each enter with a leave on the same fiber (rb_ensure). */
void sampler_reader_enter(void);
void sampler_reader_leave(void);

/* Leaves the running fiber's reader scope for the program's code a
 * reader calls (an IO's write), returning how deep it was; resume
 * restores it. */
unsigned int sampler_reader_pause(void);
void sampler_reader_resume(unsigned int depth);

/* A copy of the record at index if it still holds sample seq (under the VM
 * lock); false otherwise. */
bool sampler_record_copy(uint32_t index, uint64_t seq, struct sampling_record *out);

/* The sampled object of a record while it lives, else Qnil; never another
 * object (the record loses its reference before the slot can be reused). */
VALUE sampler_object(uint32_t index, uint64_t seq);

/* The rows and the peak (timeline.h), for reading between
 * sampler_read_begin and _end only. */
const struct sampling_timeline *sampler_timeline(void);

/* The allocation clock now (records.h; sampling.c says which bytes). */
uint64_t sampler_clock(void);
/* Whether Ruby code may be handed obj (a live object the sampler found):
 * not an internal one (imemo, hidden), as ObjectSpace.each_object
 * decides, and, once a second Ractor was made, only a shareable one. */
bool sampler_object_visible(VALUE obj);

/* ---- the retention walk (retention_walk.c; retention.h is the walk) ---- */

/* Root kinds, in the order roots are added: an object several roots
 * hold is named by the first. */
enum sampler_root_kind {
    SAMPLER_ROOT_GLOBAL,            /* a global variable's value */
    SAMPLER_ROOT_FINALIZER,         /* a finalizer (ObjectSpace.define_finalizer) */
    SAMPLER_ROOT_END_PROC,          /* an at_exit / END block */
    SAMPLER_ROOT_VM,                /* the VM: threads, Ractors, loaded features, registered objects */
    SAMPLER_ROOT_MACHINE_STACK,     /* the current thread's C stack and registers (conservative) */
    SAMPLER_ROOT_OTHER,             /* any other category the VM reports */
    SAMPLER_ROOT_KINDS
};

/* Inside a read (sampler_read_begin): stops the other Ractors (VM
 * barrier) and walks from the roots towards the objects of the live slot
 * records with seq < limit (only the object ~only_hidden, if that is not
 * 0), keeping at most max_nodes nodes.  False without memory for the
 * walk.  The one target comes complemented: the current thread's machine
 * stack is a root, scanned conservatively, and a caller's copy of the
 * address would be found there as a root that holds it. */
struct retention;
bool sampler_retention_walk(struct retention *r, size_t max_nodes, uint64_t limit, uintptr_t only_hidden);

/* Inside a read: stops the other Ractors (the VM barrier) while the
 * caller reads objects they may own. */
void sampler_retention_barrier(void);

/* The object whose finalizer table `table` is, or Qundef. */
VALUE sampler_finalizer_owner(VALUE table);

/* Slots in the heap now (the most nodes a walk can need), and the bytes
 * of a walk's visited bitmap. */
size_t sampler_heap_slots(void);
size_t sampler_retention_bitmap_bytes(void);

/* The settings the sampler runs (or last ran) with. */
const struct sampling_params *sampler_params(void);

#endif
