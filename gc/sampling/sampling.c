/*
 * sampling.c: CRuby's default GC with an allocation sampler inside it.
 *
 * This is the only file of the library that sees the collector's internals.
 * (Hence its length: every hook, and the sampler's state the hooks share;
 * what each hook does is in the files below.)
 * It defines the hook points that patches/3.4 and patches/4.0 add to
 * gc/default/default.c (the same hooks; what else differs between the
 * versions is in ruby_version.h), then includes that file, so the library is the default GC compiled with
 * the hooks filled in.  The logic behind each hook lives in its own file:
 *
 *   sample_point.c  where the next sample falls; cutting and rejoining lists
 *   gap.c           gaps between points (poisson / fixed) and weights
 *   records.c       records: liveness, eviction, the bound
 *   sites.c         sites (stack, class, type): totals, weak references
 *   frames.c        capturing and reading stacks (caller_locations rules)
 *   labels.c        label sets as ids; labels_api.c gives a sample its
 *                   fiber's (sampling_labels_current) and with_labels
 *   api.c           ObjectSpace::AllocationSampler and RUBY_GC_SAMPLING;
 *                   read.c, sample.c, profile.c, report.c read it from Ruby
 *
 * The allocation path, numbered as it runs (newobj_alloc in default.c):
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
 * been made, which the GVL serialises as the lock would; API calls take the lock too
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
#include "labels.h"
#include "sampler.h"
#include "api.h"
#include "timeline.h"
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

static void sampling_set_page(void *cache, size_t heap_idx, size_t free_slots);
static VALUE sampling_take(void *objspace, void *cache, size_t heap_idx, VALUE klass, VALUE flags);
/* sampling_take, which always gives a slot: newobj_alloc then returns it
 * at once, never entering newobj_cache_miss */
static inline VALUE
sampling_take_slot(void *objspace, void *cache, size_t heap_idx, VALUE klass, VALUE flags)
{
    VALUE obj = sampling_take(objspace, cache, heap_idx, klass, flags);
    if (obj == Qfalse) __builtin_unreachable();
    return obj;
}
static void sampling_cache_clear(void *cache, size_t heap_idx);
/* (once a GC, out of line so that benchmark/run can measure it) */
static NOINLINE(void sampling_marks_finished(void *objspace));
static void sampling_update_references(void *objspace);
static void sampling_mark_roots(void *objspace);

/* Per Ractor cache: a sample point per heap, and the start it belongs to. */
#define GC_HOOK_RACTOR_CACHE_FIELDS \
    struct sample_point sample_points[HEAP_COUNT]; \
    uint64_t sampling_epoch;
#define GC_HOOK_NEWOBJ_PARAMS , VALUE klass, VALUE flags
#define GC_HOOK_NEWOBJ_ARGS , klass, flags
#define GC_HOOK_CACHE_SET_PAGE(objspace, cache, heap_idx, free_slots) \
    do { if (RB_UNLIKELY(sampling_on)) sampling_set_page((cache), (heap_idx), (free_slots)); } while (0)
/* Only an empty list with a waiting tail is a sample.  A non-empty list
 * here means either the incremental marking step budget ran out (the
 * allocator retries, refusing again until a marking step resets it), or
 * another Ractor's start/stop/clear rejoined this cache's tail while this
 * one waited for the VM lock: then the slot must come from the list, never
 * from a new page that would overwrite it. */
#define GC_HOOK_NEWOBJ_CACHE_MISS(objspace, cache, heap_idx) \
    ((cache)->heap_caches[heap_idx].freelist ? ractor_cache_allocate_slot((objspace), (cache), (heap_idx)) : \
     RB_UNLIKELY((cache)->sample_points[heap_idx].tail != NULL) \
        ? sampling_take((objspace), (cache), (heap_idx), klass, flags) : Qfalse)
/* With a single Ractor the VM lock excludes nothing the GVL does not (it
 * is owned per Ractor, so its threads re-enter it freely): a sample there
 * is taken in newobj_alloc, before the lock and before newobj_cache_miss's
 * frame (its six saved registers), saving both.  A non-empty list is the
 * marking step budget: left to the locked path.  sampling_ractors says
 * whether a second Ractor may run (rb_gc_impl_ractor_cache_alloc below). */
