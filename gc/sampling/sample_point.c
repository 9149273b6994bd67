/* sample_point.c: see sample_point.h for the model and its invariant. */
#include "sample_point.h"
#include "invariant.h"
#include "phases.h"

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

#ifdef SAMPLING_PHASES
static uint64_t walk_wrong;     /* guesses that missed (benchmark/phases) */
#endif

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
#ifdef SAMPLING_PHASES
    walk_wrong++;
#endif
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

#ifdef SAMPLING_PHASES
/* benchmark/walk_variants (a SAMPLING_GC_PHASES build):
 * SAMPLING_WALK_VARIANTS="0,3" alternates walk variants from one
 * placement to the next (per heap; or from one run of
 * SAMPLING_WALK_BLOCK placements to the next), and the report
 * (SAMPLING_WALK_OUT) gives per variant the ticks of a walk in a take,
 * its links, and the ticks from one sample to the next of the same heap
 * (all a variant changes, the program's own work included).  Bit 0: the
 * guessed walk (else the chase); bit 1: the prefetch at the previous
 * sample.  The library's own is 3.  Unset, a phases build walks as the
 * library does and times nothing more (benchmark/phases). */
#include <stdio.h>
#include <stdlib.h>
enum { WALK_VARIANTS_MAX = 8, WALK_PERIOD_OUTLIER = 2000000 };
static int walk_variants[WALK_VARIANTS_MAX] = { 3 }, walk_nvariants = 1;
static unsigned walk_block = 1;     /* placements in a row with one variant */
static bool walk_timed;             /* SAMPLING_WALK_VARIANTS given: time them */
static struct { uint64_t walk_ticks, walks, links, period_ticks, periods; } walk_stats[WALK_VARIANTS_MAX];

/* (fenced: the walk's loads done before the counter is read, or a walk
 * whose loads do not wait for each other would seem to end early) */
static inline uint64_t
walk_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
    uint64_t t = __builtin_ia32_rdtsc();
    __builtin_ia32_lfence();
    return t;
#else
    return sampling_phase_tick();
#endif
}

__attribute__((constructor)) static void
walk_variants_init(void)
{
    const char *b = getenv("SAMPLING_WALK_BLOCK");
    if (b && atoi(b) > 0) walk_block = (unsigned)atoi(b);
    const char *v = getenv("SAMPLING_WALK_VARIANTS");
    if (!v || !*v) return;
    walk_timed = true;
    walk_nvariants = 0;
    for (char *e; *v && walk_nvariants < WALK_VARIANTS_MAX; v = *e ? e + 1 : e) {
        walk_variants[walk_nvariants++] = (int)strtol(v, &e, 10);
    }
}

/* One JSON line: {"VARIANT":[walk ticks, walks, links, period ticks,
 * periods], ..., "wrong": guesses that missed} */
__attribute__((destructor)) static void
walk_variants_report(void)
{
    if (!walk_timed) return;
    const char *path = getenv("SAMPLING_WALK_OUT");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    FILE *out = f ? f : stderr;
    fprintf(out, "{");
    for (int i = 0; i < walk_nvariants; i++) {
        fprintf(out, "\"%d\":[%llu,%llu,%llu,%llu,%llu],", walk_variants[i],
                (unsigned long long)walk_stats[i].walk_ticks, (unsigned long long)walk_stats[i].walks,
                (unsigned long long)walk_stats[i].links, (unsigned long long)walk_stats[i].period_ticks,
                (unsigned long long)walk_stats[i].periods);
    }
    fprintf(out, "\"wrong\":%llu}\n", (unsigned long long)walk_wrong);
    if (f) fclose(f);
}
/* A take: the time since this heap's last goes to the variant that cut
 * the point taken.  Returns the time, the walk's start. */
static inline uint64_t
walk_variant_take(struct sample_point *sp)
{
    sp->ph_variant = 0xff;
    if (!walk_timed) return 0;
    uint64_t now = walk_tick();
    if (sp->ph_last && now - sp->ph_last < WALK_PERIOD_OUTLIER) {
        walk_stats[sp->ph_cut].period_ticks += now - sp->ph_last;
        walk_stats[sp->ph_cut].periods++;
    }
    sp->ph_last = now;
    return now;
}

/* The take's walk ended (if it walked: ph_variant set by place). */
static inline void
walk_variant_walked(struct sample_point *sp, uint64_t t0)
{
    if (!walk_timed || sp->ph_variant == 0xff) return;
    uint64_t d = walk_tick() - t0;
    if (d >= SAMPLING_PHASE_OUTLIER) return;
    walk_stats[sp->ph_variant].walk_ticks += d;
    walk_stats[sp->ph_variant].walks++;
    walk_stats[sp->ph_variant].links += sp->ph_links;
}
# define WALK_VARIANT(sp) walk_variants[(sp)->ph_placements / walk_block % (unsigned)walk_nvariants]
#else
# define WALK_VARIANT(sp) 3
#endif

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
#ifdef SAMPLING_PHASES
    unsigned idx = sp->ph_placements++ / walk_block % (unsigned)walk_nvariants;
    sp->ph_cut = (uint8_t)idx;
#endif
    if (k > 1) {
#ifdef SAMPLING_PHASES
        sp->ph_variant = (uint8_t)idx;
        sp->ph_links = k - 2;
        last = walk_variants[idx] & 1 ? walk_guess(s, k - 2, slot_size) : walk_chase(s, k - 2);
#else
        last = walk_guess(s, k - 2, slot_size);
#endif
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
    /* (WALK_VARIANT: the next placement's, in benchmark/phases) */
#ifdef SAMPLING_PHASES
    if (prefetch && (WALK_VARIANT(sp) & 4)) {
        __asm__ volatile("");
        uint64_t bytes = prefetch < WALK_PREFETCH_MAX ? prefetch : WALK_PREFETCH_MAX;
        for (uintptr_t p = (uintptr_t)s - slot_size, end = (uintptr_t)s - bytes; p >= end; p -= slot_size)
            __builtin_prefetch((const void *)p);
    }
#endif
    if (prefetch && (WALK_VARIANT(sp) & 2)) walk_prefetch(s, prefetch);
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
#ifdef SAMPLING_PHASES
    uint64_t t1 = walk_variant_take(sp);
#endif
    SAMPLING_PHASE_START(t0);
    if (rest) place(sp, list, rest_count, slot_size, config->interval);
    SAMPLING_PHASE_END(SAMPLING_PHASE_WALK, t0);
#ifdef SAMPLING_PHASES
    walk_variant_walked(sp, t1);
#endif
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
