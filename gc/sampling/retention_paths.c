/*
 * retention_paths.c: the paths of a retention walk's targets, built and
 * named on demand from the kept walk (retention_paths.h), for every
 * retention output (retention_api.c, retention_view.c).
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
 *   cache    true on the hop whose edge is a cache edge (retention.h: an
 *            inline or call cache, or running code, which own nothing;
 *            its label ends in " [cache]"): a path has one only where
 *            no other path reaches the object
 * A path the cap cut has two hops: {kind: :cut} and the sample's own
 * ({kind: :object}); an object no root reaches (garbage the next GC
 * frees) {kind: :unreachable} and its own.  Long paths in profiles and
 * the report show their first and last RETENTION_SHOWN / 2 hops with one
 * {kind: :elided, name: hops left out} between; retention_path gives
 * the whole path.
 *
 * Cost.  The walk keeps only the targets' ancestors (retention_keep_paths:
 * a parent pointer per object on some path, 16 bytes), in a hidden
 * object (struct rpaths) that the Samples of one `retention` share; a
 * path is built, and its hops named, when it is asked for.  A hop is made
 * once per node (paths share their prefixes), and the edges into a
 * parent's kept children are named in one pass over its children, so
 * naming costs O(children) a parent however many paths run through it
 * and makes no object but the hops.  So `retention` allocates a Sample
 * per live sample and the kept walk (nothing per hop); retention_path
 * the hops of its path not made before; the pprof view and the report
 * at most RETENTION_SHOWN hops a path.  The kept walk holds the objects
 * on the paths (as the hops' :object did): they live while the result
 * of `retention` does.
 */
#include "ruby/ruby.h"
#include "ruby/st.h"

#include "retention.h"
#include "retention_names.h"
#include "retention_paths.h"
#include "sampler.h"

#include <stdlib.h>
#include <string.h>

VALUE rb_ident_hash_new(void);   /* internal/hash.h, exported */

enum { MARKER_CUT, MARKER_UNREACHABLE };

/* ---- the kept walk, a hidden object ---- */

static void
rpaths_mark(void *ptr)
{
    struct rpaths *p = ptr;
    for (size_t i = 0; i < p->walk.n; i++) {
        rb_gc_mark((VALUE)p->walk.objs[i]);
        if (p->hops && p->hops[i]) rb_gc_mark(p->hops[i]);
        if (p->edge_names && !RB_SPECIAL_CONST_P(p->edge_names[i])) rb_gc_mark(p->edge_names[i]);
    }
    for (int i = 0; i < 2; i++) if (p->markers[i]) rb_gc_mark(p->markers[i]);
    if (p->globals) rb_gc_mark(p->globals);
}

void
rpaths_release(struct rpaths *p)
{
    retention_free(&p->walk);
    free(p->hops);
    free(p->edge_names);
    free(p->edge_kinds);
    free(p->named);
    free(p->kids_start);
    free(p->kids);
    p->hops = p->edge_names = NULL;
    p->edge_kinds = p->named = NULL;
    p->kids_start = p->kids = NULL;
}

static void
rpaths_free(void *ptr)
{
    rpaths_release(ptr);
    xfree(ptr);
}

static size_t
rpaths_memsize(const void *ptr)
{
    const struct rpaths *p = ptr;
    size_t n = p->walk.n;
    return sizeof(*p) + retention_bytes(&p->walk) + (p->hops ? n * (2 * sizeof(VALUE) + 2) : 0) +
           (p->kids ? (2 * n + 1) * sizeof(uint32_t) : 0);
}

static const rb_data_type_t rpaths_type = {
    "ObjectSpace::AllocationSampler(retention paths)",
    { rpaths_mark, rpaths_free, rpaths_memsize, },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY
};


VALUE
rpaths_new(struct rpaths **out)
{
    return TypedData_Make_Struct(0, struct rpaths, &rpaths_type, *out);
}

struct rpaths *
rpaths_get(VALUE obj)
{
    return rb_check_typeddata(obj, &rpaths_type);
}

static VALUE sym_kind, sym_name, sym_class, sym_label, sym_address, sym_object, sym_cache;

void
rpaths_init(void)
{
    sym_kind = rsym("kind");
    sym_name = rsym("name");
    sym_class = rsym("class");
    sym_label = rsym("label");
    sym_address = rsym("address");
    sym_object = rsym("object");
    sym_cache = rsym("cache");
}

VALUE
rpaths_hop_label(VALUE hop)
{
    return rb_hash_aref(hop, sym_label);
}

static const char *const edge_kinds[RETENTION_EDGES] = {
    "reference", "ivar", "class_variable", "constant", "index", "hash_value", "hash_key", "member", "class",
    "superclass", "local",
};

static const char *const root_kinds[SAMPLER_ROOT_KINDS] = {
    "global", "finalizer", "end_proc", "vm", "machine_stack", "root",
};

/* ---- naming ---- */

