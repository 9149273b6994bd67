/*
 * malloc.c: sampling the bytes of rb_gc_impl_malloc, _calloc and _realloc
 * (issue 15; docs/malloc-sampling.md).  Included by sampling.c after
 * gc/default/default.c, whose four entry points it wraps (renamed to
 * *_default before that include): no patch is needed.  (Over 450 lines:
 * the four paths below share malloc_lock, the thread's countdown and the
 * filter, a static here so that a free reads it with one load
 * (HACKING.md); the table and filter themselves are blocks.c's, and the
 * rest would be split only by exposing those statics to a second file.)
 *
 * Model.  Each thread's malloc'd bytes are a stream marked by sample
 * points, as a heap's slot bytes are (gap.h): malloc and calloc put `size`
 * bytes on the stream, realloc its growth (new_size - old_size when
 * positive).  The allocation holding a point is sampled: its block is
 * entered in a table of sampled blocks and gets a record, with the stack,
 * the bytes that went through the stream (the growth, for a realloc) and
 * the weight gap.h gives.  fixed mode: per thread, points ==
 * floor(bytes / interval) exactly.
 *
 * The paths, numbered as they run:
 *
 *   1. every malloc/calloc/realloc: a compare and a subtract on the
 *      thread's countdown (initial-exec TLS: %fs-relative, no call), then
 *      the default GC's own function (which does the GC's accounting).  A
 *      new thread's countdown is 0, so its first allocation takes the slow
 *      path, which sets it up.
 *   2. slow path (malloc_count): a point, or a start/stop/clear since the
 *      thread last looked (malloc_epoch), or the sampler is off (then the
 *      countdown is set to MALLOC_OFF_RECHECK: a look every MiB).
 *   3. a sample: the block (from glibc, like any other) is entered in the
 *      table (blocks.h) and recorded (malloc_record).
 *   4. every free/realloc: one byte of a 64 KiB filter, indexed by the
 *      pointer's bits, says whether a sampled block could have this
 *      address: a shift, a mask, a load, a test, a branch.  Only then is
 *      the table asked (under malloc_lock), and the block's record ends.
 *
 * Why a filter and a table, not a private arena.  An arena for sampled
 * blocks (one reserved range, so free asks `ptr - base < size`) costs
 * about as little on free, but a sampled block would then not be glibc's,
 * and CRuby itself frees some xmalloc'd memory with plain free() (3.4.5's
 * vm_eval.c hands xmalloc'd local names to prism, which frees them with
 * free()): glibc aborts on such a block.  With glibc's blocks, plain
 * free() works; its only cost is that the table keeps the entry until a
 * block at that address is freed or sampled again, which ends the record
 * then (docs/malloc-sampling.md#limits).  The filter's bytes count the
 * sampled blocks that map to them (saturating at 255); with the default
 * interval a few hundred live samples set a few hundred of 65,536 bytes,
 * so an unsampled free almost never reaches the lock.
 *
 * Threads.  xmalloc and xfree run with or without the GVL, from any
 * thread.  malloc_lock (a mutex: taken only for sampled blocks and the
 * filter's false positives) guards the table and the event queue.  The
 * records (records.h) belong to the GVL and the VM lock: a thread touches
 * them only when it holds the GVL, no second Ractor was made and no read
 * is on (malloc_inline_ok); else it queues what happened (a sample, with
 * its stack copied if it holds the GVL and could walk its own stack, else
 * the synthetic frame `<no GVL>`; or the end of a record) and the next
 * owner applies the queue in order, under both locks (malloc_drain: the
 * next sample inline, the end of every marking, every read and stats).
 * Lock order: GVL / VM lock, then malloc_lock; never the other way.  A
 * full queue drops the sample (counted) or leaves a record live (counted
 * as a lost free; both in stats[:dropped]).
 *
 * Liveness is exact: a record lives until its block is freed or
 * reallocated.  In the records' live list a block is its address with
 * the low bit set, which no object has: compaction leaves it alone, and
 * Sample#object is nil; the blocks sit apart at the list's front, where
 * no end-of-marking check walks (records.h).
 *
 * From its host.  Included, this file uses what sampling.c defines
 * before the include, which no header declares:
 *   sampler                  .records (applying samples and ends; its
 *                            .reading, .sites), .params.depth and
 *                            .scratch (a capture's frames)
 *   sampling_ractors         a second Ractor exists (malloc_inline_ok)
 *   sampler_objspace         the objspace whose clock and GC count a
 *                            record takes (4.1: the main Ractor's)
 *   clock_now, sampler_now   the allocation clock: a sample's
 *                            allocated_bytes, a record's end
 *   sampler_reading_here,    a reader's own block: counted, not recorded
 *   sampler_reader_samples
 *   rb_gc_impl_*_default     default.c's four entry points, renamed
 * and from default.c: rb_objspace_t (profile.count), during_gc,
 * gc_mark_and_pin, HEAP_COUNT.
 */
#include <pthread.h>
#include "blocks.h"
#include "probe.h"

/* ---- the thread's countdown ---- */

#define MALLOC_OFF_RECHECK ((uint64_t)1 << 20)

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
    uint64_t merged;                    /* samples of a sampled block's growth, merged into its record (malloc_lock) */
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
    sampling_rng_seed(&t->rng, malloc_state.seed + n * PROBE_GOLDEN);
    t->countdown = t->set = (uint64_t)sampling_gap_next(&t->rng, malloc_state.mode, malloc_state.interval);
}

