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

void
sample_point_place(struct sample_point *sp, sample_point_list *list,
                   size_t count, size_t slot_size)
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
     * to the (k-1)-th slot, four links a round (the walk is most of the
     * cost of a short interval). */
    struct sample_point_slot *last = NULL, *s = *list;
    if (k > 1) {
        last = s;
        uint64_t steps = k - 2;
        for (; steps >= 4; steps -= 4) last = slot_next(slot_next(slot_next(slot_next(last))));
        for (; steps > 0; steps--) last = slot_next(last);
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

    /* countdown was in (0, slot_size]: this slot reaches the point, and
     * perhaps more points when the interval is smaller than a slot. */
    sp->countdown -= (int64_t)slot_size;
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
    *points = n;
    SAMPLING_ASSERT(n >= 1 && sp->countdown > 0);

    *list = rest;
    SAMPLING_PHASE_START(t0);
    if (rest) sample_point_place(sp, list, rest_count, slot_size);
    SAMPLING_PHASE_END(SAMPLING_PHASE_WALK, t0);
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
