/*
 * test_sites.c: the frame tree of sites.h, by properties over random
 * streams of stacks (fixed seeds).  Stacks are drawn so that they share
 * their outer frames (a few "frameworks" under varied inner frames), as
 * programs' do.  After every step:
 *
 *   - sampling_sites_verify passes (the tree's invariants among them);
 *   - each unnamed site's path gives back the frames it was found for;
 *   - the tree is as small as sharing allows: it holds exactly one node
 *     per distinct outer part (suffix) of the unnamed sites' stacks, so
 *     a stored frame is never stored twice and no node outlives its
 *     last path;
 *   - a site is named exactly when a reference on its path (or its
 *     class) died, with the frames it had; no node keeps a dead
 *     reference; compaction keeps every site findable by its moved
 *     frames.
 *
 * Then each tree invariant's corruption makes verify fail (the message
 * checked), and the memory count is exact.
 */
// links: sites.c refset.c gap.c
#include "check.h"
#include "sites.h"
#include "gap.h"

#include <stdlib.h>
#include <string.h>

static struct sampling_rng rng;
static uint64_t rnd(uint64_t n) { return sampling_rng_next(&rng) % n; }

#define MAX_DEPTH 24
#define TRACKED 20000

/* what each site (by id) was found for */
struct expected {
    uint64_t id;
    struct sampling_names *named;   /* the text it was named with */
    uint32_t n;
    struct sampling_frame frames[MAX_DEPTH];
};
static struct expected expected[TRACKED];
static uint64_t first_id;

static struct expected *
expected_of(const struct sampling_site *s)
{
    uint64_t i = s->id - first_id;
    return i < TRACKED && expected[i].id == s->id ? &expected[i] : NULL;
}

/* References: iseqs 8 * [1000, 1040), method entries 8 * [2000, 2030),
 * classes 8 * [3000, 3004); moved by compaction (shift). */
static uintptr_t dead_ref[3];   /* the references dying in this marking (0: none) */
static uintptr_t shift;

static uintptr_t
moved(uintptr_t ref, void *data)
{
    (void)data;
    return ref + shift;
}

static uintptr_t old_below;     /* references under it are old (state 2) */

static int
ref_state(uintptr_t ref, void *data)
{
    (void)data;
    for (int i = 0; i < 3; i++) {
        if (dead_ref[i] && ref == dead_ref[i]) return 0;
    }
    return ref < old_below ? 2 : 1;
}

static uint64_t names_made;
static int name_mismatch;

/* A site's text as a name function makes it, from its frames: one
 * location a frame (a C frame: no path), its class as "C<klass>"; a
 * stack with no frames: one "<none>".  Built as sampling_names_of lays
 * it out (the same text from the same frames: the test's expectation). */
static struct sampling_names *
names_from(const struct sampling_frame *f, uint32_t nframes, uintptr_t klass)
{
    char text[MAX_DEPTH * 48 + 64];
    size_t len = 0, at[MAX_DEPTH + 1][3];
    size_t klass_at = len;
    if (klass) len += (size_t)sprintf(text + len, "C%lu", (unsigned long)klass) + 1;
    uint32_t n = nframes ? nframes : 1;
    for (uint32_t i = 0; i < n; i++) {
        at[i][0] = len;
        if (nframes && f[i].iseq) len += (size_t)sprintf(text + len, "p%lu.rb", (unsigned long)(f[i].pc % 5));
        at[i][1] = len;
        len += (size_t)sprintf(text + len, nframes ? "m%lu" : "<none>", nframes ? (unsigned long)(f[i].cme % 7) : 0);
        at[i][2] = len;
    }
    text[len] = '\0';
    size_t head = sizeof(struct sampling_names) + n * sizeof(struct sampling_name);
    struct sampling_names *names = malloc(head + len + 1);
    char *t = (char *)names + head;
    memcpy(t, text, len + 1);
    names->klass = klass ? t + klass_at : NULL;
    names->n = n;
    for (uint32_t i = 0; i < n; i++) {
        bool path = nframes && f[i].iseq;
        names->locs[i] = (struct sampling_name){ path ? t + at[i][0] : NULL, t + at[i][1], (uint32_t)(at[i][1] - at[i][0]),
                                                 (uint32_t)(at[i][2] - at[i][1]), nframes ? (int)(f[i].pc % 3) : 0 };
    }
    return names;
}

