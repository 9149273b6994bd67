/*
 * ruby_version.h: what differs between the Ruby versions this library
 * builds for, in one place.  Every other file is written once, against
 * the names defined here (4.0's names where 4.0 has one).
 *
 *   3.4.x   patches/3.4   (tested: 3.4.5, 3.4.9)
 *   4.0.x   patches/4.0   (tested: 4.0.5)
 *   4.1     patches/4.1   (tested: 4.1.0-dev 3391443, the per-Ractor GC)
 *
 * The differences, and what each means for the sampler:
 *
 *   - The VM lock.  4.0's rb_gc_vm_lock takes the caller's file and line,
 *     through RB_GC_VM_LOCK() / RB_GC_VM_UNLOCK(lev) (gc/gc.h); 3.4 has
 *     neither macro: they are defined here on 3.4's functions.
 *   - Sanitizer helpers.  3.4's default.c includes internal/sanitizers.h
 *     in every build; 4.0's, in a modular build, replaces the helpers with
 *     no-ops of its own and would redefine them if that header came first.
 *     So sampling.c gets it on 3.4 only (SAMPLING_INCLUDE_SANITIZERS), and
 *     on 4.0 the sampled slot is not unpoisoned, as default.c's own are not.
 *     Without ASan and MSan, 3.4's default.c calls gc.c's helpers, which do
 *     nothing but cost a call into the ruby binary: shared_object.h gives
 *     it 4.0's no-ops instead (SAMPLING_INLINE_ASAN_HELPERS).
 *   - STATIC_ASSERT comes with default.c's includes on 3.4; 4.0's modular
 *     build does not include internal/static_assert.h.
 *   - Allocation counts.  3.4 counts an allocation in newobj_alloc, which
 *     every slot the cache miss hands out passes, sampled ones included.
 *     4.0 counts in ractor_cache_allocate_slot, per cache
 *     (allocated_objects_count), and adds to the heap's total every 1024
 *     (ALLOCATED_COUNT_STEP) and when the cache is cleared or stats are
 *     read.  So on 4.0 (SAMPLING_CACHE_COUNTS):
 *       * the sample point is that count's limit (SAMPLING_POINT_ON_COUNT,
 *         patches/4.0, sample_point.h), not a cut in the free list: the
 *         sampled slot is popped and counted by ractor_cache_allocate_slot
 *         like any other;
 *       * a heap's allocations are its total plus every cache's pending
 *         count (SAMPLING_CACHE_PENDING), read, never flushed: flushing
 *         another Ractor's cache would race with its fast path;
 *       * the allocation clock (sampling.c, clock_now) at a sample adds
 *         the sampling cache's pending counts only (other caches are not
 *         read on the sampling path): another Ractor's unflushed
 *         allocations, up to 1,023 a heap, are missing from it there; at
 *         a GC every cache's are read.
 *   - malloc.  4.0's rb_gc_impl_malloc, _calloc and _realloc take a
 *     gc_allowed flag that 3.4's do not (SAMPLING_GC_ALLOWED_*); 4.0's
 *     default.c asks malloc_usable_size only when no size is given, 3.4's
 *     always (malloc.c answers for its own blocks either way).
 *   - Class names.  4.0 keeps classpath per namespace box:
 *     RCLASS_EXT(mod)->classpath no longer compiles, and 4.0's
 *     RCLASS_CLASSPATH asks rb_current_box, which the ruby binary does not
 *     export (a library that called it would die on a symbol lookup once
 *     boxes are on) and which means nothing during a GC.  frames.c reads
 *     SAMPLING_CLASSPATH: on 4.0 the class's prime classext (the name it
 *     got where it was defined), on 3.4 the only one.
 *   - Ruby frames that backtraces show as C methods (a C method's label,
 *     the file and line of the Ruby frame below), vm_backtrace.c.  3.4:
 *     methods marked `Primitive.attr! :c_trace` (only the YJIT variants
 *     of Integer#times and Array#each are).  4.0: every frame whose iseq
 *     comes from an `<internal:...>` file (Integer#times, Array#each,
 *     Kernel#loop...), and of a run of C and internal frames only the
 *     outermost internal one is kept (SAMPLING_ONE_INTERNAL_FRAME).
 *     SAMPLING_ISEQ_AS_CFUNC_P(iseq) tells; frames.c calls it when samples
 *     are read and when a cut stack needs its caller's line, never per
 *     captured frame (on 4.0 it compares the iseq's path).
 *   - Instance variables on retention paths.  4.0 keeps a class's ivars
 *     and class variables (and any object's generic ivars) in an imemo
 *     fields object the owner marks, so a path runs class -> (imemo
 *     fields) -> value; retention_names.c names the second edge by the
 *     owner's ivars (SAMPLING_FIELDS_OWNER).  3.4 has no such object.
 *
 *   - Ruby 4.1 (SAMPLING_POINT_ON_CURSOR).  No Ractor cache and no free
 *     list: each Ractor has an objspace of its own, whose heaps hand out
 *     slots by bumping a cursor through free regions, and count every
 *     allocation in the heap's total (exact, single writer).  The sample
 *     point is the cursor's end, lowered to the slot that reaches it
 *     (patches/4.1, GC_HOOK_ALLOC_*); the sampler's state is a field of
 *     each heap.  Twelve heaps of 32 to 1024 bytes, not powers of two
 *     (SAMPLING_SLOTS_POW2 0).  A local GC of a Ractor other than the
 *     main one takes no lock, so the sampler works on the main Ractor's
 *     objspace alone (sampling.c, "Ractors"); a global GC marks them all.
 *     mark_weak/remove_weak are gone: the sampler never used them.
 *
 * The patches differ in the sample point's hooks alone: 3.4's fast path
 * has no count, so its point is a cut in the free list (GC_HOOK_CACHE_*,
 * GC_HOOK_NEWOBJ_CACHE_MISS*); 4.0's is the count's limit
 * (GC_HOOK_ALLOCATED_*); 4.1's the bump cursor's end (GC_HOOK_ALLOC_*).
 * The collector's hooks are the same (4.1 adds one for absorbed heaps).
 */
