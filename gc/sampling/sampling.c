/*
 * sampling.c: CRuby's default GC with an allocation sampler inside it.
 *
 * This is the only file of the library that sees the collector's internals.
 * (Over 450 lines: every hook, the sampler's state and the sampling
 * path they share, and sampler.h's functions, which read the collector's
 * heaps, caches and locks; the logic they call, the sample point's, the
 * records', malloc's, the walk's, is in files of their own.)
 * It defines the hook points that patches/3.4 and patches/4.0 add to
 * gc/default/default.c (the same hooks but for the sample point's; what
 * else differs between the versions is in ruby_version.h), then includes
 * that file, so the library is the default GC compiled with the hooks
 * filled in.  The logic behind each hook lives in a file of its own:
 * HACKING.md's map ("Where each concern lives") is the one list of them.
 *
 * This file is the core: it calls nothing of the readers and the Ruby API
 * above it (read.c, profile.c, ..., api.c: HACKING.md's "Layers").  They
 * call down into it through sampler.h; api.c defines the library's entry
 * points that start them (rb_gc_impl_init, _set_params, _after_fork),
 * calling this file's part first (sampler_gc_init, ...).
 *
 * The allocation path on Ruby 4.0 (ractor_cache_allocate_slot):
 *
 *   1. fast path: pop the cache's free list and count the allocation in
 *      the cache.  Unchanged but for one operand: the count is compared
 *      with the cache's limit (GC_HOOK_ALLOCATED_LIMIT, sampling_limits)
 *      instead of ALLOCATED_COUNT_STEP, and the limit is the allocation
 *      that reaches the next point, or the step if that comes first.
 *   2. at the limit the count is added to the heap, as at the step, and
 *      GC_HOOK_ALLOCATED_LIMIT_REACHED asks sampling_take: the slot just
 *      popped is the sample if it reached the point; the next limit is set
 *      either way.  The slot was counted, and charged to the marking step
 *      budget, as any other.
 *   3. wherever else the count is added to the heap (GC.stat, the sweep
 *      start, a Ractor's exit), GC_HOOK_ALLOCATED_FLUSH first moves the
 *      limit down by the count, so the same allocation stays the sample.
 *   No list is cut and no free slot is read: no walk, no hook on a new
 *   page or at the cache miss.
 *
 * The allocation path on Ruby 3.4, numbered as it runs (newobj_alloc):
 *
 *   1. fast path: pop the cache's free list.  Unchanged: the sample point
 *      is where the list was cut, so an empty list means "new page or
 *      sample".
 *   2. the empty list and a waiting tail: the allocation is a sample.
 *      With a single Ractor, GC_HOOK_NEWOBJ_CACHE_MISS_UNLOCKED asks in
 *      newobj_alloc itself, before newobj_cache_miss sets up its frame or
 *      takes the VM lock; otherwise GC_HOOK_NEWOBJ_CACHE_MISS, first thing
 *      under the lock in newobj_cache_miss.  Either way sampling_take
 *      pops the sampled slot, records it and puts the rest back with the
 *      next point cut.  No incremental marking step is taken for
 *      it: the step budget counts the sampled slot like any other, so
 *      sampling does not change when marking work happens.
 *   3. otherwise a new page: ractor_cache_set_page hands its list to the
 *      cache; GC_HOOK_CACHE_SET_PAGE places the point (sampling_set_page).
 *      The hook runs again after the retry, for a point on the first slot.
 *   4. sweep start / Ractor exit: GC_HOOK_CACHE_CLEAR rejoins the tail and
 *      credits back what was not allocated.
 *
 * Around the collector: nothing is marked for the sampler (it holds
 * sampled objects, and the classes, iseqs and method entries of its
 * sites, weakly), but for the code on the stacks of malloc samples still
 * queued (GC_HOOK_MARK_ROOTS; malloc.c says why).  GC_HOOK_MARKS_FINISHED finds sampled objects dead
 * (unmarked) before the sweep can reuse their slots, and names the sites
 * whose class or code dies; GC_HOOK_UPDATE_REFERENCES follows compaction.
 *
 * Locking: every hook runs with the VM lock held (newobj_cache_miss takes
 * it; GC holds it), except a sample taken while no second Ractor has
 * been made, which the GVL serialises as the lock would, and 4.0's limit
 * hook, which takes the lock without joining a barrier for a sample only
 * (sampling_take says why); API calls take the lock too
 * (sampler.h), and start, stop and clear also wait at the VM barrier.
 * Nothing on the sampling path allocates a Ruby object or can start a GC:
 * records and stacks live in malloc'd memory.
 */

/* The sampling path's own files are compiled here, in one translation
 * unit with the hooks, so the compiler can inline across them (extconf.rb
 * leaves them out of the link).  Their functions are hidden: a visible
 * function of a shared library may be interposed, so the compiler would
 * not inline it at all.  What they include from the system and from Ruby
 * comes first, to keep its visibility.  frames.c stays apart: it needs
 * vm_core.h, which default.c is written to do without. */
#include "ruby/internal/config.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ruby/ruby.h"
#include "ruby/ractor.h"
#include "ruby_version.h"
#if SAMPLING_INCLUDE_SANITIZERS
# include "internal/sanitizers.h"
#endif
#include "internal/static_assert.h"
#include "shared_object.h"
#include "phases.h"     /* empty unless built for benchmark/phases */
#pragma GCC visibility push(hidden)
#include "invariant.h"
#include "sample_point.h"
#include "records.h"
#include "frames.h"
#include "labels_fiber.h"
#include "sampler.h"
#include "timeline.h"
#include "addresses.h"
#include "usdt.h"
/* records.c's hook: a slot sample's end announced (a block's is malloc.c's) */
#define SAMPLING_RECORD_UNFOLLOWED(obj) do { if (!((obj) & 1)) usdt_free(obj); } while (0)
#include "sample_point.c"
#include "gap.c"
#include "refset.c"
#include "sites.c"
#include "records.c"
#include "timeline.c"
#pragma GCC visibility pop

int rb_objspace_internal_object_p(VALUE obj);  /* gc.c, exported */

/* ---- hooks (see patches/3.4, patches/4.0) ---- */

static bool sampling_on;   /* points are being placed */
/* A second Ractor may run (rb_gc_impl_ractor_cache_alloc below): a sample
 * takes the VM lock. */
static bool sampling_ractors;
/* (once a GC, out of line so that benchmark/run can measure it) */
static NOINLINE(void sampling_marks_finished(void *objspace));
static void sampling_update_references(void *objspace);
static void sampling_mark_roots(void *objspace);
static void sampling_sweep_finished(void *objspace);

/* Each hook that decides something expands to one call of a hook_*
 * function, which takes all it reads as parameters (no macro names a
 * local of default.c's function) and says why at each branch.  They are
 * defined after default.c (section "the hooks' decisions"), where the
 * cache's fields are known, and always inlined, first, as a macro's code
 * is: as plain static inline functions, inlined later, they made GCC
 * give rb_gc_impl_new_obj other registers (benchmark/results/fastpath.md
 * is the check).  klass and flags reach a hook as they reach default.c's
 * functions: the patch passes GC_HOOK_NEWOBJ_ARGS after the hook's last
 * argument, so those hooks hand their arguments on as they come
 * (__VA_ARGS__). */
#define GC_HOOK_NEWOBJ_PARAMS , VALUE klass, VALUE flags
#define GC_HOOK_NEWOBJ_ARGS , klass, flags
struct rb_objspace;
struct ractor_newobj_cache;

#if SAMPLING_POINT_ON_CURSOR
/* Ruby 4.1: the point is the end of the heap's bump cursor (patches/4.1,
 * sample_point.h's count form with a region for the count).  Placed when a
 * region is set; the cursor reaching a lowered end is the sample, which the
 * hook hands out itself (counted and charged to the marking step as
 * heap_alloc_slot does), placing the next point in the rest of the region;
 * a region given back to its page is whole again first. */
struct rb_heap_struct;
static NOINLINE(VALUE sampling_take(void *objspace, struct rb_heap_struct *heap, size_t heap_idx,
                                    VALUE klass, VALUE flags));
static NOINLINE(void sampling_region_set(void *objspace, struct rb_heap_struct *heap, size_t heap_idx));
static NOINLINE(VALUE sampling_region_advanced(void *objspace, struct rb_heap_struct *heap, size_t heap_idx,
                                               VALUE klass, VALUE flags));
static void sampling_state_clear(void *objspace, struct rb_heap_struct *heap);
static void sampling_objspace_absorb(void *dst, void *src);
ALWAYS_INLINE(static VALUE hook_alloc_cursor_end(struct rb_objspace *objspace, struct rb_heap_struct *heap,
                                                 size_t heap_idx, VALUE klass, VALUE flags));
ALWAYS_INLINE(static void hook_alloc_region_set(struct rb_objspace *objspace, struct rb_heap_struct *heap,
                                                size_t heap_idx));
ALWAYS_INLINE(static VALUE hook_alloc_region_advanced(struct rb_objspace *objspace, struct rb_heap_struct *heap,
                                                      size_t heap_idx, VALUE klass, VALUE flags));
ALWAYS_INLINE(static void hook_alloc_state_clear(struct rb_objspace *objspace, struct rb_heap_struct *heap));
/* Per heap of every objspace: the point, the start it belongs to, and
 * the region's real end while the cursor's is lowered to the point. */
#define GC_HOOK_HEAP_FIELDS \
    uintptr_t sampling_end; \
    struct sample_point sample_point; \
    uint64_t sampling_epoch; \
    size_t sampling_base, sampling_moved, sampling_at_marks; \
    uintptr_t sampling_pad;
/* (the pad makes a heap 256 bytes: the fast path finds heaps[i] with one
 * shift, where default.c's 176 take a few instructions; checked below) */
/* (objspace, heap, heap_idx GC_HOOK_NEWOBJ_ARGS) */
#define GC_HOOK_ALLOC_CURSOR_END(...) hook_alloc_cursor_end(__VA_ARGS__)
#define GC_HOOK_ALLOC_REGION_SET(objspace, heap, heap_idx) hook_alloc_region_set((objspace), (heap), (heap_idx))
/* (objspace, heap, heap_idx GC_HOOK_NEWOBJ_ARGS) */
#define GC_HOOK_ALLOC_REGION_ADVANCED(...) hook_alloc_region_advanced(__VA_ARGS__)
#define GC_HOOK_ALLOC_STATE_CLEAR(objspace, heap) hook_alloc_state_clear((objspace), (heap))
#define GC_HOOK_OBJSPACE_ABSORB(dst, src) sampling_objspace_absorb((dst), (src))
#elif SAMPLING_POINT_ON_COUNT
/* Ruby 4.0: the point is the limit of the cache's allocation count
 * (patches/4.0, sample_point.h).  The slot handed out at the limit was
 * popped and counted as any other: the hook takes it as the sample when it
 * reached the point, and sets the next limit.  Elsewhere, a count added to
 * the heap moves the limit down by as much, so the same allocation stays
 * the sample. */