/* The kept children of every node (CSR), made once. */
static void
make_kids(struct rpaths *p)
{
    if (p->kids) return;
    size_t n = p->walk.n;
    uint32_t *start = calloc(n + 2, sizeof(*start)), *kids = malloc((n ? n : 1) * sizeof(*kids));
    if (!start || !kids) {
        free(start);
        free(kids);
        rb_memerror();
    }
    for (size_t i = 0; i < n; i++) {
        uint32_t parent = retention_parent(&p->walk, (uint32_t)i);
        if (parent != RETENTION_NONE) start[parent + 2]++;
    }
    for (size_t i = 0; i < n; i++) start[i + 2] += start[i + 1];
    for (size_t i = 0; i < n; i++) {
        uint32_t parent = retention_parent(&p->walk, (uint32_t)i);
        if (parent != RETENTION_NONE) kids[start[parent + 1]++] = (uint32_t)i;
    }
    /* (start[i + 1] is now the end of i's run, start[i] its start) */
    p->kids_start = start;
    p->kids = kids;
}

struct name_kids {
    struct rpaths *p;
    st_table *by_obj;           /* child object -> node, when there are several */
    uint32_t one;               /* the node, when there is one */
    size_t left;                /* kids not named yet */
};

static bool
name_kid_i(VALUE child, enum retention_edge kind, VALUE name, void *data)
{
    struct name_kids *k = data;
    struct rpaths *p = k->p;
    st_data_t node;
    if (k->by_obj) {
        if (!st_lookup(k->by_obj, (st_data_t)child, &node)) return false;
    }
    else {
        if ((uintptr_t)child != p->walk.objs[k->one]) return false;
        node = k->one;
    }
    if (p->named[node] & 2) return false;  /* (the first name counts) */
    p->named[node] |= 2;
    p->edge_kinds[node] = (uint8_t)kind;
    p->edge_names[node] = name;
    return --k->left == 0;
}

struct edges_call {
    VALUE parent;
    struct name_kids *k;
};

static VALUE
edges_protected(VALUE arg)
{
    struct edges_call *c = (struct edges_call *)arg;
    retention_names_edges(c->parent, name_kid_i, c->k);
    return Qnil;
}

/* Names the edges into every kept child of parent, in one pass over its
 * children (bit 2 of named[child]: named; bit 1 of named[parent]: done). */
static void
name_kids(struct rpaths *p, uint32_t parent)
{
    if (p->named[parent] & 1) return;
    p->named[parent] |= 1;
    make_kids(p);
    uint32_t from = p->kids_start[parent], to = p->kids_start[parent + 1];
    struct name_kids k = { p, NULL, RETENTION_NONE, to - from };
    if (!k.left) return;
    if (k.left == 1) {
        k.one = p->kids[from];
    }
    else {
        k.by_obj = st_init_numtable_with_size(k.left);
        for (uint32_t i = from; i < to; i++) st_insert(k.by_obj, (st_data_t)p->walk.objs[p->kids[i]], p->kids[i]);
    }
    /* (reading a constant from a non-main Ractor can raise: the children
     * named so far stay, the rest are references) */
    struct edges_call c = { (VALUE)p->walk.objs[parent], &k };
    int state = 0;
    rb_protect(edges_protected, (VALUE)&c, &state);
    if (state) rb_set_errinfo(Qnil);
    if (k.by_obj) st_free_table(k.by_obj);
}

static VALUE
globals_protected(VALUE unused)
{
    return retention_names_globals();
}

static VALUE
root_name(struct rpaths *p, enum sampler_root_kind kind, VALUE obj)
{
    switch (kind) {
      case SAMPLER_ROOT_GLOBAL:
        if (!p->globals) {
            int state = 0;
            VALUE globals = rb_protect(globals_protected, Qnil, &state);   /* (a getter may raise) */
            if (state) {
                rb_set_errinfo(Qnil);
                globals = rb_ident_hash_new();
            }
            p->globals = globals;
        }
        return rb_hash_lookup2(p->globals, obj, Qnil);
      case SAMPLER_ROOT_FINALIZER: {
        VALUE owner = sampler_finalizer_owner(obj);
        return owner == Qundef ? Qnil : retention_names_class(owner);
      }
      default:
        if (RB_TYPE_P(obj, T_CLASS) || RB_TYPE_P(obj, T_MODULE)) return retention_names_class(obj);
        return Qnil;
    }
}

/* What a profile shows of a hop: "<edge> (<class>)", " [cache]" after a
 * cache edge's. */
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
make_hop(VALUE kind, VALUE name, VALUE klass, VALUE label, VALUE obj, bool cache)
{
    VALUE h = rb_hash_new_capa(cache ? 7 : 6);
    rb_hash_aset(h, sym_kind, kind);
    rb_hash_aset(h, sym_name, NIL_P(name) || !RB_TYPE_P(name, T_STRING) ? name : rb_str_freeze(name));
    rb_hash_aset(h, sym_class, NIL_P(klass) ? klass : rb_str_freeze(klass));
    if (cache) label = rb_str_cat_cstr(label, " [cache]");
    rb_hash_aset(h, sym_label, rb_str_freeze(label));
    rb_hash_aset(h, sym_address, obj ? ULL2NUM((unsigned long long)obj) : Qnil);
    rb_hash_aset(h, sym_object, obj && sampler_object_visible(obj) ? obj : Qnil);
    if (cache) rb_hash_aset(h, sym_cache, Qtrue);
    return rb_hash_freeze(h);
}