#ifndef SAMPLING_RUBY_VERSION_H
#define SAMPLING_RUBY_VERSION_H

#include "ruby/version.h"

#define SAMPLING_RUBY_AT_LEAST(major, minor) \
    (RUBY_API_VERSION_MAJOR > (major) || \
     (RUBY_API_VERSION_MAJOR == (major) && RUBY_API_VERSION_MINOR >= (minor)))

#if !SAMPLING_RUBY_AT_LEAST(3, 4) || SAMPLING_RUBY_AT_LEAST(4, 2)
# error "gc/sampling builds for Ruby 3.4.x, 4.0.x and 4.1 only (patches/3.4, patches/4.0, patches/4.1)"
#endif

#if SAMPLING_RUBY_AT_LEAST(4, 1)
/* ---- Ruby 4.1 ---- */
# define SAMPLING_POINT_ON_CURSOR 1
# define SAMPLING_SLOTS_POW2 0
#else
# define SAMPLING_POINT_ON_CURSOR 0
# define SAMPLING_SLOTS_POW2 1      /* slot sizes are BASE_SLOT_SIZE << heap */
#endif

#if SAMPLING_RUBY_AT_LEAST(4, 0)
/* ---- Ruby 4.0.x and 4.1 ---- */
/* malloc.c: rb_gc_impl_malloc, _calloc and _realloc take gc_allowed (false:
 * the caller cannot let a GC run), and default.c's malloc accounting
 * (objspace_malloc_increase) passes it on; rb_gc_impl_free gives true. */
# define SAMPLING_GC_ALLOWED_PARAM , bool gc_allowed
# define SAMPLING_GC_ALLOWED_ARG , gc_allowed
# define SAMPLING_GC_ALLOWED_TRUE , true
# define SAMPLING_INCLUDE_SANITIZERS 0
# define SAMPLING_INLINE_ASAN_HELPERS 0   /* default.c has its own no-ops */
# if SAMPLING_POINT_ON_CURSOR
/* 4.1: every allocation is in its heap's total at once */
#  define SAMPLING_CACHE_COUNTS 0
#  define SAMPLING_POINT_ON_COUNT 0
#  define SAMPLING_CACHE_PENDING(cache, heap_idx) 0
# else
#  define SAMPLING_CACHE_COUNTS 1
#  define SAMPLING_POINT_ON_COUNT 1
#  define SAMPLING_CACHE_PENDING(cache, heap_idx) ((cache)->heap_caches[heap_idx].allocated_objects_count)
# endif
/* frames.c (internal/class.h): a class's name, from its prime classext */
# define SAMPLING_CLASSPATH(mod) RCLASSEXT_CLASSPATH(RCLASS_EXT_PRIME(mod))
# define SAMPLING_PERMANENT_CLASSPATH_P(mod) RCLASSEXT_PERMANENT_CLASSPATH(RCLASS_EXT_PRIME(mod))
/* frames.c (vm_core.h): vm_backtrace.c's is_internal_location */
# define SAMPLING_ISEQ_AS_CFUNC_P(iseq) \
    (strncmp(RSTRING_PTR(rb_iseq_path(iseq)), "<internal:", sizeof("<internal:") - 1) == 0)
