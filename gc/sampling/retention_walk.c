/*
 * retention_walk.c: the retention walk's view of the heap (included by
 * sampling.c after default.c: it reads the heap pages and the finalizer
 * table).  retention.c does the breadth-first walk; this file gives it
 *
 *   roots     what rb_objspace_reachable_objects_from_root reports (the
 *             VM, end procs, global variables, the current thread's
 *             machine stack, ...) and the values of the finalizer table,
 *             which the default GC marks itself (mark_roots) and that
 *             function leaves out;
 *   children  rb_objspace_reachable_objects_from: the object's own mark
 *             function, through the mark_func_data override, so it
 *             follows exactly the references the collector follows
 *             (strong ones: weak references are not reported);
 *   visited   one bit per slot beside each heap page, in malloc'd
 *             memory: the collector's mark bits are never touched;
 *   caches    which edges are no reason to be alive (retention.h puts
 *             them off): into an inline constant cache or a call cache
 *             (imemo constcache, callcache: from an iseq, or a class's
 *             call cache table), and into the code running (an iseq or
 *             a method entry) from a thread's or fiber's frames or from
 *             the machine stack, whose words are the running C code's;
 *             and the JITs': what compiled code embeds (YJIT puts a
 *             constant's value in the code, and the iseq's mark function
 *             reports it: retention_names_jit_take tells those apart)
 *             and the method entries the JIT's own root holds.
 *
 * It runs inside a read (sampler_read_begin: GC off, so nothing moves or
 * is freed, and the VM lock), after the VM barrier when a second Ractor
 * exists, so no other Ractor runs Ruby code while the graph is read.  It
 * allocates no Ruby object and calls no Ruby method: what it reads stays
 * as it was (no mark bit, no object id, no flag).
 *
 * From its host.  Included, this file uses what sampling.c defines
 * before the include, which no header declares: sampler.records (the
 * live records, the walk's targets), sampling_ractors (a second
 * Ractor exists: the VM barrier first) and sampler_objspace (the heap
 * walked: 4.1's main Ractor's); and from default.c: rb_objspace_t
 * (heap_pages.sorted), struct heap_page (body, total_slots), bits_t,
 * HEAP_PAGE_SIZE, HEAP_PAGE_BITMAP_LIMIT, finalizer_table, during_gc,
 * is_incremental_marking, 4.1's global_objspace (its page index); and
 * ruby_version.h's SAMPLING_BITMAP_INDEX and _OFFSET.
 */

void rb_objspace_reachable_objects_from(VALUE obj, void (func)(VALUE, void *), void *data);
void rb_objspace_reachable_objects_from_root(void (func)(const char *category, VALUE, void *), void *data);

/* One bit per BASE_SLOT_SIZE of each page, pages in address order (the
 * heap's own sorted array: its order does not change while GC is off). */
struct walk {
    struct heap_page **pages;
    size_t npages;
    bits_t *bits;               /* [npages * HEAP_PAGE_BITMAP_LIMIT] */
    struct retention *r;
    uint32_t node;              /* the node being expanded */
    bool running;               /* it is a thread or fiber: its frames' code is running code */
    bool jit;                   /* listing an iseq's references again, with its compiled code's */
    /* roots as reported, kept until all are in: then added by kind */
    VALUE *roots;
    uint8_t *kinds;
    size_t nroots, roots_cap;
    bool failed;
};

static size_t
walk_page_index(const struct walk *w, uintptr_t p)
{
    size_t lo = 0, hi = w->npages;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uintptr_t body = (uintptr_t)w->pages[mid]->body;
        if (p < body) hi = mid;
        else if (p >= body + HEAP_PAGE_SIZE) lo = mid + 1;
        else return mid;
    }
    return SIZE_MAX;
}

static bool
walk_visit(void *ctx, uintptr_t obj)
{
    struct walk *w = ctx;
    size_t page = walk_page_index(w, obj);
    if (page == SIZE_MAX) return false;     /* not a heap slot: nothing to walk */
    bits_t *word = &w->bits[page * HEAP_PAGE_BITMAP_LIMIT + SAMPLING_BITMAP_INDEX(obj)];
    bits_t bit = (bits_t)1 << SAMPLING_BITMAP_OFFSET(obj);
    if (*word & bit) return false;
    *word |= bit;
    return true;
}