/* Whether two names blocks say the same (and are laid out alike). */
static bool
names_same(const struct sampling_names *a, const struct sampling_names *b)
{
    if (!a->klass != !b->klass || (a->klass && strcmp(a->klass, b->klass) != 0) || a->n != b->n) return false;
    for (uint32_t i = 0; i < a->n; i++) {
        const struct sampling_name *x = &a->locs[i], *y = &b->locs[i];
        if (!x->path != !y->path || x->pathlen != y->pathlen || x->labellen != y->labellen || x->lineno != y->lineno ||
            (x->path && memcmp(x->path, y->path, x->pathlen) != 0) || memcmp(x->label, y->label, x->labellen) != 0) {
            return false;
        }
    }
    return sampling_names_memsize(a) == sampling_names_memsize(b);
}

/* The name callback: what a reader sees of the site then (its frames,
 * read from the tree before anything is freed), as text; now and then
 * none (no memory: the site shows as unknown). */
static struct sampling_names *
name_site(const struct sampling_site *site, void *data)
{
    (void)data;
    names_made++;
    struct sampling_frame got[MAX_DEPTH];
    sampling_site_frames(site, got);
    struct expected *e = expected_of(site);
    if (!e || e->n != site->nframes || memcmp(got, e->frames, e->n * sizeof(*got)) != 0) name_mismatch++;
    if (rnd(8) == 0) return NULL;
    if (e && !e->named) e->named = names_from(got, site->nframes, site->klass);
    return names_from(got, site->nframes, site->klass);
}

/* A stack: one of 4 outer parts ("frameworks", 0 to 14 frames) under 0 to
 * 6 inner frames from a small set, so that stacks repeat and share. */
static uint32_t
draw_stack(struct sampling_frame *f, uintptr_t base)
{
    static const uint32_t outer_len[4] = { 0, 3, 9, 14 };
    uint32_t outer = (uint32_t)rnd(4), inner = (uint32_t)rnd(7), n = 0;
    for (uint32_t i = 0; i < inner; i++) {
        uint32_t k = (uint32_t)rnd(5);
        uintptr_t cme = base + 8 * (2000 + (uintptr_t)rnd(3));
        f[n++] = (struct sampling_frame){ k == 4 ? 0 : base + 8 * (1000 + k), k == 3 ? 0 : cme,
                                          k == 4 ? 0 : 8 * (100 + (uintptr_t)rnd(3)) };
    }
    for (uint32_t i = 0; i < outer_len[outer]; i++) {
        uint32_t k = 10 + 8 * outer + i % 8;
        f[n++] = (struct sampling_frame){ base + 8 * (1000 + k), base + 8 * (2000 + k % 30), 8 * (200 + (uintptr_t)i) };
    }
    return n;
}

static bool
frames_equal(const struct sampling_frame *a, const struct sampling_frame *b, uint32_t n)
{
    return memcmp(a, b, n * sizeof(*a)) == 0;
}

/* The distinct outer parts of the unnamed sites' stacks: the nodes the
 * tree should hold (counted by a 64-bit hash of each outer part). */
static int
cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static size_t
distinct_suffixes(const struct sampling_sites *sites)
{
    static uint64_t hashes[TRACKED * MAX_DEPTH];
    size_t n = 0;
    SAMPLING_SITES_FOREACH(sites, s) {
        const struct expected *e = expected_of(s);
        if (s->names || !e) continue;
        uint64_t h = 1;
        for (uint32_t k = 1; k <= e->n; k++) {
            const struct sampling_frame *f = &e->frames[e->n - k];
            h = ((h ^ f->iseq) * PROBE_GOLDEN ^ f->cme) * PROBE_GOLDEN ^ f->pc;
            h *= PROBE_FNV_PRIME;
            hashes[n++] = h;
        }
    }
    qsort(hashes, n, sizeof(*hashes), cmp_u64);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) distinct += i == 0 || hashes[i] != hashes[i - 1];
    return distinct;
}

