/*
 * sample_point.h: the sample point on a free-slot list (Ruby 3.4), or on
 * an allocation count (Ruby 4.0, below: the same countdown and draws).
 *
 * Model.  A Ractor's allocation cache hands out slots of one heap from a
 * singly linked free list; the fast path pops the head and, when the list
 * is empty, falls into the GC's slow path (newobj_cache_miss).  The
 * sampler never touches the fast path.  Instead it cuts the list just
 * before the slot whose allocation reaches the next sample point and keeps
 * the rest aside (the tail):
 *
 *      cache list:  a -> b -> c -> NULL        tail: S -> d -> e -> NULL
 *                   (allocated by the fast path) (S is the sampled slot)
 *
 * When a, b, c are gone the list is empty, the slow path runs, sees the
 * tail and takes S as the sample (sample_point_take), then puts d, e back
 * as the cache list, placing the next point in them.  The GC's own
 * "list is empty" check is the sample check, as HotSpot's TLAB end and
 * PyPy's nursery limit are.
 *
 * Accounting.  `countdown` is the number of bytes between the bytes
 * charged so far and the next point.  Slots are charged when they are put
 * on the cache list, before they are allocated; the ones still on the list
 * when it is given back (GC sweep start, Ractor exit, stop) are credited
 * back (sample_point_rejoin).  So at every moment, with L slots on the
 * list:
 *
 *      bytes allocated through this pair  = charged - L * slot_size
 *      next point (absolute byte)         = charged + countdown
 *      countdown > 0;  tail != NULL  =>  countdown <= slot_size
 *      (the tail's first slot is the allocation that reaches the point)
 *
 * An allocation reaching the point may pass several (interval < slot
 * size): it is one sample whose `points` counts them all.
 *
 * Only two functions move a point: sample_point_place (a new list) and
 * sample_point_take (the sample is taken).  Callers hold whatever lock
 * serialises the cache (the VM lock in CRuby); nothing here locks.
 * Pure C: tested against mock lists without Ruby.
 */
#ifndef SAMPLING_SAMPLE_POINT_H
#define SAMPLING_SAMPLE_POINT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gap.h"

/* The layout of a free slot in gc/default/default.c (struct free_slot),
 * and a list head (the cache's freelist field).  The collector reads and
 * writes these memory words as its own types, in the same translation
 * unit (sampling.c compiles this file in): may_alias tells the compiler
 * they are the same memory, so it cannot reorder one access past the
 * other under strict aliasing.  GCC applies the attribute to pointers
 * declared after the struct, not to the `next` member's own type: read
 * and write links only through slot_next/slot_set_next (sample_point.c)
 * and lists through sample_point_list. */
struct __attribute__((may_alias)) sample_point_slot {
    uintptr_t flags;
    struct sample_point_slot *next;
};
typedef struct sample_point_slot *sample_point_list __attribute__((may_alias));

/* How points are drawn; shared by all pairs of one sampler. */
struct sample_point_config {
    enum sampling_mode mode;
    uint64_t interval;          /* mean (poisson) or exact (fixed) bytes between points, >= 1 */
    struct sampling_rng rng;
};

/* One (Ractor cache, heap) pair. */
struct sample_point {
    struct sample_point_slot *tail;      /* cut-off rest, first slot sampled; NULL: no cut */
    struct sample_point_slot *head_last; /* last slot left on the cache list; NULL if none */
    size_t tail_count;                   /* slots in tail */
    int64_t countdown;                   /* bytes from what is charged to the next point, > 0 */
#ifdef SAMPLING_PHASES
    uint64_t ph_last, ph_links;          /* benchmark/phases: last take, links walked */
    uint32_t ph_placements;              /* placements made, choosing the walk variant */
    uint8_t ph_variant, ph_cut;          /* variant of this walk, of the cut now waiting */
#endif
};

/* Forgets any cut (the caller has rejoined it) and draws the first gap. */
void sample_point_reset(struct sample_point *sp, struct sample_point_config *config);

/* A cache took a list of `count` free slots of `slot_size` bytes: charge
 * them and, if the next point falls inside, cut the list before the slot
 * that reaches it.  Requires sp->tail == NULL. */
void sample_point_place(struct sample_point *sp, sample_point_list *list,
                        size_t count, size_t slot_size);

/* True when the cache list is empty and a sampled slot waits in the tail:
 * the slow path's allocation is a sample. */
static inline bool
sample_point_due(const struct sample_point *sp, const sample_point_list *list)
{
    return *list == NULL && sp->tail != NULL;
}

/* Takes the sampled slot off the tail (sample_point_due must hold), draws
 * the gaps to the next point, stores in *points how many points the slot
 * held (>= 1), and puts the rest of the tail back as the cache list with
 * the next point placed in it. */
struct sample_point_slot *sample_point_take(struct sample_point *sp, sample_point_list *list,
                                            size_t slot_size, struct sample_point_config *config,
                                            uint64_t *points);

/* The cache gives its list back: the tail is joined back on (no slot is
 * lost) and the slots never allocated are credited back, so the countdown
 * stays exact.  Afterwards sp->tail == NULL. */
void sample_point_rejoin(struct sample_point *sp, sample_point_list *list, size_t slot_size);

/* ---- On an allocation count (Ruby 4.0) ----
 *
 * 4.0's fast path counts each allocation in the cache and, when the count
 * reaches a limit, adds it to the heap's total and starts again from zero
 * (patches/4.0).  With the limit lowered to the allocation that reaches
 * the next point, that compare is the sample check: no list is cut or
 * walked, and the slot handed out at the limit is the sample.  The
 * accounting is the list's, with the limit for the cut: slots are charged
 * up to the limit when it is set, so with the cache's count at c,
 *
 *      bytes allocated through this pair  = charged - (limit - c) * slot_size
 *      limit > c;  countdown <= 0  <=>  the allocation at the limit reaches
 *                                       the point (then countdown > -slot_size)
 *
 * and a count added to the heap elsewhere moves the limit down by as much
 * (the caller's), so the same allocation stays the sample.  tail,
 * head_last and tail_count stay NULL and 0. */

/* Sets the limit with `count` allocations counted (count < cap): the count
 * at which the allocation reaching the next point is made, or `cap` if
 * that comes later; charges the slots up to it.  Requires countdown > 0. */
size_t sample_point_limit(struct sample_point *sp, size_t count, size_t cap, size_t slot_size);

/* The count reached the limit: the number of points the allocation there
 * reached (0: none, the limit was the cap), with the gaps to the next
 * point drawn; afterwards countdown > 0. */
uint64_t sample_point_reached(struct sample_point *sp, struct sample_point_config *config);

/* The number of slots on a list (walks it). */
size_t sample_point_list_length(const struct sample_point_slot *list);

#endif /* SAMPLING_SAMPLE_POINT_H */
