/*
 * retention_names.h: what a person needs to act on a retention path:
 * the class of each object on it, and the name of each edge (instance or
 * class variable, constant, array index, hash key, struct member, local
 * variable of a closure), found after the walk.
 *
 * The walk (retention.h) keeps only which object reached which; naming an
 * edge asks the parent for its children by name, once per parent that is
 * on some path (retention_paths.c names all of a parent's children that are
 * on paths in one pass and remembers the answer), so a parent with n
 * children costs O(n) however many paths run through it.  Listing the
 * children makes no object: a name comes raw (the hash key, the ID's
 * String, an Integer, a Symbol) and retention_names_edge makes what is
 * shown of it, only for the edges on a path that is asked for.
 *
 * Runs inside a read (GC off): it allocates Ruby Strings but calls no
 * Ruby method that a program can redefine, triggers no autoload and
 * assigns no object id.  Global variable names are read with
 * rb_gv_get for names that are plain identifiers ($cache, $stdout), never
 * for Ruby's special variables, whose getters run code ($FILENAME opens
 * ARGF's next file, $@ calls #backtrace).
 */
#ifndef SAMPLING_RETENTION_NAMES_H
#define SAMPLING_RETENTION_NAMES_H

#include "ruby/ruby.h"

enum retention_edge {
    RETENTION_EDGE_REFERENCE,       /* a reference the object's mark function reports, not named */
    RETENTION_EDGE_IVAR,            /* name: "@x" */
    RETENTION_EDGE_CLASS_VARIABLE,  /* name: "@@x" */
    RETENTION_EDGE_CONSTANT,        /* name: the full name, "Foo::BAR" */
    RETENTION_EDGE_INDEX,           /* name: an Integer */
    RETENTION_EDGE_HASH_VALUE,      /* name: the key (shown as a short inspect) */
    RETENTION_EDGE_HASH_KEY,        /* the key itself; name: the key */
    RETENTION_EDGE_MEMBER,          /* a Struct / Data member; name: a Symbol */
    RETENTION_EDGE_CLASS,           /* the object's class or singleton class */
    RETENTION_EDGE_SUPERCLASS,
    RETENTION_EDGE_LOCAL,           /* a local variable of a captured environment; name: a Symbol */
    RETENTION_EDGES
};

/* The imemo types the walk tells apart (retention_walk.c, which cannot
 * include internal/imemo.h). */
struct retention_imemo_types {
    int constcache, callcache, iseq, ment;
};
extern const struct retention_imemo_types retention_imemo;

/* The JITs' data on an iseq (YJIT's, ZJIT's payloads), taken off while
 * the walk lists the iseq's own references (its mark function then
 * reports no object that only compiled code embeds) and put back at
 * once.  Take returns false (and changes nothing) when there is none.
 * Inside the walk only: GC off, the VM lock held, no other Ractor runs. */
struct retention_jit {
    void *yjit, *zjit;
};
bool retention_names_jit_take(VALUE iseq, struct retention_jit *saved);
void retention_names_jit_put(VALUE iseq, const struct retention_jit *saved);

/* Calls fn for each child of parent that can be named (the first name a
 * child gets is what counts) until fn returns true.  The raw name: the
 * ID's String (nil for an internal one) for ivars and class variables,
 * the constant's Symbol, an Integer index, the hash key, a Symbol for a
 * member or a local, nil for class and superclass. */
typedef bool retention_edge_fn(VALUE child, enum retention_edge kind, VALUE name, void *data);
void retention_names_edges(VALUE parent, retention_edge_fn *fn, void *data);

/* What is shown of the edge kind/name (raw, as above) from parent: "@x",
 * "Foo::BAR", 3, "\"key\"", "member" ...; nil when it has none. */
VALUE retention_names_edge(VALUE parent, enum retention_edge kind, VALUE name);

/* The class shown for obj: Module#name of its class, or as inspect shows
 * an anonymous or singleton one ("#<Class:0x...>", "#<Class:Foo>"); for a
 * class or module itself, its own name that way; internal objects by
 * type ("(imemo env)", "(hidden Array)"). */
VALUE retention_names_class(VALUE obj);

/* A short inspect of a simple hash key (Symbol, String up to 40
 * characters, Integer, nil, true, false); others as "#<Class>". */
VALUE retention_names_key(VALUE key);

/* Every global variable with a plain name, value => "$name" (first wins). */
VALUE retention_names_globals(void);

#endif