static NOINLINE(VALUE sampling_take(void *objspace, void *cache, size_t heap_idx, VALUE obj,
                                    VALUE klass, VALUE flags));
ALWAYS_INLINE(static VALUE hook_allocated_limit_reached(struct rb_objspace *objspace, struct ractor_newobj_cache *cache,
                                                        VALUE obj, size_t heap_idx, VALUE klass, VALUE flags));
ALWAYS_INLINE(static void hook_allocated_flush(struct ractor_newobj_cache *cache, size_t heap_idx));
#define GC_HOOK_RACTOR_CACHE_FIELDS \
    size_t sampling_limits[HEAP_COUNT]; \
    struct sample_point sample_points[HEAP_COUNT]; \
    uint64_t sampling_epoch;
/* (a field, read on the fast path: nothing to decide) */
#define GC_HOOK_ALLOCATED_LIMIT(cache, heap_idx) ((cache)->sampling_limits[heap_idx])
/* (objspace, cache, obj, heap_idx GC_HOOK_NEWOBJ_ARGS) */
#define GC_HOOK_ALLOCATED_LIMIT_REACHED(...) hook_allocated_limit_reached(__VA_ARGS__)
#define GC_HOOK_ALLOCATED_FLUSH(cache, heap_idx) hook_allocated_flush((cache), (heap_idx))
#else
static void sampling_set_page(void *cache, size_t heap_idx, size_t free_slots);
static VALUE sampling_take(void *objspace, void *cache, size_t heap_idx, VALUE klass, VALUE flags);
static void sampling_cache_clear(void *cache, size_t heap_idx);
ALWAYS_INLINE(static void hook_cache_set_page(struct ractor_newobj_cache *cache, size_t heap_idx, size_t free_slots));
ALWAYS_INLINE(static VALUE hook_newobj_cache_miss(struct rb_objspace *objspace, struct ractor_newobj_cache *cache,
                                                  size_t heap_idx, VALUE klass, VALUE flags));
ALWAYS_INLINE(static VALUE hook_newobj_cache_miss_unlocked(struct rb_objspace *objspace,
                                                           struct ractor_newobj_cache *cache, size_t heap_idx,
                                                           VALUE klass, VALUE flags));
ALWAYS_INLINE(static void hook_cache_clear(struct ractor_newobj_cache *cache, size_t heap_idx));

/* Per Ractor cache: a sample point per heap, and the start it belongs to. */
#define GC_HOOK_RACTOR_CACHE_FIELDS \
    struct sample_point sample_points[HEAP_COUNT]; \
    uint64_t sampling_epoch;
#define GC_HOOK_CACHE_SET_PAGE(objspace, cache, heap_idx, free_slots) \
    hook_cache_set_page((cache), (heap_idx), (free_slots))
/* (objspace, cache, heap_idx GC_HOOK_NEWOBJ_ARGS) */
#define GC_HOOK_NEWOBJ_CACHE_MISS(...) hook_newobj_cache_miss(__VA_ARGS__)
/* (objspace, cache, heap_idx GC_HOOK_NEWOBJ_ARGS) */
#define GC_HOOK_NEWOBJ_CACHE_MISS_UNLOCKED(...) hook_newobj_cache_miss_unlocked(__VA_ARGS__)
#define GC_HOOK_CACHE_CLEAR(cache, heap_idx) hook_cache_clear((cache), (heap_idx))
#endif
#define GC_HOOK_MARK_ROOTS(objspace) sampling_mark_roots(objspace)
#define GC_HOOK_MARKS_FINISHED(objspace) sampling_marks_finished(objspace)
#define GC_HOOK_UPDATE_REFERENCES(objspace) sampling_update_references(objspace)
#if SAMPLING_POINT_ON_CURSOR
/* 4.1 tells the event hooks only when the objspace's own Ractor asked
 * for an event: the end of the sweep is patches/4.1's hook. */
#define GC_HOOK_SWEEP_FINISHED(objspace) sampling_sweep_finished(objspace)
#define SAMPLING_GC_EVENT(objspace, event) ((void)0)
#else
/* Not a patch's hook: default.c's gc_sweep_finish tells the event hooks
 * RUBY_INTERNAL_EVENT_GC_END_SWEEP, through shared_object.h's
 * rb_gc_event_hook, which calls this first. */
static inline void
sampling_gc_event(void *objspace, rb_event_flag_t event)
{
    /* the end of a sweep finishes its GC's row (a constant compare, folded
     * away at every other call); any other event is not the sampler's */
    if (event == RUBY_INTERNAL_EVENT_GC_END_SWEEP) sampling_sweep_finished(objspace);
}
#define SAMPLING_GC_EVENT(objspace, event) sampling_gc_event((objspace), (event))
#endif

/* ---- the default GC, with the hooks above ---- */

#define rb_gc_impl_active_gc_name rb_gc_impl_active_gc_name_default
#define rb_gc_impl_init rb_gc_impl_init_default
#define rb_gc_impl_ractor_cache_alloc rb_gc_impl_ractor_cache_alloc_default
#define rb_gc_impl_after_fork rb_gc_impl_after_fork_default
/* (hidden, so that malloc.c's wrappers jump to them directly, not through the PLT) */
#pragma GCC visibility push(hidden)
void *rb_gc_impl_malloc_default(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM);
void *rb_gc_impl_calloc_default(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM);
void *rb_gc_impl_realloc_default(void *objspace_ptr, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM);
void rb_gc_impl_free_default(void *objspace_ptr, void *ptr, size_t old_size);
#pragma GCC visibility pop
#define rb_gc_impl_malloc rb_gc_impl_malloc_default
#define rb_gc_impl_calloc rb_gc_impl_calloc_default
#define rb_gc_impl_realloc rb_gc_impl_realloc_default
#define rb_gc_impl_free rb_gc_impl_free_default
#define rb_gc_impl_set_params rb_gc_impl_set_params_default
#if SAMPLING_POINT_ON_CURSOR
# define rb_gc_impl_objspace_free rb_gc_impl_objspace_free_default
#endif
#include "gc/default/default.c"
#if SAMPLING_POINT_ON_COUNT && defined(GC_HOOK_NEWOBJ_CACHE_MISS_UNLOCKED)
/* (an older patches/4.0, whose hooks cut the free list: this library
 * would build, and never sample) */
# error "gc/default/default.c carries an older patches/4.0: apply this tree's (tools/apply-patches)"
#endif
#undef rb_gc_impl_malloc
#undef rb_gc_impl_calloc
#undef rb_gc_impl_realloc
#undef rb_gc_impl_free
#undef rb_gc_impl_set_params
#undef rb_gc_impl_objspace_free
#undef rb_gc_impl_active_gc_name
#undef rb_gc_impl_init
#undef rb_gc_impl_ractor_cache_alloc
#undef rb_gc_impl_after_fork

#if SAMPLING_POINT_ON_CURSOR
/* (4.1 has no Ractor cache: the functions shared with 4.0 that take one
 * get NULL, and SAMPLING_CACHE_PENDING is 0) */
typedef void rb_ractor_newobj_cache_t;
# ifndef SAMPLING_PHASES
STATIC_ASSERT(heap_size, sizeof(rb_heap_t) == 256);
# endif
#else
STATIC_ASSERT(free_slot_layout, sizeof(struct free_slot) == sizeof(struct sample_point_slot) &&
              offsetof(struct free_slot, next) == offsetof(struct sample_point_slot, next));
#endif
STATIC_ASSERT(heap_count, HEAP_COUNT <= SAMPLER_MAX_HEAPS && HEAP_COUNT <= SAMPLING_RECENT_SLOTS);

/* ---- the hooks' decisions (declared with the hooks above) ---- */

#if SAMPLING_POINT_ON_CURSOR
/* GC_HOOK_ALLOC_CURSOR_END: heap's cursor reached its end. */
static inline VALUE
hook_alloc_cursor_end(rb_objspace_t *objspace, rb_heap_t *heap, size_t heap_idx, VALUE klass, VALUE flags)
{
    /* the region's own end: default.c moves on to the next region */
    if (RB_LIKELY(heap->sampling_end == 0)) return Qundef;
    /* the end was lowered to a point: the slot at the cursor is a sample
     * (or Qfalse, none yet: the marking step's budget ran out, and
     * default.c takes a marking step and asks again).  Never Qundef:
     * said so, or the compiler would keep this path's values in saved
     * registers for default.c's code after it, on every allocation. */
    VALUE slot = sampling_take(objspace, heap, heap_idx, klass, flags);
    if (slot == Qundef) __builtin_unreachable();
    return slot;
}

/* GC_HOOK_ALLOC_REGION_SET: heap's cursor was set to a new page's first
 * region (heap_set_alloc_page; heap_alloc_slot asks next). */
static inline void
hook_alloc_region_set(rb_objspace_t *objspace, rb_heap_t *heap, size_t heap_idx)
{
    /* sampling: the region gets its point (it may fall in a later one) */
    if (RB_UNLIKELY(sampling_on)) sampling_region_set(objspace, heap, heap_idx);
    /* otherwise the region is left whole, as default.c's */
}

/* GC_HOOK_ALLOC_REGION_ADVANCED: heap_alloc_slot moved heap's cursor to
 * the next region and is about to hand out its first slot. */
static inline VALUE
hook_alloc_region_advanced(rb_objspace_t *objspace, rb_heap_t *heap, size_t heap_idx, VALUE klass, VALUE flags)
{
    /* sampling off: the region is left whole, its first slot handed out */
    if (RB_LIKELY(!sampling_on)) return Qundef;
    /* sampling: the point is placed, and the first slot handed out there
     * (the sample, if the point is on it), out of line and never Qundef,
     * as at the cursor's end */
    VALUE slot = sampling_region_advanced(objspace, heap, heap_idx, klass, flags);
    if (slot == Qundef) __builtin_unreachable();
    return slot;
}

/* GC_HOOK_ALLOC_STATE_CLEAR: heap's region is about to go back to its
 * page (a GC's sweep, an absorbed or forked objspace). */
