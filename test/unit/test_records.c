/*
 * test_records.c: the record table, stack interning and the counted
 * reference set (gc/sampling/records.c, refset.c), driven by random
 * streams of samples, markings (with random deaths and promotions),
 * compactions (a random permutation of addresses) and clears, with the
 * invariants of records.h verified after every operation, and the
 * conservation law of site totals: the weights of every sample added since
 * the last clear or fork == the sites' alloc_space + other_space, however
 * many records were evicted or dropped and sites folded.  Also checks:
 * stacks are shared, a full table of live records drops (counted), a full
 * table with dead records evicts the oldest dead one, and an object whose
 * record died is never handed out again.
 */
// links: records.c sites.c refset.c gap.c
#include "check.h"
#include "records.h"
#include "gap.h"

#include <string.h>

/* a GC at count gc, with the allocation clock at 40 bytes a GC */
#define NOW(gc) ((struct sampling_now){ (gc), (uint64_t)(gc) * 40 })

static struct sampling_rng rng;
static uint64_t rnd(uint64_t n) { return sampling_rng_next(&rng) % n; }

/* the mock heap: object "addresses" with a dead flag */
enum { OBJECTS = 4096 };
static unsigned char dead_obj[OBJECTS * 2 + 64];
static int die_percent;
static uint64_t recent_hits;   /* samples whose site came from a recent one (find_recent) */

static int
liveness(uintptr_t obj, void *data)
{
    (void)data;
    uintptr_t i = obj / 8;
    if (rnd(100) < (uint64_t)die_percent) dead_obj[i] = 1;
    if (dead_obj[i]) return 0;
    return rnd(4) == 0 ? 2 : 1;
}

/* references die when (ref / 8 + ref_epoch) % 13 == 0, those with
 * (ref / 8) % 3 == 0 are old and die only in a major marking (the
 * streams move references by multiples of 24, keeping their age) */
static uintptr_t ref_epoch;
static bool ref_major;
static bool
ref_dead(uintptr_t ref, void *data)
{
    (void)data;
    return (ref / 8 + ref_epoch) % 13 == 0 && (ref_major || (ref / 8) % 3 != 0);
}

static int
ref_state(uintptr_t ref, void *data)
{
    if (ref_dead(ref, data)) return 0;
    return (ref / 8) % 3 == 0 ? 2 : 1;
}

static int named;
static struct sampling_names *
name_site(const struct sampling_site *site, void *data)
{
    (void)data;
    named++;
    if (rnd(4) == 0) return NULL;   /* no memory: shown as unknown */
    struct sampling_names *n = calloc(1, sizeof(*n) + sizeof(struct sampling_name));
    n->n = 1;
    n->locs[0].label = "named";
    n->locs[0].labellen = 5;
    return n;
}

static double
site_total(const struct sampling_records *r)
{
    double t = r->sites.other_space;
    for (const struct sampling_site *s = r->sites.oldest; s; s = s->newer) t += s->alloc_space;
    return t;
}

static uintptr_t shift;
static uintptr_t
moved(uintptr_t ref, void *data)
{
    (void)data;
    /* references below 8*OBJECTS are objects; above are classes/frames */
    if (ref < 8 * OBJECTS) return ref;          /* objects stay (keeps dead_obj simple) */
    return ref + shift;
}

static void
sample_in(struct sampling_sample_in *in, struct sampling_frame *frames, uintptr_t base)
{
    memset(in, 0, sizeof(*in));
    in->obj = 8 * (1 + rnd(OBJECTS - 1));
    dead_obj[in->obj / 8] = 0;
    in->site.klass = rnd(5) ? base + 8 * rnd(20) : 0;
    in->site.nframes = (uint32_t)rnd(6);
    for (uint32_t i = 0; i < in->site.nframes; i++) {
        frames[i].iseq = base + 1024 + 8 * rnd(8);
        frames[i].cme = rnd(2) ? base + 2048 + 8 * rnd(4) : 0;
        frames[i].pc = 8 * rnd(3);
    }
    in->site.frames = frames;
    in->site.truncated = rnd(10) == 0;
    in->site.hash = sampling_stack_hash(frames, in->site.nframes, in->site.truncated);
    in->sample.weight = 40.0 * (double)(1 + rnd(100));
    in->sample.size = 40;
    in->site.kind.type = (uint16_t)rnd(3);
    in->site.labels = (uint32_t)rnd(3);
    in->site.recent = (uint8_t)rnd(SAMPLING_RECENT_SLOTS);
}

