/* retention.c: see retention.h. */
#include "retention.h"
#include "invariant.h"

#include <stdlib.h>
#include <string.h>

static inline size_t
target_slot(uintptr_t obj, size_t mask)
{
    /* (addresses are multiples of 8 or more: mix the high bits in) */
    uint64_t h = (uint64_t)obj * UINT64_C(0x9e3779b97f4a7c15);
    return (size_t)(h >> 32) & mask;
}

bool
retention_init(struct retention *r, size_t max, const uintptr_t *targets, size_t ntargets,
               retention_visit_fn *visit, void *visit_ctx)
{
    memset(r, 0, sizeof(*r));
    r->max = max < RETENTION_MAX_NODES ? max : RETENTION_MAX_NODES;
    r->visit = visit;
    r->visit_ctx = visit_ctx;
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
        size_t s = target_slot(obj, r->target_mask);
        while (r->target_keys[s] && r->target_keys[s] != obj) s = (s + 1) & r->target_mask;
        if (r->target_keys[s]) continue;    /* the same object twice */
        r->target_keys[s] = obj;
        r->target_nodes[s] = RETENTION_NONE;
        r->ntargets++;
    }
    return true;
}

void
retention_free(struct retention *r)
{
    free(r->objs);
    free(r->parents);
    free(r->levels);
    free(r->target_keys);
    free(r->target_nodes);
    free(r->top);
    memset(r, 0, sizeof(*r));
}

static size_t
target_find(const struct retention *r, uintptr_t obj)
{
    size_t s = target_slot(obj, r->target_mask);
    while (r->target_keys[s]) {
        if (r->target_keys[s] == obj) return s;
        s = (s + 1) & r->target_mask;
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
 * node arrays never hold more than max nodes' worth). */
static bool
grow(void **p, size_t *cap, size_t need, size_t elem, size_t limit)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 1024;
    while (c < need) c *= 2;
    if (c > limit && limit >= need) c = limit;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
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
        size_t cap = r->cap, cap2 = r->cap;
        if (!grow((void **)&r->objs, &cap, r->n + 1, sizeof(*r->objs), r->max) ||
            !grow((void **)&r->parents, &cap2, r->n + 1, sizeof(*r->parents), r->max)) {
            r->cut = r->failed = true;
            return;
        }
        /* (both grew by the same doubling; the smaller is what both hold) */
        r->cap = cap < cap2 ? cap : cap2;
    }
    /* a new depth starts with the first node whose parent is the last level's
     * first node or later (a root is depth 0) */
    if (!(parent_word & RETENTION_ROOT)) {
        if (parent_word >= r->levels[r->nlevels - 1]) {
            if (!grow((void **)&r->levels, &r->levels_cap, r->nlevels + 1, sizeof(*r->levels), SIZE_MAX)) {
                r->cut = r->failed = true;
                return;
            }
            r->levels[r->nlevels++] = (uint32_t)r->n;
        }
    }
    else if (r->nlevels == 0) {
        if (!grow((void **)&r->levels, &r->levels_cap, 1, sizeof(*r->levels), SIZE_MAX)) {
            r->cut = r->failed = true;
            return;
        }
        r->levels[r->nlevels++] = 0;
    }
    r->objs[r->n] = obj;
    r->parents[r->n] = parent_word;
    if (r->ntargets) {
        size_t s = target_find(r, obj);
        if (s != SIZE_MAX && r->target_nodes[s] == RETENTION_NONE) {
            r->target_nodes[s] = (uint32_t)r->n;
            r->nfound++;
        }
    }
    r->n++;
}

void
retention_add_root(struct retention *r, uintptr_t obj, uint32_t kind)
{
    SAMPLING_ASSERT(r->head == 0 && kind < RETENTION_ROOT);
    if (r->cut || !obj || !r->visit(r->visit_ctx, obj)) return;
    append(r, obj, RETENTION_ROOT | kind);
}

void
retention_add(struct retention *r, uintptr_t obj, uint32_t parent)
{
    SAMPLING_ASSERT(parent < r->n);
    if (r->cut || !obj || !r->visit(r->visit_ctx, obj)) return;
    append(r, obj, parent);
}

void
retention_run(struct retention *r, retention_children_fn *children, void *ctx)
{
    while (r->head < r->n && !r->cut && !(r->ntargets && r->nfound == r->ntargets)) {
        uint32_t node = (uint32_t)r->head++;
        r->expanded++;
        children(ctx, r, node);
    }
}

size_t
retention_depth(const struct retention *r, uint32_t node)
{
    /* the last level that starts at or before node */
    size_t lo = 0, hi = r->nlevels;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->levels[mid] <= node) lo = mid;
        else hi = mid;
    }
    return lo;
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
    size_t b = r->cap * (sizeof(*r->objs) + sizeof(*r->parents)) + r->levels_cap * sizeof(*r->levels);
    if (r->target_keys) b += (r->target_mask + 1) * (sizeof(*r->target_keys) + sizeof(*r->target_nodes));
    if (r->top) b += r->n * sizeof(*r->top);
    return b;
}

const char *
retention_verify(const struct retention *r)
{
    for (size_t i = 0; i < r->n; i++) {
        if (r->parents[i] & RETENTION_ROOT) {
            if (retention_depth(r, (uint32_t)i) != 0) return "a root below depth 0";
            continue;
        }
        if (r->parents[i] >= i) return "a parent after its child";
        if (retention_depth(r, r->parents[i]) + 1 != retention_depth(r, (uint32_t)i)) return "a parent not one level up";
    }
    for (size_t l = 1; l < r->nlevels; l++) {
        if (r->levels[l] <= r->levels[l - 1]) return "levels not increasing";
    }
    for (size_t s = 0; r->target_keys && s <= r->target_mask; s++) {
        if (!r->target_keys[s] || r->target_nodes[s] == RETENTION_NONE) continue;
        if (r->target_nodes[s] >= r->n || r->objs[r->target_nodes[s]] != r->target_keys[s]) return "a target's node is not it";
    }
    return NULL;
}
