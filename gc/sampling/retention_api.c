/*
 * retention_api.c: why is it still alive, from Ruby.  One walk of the
 * heap (retention.h, retention_walk.c) inside one read (read.h), then
 * paths named (retention_names.h) and handed out as
 *
 *   AllocationSampler.retention(max_objects: nil)   a Hash: :samples
 *       (each Sample with its retention_path), and what the walk did
 *   Sample#retention_path(max_objects: nil)         one sample's path
 *   write_pprof(dest, view: :retention), pprof(view: :retention)
 *       the in-use samples with the path as their stack (root at the
 *       bottom, the allocation's frames on top)
 *   retention_report(io, top: 20)                    report.rb
 *
 * A path is an Array of hops, root first; a hop is a frozen Hash:
 *   kind     the root's kind (:global, :finalizer, :end_proc, :vm,
 *            :machine_stack, :root) on the first hop, then the edge's
 *            (:ivar, :class_variable, :constant, :index, :hash_value,
 *            :hash_key, :member, :local, :class, :superclass,
 *            :reference: one the mark function reports that has no name)
 *   name     the root's or edge's name ("$cache", "Foo::REGISTRY",
 *            "@items", 3, ":key", ...), nil when it has none
 *   class    the class of the object reached (retention_names_class)
 *   label    what profiles and the report show: "@items (Array)"
 *   address  the object's address (an Integer, not an object id)
 *   object   the object, when Ruby code may have it (sampler.h), else nil
 * A path the cap cut has two hops: {kind: :cut} and the sample's own
 * ({kind: :object}); an object no root reaches (garbage the next GC
 * frees) {kind: :unreachable} and its own.  Long paths in profiles and
 * the report show their first and last RETENTION_SHOWN / 2 hops with one
 * {kind: :elided, name: hops left out} between; retention_path gives
 * the whole path.
 *
 * Hops are made once per node for a read (paths share their prefixes),
 * edges named once per parent: the cost after the walk is linear in the
 * hops shown plus the children of the parents on them.
 */
#include "ruby/ruby.h"
#include "ruby/st.h"

#include "api.h"
#include "delta.h"
#include "labels.h"
#include "pprof.h"
#include "read.h"
#include "retention.h"
#include "retention_names.h"
#include "sampler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

VALUE rb_ident_hash_new(void);   /* internal/hash.h, exported */

#define RETENTION_SHOWN 64

struct edge_entry {
    VALUE name;
    uint8_t kind;
};

/* One read with its walk, and what was named so far. */
struct rview {
    struct read read;
    struct retention walk;
    size_t max_objects;
    bool one;                   /* only the record (index, seq) is a target */
    uint32_t index;
    uint64_t seq;
    uintptr_t only_hidden;      /* ~ its object (0: it is dead, nothing was walked), never
                                 * the address itself: this struct is on the machine
                                 * stack, which the walk scans as a root */
    void (*free_converted)(st_data_t);  /* what read_site made (NULL: Ruby objects) */
    bool walked;
    double seconds;
    size_t bitmap_bytes;
    st_table *edge_maps;        /* parent node -> st_table (child -> edges index) */
    struct edge_entry *edges;
    size_t nedges, edges_cap;
    st_table *hops;             /* node -> hop Hash */
    VALUE globals;              /* value -> "$name", made on first use */
    VALUE keep;                 /* what the C tables refer to (GC is off meanwhile anyway) */
};

static VALUE sym_kind, sym_name, sym_class, sym_label, sym_address, sym_object;

static VALUE
sym(const char *name)
{
    return ID2SYM(rb_intern(name));
}

static const char *const edge_kinds[RETENTION_EDGES] = {
    "reference", "ivar", "class_variable", "constant", "index", "hash_value", "hash_key", "member", "class",
    "superclass", "local",
};

static const char *const root_kinds[SAMPLER_ROOT_KINDS] = {
    "global", "finalizer", "end_proc", "vm", "machine_stack", "root",
};