# define SAMPLING_ONE_INTERNAL_FRAME 1
/* retention_names.c (internal/imemo.h): a class's instance and class
 * variables, and any object's generic ones, live in an imemo fields
 * object that the owner marks: its children are named by the owner's
 * ivars.  Qfalse for any other object. */
# define SAMPLING_FIELDS_OWNER(obj) (imemo_type(obj) == imemo_fields ? rb_imemo_fields_owner(obj) : Qfalse)
#else
/* ---- Ruby 3.4.x ---- */
# define SAMPLING_GC_ALLOWED_PARAM
# define SAMPLING_GC_ALLOWED_ARG
# define SAMPLING_GC_ALLOWED_TRUE
# define SAMPLING_INCLUDE_SANITIZERS 1
# define SAMPLING_INLINE_ASAN_HELPERS 1
# define SAMPLING_CACHE_COUNTS 0
# define SAMPLING_POINT_ON_COUNT 0   /* the point is a cut in the free list */
# define SAMPLING_CACHE_PENDING(cache, heap_idx) 0
# define RB_GC_VM_LOCK() rb_gc_vm_lock()
# define RB_GC_VM_UNLOCK(lev) rb_gc_vm_unlock(lev)
/* frames.c (internal/class.h): a class's name */
# define SAMPLING_CLASSPATH(mod) (RCLASS_EXT(mod)->classpath)
# define SAMPLING_PERMANENT_CLASSPATH_P(mod) (RCLASS_EXT(mod)->permanent_classpath)
/* frames.c (vm_core.h): rb_iseq_attr_p(iseq, BUILTIN_ATTR_C_TRACE) */
# define SAMPLING_ISEQ_AS_CFUNC_P(iseq) ((ISEQ_BODY(iseq)->builtin_attrs & BUILTIN_ATTR_C_TRACE) != 0)
# define SAMPLING_ONE_INTERNAL_FRAME 0
/* retention_names.c: 3.4 keeps fields in the object (or a table) itself */
# define SAMPLING_FIELDS_OWNER(obj) Qfalse
#endif

/* retention_walk.c (default.c): obj's word and bit in its page's bitmaps.
 * 4.1's slots are not powers of two: the index is computed through the
 * page's reciprocal. */
#if SAMPLING_POINT_ON_CURSOR
# define SAMPLING_BITMAP_INDEX(obj) SLOT_BITMAP_INDEX(GET_HEAP_PAGE(obj), (obj))
# define SAMPLING_BITMAP_OFFSET(obj) SLOT_BITMAP_OFFSET(GET_HEAP_PAGE(obj), (obj))
#else
# define SAMPLING_BITMAP_INDEX(obj) BITMAP_INDEX(obj)
# define SAMPLING_BITMAP_OFFSET(obj) BITMAP_OFFSET(obj)
#endif

/* frames.c (vm_core.h, zjit.h): a control frame's iseq and pc; 4.1 keeps
 * them in ZJIT's frame for a frame ZJIT runs. */
#if SAMPLING_POINT_ON_CURSOR
# define SAMPLING_CFP_ISEQ(cfp) sampling_cfp_iseq(cfp)   /* (frames.c: zjit.h's CFP_ISEQ) */
# define SAMPLING_CFP_PC(cfp) sampling_cfp_pc(cfp)
#else
# define SAMPLING_CFP_ISEQ(cfp) ((cfp)->iseq)
# define SAMPLING_CFP_PC(cfp) ((cfp)->pc)
#endif

/* 3.4: the point is a cut in a free list (sample_point.h) */
#define SAMPLING_POINT_ON_LIST (!SAMPLING_POINT_ON_COUNT && !SAMPLING_POINT_ON_CURSOR)

#endif
