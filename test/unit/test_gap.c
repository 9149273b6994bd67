/*
 * test_gap.c: the generator, the gaps and the weights (gc/sampling/gap.c).
 *
 * Statistical checks use fixed seeds and state their bound: a mean within
 * 6 standard errors, and the Kolmogorov-Smirnov distance of the gaps from
 * the exponential distribution below the 0.1% critical value 1.95/sqrt(n).
 */
// links: gap.c
#include "check.h"
#include "gap.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static int
cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void
test_seeding(void)
{
    struct sampling_rng a, b, c;
    sampling_rng_seed(&a, 42);
    sampling_rng_seed(&b, 42);
    sampling_rng_seed(&c, 43);
    int same = 1, differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = sampling_rng_next(&a), y = sampling_rng_next(&b), z = sampling_rng_next(&c);
        same &= x == y;
        differ |= x != z;
    }
    CHECK(same, "one seed must give one sequence");
    CHECK(differ, "two seeds must give two sequences");

    struct sampling_rng zero;
    sampling_rng_seed(&zero, 0);
    CHECK(zero.s[0] | zero.s[1] | zero.s[2] | zero.s[3], "seed 0 must not give the all-zero state");
}

static void
test_uniform_range(void)
{
    struct sampling_rng rng;
    sampling_rng_seed(&rng, 7);
    double lo = 1, hi = 0, sum = 0;
    const int n = 1000000;
    for (int i = 0; i < n; i++) {
        double u = sampling_rng_uniform(&rng);
        if (u < lo) lo = u;
        if (u > hi) hi = u;
        sum += u;
    }
    CHECK(lo > 0 && hi <= 1, "uniform must be in (0, 1]: saw [%g, %g]", lo, hi);
    /* mean 1/2, sd of the mean sqrt(1/12/n) */
    double se = sqrt(1.0 / 12 / n);
    CHECK(fabs(sum / n - 0.5) < 6 * se, "uniform mean %g", sum / n);
}

/* The ziggurat's variates follow Exp(1): mean, variance, the KS distance
 * over many draws (which would show a wrong layer or wedge), and the
 * tail past the base layer (R = 7.697), which takes its own path. */
