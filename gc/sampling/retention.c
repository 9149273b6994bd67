/* retention.c: see retention.h. */
#include "retention.h"
#include "invariant.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

bool
retention_init(struct retention *r, size_t max, const uintptr_t *targets, size_t ntargets,
               retention_visit_fn *visit, void *visit_ctx)
{
    memset(r, 0, sizeof(*r));
    r->max = max < RETENTION_MAX_NODES ? max : RETENTION_MAX_NODES;
    r->visit = visit;
    r->visit_ctx = visit_ctx;
    r->cache_start = SIZE_MAX;
    /* the targets: a set of addresses, at most half full (probe.h; never
     * deleted from) */
    size_t slots = 16;
    while (slots < ntargets * 2) slots *= 2;
    r->target_keys = calloc(slots, sizeof(*r->target_keys));
    r->target_nodes = malloc(slots * sizeof(*r->target_nodes));
    if (!r->target_keys || !r->target_nodes) {
        retention_free(r);
        return false;
    }
    r->target_mask = slots - 1;
    for (size_t i = 0; i < ntargets; i++) {
        uintptr_t obj = targets[i];
        if (!obj) continue;
        size_t s = probe_home(obj, r->target_mask);
        while (r->target_keys[s] && r->target_keys[s] != obj) s = probe_next(s, r->target_mask);
        if (r->target_keys[s]) continue;    /* the same object twice */
        r->target_keys[s] = obj;
        r->target_nodes[s] = RETENTION_NONE;
        r->ntargets++;
    }
    return true;
}

static void
free_put_off(struct retention *r)
{
    free(r->put_off);
    free(r->put_off_parents);
    r->put_off = NULL;
    r->put_off_parents = NULL;
    r->nput_off = r->put_off_cap = r->put_off_head = 0;
}

void
retention_free(struct retention *r)
{
    free(r->objs);
    free(r->parents);
    free(r->depths);
    free_put_off(r);
    free(r->target_keys);
    free(r->target_nodes);
    free(r->top);
    memset(r, 0, sizeof(*r));
}

static size_t
target_find(const struct retention *r, uintptr_t obj)
{
    size_t s = probe_home(obj, r->target_mask);
    while (r->target_keys[s]) {
        if (r->target_keys[s] == obj) return s;
        s = probe_next(s, r->target_mask);
    }
    return SIZE_MAX;
}

uint32_t
retention_target_node(const struct retention *r, uintptr_t obj)
{
    if (!r->target_keys) return RETENTION_NONE;
    size_t s = target_find(r, obj);
    return s == SIZE_MAX ? RETENTION_NONE : r->target_nodes[s];
}

/* Doubles *cap until it holds need, but never past limit (the cap: the
 * arrays never hold more than max entries' worth). */
static bool
grow(void **p, size_t cap, size_t need, size_t elem, size_t limit, size_t *out)
{
    if (need <= cap) {
        *out = cap;
        return true;
    }
    size_t c = cap ? cap : 1024;
    while (c < need) c *= 2;
    if (c > limit && limit >= need) c = limit;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *out = c;
    return true;
}

static void
fail(struct retention *r)
{
    r->cut = r->failed = true;
}

/* Appends a node (obj must be newly visited). */
static void
append(struct retention *r, uintptr_t obj, uint32_t parent_word)
{
    if (r->n >= r->max) {
        r->cut = true;
        return;
    }
    if (r->n == r->cap) {
        size_t c1, c2, c3;
        if (!grow((void **)&r->objs, r->cap, r->n + 1, sizeof(*r->objs), r->max, &c1) ||
            !grow((void **)&r->parents, r->cap, r->n + 1, sizeof(*r->parents), r->max, &c2) ||
            !grow((void **)&r->depths, r->cap, r->n + 1, sizeof(*r->depths), r->max, &c3)) {
            fail(r);
            return;
        }
        /* (all grew by the same doubling; the smallest is what all hold) */
        r->cap = c1 < c2 ? c1 : c2;
        if (c3 < r->cap) r->cap = c3;
    }
    r->objs[r->n] = obj;
    r->parents[r->n] = parent_word;
    r->depths[r->n] = parent_word & RETENTION_ROOT ? 0 : r->depths[parent_word] + 1;
    if (r->ntargets) {
        size_t s = target_find(r, obj);
        if (s != SIZE_MAX && r->target_nodes[s] == RETENTION_NONE) {
            r->target_nodes[s] = (uint32_t)r->n;
            r->nfound++;
        }
    }
    r->n++;
}

/* A cache edge for the second pass (the first pass reaches nodes in depth
 * order, so these come in the order of their parents' depths). */
