/*
 * usdt.c: the otel_memory probes and their semaphores, and the moved
 * table (usdt.h has the model).  Pure C, no Ruby.
 */
/* In the library build mkmf's checks (HAVE_SYS_SDT_H) land in extconf.h. */
#ifdef RUBY_EXTCONF_H
# include RUBY_EXTCONF_H
#endif

#pragma GCC visibility push(hidden)
#include "usdt.h"
#pragma GCC visibility pop

#ifdef HAVE_SYS_SDT_H
#include <pthread.h>
#include "blocks.h"

/* The probes' arguments in registers only (the ABI's argument registers,
 * pinned below): what the profiler reads from pt_regs. */
#define _SDT_HAS_SEMAPHORES 1
#define STAP_SDT_ARG_CONSTRAINT r
#include <sys/sdt.h>

/* The semaphores: a tracer attaching a probe raises its counter (the
 * kernel's uprobe reference counter, or the tracer writes it). */
__attribute__((visibility("hidden"), section(".probes"), used)) unsigned short otel_memory_alloc_semaphore;
__attribute__((visibility("hidden"), section(".probes"), used)) unsigned short otel_memory_free_semaphore;

#if defined(__x86_64__)
#define USDT_ARG(n, reg, value) register uint64_t n __asm__(reg) = (value)
#define USDT_REG0 "rdi"
#define USDT_REG1 "rsi"
#define USDT_REG2 "rdx"
#elif defined(__aarch64__)
#define USDT_ARG(n, reg, value) register uint64_t n __asm__(reg) = (value)
#define USDT_REG0 "x0"
#define USDT_REG1 "x1"
#define USDT_REG2 "x2"
#else
#define USDT_ARG(n, reg, value) uint64_t n = (value)
#endif

__attribute__((noinline)) void
usdt_fire_alloc(uintptr_t ptr, uint64_t size, uint64_t weight)
{
    USDT_ARG(a0, USDT_REG0, ptr);
    USDT_ARG(a1, USDT_REG1, size);
    USDT_ARG(a2, USDT_REG2, weight);
    STAP_PROBE3(otel_memory, alloc, a0, a1, a2);
}

__attribute__((noinline)) void
usdt_fire_free(uintptr_t ptr)
{
    USDT_ARG(a0, USDT_REG0, ptr);
    STAP_PROBE1(otel_memory, free, a0);
}

/* ---- the moved table ---- */

/* A sampled object or block that moved while traced: the entry's ptr is
 * where it is now, its `seq` the address alloc announced. */
static struct sampling_blocks usdt_moved;
static pthread_mutex_t usdt_moved_lock = PTHREAD_MUTEX_INITIALIZER;
size_t usdt_moved_size;     /* usdt_moved.size, for a read without the lock */

uintptr_t
usdt_moved_take(uintptr_t ptr)
{
    if (!__atomic_load_n(&usdt_moved_size, __ATOMIC_RELAXED)) return ptr;
    pthread_mutex_lock(&usdt_moved_lock);
    struct sampling_block *b = sampling_blocks_find(&usdt_moved, (const void *)ptr);
    if (b) {
        ptr = (uintptr_t)b->seq;
        sampling_blocks_remove(&usdt_moved, b);
        __atomic_store_n(&usdt_moved_size, usdt_moved.size, __ATOMIC_RELAXED);
    }
    pthread_mutex_unlock(&usdt_moved_lock);
    return ptr;
}

void
usdt_moved_note(uintptr_t from, uintptr_t to)
{
    pthread_mutex_lock(&usdt_moved_lock);
    /* an entry left at `to` names a sample that ended unannounced */
    struct sampling_block *stale = sampling_blocks_find(&usdt_moved, (const void *)to);
    if (stale) sampling_blocks_remove(&usdt_moved, stale);
    struct sampling_block *b = sampling_blocks_find(&usdt_moved, (const void *)from);
    if (b) {
        if (!sampling_blocks_move(&usdt_moved, (const void *)from, (const void *)to)) {
            sampling_blocks_remove(&usdt_moved, sampling_blocks_find(&usdt_moved, (const void *)from));
        }
    }
    else if ((b = sampling_blocks_add(&usdt_moved, (const void *)to)) != NULL) {
        b->seq = from;
    }
    /* (no memory: the sample's end is announced under its new address,
     * which the tracer does not know and ignores) */
    __atomic_store_n(&usdt_moved_size, usdt_moved.size, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&usdt_moved_lock);
}
#endif
