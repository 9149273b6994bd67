/*
 * test_lifetimes.c: what records count into their sites over their lives
 * (records.h "Lifetimes", sites.h struct sampling_lifetimes), the live
 * estimate records keep, and the timeline and peak built from them
 * (timeline.h).
 */
// links: records.c sites.c refset.c gap.c timeline.c
#include "check.h"
#include "records.h"
#include "timeline.h"

#include <string.h>

/* the mock heap: state[obj / 8] is what the liveness walk answers
 * (0 dead, 1 marked, 2 marked old) */
static int state[64];

static int
liveness(uintptr_t obj, void *data)
{
    (void)data;
    return state[obj / 8];
}

static struct sampling_frame frames[3][1] = { { { 1000, 2000, 1 } }, { { 1008, 2000, 9 } }, { { 1016, 2000, 17 } } };

/* A sample of object `obj` at site `site` (0..2), allocated at GC `gc`
 * with the allocation clock at `clock`; kind malloc when `malloc`. */
static uint32_t
add(struct sampling_records *r, uintptr_t obj, int site, double weight, size_t gc, uint64_t clock, bool malloc)
{
    struct sampling_sample_in in = { .obj = obj, .site = { .klass = 3000, .frames = frames[site], .nframes = 1 },
                                     .sample = { .size = 40, .weight = weight, .allocated_gc = gc, .allocated_bytes = clock } };
    in.site.hash = sampling_stack_hash(frames[site], 1, false);
    if (malloc) {
        in.site.kind.type = SAMPLING_TYPE_MALLOC;
        in.sample.heap = SAMPLING_HEAP_MALLOC;
    }
    state[obj / 8] = 1;
    return sampling_records_add(r, &in);
}

static struct sampling_now
now(size_t gc, uint64_t clock)
{
    return (struct sampling_now){ gc, clock };
}

static void
test_buckets(void)
{
    CHECK(sampling_age_bucket(0) == 0 && sampling_age_bucket(1) == 1, "0 and 1 have buckets of their own");
    CHECK(sampling_age_bucket(2) == 2 && sampling_age_bucket(3) == 2, "2-3");
    CHECK(sampling_age_bucket(4) == 3 && sampling_age_bucket(7) == 3 && sampling_age_bucket(8) == 4, "4-7, 8-15");
    CHECK(sampling_age_bucket(16) == 5 && sampling_age_bucket((size_t)-1) == 5, "16 and beyond: the last");
}