/* ---- the walk ---- */

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void
rview_walk(struct rview *rv)
{
    read_begin(&rv->read);
    rv->edge_maps = st_init_numtable();
    rv->hops = st_init_numtable();
    rv->keep = rb_ary_new();
    rv->bitmap_bytes = sampler_retention_bitmap_bytes();
    size_t max = rv->max_objects == SIZE_MAX ? sampler_heap_slots() : rv->max_objects;
    if (rv->one) {
        /* the record's object, read inside the read: nothing dies meanwhile */
        rv->only_hidden = ~sampling_records_object(sampler_records(), rv->index, rv->seq);
        if (!~rv->only_hidden || (~rv->only_hidden & 1)) {
            rv->only_hidden = 0;
            return;
        }
    }
    double t0 = now();
    rv->walked = sampler_retention_walk(&rv->walk, max, rv->read.limit, rv->only_hidden);
    rv->seconds = now() - t0;
    if (!rv->walked) rb_memerror();
}

static int
free_map_i(st_data_t key, st_data_t value, st_data_t arg)
{
    st_free_table((st_table *)value);
    return ST_CONTINUE;
}

static VALUE
rview_end(VALUE arg)
{
    struct rview *rv = (struct rview *)arg;
    if (rv->edge_maps) {
        st_foreach(rv->edge_maps, free_map_i, 0);
        st_free_table(rv->edge_maps);
    }
    if (rv->hops) st_free_table(rv->hops);
    free(rv->edges);
    retention_free(&rv->walk);
    read_end(&rv->read, rv->free_converted);
    return Qnil;
}

/* ---- naming ---- */

struct edge_add {
    struct rview *rv;
    st_table *map;
    VALUE parent;
};

static void
edge_add_i(VALUE child, enum retention_edge kind, VALUE name, void *data)
{
    struct edge_add *a = data;
    struct rview *rv = a->rv;
    if (RB_SPECIAL_CONST_P(child) || st_is_member(a->map, (st_data_t)child)) return;
    if (rv->nedges == rv->edges_cap) {
        size_t cap = rv->edges_cap ? rv->edges_cap * 2 : 256;
        struct edge_entry *e = realloc(rv->edges, cap * sizeof(*e));
        if (!e) rb_memerror();
        rv->edges = e;
        rv->edges_cap = cap;
    }
    rv->edges[rv->nedges] = (struct edge_entry){ name, (uint8_t)kind };
    if (!RB_SPECIAL_CONST_P(name)) rb_ary_push(rv->keep, name);
    st_insert(a->map, (st_data_t)child, (st_data_t)rv->nedges++);
}

static VALUE
edges_protected(VALUE arg)
{
    struct edge_add *a = (struct edge_add *)arg;
    retention_names_edges(a->parent, edge_add_i, a);
    return Qnil;
}

/* How node's parent refers to node's object: named once per parent. */
static struct edge_entry
edge_of(struct rview *rv, uint32_t parent, VALUE child)
{
    st_data_t m;
    if (!st_lookup(rv->edge_maps, (st_data_t)parent, &m)) {
        struct edge_add a = { rv, st_init_numtable(), (VALUE)rv->walk.objs[parent] };
        st_insert(rv->edge_maps, (st_data_t)parent, (st_data_t)a.map);
        /* (reading a constant from a non-main Ractor can raise: the
         * children named so far stay, the rest are references) */
        int state = 0;
        rb_protect(edges_protected, (VALUE)&a, &state);
        if (state) rb_set_errinfo(Qnil);
        m = (st_data_t)a.map;
    }
    st_data_t i;
    if (st_lookup((st_table *)m, (st_data_t)child, &i)) return rv->edges[i];
    return (struct edge_entry){ Qnil, RETENTION_EDGE_REFERENCE };
}

static VALUE
globals_protected(VALUE unused)
{
    return retention_names_globals();
}

