/*
 * retention.h: why is it still alive: one breadth-first traversal of the
 * object graph from the roots that finds a shortest path to every target
 * (the live sampled objects), preferring paths that pass through no cache.
 *
 * Model.  The traversal keeps one node per object it reaches, in the
 * order it reaches them: node i is the object objs[i], reached from node
 * parents[i] (or, for a root, RETENTION_ROOT | its root kind), depths[i]
 * hops from a root.  The node array is the breadth-first queue itself
 * (head is the next node to expand), so a node's parent always has a
 * smaller index, and following parents from a node gives its path back
 * to a root.  Nothing recurses: a 100,000-long linked list is 100,000
 * nodes and 100,000 levels.
 *
 * Cache edges.  Some references are not a reason to be alive: an inline
 * constant cache or a call cache, or the instruction sequence of code
 * that happens to be running, owns nothing.  The caller hands such an
 * edge over with retention_add_cache (retention_add_cache_root for a
 * root), or says which objects are caches whatever refers to them
 * (`cache_object`, asked once an object, when it is first reached: an
 * edge into one is a cache edge), and it is put off: the first pass is a plain breadth-first walk
 * of the other edges; only if targets are left when it ends does a
 * second pass follow the put-off edges, in the order of their depth
 * (a breadth-first walk whose sources join the queue at their depth),
 * with every edge plain from then on.  So a target gets a shortest path
 * among those without a cache edge, and only where there is none, a
 * shortest path through one (a 0-1 cost order, still linear: each edge
 * is handed over once, each put-off edge looked at once more).  Nodes
 * from cache_start on were reached by the second pass: their paths pass
 * through a cache edge, the one into the first such node on the path
 * (retention_cache_edge).
 *
 * Whether an object was reached is the caller's visited set (`visit`,
 * a test-and-set: sampling.c keeps one bit per slot beside each heap
 * page, never the collector's own mark bits).  Targets are an open-
 * addressing table of their addresses; the walk stops as soon as every
 * target is reached, or when both passes are done, or at the cap.
 *
 * After the walk, retention_keep_paths drops every node that is on no
 * target's path (renumbering the rest in the same order): what is left
 * is the shared prefix tree of the paths, a parent pointer per object on
 * some path, from which any path is rebuilt when asked.
 *
 * Memory: 16 bytes a node (an address, a parent index, a depth), 12 a
 * put-off edge, 16 a target, all malloc'd and freed by retention_free;
 * at most `max` nodes and `max` put-off edges.  When the cap is reached
 * (or malloc fails) the walk stops and `cut` says so: the targets not
 * reached by then have no path (their paths are cut), nothing else
 * changes.  Nothing here calls Ruby: the caller expands a node
 * (`children`) and hands each child to retention_add or _add_cache.
 *
 * Invariants (retention_verify): parents[i] < i or is a root; a root's
 * parent word is RETENTION_ROOT | kind and its depth 0; a node's depth
 * is its parent's plus one; depths do not decrease within each pass;
 * every reached target's node holds its address, and a lookup finds it;
 * nfound counts the reached targets, ntargets the targets; head <= n.
 * After retention_keep_paths, also (retention_verify_kept): every node
 * is on some reached target's path (the leaves are targets).
 */
#ifndef SAMPLING_RETENTION_H
#define SAMPLING_RETENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define RETENTION_NONE UINT32_MAX
#define RETENTION_ROOT 0x80000000u      /* parents[i] of a root: RETENTION_ROOT | kind */
#define RETENTION_MAX_NODES ((size_t)RETENTION_ROOT - 1)

/* Test-and-set: true when obj was not visited before (and now is). */
typedef bool retention_visit_fn(void *ctx, uintptr_t obj);
/* Whether obj is a cache: every edge into it is a cache edge. */
typedef bool retention_cache_fn(void *ctx, uintptr_t obj);