/* The imemo type of obj, or -1 (default.c sees no internal/imemo.h:
 * retention_names.c gives the types' numbers; IMEMO_MASK as sampling.c
 * reads it) */
static inline int
walk_imemo(VALUE obj)
{
    if (RB_SPECIAL_CONST_P(obj) || BUILTIN_TYPE(obj) != T_IMEMO) return -1;
    return (int)((RBASIC(obj)->flags >> FL_USHIFT) & 0x0f);
}

/* An inline constant cache or a call cache. */
static bool
walk_cache_p(VALUE obj)
{
    int t = walk_imemo(obj);
    return t >= 0 && (t == retention_imemo.constcache || t == retention_imemo.callcache);
}

/* An iseq or a method entry: code, which running it does not own. */
static bool
walk_code_p(VALUE obj)
{
    int t = walk_imemo(obj);
    return t >= 0 && (t == retention_imemo.iseq || t == retention_imemo.ment);
}

/* A Thread or a Fiber: its mark function reports its frames' code. */
static bool
walk_running_p(VALUE obj)
{
    if (BUILTIN_TYPE(obj) != T_DATA || !RTYPEDDATA_P(obj)) return false;
    const char *name = RTYPEDDATA_TYPE(obj)->wrap_struct_name;
    return name && (!strcmp(name, "VM/thread") || !strcmp(name, "fiber"));
}

/* Whether obj was reached (walk_visit without the set). */
static bool
walk_seen(const struct walk *w, uintptr_t obj)
{
    size_t page = walk_page_index(w, obj);
    if (page == SIZE_MAX) return true;
    return (w->bits[page * HEAP_PAGE_BITMAP_LIMIT + SAMPLING_BITMAP_INDEX(obj)] >> SAMPLING_BITMAP_OFFSET(obj)) & 1;
}

/* retention_cache_fn: a cache whatever refers to it (read once an
 * object, when first reached: not once an edge, which would read every
 * child's header) */
static bool
walk_cache_object(void *ctx, uintptr_t obj)
{
    return walk_cache_p((VALUE)obj);
}

static void
walk_child_i(VALUE child, void *data)
{
    struct walk *w = data;
    if (w->jit) {
        /* (the second listing of a compiled iseq: what the first did not
         * reach, compiled code holds) */
        if (!RB_SPECIAL_CONST_P(child) && !walk_seen(w, (uintptr_t)child)) retention_add_cache(w->r, (uintptr_t)child, w->node);
        return;
    }
    if (w->running && walk_code_p(child)) retention_add_cache(w->r, (uintptr_t)child, w->node);
    else retention_add(w->r, (uintptr_t)child, w->node);
}

/* Whether obj's references may be caches: only VM internals refer to
 * them (an iseq's inline caches, a class's call cache table, 4.0's table
 * objects), never an object Ruby code builds, so the children of an
 * Array, Hash, String or plain object are not asked (asking reads each
 * child's header when first reached: a cache miss an object). */
static bool
walk_may_cache(VALUE obj)
{
    switch (BUILTIN_TYPE(obj)) {
      case T_IMEMO: case T_CLASS: case T_MODULE: case T_ICLASS: case T_DATA:
        return true;
      default:
        return false;
    }
}

static void
walk_children(void *ctx, struct retention *r, uint32_t node)
{
    struct walk *w = ctx;
    VALUE obj = (VALUE)r->objs[node];
    w->node = node;
    w->running = walk_running_p(obj);
    r->cache_object = walk_may_cache(obj) ? walk_cache_object : NULL;
    struct retention_jit jit;
    if (walk_imemo(obj) == retention_imemo.iseq && retention_names_jit_take(obj, &jit)) {
        rb_objspace_reachable_objects_from(obj, walk_child_i, w);
        retention_names_jit_put(obj, &jit);
        w->jit = true;
        rb_objspace_reachable_objects_from(obj, walk_child_i, w);
        w->jit = false;
        return;
    }
    rb_objspace_reachable_objects_from(obj, walk_child_i, w);
}