/* As the capture does, half the time: when a recent site of its slot has
 * the same stack (sampling_frames_capture compares only whole, uncut
 * stacks), the key's path is that site's, and its site that site if the
 * class, kind and labels are too (sampling_frames_site_key). */
static void
find_recent(const struct sampling_records *r, struct sampling_sample_in *in)
{
    if (rnd(2)) return;
    struct sampling_site *const *ways = sampling_sites_recent(&r->sites, in->site.recent);
    for (int i = 0; i < SAMPLING_RECENT_WAYS; i++) {
        struct sampling_site *s = ways[i];
        struct sampling_frame held[8];
        if (s && !s->truncated && !in->site.truncated && s->nframes && s->nframes == in->site.nframes &&
            s->hash == in->site.hash) {
            sampling_site_frames(s, held);
            if (memcmp(held, in->site.frames, s->nframes * sizeof(*held)) != 0) continue;
            in->site.path = s->frames;
            if (sampling_site_rest_equal(s, &in->site)) in->site.site = s;
            recent_hits++;
            return;
        }
    }
}

static void
test_random_streams(void)
{
    uint64_t folds = 0, evictions = 0, drops = 0;
    named = 0;
    for (uint64_t seed = 1; seed <= 20; seed++) {
        sampling_rng_seed(&rng, seed);
        struct sampling_records r;
        sampling_records_init(&r, 1 + rnd(300));
        uintptr_t base = 8 * OBJECTS * 2;
        int ok = 1;
        double added = 0;
        static uint32_t read_index[400];
        static uint64_t read_seq[400];
        size_t nread = 0;
        bool cleared_while_reading = false;
        for (int op = 0; op < 3000 && ok; op++) {
            struct sampling_frame frames[8];
            struct sampling_sample_in in;
            switch (rnd(14)) {
              case 0: die_percent = (int)rnd(60); sampling_records_check_liveness(&r, liveness, NULL, NOW((size_t)op), rnd(2)); break;
              case 1: shift = 24 * (1 + rnd(333)); sampling_records_update_references(&r, moved, NULL); base += shift; break;
              case 2: if (rnd(20) == 0) { sampling_records_clear(&r); added = 0; cleared_while_reading = r.reading; } break;
              case 3:
                ref_epoch = rnd(1000);
                ref_major = rnd(2);
                sampling_records_check_refs(&r, ref_state, name_site, NULL, ref_major);
                /* no site holds a reference that died */
                for (const struct sampling_site *site = r.sites.oldest; site && ok; site = site->newer) {
                    bool held_dead = site->klass && ref_dead(site->klass, NULL);
                    for (const struct sampling_frame_node *n = site->frames; n && n->depth; n = n->caller) {
                        held_dead |= (n->frame.iseq && ref_dead(n->frame.iseq, NULL)) ||
                                     (n->frame.cme && ref_dead(n->frame.cme, NULL));
                    }
                    if (held_dead) { CHECK(0, "seed %llu op %d: a site holds a dead reference", (unsigned long long)seed, op); ok = 0; }
                }
                break;
              case 4: if (!r.reading && rnd(10) == 0) { sampling_records_after_fork(&r); added = 0; } break;
              case 5: if (!r.reading && rnd(5) == 0) sampling_records_set_max(&r, 1 + rnd(300)); break;
              case 6:
                /* a read begins: what it reads stays until it ends */
                r.reading = !r.reading;
                nread = 0;
                cleared_while_reading = false;
                for (size_t i = 0; r.reading && i < r.used; i++) {
                    if (r.items[i].seq) { read_index[nread] = (uint32_t)i; read_seq[nread++] = r.items[i].seq; }
                }
                break;
              default:
                sample_in(&in, frames, base);
                find_recent(&r, &in);
                sampling_records_add(&r, &in);
                added += in.sample.weight;
                break;
            }
            const char *err = sampling_records_verify(&r);
            if (err) { CHECK(!err, "seed %llu op %d: %s", (unsigned long long)seed, op, err); ok = 0; }
            for (size_t i = 0; r.reading && ok && i < nread; i++) {
                if (!cleared_while_reading && r.items[read_index[i]].seq != read_seq[i]) {
                    CHECK(0, "seed %llu op %d: a record went during a read", (unsigned long long)seed, op);
                    ok = 0;
                }
            }
            if (ok && (site_total(&r) != added || sampling_records_count(&r) > r.max)) {
                CHECK(0, "seed %llu op %d: totals %.0f, added %.0f; %zu records, max %zu", (unsigned long long)seed, op,
                      site_total(&r), added, sampling_records_count(&r), r.max);
                ok = 0;
            }
            /* no dead record gives out an object */
            for (size_t i = 0; i < r.used && ok; i++) {
                if (r.items[i].seq && r.items[i].dead &&
                    sampling_records_object(&r, (uint32_t)i, r.items[i].seq) != 0) {
                    CHECK(0, "dead record %zu hands out an object", i);
                    ok = 0;
                }
            }
        }
        if (ok) CHECK(1, "stream");
        folds += r.sites.folded;
        evictions += r.evicted;
        drops += r.dropped;
        sampling_records_free(&r);
    }
    CHECK(folds && evictions && drops && named && recent_hits,
          "the streams folded (%llu), evicted (%llu), dropped (%llu), named (%d), found recent sites (%llu)",
          (unsigned long long)folds, (unsigned long long)evictions, (unsigned long long)drops, named,
          (unsigned long long)recent_hits);
}

