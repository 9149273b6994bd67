/*
 * test_retention.c: the breadth-first retention walk (gc/sampling/
 * retention.c) on mock object graphs: every path it gives is an edge of
 * the graph at every hop and as short as a plain reference BFS finds;
 * a 100,000-long list is walked without recursion; cycles end; the walk
 * stops once every target is found; the cap cuts it and says so; and
 * retention_ancestor agrees with walking the parents; cache edges are
 * taken only where no other path reaches a target, and such paths say
 * so; retention_keep_paths keeps exactly the targets' ancestors.  Random
 * graphs (fixed seed, some edges caches) with the invariants of
 * retention.h checked after each.
 */
// links: retention.c gap.c
#include "check.h"
#include "retention.h"
#include "gap.h"

#include <string.h>

/* a mock heap: objects are 8 * (i + 1), adjacency lists */
enum { MAXN = 200000 };
static uint32_t *adj_start, *adj;      /* CSR */
static unsigned char *adj_cache;        /* [edge] a cache edge */
static unsigned char *cache_objs;       /* [object] a cache object (every edge into it a cache edge) */
static size_t nobj, nedges;
static unsigned char *visited;

static uintptr_t addr(uint32_t i) { return (uintptr_t)(i + 1) * 8; }
static uint32_t index_of(uintptr_t a) { return (uint32_t)(a / 8 - 1); }

static bool
visit(void *ctx, uintptr_t obj)
{
    uint32_t i = index_of(obj);
    if (visited[i]) return false;
    visited[i] = 1;
    return true;
}

static bool
is_cache_object(void *ctx, uintptr_t obj)
{
    return cache_objs[index_of(obj)];
}

static void
children(void *ctx, struct retention *r, uint32_t node)
{
    uint32_t i = index_of(r->objs[node]);
    for (uint32_t e = adj_start[i]; e < adj_start[i + 1]; e++) {
        if (adj_cache[e]) retention_add_cache(r, addr(adj[e]), node);
        else retention_add(r, addr(adj[e]), node);
    }
}

static bool
has_edge(uint32_t a, uint32_t b)
{
    for (uint32_t e = adj_start[a]; e < adj_start[a + 1]; e++) if (adj[e] == b) return true;
    return false;
}

/* graph from an edge list; edges whose index is in caches[] are cache edges */
static void
build_caches(size_t n, const uint32_t (*edges)[2], size_t m, const unsigned char *caches)
{
    nobj = n;
    nedges = m;
    free(adj_start);
    free(adj);
    free(adj_cache);
    free(visited);
    free(cache_objs);
    cache_objs = calloc(n, 1);
    adj_start = calloc(n + 1, sizeof(*adj_start));
    adj = malloc((m ? m : 1) * sizeof(*adj));
    adj_cache = calloc(m ? m : 1, 1);
    visited = calloc(n, 1);
    for (size_t k = 0; k < m; k++) adj_start[edges[k][0] + 1]++;
    for (size_t i = 0; i < n; i++) adj_start[i + 1] += adj_start[i];
    uint32_t *fill = calloc(n, sizeof(*fill));
    for (size_t k = 0; k < m; k++) {
        uint32_t at = adj_start[edges[k][0]] + fill[edges[k][0]]++;
        adj[at] = edges[k][1];
        adj_cache[at] = caches ? caches[k] : 0;
    }
    free(fill);
}

static void
build(size_t n, const uint32_t (*edges)[2], size_t m)
{
    build_caches(n, edges, m, NULL);
}

/* reference BFS distances from the roots (over plain edges only, or all) */
static uint32_t *
distances_over(const uint32_t *roots, size_t nroots, bool plain_only)
{
    uint32_t *d = malloc(nobj * sizeof(*d));
    uint32_t *q = malloc(nobj * sizeof(*q));
    memset(d, 0xff, nobj * sizeof(*d));
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < nroots; i++) if (d[roots[i]] == UINT32_MAX) { d[roots[i]] = 0; q[qt++] = roots[i]; }
    while (qh < qt) {
        uint32_t a = q[qh++];
        for (uint32_t e = adj_start[a]; e < adj_start[a + 1]; e++) {
            if (plain_only && (adj_cache[e] || cache_objs[adj[e]])) continue;
            if (d[adj[e]] == UINT32_MAX) { d[adj[e]] = d[a] + 1; q[qt++] = adj[e]; }
        }
    }
    free(q);
    return d;
}

static uint32_t *
distances(const uint32_t *roots, size_t nroots)
{
    return distances_over(roots, nroots, false);
}

/* every target's path: edges of the graph, root first; the shortest
 * among those without a cache edge, or else one through a cache edge
 * (marked so, its cache edge the first on it), never shorter than the
 * shortest of all */
