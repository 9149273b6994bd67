/*
 * test_sample_point_count.c: a property driver for the sample point on an
 * allocation count (Ruby 4.0: sample_point_limit, sample_point_reached)
 * against a mock of 4.0's per-cache counts.
 *
 * Five heaps (slot sizes 40 .. 640) each have a count, its limit and a
 * sample point, driven by a random stream of operations as patches/4.0
 * runs them: allocate (count, and at the limit add the count to the heap,
 * ask whether the slot is a sample, set the next limit), add the count to
 * the heap elsewhere (GC.stat, the sweep start: the limit moves down by
 * the count), stop, start with a new mode and interval.  After every
 * operation:
 *
 *   limit         count < limit <= step (1024): the heap totals are added
 *                 at least as often as without the sampler
 *   fixed mode    the next point is exactly at (points + 1) * interval:
 *                 allocated + (limit - count) * slot + countdown
 *                 == (points + 1) * interval, so points == floor(allocated
 *                 / interval) always
 *   samples       in fixed mode an allocation is sampled iff its bytes reach
 *                 a multiple of the interval, with that many points
 *   poisson       the samples, weighted as records are (sampling_weight),
 *                 estimate the bytes allocated without bias (a bound of 5
 *                 standard deviations over the whole run)
 *
 * Usage: test_sample_point_count [iterations [seed]].
 */
// links: sample_point.c gap.c
#include "check.h"
#include "sample_point.h"

#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { HEAPS = 5, STEP = 1024 };

struct mock_heap {
    size_t slot_size;
    size_t count, limit;                /* the cache's count and its limit */
    struct sample_point sp;
    uint64_t allocated_bytes, points;   /* since start */
};

static struct sample_point_config config;
static struct mock_heap heaps[HEAPS];
static bool enabled;
static struct sampling_rng stream;
/* Poisson runs, summed: bytes allocated, their estimate from the samples
 * and its variance (Horvitz-Thompson: w * (w - size) a sample) */
static double poisson_bytes, poisson_estimate, poisson_variance;

static void
start(uint32_t r)
{
    static const uint64_t intervals[] = { 1, 7, 40, 41, 64, 80, 100, 160, 320, 640, 1000, 4096, 65536, 524288 };
    config.mode = (r & 1) ? SAMPLING_MODE_FIXED : SAMPLING_MODE_POISSON;
    config.interval = (r >> 1) % 4 == 0 ? 1 + (r >> 3) % 5000 : intervals[(r >> 3) % (sizeof(intervals) / sizeof(intervals[0]))];
    sampling_rng_seed(&config.rng, r);
    enabled = true;
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &heaps[k];
        h->allocated_bytes = h->points = 0;
        sample_point_reset(&h->sp, &config);
        h->limit = sample_point_limit(&h->sp, h->count, STEP, h->slot_size);
    }
}

static void
stop(void)
{
    if (!enabled) return;
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &heaps[k];
        if (config.mode == SAMPLING_MODE_POISSON) poisson_bytes += (double)h->allocated_bytes;
        h->limit = STEP;
    }
    enabled = false;
}

/* ractor_cache_allocate_slot's count, as patched */
static int
allocate(struct mock_heap *h)
{
    h->count++;
    uint64_t before = h->allocated_bytes;
    if (enabled) h->allocated_bytes += h->slot_size;
    uint64_t points = 0;
    if (h->count >= h->limit) {
        h->count = 0;
        if (enabled) {
            points = sample_point_reached(&h->sp, &config);
            h->limit = sample_point_limit(&h->sp, h->count, STEP, h->slot_size);
        }
        else {
            h->limit = STEP;
        }
    }
    if (!enabled) return 1;
    h->points += points;
    if (points && config.mode == SAMPLING_MODE_POISSON) {
        double w = sampling_weight(SAMPLING_MODE_POISSON, config.interval, h->slot_size, points);
        poisson_estimate += w;
        poisson_variance += w * (w - (double)h->slot_size);
    }
    if (config.mode == SAMPLING_MODE_FIXED) {
        uint64_t crossed = h->allocated_bytes / config.interval - before / config.interval;
        REQUIRE(points == crossed, "heap %zu: bytes %" PRIu64 "->%" PRIu64 " interval %" PRIu64 ": points %" PRIu64
                " != crossed %" PRIu64, h->slot_size, before, h->allocated_bytes, config.interval, points, crossed);
    }
    return 1;
}