static void
test_sharing_drop_evict(void)
{
    struct sampling_records r, r2;
    sampling_records_init(&r, 3);
    struct sampling_frame f[2] = { { 1000, 2000, 1 }, { 1008, 0, 2 } };
    struct sampling_sample_in in = { .obj = 8, .site = { .klass = 3000, .frames = f, .nframes = 2 }, .sample = { .size = 40, .weight = 1 } };
    in.site.hash = sampling_stack_hash(f, 2, false);
    uint32_t a = sampling_records_add(&r, &in);
    in.obj = 16;
    uint32_t b = sampling_records_add(&r, &in);
    CHECK(a != SAMPLING_NONE && b != SAMPLING_NONE, "two records");
    CHECK(r.items[a].site == r.items[b].site && r.sites.table.size == 1, "one stack shared by both");
    CHECK(refset_count(&r.sites.refs, 3000) == 1 && refset_count(&r.sites.refs, 1000) == 1, "the stack holds class and frame once");
    /* the same pcs under another C method: the same hash, another stack */
    struct sampling_frame g[2] = { { 0, 2008, 0 }, { 1008, 0, 2 } }, h[2] = { { 0, 2016, 0 }, { 1008, 0, 2 } };
    CHECK(sampling_stack_hash(g, 2, false) == sampling_stack_hash(h, 2, false), "the hash reads pcs only");
    struct sampling_sample_in gin = in, hin = in;
    gin.site.frames = g; gin.obj = 40; gin.site.hash = sampling_stack_hash(g, 2, false);
    hin.site.frames = h; hin.obj = 48; hin.site.hash = gin.site.hash;
    sampling_records_init(&r2, 4);
    uint32_t gi = sampling_records_add(&r2, &gin), hi = sampling_records_add(&r2, &hin);
    CHECK(r2.items[gi].site != r2.items[hi].site && r2.sites.table.size == 2, "equal hashes, different frames: two stacks");
    CHECK(sampling_records_add(&r2, &hin) != SAMPLING_NONE && r2.sites.table.size == 2, "and each is found again");
    /* the same frames, another class: another stack, which holds that class */
    hin.site.klass = 3008;
    uint32_t ki = sampling_records_add(&r2, &hin);
    CHECK(ki != SAMPLING_NONE && r2.items[ki].site != r2.items[hi].site && r2.items[ki].site->klass == 3008 &&
          r2.sites.table.size == 3 && refset_count(&r2.sites.refs, 3008) == 1 && refset_count(&r2.sites.refs, 3000) == 2,
          "a stack per class at one place");
    CHECK(sampling_records_verify(&r2) == NULL, "invariants: %s", sampling_records_verify(&r2));
    sampling_records_free(&r2);
    in.obj = 24;
    sampling_records_add(&r, &in);
    in.obj = 32;
    CHECK(sampling_records_add(&r, &in) == SAMPLING_NONE && r.dropped == 1, "full of live records: dropped and counted");

    /* object 16 dies: the next sample evicts it */
    dead_obj[16 / 8] = 1; dead_obj[8 / 8] = 0; dead_obj[24 / 8] = 0;
    die_percent = 0;
    sampling_rng_seed(&rng, 5);
    sampling_records_check_liveness(&r, liveness, NULL, NOW(7), true);
    CHECK(sampling_record_freed_gc(&r.items[b]) == 7 && r.items[b].dead, "died at GC 7");
    CHECK(sampling_records_object(&r, b, r.items[b].seq) == 0, "a dead record has no object");
    CHECK(sampling_record_age(&r.items[a], 7) == 7, "a survivor's age counts every collection since it was made");
    CHECK(sampling_record_age(&r.items[b], 9) == 6, "a dead one's stops before the collection that found it dead");
    uint64_t old_seq = r.items[b].seq;
    uint32_t c = sampling_records_add(&r, &in);
    CHECK(c == b && r.evicted == 1, "the oldest dead record is evicted (slot %u, evicted %llu)", c, (unsigned long long)r.evicted);
    CHECK(sampling_records_object(&r, b, old_seq) == 0, "the evicted sample's handle never sees the new object");
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));
    sampling_records_clear(&r);
    CHECK(r.sites.refs.size == 0 && r.sites.table.size == 0 && sampling_records_count(&r) == 0, "clear drops everything");
    sampling_records_free(&r);
}