static void
test_exponential(void)
{
    struct sampling_rng rng;
    sampling_rng_seed(&rng, 99);
    enum { N = 2000000 };
    static double x[N];
    double sum = 0, sum2 = 0;
    long past_r = 0, past_12 = 0;
    for (int i = 0; i < N; i++) {
        x[i] = sampling_exp(&rng);
        sum += x[i];
        sum2 += x[i] * x[i];
        past_r += x[i] > 7.697117470131487;
        past_12 += x[i] > 12;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    CHECK(fabs(mean - 1) < 6 / sqrt((double)N), "Exp(1) mean %g", mean);
    /* the sample variance of Exp(1) has variance (mu4 - 1) / n = 8 / n */
    CHECK(fabs(var - 1) < 6 * sqrt(8.0 / N), "Exp(1) variance %g", var);
    double p = exp(-7.697117470131487);
    CHECK(fabs(past_r - N * p) < 6 * sqrt(N * p), "tail past R: %ld, expected %g", past_r, N * p);
    p = exp(-12.0);
    CHECK(fabs(past_12 - N * p) < 6 * sqrt(N * p) + 1, "tail past 12: %ld, expected %g", past_12, N * p);

    qsort(x, N, sizeof(double), cmp_double);
    double d = 0;
    for (int i = 0; i < N; i++) {
        double cdf = -expm1(-x[i]);
        double lo = cdf - (double)i / N, hi = (double)(i + 1) / N - cdf;
        if (lo > d) d = lo;
        if (hi > d) d = hi;
    }
    double critical = 1.95 / sqrt((double)N);
    CHECK(d < critical, "Exp(1) KS distance %g >= %g", d, critical);
}

/* Gaps with mean `interval` follow the exponential distribution. */
static void
test_poisson_gaps(uint64_t interval, uint64_t seed)
{
    struct sampling_rng rng;
    sampling_rng_seed(&rng, seed);
    enum { N = 200000 };
    static double gaps[N];
    double sum = 0;
    for (int i = 0; i < N; i++) {
        gaps[i] = (double)sampling_gap_next(&rng, SAMPLING_MODE_POISSON, interval);
        sum += gaps[i];
    }
    /* ceil() adds 1/2 byte on average (exactly: E[ceil(X)] for X ~ Exp(mean m)
     * is 1/(1 - exp(-1/m))); the standard deviation of an exponential is its mean. */
    double expected = 1.0 / -expm1(-1.0 / (double)interval);
    double se = expected / sqrt((double)N);
    CHECK(fabs(sum / N - expected) < 6 * se,
          "interval %llu: mean gap %g, expected %g +- %g", (unsigned long long)interval, sum / N, expected, 6 * se);

    /* KS distance against the CDF of ceil(Exp(interval)): P(G <= g) = 1 - exp(-g/interval)
     * at integer g; compare just after each step. */
    qsort(gaps, N, sizeof(double), cmp_double);
    double d = 0;
    for (int i = 0; i < N; i++) {
        double g = gaps[i];
        /* empirical CDF at g (all ties included) */
        int j = i;
        while (j + 1 < N && gaps[j + 1] == g) j++;
        double emp = (double)(j + 1) / N;
        double emp_before = (double)i / N;
        double cdf = -expm1(-g / (double)interval);
        double cdf_before = -expm1(-(g - 1) / (double)interval);
        if (fabs(emp - cdf) > d) d = fabs(emp - cdf);
        if (fabs(emp_before - cdf_before) > d) d = fabs(emp_before - cdf_before);
        i = j;
    }
    double critical = 1.95 / sqrt((double)N);
    CHECK(d < critical, "interval %llu: KS distance %g >= %g", (unsigned long long)interval, d, critical);
}

static void
test_fixed_and_edges(void)
{
    struct sampling_rng rng;
    sampling_rng_seed(&rng, 1);
    CHECK(sampling_gap_next(&rng, SAMPLING_MODE_FIXED, 4096) == 4096, "fixed gap is the interval");
    CHECK(sampling_gap_next(&rng, SAMPLING_MODE_FIXED, 1) == 1, "fixed interval 1");
    int64_t min = INT64_MAX, max = 0;
    for (int i = 0; i < 100000; i++) {
        int64_t g = sampling_gap_next(&rng, SAMPLING_MODE_POISSON, 1);
        if (g < min) min = g;
        if (g > max) max = g;
    }
    CHECK(min >= 1, "poisson gaps are at least one byte (saw %lld)", (long long)min);
    /* huge intervals never overflow and never go past the cap */
    int ok = 1;
    for (int i = 0; i < 100000; i++) {
        int64_t g = sampling_gap_next(&rng, SAMPLING_MODE_POISSON, UINT64_MAX);
        ok &= g >= 1 && g <= SAMPLING_GAP_MAX;
    }
    CHECK(ok, "huge interval stays within [1, SAMPLING_GAP_MAX]");
    CHECK(sampling_gap_next(&rng, SAMPLING_MODE_FIXED, UINT64_MAX) == SAMPLING_GAP_MAX, "fixed huge interval is capped");
}

static void
test_weights(void)
{
    CHECK(sampling_weight(SAMPLING_MODE_FIXED, 4096, 40, 1) == 4096, "fixed weight");
    CHECK(sampling_weight(SAMPLING_MODE_FIXED, 1, 40, 40) == 40, "fixed interval 1: every byte");
    double w = sampling_weight(SAMPLING_MODE_POISSON, 524288, 40, 1);
    CHECK(fabs(w - (524288 + 20)) < 1, "poisson weight for size << interval is interval + size/2: %g", w);
    w = sampling_weight(SAMPLING_MODE_POISSON, 1, 40, 40);
    CHECK(fabs(w - 40) < 1e-9, "poisson weight for size >> interval is size: %g", w);

    /* Unbiasedness, end to end: a stream of 40-byte allocations, sampled
     * when a Poisson point falls in it; the weighted sum estimates the bytes. */
    struct sampling_rng rng;
    sampling_rng_seed(&rng, 2024);
    const uint64_t interval = 4096, size = 40, allocations = 20000000;
    int64_t countdown = sampling_gap_next(&rng, SAMPLING_MODE_POISSON, interval);
    double estimate = 0;
    uint64_t samples = 0;
    for (uint64_t i = 0; i < allocations; i++) {
        countdown -= (int64_t)size;
        if (countdown <= 0) {
            uint64_t points = 0;
            while (countdown <= 0) { countdown += sampling_gap_next(&rng, SAMPLING_MODE_POISSON, interval); points++; }
            estimate += sampling_weight(SAMPLING_MODE_POISSON, interval, size, points);
            samples++;
        }
    }
    double truth = (double)(allocations * size);
    /* samples ~ Binomial(allocations, p): relative sd of the estimate sqrt((1-p)/(n p)) */
    double p = -expm1(-(double)size / interval);
    double rel_sd = sqrt((1 - p) / (allocations * p));
    CHECK(fabs(estimate / truth - 1) < 6 * rel_sd, "poisson estimate %g of %g (bound %g)", estimate, truth, 6 * rel_sd);
}

/* The points in a span, in one step (gap.h, sampling_poisson_points):
 * below SAMPLING_POINTS_STEPPED the same points (and the same next
 * countdown) as gaps drawn one by one; above, counts whose mean and
 * variance are the binomial's, span q and span q (1 - q). */
static void
test_poisson_points(void)
{
    struct sampling_rng a, b;
    sampling_rng_seed(&a, 21);
    sampling_rng_seed(&b, 21);
    int same = 1;
    for (int i = 0; i < 10000 && same; i++) {
        uint64_t span = (uint64_t)(i % 97) * 1000, next;
        uint64_t points = sampling_poisson_points(&a, 4096, span, &next);
        /* gap by gap, as the old loop: the first point at 0, the others a gap further */
        uint64_t at = 0, n = 0;
        for (;;) {
            uint64_t gap = (uint64_t)sampling_gap_poisson(&b, 4096.0);
            if (at + gap > span) { at += gap; break; }
            at += gap;
            n++;
        }
        same = points == n && next == at - span;
    }
    CHECK(same, "small spans: the gaps one by one");
    const uint64_t intervals[] = { 1, 1000 };
    for (int k = 0; k < 2; k++) {
        uint64_t interval = intervals[k], span = (uint64_t)1 << 30;
        double q = -expm1(-1.0 / (double)interval), mu = (double)span * q, var = mu * (1 - q);
        const int n = 2000;
        double sum = 0, sum2 = 0;
        uint64_t next = 0, min_next = UINT64_MAX;
        for (int i = 0; i < n; i++) {
            double x = (double)sampling_poisson_points(&a, interval, span, &next);
            sum += x;
            sum2 += x * x;
            if (next < min_next) min_next = next;
        }
        double mean = sum / n, v = sum2 / n - mean * mean;
        CHECK(fabs(mean - mu) < 6 * sqrt(var / n), "interval %llu: mean %.1f of Binomial mean %.1f",
              (unsigned long long)interval, mean, mu);
        CHECK(fabs(v / var - 1) < 6 * sqrt(2.0 / n), "interval %llu: variance %.1f of %.1f", (unsigned long long)interval, v, var);
        CHECK(min_next >= 1, "the next countdown is a gap, at least 1");
    }
    uint64_t next;
    uint64_t tib = sampling_poisson_points(&a, 1, (uint64_t)1 << 40, &next);
    CHECK(tib > 0 && tib <= (uint64_t)1 << 40, "a TiB at interval 1: one draw (%llu)", (unsigned long long)tib);
}

int
main(void)
{
    test_seeding();
    test_uniform_range();
    test_exponential();
    test_poisson_gaps(1, 11);
    test_poisson_gaps(40, 12);
    test_poisson_gaps(4096, 13);
    test_poisson_gaps(524288, 14);
    test_fixed_and_edges();
    test_weights();
    test_poisson_points();
    return check_summary();
}