static VALUE
root_name(struct rview *rv, enum sampler_root_kind kind, VALUE obj)
{
    switch (kind) {
      case SAMPLER_ROOT_GLOBAL:
        if (!rv->globals) {
            int state = 0;
            rv->globals = rb_protect(globals_protected, Qnil, &state);   /* (a getter may raise) */
            if (state) {
                rb_set_errinfo(Qnil);
                rv->globals = rb_ident_hash_new();
            }
            rb_ary_push(rv->keep, rv->globals);
        }
        return rb_hash_lookup2(rv->globals, obj, Qnil);
      case SAMPLER_ROOT_FINALIZER: {
        VALUE owner = sampler_finalizer_owner(obj);
        return owner == Qundef ? Qnil : retention_names_class(owner);
      }
      default:
        if (RB_TYPE_P(obj, T_CLASS) || RB_TYPE_P(obj, T_MODULE)) return retention_names_class(obj);
        return Qnil;
    }
}

static VALUE
edge_name(const struct edge_entry *e)
{
    switch (e->kind) {
      case RETENTION_EDGE_HASH_VALUE:
      case RETENTION_EDGE_HASH_KEY:
        return retention_names_key(e->name);
      case RETENTION_EDGE_MEMBER:
      case RETENTION_EDGE_LOCAL:
        return rb_sym2str(e->name);
      default:
        return e->name;
    }
}

/* What a profile shows of a hop: "<edge> (<class>)". */
static VALUE
hop_label(VALUE kind, VALUE name, VALUE klass, bool root, VALUE obj)
{
    /* a class or module shows its own name where the edge has none */
    bool module = obj && (RB_TYPE_P(obj, T_CLASS) || RB_TYPE_P(obj, T_MODULE));
    const char *k = rb_id2name(SYM2ID(kind));
    VALUE edge;
    if (root) {
        static const struct { const char *kind, *text; } texts[] = {
            { "global", "global" }, { "finalizer", "finalizer of" }, { "end_proc", "at_exit" }, { "vm", "VM" },
            { "machine_stack", "machine stack" }, { "root", "root" },
        };
        const char *t = k;
        for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++) if (!strcmp(texts[i].kind, k)) t = texts[i].text;
        edge = NIL_P(name) || !strcmp(k, "vm") || !strcmp(k, "machine_stack") ? rb_str_new_cstr(t)
             : rb_sprintf("%s %"PRIsVALUE, t, name);
        if (module) edge = rb_sprintf("%"PRIsVALUE" %"PRIsVALUE, edge, retention_names_class(obj));
    }
    else if (!strcmp(k, "index")) edge = rb_sprintf("[%"PRIsVALUE"]", name);
    else if (!strcmp(k, "hash_value")) edge = rb_sprintf("[%"PRIsVALUE"]", name);
    else if (!strcmp(k, "hash_key")) edge = rb_sprintf("key %"PRIsVALUE, name);
    else if (!strcmp(k, "member")) edge = rb_sprintf(".%"PRIsVALUE, name);
    else if (!strcmp(k, "local")) edge = rb_sprintf("local %"PRIsVALUE, name);
    else if (!strcmp(k, "class") || !strcmp(k, "superclass")) {
        edge = module ? rb_sprintf("%s %"PRIsVALUE, k, retention_names_class(obj)) : rb_str_new_cstr(k);
    }
    else if (!NIL_P(name)) edge = rb_obj_as_string(name);
    else if (module) edge = retention_names_class(obj);
    else return rb_sprintf("(%"PRIsVALUE")", klass);
    if (module) klass = rb_str_new_cstr(RB_TYPE_P(obj, T_MODULE) ? "Module" : "Class");
    return rb_sprintf("%"PRIsVALUE" (%"PRIsVALUE")", edge, klass);
}

/* The class of a hop's object: "Class" or "Module" for a class or module
 * (the label shows its own name), else retention_names_class. */
static VALUE
module_class(VALUE obj, VALUE klass)
{
    if (RB_TYPE_P(obj, T_CLASS)) return rb_str_new_cstr("Class");
    if (RB_TYPE_P(obj, T_MODULE)) return rb_str_new_cstr("Module");
    return klass;
}