/* The slow path of the countdown: `bytes` (allocated: a failed
 * allocation is never counted) go on the stream and may hold the next
 * point, or the thread must look again.  Returns the points they hold
 * (0: not a sample).  (Allocations made meanwhile by the same thread, in
 * a GC the allocation ran, may have moved the point: any bytes < the
 * countdown hold none.) */
static NOINLINE(uint64_t malloc_count(struct malloc_thread *t, uint64_t bytes));
static uint64_t
malloc_count(struct malloc_thread *t, uint64_t bytes)
{
    if (t->epoch != __atomic_load_n(&malloc_epoch, __ATOMIC_ACQUIRE)) {
        /* a start, stop or clear since this thread last looked: the bytes
         * it allocated meanwhile are not counted
         * (docs/malloc-sampling.md#limits) */
        malloc_thread_reset(t);
    }
    if (!malloc_state.on) {
        t->countdown = t->set = MALLOC_OFF_RECHECK;
        return 0;
    }
    if (bytes < t->countdown) {
        t->countdown -= bytes;
        return 0;
    }
    /* the first point lies at byte `countdown` of these (1-based); the
     * rest of them, bytes - countdown, hold the others (gap.h) */
    uint64_t before = t->set - t->countdown;
    uint64_t span = bytes - t->countdown, points, next;
    if (malloc_state.mode == SAMPLING_MODE_FIXED) {
        points = 1 + span / malloc_state.interval;
        next = malloc_state.interval - span % malloc_state.interval;
    }
    else {
        points = 1 + sampling_poisson_points(&t->rng, malloc_state.interval, span, &next);
    }
    t->countdown = t->set = next;
    __atomic_fetch_add(&malloc_state.bytes, before + bytes, __ATOMIC_RELAXED);
    __atomic_fetch_add(&malloc_state.points, points, __ATOMIC_RELAXED);
    __atomic_fetch_add(&malloc_state.samples, 1, __ATOMIC_RELAXED);
    return points;
}

/* ---- the table of sampled blocks, and its filter (blocks.h) ---- */

/* The table and its filter: static here, so that the filter byte every
 * free reads is one load from this library's own data. */
static struct sampling_blocks malloc_blocks;

static inline bool
malloc_maybe_sampled(const void *ptr)
{
    return sampling_blocks_maybe(&malloc_blocks, ptr);
}

static pthread_mutex_t malloc_lock = PTHREAD_MUTEX_INITIALIZER;

/* The block of ptr, or NULL.  Under malloc_lock. */
static struct sampling_block *
malloc_block_find(const void *ptr)
{
    return sampling_blocks_find(&malloc_blocks, ptr);
}

/* A new entry for ptr (none may exist), with no record yet, or NULL
 * without memory.  Under malloc_lock. */
static struct sampling_block *
malloc_block_add(const void *ptr)
{
    struct sampling_block *b = sampling_blocks_add(&malloc_blocks, ptr);
    if (b) b->record = SAMPLING_NONE;
    return b;
}

/* ---- events: what a thread that may not touch the records queues ---- */

/* SAMPLE: points in a block's bytes (a new block, or a realloc's growth:
 * onto its record if it has one, else a record of its own); RESIZE: a
 * sampled block's new size (a realloc whose growth held no point); END:
 * a record's block was freed. */
enum malloc_event_op { MALLOC_EVENT_SAMPLE, MALLOC_EVENT_RESIZE, MALLOC_EVENT_END };

struct malloc_event {
    enum malloc_event_op op;
    void *ptr;                          /* SAMPLE, RESIZE: its block (NULL once freed) */
    uint64_t size;                      /* SAMPLE, RESIZE: the block's bytes */
    uint32_t record;                    /* END: the record and its sample */
    uint64_t seq;
    struct sampling_sample sample;      /* SAMPLE */
    struct sampling_frame *frames;      /* SAMPLE: malloc'd copy, or NULL */
    struct sampling_capture capture;
    uint32_t labels;                    /* SAMPLE: the label set (labels.h), 0: none */
    bool during_read;                   /* SAMPLE: taken while a read was on (see malloc_drain_locked) */
};

#define MALLOC_EVENTS 4096
static struct malloc_event malloc_events[MALLOC_EVENTS];
static size_t malloc_nevents;

/* The weights of samples dropped for a full queue (or no room in the
 * table of blocks): recorded nowhere, but counted in the totals, as
 * <other sites>, when the records' owner next applies the queue, so the
 * allocation totals stay exact (malloc_lock; `malloc_lost` says some
 * wait, for a look without the lock). */
static double malloc_lost_space, malloc_lost_objects;
static bool malloc_lost;

/* A sample dropped (under malloc_lock). */
static void
malloc_lose(const struct sampling_sample *sample)
{
    malloc_lost_space += sample->weight;
    malloc_lost_objects += sample->weight / (double)sample->size;
    __atomic_store_n(&malloc_lost, true, __ATOMIC_RELAXED);
    __atomic_fetch_add(&malloc_state.dropped, 1, __ATOMIC_RELAXED);
}

/* Whether a thread holding the GVL may touch the records now: one Ractor
 * (the GVL serialises, as for slot samples) and no read on. */
