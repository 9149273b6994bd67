/* gap.c: see gap.h for the model. */
#include "gap.h"

#include <math.h>

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