static VALUE
make_hop(VALUE kind, VALUE name, VALUE klass, VALUE label, VALUE obj)
{
    VALUE h = rb_hash_new_capa(6);
    rb_hash_aset(h, sym_kind, kind);
    rb_hash_aset(h, sym_name, NIL_P(name) || !RB_TYPE_P(name, T_STRING) ? name : rb_str_freeze(name));
    rb_hash_aset(h, sym_class, NIL_P(klass) ? klass : rb_str_freeze(klass));
    rb_hash_aset(h, sym_label, rb_str_freeze(label));
    rb_hash_aset(h, sym_address, obj ? ULL2NUM((unsigned long long)obj) : Qnil);
    rb_hash_aset(h, sym_object, obj && sampler_object_visible(obj) ? obj : Qnil);
    return rb_hash_freeze(h);
}

/* The hop arriving at node, made once per read. */
static VALUE
node_hop(struct rview *rv, uint32_t node)
{
    st_data_t h;
    if (st_lookup(rv->hops, (st_data_t)node, &h)) return (VALUE)h;
    const struct retention *w = &rv->walk;
    VALUE obj = (VALUE)w->objs[node];
    VALUE klass = retention_names_class(obj), kind, name;
    bool root = retention_is_root(w, node);
    if (root) {
        enum sampler_root_kind rk = (enum sampler_root_kind)retention_root_kind(w, node);
        kind = sym(root_kinds[rk]);
        name = root_name(rv, rk, obj);
    }
    else {
        struct edge_entry e = edge_of(rv, retention_parent(w, node), obj);
        kind = sym(edge_kinds[e.kind]);
        name = edge_name(&e);
    }
    VALUE hop = make_hop(kind, name, module_class(obj, klass), hop_label(kind, name, klass, root, obj), obj);
    rb_ary_push(rv->keep, hop);
    st_insert(rv->hops, (st_data_t)node, (st_data_t)hop);
    return hop;
}

static VALUE
marker_hop(const char *kind, VALUE name, const char *label)
{
    return make_hop(sym(kind), name, Qnil, rb_str_new_cstr(label), 0);
}

/* The sample's own hop when no path reaches it. */
static VALUE
object_hop(VALUE obj)
{
    VALUE klass = retention_names_class(obj);
    return make_hop(sym("object"), Qnil, klass, rb_sprintf("(%"PRIsVALUE")", klass), obj);
}

/* Pushes the hops from `from` up to (and including) the ancestor at
 * depth `to`, deepest first. */
static void
push_up(struct rview *rv, VALUE out, uint32_t from, size_t n)
{
    uint32_t x = from;
    for (size_t i = 0; i < n && x != RETENTION_NONE; i++, x = retention_parent(&rv->walk, x)) rb_ary_push(out, node_hop(rv, x));
}

/* A target's path, root first: whole (shown == 0), or its first and last
 * shown / 2 hops around one :elided hop. */
static VALUE
target_path(struct rview *rv, VALUE obj, size_t shown)
{
    uint32_t node = retention_target_node(&rv->walk, (uintptr_t)obj);
    if (node == RETENTION_NONE) {
        VALUE path = rb_ary_new_capa(2);
        if (rv->walk.cut) {
            char text[160];
            snprintf(text, sizeof(text), "<cut: the walk stopped at its cap of %zu objects%s>", rv->walk.max,
                     rv->walk.failed ? " (or ran out of memory)" : "");
            rb_ary_push(path, marker_hop("cut", SIZET2NUM(rv->walk.max), text));
        }
        else {
            rb_ary_push(path, marker_hop("unreachable", Qnil, "<unreachable: garbage the next GC frees>"));
        }
        rb_ary_push(path, object_hop(obj));
        return rb_ary_freeze(path);
    }
    size_t depth = retention_depth(&rv->walk, node);
    VALUE path = rb_ary_new_capa((long)(shown && depth + 1 > shown ? shown + 1 : depth + 1));
    if (!shown || depth + 1 <= shown) {
        push_up(rv, path, node, depth + 1);
        rb_ary_reverse(path);
        return rb_ary_freeze(path);
    }
    size_t half = shown / 2;
    uint32_t top = retention_ancestor(&rv->walk, node, half - 1);
    if (top == RETENTION_NONE) rb_memerror();
    push_up(rv, path, top, half);
    rb_ary_reverse(path);
    /* (one label for every elision, so that profiles merge the paths
     * around it; the hop's name says how many hops it stands for) */
    size_t elided = depth + 1 - 2 * half;
    rb_ary_push(path, marker_hop("elided", SIZET2NUM(elided), "... (hops elided) ..."));
    VALUE tail = rb_ary_new_capa((long)half);
    push_up(rv, tail, node, half);
    rb_ary_reverse(tail);
    rb_ary_concat(path, tail);
    return rb_ary_freeze(path);
}