/* The dead queue is a ring that grows: growing while its start is not at
 * 0 must keep every dead record, in the order they died. */
static void
test_dead_queue_growth(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 3000);
    struct sampling_frame f[1] = { { 1000, 2000, 1 } };
    struct sampling_sample_in in = { .site = { .klass = 3000, .frames = f, .nframes = 1 }, .sample = { .size = 40, .weight = 1 } };
    in.site.hash = sampling_stack_hash(f, 1, false);
    memset(dead_obj, 0, sizeof(dead_obj));
    die_percent = 0;
    sampling_rng_seed(&rng, 7);
    uintptr_t obj = 0;
    for (int i = 0; i < 3000; i++) { in.obj = 8 * ++obj; sampling_records_add(&r, &in); }
    for (int i = 1; i <= 1000; i++) dead_obj[i] = 1;
    sampling_records_check_liveness(&r, liveness, NULL, NOW(1), true);
    for (int i = 0; i < 500; i++) { in.obj = 8 * ++obj; sampling_records_add(&r, &in); }
    CHECK(r.ndead == 500 && r.evicted == 500 && r.dead_head != 0, "500 dead left, the ring's start moved");

    /* the queue now, oldest first; 1,000 more deaths pass 1,024 and grow it */
    uint32_t before[500];
    for (size_t i = 0; i < 500; i++) before[i] = r.dead[(r.dead_head + i) & (r.dead_capacity - 1)];
    for (int i = 1001; i <= 2000; i++) dead_obj[i] = 1;
    sampling_records_check_liveness(&r, liveness, NULL, NOW(2), true);
    CHECK(r.ndead == 1500 && r.dead_capacity > 1024, "1,500 dead, the ring grew (capacity %zu)", r.dead_capacity);
    CHECK(sampling_records_verify(&r) == NULL, "invariants after growth: %s", sampling_records_verify(&r));

    /* evictions take the 500 older deaths first, in order, then the rest */
    int in_order = 1, ok = 1;
    for (size_t i = 0; i < 1500; i++) {
        in.obj = 8 * ++obj;
        uint32_t slot = sampling_records_add(&r, &in);
        if (i < 500 && slot != before[i]) in_order = 0;
        if (slot == SAMPLING_NONE || sampling_records_verify(&r)) ok = 0;
    }
    CHECK(in_order, "the 500 older deaths are evicted first, oldest first");
    CHECK(ok && r.ndead == 0 && r.evicted == 2000, "every dead record evicted once (evicted %llu)",
          (unsigned long long)r.evicted);
    sampling_records_free(&r);
}