static inline void
hook_alloc_state_clear(rb_objspace_t *objspace, rb_heap_t *heap)
{
    /* sampling (or a lowered end left by a stop that raced nothing, but
     * checked all the same): the region is whole again, and what was
     * charged and not allocated is credited back */
    if (RB_UNLIKELY(sampling_on || heap->sampling_end != 0)) sampling_state_clear(objspace, heap);
}
#elif SAMPLING_POINT_ON_COUNT
/* GC_HOOK_ALLOCATED_LIMIT_REACHED: the cache's count on heap_idx reached
 * its limit and was added to the heap; obj is the slot just popped. */
static inline VALUE
hook_allocated_limit_reached(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache, VALUE obj, size_t heap_idx,
                             VALUE klass, VALUE flags)
{
    /* The limit is the next point's or the step's: sampling_take tells
     * which, records obj if it is the sample, and sets the next limit.  It
     * hands obj back, never Qfalse: said so, or the compiler would send
     * the result to the miss branch and keep its arguments in saved
     * registers on every allocation. */
    VALUE slot = sampling_take(objspace, cache, heap_idx, obj, klass, flags);
    if (slot == Qfalse) __builtin_unreachable();
    return slot;
}

/* GC_HOOK_ALLOCATED_FLUSH: the count is about to be added to the heap
 * elsewhere (GC.stat, the sweep start, a Ractor's exit) and to go back to
 * zero.  Unconditional: the limit moves down by the count, so the same
 * allocation stays the sample (or the step, while sampling is off). */
static inline void
hook_allocated_flush(rb_ractor_newobj_cache_t *cache, size_t heap_idx)
{
    cache->sampling_limits[heap_idx] -= cache->heap_caches[heap_idx].allocated_objects_count;
}
#else
/* GC_HOOK_CACHE_SET_PAGE: the cache took a page's list of free_slots. */
static inline void
hook_cache_set_page(rb_ractor_newobj_cache_t *cache, size_t heap_idx, size_t free_slots)
{
    /* sampling: the list gets its point (it may fall on a later page) */
    if (RB_UNLIKELY(sampling_on)) sampling_set_page(cache, heap_idx, free_slots);
    /* otherwise the list is left whole, as default.c's */
}

/* GC_HOOK_NEWOBJ_CACHE_MISS: the cache's list on heap_idx was found empty
 * and the VM lock is held (newobj_cache_miss, first under the lock and
 * again after a new page).  Qfalse: not a sample, default.c goes on. */
static inline VALUE
hook_newobj_cache_miss(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache, size_t heap_idx,
                       VALUE klass, VALUE flags)
{
    /* A list again: either the incremental marking step budget ran out
     * (the allocator retries, refusing again until a marking step resets
     * it), or another Ractor's start/stop/clear rejoined this cache's tail
     * while this one waited for the VM lock.  The slot must come from the
     * list, never from a new page that would overwrite it. */
    if (cache->heap_caches[heap_idx].freelist) return ractor_cache_allocate_slot(objspace, cache, heap_idx);
    /* an empty list with a waiting tail: the list was cut here, a sample */
    if (RB_UNLIKELY(cache->sample_points[heap_idx].tail != NULL)) {
        return sampling_take(objspace, cache, heap_idx, klass, flags);
    }
    /* an empty list and no tail: the page is used up, a new one follows */
    return Qfalse;
}

/* GC_HOOK_NEWOBJ_CACHE_MISS_UNLOCKED: the same question in newobj_alloc,
 * before newobj_cache_miss sets up its frame (its six saved registers)
 * and takes the VM lock.  Qfalse: asked again, under the lock. */
static inline VALUE
hook_newobj_cache_miss_unlocked(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache, size_t heap_idx,
                                VALUE klass, VALUE flags)
{
    /* no waiting tail: a new page, newobj_cache_miss's work */
    if (RB_LIKELY(cache->sample_points[heap_idx].tail == NULL)) return Qfalse;
    /* a list: the marking step budget ran out, left to the locked path */
    if (cache->heap_caches[heap_idx].freelist) return Qfalse;
    /* a second Ractor may run: the sample takes the VM lock, in
     * newobj_cache_miss */
    if (sampling_ractors) return Qfalse;
    /* A sample with a single Ractor: the VM lock excludes nothing the GVL
     * does not (it is owned per Ractor, so its threads re-enter it
     * freely).  sampling_take always gives a slot (said so: newobj_alloc
     * then returns it at once, never entering newobj_cache_miss). */
    VALUE obj = sampling_take(objspace, cache, heap_idx, klass, flags);
    if (obj == Qfalse) __builtin_unreachable();
    return obj;
}

/* GC_HOOK_CACHE_CLEAR: the cache is about to give its list on heap_idx
 * back (the sweep start, a Ractor's exit). */
static inline void
hook_cache_clear(rb_ractor_newobj_cache_t *cache, size_t heap_idx)
{
    /* sampling: the tail is rejoined and what was not allocated credited
     * back, so the heap gets its whole list */
    if (RB_UNLIKELY(sampling_on)) sampling_cache_clear(cache, heap_idx);
    /* otherwise no list was cut */
}
#endif

#if SAMPLING_POINT_ON_COUNT
static void cache_place(rb_ractor_newobj_cache_t *cache);
static void cache_unplace(rb_ractor_newobj_cache_t *cache);
#endif

/* GC.config[:implementation] and RUBY_DESCRIPTION read this name. */
const char *
rb_gc_impl_active_gc_name(void)
{
    return "sampling";
}

/* Every Ractor gets its cache here, the main one at boot, any other
 * before its first thread starts (vm_insert_ractor0): from the second
 * one on, samples take the VM lock, for good.  (A test of a flag, not a
 * call of rb_gc_multi_ractor_p.  The flag is set a little after CRuby
 * leaves single-Ractor mode, whose Ruby callback runs on the main
 * Ractor's threads alone: the lock is still not needed there.) */
void *
rb_gc_impl_ractor_cache_alloc(void *objspace_ptr, void *ractor)
{
#if SAMPLING_POINT_ON_CURSOR
    /* 4.1: no cache (NULL), so the main Ractor asks twice (at boot and
     * when it joins the VM's set): a second Ractor is another one */
    static void *first;
    if (!first) first = ractor;
    else if (ractor != first) sampling_ractors = true;
    return rb_gc_impl_ractor_cache_alloc_default(objspace_ptr, ractor);
#else
    rb_objspace_t *objspace = objspace_ptr;
    if (!sampling_ractors && objspace->live_ractor_cache_count > 0) sampling_ractors = true;
    rb_ractor_newobj_cache_t *cache = rb_gc_impl_ractor_cache_alloc_default(objspace_ptr, ractor);
#if SAMPLING_POINT_ON_COUNT
    /* (calloc'd: a limit of 0 would send every allocation to the hook) */
    if (sampling_on) cache_place(cache);
    else cache_unplace(cache);
#endif
    return cache;
#endif
}

/* The collector's part of the library's entry points, which api.c
 * defines (sampler.h). */
static void sampler_after_fork(rb_objspace_t *objspace);

void
sampler_gc_after_fork(void *objspace_ptr, rb_pid_t pid)
{
    rb_gc_impl_after_fork_default(objspace_ptr, pid);
    if (pid != 0) return;
#if SAMPLING_POINT_ON_CURSOR
    /* (the child's objspaces are walked under the VM lock: objspaces_each) */
    unsigned int lev = RB_GC_VM_LOCK_NO_BARRIER();
    sampler_after_fork(objspace_ptr);
    RB_GC_VM_UNLOCK_NO_BARRIER(lev);
#else
    sampler_after_fork(objspace_ptr);
#endif
}

void
sampler_gc_set_params(void *objspace_ptr)
{
    rb_gc_impl_set_params_default(objspace_ptr);
    sampling_frames_init();
}

static void sampler_init(void);

void
sampler_gc_init(void)
{
    rb_gc_impl_init_default();
    sampler_init();
}

/* ---- the sampler's state ---- */

static struct {
    struct sampling_params params;
    struct sample_point_config config;
    struct sampling_records records;
    uint64_t epoch;                         /* bumped by every start and clear */
    struct sampling_frame *scratch;         /* params.depth + 1 frames, for capture */
    struct sampler_heap {                   /* per heap, since start or clear */
        /* (the sample's fields first: they share a line) */
        uint64_t samples;
        uint64_t points;
        double poisson_weight;              /* sampling_weight of a slot, set at start */
        size_t base_allocated;              /* total_allocated_objects at start */
        size_t moved;                       /* compaction moves and absorbed heaps' counts (counted as
                                             * allocations by default.c) */
        size_t allocated_at_marks;          /* total_allocated_objects when marking ended */
        size_t stopped_allocated;           /* objects allocated while enabled, frozen at stop */
    } per_heap[HEAP_COUNT];
    uint64_t moved_bytes;                   /* compaction moves since boot, in slot bytes: the allocation clock's */
#if SAMPLING_POINT_ON_CURSOR
    size_t departed[HEAP_COUNT];            /* 4.1: what absorbed and freed objspaces counted since start */
#endif
    int readers;
    bool readers_disabled_gc;
    struct sampling_timeline timeline;      /* a row per GC, and the peak (timeline.h) */
    bool row_waits;                         /* its sweep is over, frees queued during a read are not */
    uint64_t carried;                       /* records held when counting began (start, clear, fork) */
} sampler;

static inline size_t slot_bytes(size_t heap_idx);

/* The objspace the sampler works on (sampler.h's functions, the clock,
 * the hooks' bookkeeping): the process's one on 3.4 and 4.0.  On 4.1 the
 * main Ractor's: a local GC of another Ractor's objspace takes no lock,
 * so the records could not be kept consistent with it (ruby_version.h);
 * its heaps get no points.  (After a fork, the forking Ractor's.) */
static inline rb_objspace_t *
sampler_objspace(void)
{
#if SAMPLING_POINT_ON_CURSOR
    return global_objspace->main_objspace;
#else
    return rb_gc_get_objspace();
#endif
}

/* Whether a GC of objspace is one whose marks say which sampled objects
 * live: every GC on 3.4 and 4.0; on 4.1 a local GC of the main objspace
 * (under the VM lock once there are Ractors) or a global GC (the world
 * stopped, every objspace marked). */
static inline bool
sampler_gc_p(rb_objspace_t *objspace)
{
#if SAMPLING_POINT_ON_CURSOR
    return objspace == sampler_objspace() || objspace->flags.during_global_gc;
#else
    return true;
#endif
}