static void
walk_push_root(struct walk *w, VALUE obj, int kind)
{
    if (w->failed) return;
    if (w->nroots == w->roots_cap) {
        size_t cap = w->roots_cap ? w->roots_cap * 2 : 4096;
        VALUE *roots = realloc(w->roots, cap * sizeof(*roots));
        if (roots) w->roots = roots;
        uint8_t *kinds = realloc(w->kinds, cap * sizeof(*kinds));
        if (kinds) w->kinds = kinds;
        if (!roots || !kinds) {
            w->failed = true;
            return;
        }
        w->roots_cap = cap;
    }
    w->roots[w->nroots] = obj;
    w->kinds[w->nroots++] = (uint8_t)kind;
}

/* (a root kind's byte: the JITs' own roots are put off; a Ractor's own
 * roots, 4.1's "ractor" category, hold its running frames' code, which
 * running it does not own, as the machine stack may) */
#define WALK_ROOT_PUT_OFF 0x80
#define WALK_ROOT_RUNNING 0x40
#define WALK_ROOT_FLAGS (WALK_ROOT_PUT_OFF | WALK_ROOT_RUNNING)

static int
root_kind_of(const char *category)
{
    if (!category) return SAMPLER_ROOT_OTHER;
    if (!strcmp(category, "YJIT") || !strcmp(category, "ZJIT")) return SAMPLER_ROOT_OTHER | WALK_ROOT_PUT_OFF;
    if (!strcmp(category, "global_tbl")) return SAMPLER_ROOT_GLOBAL;
    /* (4.1 marks the Ractors, their threads and the registered C
     * globals and symbols under categories of their own, before "vm",
     * which held them on 3.4 and 4.0) */
    if (!strcmp(category, "ractor")) return SAMPLER_ROOT_VM | WALK_ROOT_RUNNING;
    if (!strcmp(category, "vm") || !strcmp(category, "registered_globals") || !strcmp(category, "global_symbols")) {
        return SAMPLER_ROOT_VM;
    }
    if (!strcmp(category, "machine_context")) return SAMPLER_ROOT_MACHINE_STACK;
    if (!strcmp(category, "end_proc")) return SAMPLER_ROOT_END_PROC;
    return SAMPLER_ROOT_OTHER;
}

static void
walk_root_i(const char *category, VALUE obj, void *data)
{
    walk_push_root(data, obj, root_kind_of(category));
}

static int
walk_finalizer_i(st_data_t key, st_data_t value, st_data_t data)
{
    walk_push_root((struct walk *)data, (VALUE)value, SAMPLER_ROOT_FINALIZER);
    return ST_CONTINUE;
}