/* ractor_cache_flush_count, gc_ractor_newobj_cache_clear: GC_HOOK_ALLOCATED_FLUSH */
static void
flush(struct mock_heap *h)
{
    h->limit -= h->count;
    h->count = 0;
}

static int
check_invariants(void)
{
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &heaps[k];
        REQUIRE(h->count < h->limit && h->limit <= STEP, "heap %zu: count %zu, limit %zu", h->slot_size, h->count, h->limit);
        if (!enabled) continue;
        REQUIRE(h->sp.countdown > -(int64_t)h->slot_size, "countdown %" PRId64, h->sp.countdown);
        if (config.mode == SAMPLING_MODE_FIXED) {
            uint64_t next_point = h->allocated_bytes + (h->limit - h->count) * h->slot_size + (uint64_t)h->sp.countdown;
            REQUIRE(next_point == (h->points + 1) * config.interval,
                    "heap %zu interval %" PRIu64 ": next point %" PRIu64 " != %" PRIu64, h->slot_size,
                    config.interval, next_point, (h->points + 1) * config.interval);
            REQUIRE(h->points == h->allocated_bytes / config.interval, "points %" PRIu64 " != floor(%" PRIu64 "/%" PRIu64 ")",
                    h->points, h->allocated_bytes, config.interval);
        }
    }
    return 1;
}

static int
run(uint64_t iterations)
{
    for (int k = 0; k < HEAPS; k++) {
        memset(&heaps[k], 0, sizeof(heaps[k]));
        heaps[k].slot_size = (size_t)40 << k;
        heaps[k].limit = STEP;
    }
    enabled = false;
    start((uint32_t)(sampling_rng_next(&stream) >> 32));
    for (uint64_t it = 0; it < iterations; it++) {
        uint32_t op = (uint32_t)(sampling_rng_next(&stream) >> 32);
        struct mock_heap *h = &heaps[(op >> 4) % HEAPS];
        uint32_t r = op >> 7;
        switch (op % 16) {
          case 0: flush(h); break;
          case 1: for (int k = 0; k < HEAPS; k++) flush(&heaps[k]); break;
          case 2: if (r % 8 == 0) stop(); break;
          case 3: if (r % 4 == 0) { stop(); start(r); } else if (!enabled) start(r); break;
          default: {
            int n = 1 + (int)(r % 3000);
            for (int i = 0; i < n; i++) if (!allocate(h)) return 0;
          }
        }
        if (!check_invariants()) {
            fprintf(stderr, "after operation %" PRIu64 " (op %u)\n", it, op % 16);
            return 0;
        }
    }
    stop();
    check_passed++;
    return 1;
}

int
main(int argc, char **argv)
{
    uint64_t iterations = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261202;
    for (uint64_t s = 0; s < 8; s++) {
        sampling_rng_seed(&stream, seed + s);
        if (!run(iterations / 8)) fprintf(stderr, "stream seed %" PRIu64 " failed\n", seed + s);
    }
    double sd = sqrt(poisson_variance);
    CHECK(fabs(poisson_estimate - poisson_bytes) < 5 * sd,
          "poisson: %.0f bytes estimated, %.0f allocated (sd %.0f)", poisson_estimate, poisson_bytes, sd);
    printf("poisson: %.0f bytes estimated, %.0f allocated (sd %.0f)\n", poisson_estimate, poisson_bytes, sd);
    return check_summary();
}
