/*
 * malloc.c: sampling the bytes of rb_gc_impl_malloc, _calloc and _realloc
 * (issue 15; docs/malloc-sampling.md).  Included by sampling.c after
 * gc/default/default.c, whose four entry points it wraps (renamed to
 * *_default before that include): no patch is needed.
 *
 * Model.  Each thread's malloc'd bytes are a stream marked by sample
 * points, as a heap's slot bytes are (gap.h): malloc and calloc put `size`
 * bytes on the stream, realloc its growth (new_size - old_size when
 * positive).  The allocation holding a point is sampled: its block comes
 * from a private arena (below) and gets a record, with the stack, the size
 * that went through the stream and the weight gap.h gives.  fixed mode:
 * per thread, points == floor(bytes / interval) exactly.
 *
 * The paths, numbered as they run:
 *
 *   1. every malloc/calloc/realloc: a compare and a subtract on the
 *      thread's countdown (initial-exec TLS: %fs-relative, no call), then
 *      the default GC's own function.  A new thread's countdown is 0, so
 *      its first allocation takes the slow path, which sets it up.
 *   2. slow path (malloc_count): a point, or a start/stop/clear since the
 *      thread last looked (malloc_epoch), or the sampler is off (then the
 *      countdown is set to MALLOC_OFF_RECHECK: a look every 64 KiB).
 *   3. a sample: the block comes from the arena, accounted to the GC's
 *      malloc counters as default.c would (so malloc_limit triggers GC as
 *      before), then recorded (malloc_record).
 *   4. every free/realloc: "is it in the arena?" is a subtract and a
 *      compare of the pointer against the arena's range; only a sampled
 *      block answers yes, and its header says which record ends.
 *
 * Knowing a block was sampled.  Sampled blocks live in one reserved range
 * of address space (mmap PROT_NONE, committed as it fills), so free asks
 * `ptr - arena_base < arena_size`: two loads, a subtract, a compare, a
 * branch, and no table is read for the blocks that were not sampled.  A
 * filter in front of a hash table would cost a hash and a load on every
 * free, and its false positives a probe.  The arena is a power-of-two
 * size-class allocator with a 32-byte header per block; it serves one
 * block per interval, so its speed hardly matters.  The word before the
 * block reads as a glibc mmapped chunk of the block's size, so a
 * malloc_usable_size() of it (gc.c does that on some xmalloc'd memory)
 * answers instead of crashing.  Plain free() of a sampled block crashes:
 * a program that does that with xmalloc'd memory is already wrong.
 *
 * Threads.  xmalloc and xfree run with or without the GVL, from any
 * thread.  malloc_lock (a mutex: taken only for sampled blocks) guards the
 * arena and the event queue.  The records (records.h) belong to the GVL
 * and the VM lock: a thread touches them only when it holds the GVL, no
 * second Ractor was made and no read is on (malloc_inline_ok); else it
 * queues what happened (a sample, with its stack copied if it could walk
 * its own stack, else the synthetic frame `<no GVL>`; or the end of a
 * record) and the next holder applies the queue in order, under both
 * locks (malloc_drain: the next sample or free inline, the end of every
 * marking, every read and stats).  Lock order: GVL / VM lock, then
 * malloc_lock; never the other way.  A full queue drops the sample
 * (counted) or leaves a record live (counted as lost frees).
 *
 * Liveness is exact: a record lives until its block is freed or
 * reallocated.  In the records' live list a block is its header's address
 * with the low bit set, which no object has: the end-of-marking check
 * calls it live, compaction leaves it alone, and Sample#object is nil.
 */
#include <pthread.h>
#include <sys/mman.h>

/* ---- the thread's countdown ---- */

#define MALLOC_OFF_RECHECK ((uint64_t)64 << 10)

struct malloc_thread {
    uint64_t countdown;     /* bytes before the next point: an allocation of >= countdown bytes holds it */
    uint64_t set;           /* the countdown when last set: set - countdown bytes went by since */
    uint64_t epoch;         /* malloc_epoch when set */
    struct sampling_rng rng;
    bool busy;              /* recording: an allocation meanwhile is not sampled */
};
static __thread struct malloc_thread malloc_tls __attribute__((tls_model("initial-exec")));