/* What the walk did, for every output. */
static VALUE
walk_stats(struct rview *rv, size_t samples, size_t cut, size_t unreachable)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, sym("samples"), SIZET2NUM(samples));
    rb_hash_aset(h, sym("cut"), rv->walk.cut ? Qtrue : Qfalse);
    rb_hash_aset(h, sym("cut_paths"), SIZET2NUM(cut));
    rb_hash_aset(h, sym("unreachable"), SIZET2NUM(unreachable));
    rb_hash_aset(h, sym("max_objects"), SIZET2NUM(rv->walk.max));
    rb_hash_aset(h, sym("objects"), SIZET2NUM(rv->walk.n));
    rb_hash_aset(h, sym("expanded"), SIZET2NUM(rv->walk.expanded));
    rb_hash_aset(h, sym("bytes"), SIZET2NUM(retention_bytes(&rv->walk) + rv->bitmap_bytes));
    rb_hash_aset(h, sym("seconds"), DBL2NUM(rv->seconds));
    return h;
}

/* ---- arguments ---- */

static size_t
max_objects_arg(VALUE opts)
{
    if (NIL_P(opts)) return SIZE_MAX;
    ID key = rb_intern("max_objects");
    VALUE v = Qundef;
    rb_get_kwargs(opts, &key, 0, 1, &v);
    if (v == Qundef || NIL_P(v)) return SIZE_MAX;
    if (!RB_INTEGER_TYPE_P(v) || !FIXNUM_P(v) || FIX2LONG(v) < 1 || (unsigned long)FIX2LONG(v) > RETENTION_MAX_NODES) {
        rb_raise(rb_eArgError, "max_objects must be nil or an Integer from 1 to %zu (got %"PRIsVALUE")",
                 (size_t)RETENTION_MAX_NODES, rb_inspect(v));
    }
    return (size_t)FIX2LONG(v);
}

/* ---- AllocationSampler.retention ---- */

struct all_paths {
    struct rview rv;
    VALUE result;
};

/* Live slot records the read sees, in table order: calls fn with each
 * record's index and object. */
#define LIVE_TARGETS_FOREACH(rv, i, obj) \
    for (size_t i = 0; i < sampler_records()->used; i++) \
        for (VALUE obj = target_object(&(rv)->read, i); obj; obj = 0)

static VALUE
target_object(struct read *rd, size_t i)
{
    const struct sampling_record *rec = read_record(rd, i);
    if (!rec || rec->dead) return 0;
    uintptr_t obj = sampler_records()->live[rec->live_pos].obj;
    return obj & 1 ? 0 : (VALUE)obj;   /* (a malloc'd block is no object) */
}

/* Counts a path that ends at a marker (the cap, or no root). */
static void
tally(VALUE path, size_t *cut, size_t *unreachable)
{
    VALUE k = rb_hash_aref(RARRAY_AREF(path, 0), sym_kind);
    if (k == sym("cut")) ++*cut;
    if (k == sym("unreachable")) ++*unreachable;
}

/* One walk, then a row per live slot sample (row(rv, index, path): the
 * path shows `shown` hops, 0: all); a->result = [stats, rows]. */
typedef VALUE target_row_fn(struct rview *rv, size_t index, VALUE path);

