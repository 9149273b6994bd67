/*
 * test_sample_point.c: a property driver for the sample point
 * (gc/sampling/sample_point.c) against mock free lists.
 *
 * Five heaps (slot sizes 40 .. 640) each have a page pool, a cache list and
 * a sample point, driven by a random stream of operations: take a page,
 * allocate (the fast path, or the slow path: a due sample, else a new page
 * and a retry, as newobj_cache_miss does), clear the cache (GC), free
 * objects, stop, start with a new mode and interval, clear counters.  After
 * every operation:
 *
 *   conservation  every slot is in exactly one place (pool, cache list,
 *                 tail or allocated); no slot is lost or handed out twice
 *   countdown     countdown > 0; with a tail, countdown <= slot size
 *   fixed mode    the next point is exactly at (points + 1) * interval from
 *                 the bytes allocated since start:
 *                 allocated + listed * slot + countdown == (points+1)*interval
 *                 so points == floor(allocated / interval) always
 *   samples       in fixed mode an allocation is sampled iff its bytes reach
 *                 a multiple of the interval (>=), with that many points
 *
 * Usage: test_sample_point [iterations [seed]]; make check runs a fixed
 * budget.  Built with -DSAMPLE_POINT_FUZZER it is a libFuzzer target that
 * reads the operation stream from the fuzzer's input instead.
 */
// links: sample_point.c gap.c
#include "check.h"
#include "sample_point.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

enum { HEAPS = 5, SLOTS = 700 };
enum where { IN_POOL, IN_LIST, ALLOCATED };

struct mock_heap {
    size_t slot_size;
    struct sample_point_slot slots[SLOTS];
    enum where where[SLOTS];
    struct sample_point_slot *list;     /* the cache list */
    struct sample_point sp;
    uint64_t allocated_bytes;           /* since start */
    uint64_t points;                    /* since start */
    uint64_t samples;
};

struct mock {
    struct mock_heap heaps[HEAPS];
    struct sample_point_config config;
    bool enabled;
    /* the operation stream */
    const uint8_t *bytes;
    size_t nbytes, pos;
    struct sampling_rng stream;
};

static uint32_t
next_op(struct mock *m)
{
    if (m->bytes) {
        if (m->pos + 4 > m->nbytes) return UINT32_MAX;
        uint32_t v;
        memcpy(&v, m->bytes + m->pos, 4);
        m->pos += 4;
        return v;
    }
    return (uint32_t)(sampling_rng_next(&m->stream) >> 32);
}

static size_t
slot_index(struct mock_heap *h, struct sample_point_slot *s)
{
    return (size_t)(s - h->slots);
}

/* ractor_cache_set_page: a page's free slots become the cache list. */
static void
take_page(struct mock *m, struct mock_heap *h, uint32_t r)
{
    size_t count = 0;
    struct sample_point_slot *list = NULL;
    size_t want = 1 + r % 97;
    for (size_t i = (r >> 8) % SLOTS, n = 0; n < SLOTS && count < want; n++, i = (i + 1) % SLOTS) {
        if (h->where[i] != IN_POOL) continue;
        h->slots[i].next = list;
        list = &h->slots[i];
        h->where[i] = IN_LIST;
        count++;
    }
    h->list = list;
    if (m->enabled && count) sample_point_place(&h->sp, &h->list, count, h->slot_size);
}

/* Checks the allocation of one slot against the model; 0 on failure. */
static int
allocated(struct mock *m, struct mock_heap *h, struct sample_point_slot *s, bool sampled, uint64_t points)
{
    size_t i = slot_index(h, s);
    REQUIRE(i < SLOTS && h->where[i] == IN_LIST, "allocated slot %zu was not free on the list", i);
    h->where[i] = ALLOCATED;
    if (!m->enabled) return 1;
    uint64_t before = h->allocated_bytes;
    h->allocated_bytes += h->slot_size;
    if (m->config.mode == SAMPLING_MODE_FIXED) {
        uint64_t crossed = h->allocated_bytes / m->config.interval - before / m->config.interval;
        REQUIRE(sampled == (crossed > 0), "heap %zu: bytes %" PRIu64 "->%" PRIu64 " interval %" PRIu64 ": sampled %d",
                h->slot_size, before, h->allocated_bytes, m->config.interval, sampled);
        REQUIRE(!sampled || points == crossed, "points %" PRIu64 " != crossed %" PRIu64, points, crossed);
    }
    if (sampled) {
        REQUIRE(points >= 1, "a sample holds at least one point");
        h->points += points;
        h->samples++;
    }
    return 1;
}

