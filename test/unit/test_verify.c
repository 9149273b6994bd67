/*
 * test_verify.c: every verify function of gc/sampling/'s pure C modules
 * (HACKING.md, "Checks") can fail: each passes on a sound structure, and
 * each corruption of one invariant its header states makes it return a
 * message (the message checked, so that the right invariant caught it),
 * and passes again once the corruption is undone.  --enable-checks turns
 * such a message into rb_bug.
 */
// links: records.c sites.c refset.c gap.c timeline.c labels.c retention.c
#include "check.h"
#include "records.h"
#include "timeline.h"
#include "labels.h"
#include "retention.h"
#include "refset.h"
#include "probe.h"

#include <stdio.h>
#include <string.h>

/* A verify's answer: NULL when `want` is NULL, else a message containing `want`. */
#define EXPECT(err, want, what) do { \
    const char *e_ = (err), *w_ = (want); \
    CHECK(w_ ? e_ && strstr(e_, w_) : !e_, "%s: got \"%s\", want \"%s\"", what, e_ ? e_ : "(none)", w_ ? w_ : "(none)"); \
} while (0)

/* ---- probe.h ---- */

enum { CAP = 16, MASK = CAP - 1 };
static uint32_t slots[CAP];
static size_t home_of(uint32_t key) { return (key * 7) & MASK; }
static bool t_empty(void *t, size_t i) { (void)t; return slots[i] == 0; }
static size_t t_home(void *t, size_t i) { (void)t; return home_of(slots[i]); }
static const struct probe_ops toy_ops = { t_empty, t_home, NULL, NULL };

static void
test_probe(void)
{
    memset(slots, 0, sizeof(slots));
    /* keys 16 and 32 share home 0: a run 0, 1; key 3 lives at home 5 */
    slots[0] = 16;
    slots[1] = 32;
    slots[5] = 3;
    EXPECT(probe_verify(slots, CAP, 3, &toy_ops), NULL, "probe: sound");
    EXPECT(probe_verify(slots, CAP, 4, &toy_ops), "size", "probe: a size too big");
    EXPECT(probe_verify(slots, 12, 3, &toy_ops), "power of two", "probe: capacity 12");
    EXPECT(probe_verify(slots, CAP, 9, &toy_ops), "half full", "probe: 9 of 16");
    slots[0] = 0;       /* 32 is cut off from its home */
    EXPECT(probe_verify(slots, CAP, 2, &toy_ops), "probe run", "probe: a hole in a run");
    slots[0] = 16;
    slots[6] = slots[5];    /* 3 one slot past its home, the home empty */
    slots[5] = 0;
    EXPECT(probe_verify(slots, CAP, 3, &toy_ops), "probe run", "probe: an entry after an empty home");
}

/* ---- refset.h ---- */

static void
test_refset(void)
{
    struct refset s = { 0 };
    EXPECT(refset_verify(&s), NULL, "refset: empty");
    for (uintptr_t k = 1; k <= 40; k++) {
        refset_add(&s, k * 8);
        if (k % 3 == 0) refset_add(&s, k * 8);
    }
    for (uintptr_t k = 1; k <= 40; k += 4) refset_remove(&s, k * 8);
    EXPECT(refset_verify(&s), NULL, "refset: after adds and removes");

    struct refset_entry *e = NULL;
    REFSET_FOREACH(&s, x) { if (!e) e = x; }
    size_t count = e->count;
    e->count = 0;
    EXPECT(refset_verify(&s), "no holder", "refset: a key with count 0");
    e->count = count;

    s.size++;
    EXPECT(refset_verify(&s), "size", "refset: size one too many");
    s.size--;

    /* an entry moved past the next empty slot after its run */
    size_t i = (size_t)(e - s.entries), mask = s.capacity - 1, j = i;
    while (s.entries[j].key) j = probe_next(j, mask);
    j = probe_next(j, mask);
    while (s.entries[j].key) j = probe_next(j, mask);
    struct refset_entry saved = *e;
    s.entries[j] = saved;
    e->key = 0;
    e->count = 0;
    EXPECT(refset_verify(&s), "probe run", "refset: an entry past an empty slot");
    s.entries[i] = saved;
    s.entries[j].key = 0;
    s.entries[j].count = 0;
    EXPECT(refset_verify(&s), NULL, "refset: restored");
    refset_free(&s);
}

/* ---- records.h and sites.h ---- */

static struct sampling_frame frames[4][2] = {
    { { 1000, 2000, 1 }, { 1100, 2100, 2 } }, { { 1008, 2000, 9 }, { 1100, 2100, 2 } },
    { { 1016, 2000, 17 }, { 1100, 2100, 2 } }, { { 1024, 0, 25 }, { 1100, 2100, 2 } },
};
static int state[64];   /* the liveness walk's answers by obj / 8: 0 dead, 1 marked, 2 old */