/* Reserved tables take max records without growing (moving) again. */
static void
test_reserve(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 5000);
    CHECK(sampling_records_reserve(&r) && r.capacity == 5000 && r.live_capacity == 5000 && r.dead_capacity == 8192,
          "reserved: %zu records, %zu live, %zu dead", r.capacity, r.live_capacity, r.dead_capacity);
    struct sampling_record *items = r.items;
    struct sampling_live *live = r.live;
    struct sampling_frame f[1] = { { 1000, 2000, 1 } };
    struct sampling_sample_in in = { .site = { .klass = 3000, .frames = f, .nframes = 1 }, .sample = { .size = 40, .weight = 1 } };
    in.site.hash = sampling_stack_hash(f, 1, false);
    int ok = 1;
    for (uintptr_t i = 1; i <= 5000; i++) {
        in.obj = 8 * i;
        if (sampling_records_add(&r, &in) == SAMPLING_NONE) ok = 0;
    }
    CHECK(ok && r.items == items && r.live == live && r.capacity == 5000, "5,000 records in place");
    /* what the reserve asked for, and no more for 5,000 records in it */
    CHECK(sampling_records_memsize(&r) == 5000 * (64 + 4 + 16) + 8192 * 4, "records memsize %zu",
          sampling_records_memsize(&r));
    /* one site (the same stack): its struct and its frame's node (a slab);
     * a 256-slot site table, a 256-head node table; a 64-entry refset */
    size_t site_bytes = sizeof(struct sampling_site) + sizeof(struct sampling_node_slab);
    CHECK(r.sites.count == 1 && sampling_sites_memsize(&r.sites) == site_bytes + 2 * 256 * sizeof(void *) + 64 * 16,
          "sites memsize %zu", sampling_sites_memsize(&r.sites));
    sampling_records_free(&r);

    sampling_records_init(&r, 3 * SAMPLING_RESERVE_MAX);
    CHECK(sampling_records_reserve(&r) && r.capacity == SAMPLING_RESERVE_MAX, "the reserve stops at %zu records",
          SAMPLING_RESERVE_MAX);
    sampling_records_free(&r);
}

/* One place that allocates many classes (dup, Marshal.load): one stack
 * each, all found again, spread over the table rather than one run; a
 * compaction that moves the classes keeps every one findable. */
static void
test_many_classes_one_place(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 1000);
    struct sampling_frame f[2] = { { 0, 2000, 0 }, { 1008, 0, 16 } };
    struct sampling_sample_in in = { .site = { .frames = f, .nframes = 2 }, .sample = { .size = 40, .weight = 1 } };
    in.site.hash = sampling_stack_hash(f, 2, false);
    int ok = 1;
    for (int pass = 0; pass < 2; pass++) {
        for (uintptr_t k = 0; k < 200; k++) {
            in.obj = 8 * (1 + pass * 200 + k);
            in.site.klass = 8 * OBJECTS * 2 + 8 * k;
            uint32_t i = sampling_records_add(&r, &in);
            if (i == SAMPLING_NONE || r.items[i].site->klass != in.site.klass) ok = 0;
        }
    }
    CHECK(ok && r.sites.table.size == 200, "200 classes, 200 stacks, each found again (%zu)", r.sites.table.size);
    size_t mask = r.sites.table.capacity - 1, longest = 0;
    for (size_t i = 0; i < r.sites.table.capacity; i++) {
        if (!r.sites.table.slots[i]) continue;
        size_t run = 0;
        for (size_t j = i; r.sites.table.slots[j]; j = (j + 1) & mask) run++;
        if (run > longest) longest = run;
    }
    CHECK(longest < 20, "spread over the table: longest run %zu of %zu slots", longest, r.sites.table.capacity);
    shift = 8 * 4096;
    sampling_records_update_references(&r, moved, NULL);
    CHECK(sampling_records_verify(&r) == NULL, "after the classes moved: %s", sampling_records_verify(&r));
    in.site.klass = 8 * OBJECTS * 2 + 8 * 7 + shift;
    in.obj = 8 * 401;
    uint32_t i = sampling_records_add(&r, &in);
    CHECK(i != SAMPLING_NONE && r.sites.table.size == 200, "a moved class's stack is found again");
    sampling_records_free(&r);
}

/* Per-site totals stay exact when records are evicted and dropped (a
 * bound on records is for memory, not counts); a site whose class dies
 * is named, leaves the table, and a new class at the same address gets a
 * new site. */
