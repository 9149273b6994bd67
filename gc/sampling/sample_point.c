/* sample_point.c: see sample_point.h for the model and its invariant. */
#include "sample_point.h"
#include "invariant.h"
#include "phases.h"
#include "walk_variants.h"

#if defined(__has_feature)
# if __has_feature(address_sanitizer)
#  define SAMPLE_POINT_ASAN 1
# endif
#endif
#if defined(__SANITIZE_ADDRESS__)
# define SAMPLE_POINT_ASAN 1
#endif

/* Free slots are poisoned under AddressSanitizer; reading or cutting a
 * list opens one slot's two words at a time and closes them again. */
#ifdef SAMPLE_POINT_ASAN
# include <sanitizer/asan_interface.h>
# define SLOT_OPEN(s)  ASAN_UNPOISON_MEMORY_REGION((s), sizeof(struct sample_point_slot))
# define SLOT_CLOSE(s) ASAN_POISON_MEMORY_REGION((s), sizeof(struct sample_point_slot))
#else
# define SLOT_OPEN(s)  ((void)(s))
# define SLOT_CLOSE(s) ((void)(s))
#endif

static inline struct sample_point_slot *
slot_next(struct sample_point_slot *slot)
{
    SLOT_OPEN(slot);
    struct sample_point_slot *next = slot->next;
    SLOT_CLOSE(slot);
    return next;
}

static inline void
slot_set_next(struct sample_point_slot *slot, struct sample_point_slot *next)
{
    SLOT_OPEN(slot);
    slot->next = next;
    SLOT_CLOSE(slot);
}

size_t
sample_point_list_length(const struct sample_point_slot *list)
{
    size_t n = 0;
    for (struct sample_point_slot *s = (struct sample_point_slot *)list; s; s = slot_next(s)) n++;
    return n;
}

void
sample_point_reset(struct sample_point *sp, struct sample_point_config *config)
{
    sp->tail = NULL;
    sp->head_last = NULL;
    sp->tail_count = 0;
    sp->countdown = sampling_gap_next(&config->rng, config->mode, config->interval);
}

/* ---- the walk to the point ----
 *
 * The cut needs the (k-1)-th slot of the list: k-1 dependent loads, each
 * on a line the sweep wrote, which is most of a short interval's cost. */

/* The plain chase, four links a round. */
static inline struct sample_point_slot *
walk_chase(struct sample_point_slot *s, uint64_t steps)
{
    for (; steps >= 4; steps -= 4) s = slot_next(slot_next(slot_next(slot_next(s))));
    for (; steps > 0; steps--) s = slot_next(s);
    return s;
}

/* The chase with the next address guessed: the sweep pushes a page's
 * free slots in address order, so most links lead to the slot below.
 * While the guess holds, the next load's address does not wait for this
 * one's value: the loads go out together instead of one after another.
 * A wrong guess costs a mispredicted branch and follows the link. */
static inline struct sample_point_slot *
walk_guess_step(struct sample_point_slot *s, size_t slot_size)
{
    struct sample_point_slot *next = slot_next(s);
#if defined(__x86_64__) && defined(__GNUC__)
    struct sample_point_slot *guess = (struct sample_point_slot *)((char *)s - slot_size);
    /* (the compare in asm: told that the two are equal, the compiler
     * would use the loaded value and bring the dependence back) */
    __asm__ goto("cmp %0, %1\n\tjne %l[wrong]" : : "r"(next), "r"(guess) : "cc" : wrong);
    return guess;
  wrong:
#endif
    WALK_GUESS_MISSED();
    return next;
}

static inline struct sample_point_slot *
walk_guess(struct sample_point_slot *s, uint64_t steps, size_t slot_size)
{
    for (; steps >= 4; steps -= 4) {
        s = walk_guess_step(walk_guess_step(walk_guess_step(walk_guess_step(s, slot_size), slot_size), slot_size), slot_size);
    }
    for (; steps > 0; steps--) s = walk_guess_step(s, slot_size);
    return s;
}

/* At a sample, the lines of the next walk, below the new cut: by the
 * next sample they are in the cache, for that walk and for the program's
 * own allocations there (a walk reads one line of a large slot; the
 * program writes all of them).  About the mean gap's bytes, at most
 * WALK_PREFETCH_MAX: a longer walk is long enough for the hardware's own
 * prefetcher (at 32 KiB, a prefetch of 4 to 32 KiB changed nothing). */
enum { WALK_PREFETCH_MAX = 4096 };

static inline void
walk_prefetch(const struct sample_point_slot *cut, uint64_t interval)
{
    /* (a function of prefetches only has no effect the compiler keeps: it
     * drops the call, unless told otherwise) */
    __asm__ volatile("");
    uintptr_t p = (uintptr_t)cut;
    uint64_t bytes = interval < WALK_PREFETCH_MAX ? interval : WALK_PREFETCH_MAX;
    /* eight lines a round, from the line below the cut down */
    for (uint64_t n = (bytes + 511) / 512; n > 0; n--, p -= 512) {
        __builtin_prefetch((const void *)(p - 64));
        __builtin_prefetch((const void *)(p - 128));
        __builtin_prefetch((const void *)(p - 192));
        __builtin_prefetch((const void *)(p - 256));
        __builtin_prefetch((const void *)(p - 320));
        __builtin_prefetch((const void *)(p - 384));
        __builtin_prefetch((const void *)(p - 448));
        __builtin_prefetch((const void *)(p - 512));
    }
}