static struct {
    bool on;
    enum sampling_mode mode;
    uint64_t interval;
    uint64_t seed;
    uint64_t threads;       /* threads seeded since start: each gets its own generator */
    uint64_t bytes, samples, points;    /* since start or clear (atomics: any thread) */
    uint64_t dropped, lost_frees;       /* (atomics) */
} malloc_state;
static uint64_t malloc_epoch = 1;   /* bumped by start, stop, clear, fork */

static void
malloc_thread_reset(struct malloc_thread *t)
{
    t->epoch = __atomic_load_n(&malloc_epoch, __ATOMIC_ACQUIRE);
    if (!malloc_state.on) {
        t->countdown = t->set = MALLOC_OFF_RECHECK;
        return;
    }
    uint64_t n = __atomic_fetch_add(&malloc_state.threads, 1, __ATOMIC_RELAXED);
    sampling_rng_seed(&t->rng, malloc_state.seed + n * UINT64_C(0x9e3779b97f4a7c15));
    t->countdown = t->set = (uint64_t)sampling_gap_next(&t->rng, malloc_state.mode, malloc_state.interval);
}

/* The slow path of the countdown: `bytes` go on the stream and hold the
 * next point (bytes >= countdown), or the thread must look again.
 * Returns the points they hold (0: not a sample). */
static NOINLINE(uint64_t malloc_count(struct malloc_thread *t, uint64_t bytes));
static uint64_t
malloc_count(struct malloc_thread *t, uint64_t bytes)
{
    if (t->epoch != __atomic_load_n(&malloc_epoch, __ATOMIC_ACQUIRE)) {
        /* a start, stop or clear since this thread last looked: the bytes
         * it allocated meanwhile are not counted (README, Limits) */
        malloc_thread_reset(t);
        if (bytes < t->countdown) {
            t->countdown -= bytes;
            return 0;
        }
    }
    if (!malloc_state.on) {
        t->countdown = t->set = MALLOC_OFF_RECHECK;
        return 0;
    }
    /* the points lie at countdown, then a gap further each (1-based
     * positions in this allocation's bytes) */
    uint64_t before = t->set - t->countdown;
    uint64_t next = t->countdown, points;
    if (malloc_state.mode == SAMPLING_MODE_FIXED) {
        points = 1 + (bytes - next) / malloc_state.interval;
        next += points * malloc_state.interval;
    }
    else {
        for (points = 0; next <= bytes; points++) next += (uint64_t)sampling_gap_next(&t->rng, SAMPLING_MODE_POISSON, malloc_state.interval);
    }
    t->countdown = t->set = next - bytes;
    __atomic_fetch_add(&malloc_state.bytes, before + bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&malloc_state.points, points, __ATOMIC_RELAXED);
    __atomic_fetch_add(&malloc_state.samples, 1, __ATOMIC_RELAXED);
    return points;
}

/* The fast path: the points `bytes` hold, usually none. */
static inline uint64_t
malloc_take(uint64_t bytes)
{
    struct malloc_thread *t = &malloc_tls;
    if (RB_LIKELY(bytes < t->countdown)) {
        t->countdown -= bytes;
        return 0;
    }
    return malloc_count(t, bytes);
}

/* ---- the arena of sampled blocks ---- */

struct arena_block {
    union {
        uint64_t seq;                   /* the record's sample, while in use */
        struct arena_block *next_free;  /* while free */
    };
    uint32_t record;        /* record index; SAMPLING_NONE: none (dropped, or still queued) */
    uint32_t event;         /* queued: its event's index + 1; 0: not queued */
    uint64_t size;          /* bytes asked for */
    uint64_t glibc_size;    /* what malloc_usable_size() reads: an mmapped chunk of the size rounded to 16 */
};
STATIC_ASSERT(arena_block_header, sizeof(struct arena_block) == 32);

#define ARENA_MIN_CLASS 6           /* 64-byte blocks (header included) */
#define ARENA_CLASSES 48
#define ARENA_COMMIT_STEP ((size_t)2 << 20)
#define ARENA_RELEASE_MIN ((size_t)64 << 10)   /* free blocks this big give their pages back */

static struct {
    uintptr_t base;         /* read without the lock by every free (set once, before size) */
    size_t size;
    size_t used, committed;
    bool tried;
    struct arena_block *free[ARENA_CLASSES];
} arena;

