/*
 * retention.h: why is it still alive: one breadth-first traversal of the
 * object graph from the roots that finds a shortest path to every target
 * (the live sampled objects).
 *
 * Model.  The traversal keeps one node per object it reaches, in the
 * order it reaches them: node i is the object objs[i], reached from node
 * parents[i] (or, for a root, RETENTION_ROOT | its root kind).  The node
 * array is the breadth-first queue itself (head is the next node to
 * expand), so a node's parent always has a smaller index, nodes of one
 * depth are one contiguous run (levels[d] is the first node of depth d),
 * and following parents from a node gives a shortest path back to a root
 * (breadth-first: the first time an object is reached is by a path of
 * the fewest hops).  Nothing recurses: a 100,000-long linked list is
 * 100,000 nodes and 100,000 levels.
 *
 * Whether an object was reached is the caller's visited set (`visit`,
 * a test-and-set: sampling.c keeps one bit per slot beside each heap
 * page, never the collector's own mark bits).  Targets are an open-
 * addressing table of their addresses; the walk stops as soon as every
 * target is reached, or when the queue is empty, or at the cap.
 *
 * Memory: 12 bytes a node (an address and a parent index), 4 a level,
 * 16 a target, all malloc'd and freed by retention_free; at most `max`
 * nodes.  When the cap is reached (or malloc fails) the walk stops and
 * `cut` says so: the targets not reached by then have no path (their
 * paths are cut), nothing else changes.  Nothing here calls Ruby: the
 * caller expands a node (`children`) and hands each child to
 * retention_add.
 *
 * Invariants (retention_verify): parents[i] < i or is a root; a root's
 * parent word is RETENTION_ROOT | kind; levels are increasing and the
 * parent of a node of depth d + 1 has depth d; every reached target's
 * node holds its address.
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

struct retention {
    uintptr_t *objs;            /* [n] the object of each node, in the order reached */
    uint32_t *parents;          /* [n] the node it was reached from, or RETENTION_ROOT | root kind */
    size_t n, cap, max;         /* nodes, allocated, the cap */
    size_t head;                /* the next node to expand */
    uint32_t *levels;           /* [nlevels] first node of each depth */
    size_t nlevels, levels_cap;
    uintptr_t *target_keys;     /* open addressing, 0 = empty slot */
    uint32_t *target_nodes;     /* the node that reached it, RETENTION_NONE until then */
    size_t target_mask, ntargets, nfound;
    uint32_t *top;              /* lazily, retention_ancestor's memo (RETENTION_NONE: not known) */
    retention_visit_fn *visit;
    void *visit_ctx;
    size_t expanded;            /* nodes whose children were listed */
    bool cut;                   /* the cap (or memory) stopped the walk */
    bool failed;                /* (memory ran out: cut too) */
};

/* Prepares a walk of at most max nodes towards the given targets (0 is no
 * target).  False without memory. */
bool retention_init(struct retention *r, size_t max, const uintptr_t *targets, size_t ntargets,
                     retention_visit_fn *visit, void *visit_ctx);
void retention_free(struct retention *r);

/* Adds a root of the given kind (< RETENTION_ROOT).  Roots are added
 * before the walk; a root already reached is ignored. */
void retention_add_root(struct retention *r, uintptr_t obj, uint32_t kind);

/* Adds obj, reached from node parent, if it was not reached before. */
void retention_add(struct retention *r, uintptr_t obj, uint32_t parent);

/* Expands nodes in order: children(ctx, r, node) calls retention_add for
 * each object node's object refers to.  Stops when every target is
 * reached, the queue is empty, or the walk is cut. */
typedef void retention_children_fn(void *ctx, struct retention *r, uint32_t node);
void retention_run(struct retention *r, retention_children_fn *children, void *ctx);

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

/* Hops from a root to node (0 for a root): a binary search of levels. */
size_t retention_depth(const struct retention *r, uint32_t node);

/* The ancestor of node at depth d (<= its depth).  Amortised O(1) a call
 * for a fixed d: each node's ancestor at d is remembered once found, so a
 * long shared path is walked once, not once per target below it.
 * RETENTION_NONE without memory. */
uint32_t retention_ancestor(struct retention *r, uint32_t node, size_t d);

/* Bytes the walk holds now (for stats and the benchmark). */
size_t retention_bytes(const struct retention *r);

/* Checks the invariants above; NULL or a message. */
const char *retention_verify(const struct retention *r);

#endif