/* sample_point_place; at a sample (prefetch: the interval), the next
 * walk's lines prefetched below the new cut. */
static inline void
place(struct sample_point *sp, sample_point_list *list, size_t count, size_t slot_size, uint64_t prefetch)
{
    SAMPLING_ASSERT(sp->tail == NULL && sp->countdown > 0);
    /* The k-th slot (1-based) reaches the point: k = ceil(countdown / size). */
    uint64_t k = ((uint64_t)sp->countdown + slot_size - 1) / slot_size;

    if (*list == NULL || k > count) {
        /* No point in this list: charge it whole. */
        sp->countdown -= (int64_t)(count * slot_size);
        return;
    }

    /* Charge the k - 1 slots before the sampled one and cut there: walk
     * to the (k-1)-th slot. */
    struct sample_point_slot *last = NULL, *s = *list;
    int variant = walk_variant_cut(sp, k);   /* WALK_LIBRARY but in benchmark/walk_variants */
    if (k > 1) {
        last = variant & 1 ? walk_guess(s, k - 2, slot_size) : walk_chase(s, k - 2);
        s = slot_next(last);
        slot_set_next(last, NULL);
    }
    else {
        *list = NULL;
    }

    sp->tail = s;
    sp->head_last = last;
    sp->tail_count = count - (k - 1);
    sp->countdown -= (int64_t)((k - 1) * slot_size);
    /* the tail's first slot is the allocation that reaches the point */
    SAMPLING_ASSERT(sp->countdown > 0 && (uint64_t)sp->countdown <= slot_size);
    walk_variant_prefetch_slots(sp, s, slot_size, prefetch < WALK_PREFETCH_MAX ? prefetch : WALK_PREFETCH_MAX);
    if (prefetch && (walk_variant_next(sp) & 2)) walk_prefetch(s, prefetch);
}

void
sample_point_place(struct sample_point *sp, sample_point_list *list,
                   size_t count, size_t slot_size)
{
    place(sp, list, count, slot_size, 0);
}

/* The slot just charged reached the point (countdown <= 0), and perhaps
 * more points when the interval is smaller than a slot: how many, with
 * the gaps to the next point drawn. */
static uint64_t
points_passed(struct sample_point *sp, struct sample_point_config *config)
{
    SAMPLING_ASSERT(sp->countdown <= 0);
    uint64_t n = 0;
    if (config->mode == SAMPLING_MODE_FIXED) {
        /* Closed form of the loop below: the points in the overshoot. */
        uint64_t over = (uint64_t)(-sp->countdown);
        n = over / config->interval + 1;
        sp->countdown += (int64_t)(n * config->interval);
    }
    else {
        int64_t countdown = sp->countdown;
        double mean = sampling_gap_mean(config->interval);
        do {
            countdown += sampling_gap_poisson(&config->rng, mean);
            n++;
        } while (countdown <= 0);
        sp->countdown = countdown;
    }
    SAMPLING_ASSERT(n >= 1 && sp->countdown > 0);
    return n;
}

struct sample_point_slot *
sample_point_take(struct sample_point *sp, sample_point_list *list,
                  size_t slot_size, struct sample_point_config *config, uint64_t *points)
{
    SAMPLING_ASSERT(*list == NULL && sp->tail != NULL && sp->tail_count >= 1);
    SAMPLING_ASSERT(sp->countdown > 0 && (uint64_t)sp->countdown <= slot_size);
    struct sample_point_slot *slot = sp->tail;
    struct sample_point_slot *rest = slot_next(slot);
    size_t rest_count = sp->tail_count - 1;

    sp->tail = NULL;
    sp->head_last = NULL;
    sp->tail_count = 0;

    /* countdown was in (0, slot_size]: this slot reaches the point */
    sp->countdown -= (int64_t)slot_size;
    *points = points_passed(sp, config);

    *list = rest;
    uint64_t t1 = walk_variant_take(sp);
    SAMPLING_PHASE_START(t0);
    if (rest) place(sp, list, rest_count, slot_size, config->interval);
    SAMPLING_PHASE_END(SAMPLING_PHASE_WALK, t0);
    walk_variant_walked(sp, t1);
    return slot;
}

void
sample_point_rejoin(struct sample_point *sp, sample_point_list *list, size_t slot_size)
{
    size_t unallocated = sample_point_list_length(*list);
    sp->countdown += (int64_t)(unallocated * slot_size);

    if (sp->tail) {
        SAMPLING_ASSERT(*list == NULL || sp->head_last != NULL);
        if (*list) slot_set_next(sp->head_last, sp->tail);
        else *list = sp->tail;
        sp->tail = NULL;
        sp->head_last = NULL;
        sp->tail_count = 0;
    }
}

size_t
sample_point_limit(struct sample_point *sp, size_t count, size_t cap, size_t slot_size)
{
    SAMPLING_ASSERT(sp->tail == NULL && sp->countdown > 0 && count < cap);
    /* the k-th allocation from here reaches the point */
    uint64_t k = ((uint64_t)sp->countdown + slot_size - 1) / slot_size;
    uint64_t n = k < cap - count ? k : cap - count;
    sp->countdown -= (int64_t)(n * slot_size);
    return count + (size_t)n;
}

uint64_t
sample_point_reached(struct sample_point *sp, struct sample_point_config *config)
{
    if (sp->countdown > 0) return 0;
    return points_passed(sp, config);
}