static int
liveness(uintptr_t obj, void *data)
{
    (void)data;
    return state[obj / 8];
}

static uint32_t
add(struct sampling_records *r, uintptr_t obj, int site, double weight, uint64_t clock)
{
    struct sampling_frame f[3];
    memcpy(f, frames[site], sizeof(frames[site]));
    f[2] = (struct sampling_frame){ 0, 0, SAMPLING_FRAME_END };
    struct sampling_sample_in in = { .obj = obj, .site = { .klass = 3000 + 8 * (uintptr_t)site, .frames = f, .nframes = 2 },
                                     .sample = { .size = 40, .weight = weight, .allocated_bytes = clock } };
    in.site.hash = sampling_stack_hash(f, 2, false);
    state[obj / 8] = 1;
    return sampling_records_add(r, &in);
}

/* records with live, old and dead ones, shared and idle-free sites */
static void
fill(struct sampling_records *r)
{
    sampling_records_init(r, 32);
    for (int i = 1; i <= 12; i++) add(r, (uintptr_t)i * 8, i % 4, 40.0 * i, (uint64_t)i * 100);
    state[2] = state[5] = 0;
    state[3] = state[7] = 2;
    sampling_records_check_liveness(r, liveness, NULL, (struct sampling_now){ 1, 2000 }, false);
}

static void
test_records(void)
{
    struct sampling_records r;
    fill(&r);
    EXPECT(sampling_records_verify(&r), NULL, "records: sound");
    CHECK(r.nlive == 10 && r.ndead == 2 && r.nold == 2, "the fill: 10 live (2 old), 2 dead (%zu, %zu, %zu)", r.nlive,
          r.ndead, r.nold);

    struct sampling_record *rec = &r.items[r.live[r.nold].record];
    uint32_t pos = rec->live_pos;
    rec->live_pos = pos + 1;
    EXPECT(sampling_records_verify(&r), "live_pos", "records: live_pos points elsewhere");
    rec->live_pos = pos;

    r.nold--;
    EXPECT(sampling_records_verify(&r), "old-first", "records: an old record after nold");
    r.nold++;

    r.ndead--;
    EXPECT(sampling_records_verify(&r), "dead queue", "records: a dead record missing from the queue");
    r.ndead++;

    r.live_space[SAMPLING_LIVE_SLOT] += 1000;
    EXPECT(sampling_records_verify(&r), "live_space", "records: the live estimate off");
    r.live_space[SAMPLING_LIVE_SLOT] -= 1000;

    r.nfree++;
    EXPECT(sampling_records_verify(&r), "high water", "records: a free slot too many");
    r.nfree--;

    /* sites */
    struct sampling_site *s = r.sites.oldest;
    s->refcount++;
    EXPECT(sampling_records_verify(&r), "refcounts", "sites: a refcount one too many");
    s->refcount--;

    s->hash ^= 1;
    EXPECT(sampling_records_verify(&r), "probe run", "sites: a site whose hash moved (not in its run)");
    s->hash ^= 1;

    r.sites.count++;
    EXPECT(sampling_records_verify(&r), "count", "sites: count one too many");
    r.sites.count--;

    refset_add(&r.sites.refs, 8 * 999);
    EXPECT(sampling_records_verify(&r), "refs hold a different set", "sites: refs with a reference no site holds");
    refset_remove(&r.sites.refs, 8 * 999);

    struct refset_entry *e = NULL;
    REFSET_FOREACH(&r.sites.refs, x) { if (!e) e = x; }
    e->count++;
    EXPECT(sampling_records_verify(&r), "miscounted", "sites: a reference counted once too often");
    e->count--;

    EXPECT(sampling_records_verify(&r), NULL, "records: restored");
    sampling_records_free(&r);
}

/* ---- timeline.h ---- */