/* The hop arriving at node, made once. */
static VALUE
node_hop(struct rpaths *p, uint32_t node)
{
    if (p->hops[node]) return p->hops[node];
    const struct retention *w = &p->walk;
    VALUE obj = (VALUE)w->objs[node];
    VALUE klass = retention_names_class(obj), kind, name;
    bool root = retention_is_root(w, node);
    if (root) {
        enum sampler_root_kind rk = (enum sampler_root_kind)retention_root_kind(w, node);
        kind = rsym(root_kinds[rk]);
        name = root_name(p, rk, obj);
    }
    else {
        uint32_t parent = retention_parent(w, node);
        name_kids(p, parent);
        /* (a child its parent does not name: a reference) */
        bool named = p->named[node] & 2;
        enum retention_edge e = named ? (enum retention_edge)p->edge_kinds[node] : RETENTION_EDGE_REFERENCE;
        kind = rsym(edge_kinds[e]);
        name = named ? retention_names_edge((VALUE)w->objs[parent], e, p->edge_names[node]) : Qnil;
    }
    VALUE hop = make_hop(kind, name, module_class(obj, klass), hop_label(kind, name, klass, root, obj), obj,
                         retention_cache_edge(w, node));
    p->hops[node] = hop;
    return hop;
}

static VALUE
marker_hop(struct rpaths *p, int which)
{
    if (p->markers[which]) return p->markers[which];
    VALUE hop;
    if (which == MARKER_CUT) {
        char text[160];
        snprintf(text, sizeof(text), "<cut: the walk stopped at its cap of %zu objects%s>", p->max,
                 p->failed ? " (or ran out of memory)" : "");
        hop = make_hop(rsym("cut"), SIZET2NUM(p->max), Qnil, rb_str_new_cstr(text), 0, false);
    }
    else {
        hop = make_hop(rsym("unreachable"), Qnil, Qnil, rb_str_new_cstr("<unreachable: garbage the next GC frees>"), 0, false);
    }
    return p->markers[which] = hop;
}

/* The sample's own hop when no path reaches it (obj 0: it is gone). */
static VALUE
object_hop(VALUE obj)
{
    VALUE klass = obj ? retention_names_class(obj) : Qnil;
    return make_hop(rsym("object"), Qnil, klass, obj ? rb_sprintf("(%"PRIsVALUE")", klass) : rb_str_new_cstr("(object)"),
                    obj, false);
}

/* Pushes the hops of node and its n - 1 nearest ancestors, deepest first. */
static void
push_up(struct rpaths *p, VALUE out, uint32_t from, size_t n)
{
    uint32_t x = from;
    for (size_t i = 0; i < n && x != RETENTION_NONE; i++, x = retention_parent(&p->walk, x)) rb_ary_push(out, node_hop(p, x));
}

/* The path of a target without one: the marker and its own hop. */
VALUE
rpaths_no_path(struct rpaths *p, VALUE obj)
{
    return rb_ary_freeze(rb_ary_new_from_args(2, marker_hop(p, p->cut ? MARKER_CUT : MARKER_UNREACHABLE), object_hop(obj)));
}

/* A node's path, root first: whole (shown == 0), or its first and last
 * shown / 2 hops around one :elided hop. */
VALUE
rpaths_node_path(struct rpaths *p, uint32_t node, size_t shown)
{
    size_t depth = retention_depth(&p->walk, node);
    VALUE path = rb_ary_new_capa((long)(shown && depth + 1 > shown ? shown + 1 : depth + 1));
    if (!shown || depth + 1 <= shown) {
        push_up(p, path, node, depth + 1);
        rb_ary_reverse(path);
        return rb_ary_freeze(path);
    }
    size_t half = shown / 2;
    uint32_t top = retention_ancestor(&p->walk, node, half - 1);
    if (top == RETENTION_NONE) rb_memerror();
    push_up(p, path, top, half);
    rb_ary_reverse(path);
    /* (one label for every elision, so that profiles merge the paths
     * around it; the hop's name says how many hops it stands for) */
    size_t elided = depth + 1 - 2 * half;
    rb_ary_push(path, make_hop(rsym("elided"), SIZET2NUM(elided), Qnil, rb_str_new_cstr("... (hops elided) ..."), 0, false));
    VALUE tail = rb_ary_new_capa((long)half);
    push_up(p, tail, node, half);
    rb_ary_reverse(tail);
    rb_ary_concat(path, tail);
    return rb_ary_freeze(path);
}

/* A target's path (obj: the target, inside the read that walked). */
VALUE
rpaths_target_path(struct rpaths *p, VALUE obj, size_t shown)
{
    uint32_t node = retention_target_node(&p->walk, (uintptr_t)obj);
    return node == RETENTION_NONE ? rpaths_no_path(p, obj) : rpaths_node_path(p, node, shown);
}