static void
test_totals_and_weak_refs(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 10);
    struct sampling_frame f[3][1] = { { { 1000, 2000, 1 } }, { { 1008, 2000, 2 } }, { { 1016, 0, 3 } } };
    memset(dead_obj, 0, sizeof(dead_obj));
    die_percent = 0;
    sampling_rng_seed(&rng, 11);
    double expected[3] = { 0, 0, 0 };
    for (uintptr_t i = 1; i <= 1000; i++) {
        int site = (int)(i % 3);
        struct sampling_sample_in in = { .obj = 8 * i, .site = { .klass = 3000, .frames = f[site], .nframes = 1 }, .sample.size = 40 };
        in.sample.weight = 40.0 * (double)(site + 1);
        in.site.hash = sampling_stack_hash(f[site], 1, false);
        sampling_records_add(&r, &in);
        expected[site] += in.sample.weight;
        if (i % 7 == 0) {
            for (uintptr_t j = 1; j <= i; j++) dead_obj[j] = j + 4 < i;
            sampling_records_check_liveness(&r, liveness, NULL, NOW(i), true);
        }
    }
    int exact = 1;
    for (const struct sampling_site *s = r.sites.oldest; s; s = s->newer) {
        int site = (int)((s->frames->frame.iseq - 1000) / 8);
        if (s->alloc_space != expected[site] || s->alloc_objects != expected[site] / 40) exact = 0;
    }
    CHECK(exact && r.sites.count == 3 && r.evicted > 500 && sampling_records_count(&r) <= 10 &&
          r.evicted + r.dropped + sampling_records_count(&r) == 1000,
          "3 sites with exact totals after %llu evictions, %llu drops", (unsigned long long)r.evicted,
          (unsigned long long)r.dropped);

    /* class 3000 dies: the two sites that hold it are named and leave the table */
    ref_epoch = 13 - (3000 / 8) % 13;
    ref_major = true;
    CHECK(ref_dead(3000, NULL) && !ref_dead(1000, NULL) && !ref_dead(1016, NULL), "only the class dies");
    sampling_rng_seed(&rng, 1);  /* name_site's "no memory" draw: not on the first call */
    named = 0;
    sampling_records_check_refs(&r, ref_state, name_site, NULL, true);
    CHECK(named == 3 && r.sites.table.size == 0 && r.sites.refs.size == 0 && r.sites.count == 3,
          "every site held the class: named (%d), out of the table, no references held", named);
    struct sampling_sample_in in = { .obj = 8 * 2000, .site = { .klass = 3000, .frames = f[0], .nframes = 1 }, .sample = { .size = 40, .weight = 40 } };
    in.site.hash = sampling_stack_hash(f[0], 1, false);
    uint32_t i = sampling_records_add(&r, &in);
    CHECK(i != SAMPLING_NONE && !r.items[i].site->names && r.items[i].site->alloc_space == 40 && r.sites.count == 4,
          "a new class at the dead one's address: a new site");
    CHECK(sampling_records_verify(&r) == NULL, "invariants: %s", sampling_records_verify(&r));

    /* the frame 1016 dies, its class lives: the site is named but keeps
     * its class, which compaction still follows, until it dies too */
    struct sampling_records r2;
    sampling_records_init(&r2, 100);
    struct sampling_frame g[1] = { { 1016, 0, 3 } };
    struct sampling_sample_in gin = { .obj = 8 * 2001, .site = { .klass = 40000, .frames = g, .nframes = 1 },
                                      .sample = { .size = 40, .weight = 40 } };
    gin.site.hash = sampling_stack_hash(g, 1, false);
    uint32_t gi = sampling_records_add(&r2, &gin);
    CHECK(gi != SAMPLING_NONE, "a site of class 40000");
    struct sampling_site *gs = r2.items[gi].site;
    ref_epoch = 13 - (1016 / 8) % 13;
    CHECK(ref_dead(1016, NULL) && !ref_dead(40000, NULL), "only the frame dies");
    sampling_records_check_refs(&r2, ref_state, name_site, NULL, true);
    CHECK(gs->names && gs->klass == 40000 && refset_count(&r2.sites.refs, 40000) == 1 && refset_count(&r2.sites.refs, 1016) == 0,
          "named, keeps its live class");
    shift = 8;
    sampling_records_update_references(&r2, moved, NULL);
    CHECK(gs->klass == 40008 && refset_count(&r2.sites.refs, 40008) == 1, "compaction moves a named site's class");
    ref_epoch = 13 - (40008 / 8) % 13;
    sampling_records_check_refs(&r2, ref_state, name_site, NULL, true);
    CHECK(gs->klass == 0 && r2.sites.refs.size == 0, "then its class dies");
    CHECK(sampling_records_verify(&r2) == NULL, "invariants: %s", sampling_records_verify(&r2));

    sampling_records_free(&r2);

    /* a fork: totals from zero, dead records gone, live ones kept */
    size_t live = r.nlive;
    sampling_records_after_fork(&r);
    CHECK(site_total(&r) == 0 && r.ndead == 0 && r.nlive == live && sampling_records_count(&r) == live,
          "after fork: totals 0, %zu live records kept", live);
    sampling_records_free(&r);
}