static void
test_timeline(void)
{
    struct sampling_records r;
    fill(&r);
    struct sampling_timeline t;
    memset(&t, 0, sizeof(t));
    EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: before any GC");
    uint64_t gc = 2;
    for (; gc < 2 + SAMPLING_TIMELINE_ROWS + SAMPLING_TIMELINE_ROWS / 2; gc++) {
        if (gc == 40) state[4] = 0;      /* a death: the estimate falls after the peak */
        if (gc % 50 == 0) sampling_records_check_liveness(&r, liveness, NULL, (struct sampling_now){ gc, gc * 100 }, false);
        sampling_timeline_gc(&t, &r, (struct sampling_now){ gc, gc * 100 }, false);
        if (gc % 997 == 0) EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: while rows are added");
    }
    CHECK(t.stride == 2, "thinned once (stride %llu)", (unsigned long long)t.stride);
    EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: sound, thinned");
    add(&r, 8 * 40, 1, 4000, gc * 100);        /* a new peak */
    sampling_timeline_gc(&t, &r, (struct sampling_now){ gc, gc * 100 }, false);
    EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: a new peak");
    CHECK(t.peak.at.gc == gc, "the peak moved");

    struct sampling_timeline_row row = t.rows[3];
    t.rows[3].gc = t.rows[2].gc;
    EXPECT(sampling_timeline_verify(&t, &r), "GC counts", "timeline: two rows of one GC");
    t.rows[3] = row;
    t.rows[3].clock = 0;
    EXPECT(sampling_timeline_verify(&t, &r), "goes back", "timeline: a clock going back");
    t.rows[3] = row;

    t.stride = 3;
    EXPECT(sampling_timeline_verify(&t, &r), "power of two", "timeline: stride 3");
    t.stride = 2;
    t.n--;
    EXPECT(sampling_timeline_verify(&t, &r), "multiples of stride", "timeline: a row missing");
    t.n++;
    t.seen += 2;
    EXPECT(sampling_timeline_verify(&t, &r), "multiples of stride", "timeline: GCs seen without their rows");
    t.seen -= 2;

    double live = t.peak.at.live_space[SAMPLING_LIVE_SLOT];
    t.peak.at.live_space[SAMPLING_LIVE_SLOT] = 0;
    EXPECT(sampling_timeline_verify(&t, &r), "above the peak", "timeline: a row above the peak");
    t.peak.at.live_space[SAMPLING_LIVE_SLOT] = live;

    r.peak.nspill++;
    EXPECT(sampling_timeline_verify(&t, &r), "not whole", "timeline: the peak's set one too many");
    r.peak.nspill--;
    t.peak.at.live_samples++;
    EXPECT(sampling_timeline_verify(&t, &r), "not whole", "timeline: the peak's set one short");
    t.peak.at.live_samples--;
    r.peak.taken = false;
    EXPECT(sampling_timeline_verify(&t, &r), "disagree", "timeline: the records forgot the peak");
    r.peak.taken = true;

    t.pending = true;
    t.begun.gc = t.rows[t.n - 1].gc;
    EXPECT(sampling_timeline_verify(&t, &r), "pending", "timeline: a pending row of an old GC");
    t.pending = false;

    /* evicted members spill: the set stays whole */
    sampling_records_set_max(&r, 3);
    EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: members evicted and spilled");
    EXPECT(sampling_records_verify(&r), NULL, "records: after the eviction");
    sampling_timeline_clear(&t);
    sampling_records_forget_peak(&r);
    EXPECT(sampling_timeline_verify(&t, &r), NULL, "timeline: cleared");
    sampling_records_free(&r);
}

/* ---- labels.h ---- */

static uint32_t
intern_pairs(struct sampling_labels *t, const char *k1, const char *v1, const char *k2, const char *v2)
{
    char text[128];
    int len = snprintf(text, sizeof(text), "%s%c%s%c", k1, 0, v1, 0);
    if (k2) len += snprintf(text + len, sizeof(text) - (size_t)len, "%s%c%s%c", k2, 0, v2, 0);
    return sampling_labels_intern(t, text, (uint32_t)len, k2 ? 2 : 1);
}

static void
test_labels(void)
{
    struct sampling_labels t = { 0 };
    EXPECT(sampling_labels_verify(&t), NULL, "labels: empty");
    char v[16];
    for (int i = 0; i < 300; i++) {
        snprintf(v, sizeof(v), "%d", i);
        intern_pairs(&t, "endpoint", v, i % 2 ? "tenant" : NULL, "t");
    }
    EXPECT(sampling_labels_verify(&t), NULL, "labels: 300 sets");

    /* two ids in slots far apart, swapped: each out of its run */
    size_t a = SIZE_MAX, b = SIZE_MAX;
    for (size_t i = 0; i < 2 * SAMPLING_LABELS_MAX; i++) {
        if (!t.slots[i]) continue;
        if (a == SIZE_MAX) a = i;
        else if (i > a + 64) { b = i; break; }
    }
    uint32_t ida = t.slots[a], idb = t.slots[b];
    t.slots[a] = idb;
    t.slots[b] = ida;
    EXPECT(sampling_labels_verify(&t), "probe run", "labels: two ids swapped");
    t.slots[a] = ida;
    t.slots[b] = idb;

    size_t empty = a;
    while (t.slots[empty]) empty++;
    t.slots[empty] = ida;
    EXPECT(sampling_labels_verify(&t), "twice", "labels: an id twice");
    t.slots[empty] = (uint32_t)t.count + 1;
    EXPECT(sampling_labels_verify(&t), "past count", "labels: an id never given");
    t.slots[empty] = 0;

    struct sampling_label_set *s = t.sets[7];
    s->hash ^= 4;
    EXPECT(sampling_labels_verify(&t), "hash", "labels: a set's hash off");
    s->hash ^= 4;
    t.count--;
    EXPECT(sampling_labels_verify(&t), "count", "labels: count one short");
    t.count++;
    EXPECT(sampling_labels_verify(&t), NULL, "labels: restored");

    /* a set whose keys are out of order is not canonical */
    intern_pairs(&t, "tenant", "t", "endpoint", "x");
    EXPECT(sampling_labels_verify(&t), "canonical", "labels: keys out of order");
    sampling_labels_free(&t);
    static const char odd[] = "key\0value\0dangling";
    sampling_labels_intern(&t, odd, sizeof(odd) - 1, 2);
    EXPECT(sampling_labels_verify(&t), "canonical", "labels: a pair without its end");
    sampling_labels_free(&t);
}