static bool sampling_ractors;
#define GC_HOOK_NEWOBJ_CACHE_MISS_UNLOCKED(objspace, cache, heap_idx) \
    (RB_UNLIKELY((cache)->sample_points[heap_idx].tail != NULL) && !(cache)->heap_caches[heap_idx].freelist && \
     !sampling_ractors \
        ? sampling_take_slot((objspace), (cache), (heap_idx), klass, flags) : Qfalse)
#define GC_HOOK_CACHE_CLEAR(cache, heap_idx) \
    do { if (RB_UNLIKELY(sampling_on)) sampling_cache_clear((cache), (heap_idx)); } while (0)
#define GC_HOOK_MARK_ROOTS(objspace) sampling_mark_roots(objspace)
#define GC_HOOK_MARKS_FINISHED(objspace) sampling_marks_finished(objspace)
#define GC_HOOK_UPDATE_REFERENCES(objspace) sampling_update_references(objspace)

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
#include "gc/default/default.c"
#undef rb_gc_impl_malloc
#undef rb_gc_impl_calloc
#undef rb_gc_impl_realloc
#undef rb_gc_impl_free
#undef rb_gc_impl_set_params
#undef rb_gc_impl_active_gc_name
#undef rb_gc_impl_init
#undef rb_gc_impl_ractor_cache_alloc
#undef rb_gc_impl_after_fork

STATIC_ASSERT(free_slot_layout, sizeof(struct free_slot) == sizeof(struct sample_point_slot) &&
              offsetof(struct free_slot, next) == offsetof(struct sample_point_slot, next));
STATIC_ASSERT(heap_count, HEAP_COUNT <= SAMPLER_MAX_HEAPS && HEAP_COUNT <= SAMPLING_RECENT_SLOTS);

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
    rb_objspace_t *objspace = objspace_ptr;
    if (!sampling_ractors && objspace->live_ractor_cache_count > 0) sampling_ractors = true;
    return rb_gc_impl_ractor_cache_alloc_default(objspace_ptr, ractor);
}

static void sampler_after_fork(rb_objspace_t *objspace);

void
rb_gc_impl_after_fork(void *objspace_ptr, rb_pid_t pid)
{
    rb_gc_impl_after_fork_default(objspace_ptr, pid);
    if (pid == 0) sampler_after_fork(objspace_ptr);
}

/* Called once the VM can run threads (ruby_gc_set_params, from
 * process_options): RUBY_GC_SAMPLING's every= starts its writer here. */
void
rb_gc_impl_set_params(void *objspace_ptr)
{
    rb_gc_impl_set_params_default(objspace_ptr);
    sampling_api_booted();
}

static void sampler_init(void);

void
rb_gc_impl_init(void)
{
    rb_gc_impl_init_default();
    sampler_init();
    sampling_api_init();
}

/* ---- the sampler's state ---- */

static struct {
    struct sampling_params params;
    struct sample_point_config config;
    struct sampling_records records;
    uint64_t epoch;                         /* bumped by every start and clear */
    struct sampling_frame *scratch;         /* params.depth + 1 frames, for capture */
    /* per heap, since start or clear */
    size_t base_allocated[HEAP_COUNT];      /* total_allocated_objects at start */
    size_t moved[HEAP_COUNT];               /* compaction moves (counted as allocations by default.c) */
    uint64_t moved_bytes;                   /* the same since boot, in slot bytes: the allocation clock's */
    size_t allocated_at_marks[HEAP_COUNT];  /* total_allocated_objects when marking ended */
    size_t stopped_allocated[HEAP_COUNT];   /* objects allocated while enabled, frozen at stop */
    uint64_t samples[HEAP_COUNT];
    uint64_t points[HEAP_COUNT];
    double poisson_weight[HEAP_COUNT];      /* sampling_weight of a slot, set at start */
    int readers;
    bool readers_disabled_gc;
    struct sampling_timeline timeline;      /* a row per GC, and the peak (timeline.h) */
} sampler;

static inline size_t slot_bytes(size_t heap_idx);

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
    /* slot sizes are BASE_SLOT_SIZE << i (heap_slot_size): one multiply */
    uint64_t slots = 0;
    for (size_t i = 0; i < HEAP_COUNT; i++) slots += (uint64_t)totals[i] << i;
    return slots * BASE_SLOT_SIZE - sampler.moved_bytes;
}

/* The clock from the heap counts alone (and the given cache's pending
 * counts, when there is one): no other cache is read, so it can be read
 * without the VM lock (malloc.c, on any thread). */