/* The capture's part, half the time: a recent site with the same stack
 * gives the key its path, and its site when the rest matches too. */
static void
as_capture(struct sampling_sites *sites, struct sampling_site_key *key)
{
    if (rnd(2) || key->truncated) return;
    struct sampling_site *const *ways = sampling_sites_recent(sites, key->recent);
    for (int i = 0; i < SAMPLING_RECENT_WAYS; i++) {
        struct sampling_site *s = ways[i];
        struct sampling_frame held[MAX_DEPTH];
        if (!s || s->truncated || !s->nframes || s->nframes != key->nframes) continue;
        sampling_site_frames(s, held);
        if (!frames_equal(held, key->frames, key->nframes)) continue;
        key->path = s->frames;
        if (sampling_site_rest_equal(s, key)) key->site = s;
        return;
    }
}

static void
test_random_trees(void)
{
    uint64_t sites_made = 0, shared_nodes = 0, frames_total = 0, named_total = 0, moves = 0;
    for (uint64_t seed = 1; seed <= 12; seed++) {
        sampling_rng_seed(&rng, seed);
        struct sampling_sites sites = { 0 };
        sites.max = 1 + rnd(150);
        first_id = 0;
        for (size_t i = 0; i < TRACKED; i++) free(expected[i].named);
        memset(expected, 0, sizeof(expected));
        uintptr_t base = 0;
        size_t uses = 0;
        static struct sampling_site *used[4096];
        int ok = 1;
        for (int op = 0; op < 1500 && ok; op++) {
            switch (rnd(12)) {
              case 0: {
                /* a marking: one to three references die (an iseq, a
                 * method entry, a class), or none; the iseqs under
                 * 1020 are old, and die only in a major marking (a
                 * minor one frees no old object) */
                bool major = rnd(2);
                old_below = base + 8 * 1020;
                for (int i = 0; i < 3; i++) dead_ref[i] = 0;
                if (rnd(3)) dead_ref[0] = base + 8 * (major ? 1000 + rnd(40) : 1020 + rnd(20));
                if (rnd(3) == 0) dead_ref[1] = base + 8 * (2000 + rnd(30));
                if (rnd(4) == 0) dead_ref[2] = base + 8 * (3000 + rnd(4));
                size_t unnamed_hit = 0;
                SAMPLING_SITES_FOREACH(&sites, s) {
                    const struct expected *e = expected_of(s);
                    bool hit = ref_state(s->klass, NULL) == 0 && s->klass;
                    for (uint32_t j = 0; e && j < e->n; j++) {
                        hit |= (e->frames[j].iseq && !ref_state(e->frames[j].iseq, NULL)) ||
                               (e->frames[j].cme && !ref_state(e->frames[j].cme, NULL));
                    }
                    unnamed_hit += hit && !s->names;
                }
                uint64_t before = names_made;
                name_mismatch = 0;
                sampling_sites_check_refs(&sites, ref_state, name_site, NULL, major);
                CHECK(names_made - before == unnamed_hit && !name_mismatch,
                      "seed %llu op %d: named %llu sites, %zu held a dead reference (%d names from other frames)",
                      (unsigned long long)seed, op, (unsigned long long)(names_made - before), unnamed_hit, name_mismatch);
                named_total += names_made - before;
                for (size_t i = 0; i < sites.nodes.capacity; i++) {
                    for (const struct sampling_frame_node *n = sites.nodes.heads[i]; n; n = n->next) {
                        if (!ref_state(n->frame.iseq, NULL) || !ref_state(n->frame.cme, NULL)) ok = 0;
                    }
                }
                CHECK(ok, "seed %llu op %d: a node keeps a dead reference", (unsigned long long)seed, op);
                /* every named site reads back the text it was named with */
                int same = 1;
                SAMPLING_SITES_FOREACH(&sites, s) {
                    const struct expected *e = expected_of(s);
                    if (!s->names || !e) continue;
                    struct sampling_names *got = sampling_named_names(s->names);
                    if (s->names == &sampling_named_unknown) same &= got && !got->klass && got->n == 0;
                    else same &= got && e->named && names_same(got, e->named);
                    free(got);
                }
                CHECK(same, "seed %llu op %d: a named site reads back other text", (unsigned long long)seed, op);
                for (int i = 0; i < 3; i++) dead_ref[i] = 0;
                old_below = 0;
                /* the dead never come back: new references from here */
                shift = 8 * 4096;
                sampling_sites_update_references(&sites, moved, NULL);
                for (size_t i = 0; i < TRACKED; i++) {
                    for (uint32_t j = 0; expected[i].id && j < expected[i].n; j++) {
                        if (expected[i].frames[j].iseq) expected[i].frames[j].iseq += shift;
                        if (expected[i].frames[j].cme) expected[i].frames[j].cme += shift;
                    }
                }
                base += shift;
                break;
              }
              case 1: {
                /* compaction: every reference moves; each site is found
                 * again by its moved frames, klass and kind */
                shift = 8 * (1 + rnd(5000));
                sampling_sites_update_references(&sites, moved, NULL);
                base += shift;
                moves++;
                int found = 1;
                SAMPLING_SITES_FOREACH(&sites, s) {
                    struct expected *e = expected_of(s);
                    if (!e) continue;
                    for (uint32_t j = 0; j < e->n; j++) {
                        if (e->frames[j].iseq) e->frames[j].iseq += shift;
                        if (e->frames[j].cme) e->frames[j].cme += shift;
                    }
                    if (s->names) continue;
                    struct sampling_site_key key = { .klass = s->klass, .frames = e->frames, .nframes = e->n,
                                                     .truncated = s->truncated, .kind = s->kind, .labels = s->labels,
                                                     .recent = 0 };
                    key.hash = sampling_stack_hash(e->frames, e->n, s->truncated);
                    if (sampling_sites_find(&sites, &key, false) != s) found = 0;
                }
                CHECK(found, "seed %llu op %d: compaction: every site found by its moved frames", (unsigned long long)seed, op);
                break;
              }
              case 2:
                if (uses && rnd(2)) {
                    size_t i = rnd(uses);
                    sampling_site_unuse(&sites, used[i]);
                    used[i] = used[--uses];
                }
                break;
              case 3:
                if (rnd(10) == 0) sampling_sites_fold_to(&sites, rnd(sites.max + 1));
                break;
              default: {
                struct sampling_frame f[MAX_DEPTH];
                struct sampling_site_key key = { 0 };
                key.nframes = draw_stack(f, base);
                key.frames = f;
                key.truncated = rnd(12) == 0;
                key.klass = rnd(4) ? base + 8 * (3000 + rnd(4)) : 0;
                key.kind.type = (uint16_t)rnd(2);
                key.labels = (uint32_t)rnd(2);
                key.recent = (uint8_t)rnd(3);
                key.hash = sampling_stack_hash(f, key.nframes, key.truncated);
                as_capture(&sites, &key);
                uint64_t next_id = sites.newest ? sites.newest->id + 1 : 0;
                struct sampling_site *s = sampling_sites_find(&sites, &key, true);
                if (!s) break;
                if (!first_id) first_id = s->id;
                struct expected *e = expected_of(s);
                if (!e && s->id - first_id < TRACKED) {
                    e = &expected[s->id - first_id];
                    e->id = s->id;
                    e->n = key.nframes;
                    memcpy(e->frames, f, key.nframes * sizeof(*f));
                    sites_made++;
                    frames_total += key.nframes;
                }
                (void)next_id;
                struct sampling_frame got[MAX_DEPTH];
                sampling_site_frames(s, got);
                if (s->nframes != key.nframes || !frames_equal(got, f, key.nframes)) {
                    CHECK(0, "seed %llu op %d: a site's path gives other frames than it was found for",
                          (unsigned long long)seed, op);
                    ok = 0;
                }
                if (uses < 4096 && rnd(3)) {
                    sampling_site_use(&sites, s);
                    used[uses++] = s;
                }
                break;
              }
            }
            const char *err = sampling_sites_verify(&sites, uses);
            if (err) {
                CHECK(0, "seed %llu op %d: %s", (unsigned long long)seed, op, err);
                ok = 0;
            }
            size_t want = distinct_suffixes(&sites);
            if (ok && sites.nodes.size != want) {
                CHECK(0, "seed %llu op %d: %zu nodes for %zu distinct outer parts", (unsigned long long)seed, op,
                      sites.nodes.size, want);
                ok = 0;
            }
        }
        shared_nodes += sites.nodes.size;
        CHECK(ok, "seed %llu: 1,500 steps, every property", (unsigned long long)seed);
        /* every site gone: no node, no reference left */
        while (uses) sampling_site_unuse(&sites, used[--uses]);
        sampling_sites_fold_to(&sites, 0);
        CHECK(sites.count == 0 && sites.nodes.size == 0 && sites.nodes.nslabs == 0 && sites.refs.size == 0 &&
              sites.names.size == 0 &&
              sites.names.bytes == 0,
              "seed %llu: folded to none: %zu sites, %zu nodes, %zu references, %zu locations", (unsigned long long)seed,
              sites.count, sites.nodes.size, sites.refs.size, sites.names.size);
        sampling_sites_free(&sites);
    }
    printf("the streams made %llu sites (%llu frames), named %llu, moved %llu times\n", (unsigned long long)sites_made,
           (unsigned long long)frames_total, (unsigned long long)named_total, (unsigned long long)moves);
    CHECK(sites_made > 2000 && named_total > 100 && moves > 100,
          "the streams made %llu sites (%llu frames), named %llu, moved %llu times", (unsigned long long)sites_made,
          (unsigned long long)frames_total, (unsigned long long)named_total, (unsigned long long)moves);
    (void)shared_nodes;
}