static pthread_mutex_t malloc_lock = PTHREAD_MUTEX_INITIALIZER;

static inline bool
arena_p(const void *ptr)
{
    return (uintptr_t)ptr - arena.base < __atomic_load_n(&arena.size, __ATOMIC_RELAXED);
}

static inline struct arena_block *
arena_header(void *ptr)
{
    return (struct arena_block *)ptr - 1;
}

static unsigned
arena_class(uint64_t size)
{
    uint64_t total = size + sizeof(struct arena_block);
    unsigned cls = total <= ((uint64_t)1 << ARENA_MIN_CLASS) ? ARENA_MIN_CLASS : 64 - (unsigned)__builtin_clzll(total - 1);
    return cls;
}

/* Reserves the range the first time (as large as the system allows). */
static bool
arena_reserve(void)
{
    if (arena.tried) return arena.size != 0;
    arena.tried = true;
    for (unsigned shift = 36; shift >= 27; shift--) {
        size_t size = (size_t)1 << shift;
        void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) continue;
        arena.base = (uintptr_t)p;
        __atomic_store_n(&arena.size, size, __ATOMIC_RELEASE);
        return true;
    }
    return false;
}

/* A block for `size` bytes, or NULL (no arena, full, too big).  Under malloc_lock. */
static struct arena_block *
arena_alloc(uint64_t size)
{
    if (size > ((uint64_t)1 << (ARENA_CLASSES - 1)) - sizeof(struct arena_block) || !arena_reserve()) return NULL;
    unsigned cls = arena_class(size);
    struct arena_block *b = arena.free[cls];
    if (b) {
        arena.free[cls] = b->next_free;
    }
    else {
        size_t cap = (size_t)1 << cls;
        if (cap > arena.size - arena.used) return NULL;
        size_t end = arena.used + cap;
        if (end > arena.committed) {
            size_t to = (end + ARENA_COMMIT_STEP - 1) & ~(ARENA_COMMIT_STEP - 1);
            if (to > arena.size) to = arena.size;
            if (mprotect((char *)arena.base + arena.committed, to - arena.committed, PROT_READ | PROT_WRITE)) return NULL;
            arena.committed = to;
        }
        b = (struct arena_block *)(arena.base + arena.used);
        arena.used = end;
    }
    b->seq = 0;
    b->record = SAMPLING_NONE;
    b->event = 0;
    b->size = size;
    b->glibc_size = (((size + 15) & ~(uint64_t)15) + 16) | 2;  /* IS_MMAPPED */
    return b;
}

/* Under malloc_lock. */
static void
arena_release(struct arena_block *b)
{
    unsigned cls = arena_class(b->size);
    size_t cap = (size_t)1 << cls;
    if (cap >= ARENA_RELEASE_MIN) {
        /* the pages past the header go back to the system (they read as zeros) */
        uintptr_t from = ((uintptr_t)(b + 1) + 4095) & ~(uintptr_t)4095;
        uintptr_t to = (uintptr_t)b + cap;
        if (to > from) madvise((void *)from, to - from, MADV_DONTNEED);
    }
    b->next_free = arena.free[cls];
    arena.free[cls] = b;
}

/* ---- events: what a thread that may not touch the records queues ---- */

enum malloc_event_op { MALLOC_EVENT_SAMPLE, MALLOC_EVENT_END };

struct malloc_event {
    enum malloc_event_op op;
    struct arena_block *block;          /* SAMPLE: its block (NULL once freed: recorded dead) */
    uint32_t record;                    /* END: the record and its sample */
    uint64_t seq;
    struct sampling_sample sample;      /* SAMPLE */
    struct sampling_frame *frames;      /* SAMPLE: malloc'd copy, or NULL */
    struct sampling_capture capture;
};

#define MALLOC_EVENTS 4096
static struct malloc_event malloc_events[MALLOC_EVENTS];
static size_t malloc_nevents;

/* Whether a thread holding the GVL may touch the records now: one Ractor
 * (the GVL serialises, as for slot samples) and no read on. */
static inline bool
malloc_inline_ok(void)
{
    return !sampling_ractors && !sampler.records.reading;
}

