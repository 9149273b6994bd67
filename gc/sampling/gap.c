/* gap.c: see gap.h for the model. */
#include "gap.h"
#include "probe.h"

#include <math.h>
#include <stdbool.h>

/* splitmix64 (Steele, Lea, Flood 2014): spreads any seed, 0 included,
 * into a state xoshiro accepts (not all zero). */
static uint64_t
splitmix64(uint64_t *x)
{
    uint64_t z = (*x += PROBE_GOLDEN);
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* The ziggurat for exp(-x): 256 layers of equal area V; the base layer
 * holds the tail past R.  Built as zigset builds it in the paper, with
 * 2^56 for 2^32. */
#define ZIG_R 7.697117470131487
#define ZIG_V 3.949659822581572e-3
#define ZIG_SCALE 72057594037927936.0   /* 2^56 */

struct sampling_zig sampling_zig;
static bool zig_ready;

static void
zig_setup(void)
{
    struct sampling_zig *z = &sampling_zig;
    double x = ZIG_R, outer = x;
    double q = ZIG_V / exp(-x);
    z->layer[0].k = (uint64_t)((x / q) * ZIG_SCALE);
    z->layer[1].k = 0;
    z->layer[0].w = q / ZIG_SCALE;
    z->layer[SAMPLING_ZIG_LAYERS - 1].w = x / ZIG_SCALE;
    z->f[0] = 1.0;
    z->f[SAMPLING_ZIG_LAYERS - 1] = exp(-x);
    for (int i = SAMPLING_ZIG_LAYERS - 2; i >= 1; i--) {
        x = -log(ZIG_V / x + exp(-x));
        z->layer[i + 1].k = (uint64_t)((x / outer) * ZIG_SCALE);
        outer = x;
        z->f[i] = exp(-x);
        z->layer[i].w = x / ZIG_SCALE;
    }
    zig_ready = true;
}

double
sampling_exp_slow(struct sampling_rng *rng, uint64_t r)
{
    for (;;) {
        unsigned i = (unsigned)(r & (SAMPLING_ZIG_LAYERS - 1));
        uint64_t j = r >> 8;
        if (j < sampling_zig.layer[i].k) return (double)j * sampling_zig.layer[i].w;
        /* the base layer's tail: past R, exp is memoryless */
        if (i == 0) return ZIG_R - log(sampling_rng_uniform(rng));
        /* the wedge between the layer's rectangle and the curve */
        double x = (double)j * sampling_zig.layer[i].w;
        double y = sampling_zig.f[i] + sampling_rng_uniform(rng) * (sampling_zig.f[i - 1] - sampling_zig.f[i]);
        if (y < exp(-x)) return x;
        r = sampling_rng_next(rng);
    }
}

void
sampling_rng_seed(struct sampling_rng *rng, uint64_t seed)
{
    if (!zig_ready) zig_setup();
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

uint64_t
sampling_poisson_points(struct sampling_rng *rng, uint64_t interval, uint64_t span, uint64_t *next)
{
    double mean = sampling_gap_mean(interval);
    /* q < 1 / interval: a span under STEPPED intervals has a mean under
     * STEPPED points, found without expm1 (the common case: a sample's
     * allocation is rarely more than a few intervals long) */
    double q = 0, mu = 0;
    bool stepped = span / SAMPLING_POINTS_STEPPED < interval;
    if (!stepped) {
        q = -expm1(-1.0 / mean);    /* a byte's chance to hold a point */
        mu = (double)span * q;
        stepped = mu < SAMPLING_POINTS_STEPPED;
    }
    if (stepped) {
        uint64_t points = 0, at = 0;
        for (;;) {
            uint64_t gap = (uint64_t)sampling_gap_poisson(rng, mean);
            if (gap > span - at) {
                *next = gap - (span - at);
                return points;
            }
            at += gap;
            points++;
        }
    }
    /* Box-Muller: one standard normal from two uniforms in (0, 1] */
    double z = sqrt(-2.0 * log(sampling_rng_uniform(rng))) * cos(6.283185307179586 * sampling_rng_uniform(rng));
    double k = floor(mu + sqrt(mu * (1.0 - q)) * z + 0.5);
    *next = (uint64_t)sampling_gap_poisson(rng, mean);
    if (!(k > 0)) return 0;
    return k >= (double)span ? span : (uint64_t)k;
}