static void
test_lives(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 100);
    /* short: dies in the first GC; promoted: old at GC 3, dead at GC 6;
     * long: old, alive; block: a malloc'd block freed between GCs */
    uint32_t shrt = add(&r, 8, 0, 100, 0, 1000, false);
    uint32_t prom = add(&r, 16, 1, 200, 0, 1000, false);
    uint32_t lng = add(&r, 24, 2, 400, 0, 1000, false);
    uint32_t blk = add(&r, 33, 2, 50, 0, 1000, true);
    CHECK(r.live_space[SAMPLING_LIVE_SLOT] == 700 && r.live_space[SAMPLING_LIVE_MALLOC] == 50, "live estimate: slots and malloc apart");

    state[1] = 0;
    sampling_records_check_liveness(&r, liveness, NULL, now(1, 5000), false);
    const struct sampling_site *s0 = r.items[shrt].site, *s1 = r.items[prom].site, *s2 = r.items[lng].site;
    CHECK(s0->life.died_space[0] == 100, "died in the first GC: bucket 0 (%.0f)", s0->life.died_space[0]);
    CHECK(s0->life.heaptime == 100.0 * 4000, "heaptime: weight x bytes lived (%.0f)", s0->life.heaptime);
    CHECK(s0->life.objtime == 100.0 / 40 * 4000, "objtime: objects (weight / size) x bytes lived (%.0f)", s0->life.objtime);
    CHECK(r.items[shrt].freed_bytes == 5000 && sampling_record_age_bytes(&r.items[shrt], 99999) == 4000,
          "a dead record's age in bytes stops at its death");
    CHECK(r.live_space[SAMPLING_LIVE_SLOT] == 600, "the estimate forgets the dead");

    state[2] = state[3] = 2;
    sampling_records_check_liveness(&r, liveness, NULL, now(3, 9000), false);
    CHECK(s1->life.promoted_space == 200 && s2->life.promoted_space == 400, "promotions counted once");
    sampling_records_check_liveness(&r, liveness, NULL, now(4, 9500), false);
    sampling_records_check_liveness(&r, liveness, NULL, now(5, 9800), true);
    CHECK(s1->life.promoted_space == 200, "and not again by later walks (%.0f)", s1->life.promoted_space);

    CHECK(sampling_records_end(&r, blk, r.items[blk].seq, now(5, 10000)), "the block is freed");
    CHECK(r.live_space[SAMPLING_LIVE_MALLOC] == 0 && r.live_count[SAMPLING_LIVE_MALLOC] == 0, "no malloc'd bytes live");
    const struct sampling_site *sb = r.items[blk].site;
    CHECK(sb != s2 && sb->life.heaptime == 50.0 * 9000, "the block's heaptime, at a site of its own (%.0f)", sb->life.heaptime);
    CHECK(sb->life.objtime == 50.0 / 40 * 9000, "and its objtime (%.0f)", sb->life.objtime);
    CHECK(sb->life.died_space[3] == 50, "freed at GC 5, having survived 4: bucket 4-7 (%.0f)", sb->life.died_space[3]);

    state[2] = 0;
    sampling_records_check_liveness(&r, liveness, NULL, now(6, 12000), true);
    /* allocated at GC 0, found dead at GC 6: survived 5 (1..5), bucket 4-7 */
    CHECK(s1->life.died_space[3] == 200, "survived 5 GCs: bucket 4-7 (%.0f)", s1->life.died_space[3]);
    CHECK(s1->life.promoted_dead_space == 200, "promoted, then died");
    double died = 0;
    for (int i = 0; i < SAMPLING_AGE_BUCKETS; i++) died += s2->life.died_space[i];
    CHECK(s2->life.promoted_dead_space == 0 && died == 0 && s2->life.heaptime == 0 && s2->life.objtime == 0,
          "the long-lived one is censored, not dead");
    CHECK(r.live_space[SAMPLING_LIVE_SLOT] == 400 && r.nlive == 1, "one left live");
    CHECK(sampling_record_age_bytes(&r.items[lng], 20000) == 19000, "a live record's age runs on (censored)");
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));

    /* folded sites keep their lives in other_life */
    sampling_records_clear(&r);
    CHECK(r.live_space[SAMPLING_LIVE_SLOT] == 0 && r.live_count[SAMPLING_LIVE_SLOT] == 0, "clear empties the estimate");
    sampling_records_free(&r);
}

/* records in use that were live at the peak */
static size_t
members(struct sampling_records *r)
{
    size_t n = 0;
    SAMPLING_RECORDS_FOREACH(r, rec) n += sampling_record_in_peak(r, rec);
    return n;
}

