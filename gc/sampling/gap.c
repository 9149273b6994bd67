/* gap.c: see gap.h for the model. */
#include "gap.h"

#include <math.h>

static inline uint64_t
rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

/* splitmix64 (Steele, Lea, Flood 2014): spreads any seed, 0 included,
 * into a state xoshiro accepts (not all zero). */
static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

void
sampling_rng_seed(struct sampling_rng *rng, uint64_t seed)
{
    for (int i = 0; i < 4; i++) rng->s[i] = splitmix64(&seed);
}

/* xoshiro256** 1.0 (Blackman, Vigna 2018). */
uint64_t
sampling_rng_next(struct sampling_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double
sampling_rng_uniform(struct sampling_rng *rng)
{
    /* 53 random bits k give (k + 1) / 2^53 in (0, 1]. */
    return (double)((sampling_rng_next(rng) >> 11) + 1) * 0x1.0p-53;
}

int64_t
sampling_gap_next(struct sampling_rng *rng, enum sampling_mode mode, uint64_t interval)
{
    double gap;

    if (mode == SAMPLING_MODE_FIXED) {
        gap = (double)interval;
    }
    else {
        /* Inverse CDF of the exponential distribution with mean interval.
         * Rounding up keeps every gap >= 1 byte; a point on a byte means
         * the allocation holding that byte is sampled. */
        gap = ceil(-log(sampling_rng_uniform(rng)) * (double)interval);
    }
    if (gap < 1) return 1;
    if (gap > (double)SAMPLING_GAP_MAX) return SAMPLING_GAP_MAX;
    return (int64_t)gap;
}

double
sampling_weight(enum sampling_mode mode, uint64_t interval, size_t size, uint64_t points)
{
    if (mode == SAMPLING_MODE_FIXED) {
        return (double)points * (double)interval;
    }
    /* size / (1 - exp(-size/interval)); expm1 keeps precision when
     * size << interval, where the weight tends to interval + size/2. */
    double p = -expm1(-(double)size / (double)interval);
    return (double)size / p;
}
