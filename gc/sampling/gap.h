/*
 * gap.h: where the next sample point falls, and what a sample weighs.
 *
 * Model.  Allocation on one heap is a stream of bytes (each object costs
 * its slot size).  Sample points are marked on that stream:
 *
 *   fixed    a point every `interval` bytes: at interval, 2*interval, ...
 *   poisson  a Poisson process of rate 1/interval: the gaps between points
 *            are independent exponential draws with mean `interval`, so
 *            every byte has the same chance to carry a point and the union
 *            of the streams of several heaps is again Poisson.
 *
 * The allocation whose bytes contain one or more points is sampled once;
 * `points` is how many it contains.  Its weight estimates the bytes it
 * stands for:
 *
 *   fixed    points * interval.  Summed over samples this is exactly
 *            interval * floor(bytes / interval), the stream's bytes up to
 *            the last point.
 *   poisson  size / (1 - exp(-size / interval)) (as Go's heap profile and
 *            tcmalloc do): an allocation of `size` bytes holds at least one
 *            point with probability p = 1 - exp(-size/interval), so
 *            weighting each sample by size/p is unbiased (Horvitz-Thompson).
 *
 *   P(sampled) for a 40-byte slot:  interval 512 KiB -> 7.6e-5,
 *   4 KiB -> 0.0097, 40 B -> 0.63, 1 B -> 1 - 4e-18.
 *
 * The generator is xoshiro256** seeded through splitmix64: small, fast,
 * and the same seed gives the same points on every machine.
 *
 * Pure C; no Ruby, no locking (each caller owns its generator).
 */
#ifndef SAMPLING_GAP_H
#define SAMPLING_GAP_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

enum sampling_mode {
    SAMPLING_MODE_POISSON = 0,
    SAMPLING_MODE_FIXED = 1
};

/* The largest gap ever drawn: far beyond any heap, small enough that
 * countdowns (int64_t) never overflow when slot sizes are subtracted. */
#define SAMPLING_GAP_MAX ((int64_t)1 << 60)

struct sampling_rng {
    uint64_t s[4];
};

/* Seeds the generator; every seed, 0 included, gives a valid state.  The
 * first call also builds the ziggurat tables (single-threaded: the sampler
 * seeds under the VM lock). */
void sampling_rng_seed(struct sampling_rng *rng, uint64_t seed);

/* The next 64 random bits: xoshiro256** 1.0 (Blackman, Vigna 2018).
 * Inline, with the two below: they run on every Poisson sample. */
static inline uint64_t
sampling_rotl(uint64_t x, int k)
{
    return (x << k) | (x >> (64 - k));
}

static inline uint64_t
sampling_rng_next(struct sampling_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t result = sampling_rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = sampling_rotl(s[3], 45);
    return result;
}

/* A uniform double in (0, 1]: never 0, so -log(u) is finite.  53 random
 * bits k give (k + 1) / 2^53. */
static inline double
sampling_rng_uniform(struct sampling_rng *rng)
{
    return (double)((sampling_rng_next(rng) >> 11) + 1) * 0x1.0p-53;
}

/* Exponential variates by the ziggurat method (Marsaglia, Tsang 2000,
 * "The Ziggurat Method for Generating Random Variables", 256 layers), with
 * 64-bit draws: the low 8 bits pick a layer, the high 56 the point in it,
 * so the two never share bits.  About 99% of draws end in the inline test
 * below (a multiply and a compare, no logarithm); the rest, and the tail
 * past the base layer, take sampling_exp_slow.  The tables are built the
 * first time a generator is seeded. */
#define SAMPLING_ZIG_LAYERS 256

/* A layer's k and w side by side: the inline test reads one cache line. */
struct sampling_zig_layer {
    uint64_t k;     /* x[i-1] / x[i], scaled by 2^56: below it, inside */
    double w;       /* x[i] / 2^56 */
};
struct __attribute__((aligned(64))) sampling_zig {
    struct sampling_zig_layer layer[SAMPLING_ZIG_LAYERS];
    double f[SAMPLING_ZIG_LAYERS];      /* exp(-x[i]) */
};
extern struct sampling_zig sampling_zig;