/* A new site costs its new frames: sixty shared frames under varied
 * leaves are stored once; the memory count is exact. */
static void
test_shared_memory(void)
{
    struct sampling_sites sites = { 0 };
    sites.max = 1000;
    struct sampling_frame f[64];
    for (uint32_t i = 0; i < 64; i++) f[i] = (struct sampling_frame){ 8 * (5000 + i), 8 * (6000 + i), 8 * (7000 + i) };
    for (uint32_t leaf = 0; leaf < 200; leaf++) {
        /* f[3..62]: the framework; f[0..2]: the application's leaf */
        f[0].pc = 8 * (9000 + leaf);
        f[1].pc = 8 * (9500 + leaf % 10);
        struct sampling_site_key key = { .frames = f, .nframes = 63, .klass = 8 * 3000, .recent = (uint8_t)(leaf % 4) };
        key.hash = sampling_stack_hash(f, 63, false);
        CHECK(sampling_sites_find(&sites, &key, true) != NULL, "site %u", leaf);
    }
    /* 61 shared nodes (f[2..62]), 10 for f[1], 200 leaves */
    CHECK(sites.count == 200 && sites.nodes.size == 61 + 10 + 200, "200 sites of 63 frames in %zu nodes",
          sites.nodes.size);
    size_t want = 200 * sizeof(struct sampling_site) +
                  (sites.nodes.size + SAMPLING_NODE_SLAB - 1) / SAMPLING_NODE_SLAB * sizeof(struct sampling_node_slab) +
                  sites.table.capacity * sizeof(void *) + sites.nodes.capacity * sizeof(void *) +
                  sites.refs.capacity * sizeof(struct refset_entry);
    CHECK(sampling_sites_memsize(&sites) == want, "memsize %zu, want %zu", sampling_sites_memsize(&sites), want);
    CHECK(sampling_sites_verify(&sites, 0) == NULL, "sound");
    sampling_sites_free(&sites);
}

