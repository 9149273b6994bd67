/*
 * test_retention.c: the breadth-first retention walk (gc/sampling/
 * retention.c) on mock object graphs: every path it gives is an edge of
 * the graph at every hop and as short as a plain reference BFS finds;
 * a 100,000-long list is walked without recursion; cycles end; the walk
 * stops once every target is found; the cap cuts it and says so; and
 * retention_ancestor agrees with walking the parents.  Random graphs
 * (fixed seed) with the invariants of retention.h checked after each.
 */
// links: retention.c gap.c
#include "check.h"
#include "retention.h"
#include "gap.h"

#include <string.h>

/* a mock heap: objects are 8 * (i + 1), adjacency lists */
enum { MAXN = 200000 };
static uint32_t *adj_start, *adj;      /* CSR */
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

static void
children(void *ctx, struct retention *r, uint32_t node)
{
    uint32_t i = index_of(r->objs[node]);
    for (uint32_t e = adj_start[i]; e < adj_start[i + 1]; e++) retention_add(r, addr(adj[e]), node);
}

static bool
has_edge(uint32_t a, uint32_t b)
{
    for (uint32_t e = adj_start[a]; e < adj_start[a + 1]; e++) if (adj[e] == b) return true;
    return false;
}

/* graph from an edge list */
static void
build(size_t n, const uint32_t (*edges)[2], size_t m)
{
    nobj = n;
    nedges = m;
    free(adj_start);
    free(adj);
    free(visited);
    adj_start = calloc(n + 1, sizeof(*adj_start));
    adj = malloc((m ? m : 1) * sizeof(*adj));
    visited = calloc(n, 1);
    for (size_t k = 0; k < m; k++) adj_start[edges[k][0] + 1]++;
    for (size_t i = 0; i < n; i++) adj_start[i + 1] += adj_start[i];
    uint32_t *fill = calloc(n, sizeof(*fill));
    for (size_t k = 0; k < m; k++) adj[adj_start[edges[k][0]] + fill[edges[k][0]]++] = edges[k][1];
    free(fill);
}

/* reference BFS distances from the roots */
static uint32_t *
distances(const uint32_t *roots, size_t nroots)
{
    uint32_t *d = malloc(nobj * sizeof(*d));
    uint32_t *q = malloc(nobj * sizeof(*q));
    memset(d, 0xff, nobj * sizeof(*d));
    size_t qh = 0, qt = 0;
    for (size_t i = 0; i < nroots; i++) if (d[roots[i]] == UINT32_MAX) { d[roots[i]] = 0; q[qt++] = roots[i]; }
    while (qh < qt) {
        uint32_t a = q[qh++];
        for (uint32_t e = adj_start[a]; e < adj_start[a + 1]; e++) {
            if (d[adj[e]] == UINT32_MAX) { d[adj[e]] = d[a] + 1; q[qt++] = adj[e]; }
        }
    }
    free(q);
    return d;
}

/* every target's path: edges of the graph, root first, shortest */
static int
check_paths(struct retention *r, const uint32_t *roots, size_t nroots, const uintptr_t *targets, size_t nt)
{
    uint32_t *d = distances(roots, nroots);
    for (size_t t = 0; t < nt; t++) {
        uint32_t node = retention_target_node(r, targets[t]);
        uint32_t ti = index_of(targets[t]);
        if (d[ti] == UINT32_MAX) {
            REQUIRE(node == RETENTION_NONE, "an unreachable target has a path");
            continue;
        }
        if (r->cut) continue;
        REQUIRE(node != RETENTION_NONE, "target %u not reached", ti);
        REQUIRE(retention_depth(r, node) == d[ti], "target %u at depth %zu, shortest %u", ti,
                retention_depth(r, node), d[ti]);
        size_t hops = 0;
        for (uint32_t x = node; !retention_is_root(r, x); x = retention_parent(r, x), hops++) {
            uint32_t p = retention_parent(r, x);
            REQUIRE(has_edge(index_of(r->objs[p]), index_of(r->objs[x])), "no edge %u -> %u",
                    index_of(r->objs[p]), index_of(r->objs[x]));
        }
        REQUIRE(hops == d[ti], "hops %zu", hops);
    }
    free(d);
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
    CHECK(r.nlevels == 100000, "one level a node: %zu", r.nlevels);
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
        for (size_t k = 0; k < m; k++) {
            e[k][0] = (uint32_t)(sampling_rng_next(&rng) % n);
            e[k][1] = (uint32_t)(sampling_rng_next(&rng) % n);
        }
        build(n, (const uint32_t (*)[2])e, m);
        free(e);
        uint32_t roots[4];
        size_t nroots = 1 + sampling_rng_next(&rng) % 4;
        for (size_t i = 0; i < nroots; i++) roots[i] = (uint32_t)(sampling_rng_next(&rng) % n);
        uintptr_t targets[64];
        size_t nt = 1 + sampling_rng_next(&rng) % 64;
        for (size_t i = 0; i < nt; i++) targets[i] = addr((uint32_t)(sampling_rng_next(&rng) % n));
        struct retention r;
        size_t cap = round % 5 == 0 ? 1 + sampling_rng_next(&rng) % n : SIZE_MAX;
        retention_init(&r, cap, targets, nt, visit, NULL);
        for (size_t i = 0; i < nroots; i++) retention_add_root(&r, addr(roots[i]), (uint32_t)i);
        retention_run(&r, children, NULL);
        const char *err = retention_verify(&r);
        CHECK(err == NULL, "round %d: %s", round, err);
        check_paths(&r, roots, nroots, targets, nt);
        retention_free(&r);
    }
}

int
main(void)
{
    test_list();
    test_stops_when_found();
    test_cap();
    test_random();
    free(adj_start);
    free(adj);
    free(visited);
    return check_summary();
}