bool
sampler_retention_walk(struct retention *r, size_t max_nodes, uint64_t limit, uintptr_t only_hidden)
{
    rb_objspace_t *objspace = sampler_objspace();
    if (during_gc || is_incremental_marking(objspace)) return false;   /* (a read finished any GC) */
    if (sampling_ractors) rb_gc_vm_barrier();

    struct walk w = { 0 };
#if SAMPLING_POINT_ON_CURSOR
    /* every Ractor's objspace's pages, by body address (the world is
     * stopped when there are Ractors: default.c's global page index) */
    w.pages = global_objspace->page_index.pages;
    w.npages = global_objspace->page_index.n_pages;
#else
    w.pages = rb_darray_ref(objspace->heap_pages.sorted, 0);
    w.npages = rb_darray_size(objspace->heap_pages.sorted);
#endif
    w.bits = calloc(w.npages ? w.npages * HEAP_PAGE_BITMAP_LIMIT : 1, sizeof(bits_t));
    w.r = r;
    uintptr_t *targets = NULL;
    bool ok = false;
    if (!w.bits) goto done;
    /* Roots first, before any target's address is in a register or on
     * this stack: the machine stack is a root, scanned conservatively,
     * and must not find the walk's own copies. */
    rb_objspace_reachable_objects_from_root(walk_root_i, &w);
    if (finalizer_table) st_foreach(finalizer_table, walk_finalizer_i, (st_data_t)&w);

    /* the targets: live slot records the read sees (a malloc'd block,
     * obj with the low bit set, is no object: it has no path) */
    const struct sampling_records *rec = &sampler.records;
    targets = malloc((rec->nlive ? rec->nlive : 1) * sizeof(*targets));
    if (!targets) goto done;
    size_t ntargets = 0;
    for (size_t i = 0; i < rec->nlive; i++) {
        const struct sampling_record *item = &rec->items[rec->live[i].record];
        if (item->seq >= limit || (rec->live[i].obj & 1)) continue;
        if (only_hidden && rec->live[i].obj != ~only_hidden) continue;
        targets[ntargets++] = rec->live[i].obj;
    }
    if (!retention_init(r, max_nodes, targets, ntargets, walk_visit, &w)) goto done;
    if (w.failed) r->cut = r->failed = true;
    /* The most telling root first: an object both a global variable and
     * the VM hold is named by the global. */
    for (int kind = 0; kind < SAMPLER_ROOT_KINDS; kind++) {
        for (size_t i = 0; i < w.nroots; i++) {
            if ((w.kinds[i] & ~WALK_ROOT_FLAGS) != kind) continue;
            VALUE root = w.roots[i];
            if ((w.kinds[i] & WALK_ROOT_PUT_OFF) || walk_cache_p(root) ||
                ((kind == SAMPLER_ROOT_MACHINE_STACK || (w.kinds[i] & WALK_ROOT_RUNNING)) && walk_code_p(root))) {
                retention_add_cache_root(r, (uintptr_t)root, (uint32_t)kind);
            }
            else {
                retention_add_root(r, (uintptr_t)root, (uint32_t)kind);
            }
        }
    }
    retention_run(r, walk_children, &w);
#ifdef SAMPLING_CHECKS
    {
        /* with --enable-checks, retention.h's invariants after each walk */
        const char *err = retention_verify(r);
        if (err) rb_bug("sampling: retention walk: %s", err);
    }
#endif
    ok = true;
  done:
    free(targets);
    free(w.bits);
    free(w.roots);
    free(w.kinds);
    return ok;
}

/* Other Ractors stop at the VM barrier (inside a read): for naming after
 * the walk, which reads objects they may own. */
void
sampler_retention_barrier(void)
{
    if (sampling_ractors) rb_gc_vm_barrier();
}

/* The object whose finalizers `table` is (the finalizer table's key), or
 * Qundef: for naming a finalizer root. */
struct finalizer_owner {
    VALUE table, owner;
};

static int
finalizer_owner_i(st_data_t key, st_data_t value, st_data_t data)
{
    struct finalizer_owner *f = (struct finalizer_owner *)data;
    if ((VALUE)value != f->table) return ST_CONTINUE;
    f->owner = (VALUE)key;
    return ST_STOP;
}

VALUE
sampler_finalizer_owner(VALUE table)
{
    rb_objspace_t *objspace = sampler_objspace();
    struct finalizer_owner f = { table, Qundef };
    if (finalizer_table) st_foreach(finalizer_table, finalizer_owner_i, (st_data_t)&f);
    return f.owner;
}

/* Slots in the heap now: no walk needs more nodes than this. */
size_t
sampler_heap_slots(void)
{
    rb_objspace_t *objspace = sampler_objspace();
    size_t slots = 0;
    for (size_t i = 0; i < rb_darray_size(objspace->heap_pages.sorted); i++) {
        slots += rb_darray_get(objspace->heap_pages.sorted, i)->total_slots;
    }
    return slots;
}

/* Heap pages now, for the visited bitmap's size (bytes). */
size_t
sampler_retention_bitmap_bytes(void)
{
    rb_objspace_t *objspace = sampler_objspace();
    return rb_darray_size(objspace->heap_pages.sorted) * HEAP_PAGE_BITMAP_LIMIT * sizeof(bits_t);
}