static void
walk_rows(struct all_paths *a, size_t shown, target_row_fn *row)
{
    struct rview *rv = &a->rv;
    rview_walk(rv);
    VALUE rows = rb_ary_new();
    size_t cut = 0, unreachable = 0;
    LIVE_TARGETS_FOREACH(rv, i, obj) {
        VALUE path = target_path(rv, obj, shown);
        tally(path, &cut, &unreachable);
        rb_ary_push(rows, row(rv, i, path));
    }
    a->result = rb_ary_new_from_args(2, walk_stats(rv, (size_t)RARRAY_LEN(rows), cut, unreachable), rows);
}

static VALUE
sample_row(struct rview *rv, size_t i, VALUE path)
{
    VALUE sample = sampling_sample_new(&rv->read, i);
    sampling_sample_set_path(sample, path);
    return sample;
}

static VALUE
all_paths_body(VALUE arg)
{
    struct all_paths *a = (struct all_paths *)arg;
    walk_rows(a, 0, sample_row);
    VALUE stats = RARRAY_AREF(a->result, 0);
    rb_hash_aset(stats, sym("samples"), RARRAY_AREF(a->result, 1));
    return a->result = stats;
}

/* retention(max_objects: nil) => {samples: [Sample, ...], cut:, cut_paths:,
 * unreachable:, max_objects:, objects:, expanded:, bytes:, seconds:} */
static VALUE
sampler_retention_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    struct all_paths a = { { READ_INIT, { 0 }, max_objects_arg(opts) }, Qnil };
    rb_ensure(all_paths_body, (VALUE)&a, rview_end, (VALUE)&a.rv);
    return a.result;
}

/* ---- Sample#retention_path ---- */

struct one_path {
    struct rview rv;
    VALUE result;
};

static VALUE
one_path_body(VALUE arg)
{
    struct one_path *o = (struct one_path *)arg;
    rview_walk(&o->rv);
    if (!o->rv.only_hidden) return Qnil;   /* dead, or a malloc'd block */
    o->result = target_path(&o->rv, (VALUE)~o->rv.only_hidden, 0);
    return o->result;
}

/* Sample#retention_path(max_objects: nil): the path found with it by
 * AllocationSampler.retention, else one walk for this sample alone
 * (which stops when it is reached); nil once the object is dead, and
 * for a malloc'd block. */
static VALUE
sample_retention_path_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    size_t max = max_objects_arg(opts);
    VALUE stored = sampling_sample_path(self);
    if (stored != Qundef && NIL_P(opts)) return stored;
    struct one_path o = { { READ_INIT, { 0 }, max, true }, Qnil };
    sampling_sample_record(self, &o.rv.index, &o.rv.seq);
    rb_ensure(one_path_body, (VALUE)&o, rview_end, (VALUE)&o.rv);
    return o.result;
}

/* ---- the pprof view ---- */

/* One in-use sample of the view before merging: its path's last node (or
 * a marker), its site. */
struct view_entry {
    uint32_t node;              /* RETENTION_NONE: no path (cut or unreachable) */
    uint64_t obj_hop;           /* no path: the location of the object's own hop */
    const struct sampling_stack *site;
    uint64_t marker;            /* location id of the cut / unreachable / object hops */
    double space, objects;
};

static int
view_entry_cmp(const void *a, const void *b)
{
    const struct view_entry *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->marker != y->marker) return x->marker < y->marker ? -1 : 1;
    if (x->site != y->site) return (uintptr_t)x->site < (uintptr_t)y->site ? -1 : 1;
    return 0;
}

struct pprof_view {
    struct rview rv;
    struct pprof *p;
    st_table *locations;        /* hop Hash -> location id */
    struct view_entry *entries;
    uint8_t *bytes;
    size_t len;
};