struct retention {
    uintptr_t *objs;            /* [n] the object of each node, in the order reached */
    uint32_t *parents;          /* [n] the node it was reached from, or RETENTION_ROOT | root kind */
    uint32_t *depths;           /* [n] hops from its root */
    size_t n, cap, max;         /* nodes, allocated, the cap */
    size_t head;                /* the next node to expand */
    size_t cache_start;         /* the first node of the second pass (n until it starts) */
    uintptr_t *put_off;         /* [nput_off] cache edges' objects, for the second pass
                                 * (| 1: a cache object, visited when put off) */
    uint32_t *put_off_parents;  /* [nput_off] their parent words */
    size_t nput_off, put_off_cap, put_off_head;
    bool second;                /* in the second pass: cache edges are plain */
    uintptr_t *target_keys;     /* open addressing (probe.h), 0 = empty slot */
    uint32_t *target_nodes;     /* the node that reached it, RETENTION_NONE until then */
    size_t target_mask, ntargets, nfound;
    uint32_t *top;              /* lazily, retention_ancestor's memo (RETENTION_NONE: not known) */
    retention_visit_fn *visit;
    retention_cache_fn *cache_object;   /* optional (same ctx); the caller may change it
                                         * while it lists a node's children */
    void *visit_ctx;
    size_t expanded;            /* nodes whose children were listed */
    size_t walked;              /* nodes the walk made (n before retention_keep_paths) */
    bool cut;                   /* the cap (or memory) stopped the walk */
    bool failed;                /* (memory ran out: cut too) */
};

/* Prepares a walk of at most max nodes towards the given targets (0 is no
 * target).  False without memory. */
bool retention_init(struct retention *r, size_t max, const uintptr_t *targets, size_t ntargets,
                     retention_visit_fn *visit, void *visit_ctx);
void retention_free(struct retention *r);

/* Adds a root of the given kind (< RETENTION_ROOT).  Roots are added
 * before the walk; a root already reached is ignored.  _cache: a root
 * that is no reason to be alive (the code running), put off. */
void retention_add_root(struct retention *r, uintptr_t obj, uint32_t kind);
void retention_add_cache_root(struct retention *r, uintptr_t obj, uint32_t kind);

/* Adds obj, reached from node parent, if it was not reached before.
 * _cache: by a cache edge, put off to the second pass. */
void retention_add(struct retention *r, uintptr_t obj, uint32_t parent);
void retention_add_cache(struct retention *r, uintptr_t obj, uint32_t parent);

/* Expands nodes in order: children(ctx, r, node) calls retention_add for
 * each object node's object refers to.  Stops when every target is
 * reached, both passes are done, or the walk is cut. */
typedef void retention_children_fn(void *ctx, struct retention *r, uint32_t node);
void retention_run(struct retention *r, retention_children_fn *children, void *ctx);

/* Keeps only the nodes on some reached target's path (their order, and
 * so every invariant, stays): what a caller keeps to rebuild paths.  No
 * more walking after it.  False without memory (then nothing changed). */
bool retention_keep_paths(struct retention *r);

/* The node that reached a target, RETENTION_NONE if none did. */
uint32_t retention_target_node(const struct retention *r, uintptr_t obj);

static inline bool
retention_is_root(const struct retention *r, uint32_t node)
{
    return (r->parents[node] & RETENTION_ROOT) != 0;
}

static inline uint32_t
retention_root_kind(const struct retention *r, uint32_t node)
{
    return r->parents[node] & ~RETENTION_ROOT;
}

static inline uint32_t
retention_parent(const struct retention *r, uint32_t node)
{
    return retention_is_root(r, node) ? RETENTION_NONE : r->parents[node];
}

/* Hops from a root to node (0 for a root). */
static inline size_t
retention_depth(const struct retention *r, uint32_t node)
{
    return r->depths[node];
}

/* Whether node's path passes through a cache edge, and whether the edge
 * into node is that cache edge (the first on its path). */
static inline bool
retention_via_cache(const struct retention *r, uint32_t node)
{
    return node >= r->cache_start;
}

static inline bool
retention_cache_edge(const struct retention *r, uint32_t node)
{
    return node >= r->cache_start && (retention_is_root(r, node) || r->parents[node] < r->cache_start);
}

/* The ancestor of node at depth d (<= its depth).  Amortised O(1) a call
 * for a fixed d: each node's ancestor at d is remembered once found, so a
 * long shared path is walked once, not once per target below it.
 * RETENTION_NONE without memory. */
uint32_t retention_ancestor(struct retention *r, uint32_t node, size_t d);

/* Bytes the walk holds now (for stats and the benchmark). */
size_t retention_bytes(const struct retention *r);

/* Checks the invariants above; NULL or a message.  O(n + targets): for
 * --enable-checks (retention_walk.c after each walk, retention_read.c
 * after keep_paths) and the tests.  _kept: retention_verify and the
 * prefix tree, after retention_keep_paths. */
const char *retention_verify(const struct retention *r);
const char *retention_verify_kept(const struct retention *r);

#endif