/* ---- retention.h ---- */

/* a mock heap: object i (address 8 * (i + 1)) refers to 2i + 1 and 2i + 2
 * (a binary tree) and to i / 3 (cycles) */
enum { NOBJ = 2000 };
static unsigned char visited[NOBJ];
static uintptr_t addr(size_t i) { return (uintptr_t)(i + 1) * 8; }
static size_t index_of(uintptr_t a) { return a / 8 - 1; }

static bool
visit(void *ctx, uintptr_t obj)
{
    (void)ctx;
    if (visited[index_of(obj)]) return false;
    visited[index_of(obj)] = 1;
    return true;
}

static void
children(void *ctx, struct retention *r, uint32_t node)
{
    (void)ctx;
    size_t i = index_of(r->objs[node]);
    if (2 * i + 1 < NOBJ) retention_add(r, addr(2 * i + 1), node);
    if (2 * i + 2 < NOBJ) retention_add_cache(r, addr(2 * i + 2), node);
    retention_add(r, addr(i / 3), node);
}

static void
test_retention(void)
{
    struct retention r;
    uintptr_t targets[] = { addr(1500), addr(777), addr(42), addr(3) };
    memset(visited, 0, sizeof(visited));
    CHECK(retention_init(&r, SIZE_MAX, targets, 4, visit, NULL), "init");
    retention_add_root(&r, addr(0), 1);
    retention_run(&r, children, NULL);
    EXPECT(retention_verify(&r), NULL, "retention: sound after the walk");
    CHECK(r.nfound == 4 && r.cache_start < r.n, "every target found, some through a cache edge");

    /* the node array */
    uint32_t leaf = (uint32_t)r.n - 1, depth = r.depths[leaf];
    uint32_t word = r.parents[5];
    r.parents[5] = 7;
    EXPECT(retention_verify(&r), "after its child", "retention: a parent after its child");
    r.parents[5] = word;
    EXPECT(retention_verify(&r), NULL, "retention: restored");
    r.depths[leaf] = depth + 1;
    EXPECT(retention_verify(&r), "one level up", "retention: a depth off by one");
    r.depths[leaf] = depth;
    r.depths[0] = 1;
    EXPECT(retention_verify(&r), "root below depth 0", "retention: a root at depth 1");
    r.depths[0] = 0;
    uint32_t node = retention_target_node(&r, addr(777));
    uintptr_t obj = r.objs[node];
    r.objs[node] = addr(778);
    EXPECT(retention_verify(&r), "target's node", "retention: a target's node holds another object");
    r.objs[node] = obj;
    r.nfound--;
    EXPECT(retention_verify(&r), "nfound", "retention: nfound one short");
    r.nfound++;

    /* the prefix tree */
    CHECK(retention_keep_paths(&r), "keep");
    EXPECT(retention_verify_kept(&r), NULL, "retention: the kept paths");
    /* a kept leaf that is no target: the last node's target slot forgets it */
    leaf = (uint32_t)r.n - 1;
    size_t slot = SIZE_MAX;
    for (size_t s = 0; s <= r.target_mask; s++) {
        if (r.target_keys[s] && r.target_nodes[s] == leaf) slot = s;
    }
    CHECK(slot != SIZE_MAX, "the last kept node is a target");
    r.target_nodes[slot] = RETENTION_NONE;
    r.nfound--;
    EXPECT(retention_verify(&r), NULL, "retention: the node array alone is sound");
    EXPECT(retention_verify_kept(&r), "no target's path", "retention: a kept node on no path");
    r.target_nodes[slot] = leaf;
    r.nfound++;
    EXPECT(retention_verify_kept(&r), NULL, "retention: restored");
    retention_free(&r);
}

int
main(void)
{
    test_probe();
    test_refset();
    test_records();
    test_timeline();
    test_labels();
    test_retention();
    return check_summary();
}