/* The allocation clock, the second clock of a lifetime (records.h): slot
 * bytes the process has allocated, from the heaps' own counts (as
 * stats[:allocated_bytes], but never reset), less the moves compaction
 * counted as allocations.  Unlike GC.count it does not depend on when
 * GCs run.  totals: allocated_totals, or at a sample the heap counts and
 * the sampling cache's pending ones (on 4.0 another Ractor's cache may
 * hold up to 1,023 a heap it has not added yet: ruby_version.h). */
static uint64_t
clock_bytes(const size_t totals[HEAP_COUNT])
{
#if SAMPLING_SLOTS_POW2
    /* slot sizes are BASE_SLOT_SIZE << i (heap_slot_size): one multiply */
    uint64_t slots = 0;
    for (size_t i = 0; i < HEAP_COUNT; i++) slots += (uint64_t)totals[i] << i;
    return slots * BASE_SLOT_SIZE - sampler.moved_bytes;
#else
    uint64_t bytes = 0;
    for (size_t i = 0; i < HEAP_COUNT; i++) bytes += (uint64_t)totals[i] * slot_bytes(i);
    return bytes - sampler.moved_bytes;
#endif
}

/* The clock from the heap counts alone (and the given cache's pending
 * counts, when there is one): no other cache is read, so it can be read
 * without the VM lock (malloc.c, on any thread). */
static inline uint64_t
clock_now(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache)
{
#if SAMPLING_SLOTS_POW2
    /* clock_bytes's sum in Horner's form: a load, an add and a shift a
     * heap on the sample path (the compiler's vector form of the loop
     * took twice that) */
    uint64_t slots = 0;
    for (size_t i = HEAP_COUNT; i-- > 0;) {
        slots = 2 * slots + heaps[i].total_allocated_objects + (cache ? SAMPLING_CACHE_PENDING(cache, i) : 0);
    }
    return slots * BASE_SLOT_SIZE - sampler.moved_bytes;
#else
    size_t totals[HEAP_COUNT];
    for (size_t i = 0; i < HEAP_COUNT; i++) totals[i] = heaps[i].total_allocated_objects;
    return clock_bytes(totals);
#endif
}

static inline struct sampling_now
sampler_now(rb_objspace_t *objspace, size_t gc_count)
{
    return (struct sampling_now){ gc_count, clock_now(objspace, NULL) };
}

/* ---- readers: what they allocate is not recorded ---- */

/* The execution contexts (a thread's running fiber) inside a reader now
 * (sampler.h, sampler_reader_enter), with how deep.  A sample of an
 * allocation one of them makes is counted (the heap's samples and
 * points, stats[:reader_samples]) but not recorded: no record, no site,
 * no site totals, so the profiler's own objects never show in what it
 * reads, and never hold records in its table.  Keyed by fiber, not by
 * native thread: another fiber of the reading thread (a fiber scheduler
 * switching on an IO a report writes), another thread (report.rb runs
 * Ruby code, which switches threads) and another Ractor are recorded as
 * usual.  Changed under the VM lock; read on the sampling path, which
 * holds the VM lock or (one Ractor) the GVL; only the count when no
 * reader runs.  Beyond SAMPLER_READERS readers at once, the extra ones'
 * allocations are recorded. */
#define SAMPLER_READERS 16
static struct {
    const void *ec;
    unsigned int depth;
} sampler_readers[SAMPLER_READERS];
static unsigned int sampler_nreaders;
static uint64_t sampler_reader_samples;

static inline bool
sampler_reader_p(const void *ec)
{
    for (unsigned int i = 0; i < sampler_nreaders; i++) if (sampler_readers[i].ec == ec) return true;
    return false;
}

/* Whether the running fiber is inside a reader (the check on the
 * sampling path: a load and a branch while no reader runs). */
static inline bool
sampler_reading_here(void)
{
    return RB_UNLIKELY(__atomic_load_n(&sampler_nreaders, __ATOMIC_RELAXED) != 0) &&
           sampler_reader_p(sampling_frames_ec());
}

void
sampler_reader_enter(void)
{
    const void *ec = sampling_frames_ec();
    if (!ec) return;
    unsigned int lev = RB_GC_VM_LOCK();
    unsigned int i = 0;
    while (i < sampler_nreaders && sampler_readers[i].ec != ec) i++;
    if (i < sampler_nreaders) sampler_readers[i].depth++;
    else if (i < SAMPLER_READERS) {
        sampler_readers[i].ec = ec;
        sampler_readers[i].depth = 1;
        __atomic_store_n(&sampler_nreaders, i + 1, __ATOMIC_RELAXED);
    }
    RB_GC_VM_UNLOCK(lev);
}

void
sampler_reader_leave(void)
{
    const void *ec = sampling_frames_ec();
    if (!ec) return;
    unsigned int lev = RB_GC_VM_LOCK();
    for (unsigned int i = 0; i < sampler_nreaders; i++) {
        if (sampler_readers[i].ec != ec) continue;
        if (--sampler_readers[i].depth == 0) {
            sampler_readers[i] = sampler_readers[sampler_nreaders - 1];
            __atomic_store_n(&sampler_nreaders, sampler_nreaders - 1, __ATOMIC_RELAXED);
        }
        break;
    }
    RB_GC_VM_UNLOCK(lev);
}

unsigned int
sampler_reader_pause(void)
{
    const void *ec = sampling_frames_ec();
    unsigned int depth = 0;
    if (!ec) return 0;
    unsigned int lev = RB_GC_VM_LOCK();
    for (unsigned int i = 0; i < sampler_nreaders; i++) {
        if (sampler_readers[i].ec != ec) continue;
        depth = sampler_readers[i].depth;
        sampler_readers[i] = sampler_readers[sampler_nreaders - 1];
        __atomic_store_n(&sampler_nreaders, sampler_nreaders - 1, __ATOMIC_RELAXED);
        break;
    }
    RB_GC_VM_UNLOCK(lev);
    return depth;
}

void
sampler_reader_resume(unsigned int depth)
{
    const void *ec = sampling_frames_ec();
    if (!ec || !depth) return;
    unsigned int lev = RB_GC_VM_LOCK();
    if (sampler_nreaders < SAMPLER_READERS) {
        sampler_readers[sampler_nreaders].ec = ec;
        sampler_readers[sampler_nreaders].depth = depth;
        __atomic_store_n(&sampler_nreaders, sampler_nreaders + 1, __ATOMIC_RELAXED);
    }
    RB_GC_VM_UNLOCK(lev);
}

/* In a forked child only the forking thread runs: the reader scopes of
 * the parent's other threads (one in report.rb while another forked)
 * ended with them, and a fiber of the child may get the address of
 * their execution context, whose allocations would then go unrecorded.
 * (No read is open across a fork: read.h, read_run.) */
static void
sampler_readers_after_fork(void)
{
    const void *ec = sampling_frames_ec();
    unsigned int n = 0;
    for (unsigned int i = 0; i < sampler_nreaders; i++) {
        if (sampler_readers[i].ec == ec) sampler_readers[n++] = sampler_readers[i];
    }
    __atomic_store_n(&sampler_nreaders, n, __ATOMIC_RELAXED);
}

/* malloc'd bytes: the wrapped rb_gc_impl_malloc, _calloc, _realloc, _free */
#include "malloc.c"

static void
sampler_init(void)
{
#if SAMPLING_SLOTS_POW2
    /* clock_bytes counts on it */
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        if (slot_bytes(i) != BASE_SLOT_SIZE << i) rb_bug("sampling: heap %zu's slot size is not BASE_SLOT_SIZE << %zu", i, i);
    }
#endif
    sampling_params_default(&sampler.params);
    sampling_records_init(&sampler.records, sampler.params.max_samples);
    malloc_init();
}

/* Objects allocated on each heap so far: the heap's total, plus on 4.0
 * what the caches counted and have not yet added to it (ruby_version.h).
 * Other Ractors' pending counts are read without their lock: with several
 * Ractors allocating the sum can be a few objects short, as the heap totals
 * themselves can (docs/limits.md#threads-and-ractors). */
#if SAMPLING_CACHE_COUNTS
static void
cache_pending_i(void *c, void *data)
{
    rb_ractor_newobj_cache_t *cache = c;
    size_t *totals = data;
    for (size_t i = 0; i < HEAP_COUNT; i++) totals[i] += SAMPLING_CACHE_PENDING(cache, i);
}
#endif

static void
allocated_totals(rb_objspace_t *objspace, size_t totals[HEAP_COUNT])
{
    for (size_t i = 0; i < HEAP_COUNT; i++) totals[i] = heaps[i].total_allocated_objects;
#if SAMPLING_CACHE_COUNTS
    rb_gc_ractor_newobj_cache_foreach(cache_pending_i, totals);
#endif
}

/* The clock with every cache's pending counts (under the VM lock). */
static uint64_t
clock_bytes_all(rb_objspace_t *objspace)
{
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    return clock_bytes(totals);
}

static inline size_t
slot_bytes(size_t heap_idx)
{
    return heap_slot_size((unsigned char)heap_idx);
}

#if !SAMPLING_POINT_ON_CURSOR
/* A cache created (or last seen) under an older start gets fresh points.
 * Its lists were rejoined when that start ended, so no tail is lost. */
static void
cache_sync(rb_ractor_newobj_cache_t *cache)
{
    if (cache->sampling_epoch == sampler.epoch) return;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        GC_ASSERT(cache->sample_points[i].tail == NULL);
        sample_point_reset(&cache->sample_points[i], &sampler.config);
    }
    cache->sampling_epoch = sampler.epoch;
}
#endif

#if SAMPLING_POINT_ON_LIST
static inline sample_point_list *
cache_list(rb_ractor_newobj_cache_t *cache, size_t heap_idx)
{
    return (sample_point_list *)&cache->heap_caches[heap_idx].freelist;
}

static void
sampling_set_page(void *c, size_t heap_idx, size_t free_slots)
{
    rb_ractor_newobj_cache_t *cache = c;
    cache_sync(cache);
    SAMPLING_PHASE_START(t0);
    sample_point_place(&cache->sample_points[heap_idx], cache_list(cache, heap_idx), free_slots, slot_bytes(heap_idx));
    SAMPLING_PHASE_END(SAMPLING_PHASE_PAGE, t0);
}

static void
sampling_cache_clear(void *c, size_t heap_idx)
{
    rb_ractor_newobj_cache_t *cache = c;
    if (cache->sampling_epoch != sampler.epoch) return;
    sample_point_rejoin(&cache->sample_points[heap_idx], cache_list(cache, heap_idx), slot_bytes(heap_idx));
}
#endif