static void
put_off(struct retention *r, uintptr_t obj, uint32_t parent_word)
{
    if (r->cut || !obj) return;
    if (r->nput_off >= r->max) {
        r->cut = true;
        return;
    }
    if (r->nput_off == r->put_off_cap) {
        size_t c1, c2;
        if (!grow((void **)&r->put_off, r->put_off_cap, r->nput_off + 1, sizeof(*r->put_off), r->max, &c1) ||
            !grow((void **)&r->put_off_parents, r->put_off_cap, r->nput_off + 1, sizeof(*r->put_off_parents), r->max, &c2)) {
            fail(r);
            return;
        }
        r->put_off_cap = c1 < c2 ? c1 : c2;
    }
    r->put_off[r->nput_off] = obj;
    r->put_off_parents[r->nput_off++] = parent_word;
}

void
retention_add_root(struct retention *r, uintptr_t obj, uint32_t kind)
{
    SAMPLING_ASSERT(r->head == 0 && kind < RETENTION_ROOT);
    if (r->cut || !obj || !r->visit(r->visit_ctx, obj)) return;
    append(r, obj, RETENTION_ROOT | kind);
}

void
retention_add_cache_root(struct retention *r, uintptr_t obj, uint32_t kind)
{
    SAMPLING_ASSERT(r->head == 0 && kind < RETENTION_ROOT);
    put_off(r, obj, RETENTION_ROOT | kind);
}

void
retention_add(struct retention *r, uintptr_t obj, uint32_t parent)
{
    SAMPLING_ASSERT(parent < r->n);
    if (r->cut || !obj || !r->visit(r->visit_ctx, obj)) return;
    /* (asked once an object, not once an edge: the first edge into a
     * cache is from the shallowest parent, the one to keep) */
    if (!r->second && r->cache_object && r->cache_object(r->visit_ctx, obj)) {
        put_off(r, obj | 1, parent);
        return;
    }
    append(r, obj, parent);
}

void
retention_add_cache(struct retention *r, uintptr_t obj, uint32_t parent)
{
    if (r->second) retention_add(r, obj, parent);
    else put_off(r, obj, parent);
}

static inline bool
walk_done(const struct retention *r)
{
    return r->cut || (r->ntargets && r->nfound == r->ntargets);
}

static inline size_t
put_off_depth(const struct retention *r, size_t i)
{
    uint32_t p = r->put_off_parents[i];
    return p & RETENTION_ROOT ? 0 : (size_t)r->depths[p] + 1;
}

/* Second pass: the put-off edges join the queue at their depth, so the
 * queue's depths never decrease (before a node of depth d is expanded,
 * every put-off edge of depth d + 1 or less is in). */
static void
join_put_off(struct retention *r, size_t depth)
{
    while (r->put_off_head < r->nput_off && !r->cut && put_off_depth(r, r->put_off_head) <= depth) {
        size_t i = r->put_off_head++;
        uintptr_t obj = r->put_off[i];
        if (obj & 1) obj &= ~(uintptr_t)1;      /* (visited when put off) */
        else if (!r->visit(r->visit_ctx, obj)) continue;
        append(r, obj, r->put_off_parents[i]);
    }
}

void
retention_run(struct retention *r, retention_children_fn *children, void *ctx)
{
    while (r->head < r->n && !walk_done(r)) {
        uint32_t node = (uint32_t)r->head++;
        r->expanded++;
        children(ctx, r, node);
    }
    r->cache_start = r->n;
    r->second = true;
    while (!walk_done(r)) {
        if (r->head == r->n) {
            if (r->put_off_head == r->nput_off) break;
            join_put_off(r, put_off_depth(r, r->put_off_head));
            continue;
        }
        join_put_off(r, (size_t)r->depths[r->head] + 1);
        if (walk_done(r)) break;
        uint32_t node = (uint32_t)r->head++;
        r->expanded++;
        children(ctx, r, node);
    }
    r->walked = r->n;
    free_put_off(r);
}