static void
test_timeline(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 100);
    struct sampling_timeline t;
    memset(&t, 0, sizeof(t));
    sampling_timeline_begin(&t);
    /* live sets: GC 1 one record (site 0), GC 2 three (sites 0, 1, 1) the
     * peak, GC 3 site 1 dies and site 2 comes, smaller */
    add(&r, 8, 0, 100, 0, 0, false);
    sampling_timeline_gc(&t, &r, now(1, 100), false);
    CHECK(t.peak.taken && t.peak.at.gc == 1 && members(&r) == 1, "the first GC is the first peak");
    add(&r, 16, 1, 100, 1, 100, false);
    add(&r, 24, 1, 100, 1, 100, false);
    sampling_timeline_gc(&t, &r, now(2, 300), true);
    state[2] = state[3] = 0;
    sampling_records_check_liveness(&r, liveness, NULL, now(3, 400), true);
    add(&r, 32, 2, 100, 3, 400, false);
    sampling_timeline_gc(&t, &r, now(3, 400), false);
    CHECK(t.n == 3 && t.rows[1].major && !t.rows[2].major, "a row per GC, minor or major");
    CHECK(sampling_row_live(&t.rows[1]) == 300 && t.rows[2].live_samples == 2, "rows hold the estimate and the samples");
    CHECK(t.peak.at.gc == 2 && sampling_row_live(&t.peak.at) == 300 && members(&r) == 3, "the peak is GC 2's (gc %llu)",
          (unsigned long long)t.peak.at.gc);
    int site1 = 0, site2 = 0;
    const struct sampling_site *later = r.items[r.live[r.nlive - 1].record].site;
    SAMPLING_RECORDS_FOREACH(&r, rec) {
        site1 += sampling_record_in_peak(&r, rec) && rec->site == r.items[1].site;
        site2 += sampling_record_in_peak(&r, rec) && rec->site == later;
    }
    CHECK(site1 == 2 && site2 == 0, "the peak holds the peak's sites (dead since), not the later one");

    /* members whose records go leave what the peak needs behind (their
     * site is folded meanwhile: the id stays) */
    uint64_t site1_id = r.items[1].site->id;
    sampling_records_set_max(&r, 2);
    CHECK(members(&r) + r.peak.nspill == 3, "evicted members spill (%zu members, %zu spilled)", members(&r), r.peak.nspill);
    double spilled = 0;
    for (size_t i = 0; i < r.peak.nspill; i++) spilled += r.peak.spill[i].weight;
    CHECK(spilled == 200 && r.peak.spill[0].site == site1_id && r.sites.folded == 1, "the spill has their weights and site ids");
    CHECK(sampling_timeline_verify(&t, &r) == NULL, "timeline after the spill: %s", sampling_timeline_verify(&t, &r));
    sampling_records_set_max(&r, 100);

    /* bounded: past ROWS rows every other one goes, evenly */
    for (size_t gc = 4; gc < 4 + 3 * SAMPLING_TIMELINE_ROWS; gc++) sampling_timeline_gc(&t, &r, now(gc, gc * 100), false);
    CHECK(t.n <= SAMPLING_TIMELINE_ROWS && t.stride == 4, "rows stay bounded (%zu rows, stride %llu)", t.n,
          (unsigned long long)t.stride);
    int even = 1;
    for (size_t i = 1; i < t.n; i++) even &= t.rows[i].gc - t.rows[i - 1].gc == t.stride;
    CHECK(even && t.rows[0].gc == 1, "rows span the whole run at one spacing");
    CHECK(sampling_timeline_verify(&t, &r) == NULL, "timeline: %s", sampling_timeline_verify(&t, &r));
    sampling_timeline_clear(&t);
    sampling_records_forget_peak(&r);
    CHECK(!t.peak.taken && t.n == 0 && !t.origin_ns && members(&r) == 0, "clear forgets rows, peak and origin");
    sampling_records_free(&r);
}

/* Live members of the peak's set dropped by a lower max (the oldest live
 * records go) spill like evicted dead ones, also when records died before
 * the peak: a dropped record is not a death, so its death number (unset)
 * must not say it died before the peak. */
static void
test_peak_drop_after_deaths(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 100);
    struct sampling_timeline t;
    memset(&t, 0, sizeof(t));
    add(&r, 8, 0, 100, 0, 0, false);
    add(&r, 16, 0, 100, 0, 0, false);
    state[1] = state[2] = 0;
    sampling_timeline_gc(&t, &r, now(1, 100), false);
    sampling_records_check_liveness(&r, liveness, NULL, now(2, 200), false);   /* two deaths */
    for (int i = 3; i <= 7; i++) add(&r, (uintptr_t)i * 8, 1, 100, 2, 200, false);
    sampling_timeline_gc(&t, &r, now(2, 200), false);
    CHECK(t.peak.at.gc == 2 && t.peak.at.live_samples == 5 && members(&r) == 5 && r.peak.deaths == 2,
          "the peak: five live, after two deaths (%zu members)", members(&r));
    sampling_records_set_max(&r, 2);
    CHECK(r.nlive == 2 && members(&r) == 2, "three oldest live records dropped (%zu live)", r.nlive);
    CHECK(r.peak.nspill == 3, "and spilled: the peak's set stays whole (%zu spilled)", r.peak.nspill);
    CHECK(sampling_timeline_verify(&t, &r) == NULL, "timeline: %s", sampling_timeline_verify(&t, &r));
    sampling_timeline_clear(&t);
    sampling_records_free(&r);
}

/* A record keeps GC counts in 42 bits and its death's as a difference
 * (records.h): counts far past 32 bits come back exact. */
static void
test_large_gc_counts(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 10);
    size_t base = ((size_t)1 << 41) + 3;
    uint32_t a = add(&r, 8, 0, 100, base, 1000, false);
    uint32_t b = add(&r, 16, 1, 100, base, 1000, false);
    CHECK(r.items[a].allocated_gc == base && sampling_record_age(&r.items[a], base + 4) == 4, "allocated at 2^41 + 3, 4 GCs ago");
    state[1] = 0;
    sampling_records_check_liveness(&r, liveness, NULL, now(base + 7, 5000), false);
    CHECK(r.items[a].dead && sampling_record_freed_gc(&r.items[a]) == base + 7, "found dead at 2^41 + 10 (%zu)",
          sampling_record_freed_gc(&r.items[a]));
    CHECK(sampling_record_age(&r.items[a], base + 100) == 6 && r.items[a].site->life.died_space[3] == 100,
          "survived 6 (bucket 4-7), as the site counted");
    struct sampling_sample s = sampling_record_sample(&r.items[b]);
    CHECK(!r.items[b].dead && s.allocated_gc == base && s.weight == 100 && s.size == 40 && s.allocated_bytes == 1000,
          "the sample comes back whole");
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));
    sampling_records_free(&r);
}

