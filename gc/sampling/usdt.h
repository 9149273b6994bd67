/*
 * usdt.h: the OpenTelemetry eBPF profiler's memory probes, fired at the
 * sample point (issue 39; docs/fleet.md, step 6).
 *
 * Model.  The contract (opentelemetry-ebpf-profiler's design doc 00003,
 * "Memory Profiling", as of RFC #1672; unversioned: a change would come as
 * new `_v2` names) is two USDT probes of the provider `otel_memory`:
 *
 *   alloc(ptr, size, w)  a sampled allocation: its address, its bytes,
 *                        the bytes it stands for (nsamples x interval in
 *                        fixed mode; gap.h's unbiased weight, rounded)
 *   free(ptr)            a sampled allocation announced by alloc ends
 *
 * Each sample the library records (slot or malloc'd block; not a reader's,
 * which no profile counts) is announced once by alloc, on the allocating
 * thread (the tracer unwinds that thread's stack), and at most once by
 * free, with the address alloc gave:
 *
 *   slot      free when the end of a marking finds it dead, or when the
 *             library stops following it while it lives (its record
 *             dropped: a full table at the sample, a lowered max_samples,
 *             clear), so that the tracer's in-use set is the library's
 *   block     free when the block is freed (or its table entry is
 *             replaced), whether or not its record was kept
 *   a move    (compaction, a realloc that moves a sampled block) announces
 *             nothing: the first address stays the sample's name, and its
 *             end is announced under it (the moved table below)
 *   realloc   a point in the growth of a sampled block: free, then alloc
 *             at the new address with the growth's weight (the library
 *             adds it to the block's record; the tracer counts the block
 *             from then on with the growth's weight only)
 *
 * So the sum of alloc's w is the profile's alloc_space, and the tracer's
 * in-use set is the library's live records (but for blocks whose record
 * was dropped, which the tracer keeps until their free).
 *
 * Cost.  The probes are guarded by their semaphores (_SDT_HAS_SEMAPHORES):
 * a tracer that attaches raises its probe's counter.  With none attached a
 * sample pays one load of a zero counter (alloc's), and a sample's end
 * two (the moved table's size, free's); the allocation fast path, the
 * free filter and the walk's survivors are untouched.  The probes fire from noinline functions whose
 * arguments the compiler keeps in the ABI's argument registers
 * (STAP_SDT_ARG_CONSTRAINT r, pinned below): the profiler's first version
 * reads them from pt_regs as a call's.
 *
 * The moved table: current address -> announced address, for samples
 * that moved while a tracer was attached (usdt.c, on blocks.h's table).
 * Its own mutex, taken last (after the VM lock or malloc_lock), so never
 * held across fork (malloc.c holds malloc_lock across it, and the GVL
 * holder forks); read without it only through its size, which is 0
 * unless a traced sample moved.
 *
 * Without <sys/sdt.h> (extconf.rb says so at build time) every function
 * here is empty.
 */
#ifndef SAMPLING_USDT_H
#define SAMPLING_USDT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef HAVE_SYS_SDT_H
#define SAMPLING_USDT 1
extern unsigned short otel_memory_alloc_semaphore, otel_memory_free_semaphore;
extern size_t usdt_moved_size;

/* Whether a tracer is attached to alloc / free (one load each). */
static inline bool
usdt_alloc_on(void)
{
    return __builtin_expect(*(volatile unsigned short *)&otel_memory_alloc_semaphore != 0, 0);
}

static inline bool
usdt_free_on(void)
{
    return __builtin_expect(*(volatile unsigned short *)&otel_memory_free_semaphore != 0, 0);
}

/* Whether the moved table holds anything (one load). */
static inline bool
usdt_moved_any(void)
{
    return __builtin_expect(__atomic_load_n(&usdt_moved_size, __ATOMIC_RELAXED) != 0, 0);
}

void usdt_fire_alloc(uintptr_t ptr, uint64_t size, uint64_t weight);
void usdt_fire_free(uintptr_t ptr);
/* The announced address of the sample now at ptr, its entry removed. */
uintptr_t usdt_moved_take(uintptr_t ptr);
/* The sample at `from` is now at `to`. */
void usdt_moved_note(uintptr_t from, uintptr_t to);
#else
#define SAMPLING_USDT 0
static inline bool usdt_moved_any(void) { return false; }
static inline bool usdt_alloc_on(void) { return false; }
static inline bool usdt_free_on(void) { return false; }
static inline void usdt_fire_alloc(uintptr_t ptr, uint64_t size, uint64_t weight) { }
static inline void usdt_fire_free(uintptr_t ptr) { }
static inline uintptr_t usdt_moved_take(uintptr_t ptr) { return ptr; }
static inline void usdt_moved_note(uintptr_t from, uintptr_t to) { }
#endif

/* Whether anything here has work: a tracer, or moved samples to forget
 * (for the loops over every live record: compaction, clear). */
static inline bool
usdt_following(void)
{
    return usdt_alloc_on() || usdt_free_on() || usdt_moved_any();
}

/* A sample at ptr ends (see the model for when): its entry in the moved
 * table goes (whether or not a tracer is attached), so no entry outlives
 * its sample and a new sample needs no look there. */
static inline void
usdt_free(uintptr_t ptr)
{
    if (usdt_moved_any()) ptr = usdt_moved_take(ptr);
    if (usdt_free_on()) usdt_fire_free(ptr);
}

/* A new sample at ptr of size bytes, standing for weight bytes. */
static inline void
usdt_alloc(uintptr_t ptr, uint64_t size, double weight)
{
    if (usdt_alloc_on()) usdt_fire_alloc(ptr, size, weight > 0 ? (uint64_t)(weight + 0.5) : 0);
}

/* A sample moved from `from` to `to`: still announced under its first
 * address. */
static inline void
usdt_move(uintptr_t from, uintptr_t to)
{
    if (from != to && usdt_following()) usdt_moved_note(from, to);
}

#endif