static inline bool
malloc_inline_ok(void)
{
    return !sampling_ractors && !sampler.records.reading;
}

/* Malloc samples have a recent slot of their own (no heap uses it).  A
 * sample applied at once compares its stack with its recent sites, as a
 * slot sample does; a queued one with none: it is applied later, when
 * the site it matched may be gone. */
#define MALLOC_RECENT_SLOT (SAMPLING_RECENT_SLOTS - 1)
STATIC_ASSERT(malloc_recent_slot, HEAP_COUNT <= MALLOC_RECENT_SLOT);
static struct sampling_site *const malloc_no_recent[SAMPLING_RECENT_WAYS];

/* The queued events of the block at `from` now name `to` (NULL: freed).
 * Under malloc_lock; only when the block has some (b->pending). */
static void
malloc_events_retarget(const void *from, void *to)
{
    for (size_t i = 0; i < malloc_nevents; i++) {
        struct malloc_event *e = &malloc_events[i];
        if (e->op != MALLOC_EVENT_END && e->ptr == from) e->ptr = to;
    }
}

/* Records a sample of `size` bytes' worth at the block ptr (NULL: freed
 * already), which now holds block_size bytes (under malloc_lock, by the
 * records' owner).  A block with a record is one block: the growth's
 * weight joins its record (its bytes in use are the block's), and the
 * growth is counted at the site that grew it. */
static void
malloc_apply_sample(void *ptr, uint64_t block_size, const struct sampling_sample *sample,
                    struct sampling_frame *frames, struct sampling_capture capture, uint32_t labels,
                    size_t gc_count)
{
    struct sampling_records *r = &sampler.records;
    struct sampling_sample_in in;
    in.obj = (uintptr_t)(ptr ? ptr : (void *)&in) | 1;
    sampling_frames_site_key(&in.site, frames, &capture, 0, SAMPLING_TYPE_MALLOC, 0, labels, MALLOC_RECENT_SLOT);
    in.sample = *sample;
    struct sampling_block *b = ptr ? malloc_block_find(ptr) : NULL;
    if (b && b->record != SAMPLING_NONE &&
        sampling_records_resize(r, b->record, b->seq, block_size, sample->weight, in.obj)) {
        sampling_records_tally(r, &in);
        malloc_state.merged++;
        return;
    }
    uint32_t index = sampling_records_add(r, &in);
    uint64_t seq = index == SAMPLING_NONE ? 0 : r->items[index].seq;
    if (!b) {
        /* freed before it was recorded: counted, and dead at once */
        if (index != SAMPLING_NONE) sampling_records_end(r, index, seq, sampler_now(sampler_objspace(), gc_count));
        return;
    }
    /* a realloc's growth: the record is of the whole block */
    if (index != SAMPLING_NONE && block_size != sample->size) sampling_records_resize(r, index, seq, block_size, 0, in.obj);
    b->record = index;
    b->seq = seq;
}

/* A sampled block's new size, no point in it (under malloc_lock, by the
 * records' owner). */
static void
malloc_apply_resize(void *ptr, uint64_t size)
{
    struct sampling_block *b = ptr ? malloc_block_find(ptr) : NULL;
    if (b && b->record != SAMPLING_NONE) {
        sampling_records_resize(&sampler.records, b->record, b->seq, size, 0, (uintptr_t)ptr | 1);
    }
}

/* Applies the queue in order (under malloc_lock, by the records' owner). */
static void
malloc_drain_locked(size_t gc_count)
{
    for (size_t i = 0; i < malloc_nevents; i++) {
        struct malloc_event *e = &malloc_events[i];
        if (e->op != MALLOC_EVENT_END && e->ptr) {
            struct sampling_block *b = malloc_block_find(e->ptr);
            if (b && b->pending) b->pending--;
        }
        if (e->op == MALLOC_EVENT_SAMPLE) {
            /* A sample taken while a read was on is applied as one taken
             * during that read: it evicts no record and folds no site
             * (records.h), so a reader's own mallocs never push out the
             * records it reads. */
            sampler.records.reading += e->during_read;
            malloc_apply_sample(e->ptr, e->size, &e->sample, e->frames, e->capture, e->labels, gc_count);
            sampler.records.reading -= e->during_read;
            free(e->frames);
        }
        else if (e->op == MALLOC_EVENT_RESIZE) {
            malloc_apply_resize(e->ptr, e->size);
        }
        else {
            sampling_records_end(&sampler.records, e->record, e->seq, sampler_now(sampler_objspace(), gc_count));
        }
    }
    malloc_nevents = 0;
    if (malloc_lost) {
        sampling_sites_count(&sampler.records.sites, NULL, malloc_lost_space, malloc_lost_objects);
        malloc_lost_space = malloc_lost_objects = 0;
        __atomic_store_n(&malloc_lost, false, __ATOMIC_RELAXED);
    }
}

/* For the records' owner (GVL or VM lock, no read on): the queue, applied. */
static void
malloc_drain(size_t gc_count)
{
    if ((!__atomic_load_n(&malloc_nevents, __ATOMIC_RELAXED) && !__atomic_load_n(&malloc_lost, __ATOMIC_RELAXED)) ||
        sampler.records.reading)
        return;
    pthread_mutex_lock(&malloc_lock);
    malloc_drain_locked(gc_count);
    pthread_mutex_unlock(&malloc_lock);
}