/* Records a sample (under malloc_lock, by the records' owner). */
static void
malloc_apply_sample(struct arena_block *block, const struct sampling_sample *sample, const struct sampling_frame *frames,
                    struct sampling_capture capture, size_t gc_count)
{
    struct sampling_sample_in in;
    in.obj = (uintptr_t)(block ? (void *)block : (void *)&in) | 1;
    in.site.klass = 0;
    in.site.frames = frames;
    in.site.hash = capture.hash;
    in.site.nframes = capture.nframes;
    in.site.truncated = capture.truncated;
    in.site.kind.word = 0;
    in.site.kind.type = SAMPLING_TYPE_MALLOC;
    in.site.kind.origin = capture.origin;
    in.sample = *sample;
    uint32_t index = sampling_records_add(&sampler.records, &in);
    uint64_t seq = index == SAMPLING_NONE ? 0 : sampler.records.items[index].seq;
    if (!block) {
        /* freed before it was recorded: counted, and dead at once */
        if (index != SAMPLING_NONE) sampling_records_end(&sampler.records, index, seq, gc_count);
        return;
    }
    block->record = index;
    block->seq = seq;
    block->event = 0;
}

/* Applies the queue in order (under malloc_lock, by the records' owner). */
static void
malloc_drain_locked(size_t gc_count)
{
    for (size_t i = 0; i < malloc_nevents; i++) {
        struct malloc_event *e = &malloc_events[i];
        if (e->op == MALLOC_EVENT_SAMPLE) {
            malloc_apply_sample(e->block, &e->sample, e->frames, e->capture, gc_count);
            free(e->frames);
        }
        else {
            sampling_records_end(&sampler.records, e->record, e->seq, gc_count);
        }
    }
    malloc_nevents = 0;
}

/* For the records' owner (GVL or VM lock, no read on): the queue, applied. */
static void
malloc_drain(size_t gc_count)
{
    if (!__atomic_load_n(&malloc_nevents, __ATOMIC_RELAXED) || sampler.records.reading) return;
    pthread_mutex_lock(&malloc_lock);
    malloc_drain_locked(gc_count);
    pthread_mutex_unlock(&malloc_lock);
}

/* Under malloc_lock: false when the queue is full. */
static bool
malloc_queue(const struct malloc_event *e)
{
    if (malloc_nevents == MALLOC_EVENTS) return false;
    malloc_events[malloc_nevents++] = *e;
    return true;
}