/* Records a sample of obj (allocated, not yet initialised: klass and flags
 * are what newobj_init will write). */
static void
sampling_record(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache, VALUE obj, VALUE klass, VALUE flags,
                size_t heap_idx, uint64_t points)
{
    size_t size = slot_bytes(heap_idx);
    struct sampler_heap *h = &sampler.per_heap[heap_idx];
    h->samples++;
    h->points += points;
    if (sampler_reading_here()) {
        __atomic_fetch_add(&sampler_reader_samples, 1, __ATOMIC_RELAXED);
        return;
    }

    uint16_t type = (uint16_t)(flags & RUBY_T_MASK);
    /* this heap's last sites: the stack is often one of theirs */
    const void *ec;
    SAMPLING_PHASE_START(t0);
    struct sampling_capture capture = sampling_frames_capture(sampler.scratch, sampler.params.depth,
                                                              sampling_sites_recent(&sampler.records.sites, (uint8_t)heap_idx),
                                                              &ec, type);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CAPTURE, t0);
    SAMPLING_PHASE_START(t1);
    struct sampling_sample_in in;
    in.obj = obj;
    /* the class word of an imemo holds internal data, not a class; its
     * kind is in flags (IMEMO_MASK, internal/imemo.h) */
    bool imemo = type == T_IMEMO;
    sampling_frames_site_key(&in.site, sampler.scratch, &capture, imemo ? 0 : klass, type,
                             imemo ? (uint8_t)((flags >> FL_USHIFT) & 0x0f) : 0, sampling_labels_current(ec),
                             (uint8_t)heap_idx);
    GC_ASSERT(in.site.site || in.site.hash == sampling_stack_hash(in.site.frames, in.site.nframes, in.site.truncated));
    in.sample.weight = sampler.config.mode == SAMPLING_MODE_FIXED ? (double)points * (double)sampler.config.interval
                                                                  : h->poisson_weight;
    in.sample.allocated_gc = objspace->profile.count;
    in.sample.allocated_bytes = clock_now(sampler_objspace(), cache);   /* (4.1: the main Ractor's clock) */
    in.sample.size = (uint32_t)size;
    in.sample.heap = (uint8_t)heap_idx;
    uint32_t index = sampling_records_add(&sampler.records, &in);
    usdt_alloc(obj, size, in.sample.weight);
    if (index == SAMPLING_NONE) usdt_free(obj);     /* not followed (usdt.h) */
    SAMPLING_PHASE_END(SAMPLING_PHASE_RECORD, t1);
}

#if SAMPLING_POINT_ON_LIST
__attribute__((flatten)) static VALUE
sampling_take(void *objspace_ptr, void *c, size_t heap_idx, VALUE klass, VALUE flags)
{
    rb_objspace_t *objspace = objspace_ptr;
    rb_ractor_newobj_cache_t *cache = c;
    SAMPLING_PHASE_START(t0);
    uint64_t points = 0;
    struct sample_point_slot *slot = sample_point_take(&cache->sample_points[heap_idx], cache_list(cache, heap_idx),
                                                       slot_bytes(heap_idx), &sampler.config, &points);
    VALUE obj = (VALUE)slot;

    /* as ractor_cache_allocate_slot does for the slot it pops */
#ifdef RUBY_ASAN_ENABLED
    rb_asan_unpoison_object(obj, true);
#endif
    if (is_incremental_marking(objspace)) cache->incremental_mark_step_allocated_slots++;
#if RGENGC_CHECK_MODE
    MEMZERO((char *)obj, char, heap_slot_size(heap_idx));
#endif

    sampling_record(objspace, cache, obj, klass, flags, heap_idx, points);
    SAMPLING_PHASE_END(SAMPLING_PHASE_TAKE, t0);
    SAMPLING_PHASE_START(t1);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CLOCK, t1);
    return obj;
}
#elif SAMPLING_POINT_ON_COUNT
/* The count's limit on heap heap_idx from the cache's count now: the next
 * point's, or the step's if that comes first. */
static inline void
count_place(rb_ractor_newobj_cache_t *cache, size_t heap_idx)
{
    cache->sampling_limits[heap_idx] = sample_point_limit(&cache->sample_points[heap_idx],
                                                          cache->heap_caches[heap_idx].allocated_objects_count,
                                                          ALLOCATED_COUNT_STEP, slot_bytes(heap_idx));
}

/* Points in every heap's count (VM lock held, or a cache no other Ractor
 * sees yet). */
static void
cache_place(rb_ractor_newobj_cache_t *cache)
{
    cache_sync(cache);
    for (size_t i = 0; i < HEAP_COUNT; i++) count_place(cache, i);
}

/* Sampling off: every limit back to the step, as default.c's constant. */
static void
cache_unplace(rb_ractor_newobj_cache_t *cache)
{
    for (size_t i = 0; i < HEAP_COUNT; i++) cache->sampling_limits[i] = ALLOCATED_COUNT_STEP;
}

/* GC_HOOK_ALLOCATED_LIMIT_REACHED: obj was popped and counted, and the
 * count added to the heap (it is 0 now).  A sample if obj reached the
 * point: its record is made before newobj_init writes klass and flags, as
 * on the cache miss of 3.4.  The cache's point is its own Ractor's (start,
 * stop and GC change it at a barrier, which this Ractor has not joined):
 * only the draws from the shared generator and the record need the lock,
 * and it is taken without joining a barrier, because obj is not yet an
 * object: a GC while this Ractor waited would sweep its slot as free. */
__attribute__((flatten)) static VALUE
sampling_take(void *objspace_ptr, void *c, size_t heap_idx, VALUE obj, VALUE klass, VALUE flags)
{
    rb_objspace_t *objspace = objspace_ptr;
    rb_ractor_newobj_cache_t *cache = c;
    if (!sampling_on) {
        cache->sampling_limits[heap_idx] = ALLOCATED_COUNT_STEP;
        return obj;
    }
    if (RB_LIKELY(cache->sampling_epoch == sampler.epoch && cache->sample_points[heap_idx].countdown > 0)) {
        count_place(cache, heap_idx);   /* the step, not a point */
        return obj;
    }
    SAMPLING_PHASE_START(t0);
    unsigned int lev = 0;
    if (sampling_ractors) lev = RB_GC_VM_LOCK_NO_BARRIER();
    uint64_t points = 0;
    if (cache->sampling_epoch == sampler.epoch) {
        points = sample_point_reached(&cache->sample_points[heap_idx], &sampler.config);
    }
    else {
        cache_sync(cache);  /* (a cache made while a start ran: not seen) */
    }
    count_place(cache, heap_idx);
    if (points) sampling_record(objspace, cache, obj, klass, flags, heap_idx, points);
    if (sampling_ractors) RB_GC_VM_UNLOCK_NO_BARRIER(lev);
    SAMPLING_PHASE_END(SAMPLING_PHASE_TAKE, t0);
    SAMPLING_PHASE_START(t1);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CLOCK, t1);
    return obj;
}
#endif

#if SAMPLING_POINT_ON_CURSOR
/* ---- Ruby 4.1: the point on the bump cursor ----
 *
 * A heap's region [cursor, end) is a run of free slots.  When it is set,
 * its slots are charged to the point's countdown up to the slot whose
 * allocation reaches the next point (sample_point_limit, with the region's
 * slots for the cap); if that slot is in the region the cursor's end is
 * lowered to it and the real end kept in heap->sampling_end:
 *
 *      cursor         alloc_cursor_end          sampling_end
 *        |  fast path   | S |   rest of region      |
 *
 * so with `cursor` where it is now and S the sampled slot,
 *
 *      bytes allocated through this heap = charged - (charge_end - cursor)
 *      charge_end = S + slot size if lowered, else the region's end
 *      lowered  <=>  countdown <= 0 (the allocation of S reaches the point)
 *
 * The cursor reaching S is the sample (sampling_take); a region given
 * back before (sampling_state_clear) is credited with what it did not
 * allocate.  Only two functions move a point: sampling_region_set and
 * sampling_take.  The heap is its objspace's, written by its owner thread
 * alone (or the world is stopped): every Ractor's heaps get points, and
 * what they share (the generator's draws, the records) is taken under the
 * VM lock once there are Ractors (without joining a barrier: a slot taken
 * is not yet an object).
 *
 * A heap also counts its allocations since the start it belongs to
 * (stats[:heaps]): its total less sampling_base (the total when it got
 * this start's first point) and sampling_moved (compaction's moves and
 * the heaps it absorbed, which default.c counts as allocations).  A
 * Ractor's objspace that is absorbed or freed leaves its count in
 * sampler.departed; stats add every objspace's. */

/* The heap's point from a start or clear before this one is forgotten: a
 * fresh gap (its end was made whole when that start ended). */
static inline void
heap_sync(rb_heap_t *heap)
{
    if (heap->sampling_epoch == sampler.epoch) return;
    SAMPLING_ASSERT(heap->sampling_end == 0);
    /* (the generator is shared by every Ractor) */
    unsigned int lev = 0;
    if (sampling_ractors) lev = RB_GC_VM_LOCK_NO_BARRIER();
    sample_point_reset(&heap->sample_point, &sampler.config);
    if (sampling_ractors) RB_GC_VM_UNLOCK_NO_BARRIER(lev);
    heap->sampling_base = heap->total_allocated_objects;
    heap->sampling_moved = 0;
    heap->sampling_at_marks = heap->total_allocated_objects;
    heap->sampling_epoch = sampler.epoch;
}

/* heaps[i] of another objspace than the one in scope (heaps is
 * default.c's macro over `objspace`). */
static inline rb_heap_t *
objspace_heap(rb_objspace_t *objspace, size_t i)
{
    return &heaps[i];
}

/* Objects heap allocated since the start it belongs to (0 if none). */
static inline size_t
heap_counted(const rb_heap_t *heap)
{
    if (heap->sampling_epoch != sampler.epoch) return 0;
    return heap->total_allocated_objects - heap->sampling_base - heap->sampling_moved;
}

/* The point in heap's region [cursor, end): charges its slots up to the
 * one that reaches it, lowering the end to that slot if it is there. */