static int
check_paths(struct retention *r, const uint32_t *roots, size_t nroots, const uintptr_t *targets, size_t nt)
{
    uint32_t *d = distances(roots, nroots), *plain = distances_over(roots, nroots, true);
    for (size_t t = 0; t < nt; t++) {
        uint32_t node = retention_target_node(r, targets[t]);
        uint32_t ti = index_of(targets[t]);
        if (d[ti] == UINT32_MAX) {
            REQUIRE(node == RETENTION_NONE, "an unreachable target has a path");
            continue;
        }
        if (r->cut) continue;
        REQUIRE(node != RETENTION_NONE, "target %u not reached", ti);
        if (plain[ti] != UINT32_MAX) {
            REQUIRE(retention_depth(r, node) == plain[ti], "target %u at depth %zu, shortest plain %u", ti,
                    retention_depth(r, node), plain[ti]);
            REQUIRE(!retention_via_cache(r, node), "target %u reached through a cache", ti);
        }
        else {
            REQUIRE(retention_via_cache(r, node), "target %u only through a cache, not marked", ti);
            REQUIRE(retention_depth(r, node) >= d[ti], "shorter than the shortest");
        }
        size_t hops = 0, cache_edges = 0;
        for (uint32_t x = node;; x = retention_parent(r, x), hops++) {
            cache_edges += retention_cache_edge(r, x);
            if (retention_is_root(r, x)) break;
            uint32_t p = retention_parent(r, x);
            REQUIRE(has_edge(index_of(r->objs[p]), index_of(r->objs[x])), "no edge %u -> %u",
                    index_of(r->objs[p]), index_of(r->objs[x]));
        }
        REQUIRE(hops == retention_depth(r, node), "hops %zu", hops);
        REQUIRE(cache_edges == (retention_via_cache(r, node) ? 1u : 0u), "%zu cache edges marked", cache_edges);
    }
    free(d);
    free(plain);
    check_passed++;
    return 1;
}

static void
test_list(void)
{
    /* 0 -> 1 -> ... -> n-1, and a back edge making a cycle */
    size_t n = 100000;
    uint32_t (*e)[2] = malloc(n * sizeof(*e));
    for (size_t i = 0; i + 1 < n; i++) { e[i][0] = (uint32_t)i; e[i][1] = (uint32_t)i + 1; }
    e[n - 1][0] = (uint32_t)n - 1; e[n - 1][1] = 0;
    build(n, (const uint32_t (*)[2])e, n);
    free(e);
    uintptr_t targets[] = { addr(99999), addr(50000), addr(1) };
    struct retention r;
    CHECK(retention_init(&r, SIZE_MAX, targets, 3, visit, NULL), "init");
    retention_add_root(&r, addr(0), 1);
    retention_run(&r, children, NULL);
    CHECK(!r.cut, "not cut");
    CHECK(retention_depth(&r, retention_target_node(&r, addr(99999))) == 99999, "the tail at depth 99999");
    CHECK(r.n == 100000, "one node an object: %zu", r.n);
    CHECK(retention_verify(&r) == NULL, "%s", retention_verify(&r));
    uint32_t root = 0;
    check_paths(&r, &root, 1, targets, 3);
    /* the ancestor at depth 32 of every target, memoised: agrees with the parents */
    for (size_t t = 0; t < 3; t++) {
        uint32_t node = retention_target_node(&r, targets[t]);
        uint32_t a = retention_ancestor(&r, node, 32), x = node;
        while (retention_depth(&r, x) > 32) x = retention_parent(&r, x);
        CHECK(a == x, "ancestor of target %zu", t);
        CHECK(retention_ancestor(&r, node, 32) == x, "again, from the memo");
    }
    retention_free(&r);
}

static void
test_stops_when_found(void)
{
    /* a star: root 0 -> 1..999; the target is 1 */
    uint32_t e[999][2];
    for (uint32_t i = 0; i < 999; i++) { e[i][0] = 0; e[i][1] = i + 1; }
    build(1000, (const uint32_t (*)[2])e, 999);
    /* and a chain below: nothing below the first level is needed */
    uintptr_t t = addr(1);
    struct retention r;
    retention_init(&r, SIZE_MAX, &t, 1, visit, NULL);
    retention_add_root(&r, addr(0), 0);
    retention_run(&r, children, NULL);
    CHECK(r.expanded == 1, "stopped after the root: %zu expanded", r.expanded);
    CHECK(retention_target_node(&r, t) == 1, "found");
    retention_free(&r);
}