/* At a major GC's end: the table of sampled blocks cut down if it held
 * few since the last major GC (blocks.h: a trim), so that a program that
 * samples a batch of blocks and frees it, again and again, does not
 * rebuild the table at each batch. */
static void
malloc_blocks_trim(void)
{
    pthread_mutex_lock(&malloc_lock);
    sampling_blocks_trim(&malloc_blocks);
    pthread_mutex_unlock(&malloc_lock);
}

/* A queued sample's stack holds code (iseqs, method entries) that no site
 * watches yet: the end of a marking applies the queue before it checks
 * the sites' references, but not while a read is on.  Code that died
 * meanwhile (an eval's or a class body's iseq) would be swept
 * and then read when the sample is applied and named.  So while queued,
 * that code is marked, and pinned (the queue is not updated by
 * compaction): it lives until the next marking that can apply the queue,
 * at most.  (GC_HOOK_MARK_ROOTS; the VM lock, then malloc_lock.) */
static void
malloc_mark_queue(rb_objspace_t *objspace)
{
    if (!__atomic_load_n(&malloc_nevents, __ATOMIC_RELAXED)) return;
    pthread_mutex_lock(&malloc_lock);
    for (size_t i = 0; i < malloc_nevents; i++) {
        const struct malloc_event *e = &malloc_events[i];
        if (e->op != MALLOC_EVENT_SAMPLE || !e->frames) continue;
        for (uint32_t j = 0; j < e->capture.nframes; j++) {
            if (e->frames[j].iseq) gc_mark_and_pin(objspace, (VALUE)e->frames[j].iseq);
            if (e->frames[j].cme) gc_mark_and_pin(objspace, (VALUE)e->frames[j].cme);
        }
    }
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

/* Ends a record whose block is gone: now (the records' owner) or queued.
 * Under malloc_lock. */
static void
malloc_end_locked(rb_objspace_t *objspace, uint32_t record, uint64_t seq, bool now)
{
    if (record == SAMPLING_NONE) return;
    if (now) {
        sampling_records_end(&sampler.records, record, seq, sampler_now(objspace, objspace->profile.count));
        return;
    }
    struct malloc_event e = { MALLOC_EVENT_END };
    e.record = record;
    e.seq = seq;
    if (!malloc_queue(&e)) __atomic_fetch_add(&malloc_state.lost_frees, 1, __ATOMIC_RELAXED);
}

/* Ends an entry's record and removes it: `at` is where the table holds it,
 * `addr` its block's address for the tracer.  Under malloc_lock. */
static void
malloc_end_entry_locked(rb_objspace_t *objspace, struct sampling_block *b, const void *at, const void *addr, bool now)
{
    if (b->pending) malloc_events_retarget(at, NULL);     /* still queued: recorded dead */
    malloc_end_locked(objspace, b->record, b->seq, now);
    usdt_free((uintptr_t)addr);
    sampling_blocks_remove(&malloc_blocks, b);
}

/* Ends the sample of a block being freed, if it was sampled (the filter
 * said maybe).  Under malloc_lock.  An entry whose block is being
 * reallocated (moving) is not this block's: that block has left the
 * address, and the one freed got it meanwhile (below). */
static void
malloc_forget_locked(rb_objspace_t *objspace, void *ptr, bool now)
{
    struct sampling_block *b = malloc_block_find(ptr);
    if (!b || b->moving) return;     /* the filter's false positive, or not this block's */
    malloc_end_entry_locked(objspace, b, ptr, ptr, now);
}

static NOINLINE(void malloc_forget(rb_objspace_t *objspace, void *ptr));
static void
malloc_forget(rb_objspace_t *objspace, void *ptr)
{
    bool now = !malloc_tls.busy && ruby_thread_has_gvl_p() && malloc_inline_ok();
    pthread_mutex_lock(&malloc_lock);
    malloc_forget_locked(objspace, ptr, now);
    pthread_mutex_unlock(&malloc_lock);
}

/* ---- realloc of a sampled block: the block keeps its sample ----
 *
 * The block's entry is marked moving before the realloc (its serial is
 * read then) and found again after it, by serial, and moved to the new
 * address: the record, its stack, weight and birth stay the block's.
 * While glibc's realloc runs, a block that moves is free at its old
 * address, and another thread may get that address (issue 40: under
 * load, test_malloc_realloc_window.rb at once).  A moving entry is not
 * that block's: a free there leaves it alone (malloc_forget_locked), a
 * realloc there reads no serial, and a block sampled there (or a
 * realloc's block arriving there) moves it aside, to a key of its own
 * (malloc_moving_key: odd, so no block's address), with its queued
 * events, until its realloc finds it there (malloc_claim_locked).  A
 * failed realloc clears the mark (the block never left).  default.c's
 * realloc returns (NULL when it fails: gc.c raises after it), so every
 * mark is cleared by the thread that set it. */

/* Where a moving entry waits while another block has its address. */
static inline void *
malloc_moving_key(uint64_t serial)
{
    return (void *)(uintptr_t)((serial << 4) | 1);
}

/* A new block is at ptr, to be sampled (or a reader's own, counted): an
 * entry there is a block's that is gone (released with plain free():
 * its record ends), or a moving one's, which moves aside.  Under
 * malloc_lock; may move any entry. */
static void
malloc_claim_locked(rb_objspace_t *objspace, void *ptr, bool now)
{
    struct sampling_block *b = malloc_block_find(ptr);
    if (!b) return;
    if (!b->moving) {
        malloc_end_entry_locked(objspace, b, ptr, ptr, now);
        return;
    }
    void *key = malloc_moving_key(b->serial);
    bool pending = b->pending != 0;
    if (!sampling_blocks_move(&malloc_blocks, ptr, key)) {
        /* no memory: its record ends (as a realloc's move without memory) */
        malloc_end_entry_locked(objspace, malloc_block_find(ptr), ptr, ptr, now);
        return;
    }
    if (pending) malloc_events_retarget(ptr, key);
}

/* The serial of ptr's entry, marked moving; 0 if it has none (or a moving
 * one: another block's, which left this address). */
static NOINLINE(uint64_t malloc_serial(const void *ptr));
static uint64_t
malloc_serial(const void *ptr)
{
    pthread_mutex_lock(&malloc_lock);
    struct sampling_block *b = malloc_block_find(ptr);
    uint64_t serial = 0;
    if (b && !b->moving) {
        b->moving = 1;
        serial = b->serial;
    }
    pthread_mutex_unlock(&malloc_lock);
    return serial;
}

/* The realloc failed: the block is where it was. */
static NOINLINE(void malloc_unmark(const void *ptr, uint64_t serial));
static void
malloc_unmark(const void *ptr, uint64_t serial)
{
    pthread_mutex_lock(&malloc_lock);
    struct sampling_block *b = malloc_block_find(ptr);
    if (b && b->serial == serial) b->moving = 0;
    pthread_mutex_unlock(&malloc_lock);
}

/* The entry numbered serial (at `from`, or moved aside), unmarked and
 * moved to `to`; NULL if it is gone (a stop's clear, or no memory to
 * move it: its record ends).  Under malloc_lock. */
static struct sampling_block *
malloc_block_move(rb_objspace_t *objspace, const void *from, void *to, uint64_t serial, bool now)
{
    void *at = (void *)from;
    struct sampling_block *b = malloc_block_find(at);
    if (!b || b->serial != serial) {
        at = malloc_moving_key(serial);
        b = malloc_block_find(at);
        if (!b || b->serial != serial) return NULL;
    }
    b->moving = 0;
    if (at == to) return b;
    /* an entry left at `to` by a block released with plain free(), or a
     * moving one's */
    malloc_claim_locked(objspace, to, now);
    struct sampling_block *moved = sampling_blocks_move(&malloc_blocks, at, to);
    if (!moved) {
        malloc_end_entry_locked(objspace, malloc_block_find(at), at, from, now);
        return NULL;
    }
    if (moved->pending) malloc_events_retarget(at, to);
    usdt_move((uintptr_t)from, (uintptr_t)to);
    return moved;
}

/* A sampled block (serial, at `from`) is now `to`, of size bytes, and its
 * growth held no point: its record follows it and takes the new size. */
static NOINLINE(void malloc_resized(rb_objspace_t *objspace, const void *from, void *to, uint64_t serial, uint64_t size));
static void
malloc_resized(rb_objspace_t *objspace, const void *from, void *to, uint64_t serial, uint64_t size)
{
    bool now = !malloc_tls.busy && ruby_thread_has_gvl_p() && malloc_inline_ok();
    pthread_mutex_lock(&malloc_lock);
    struct sampling_block *b = malloc_block_move(objspace, from, to, serial, now);
    if (b) {
        /* at once, as a free's end is, unless an event of the block's
         * own waits (its sample, a resize): then after it, in order.
         * (No drain here: this may run inside a GC, whose own reallocs
         * may apply no queued sample.) */
        if (now && !b->pending) {
            malloc_apply_resize(to, size);
        }
        else {
            struct malloc_event e = { MALLOC_EVENT_RESIZE };
            e.ptr = to;
            e.size = size;
            if (malloc_queue(&e)) b->pending++;
            else __atomic_fetch_add(&malloc_state.lost_frees, 1, __ATOMIC_RELAXED);
        }
    }
    pthread_mutex_unlock(&malloc_lock);
}

/* A block's sample to the tracer (usdt.h): a sampled block that grew
 * across a point ends and is announced again. */
static inline void
malloc_announce(void *ptr, uint64_t block_size, double weight, bool regrown)
{
    if (regrown) usdt_free((uintptr_t)ptr);
    usdt_alloc((uintptr_t)ptr, block_size, weight);
}

/* Step 3: `bytes` of the block ptr (block_size bytes now) held `points`.
 * serial: the block was sampled, at `from`, before a realloc made it ptr
 * (0: it was not). */
static NOINLINE(void malloc_record(rb_objspace_t *objspace, void *ptr, uint64_t bytes, uint64_t block_size,
                                   uint64_t points, const void *from, uint64_t serial));
static void
malloc_record(rb_objspace_t *objspace, void *ptr, uint64_t bytes, uint64_t block_size, uint64_t points,
              const void *from, uint64_t serial)
{
    SAMPLING_PHASE_START(t0);
    struct malloc_thread *t = &malloc_tls;
    struct malloc_event e = { MALLOC_EVENT_SAMPLE };
    e.ptr = ptr;
    e.size = block_size;
    e.sample.weight = sampling_weight(malloc_state.mode, malloc_state.interval, (size_t)bytes, points);
    e.sample.allocated_gc = objspace->profile.count;
    e.sample.allocated_bytes = clock_now(objspace, NULL);
    e.sample.size = bytes;
    e.sample.heap = SAMPLING_HEAP_MALLOC;
    e.capture = (struct sampling_capture){ sampling_hash_end(SAMPLING_HASH_START, 0, false), 0, false,
                                           SAMPLING_ORIGIN_NO_GVL, 0, NULL };
    /* The collector's own mallocs during a GC (compaction's object id
     * tables grow in gc_move) walk no stack: frames may sit on pages
     * compaction has protected, and reading one there re-enters the
     * collector (the read barrier moves objects back, which mallocs
     * again: a stack overflow).  Queued, with the synthetic frame <GC>. */
    bool in_gc = during_gc;
    if (in_gc) e.capture.origin = SAMPLING_ORIGIN_GC;
    bool gvl = !in_gc && !t->busy && ruby_thread_has_gvl_p();
    bool now = gvl && malloc_inline_ok();
    if (gvl && sampler_reading_here()) {
        /* a reader's own block: counted, not recorded (sampling.c) */
        if (serial) {
            /* a sampled block it reallocated keeps its record */
            malloc_resized(objspace, from, ptr, serial, block_size);
        }
        else {
            pthread_mutex_lock(&malloc_lock);
            malloc_claim_locked(objspace, ptr, now);
            pthread_mutex_unlock(&malloc_lock);
        }
        __atomic_fetch_add(&sampler_reader_samples, 1, __ATOMIC_RELAXED);
        return;
    }
    /* (a racy read from another Ractor: at worst one sample is applied
     * with the wrong rule) */
    e.during_read = __atomic_load_n(&sampler.records.reading, __ATOMIC_RELAXED) > 0;
    t->busy = true;
    const void *ec = NULL;
    SAMPLING_PHASE_START(t1);
    if (now) {
        /* applied at once: the stack is often one of the last malloc
         * sites' (compared, not captured and hashed again) */
        e.capture = sampling_frames_capture(sampler.scratch, sampler.params.depth,
                                            sampling_sites_recent(&sampler.records.sites, MALLOC_RECENT_SLOT), &ec, T_NONE);
        e.frames = sampler.scratch;
    }
    else if (gvl) {
        /* its own stack, walked into a buffer of its own: the scratch
         * buffer belongs to the records' owner */
        e.frames = malloc((sampler.params.depth + 1) * sizeof(*e.frames));
        if (e.frames) e.capture = sampling_frames_capture(e.frames, sampler.params.depth, malloc_no_recent, &ec, T_NONE);
    }
    SAMPLING_PHASE_END(SAMPLING_PHASE_MCAPTURE, t1);
    /* its thread's labels, read by that thread (none without the GVL) */
    e.labels = sampling_labels_current(ec);
    SAMPLING_PHASE_START(t2);
    pthread_mutex_lock(&malloc_lock);
    struct sampling_block *b = serial ? malloc_block_move(objspace, from, ptr, serial, now) : NULL;
    bool regrown = b != NULL;   /* announced anew (usdt.h) */
    if (!b) {
        /* an entry left by a block released with plain free()
         * (docs/malloc-sampling.md#limits), or a moving one's */
        malloc_claim_locked(objspace, ptr, now);
        b = malloc_block_add(ptr);
    }
    if (!b) {
        if (!now) free(e.frames);
        malloc_lose(&e.sample);
    }
    else if (now) {
        /* this sample first: the queue, applied, may fold the recent
         * site its capture found */
        malloc_announce(ptr, block_size, e.sample.weight, regrown);
        malloc_apply_sample(ptr, block_size, &e.sample, e.frames, e.capture, e.labels, objspace->profile.count);
        if (malloc_nevents || malloc_lost) malloc_drain_locked(objspace->profile.count);
    }
    else if (malloc_queue(&e)) {
        b->pending++;
        malloc_announce(ptr, block_size, e.sample.weight, regrown);
    }
    else {
        free(e.frames);
        malloc_lose(&e.sample);
    }
    pthread_mutex_unlock(&malloc_lock);
    SAMPLING_PHASE_END(SAMPLING_PHASE_MRECORD, t2);
    t->busy = false;
    SAMPLING_PHASE_END(SAMPLING_PHASE_MSAMPLE, t0);
}

/* With --enable-checks: the table agrees with the filter, the queue and
 * the records (records_verify calls it; the VM lock, then malloc_lock).
 * Returns NULL or a message. */
#ifdef SAMPLING_CHECKS
static const char *
malloc_verify(void)
{
    pthread_mutex_lock(&malloc_lock);
    const struct sampling_records *r = &sampler.records;
    const char *err = sampling_blocks_verify(&malloc_blocks);
    size_t moving = 0;
    for (size_t i = 0; i < malloc_blocks.capacity && !err; i++) {
        const struct sampling_block *b = &malloc_blocks.slots[i];
        if (!b->ptr) continue;
        if ((b->ptr & 1) && (!b->moving || b->ptr != (uintptr_t)malloc_moving_key(b->serial))) {
            err = "an entry moved aside is not its serial's moving entry";
        }
        moving += b->moving;
        size_t pending = 0;
        for (size_t j = 0; j < malloc_nevents; j++) {
            pending += malloc_events[j].op != MALLOC_EVENT_END && malloc_events[j].ptr == (void *)b->ptr;
        }
        if (pending != b->pending) err = "an entry's pending count != the queued events naming it";
        /* (a moved block's record takes its new address when its queued
         * events are applied: a read on, a realloc's move waits there) */
        if (!err && !b->pending && !b->moving && b->record != SAMPLING_NONE && b->record < r->used) {
            const struct sampling_record *rec = &r->items[b->record];
            if (rec->seq == b->seq && !rec->dead && r->live[rec->live_pos].obj != (b->ptr | 1)) {
                err = "a sampled block's live record names another address";
            }
        }
    }
    /* every live malloc record has its block's entry (unless a free was
     * lost; a moving block's record takes its address after the move) */
    if (!err && !malloc_state.lost_frees && !malloc_nevents && !moving) {
        for (size_t i = 0; i < r->nlive && !err; i++) {
            const struct sampling_record *rec = &r->items[r->live[i].record];
            if (rec->heap != SAMPLING_HEAP_MALLOC) continue;
            const struct sampling_block *b = malloc_block_find((void *)(r->live[i].obj & ~(uintptr_t)1));
            if (!b || b->record != r->live[i].record || b->seq != rec->seq) err = "a live malloc record has no entry";
        }
    }
    pthread_mutex_unlock(&malloc_lock);
    return err;
}
#endif

/* ---- the wrapped entry points ---- */

/* Each fast path is the countdown (or the filter) and a tail jump to
 * default.c's function (their code: benchmark/results/malloc.md).
 * default.c's functions are hidden (sampling.c), so the jump is direct. */

enum malloc_op { MALLOC_OP_MALLOC, MALLOC_OP_CALLOC };

/* The allocation first, then the count: a failed one (NULL, or
 * NoMemoryError, which leaves by longjmp) is not counted. */
static NOINLINE(void *malloc_slow(void *objspace, size_t size, enum malloc_op op SAMPLING_GC_ALLOWED_PARAM));
static void *
malloc_slow(void *objspace, size_t size, enum malloc_op op SAMPLING_GC_ALLOWED_PARAM)
{
    void *mem = op == MALLOC_OP_CALLOC ? rb_gc_impl_calloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG)
                                       : rb_gc_impl_malloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG);
    if (!mem) return mem;
    uint64_t points = malloc_count(&malloc_tls, size);
    if (points) malloc_record(objspace, mem, size, size, points, NULL, 0);
    return mem;
}