static inline uint64_t
clock_now(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache)
{
    /* clock_bytes's sum in Horner's form: a load, an add and a shift a
     * heap on the sample path (the compiler's vector form of the loop
     * took twice that) */
    uint64_t slots = 0;
    for (size_t i = HEAP_COUNT; i-- > 0;) {
        slots = 2 * slots + heaps[i].total_allocated_objects + (cache ? SAMPLING_CACHE_PENDING(cache, i) : 0);
    }
    return slots * BASE_SLOT_SIZE - sampler.moved_bytes;
}

static inline struct sampling_now
sampler_now(rb_objspace_t *objspace, size_t gc_count)
{
    return (struct sampling_now){ gc_count, clock_now(objspace, NULL) };
}

/* malloc'd bytes: the wrapped rb_gc_impl_malloc, _calloc, _realloc, _free */
#include "malloc.c"

static void
sampler_init(void)
{
    /* clock_bytes counts on it */
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        if (slot_bytes(i) != BASE_SLOT_SIZE << i) rb_bug("sampling: heap %zu's slot size is not BASE_SLOT_SIZE << %zu", i, i);
    }
    sampling_params_default(&sampler.params);
    sampling_records_init(&sampler.records, sampler.params.max_samples);
    malloc_init();
}

/* Objects allocated on each heap so far: the heap's total, plus on 4.0
 * what the caches counted and have not yet added to it (ruby_version.h).
 * Other Ractors' pending counts are read without their lock: with several
 * Ractors allocating the sum can be a few objects short, as the heap totals
 * themselves can (README, Limits). */
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

static inline sample_point_list *
cache_list(rb_ractor_newobj_cache_t *cache, size_t heap_idx)
{
    return (sample_point_list *)&cache->heap_caches[heap_idx].freelist;
}

static inline size_t
slot_bytes(size_t heap_idx)
{
    return heap_slot_size((unsigned char)heap_idx);
}

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

/* Records a sample of obj (allocated, not yet initialised: klass and flags
 * are what newobj_init will write). */
static void
sampling_record(rb_objspace_t *objspace, rb_ractor_newobj_cache_t *cache, VALUE obj, VALUE klass, VALUE flags,
                size_t heap_idx, uint64_t points)
{
    size_t size = slot_bytes(heap_idx);
    sampler.samples[heap_idx]++;
    sampler.points[heap_idx] += points;

    uint16_t type = (uint16_t)(flags & RUBY_T_MASK);
    /* this heap's last sites: the stack is often one of theirs */
    const void *ec;
    SAMPLING_PHASE_START(t0);
    struct sampling_capture capture = sampling_frames_capture(sampler.scratch, sampler.params.depth,
                                                              sampling_sites_recent(&sampler.records.sites, (uint8_t)heap_idx),
                                                              &ec);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CAPTURE, t0);
    SAMPLING_PHASE_START(t1);
    struct sampling_sample_in in;
    in.obj = obj;
    /* the class word of an imemo holds internal data, not a class */
    in.site.klass = type == T_IMEMO ? 0 : klass;
    in.site.frames = sampler.scratch;
    in.site.hash = capture.hash;
    in.site.nframes = capture.nframes;
    in.site.truncated = capture.truncated;
    in.site.kind.type = type;
    in.site.kind.imemo_type = type == T_IMEMO ? (uint8_t)((flags >> FL_USHIFT) & 0x0f) : 0; /* IMEMO_MASK, internal/imemo.h */
    in.site.kind.origin = capture.origin;
    in.site.labels = sampling_labels_current(ec);
    in.site.recent = (uint8_t)heap_idx;
    in.site.cfps = capture.cfps;
    in.site.site = NULL;
    const struct sampling_stack *same = capture.same;
    if (same) {
        /* a recent site's stack: that site, if the rest of the key is too */
        if (sampling_site_rest_equal(same, &in.site)) {
            in.site.site = (struct sampling_stack *)same;
            in.site.frames = same->frames;
        }
        else {
            memcpy(sampler.scratch, same->frames, same->nframes * sizeof(*same->frames));
        }
    }
    GC_ASSERT(in.site.hash == sampling_stack_hash(in.site.frames, in.site.nframes, in.site.truncated));
    in.sample.weight = sampler.config.mode == SAMPLING_MODE_FIXED ? (double)points * (double)sampler.config.interval
                                                                  : sampler.poisson_weight[heap_idx];
    in.sample.allocated_gc = objspace->profile.count;
    in.sample.allocated_bytes = clock_now(objspace, cache);
    in.sample.size = (uint32_t)size;
    in.sample.heap = (uint8_t)heap_idx;
    sampling_records_add(&sampler.records, &in);
    SAMPLING_PHASE_END(SAMPLING_PHASE_RECORD, t1);
}

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
    SAMPLING_COUNT_SAMPLED_SLOT(objspace, cache, heap_idx);