#define EXPECT(err, want, what) do { \
    const char *e_ = (err), *w_ = (want); \
    CHECK(w_ ? e_ && strstr(e_, w_) : !e_, "%s: got \"%s\", want \"%s\"", what, e_ ? e_ : "(none)", w_ ? w_ : "(none)"); \
} while (0)

/* Each corruption of the tree makes verify fail with its message. */
static void
test_verify_tree(void)
{
    struct sampling_sites sites = { 0 };
    sites.max = 10;
    struct sampling_frame f[3] = { { 8 * 1000, 8 * 2000, 8 }, { 8 * 1001, 8 * 2001, 16 }, { 8 * 1002, 0, 24 } };
    struct sampling_site_key key = { .frames = f, .nframes = 3, .klass = 8 * 3000 };
    key.hash = sampling_stack_hash(f, 3, false);
    struct sampling_site *a = sampling_sites_find(&sites, &key, true);
    f[0].pc = 32;
    key.hash = sampling_stack_hash(f, 3, false);
    struct sampling_site *b = sampling_sites_find(&sites, &key, true);
    CHECK(a && b && a != b && a->frames->caller == b->frames->caller && sites.nodes.size == 4,
          "two sites share two nodes (%zu nodes)", sites.nodes.size);
    EXPECT(sampling_sites_verify(&sites, 0), NULL, "tree: sound");

    struct sampling_frame_node *shared = a->frames->caller;
    shared->refcount++;
    EXPECT(sampling_sites_verify(&sites, 0), "a node's refcount", "tree: a refcount one too many");
    shared->refcount--;

    shared->depth++;
    EXPECT(sampling_sites_verify(&sites, 0), "depth", "tree: a depth off");
    shared->depth--;

    shared->frame.pc += 8;
    EXPECT(sampling_sites_verify(&sites, 0), "home", "tree: a node out of its home's chain");
    shared->frame.pc -= 8;

    sites.nodes.size++;
    EXPECT(sampling_sites_verify(&sites, 0), "node count", "tree: node count one too many");
    sites.nodes.size--;

    struct sampling_frame_node *leaf = b->frames;
    b->frames = a->frames;
    EXPECT(sampling_sites_verify(&sites, 0), "hash", "tree: a site ends at another path");
    b->frames = leaf;

    /* a second node of the same frame under the same caller, first in
     * the chain of its home */
    struct sampling_frame_node *twin = sites.nodes.free, **head = NULL;
    sites.nodes.free = twin->next;
    *twin = *a->frames;
    for (size_t i = 0; i < sites.nodes.capacity && !head; i++) {
        for (struct sampling_frame_node *n = sites.nodes.heads[i]; n; n = n->next) {
            if (n == a->frames) head = &sites.nodes.heads[i];
        }
    }
    twin->next = *head;
    *head = twin;
    sites.nodes.size++;
    EXPECT(sampling_sites_verify(&sites, 0), "two nodes of one frame", "tree: a frame stored twice");
    *head = twin->next;
    sites.nodes.size--;
    twin->next = sites.nodes.free;
    sites.nodes.free = twin;

    /* a node both in the table and on the free list */
    struct sampling_frame_node *free_head = sites.nodes.free;
    sites.nodes.free = b->frames;
    EXPECT(sampling_sites_verify(&sites, 0), "slabs", "tree: a stored node on the free list");
    sites.nodes.free = free_head;

    sampling_frame_end.refcount++;
    EXPECT(sampling_sites_verify(&sites, 0), "end mark", "tree: the end mark written");
    sampling_frame_end.refcount--;

    refset_add(&sites.refs, 8 * 1001);
    EXPECT(sampling_sites_verify(&sites, 0), "miscounted", "tree: a node's reference counted twice");
    refset_remove(&sites.refs, 8 * 1001);

    EXPECT(sampling_sites_verify(&sites, 0), NULL, "tree: restored");
    sampling_sites_free(&sites);
}

int
main(void)
{
    test_random_trees();
    test_shared_memory();
    test_verify_tree();
    return check_summary();
}