static void
test_cap(void)
{
    size_t n = 10000;
    uint32_t (*e)[2] = malloc(n * sizeof(*e));
    for (size_t i = 0; i + 1 < n; i++) { e[i][0] = (uint32_t)i; e[i][1] = (uint32_t)i + 1; }
    build(n, (const uint32_t (*)[2])e, n - 1);
    free(e);
    uintptr_t targets[] = { addr(10), addr(5000) };
    struct retention r;
    retention_init(&r, 100, targets, 2, visit, NULL);
    retention_add_root(&r, addr(0), 0);
    retention_run(&r, children, NULL);
    CHECK(r.cut, "cut at the cap");
    CHECK(r.n == 100, "100 nodes: %zu", r.n);
    CHECK(retention_target_node(&r, addr(10)) != RETENTION_NONE, "the near target found");
    CHECK(retention_target_node(&r, addr(5000)) == RETENTION_NONE, "the far one not: its path is cut");
    CHECK(retention_verify(&r) == NULL, "%s", retention_verify(&r));
    retention_free(&r);
}

static void
test_random(void)
{
    struct sampling_rng rng;
    sampling_rng_seed(&rng, 17);
    for (int round = 0; round < 200; round++) {
        size_t n = 2 + sampling_rng_next(&rng) % 3000;
        size_t m = sampling_rng_next(&rng) % (n * 3);
        uint32_t (*e)[2] = malloc((m ? m : 1) * sizeof(*e));
        unsigned char *caches = malloc(m ? m : 1);
        for (size_t k = 0; k < m; k++) {
            e[k][0] = (uint32_t)(sampling_rng_next(&rng) % n);
            e[k][1] = (uint32_t)(sampling_rng_next(&rng) % n);
            caches[k] = round % 2 && sampling_rng_next(&rng) % 4 == 0;
        }
        build_caches(n, (const uint32_t (*)[2])e, m, caches);
        free(e);
        free(caches);
        /* some rounds: cache objects too */
        if (round % 3 == 1) for (size_t i = 0; i < n; i++) cache_objs[i] = sampling_rng_next(&rng) % 8 == 0;
        uint32_t roots[4];
        size_t nroots = 1 + sampling_rng_next(&rng) % 4;
        for (size_t i = 0; i < nroots; i++) roots[i] = (uint32_t)(sampling_rng_next(&rng) % n);
        uintptr_t targets[64];
        size_t nt = 1 + sampling_rng_next(&rng) % 64;
        for (size_t i = 0; i < nt; i++) targets[i] = addr((uint32_t)(sampling_rng_next(&rng) % n));
        struct retention r;
        size_t cap = round % 5 == 0 ? 1 + sampling_rng_next(&rng) % n : SIZE_MAX;
        retention_init(&r, cap, targets, nt, visit, NULL);
        r.cache_object = is_cache_object;
        for (size_t i = 0; i < nroots; i++) retention_add_root(&r, addr(roots[i]), (uint32_t)i);
        retention_run(&r, children, NULL);
        const char *err = retention_verify(&r);
        CHECK(err == NULL, "round %d: %s", round, err);
        check_paths(&r, roots, nroots, targets, nt);
        /* the kept prefix tree: the same paths, and only their nodes */
        size_t walked = r.n;
        uint32_t before[64];
        for (size_t i = 0; i < nt; i++) {
            uint32_t node = retention_target_node(&r, targets[i]);
            before[i] = node == RETENTION_NONE ? RETENTION_NONE : (uint32_t)retention_depth(&r, node);
        }
        CHECK(retention_keep_paths(&r), "keep");
        err = retention_verify(&r);
        CHECK(err == NULL, "round %d kept: %s", round, err);
        CHECK(r.n <= walked, "kept %zu of %zu", r.n, walked);
        for (size_t i = 0; i < nt; i++) {
            uint32_t node = retention_target_node(&r, targets[i]);
            CHECK(node == RETENTION_NONE ? before[i] == RETENTION_NONE : retention_depth(&r, node) == before[i],
                  "round %d: target %zu kept at its depth", round, i);
        }
        check_paths(&r, roots, nroots, targets, nt);
        /* every kept node is some target's ancestor: the leaves are targets */
        unsigned char *has_child = calloc(r.n ? r.n : 1, 1);
        for (size_t i = 0; i < r.n; i++) if (!retention_is_root(&r, (uint32_t)i)) has_child[r.parents[i]] = 1;
        size_t leaves_not_targets = 0;
        for (size_t i = 0; i < r.n; i++) {
            if (has_child[i]) continue;
            if (retention_target_node(&r, r.objs[i]) != i) leaves_not_targets++;
        }
        CHECK(leaves_not_targets == 0, "round %d: %zu kept leaves are no target", round, leaves_not_targets);
        free(has_child);
        retention_free(&r);
    }
}