#if RGENGC_CHECK_MODE
    MEMZERO((char *)obj, char, heap_slot_size(heap_idx));
#endif

    sampling_record(objspace, cache, obj, klass, flags, heap_idx, points);
    SAMPLING_PHASE_END(SAMPLING_PHASE_TAKE, t0);
    SAMPLING_PHASE_START(t1);
    SAMPLING_PHASE_END(SAMPLING_PHASE_CLOCK, t1);
    return obj;
}


/* For sampled objects and for the references sites hold (classes, iseqs,
 * method entries: heap objects too): 0 unmarked, 1 marked, 2 marked old. */
static int
sampling_liveness(uintptr_t obj, void *data)
{
    rb_objspace_t *objspace = data;
    if (obj & 1) return 1;  /* a malloc'd block (malloc.c): its free ends it */
    if (!RVALUE_MARKED(objspace, (VALUE)obj)) return 0;
    return RVALUE_OLD_P(objspace, (VALUE)obj) ? 2 : 1;
}

/* With --enable-checks, every invariant of records.h after each change
 * the collector makes (O(records) a GC: checks only). */
static inline void
records_verify(const char *when)
{
#ifdef SAMPLING_CHECKS
    const char *err = sampling_records_verify(&sampler.records);
    if (err) rb_bug("sampling: records after %s: %s", when, err);
#endif
}


static struct sampling_names *
sampling_name_site(const struct sampling_stack *site, void *objspace)
{
    return sampling_names_of(site->frames, site->nframes, site->kind.origin, site->klass);
}

static void
sampling_marks_finished(void *objspace_ptr)
{
    rb_objspace_t *objspace = objspace_ptr;
    SAMPLING_PHASE_START(t0);
    malloc_drain(objspace->profile.count);
    allocated_totals(objspace, sampler.allocated_at_marks);
    struct sampling_now now = { objspace->profile.count, clock_bytes(sampler.allocated_at_marks) };
    if (sampler.records.nlive) {
        sampling_records_check_liveness(&sampler.records, sampling_liveness, objspace, now, is_full_marking(objspace));
    }
    /* the live estimate of this GC, and the peak: O(1) (timeline.h) */
    if (sampling_on) sampling_timeline_gc(&sampler.timeline, &sampler.records, now, is_full_marking(objspace));
    /* Classes and code that die now: their sites are named while they can
     * still be read (nothing is swept before this returns). */
    if (sampler.records.sites.refs.size) {
        sampling_records_check_refs(&sampler.records, sampling_liveness, sampling_name_site, objspace,
                                    is_full_marking(objspace));
    }
    records_verify("marking");
    SAMPLING_PHASE_END(SAMPLING_PHASE_MARKS, t0);
}

static void
sampling_mark_roots(void *objspace_ptr)
{
    malloc_mark_queue(objspace_ptr);
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
    rb_objspace_t *objspace = objspace_ptr;
    /* Each move bumped the destination heap's total_allocated_objects
     * (gc_compact_move); nothing else allocates during a GC.  (On 4.0 the
     * sweep start moved the caches' counts into the totals meanwhile:
     * allocated_totals counts both, so the sum moves by the moves alone.) */
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sampler.moved[i] += totals[i] - sampler.allocated_at_marks[i];
        sampler.moved_bytes += (uint64_t)(totals[i] - sampler.allocated_at_marks[i]) * slot_bytes(i);
        sampler.allocated_at_marks[i] = totals[i];
    }
    sampling_records_update_references(&sampler.records, sampling_location, objspace);
    records_verify("compaction");
}

/* ---- start, stop, clear (API side; VM lock and barrier held) ---- */

static void
cache_place_i(void *c, void *data)
{
    rb_ractor_newobj_cache_t *cache = c;
    cache_sync(cache);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sample_point_list *list = cache_list(cache, i);
        if (*list) sample_point_place(&cache->sample_points[i], list, sample_point_list_length(*list), slot_bytes(i));
    }
}