/* Step 3's record: block was sampled for `size` bytes holding `points`. */
static void
malloc_record(rb_objspace_t *objspace, struct arena_block *block, uint64_t size, uint64_t points)
{
    struct malloc_thread *t = &malloc_tls;
    struct malloc_event e = { MALLOC_EVENT_SAMPLE };
    e.block = block;
    e.sample.weight = sampling_weight(malloc_state.mode, malloc_state.interval, (size_t)size, points);
    e.sample.allocated_gc = objspace->profile.count;
    e.sample.size = size > UINT32_MAX ? UINT32_MAX : (uint32_t)size;
    e.sample.heap = UINT8_MAX;
    e.capture = (struct sampling_capture){ sampling_hash_end(SAMPLING_HASH_START, 0, false), 0, false,
                                           SAMPLING_ORIGIN_NO_GVL };
    bool gvl = ruby_thread_has_gvl_p() && !t->busy;
    bool now = gvl && malloc_inline_ok();
    t->busy = true;
    if (now) {
        e.capture = sampling_frames_capture(sampler.scratch, sampler.params.depth);
        e.frames = sampler.scratch;
    }
    else if (gvl) {
        /* its own stack, walked into a buffer of its own: the scratch
         * buffer belongs to the records' owner */
        e.frames = malloc((sampler.params.depth + 1) * sizeof(*e.frames));
        if (e.frames) e.capture = sampling_frames_capture(e.frames, sampler.params.depth);
    }
    pthread_mutex_lock(&malloc_lock);
    if (now) {
        malloc_drain_locked(objspace->profile.count);
        malloc_apply_sample(block, &e.sample, e.frames, e.capture, objspace->profile.count);
    }
    else if (malloc_queue(&e)) {
        block->event = (uint32_t)malloc_nevents;
    }
    else {
        free(e.frames);
        __atomic_fetch_add(&malloc_state.dropped, 1, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&malloc_lock);
    t->busy = false;
}

/* ---- the wrapped entry points ---- */

/* A sampled block for size bytes, accounted as default.c accounts a
 * malloc (which may start a GC); NULL when the arena cannot give one. */
static void *
malloc_sampled_alloc(rb_objspace_t *objspace, uint64_t size, bool zero SAMPLING_GC_ALLOWED_PARAM)
{
    pthread_mutex_lock(&malloc_lock);
    struct arena_block *b = arena_alloc(size ? size : 1);
    pthread_mutex_unlock(&malloc_lock);
    if (!b) {
        __atomic_fetch_add(&malloc_state.dropped, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    void *mem = b + 1;
    if (zero) memset(mem, 0, b->size);
    objspace_malloc_increase(objspace, mem, b->size, 0, MEMOP_TYPE_MALLOC SAMPLING_GC_ALLOWED_ARG) {}
    return mem;
}

/* Frees a sampled block: its record ends (step 4). */
static void
malloc_free_sampled(rb_objspace_t *objspace, void *ptr)
{
    struct arena_block *b = arena_header(ptr);
    objspace_malloc_increase(objspace, ptr, 0, b->size, MEMOP_TYPE_FREE SAMPLING_GC_ALLOWED_TRUE) {
        bool now = !malloc_tls.busy && ruby_thread_has_gvl_p() && malloc_inline_ok();
        pthread_mutex_lock(&malloc_lock);
        if (b->event) {
            malloc_events[b->event - 1].block = NULL;   /* still queued: recorded dead */
        }
        else if (b->record != SAMPLING_NONE) {
            if (now) {
                sampling_records_end(&sampler.records, b->record, b->seq, objspace->profile.count);
            }
            else {
                struct malloc_event e = { MALLOC_EVENT_END };
                e.record = b->record;
                e.seq = b->seq;
                if (!malloc_queue(&e)) __atomic_fetch_add(&malloc_state.lost_frees, 1, __ATOMIC_RELAXED);
            }
        }
        arena_release(b);
        pthread_mutex_unlock(&malloc_lock);
    }
}

static NOINLINE(void *malloc_sample_alloc(rb_objspace_t *objspace, size_t size, bool zero, uint64_t points SAMPLING_GC_ALLOWED_PARAM));
static void *
malloc_sample_alloc(rb_objspace_t *objspace, size_t size, bool zero, uint64_t points SAMPLING_GC_ALLOWED_PARAM)
{
    if (!zero) check_malloc_not_in_gc(objspace, "malloc");
    void *mem = malloc_sampled_alloc(objspace, size, zero SAMPLING_GC_ALLOWED_ARG);
    if (!mem) {
        return zero ? rb_gc_impl_calloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG)
                    : rb_gc_impl_malloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG);
    }
    malloc_record(objspace, arena_header(mem), size, points);
    return mem;
}

void *
rb_gc_impl_malloc(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM)
{
    uint64_t points = malloc_take(size);
    if (RB_LIKELY(!points)) return rb_gc_impl_malloc_default(objspace_ptr, size SAMPLING_GC_ALLOWED_ARG);
    return malloc_sample_alloc(objspace_ptr, size, false, points SAMPLING_GC_ALLOWED_ARG);
}

void *
rb_gc_impl_calloc(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM)
{
    uint64_t points = malloc_take(size);
    if (RB_LIKELY(!points)) return rb_gc_impl_calloc_default(objspace_ptr, size SAMPLING_GC_ALLOWED_ARG);
    return malloc_sample_alloc(objspace_ptr, size, true, points SAMPLING_GC_ALLOWED_ARG);
}

void
rb_gc_impl_free(void *objspace_ptr, void *ptr, size_t old_size)
{
    if (RB_UNLIKELY(arena_p(ptr))) {
        malloc_free_sampled(objspace_ptr, ptr);
        return;
    }
    rb_gc_impl_free_default(objspace_ptr, ptr, old_size);
}

/* A realloc whose growth holds a point, or of a sampled block: a new
 * block (sampled or not), the bytes copied, the old one freed (its sample,
 * if any, ends). */
static NOINLINE(void *malloc_realloc_move(rb_objspace_t *objspace, void *ptr, size_t new_size, size_t old_size,
                                          uint64_t growth, uint64_t points SAMPLING_GC_ALLOWED_PARAM));
static void *
malloc_realloc_move(rb_objspace_t *objspace, void *ptr, size_t new_size, size_t old_size, uint64_t growth,
                    uint64_t points SAMPLING_GC_ALLOWED_PARAM)
{
    bool sampled_old = arena_p(ptr);
    if (sampled_old) old_size = arena_header(ptr)->size;
    if (!new_size) new_size = 1;
    void *mem = points ? malloc_sampled_alloc(objspace, new_size, false SAMPLING_GC_ALLOWED_ARG) : NULL;
    if (!mem) {
        if (!sampled_old) return rb_gc_impl_realloc_default(objspace, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
        mem = rb_gc_impl_malloc_default(objspace, new_size SAMPLING_GC_ALLOWED_ARG);
        if (!mem) return NULL;
        points = 0;
    }
    memcpy(mem, ptr, old_size < new_size ? old_size : new_size);
    if (sampled_old) malloc_free_sampled(objspace, ptr);
    else rb_gc_impl_free_default(objspace, ptr, old_size);
    if (points) malloc_record(objspace, arena_header(mem), growth, points);
    return mem;
}

void *
rb_gc_impl_realloc(void *objspace_ptr, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM)
{
    if (!ptr) return rb_gc_impl_malloc(objspace_ptr, new_size SAMPLING_GC_ALLOWED_ARG);
    bool sampled_old = arena_p(ptr);
    if (RB_UNLIKELY(sampled_old)) old_size = arena_header(ptr)->size;
#ifdef HAVE_MALLOC_USABLE_SIZE
    else if (RB_UNLIKELY(!old_size)) old_size = malloc_usable_size(ptr);
#endif
    uint64_t growth = new_size > old_size ? new_size - old_size : 0;
    uint64_t points = malloc_take(growth);
    if (RB_LIKELY(!points && !sampled_old)) {
        return rb_gc_impl_realloc_default(objspace_ptr, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
    }
    return malloc_realloc_move(objspace_ptr, ptr, new_size, old_size, growth, points SAMPLING_GC_ALLOWED_ARG);
}

/* ---- the sampler's side (API: VM lock and barrier held) ---- */

static void
malloc_counters_reset(void)
{
    malloc_state.bytes = malloc_state.samples = malloc_state.points = 0;
    malloc_state.dropped = malloc_state.lost_frees = 0;
    malloc_state.threads = 0;
    __atomic_fetch_add(&malloc_epoch, 1, __ATOMIC_RELEASE);
    malloc_thread_reset(&malloc_tls);   /* the calling thread counts from now, exactly */
}

/* The settings of a start (begin_counting turns it on). */
static void
malloc_start(const struct sampling_params *params, uint64_t seed)
{
    malloc_state.mode = params->mode;
    malloc_state.interval = params->interval;
    malloc_state.seed = seed ^ UINT64_C(0x6d616c6c6f63);    /* "malloc": not the slot points' sequence */
}

static void
malloc_stop(void)
{
    malloc_state.on = false;
    __atomic_fetch_add(&malloc_epoch, 1, __ATOMIC_RELEASE);
    malloc_thread_reset(&malloc_tls);
}

/* stats: the calling thread's bytes since its last point count too;
 * other threads' are counted at their next point (README, Limits). */
static void
malloc_get_stats(struct sampler_stats *stats)
{
    struct malloc_thread *t = &malloc_tls;
    stats->malloc = malloc_state.on;
    stats->malloc_allocated_bytes = malloc_state.bytes + (malloc_state.on && t->epoch == malloc_epoch ? t->set - t->countdown : 0);
    stats->malloc_samples = malloc_state.samples;
    stats->malloc_points = malloc_state.points;
    stats->dropped += malloc_state.dropped + malloc_state.lost_frees;
}

/* The lock is held across fork, so a child never inherits it taken. */
static void malloc_lock_take(void) { pthread_mutex_lock(&malloc_lock); }
static void malloc_lock_give(void) { pthread_mutex_unlock(&malloc_lock); }

static void
malloc_init(void)
{
    pthread_atfork(malloc_lock_take, malloc_lock_give, malloc_lock_give);
}