/* A malloc record whose block a realloc resized (records.h,
 * sampling_records_resize): a shrink scales its weight, growth adds the
 * growth's own weight, the live estimate follows, and sizes past 4 GiB
 * stay exact. */
static void
test_resize(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 10);
    uint32_t a = add(&r, 8, 0, 400, 1, 100, true);
    CHECK(sampling_records_resize(&r, a, r.items[a].seq, 40, 0, 8) && r.items[a].weight == 400,
          "the same size keeps the weight (%g)", r.items[a].weight);
    CHECK(sampling_records_resize(&r, a, r.items[a].seq, 10, 0, 8) && r.items[a].weight == 100 &&
          sampling_record_size(&r.items[a]) == 10 && r.live_space[SAMPLING_LIVE_MALLOC] == 100,
          "a shrink to a quarter: a quarter of the weight, in the estimate too (%g)", r.items[a].weight);
    uint64_t big = ((uint64_t)5 << 30) + 3;
    CHECK(sampling_records_resize(&r, a, r.items[a].seq, big, 50, 24) && r.items[a].weight == 150 &&
          sampling_record_size(&r.items[a]) == big && r.live[r.items[a].live_pos].obj == 24,
          "growth adds its own weight; 5 GiB + 3 stays exact; the block's new address");
    CHECK(sampling_record_sample(&r.items[a]).size == big, "and comes back whole");
    CHECK(!sampling_records_resize(&r, a, r.items[a].seq + 1, 10, 0, 8), "another sample's: refused");
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));
    sampling_records_free(&r);
}

/* The window from a marking to the end of its sweep (timeline.h): the
 * row counts the records live at the marking that are still live, not
 * those taken meanwhile, and the peak's set is the same records. */
static void
test_sweep_window(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 20);
    struct sampling_timeline t;
    memset(&t, 0, sizeof(t));
    uint32_t kept = add(&r, 8, 0, 100, 1, 100, true);
    uint32_t garbage = add(&r, 16, 0, 1000, 1, 100, true);
    add(&r, 24, 1, 10, 1, 100, false);
    sampling_timeline_marked(&t, &r, now(1, 500), false);
    CHECK(t.n == 0 && t.pending, "a row waits for its sweep");
    /* the sweep frees the garbage's buffer; the program allocates more */
    CHECK(sampling_records_end(&r, garbage, r.items[garbage].seq, now(1, 600)), "garbage's buffer freed by the sweep");
    add(&r, 32, 2, 5000, 1, 700, true);
    add(&r, 40, 2, 20, 1, 700, false);
    CHECK(sampling_records_verify(&r) == NULL, "invariants in the window: %s", sampling_records_verify(&r));
    sampling_timeline_swept(&t, &r);
    CHECK(t.n == 1 && !t.pending && t.rows[0].live_space[SAMPLING_LIVE_MALLOC] == 100 &&
          t.rows[0].live_space[SAMPLING_LIVE_SLOT] == 10 && t.rows[0].live_samples == 2 && t.rows[0].clock == 500,
          "the row: the kept block and the slot, not the garbage nor the young (%g, %g)",
          t.rows[0].live_space[SAMPLING_LIVE_MALLOC], t.rows[0].live_space[SAMPLING_LIVE_SLOT]);
    CHECK(t.peak.taken && members(&r) == 2 && sampling_record_in_peak(&r, &r.items[kept]),
          "the peak's set is the row's records (%zu)", members(&r));
    CHECK(r.window_seq == UINT64_MAX && r.young_count == 0, "the window closed");
    CHECK(sampling_timeline_verify(&t, &r) == NULL, "timeline: %s", sampling_timeline_verify(&t, &r));
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));
    sampling_timeline_clear(&t);
    sampling_records_free(&r);
}

int
main(void)
{
    test_buckets();
    test_lives();
    test_large_gc_counts();
    test_timeline();
    test_resize();
    test_sweep_window();
    test_peak_drop_after_deaths();
    return check_summary();
}