/* newobj_alloc with newobj_cache_miss, as patched. */
static int
allocate(struct mock *m, struct mock_heap *h, uint32_t r)
{
    if (h->list) {
        struct sample_point_slot *s = h->list;
        h->list = s->next;
        return allocated(m, h, s, false, 0);
    }
    for (int attempt = 0; attempt < 2; attempt++) {
        if (m->enabled && sample_point_due(&h->sp, &h->list)) {
            uint64_t points = 0;
            struct sample_point_slot *s = sample_point_take(&h->sp, &h->list, h->slot_size, &m->config, &points);
            return allocated(m, h, s, true, points);
        }
        if (attempt == 0) {
            take_page(m, h, r);
            if (h->list) {
                struct sample_point_slot *s = h->list;
                h->list = s->next;
                return allocated(m, h, s, false, 0);
            }
        }
    }
    return 1; /* the pool is empty: the real GC would collect; free_some will */
}

/* gc_ractor_newobj_cache_clear: the list (and any tail) goes back to the pool. */
static void
clear_cache(struct mock *m, struct mock_heap *h)
{
    if (m->enabled) sample_point_rejoin(&h->sp, &h->list, h->slot_size);
    for (struct sample_point_slot *s = h->list; s; s = s->next) h->where[slot_index(h, s)] = IN_POOL;
    h->list = NULL;
}

static void
free_some(struct mock_heap *h, uint32_t r)
{
    for (size_t i = 0; i < SLOTS; i++) {
        if (h->where[i] == ALLOCATED && (r % 3 == 0 || ((i * 2654435761u) ^ r) % 4 == 0)) h->where[i] = IN_POOL;
    }
}

static void
start(struct mock *m, uint32_t r)
{
    static const uint64_t intervals[] = { 1, 7, 40, 41, 64, 80, 100, 160, 320, 640, 1000, 4096, 65536, 524288 };
    m->config.mode = (r & 1) ? SAMPLING_MODE_FIXED : SAMPLING_MODE_POISSON;
    m->config.interval = (r >> 1) % 4 == 0 ? 1 + (r >> 3) % 5000 : intervals[(r >> 3) % (sizeof(intervals) / sizeof(intervals[0]))];
    sampling_rng_seed(&m->config.rng, r);
    m->enabled = true;
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &m->heaps[k];
        h->allocated_bytes = h->points = h->samples = 0;
        sample_point_reset(&h->sp, &m->config);
        /* start places points in the lists the caches already hold */
        if (h->list) sample_point_place(&h->sp, &h->list, sample_point_list_length(h->list), h->slot_size);
    }
}

static void
stop(struct mock *m)
{
    if (!m->enabled) return;
    for (int k = 0; k < HEAPS; k++) sample_point_rejoin(&m->heaps[k].sp, &m->heaps[k].list, m->heaps[k].slot_size);
    m->enabled = false;
}