static uint64_t
hop_location(struct pprof_view *v, VALUE hop)
{
    st_data_t id;
    if (st_lookup(v->locations, (st_data_t)hop, &id)) return id;
    VALUE label = rb_hash_aref(hop, sym_label);
    uint64_t name = pprof_string(v->p, RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
    id = pprof_location(v->p, pprof_function(v->p, name, pprof_cstring(v->p, "(retention)")), 0);
    st_insert(v->locations, (st_data_t)hop, id);
    return id;
}

static VALUE
pprof_view_body(VALUE arg)
{
    struct pprof_view *v = (struct pprof_view *)arg;
    struct rview *rv = &v->rv;
    struct pprof *p = v->p;
    pprof_sample_type(p, "inuse_objects", "count");
    pprof_sample_type(p, "inuse_space", "bytes");
    pprof_period(p, "space", "bytes", (int64_t)sampler_params()->interval);
    pprof_default_sample_type(p, "inuse_space");
    rview_walk(rv);
    sampling_pprof_header_comments(p, "retention");
    char comment[256];
    snprintf(comment, sizeof(comment), "retention: stack = shortest path from a GC root (bottom) to the sampled object, "
             "then its allocation frames; %zu objects walked%s", rv->walk.n,
             rv->walk.cut ? " (cut at the cap: paths of samples not reached end in <cut>)" : "");
    pprof_comment(p, comment);

    size_t n = 0, cap = 1024;
    v->entries = malloc(cap * sizeof(*v->entries));
    if (!v->entries) rb_memerror();
    VALUE keep = rb_ary_new();
    LIVE_TARGETS_FOREACH(rv, i, obj) {
        const struct sampling_record *rec = read_record(&rv->read, i);
        struct view_entry e = { retention_target_node(&rv->walk, (uintptr_t)obj), 0, rec->stack, 0,
                                rec->weight, rec->weight / rec->size };
        if (e.node == RETENTION_NONE) {
            /* no path: the marker and the object's own hop as two locations (merged by class) */
            VALUE path = target_path(rv, obj, 0);
            rb_ary_push(keep, path);
            e.marker = hop_location(v, RARRAY_AREF(path, 0));
            e.obj_hop = hop_location(v, RARRAY_AREF(path, 1));
        }
        if (n == cap) {
            struct view_entry *grown = realloc(v->entries, (cap *= 2) * sizeof(*grown));
            if (!grown) rb_memerror();
            v->entries = grown;
        }
        v->entries[n++] = e;
    }
    qsort(v->entries, n, sizeof(*v->entries), view_entry_cmp);

    uint64_t key_class = pprof_cstring(p, "class"), key_type = pprof_cstring(p, "type");
    uint64_t key_memory = pprof_cstring(p, "memory"), key_retention = pprof_cstring(p, "retention");
    uint64_t *locs = malloc((RETENTION_SHOWN + 2 + 4096 + 1) * sizeof(*locs));
    if (!locs) rb_memerror();
    for (size_t i = 0; i < n;) {
        struct view_entry e = v->entries[i];
        size_t j = i;
        for (; j < n && view_entry_cmp(&v->entries[j], &e) == 0; j++) {
            if (j > i) {
                e.space += v->entries[j].space;
                e.objects += v->entries[j].objects;
            }
        }
        i = j;
        const struct sampling_site_ids *ids = (const struct sampling_site_ids *)read_site(&rv->read, e.site,
                                                                                            sampling_pprof_site_ids, p);
        size_t nl = 0;
        for (uint32_t k = 0; k < ids->n && k < 4096; k++) locs[nl++] = ids->ids[k];
        const char *state;
        if (e.node != RETENTION_NONE) {
            VALUE path = target_path(rv, (VALUE)rv->walk.objs[e.node], RETENTION_SHOWN);
            for (long k = RARRAY_LEN(path) - 1; k >= 0; k--) locs[nl++] = hop_location(v, RARRAY_AREF(path, k));
            state = "path";
        }
        else {
            locs[nl++] = e.obj_hop;
            locs[nl++] = e.marker;
            state = rv->walk.cut ? "cut" : "unreachable";
        }
        struct pprof_label labels[4 + SAMPLING_LABELS_PAIRS];
        size_t nlabels = 0;
        labels[nlabels++] = (struct pprof_label){ key_type, pprof_cstring(p, read_type_name(e.site->kind.type)) };
        labels[nlabels++] = (struct pprof_label){ key_memory, pprof_cstring(p, "slot") };
        labels[nlabels++] = (struct pprof_label){ key_retention, pprof_cstring(p, state) };
        if (ids->klass) labels[nlabels++] = (struct pprof_label){ key_class, ids->klass };
        nlabels += sampling_pprof_set_labels(p, e.site->labels, labels + nlabels);
        int64_t values[2] = { llround(e.objects), llround(e.space) };
        if (values[0] || values[1]) pprof_sample(p, locs, nl, values, 2, labels, nlabels);
    }
    free(locs);
    RB_GC_GUARD(keep);
    if (!pprof_finish(p, true, &v->bytes, &v->len)) rb_memerror();
    return Qnil;
}

static VALUE
pprof_view_ensure(VALUE arg)
{
    struct pprof_view *v = (struct pprof_view *)arg;
    rview_end((VALUE)&v->rv);
    st_free_table(v->locations);
    free(v->entries);
    pprof_free(v->p);
    return Qnil;
}

VALUE
sampling_retention_pprof_bytes(size_t max_objects)
{
    struct pprof *p = pprof_new();
    if (!p) rb_memerror();
    struct pprof_view v = { { READ_INIT, { 0 }, max_objects }, p, st_init_numtable(), NULL, NULL, 0 };
    v.rv.free_converted = sampling_pprof_free_ids;
    rb_ensure(pprof_view_body, (VALUE)&v, pprof_view_ensure, (VALUE)&v);
    VALUE str = rb_str_new((const char *)v.bytes, (long)v.len);
    free(v.bytes);
    return str;
}

/* ---- rows for retention_report (report.rb) ---- */

static st_data_t
site_text_convert(const struct sampling_names *names, void *arg)
{
    const struct sampling_name *nm = names->n ? &names->locs[0] : NULL;
    VALUE where = nm ? rb_sprintf("%.*s:%d (%.*s)", (int)(nm->path ? nm->pathlen : 1), nm->path ? nm->path : "?", nm->lineno,
                                  (int)nm->labellen, nm->label)
                     : rb_str_new_cstr("?");
    return (st_data_t)rb_ary_new_from_args(2, names->klass ? rb_str_new_cstr(names->klass) : Qnil, where);
}

static VALUE
report_row(struct rview *rv, size_t i, VALUE path)
{
    const struct sampling_record *rec = read_record(&rv->read, i);
    double weight = rec->weight;
    VALUE where = (VALUE)read_site(&rv->read, rec->stack, site_text_convert, NULL);
    return rb_ary_new_from_args(3, path, DBL2NUM(weight), where);
}

static VALUE
rows_body(VALUE arg)
{
    struct all_paths *a = (struct all_paths *)arg;
    walk_rows(a, RETENTION_SHOWN, report_row);
    return a->result;
}

/* retention_rows(max_objects) (private, for report.rb): [stats, [[path
 * (shown), weight, [class name, "file:line (label)"]], ...]] */
static VALUE
sampler_retention_rows_m(VALUE self, VALUE max_objects)
{
    VALUE opts = rb_hash_new();
    rb_hash_aset(opts, sym("max_objects"), max_objects);
    struct all_paths a = { { READ_INIT, { 0 }, max_objects_arg(opts) }, Qnil };
    rb_ensure(rows_body, (VALUE)&a, rview_end, (VALUE)&a.rv);
    return a.result;
}

void
sampling_define_retention(VALUE mSampler)
{
    sym_kind = sym("kind");
    sym_name = sym("name");
    sym_class = sym("class");
    sym_label = sym("label");
    sym_address = sym("address");
    sym_object = sym("object");
    rb_define_singleton_method(mSampler, "retention", sampler_retention_m, -1);
    rb_define_private_method(rb_singleton_class(mSampler), "retention_rows", sampler_retention_rows_m, 1);
    VALUE cSample = rb_const_get(mSampler, rb_intern("Sample"));
    rb_define_method(cSample, "retention_path", sample_retention_path_m, -1);
}