/* The fast path of both, specialised for each by the compiler. */
static inline void *
malloc_fast(void *objspace, size_t size, enum malloc_op op SAMPLING_GC_ALLOWED_PARAM)
{
    struct malloc_thread *t = &malloc_tls;
    if (RB_LIKELY(size < t->countdown)) {
        t->countdown -= size;
        return op == MALLOC_OP_CALLOC ? rb_gc_impl_calloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG)
                                      : rb_gc_impl_malloc_default(objspace, size SAMPLING_GC_ALLOWED_ARG);
    }
    return malloc_slow(objspace, size, op SAMPLING_GC_ALLOWED_ARG);
}

void *
rb_gc_impl_malloc(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM)
{
    return malloc_fast(objspace_ptr, size, MALLOC_OP_MALLOC SAMPLING_GC_ALLOWED_ARG);
}

void *
rb_gc_impl_calloc(void *objspace_ptr, size_t size SAMPLING_GC_ALLOWED_PARAM)
{
    return malloc_fast(objspace_ptr, size, MALLOC_OP_CALLOC SAMPLING_GC_ALLOWED_ARG);
}

static NOINLINE(void malloc_free_slow(void *objspace, void *ptr, size_t old_size));
static void
malloc_free_slow(void *objspace, void *ptr, size_t old_size)
{
    SAMPLING_PHASE_START(t0);
    if (ptr) malloc_forget(objspace, ptr);
    SAMPLING_PHASE_END(SAMPLING_PHASE_MFREE, t0);
    rb_gc_impl_free_default(objspace, ptr, old_size);
}