static int
check_invariants(struct mock *m)
{
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &m->heaps[k];
        static unsigned char seen[SLOTS];
        memset(seen, 0, sizeof(seen));
        size_t listed = 0, tailed = 0;
        for (struct sample_point_slot *s = h->list; s; s = s->next) {
            size_t i = slot_index(h, s);
            REQUIRE(i < SLOTS && h->where[i] == IN_LIST && !seen[i], "heap %zu: bad list slot %zu", h->slot_size, i);
            seen[i] = 1;
            listed++;
        }
        if (m->enabled) {
            for (struct sample_point_slot *s = h->sp.tail; s; s = s->next) {
                size_t i = slot_index(h, s);
                REQUIRE(i < SLOTS && h->where[i] == IN_LIST && !seen[i], "heap %zu: bad tail slot %zu", h->slot_size, i);
                seen[i] = 1;
                tailed++;
            }
            REQUIRE(tailed == h->sp.tail_count, "tail_count %zu, tail holds %zu", h->sp.tail_count, tailed);
        }
        for (size_t i = 0; i < SLOTS; i++) {
            REQUIRE((h->where[i] == IN_LIST) == (seen[i] != 0), "heap %zu: slot %zu lost (where %d)", h->slot_size, i, h->where[i]);
        }
        if (!m->enabled) continue;
        REQUIRE(h->sp.countdown > 0, "countdown %" PRId64 " must stay positive", h->sp.countdown);
        REQUIRE(!h->sp.tail || h->sp.countdown <= (int64_t)h->slot_size,
                "with a tail the countdown %" PRId64 " is within one slot (%zu)", h->sp.countdown, h->slot_size);
        if (m->config.mode == SAMPLING_MODE_FIXED) {
            uint64_t next_point = h->allocated_bytes + listed * h->slot_size + (uint64_t)h->sp.countdown;
            REQUIRE(next_point == (h->points + 1) * m->config.interval,
                    "heap %zu interval %" PRIu64 ": next point %" PRIu64 " != %" PRIu64, h->slot_size,
                    m->config.interval, next_point, (h->points + 1) * m->config.interval);
            REQUIRE(h->points == h->allocated_bytes / m->config.interval, "points %" PRIu64 " != floor(%" PRIu64 "/%" PRIu64 ")",
                    h->points, h->allocated_bytes, m->config.interval);
        }
    }
    return 1;
}

static int
run(struct mock *m, uint64_t iterations)
{
    for (int k = 0; k < HEAPS; k++) {
        struct mock_heap *h = &m->heaps[k];
        memset(h, 0, sizeof(*h));
        h->slot_size = (size_t)40 << k;
    }
    start(m, next_op(m));
    for (uint64_t it = 0; it < iterations; it++) {
        uint32_t op = next_op(m);
        if (op == UINT32_MAX && m->bytes) break;
        struct mock_heap *h = &m->heaps[(op >> 4) % HEAPS];
        uint32_t r = op >> 7;
        switch (op % 16) {
          case 0: clear_cache(m, h); break;
          case 1: for (int k = 0; k < HEAPS; k++) clear_cache(m, &m->heaps[k]); free_some(h, r); break;
          case 2: if (r % 8 == 0) { stop(m); } break;
          case 3: if (r % 4 == 0) { stop(m); start(m, r); } else if (!m->enabled) start(m, r); break;
          default: {
            int n = 1 + (int)(r % 50);
            for (int i = 0; i < n; i++) if (!allocate(m, h, r + i)) return 0;
          }
        }
        if (!check_invariants(m)) {
            fprintf(stderr, "after operation %" PRIu64 " (op %u)\n", it, op % 16);
            return 0;
        }
    }
    check_passed++;
    return 1;
}

#ifdef SAMPLE_POINT_FUZZER
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct mock m;
    m.bytes = data;
    m.nbytes = size;
    m.pos = 0;
    if (!run(&m, UINT64_MAX)) abort();
    return 0;
}
#else
int
main(int argc, char **argv)
{
    uint64_t iterations = argc > 1 ? strtoull(argv[1], NULL, 10) : 200000;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 10) : 20261129;
    static struct mock m;
    /* several streams, so that each starts from a fresh state */
    for (uint64_t s = 0; s < 8; s++) {
        memset(&m, 0, sizeof(m));
        sampling_rng_seed(&m.stream, seed + s);
        if (!run(&m, iterations / 8)) fprintf(stderr, "stream seed %" PRIu64 " failed\n", seed + s);
    }
    uint64_t samples = 0;
    for (int k = 0; k < HEAPS; k++) samples += m.heaps[k].samples;
    printf("last stream: %" PRIu64 " samples\n", samples);
    return check_summary();
}
#endif