static void
test_refset(void)
{
    struct refset s = { 0 };
    sampling_rng_seed(&rng, 99);
    static size_t model[5000];
    memset(model, 0, sizeof(model));
    int ok = 1;
    for (int i = 0; i < 200000 && ok; i++) {
        uintptr_t k = 1 + rnd(4999);
        if (rnd(3)) { refset_add(&s, k * 8); model[k]++; }
        else if (model[k]) { refset_remove(&s, k * 8); model[k]--; }
        if (i % 1000 == 0) {
            size_t distinct = 0;
            for (int j = 1; j < 5000; j++) {
                if (model[j]) distinct++;
                if (refset_count(&s, (uintptr_t)j * 8) != model[j]) ok = 0;
            }
            if (distinct != s.size) ok = 0;
        }
    }
    CHECK(ok, "refset agrees with a model under random adds and removes");
    refset_free(&s);
}

/* Malloc'd blocks' records (heap SAMPLING_HEAP_MALLOC, odd "addresses")
 * sit apart at the front of live[]: no marking, minor or major, asks
 * about them, while slot records around them are walked, promoted and
 * found dead as before; a block's record ends when it is freed
 * (sampling_records_end), from any part. */
static uint64_t asked_blocks;
static int
liveness_no_blocks(uintptr_t obj, void *data)
{
    if (obj & 1) asked_blocks++;
    return liveness(obj, data);
}

static void
test_blocks_apart(void)
{
    struct sampling_records r;
    sampling_records_init(&r, 4096);
    sampling_rng_seed(&rng, 7);
    die_percent = 10;
    static uint32_t blocks[4096];
    static uint64_t block_seq[4096];
    size_t nblocks = 0;
    int ok = 1;
    struct sampling_frame frames[8];
    for (int step = 0; step < 20000 && ok; step++) {
        uint64_t op = rnd(10);
        if (op < 4) {
            struct sampling_sample_in in;
            sample_in(&in, frames, 1 << 20);
            uint32_t i = sampling_records_add(&r, &in);
            (void)i;
        }
        else if (op < 7) {
            struct sampling_sample_in in;
            sample_in(&in, frames, 1 << 20);
            in.obj = (uintptr_t)(8 * (1 + rnd(OBJECTS - 1))) | 1;
            in.sample.heap = SAMPLING_HEAP_MALLOC;
            in.site.kind.type = 0;
            uint32_t i = sampling_records_add(&r, &in);
            if (i != SAMPLING_NONE && nblocks < 4096) {
                block_seq[nblocks] = r.items[i].seq;
                blocks[nblocks++] = i;
            }
        }
        else if (op < 9 && nblocks) {
            size_t k = rnd(nblocks);
            ok &= sampling_records_end(&r, blocks[k], block_seq[k], NOW((size_t)step));
            blocks[k] = blocks[--nblocks];
            block_seq[k] = block_seq[nblocks];
        }
        else {
            sampling_records_check_liveness(&r, liveness_no_blocks, NULL, NOW((size_t)step), rnd(4) == 0);
        }
        const char *err = sampling_records_verify(&r);
        if (err) {
            CHECK(0, "step %d: %s", step, err);
            ok = 0;
        }
        if (r.nmalloc != nblocks) {
            CHECK(0, "step %d: %zu blocks apart, %zu live", step, r.nmalloc, nblocks);
            ok = 0;
        }
    }
    CHECK(ok, "blocks apart: records verify and every block's record ends once, by its free");
    CHECK(asked_blocks == 0, "no marking asked about a malloc'd block (%llu asked)", (unsigned long long)asked_blocks);
    die_percent = 0;
    sampling_records_free(&r);
}

int
main(void)
{
    test_blocks_apart();
    test_refset();
    test_sharing_drop_evict();
    test_random_streams();
    test_dead_queue_growth();
    test_reserve();
    test_many_classes_one_place();
    test_totals_and_weak_refs();
    return check_summary();
}