static void
heap_place(rb_heap_t *heap, size_t heap_idx)
{
    SAMPLING_ASSERT(heap->sampling_end == 0);
    uintptr_t cursor = heap->newobj.alloc_cursor, end = heap->newobj.alloc_cursor_end;
    if (cursor >= end) return;
    /* (the cursor steps by the pool's slot, the bytes are the object's:
     * the same unless RVALUE_OVERHEAD) */
    size_t stride = pool_slot_sizes[heap_idx];
    size_t n = sample_point_limit(&heap->sample_point, 0, (end - cursor) / stride, slot_bytes(heap_idx));
    if (heap->sample_point.countdown > 0) return;   /* the point is further on */
    heap->sampling_end = end;
    heap->newobj.alloc_cursor_end = cursor + (n - 1) * stride;
}

/* The end made whole, and the slots charged and not allocated credited
 * back (the point stays where it was in the byte stream). */
static void
heap_unplace(rb_heap_t *heap, size_t heap_idx)
{
    uintptr_t cursor = heap->newobj.alloc_cursor, end = heap->newobj.alloc_cursor_end;
    size_t stride = pool_slot_sizes[heap_idx];
    if (heap->sampling_end) {
        end += stride;  /* S was charged */
        heap->newobj.alloc_cursor_end = heap->sampling_end;
        heap->sampling_end = 0;
    }
    if (cursor < end) heap->sample_point.countdown += (int64_t)((end - cursor) / stride * slot_bytes(heap_idx));
}

/* heap_alloc_slot's allocation at the cursor, as default.c makes it:
 * the marking step's budget first (false: spent, no slot now), then the
 * bump and the count. */
static inline bool
heap_step_allows(rb_objspace_t *objspace)
{
    if (!is_incremental_marking(objspace)) return true;
    if (objspace->incremental_mark_step_allocated_slots >= INCREMENTAL_MARK_STEP_ALLOCATIONS) return false;
    objspace->incremental_mark_step_allocated_slots++;
    return true;
}

static inline VALUE
heap_bump(rb_heap_t *heap, size_t heap_idx)
{
    VALUE obj = (VALUE)heap->newobj.alloc_cursor;
    rb_asan_unpoison_object(obj, true);
    heap->newobj.alloc_cursor = obj + pool_slot_sizes[heap_idx];
    heap->total_allocated_objects++;
#if RGENGC_CHECK_MODE
    MEMZERO((char *)obj, char, heap_slot_size(heap_idx));
#endif
    return obj;
}

static void
sampling_region_set(void *objspace_ptr, rb_heap_t *heap, size_t heap_idx)
{
    heap_sync(heap);
    SAMPLING_PHASE_START(t0);
    heap_place(heap, heap_idx);
    SAMPLING_PHASE_END(SAMPLING_PHASE_PAGE, t0);
}

static void
sampling_state_clear(void *objspace_ptr, rb_heap_t *heap)
{
    rb_objspace_t *objspace = objspace_ptr;
    /* (a heap whose region was charged under this start; another one's
     * point is drawn afresh when it next gets a region) */
    if (heap->sampling_epoch == sampler.epoch || heap->sampling_end) heap_unplace(heap, (size_t)(heap - heaps));
}

/* The cursor reached S, the slot whose allocation reaches the point:
 * hands it out as heap_alloc_slot would (charged to the marking step,
 * counted in the heap's total), records it, and places the next point in
 * the rest of the region.  Qfalse, with the end left at S: the marking
 * step's budget ran out (default.c takes a step and asks again). */
__attribute__((flatten)) static VALUE
sampling_take(void *objspace_ptr, rb_heap_t *heap, size_t heap_idx, VALUE klass, VALUE flags)
{
    rb_objspace_t *objspace = objspace_ptr;
    if (!heap_step_allows(objspace)) return Qfalse;
    SAMPLING_PHASE_START(t0);
    heap->newobj.alloc_cursor_end = heap->sampling_end;
    heap->sampling_end = 0;
    VALUE obj = heap_bump(heap, heap_idx);
    /* the draws are the sampler's (a start, stop or clear made every end
     * whole, under the barrier: this point is the running start's) */
    unsigned int lev = 0;
    if (sampling_ractors) lev = RB_GC_VM_LOCK_NO_BARRIER();
    uint64_t points = sample_point_reached(&heap->sample_point, &sampler.config);
    heap_place(heap, heap_idx);
    sampling_record(objspace, NULL, obj, klass, flags, heap_idx, points);
    if (sampling_ractors) RB_GC_VM_UNLOCK_NO_BARRIER(lev);
    SAMPLING_PHASE_END(SAMPLING_PHASE_TAKE, t0);
    SAMPLING_PHASE_START(t1);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CLOCK, t1);
    return obj;
}

/* heap_alloc_slot moved to the next region: the point is placed, and
 * the region's first slot handed out, as the sample if the point is on
 * it (Qfalse: the marking step's budget is spent, as default.c would
 * find it). */
static VALUE
sampling_region_advanced(void *objspace_ptr, rb_heap_t *heap, size_t heap_idx, VALUE klass, VALUE flags)
{
    rb_objspace_t *objspace = objspace_ptr;
    sampling_region_set(objspace, heap, heap_idx);
    if (heap->newobj.alloc_cursor >= heap->newobj.alloc_cursor_end) {
        return sampling_take(objspace, heap, heap_idx, klass, flags);
    }
    if (!heap_step_allows(objspace)) return Qfalse;
    return heap_bump(heap, heap_idx);
}

/* A dead Ractor's heaps move into dst with their allocation counts:
 * what src counted since the start is left in sampler.departed, and
 * dst's count does not change (the totals it takes count as moves);
 * src's lowered ends are made whole.  The main objspace's clock counts
 * the main Ractor's allocations: absorbed ones are moves there too. */
static void
sampling_objspace_absorb(void *dst_ptr, void *src_ptr)
{
    rb_objspace_t *dst = dst_ptr, *objspace = src_ptr;  /* (heaps: src's) */
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        rb_heap_t *heap = &heaps[i], *dheap = objspace_heap(dst, i);
        if (heap->sampling_end) heap_unplace(heap, i);
        size_t n = heap->total_allocated_objects;
        sampler.departed[i] += heap_counted(heap);
        heap->sampling_epoch = 0;   /* (counted: objspace_free leaves it) */
        if (dheap->sampling_epoch == sampler.epoch) {
            dheap->sampling_moved += n;
            dheap->sampling_at_marks += n;
        }
        if (dst != sampler_objspace()) continue;
        sampler.per_heap[i].moved += n;
        sampler.per_heap[i].allocated_at_marks += n;
        sampler.moved_bytes += (uint64_t)n * slot_bytes(i);
    }
}

/* An objspace freed (a Ractor's, not absorbed) leaves its count. */
void
rb_gc_impl_objspace_free(void *objspace_ptr)
{
    rb_objspace_t *objspace = objspace_ptr;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sampler.departed[i] += heap_counted(&heaps[i]);
        heaps[i].sampling_epoch = 0;
    }
    rb_gc_impl_objspace_free_default(objspace_ptr);
}

/* Every objspace's heaps, or the one's there is (VM lock held when a
 * second Ractor was made). */
static void
objspaces_each(void (*func)(void *objspace, void *data), void *data)
{
    if (sampling_ractors) rb_gc_vm_each_objspace(func, data);
    else func(sampler_objspace(), data);
}

/* The end of a marking that may be followed by compaction: each heap's
 * total then, so the moves are told apart (sampling_update_references).
 * A global GC marked every objspace (default.c's snapshot of them). */
static void
heaps_at_marks_i(void *objspace_ptr, void *data)
{
    rb_objspace_t *objspace = objspace_ptr;
    for (size_t i = 0; i < HEAP_COUNT; i++) heaps[i].sampling_at_marks = heaps[i].total_allocated_objects;
}

static void
heaps_moved_i(void *objspace_ptr, void *data)
{
    rb_objspace_t *objspace = objspace_ptr;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        rb_heap_t *heap = &heaps[i];
        if (heap->sampling_epoch == sampler.epoch) heap->sampling_moved += heap->total_allocated_objects - heap->sampling_at_marks;
        heap->sampling_at_marks = heap->total_allocated_objects;
    }
}

static void
objspaces_gc_each(rb_objspace_t *gc_objspace, void (*func)(void *objspace, void *data))
{
    if (gc_objspace->flags.during_global_gc) {
        for (size_t i = 0; i < global_objspace->global_gc.n_objspaces; i++) func(global_objspace->global_gc.objspaces[i], NULL);
    }
    else {
        func(gc_objspace, NULL);
    }
}

static void
objspaces_at_marks(rb_objspace_t *gc_objspace)
{
    objspaces_gc_each(gc_objspace, heaps_at_marks_i);
}

/* stats[:heaps]: every objspace's count since the start, and the
 * departed ones'. */
static void
heaps_counted_i(void *objspace_ptr, void *data)
{
    rb_objspace_t *objspace = objspace_ptr;
    size_t *out = data;
    for (size_t i = 0; i < HEAP_COUNT; i++) out[i] += heap_counted(&heaps[i]);
}
#endif

/* For sampled objects and for the references sites hold (classes, iseqs,
 * method entries: heap objects too): 0 unmarked, 1 marked, 2 marked old;
 * -1 not this marking's (4.1: a local GC marks its own objspace's objects
 * alone). */
static int
sampling_liveness(uintptr_t obj, void *data)
{
    rb_objspace_t *objspace = data;
    if (obj & 1) return 1;  /* a malloc'd block (malloc.c): its free ends it */
#if SAMPLING_POINT_ON_CURSOR
    if (!objspace->flags.during_global_gc && GET_HEAP_PAGE((VALUE)obj)->objspace != objspace) return -1;
#endif
    if (!RVALUE_MARKED(objspace, (VALUE)obj)) return 0;
    return RVALUE_OLD_P(objspace, (VALUE)obj) ? 2 : 1;
}

/* With --enable-checks, every invariant of records.h (with sites.h's
 * and refset.h's), malloc.c's table and timeline.h after each change the
 * collector makes (O(records) a GC: checks only). */
static inline void
records_verify(const char *when)
{
#ifdef SAMPLING_CHECKS
    const char *err = sampling_records_verify(&sampler.records);
    if (!err) err = malloc_verify();
    if (!err) err = sampling_timeline_verify(&sampler.timeline, &sampler.records);
    if (err) rb_bug("sampling: records after %s: %s", when, err);
#endif
}


static struct sampling_names *
sampling_name_site(const struct sampling_site *site, void *objspace)
{
    return sampling_site_names(site);
}

#if SAMPLING_POINT_ON_CURSOR
static void objspaces_at_marks(rb_objspace_t *gc_objspace);
#endif