/* The rare case of sampling_exp, for the draw r. */
double sampling_exp_slow(struct sampling_rng *rng, uint64_t r);

/* An exponential variate with mean 1. */
static inline double
sampling_exp(struct sampling_rng *rng)
{
    uint64_t r = sampling_rng_next(rng);
    unsigned i = (unsigned)(r & (SAMPLING_ZIG_LAYERS - 1));
    uint64_t j = r >> 8;
    const struct sampling_zig_layer *l = &sampling_zig.layer[i];
    if (__builtin_expect(j < l->k, 1)) return (double)(int64_t)j * l->w;
    return sampling_exp_slow(rng, r);
}

/* An interval as the mean of the exponential draws (one conversion). */
static inline double
sampling_gap_mean(uint64_t interval)
{
    return interval > (uint64_t)INT64_MAX ? (double)interval : (double)(int64_t)interval;
}

/* A Poisson gap: ceil(E * mean), at least 1, at most SAMPLING_GAP_MAX. */
static inline int64_t
sampling_gap_poisson(struct sampling_rng *rng, double mean)
{
    double x = sampling_exp(rng) * mean;
    if (!(x < (double)SAMPLING_GAP_MAX)) return SAMPLING_GAP_MAX;
    /* floor + 1 (x >= 0: truncation is floor): the ceiling, and at least
     * 1, except when x is a whole number, which has probability 0 */
    return (int64_t)x + 1;
}

/* Bytes from one point to the next, in [1, SAMPLING_GAP_MAX].
 * fixed: interval; poisson: ceil(E * interval) for E exponential with
 * mean 1.  Rounding up keeps every gap >= 1 byte; a point on a byte means
 * the allocation holding that byte is sampled. */
static inline int64_t
sampling_gap_next(struct sampling_rng *rng, enum sampling_mode mode, uint64_t interval)
{
    if (mode == SAMPLING_MODE_FIXED) return interval > (uint64_t)SAMPLING_GAP_MAX ? SAMPLING_GAP_MAX : (int64_t)interval;
    return sampling_gap_poisson(rng, sampling_gap_mean(interval));
}

/* The points in a span of `span` bytes after a point (Poisson mode), in
 * one step however long the span, and *next, the bytes from the span's
 * end to the point after them (a countdown).
 *
 * Why one step works.  A gap is ceil(E * interval) with E exponential:
 * P(gap = k) = exp(-(k-1)/I) - exp(-k/I) = (1 - q)^(k-1) q, with
 * q = 1 - exp(-1/I): geometric.  Geometric gaps are Bernoulli trials:
 * each byte holds a point with probability q, independently of every
 * other.  So the points in `span` bytes are Binomial(span, q), and
 * (memoryless) the distance from the span's end to the next point is a
 * fresh gap, whatever happened inside.  While the mean span * q is small
 * (under SAMPLING_POINTS_STEPPED) the gaps are drawn one by one, as
 * before, which is exact and gives the same points for the same seed;
 * past it, the count is drawn from the normal approximation of the
 * binomial (mean span q, variance span q (1 - q), rounded and clipped
 * to [0, span]): an allocation holding a million points costs one draw,
 * not a million.  (Its error, a few percent of a standard deviation at
 * mean 256 and falling as 1/sqrt(mean), changes no estimate: a Poisson
 * sample's weight does not depend on its points, which only stats'
 * malloc_points counts.) */
#define SAMPLING_POINTS_STEPPED 256
uint64_t sampling_poisson_points(struct sampling_rng *rng, uint64_t interval, uint64_t span, uint64_t *next);

/* The estimated bytes a sample stands for (see the model above).  `points`
 * >= 1 is how many points the sampled allocation of `size` bytes held. */
double sampling_weight(enum sampling_mode mode, uint64_t interval, size_t size, uint64_t points);

#endif /* SAMPLING_GAP_H */