void
rb_gc_impl_free(void *objspace_ptr, void *ptr, size_t old_size)
{
    if (RB_LIKELY(!malloc_maybe_sampled(ptr))) {
        rb_gc_impl_free_default(objspace_ptr, ptr, old_size);
        return;
    }
    malloc_free_slow(objspace_ptr, ptr, old_size);
}

/* A realloc's growth goes through the countdown like any allocation,
 * once the realloc succeeded; a sampled block keeps its sample wherever
 * it goes (above), its growth's points joining it.  A shrink keeps it
 * too, its weight scaled to the bytes left (records.h). */
static NOINLINE(void *malloc_realloc_slow(void *objspace, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM));
static void *
malloc_realloc_slow(void *objspace, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM)
{
    if (!ptr) return rb_gc_impl_malloc(objspace, new_size SAMPLING_GC_ALLOWED_ARG);
#ifdef HAVE_MALLOC_USABLE_SIZE
    if (!old_size) old_size = malloc_usable_size(ptr);
#endif
    uint64_t serial = malloc_maybe_sampled(ptr) ? malloc_serial(ptr) : 0;
    void *mem = rb_gc_impl_realloc_default(objspace, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
    if (!mem) {
        if (serial) malloc_unmark(ptr, serial);
        return mem;
    }
    uint64_t growth = new_size > old_size ? new_size - old_size : 0;
    uint64_t points = growth ? malloc_count(&malloc_tls, growth) : 0;
    /* (realloc to 0 bytes gives a block of at least 1: default.c) */
    uint64_t size = new_size ? new_size : 1;
    if (points) malloc_record(objspace, mem, growth, size, points, ptr, serial);
    else if (serial) malloc_resized(objspace, ptr, mem, serial, size);
    return mem;
}

/* The countdown for a realloc's growth, then default.c's realloc. */
static inline void *
malloc_realloc_counted(void *objspace, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM)
{
    struct malloc_thread *t = &malloc_tls;
    size_t growth = new_size > old_size ? new_size - old_size : 0;
    if (RB_LIKELY(growth < t->countdown)) {
        t->countdown -= growth;
        return rb_gc_impl_realloc_default(objspace, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
    }
    return malloc_realloc_slow(objspace, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
}

/* An unknown old size (0: CRuby's REALLOC_N) is asked of
 * malloc_usable_size, as default.c would, out of line: the fast path
 * below then needs no stack frame.  (Passed on: 4.0's default.c then
 * does not ask again; 3.4's always asks.) */
static NOINLINE(void *malloc_realloc_unsized(void *objspace, void *ptr, size_t new_size SAMPLING_GC_ALLOWED_PARAM));
static void *
malloc_realloc_unsized(void *objspace, void *ptr, size_t new_size SAMPLING_GC_ALLOWED_PARAM)
{
    size_t old_size = 0;
#ifdef HAVE_MALLOC_USABLE_SIZE
    if (ptr) old_size = malloc_usable_size(ptr);
#endif
    return malloc_realloc_counted(objspace, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
}

void *
rb_gc_impl_realloc(void *objspace_ptr, void *ptr, size_t new_size, size_t old_size SAMPLING_GC_ALLOWED_PARAM)
{
    /* The common cases: a block not sampled, and either nothing counted
     * (malloc sampling off: no size to find) or growth short of the
     * point. */
    if (RB_LIKELY(!malloc_maybe_sampled(ptr))) {
        if (!malloc_state.on) {
            return rb_gc_impl_realloc_default(objspace_ptr, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
        }
        if (RB_UNLIKELY(!old_size)) return malloc_realloc_unsized(objspace_ptr, ptr, new_size SAMPLING_GC_ALLOWED_ARG);
        return malloc_realloc_counted(objspace_ptr, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
    }
    return malloc_realloc_slow(objspace_ptr, ptr, new_size, old_size SAMPLING_GC_ALLOWED_ARG);
}

/* ---- the sampler's side (API: VM lock and barrier held) ---- */

static void
malloc_counters_reset(void)
{
    malloc_state.bytes = malloc_state.samples = malloc_state.points = 0;
    malloc_state.dropped = malloc_state.lost_frees = malloc_state.merged = 0;
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
 * other threads' are counted at their next point
 * (docs/malloc-sampling.md#limits). */
static void
malloc_get_stats(struct sampler_stats *stats)
{
    struct malloc_thread *t = &malloc_tls;
    stats->malloc = malloc_state.on;
    stats->malloc_allocated_bytes = malloc_state.bytes + (malloc_state.on && t->epoch == malloc_epoch ? t->set - t->countdown : 0);
    stats->malloc_samples = malloc_state.samples;
    stats->samples += malloc_state.samples;     /* (the identity: sampler.h) */
    stats->malloc_points = malloc_state.points;
    stats->dropped += malloc_state.dropped;
    stats->merged = malloc_state.merged;
    stats->lost_frees = __atomic_load_n(&malloc_state.lost_frees, __ATOMIC_RELAXED);
}

/* Bytes the malloc side holds: the table of sampled blocks (by
 * capacity), the filter and the queue (static arrays, resident once
 * touched), and the frames of queued samples.  The table holds the
 * sampled blocks not freed yet (the program's own live malloc'd memory
 * over interval, a block an entry), 4 slots a block at a rebuild
 * (blocks.h), never sized by the blocks freed before. */
static size_t
malloc_memsize(void)
{
    pthread_mutex_lock(&malloc_lock);
    size_t bytes = sampling_blocks_memsize(&malloc_blocks) + sizeof(malloc_events);
    for (size_t i = 0; i < malloc_nevents; i++) {
        const struct malloc_event *e = &malloc_events[i];
        if (e->op == MALLOC_EVENT_SAMPLE && e->frames) bytes += (sampler.params.depth + 1) * sizeof(*e->frames);
    }
    pthread_mutex_unlock(&malloc_lock);
    return bytes;
}

/* The lock is held across fork, so a child never inherits it taken. */
static void malloc_lock_take(void) { pthread_mutex_lock(&malloc_lock); }
static void malloc_lock_give(void) { pthread_mutex_unlock(&malloc_lock); }

static void
malloc_init(void)
{
    pthread_atfork(malloc_lock_take, malloc_lock_give, malloc_lock_give);
}