static void
sampling_marks_finished(void *objspace_ptr)
{
    rb_objspace_t *gc_objspace = objspace_ptr;
#if SAMPLING_POINT_ON_CURSOR
    /* 4.1: a local GC of another Ractor's objspace runs on that Ractor's
     * thread without the VM lock; the records are the process's, so it
     * takes the lock for them (without joining a barrier: a GC must not
     * stop halfway for a global one) and ends the records of its own
     * objects alone (sampling_liveness).  The rows, the malloc queue and
     * the clock are the main objspace's, or a global GC's. */
    if (!sampler_gc_p(gc_objspace)) {
        if (!sampler.records.nlive && !sampler.records.sites.refs.size) return;
        unsigned int lev = RB_GC_VM_LOCK_NO_BARRIER();
        struct sampling_now now = { gc_objspace->profile.count, clock_now(sampler_objspace(), NULL) };
        bool full = is_full_marking(gc_objspace);
        if (sampler.records.nlive) {
            sampling_records_check_liveness(&sampler.records, sampling_liveness, gc_objspace, now, full);
        }
        if (sampler.records.sites.refs.size) {
            sampling_records_check_refs(&sampler.records, sampling_liveness, sampling_name_site, gc_objspace, full);
        }
        records_verify("marking");
        RB_GC_VM_UNLOCK_NO_BARRIER(lev);
        return;
    }
    objspaces_at_marks(gc_objspace);
#endif
    /* (4.1: a global GC's driver may be another objspace; every one is
     * marked, and the counts are the sampled one's) */
    bool full = is_full_marking(gc_objspace) || sampler_objspace() != gc_objspace;
    rb_objspace_t *objspace = sampler_objspace();
    SAMPLING_PHASE_START(t0);
    malloc_drain(objspace->profile.count);
    if (full) malloc_blocks_trim();
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    for (size_t i = 0; i < HEAP_COUNT; i++) sampler.per_heap[i].allocated_at_marks = totals[i];
    struct sampling_now now = { objspace->profile.count, clock_bytes(totals) };
    if (sampler.records.nlive) {
        sampling_records_check_liveness(&sampler.records, sampling_liveness, gc_objspace, now, full);
    }
    /* this GC's row, finished when its sweep ends (timeline.h) */
    sampler.row_waits = false;
    if (sampling_on) sampling_timeline_marked(&sampler.timeline, &sampler.records, now, full);
    /* Classes and code that die now: their sites are named while they can
     * still be read (nothing is swept before this returns). */
    if (sampler.records.sites.refs.size) {
        sampling_records_check_refs(&sampler.records, sampling_liveness, sampling_name_site, gc_objspace, full);
    }
    records_verify("marking");
    SAMPLING_PHASE_END(SAMPLING_PHASE_MARKS, t0);
}

/* The row of a GC whose sweep is over: the live estimate without the
 * blocks the sweep freed (timeline.h).  Frees other threads queued
 * count first; while a read is on they stay queued, and
 * so does the row (row_waits), until the read ends or the next marking. */
static void
sampling_row_finish(rb_objspace_t *objspace)
{
    malloc_drain(objspace->profile.count);
    if (sampler.records.reading && __atomic_load_n(&malloc_nevents, __ATOMIC_RELAXED)) {
        sampler.row_waits = true;
        return;
    }
    sampler.row_waits = false;
    sampling_timeline_swept(&sampler.timeline, &sampler.records);
    records_verify("sweep");
}

static void
sampling_sweep_finished(void *objspace_ptr)
{
    if (sampler.timeline.pending && sampler_gc_p(objspace_ptr)) sampling_row_finish(sampler_objspace());
}

/* A reader sees every GC's row: a sweep still under way is finished
 * first (as ObjectSpace.each_object would), and a row waiting for a read
 * to end is finished when no read is on.  (VM lock held.) */
static void
sampler_rows_settle(rb_objspace_t *objspace)
{
    if (!sampler.timeline.pending) return;
    if (is_lazy_sweeping(objspace)) gc_rest(objspace);
    else if (sampler.row_waits && !sampler.records.reading) sampling_row_finish(objspace);
}

static void
sampling_mark_roots(void *objspace_ptr)
{
    if (sampler_gc_p(objspace_ptr)) malloc_mark_queue(objspace_ptr);
}

static uintptr_t
sampling_location(uintptr_t ref, void *objspace)
{
    if (ref & 1) return ref;    /* a malloc'd block (malloc.c): never moved */
    return (uintptr_t)rb_gc_impl_location(objspace, (VALUE)ref);
}

static void
sampling_update_references(void *objspace_ptr)
{
    if (!sampler_gc_p(objspace_ptr)) return;
    rb_objspace_t *objspace = sampler_objspace();
    /* Each move bumped the destination heap's total_allocated_objects
     * (gc_compact_move); nothing else allocates during a GC.  (On 4.0 the
     * sweep start moved the caches' counts into the totals meanwhile:
     * allocated_totals counts both, so the sum moves by the moves alone.) */
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        struct sampler_heap *h = &sampler.per_heap[i];
        h->moved += totals[i] - h->allocated_at_marks;
        sampler.moved_bytes += (uint64_t)(totals[i] - h->allocated_at_marks) * slot_bytes(i);
        h->allocated_at_marks = totals[i];
    }
#if SAMPLING_POINT_ON_CURSOR
    objspaces_gc_each(objspace_ptr, heaps_moved_i);
#endif
    if (usdt_following()) {     /* moved samples keep their first address (usdt.h) */
        for (size_t i = 0; i < sampler.records.nlive; i++) {
            uintptr_t obj = sampler.records.live[i].obj;
            usdt_move(obj, sampling_location(obj, objspace));
        }
    }
    sampling_records_update_references(&sampler.records, sampling_location, objspace);
    records_verify("compaction");
}

/* ---- start, stop, clear (API side; VM lock and barrier held) ---- */

#if SAMPLING_POINT_ON_CURSOR
/* 4.1: the points go into the sampled objspace's regions, the ends are
 * made whole again (no caches: the foreach calls give NULL once). */
static void
points_each_heap_i(void *objspace_ptr, void *data)
{
    rb_objspace_t *objspace = objspace_ptr;
    bool place = data != NULL;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        rb_heap_t *heap = &heaps[i];
        if (place) {
            heap_sync(heap);
            heap_place(heap, i);
        }
        else if (heap->sampling_epoch == sampler.epoch) {
            heap_unplace(heap, i);
        }
    }
}
# define rb_gc_ractor_newobj_cache_foreach(func, data) func(NULL, data)
static void cache_place_i(void *c, void *data) { objspaces_each(points_each_heap_i, (void *)1); }
static void cache_rejoin_i(void *c, void *data) { objspaces_each(points_each_heap_i, NULL); }
#else
static void
cache_place_i(void *c, void *data)
{
    rb_ractor_newobj_cache_t *cache = c;
#if SAMPLING_POINT_ON_COUNT
    cache_place(cache);
#else
    cache_sync(cache);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sample_point_list *list = cache_list(cache, i);
        if (*list) sample_point_place(&cache->sample_points[i], list, sample_point_list_length(*list), slot_bytes(i));
    }
#endif
}

static void
cache_rejoin_i(void *c, void *data)
{
    rb_ractor_newobj_cache_t *cache = c;
#if SAMPLING_POINT_ON_COUNT
    cache_unplace(cache);
#else
    if (cache->sampling_epoch != sampler.epoch) return;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sample_point_rejoin(&cache->sample_points[i], cache_list(cache, i), slot_bytes(i));
    }
#endif
}
#endif

/* Every counter in stats counts "since start or clear". */
static void
counters_reset(rb_objspace_t *objspace)
{
    sampler.records.dropped = 0;
    sampler.records.evicted = 0;
    /* (records a start after stop, or a fork, keeps: counted in records,
     * never in samples, which count from now) */
    sampler.carried = sampling_records_count(&sampler.records);
    __atomic_store_n(&sampler_reader_samples, 0, __ATOMIC_RELAXED);
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        struct sampler_heap *h = &sampler.per_heap[i];
        h->base_allocated = totals[i];
        h->allocated_at_marks = totals[i];
        h->moved = 0;
        h->stopped_allocated = 0;
        h->samples = 0;
        h->points = 0;
#if SAMPLING_POINT_ON_CURSOR
        sampler.departed[i] = 0;
#endif
    }
    malloc_counters_reset();
}

/* Objects allocated on each heap while enabled. */
static void
heaps_allocated_objects(rb_objspace_t *objspace, size_t out[HEAP_COUNT])
{
    if (!sampling_on) {
        for (size_t i = 0; i < HEAP_COUNT; i++) out[i] = sampler.per_heap[i].stopped_allocated;
        return;
    }
#if SAMPLING_POINT_ON_CURSOR
    /* every objspace's (4.1: each heap counts since its first point) */
    for (size_t i = 0; i < HEAP_COUNT; i++) out[i] = sampler.departed[i];
    objspaces_each(heaps_counted_i, out);
#else
    allocated_totals(objspace, out);
    for (size_t i = 0; i < HEAP_COUNT; i++) out[i] -= sampler.per_heap[i].base_allocated + sampler.per_heap[i].moved;
#endif
}

/* Points go into every list the caches hold now: counting is exact from
 * the next allocation. */
static void
begin_counting(rb_objspace_t *objspace)
{
    sampler.epoch++;
    sampling_timeline_begin(&sampler.timeline);
    malloc_state.on = sampler.params.malloc;
    counters_reset(objspace);
    sampling_on = true;
    rb_gc_ractor_newobj_cache_foreach(cache_place_i, NULL);
}

static void
end_counting(rb_objspace_t *objspace)
{
    rb_gc_ractor_newobj_cache_foreach(cache_rejoin_i, NULL);
    size_t allocated[HEAP_COUNT];
    heaps_allocated_objects(objspace, allocated);
    for (size_t i = 0; i < HEAP_COUNT; i++) sampler.per_heap[i].stopped_allocated = allocated[i];
    sampling_on = false;
    malloc_stop();
}

/* A forked child counts its own allocations: totals and counters start
 * from zero (points are placed anew, so fixed mode's invariant holds);
 * dead records go, live ones stay: objects inherited from the parent
 * that the child still holds. */