bool
retention_keep_paths(struct retention *r)
{
    SAMPLING_ASSERT(r->second);
    /* new index of each kept node; RETENTION_NONE: dropped */
    uint32_t *renum = malloc((r->n ? r->n : 1) * sizeof(*renum));
    if (!renum) return false;
    memset(renum, 0xff, r->n * sizeof(*renum));
    /* mark: up from each target until a node already kept (so O(kept)) */
    for (size_t s = 0; s <= r->target_mask; s++) {
        if (!r->target_keys[s] || r->target_nodes[s] == RETENTION_NONE) continue;
        for (uint32_t x = r->target_nodes[s]; x != RETENTION_NONE && renum[x] == RETENTION_NONE; x = retention_parent(r, x)) {
            renum[x] = 0;
        }
    }
    /* compact in order: a parent comes before its child, so it is renumbered first */
    size_t k = 0, cache_start = r->n;
    for (size_t i = 0; i < r->n; i++) {
        if (renum[i] == RETENTION_NONE) continue;
        if (i >= r->cache_start && cache_start == r->n) cache_start = k;
        renum[i] = (uint32_t)k;
        r->objs[k] = r->objs[i];
        r->parents[k] = r->parents[i] & RETENTION_ROOT ? r->parents[i] : renum[r->parents[i]];
        r->depths[k] = r->depths[i];
        k++;
    }
    r->cache_start = cache_start == r->n ? k : cache_start;
    for (size_t s = 0; s <= r->target_mask; s++) {
        if (r->target_keys[s] && r->target_nodes[s] != RETENTION_NONE) r->target_nodes[s] = renum[r->target_nodes[s]];
    }
    free(renum);
    free(r->top);
    r->top = NULL;
    r->n = r->head = k;
    /* (shrinking cannot fail in a way that matters: the old block stays) */
    if (k) {
        void *p;
        if ((p = realloc(r->objs, k * sizeof(*r->objs)))) r->objs = p;
        if ((p = realloc(r->parents, k * sizeof(*r->parents)))) r->parents = p;
        if ((p = realloc(r->depths, k * sizeof(*r->depths)))) r->depths = p;
        r->cap = k;
    }
    return true;
}

uint32_t
retention_ancestor(struct retention *r, uint32_t node, size_t d)
{
    size_t depth = retention_depth(r, node);
    if (depth <= d) return node;
    if (!r->top) {
        r->top = malloc(r->n * sizeof(*r->top));
        if (!r->top) return RETENTION_NONE;
        memset(r->top, 0xff, r->n * sizeof(*r->top));
    }
    /* walk up to depth d or to a node whose ancestor is known, ... */
    uint32_t x = node, found = RETENTION_NONE;
    for (size_t k = depth; k > d; k--) {
        if (r->top[x] != RETENTION_NONE) {
            found = r->top[x];
            break;
        }
        x = r->parents[x];
    }
    if (found == RETENTION_NONE) found = x;
    /* ... then remember it for every node passed (a second walk as long) */
    for (uint32_t y = node; y != x; y = r->parents[y]) r->top[y] = found;
    return found;
}

size_t
retention_bytes(const struct retention *r)
{
    size_t b = r->cap * (sizeof(*r->objs) + sizeof(*r->parents) + sizeof(*r->depths));
    b += r->put_off_cap * (sizeof(*r->put_off) + sizeof(*r->put_off_parents));
    if (r->target_keys) b += (r->target_mask + 1) * (sizeof(*r->target_keys) + sizeof(*r->target_nodes));
    if (r->top) b += r->n * sizeof(*r->top);
    return b;
}

const char *
retention_verify(const struct retention *r)
{
    size_t pass_end = r->cache_start < r->n ? r->cache_start : r->n;
    for (size_t i = 0; i < r->n; i++) {
        if (i > 0 && i != pass_end && r->depths[i] < r->depths[i - 1]) return "depths decrease within a pass";
        if (r->parents[i] & RETENTION_ROOT) {
            if (r->depths[i] != 0) return "a root below depth 0";
            continue;
        }
        if (r->parents[i] >= i) return "a parent after its child";
        if (r->depths[r->parents[i]] + 1 != r->depths[i]) return "a parent not one level up";
    }
    if (r->head > r->n) return "the queue's head is past its end";
    size_t ntargets = 0, nfound = 0;
    for (size_t s = 0; r->target_keys && s <= r->target_mask; s++) {
        if (!r->target_keys[s]) continue;
        ntargets++;
        if (retention_target_node(r, r->target_keys[s]) != r->target_nodes[s]) return "a target is not found where it is";
        if (r->target_nodes[s] == RETENTION_NONE) continue;
        nfound++;
        if (r->target_nodes[s] >= r->n || r->objs[r->target_nodes[s]] != r->target_keys[s]) return "a target's node is not it";
    }
    if (ntargets != r->ntargets) return "ntargets is not the number of targets";
    if (nfound != r->nfound) return "nfound is not the number of targets reached";
    return NULL;
}

const char *
retention_verify_kept(const struct retention *r)
{
    const char *err = retention_verify(r);
    if (err || !r->n) return err;
    /* from the last node back: a node is on a path iff it is a reached
     * target or the parent of a node on a path (children come after) */
    unsigned char *on_path = calloc(r->n, 1);
    if (!on_path) return NULL;      /* (no memory to check with) */
    for (size_t s = 0; s <= r->target_mask; s++) {
        if (r->target_keys[s] && r->target_nodes[s] != RETENTION_NONE) on_path[r->target_nodes[s]] = 1;
    }
    for (size_t i = r->n; i-- > 0 && !err;) {
        if (!on_path[i]) err = "a kept node is on no target's path";
        else if (!retention_is_root(r, (uint32_t)i)) on_path[r->parents[i]] = 1;
    }
    free(on_path);
    return err;
}