static void
test_cache_edges(void)
{
    /* 0 -c-> 1 -> 2 (target, 2 hops through a cache); 0 -> 3 -> 4 -> 5 -> 2
     * (4 plain hops); 0 -c-> 6 -> 7 (target only through the cache);
     * 8 is a root put off (running code): 8 -> 9 (target), 8 -> 7 */
    static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 0, 3 }, { 3, 4 }, { 4, 5 }, { 5, 2 }, { 0, 6 }, { 6, 7 },
                                     { 8, 9 }, { 8, 7 } };
    static const unsigned char c[] = { 1, 0, 0, 0, 0, 0, 1, 0, 0, 0 };
    build_caches(10, e, sizeof(e) / sizeof(e[0]), c);
    uintptr_t targets[] = { addr(2), addr(7), addr(9) };
    struct retention r;
    retention_init(&r, SIZE_MAX, targets, 3, visit, NULL);
    retention_add_root(&r, addr(0), 0);
    retention_add_cache_root(&r, addr(8), 1);
    retention_run(&r, children, NULL);
    CHECK(retention_verify(&r) == NULL, "%s", retention_verify(&r));
    uint32_t n2 = retention_target_node(&r, addr(2)), n7 = retention_target_node(&r, addr(7));
    uint32_t n9 = retention_target_node(&r, addr(9));
    CHECK(retention_depth(&r, n2) == 4 && !retention_via_cache(&r, n2), "2 by the plain path: depth %zu",
          retention_depth(&r, n2));
    CHECK(retention_via_cache(&r, n7) && retention_via_cache(&r, n9), "7 and 9 only through caches");
    /* the put-off root is depth 0, the cache edge 0 -> 6 depth 1: 7 from the root 8 */
    CHECK(retention_depth(&r, n7) == 1 && r.objs[retention_parent(&r, n7)] == addr(8), "7 from the nearer put-off root");
    CHECK(retention_cache_edge(&r, retention_parent(&r, n7)) && !retention_cache_edge(&r, n7), "the edge marked is the root's");
    CHECK(retention_is_root(&r, retention_parent(&r, n9)) && retention_root_kind(&r, retention_parent(&r, n9)) == 1,
          "9 from its root");
    retention_free(&r);
}

static void
test_cache_objects(void)
{
    /* 1 and 6 are caches (every edge into them): 0 -> 1 -> 2 (target,
     * 2 hops) and 0 -> 3 -> 4 -> 5 -> 2 (4 plain); 0 -> 6 -> 7 and
     * 3 -> 6 (7 only through the cache, from the shallower parent 0) */
    static const uint32_t e[][2] = { { 0, 1 }, { 1, 2 }, { 0, 3 }, { 3, 4 }, { 4, 5 }, { 5, 2 }, { 3, 6 }, { 0, 6 },
                                     { 6, 7 } };
    build(8, e, sizeof(e) / sizeof(e[0]));
    cache_objs[1] = cache_objs[6] = 1;
    uintptr_t targets[] = { addr(2), addr(7) };
    struct retention r;
    retention_init(&r, SIZE_MAX, targets, 2, visit, NULL);
    r.cache_object = is_cache_object;
    retention_add_root(&r, addr(0), 0);
    retention_run(&r, children, NULL);
    CHECK(retention_verify(&r) == NULL, "%s", retention_verify(&r));
    uint32_t n2 = retention_target_node(&r, addr(2)), n7 = retention_target_node(&r, addr(7));
    CHECK(retention_depth(&r, n2) == 4 && !retention_via_cache(&r, n2), "2 by the plain path");
    CHECK(retention_via_cache(&r, n7) && retention_depth(&r, n7) == 2, "7 through the cache, at depth %zu",
          retention_depth(&r, n7));
    uint32_t c = retention_parent(&r, n7);
    CHECK(r.objs[c] == addr(6) && retention_cache_edge(&r, c) && r.objs[retention_parent(&r, c)] == addr(0),
          "the cache 6 from 0, marked");
    uint32_t seen6 = 0;
    for (size_t i = 0; i < r.n; i++) seen6 += r.objs[i] == addr(6);
    CHECK(seen6 == 1, "6 once: %u", seen6);
    retention_free(&r);
}

int
main(void)
{
    test_list();
    test_cache_edges();
    test_cache_objects();
    test_stops_when_found();
    test_cap();
    test_random();
    free(adj_start);
    free(adj);
    free(adj_cache);
    free(cache_objs);
    free(visited);
    return check_summary();
}