static void
cache_rejoin_i(void *c, void *data)
{
    rb_ractor_newobj_cache_t *cache = c;
    if (cache->sampling_epoch != sampler.epoch) return;
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sample_point_rejoin(&cache->sample_points[i], cache_list(cache, i), slot_bytes(i));
    }
}

/* Every counter in stats counts "since start or clear". */
static void
counters_reset(rb_objspace_t *objspace)
{
    sampler.records.dropped = 0;
    sampler.records.evicted = 0;
    size_t totals[HEAP_COUNT];
    allocated_totals(objspace, totals);
    for (size_t i = 0; i < HEAP_COUNT; i++) {
        sampler.base_allocated[i] = totals[i];
        sampler.allocated_at_marks[i] = totals[i];
        sampler.moved[i] = 0;
        sampler.stopped_allocated[i] = 0;
        sampler.samples[i] = 0;
        sampler.points[i] = 0;
    }
    malloc_counters_reset();
}

/* Objects allocated on each heap while enabled. */
static void
heaps_allocated_objects(rb_objspace_t *objspace, size_t out[HEAP_COUNT])
{
    if (!sampling_on) {
        memcpy(out, sampler.stopped_allocated, sizeof(sampler.stopped_allocated));
        return;
    }
    allocated_totals(objspace, out);
    for (size_t i = 0; i < HEAP_COUNT; i++) out[i] -= sampler.base_allocated[i] + sampler.moved[i];
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
    heaps_allocated_objects(objspace, sampler.stopped_allocated);
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
    sampling_records_forget_peak(&sampler.records);
    sampling_records_after_fork(&sampler.records);
    sampling_timeline_clear(&sampler.timeline);
    if (sampling_on) {
        end_counting(objspace);
        begin_counting(objspace);
    }
    else {
        counters_reset(objspace);
    }
}

static uint64_t
random_seed(void)
{
    uint64_t seed = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)&seed;
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) == 0) seed ^= (uint64_t)ts.tv_nsec * UINT64_C(0x9e3779b97f4a7c15);
    return seed;
}

void
sampler_start(const struct sampling_params *params)
{
    rb_objspace_t *objspace = rb_gc_get_objspace();
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
            sampler.poisson_weight[i] = sampling_weight(SAMPLING_MODE_POISSON, params->interval, slot_bytes(i), 1);
        }
        sampling_records_set_max(&sampler.records, params->max_samples);
        sampling_records_reserve(&sampler.records);    /* else the tables grow as they fill */
        begin_counting(objspace);
    }
    RB_GC_VM_UNLOCK(lev);
}

bool
sampler_stop(void)
{
    rb_objspace_t *objspace = rb_gc_get_objspace();
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
    rb_objspace_t *objspace = rb_gc_get_objspace();
    unsigned int lev = RB_GC_VM_LOCK();
    rb_gc_vm_barrier();
    {
        malloc_drain(objspace->profile.count);  /* (see sampler_start) */
        sampling_records_clear(&sampler.records);
        sampling_timeline_clear(&sampler.timeline);
        if (sampling_on) {
            sampling_records_reserve(&sampler.records);
            end_counting(objspace);
            begin_counting(objspace);
        }
        else {
            counters_reset(objspace);
        }
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
    rb_objspace_t *objspace = rb_gc_get_objspace();
    unsigned int lev = RB_GC_VM_LOCK();
    {
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
            h->samples = sampler.samples[i];
            h->points = sampler.points[i];
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
    }
    RB_GC_VM_UNLOCK(lev);
}

const struct sampling_timeline *
sampler_timeline(void)
{
    return &sampler.timeline;
}

uint64_t
sampler_clock(void)
{
    rb_objspace_t *objspace = rb_gc_get_objspace();
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
    malloc_drain(rb_gc_count());
    sampler.records.reading++;
    if (sampler.readers++ == 0) {
        /* finishes any GC in progress, then keeps GC off while reading */
        sampler.readers_disabled_gc = !RTEST(rb_gc_disable());
    }
    return sampler.records.next_seq;
}

void
sampler_read_end(unsigned int lev)
{
    sampler.records.reading--;
    if (--sampler.readers == 0 && sampler.readers_disabled_gc) rb_gc_enable();
    RB_GC_VM_UNLOCK(lev);
}

void
sampler_quiet(bool on)
{
    unsigned int lev = RB_GC_VM_LOCK();
    if (on) sampler.records.reading++;
    else sampler.records.reading--;
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
    rb_objspace_t *objspace = rb_gc_get_objspace();
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
#include "retention_walk.c"