static void
sampler_after_fork(rb_objspace_t *objspace)
{
    malloc_drain(objspace->profile.count);  /* (see sampler_start) */
    sampler_readers_after_fork();
    sampling_records_forget_peak(&sampler.records);
    sampling_records_after_fork(&sampler.records);
    sampling_records_close_window(&sampler.records);
    sampling_timeline_clear(&sampler.timeline);
    sampler.row_waits = false;
    if (sampling_on) {
        end_counting(objspace);
        begin_counting(objspace);
    }
    else {
        counters_reset(objspace);
    }
    records_verify("fork");
}

static uint64_t
random_seed(void)
{
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&seed;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) seed ^= (uint64_t)ts.tv_nsec * PROBE_GOLDEN;
    return seed;
}

void
sampler_start(const struct sampling_params *params)
{
    rb_objspace_t *objspace = sampler_objspace();
    /* depth frames and a location-only one (frames.h) */
    struct sampling_frame *scratch = malloc((params->depth + 1) * sizeof(*scratch));
    if (!scratch) rb_memerror();

    unsigned int lev = RB_GC_VM_LOCK();
    rb_gc_vm_barrier();
    {
        /* Queued malloc samples were counted before this start (or clear,
         * or fork): they are applied to what they were counted in, not to
         * the counters about to start from zero. */
        malloc_drain(objspace->profile.count);
        if (sampling_on) end_counting(objspace);
        free(sampler.scratch);
        sampler.scratch = scratch;
        sampler.params = *params;
        sampler.config.mode = params->mode;
        sampler.config.interval = params->interval;
        uint64_t seed = params->has_seed ? params->seed : random_seed();
        sampling_rng_seed(&sampler.config.rng, seed);
        malloc_start(params, seed);
        for (size_t i = 0; i < HEAP_COUNT; i++) {
            sampler.per_heap[i].poisson_weight = sampling_weight(SAMPLING_MODE_POISSON, params->interval, slot_bytes(i), 1);
        }
        sampling_records_set_max(&sampler.records, params->max_samples);
        sampling_records_reserve(&sampler.records);    /* else the tables grow as they fill */
        begin_counting(objspace);
        records_verify("start");
    }
    RB_GC_VM_UNLOCK(lev);
}

bool
sampler_stop(void)
{
    rb_objspace_t *objspace = sampler_objspace();
    bool was_on;
    unsigned int lev = RB_GC_VM_LOCK();
    rb_gc_vm_barrier();
    {
        was_on = sampling_on;
        if (sampling_on) end_counting(objspace);
    }
    RB_GC_VM_UNLOCK(lev);
    return was_on;
}

void
sampler_clear(void)
{
    rb_objspace_t *objspace = sampler_objspace();
    unsigned int lev = RB_GC_VM_LOCK();
    rb_gc_vm_barrier();
    {
        malloc_drain(objspace->profile.count);  /* (see sampler_start) */
        for (size_t i = 0; usdt_following() && i < sampler.records.nlive; i++) {
            SAMPLING_RECORD_UNFOLLOWED(sampler.records.live[i].obj);
        }
        sampling_records_clear(&sampler.records);
        sampling_timeline_clear(&sampler.timeline);
        sampler.row_waits = false;
        if (sampling_on) {
            sampling_records_reserve(&sampler.records);
            end_counting(objspace);
            begin_counting(objspace);
        }
        else {
            counters_reset(objspace);
        }
        records_verify("clear");
    }
    RB_GC_VM_UNLOCK(lev);
}

bool
sampler_enabled(void)
{
    return sampling_on;
}

const struct sampling_params *
sampler_params(void)
{
    return &sampler.params;
}

void
sampler_get_stats(struct sampler_stats *stats)
{
    rb_objspace_t *objspace = sampler_objspace();
    unsigned int lev = RB_GC_VM_LOCK();
    {
        sampler_rows_settle(objspace);     /* (the peak) */
        malloc_drain(objspace->profile.count);
        memset(stats, 0, sizeof(*stats));
        stats->enabled = sampling_on;
        stats->mode = sampler.params.mode;
        stats->interval = sampler.params.interval;
        stats->depth = sampler.params.depth;
        stats->max_samples = sampler.params.max_samples;
        stats->live = sampler.records.nlive;
        stats->dropped = sampler.records.dropped;
        stats->evicted = sampler.records.evicted;
        stats->records = sampling_records_count(&sampler.records);
        stats->sites = sampler.records.sites.count;
        stats->folded = sampler.records.sites.folded;
        stats->named = sampler.records.sites.named;
        stats->nheaps = HEAP_COUNT;
        size_t allocated[HEAP_COUNT];
        heaps_allocated_objects(objspace, allocated);
        for (size_t i = 0; i < HEAP_COUNT; i++) {
            struct sampler_heap_stats *h = &stats->per_heap[i];
            h->slot_size = slot_bytes(i);
            h->allocated_bytes = (uint64_t)allocated[i] * h->slot_size;
            h->samples = sampler.per_heap[i].samples;
            h->points = sampler.per_heap[i].points;
            stats->samples += h->samples;
            stats->allocated_bytes += h->allocated_bytes;
        }
        malloc_get_stats(stats);
        stats->live_space[SAMPLING_LIVE_SLOT] = sampler.records.live_space[SAMPLING_LIVE_SLOT];
        stats->live_space[SAMPLING_LIVE_MALLOC] = sampler.records.live_space[SAMPLING_LIVE_MALLOC];
        stats->total_allocated_bytes = clock_bytes_all(objspace);
        const struct sampling_peak *peak = &sampler.timeline.peak;
        stats->peak = peak->taken;
        stats->peak_gc = peak->at.gc;
        stats->peak_live = sampling_row_live(&peak->at);
        stats->peak_lost = sampler.records.peak.lost;
        stats->timeline_rows = sampler.timeline.n;
        stats->reader_samples = __atomic_load_n(&sampler_reader_samples, __ATOMIC_RELAXED);
        stats->carried = sampler.carried;
    }
    RB_GC_VM_UNLOCK(lev);
}

const char *const sampler_memory_names[SAMPLER_MEMORY_PARTS] = {
    "records", "sites", "label_sets", "timeline", "malloc_table", "addresses", "scratch",
};

size_t
sampler_memory(size_t parts[SAMPLER_MEMORY_PARTS])
{
    unsigned int lev = RB_GC_VM_LOCK();
    {
        parts[SAMPLER_MEMORY_RECORDS] = sampling_records_memsize(&sampler.records);
        parts[SAMPLER_MEMORY_SITES] = sampling_sites_memsize(&sampler.records.sites);
        parts[SAMPLER_MEMORY_LABEL_SETS] = sampling_labels_bytes();
        parts[SAMPLER_MEMORY_TIMELINE] = sampling_timeline_memsize(&sampler.timeline);
        parts[SAMPLER_MEMORY_MALLOC_TABLE] = malloc_memsize();
        /* (named only inside a read, under this lock: addresses.h) */
        parts[SAMPLER_MEMORY_ADDRESSES] = sampling_addresses_memsize(sampling_addresses_process());
        parts[SAMPLER_MEMORY_SCRATCH] = sampler.scratch ? (sampler.params.depth + 1) * sizeof(*sampler.scratch) : 0;
    }
    RB_GC_VM_UNLOCK(lev);
    size_t total = 0;
    for (int i = 0; i < SAMPLER_MEMORY_PARTS; i++) total += parts[i];
    return total;
}

const struct sampling_timeline *
sampler_timeline(void)
{
    return &sampler.timeline;
}

uint64_t
sampler_clock(void)
{
    rb_objspace_t *objspace = sampler_objspace();
    unsigned int lev = RB_GC_VM_LOCK();
    uint64_t clock = clock_bytes_all(objspace);
    RB_GC_VM_UNLOCK(lev);
    return clock;
}

struct sampling_records *
sampler_records(void)
{
    return &sampler.records;
}

uint64_t
sampler_read_begin(unsigned int *lev)
{
    *lev = RB_GC_VM_LOCK();
    if (sampler.readers++ == 0) {
        /* finishes any GC in progress (its sweep's frees end records,
         * applied at once: no read is on yet), then keeps GC off while
         * reading */
        sampler.readers_disabled_gc = !RTEST(rb_gc_disable());
    }
    sampler_rows_settle(sampler_objspace());
    malloc_drain(rb_gc_count());
    sampler.records.reading++;
    return sampler.records.next_seq;
}

void
sampler_read_end(unsigned int lev)
{
    sampler.records.reading--;
    if (--sampler.readers == 0 && sampler.readers_disabled_gc) rb_gc_enable();
    if (sampler.row_waits && !sampler.records.reading) sampling_row_finish(sampler_objspace());
    RB_GC_VM_UNLOCK(lev);
}

bool
sampler_record_copy(uint32_t index, uint64_t seq, struct sampling_record *out)
{
    bool found = false;
    unsigned int lev = RB_GC_VM_LOCK();
    {
        malloc_drain(rb_gc_count());    /* frees queued by other threads end records */
        const struct sampling_records *r = &sampler.records;
        if (index < r->used && r->items[index].seq == seq) {
            *out = r->items[index];
            found = true;
        }
    }
    RB_GC_VM_UNLOCK(lev);
    return found;
}

VALUE
sampler_object(uint32_t index, uint64_t seq)
{
    rb_objspace_t *objspace = sampler_objspace();
    VALUE obj;
    unsigned int lev = RB_GC_VM_LOCK();
    {
        /* During incremental marking an unmarked object may already be
         * garbage; handing it out could resurrect it behind the marker's
         * back.  Finish marking first: then the record knows. */
        if (is_incremental_marking(objspace)) gc_rest(objspace);
        obj = (VALUE)sampling_records_object(&sampler.records, index, seq);
        if (obj & 1) obj = 0;   /* a malloc'd block (malloc.c) is no object */
        if (obj && !sampler_object_visible(obj)) obj = 0;
    }
    RB_GC_VM_UNLOCK(lev);
    return obj ? obj : Qnil;
}

bool
sampler_object_visible(VALUE obj)
{
    /* Internal objects (imemo, hidden, singleton internals) are never
     * handed to Ruby code, as ObjectSpace.each_object skips them. */
    if (rb_objspace_internal_object_p(obj)) return false;
    /* Nor, once a second Ractor was made, an object that is not
     * shareable: it may belong to another Ractor (which one allocated
     * it does not say: a message is copied by its sender), as
     * ObjectSpace.each_object decides.  A flag test: finding out
     * (rb_ractor_shareable_p) would walk and change the object. */
    if (sampling_ractors && !RB_OBJ_SHAREABLE_P(obj)) return false;
    return true;
}

/* the retention walk's view of the heap */
#include "retention.h"
#include "retention_names.h"
#include "retention_walk.c"
