/*
 * retention_paths.h: a retention walk's kept paths as Ruby sees them,
 * for the retention readers (retention_read.c, retention_view.c,
 * retention_api.c; HACKING.md's map).  retention_paths.c says what a
 * path and a hop are.
 *
 * A struct rpaths is the walk after retention_keep_paths (retention.h),
 * in a hidden object that owns it from the start (rpaths_new), so an
 * exception frees it with the object; the Samples of one `retention`
 * share it.  Hops are made on demand and at most once per node: hops[i]
 * is 0 until node i's hop is made; named[i] bit 1: i's kept children's
 * edges are named, bit 2: the edge into i is (edge_kinds[i],
 * edge_names[i]).  The nodes' objects, names and hops are marked and
 * pinned (edges and hops refer to objects by address).
 *
 * Everything here runs with the GVL inside a read (read.h: GC off),
 * except rpaths_release, which any holder may call to give the walk's
 * memory back early (the object stays, empty).
 */
#ifndef SAMPLING_RETENTION_PATHS_H
#define SAMPLING_RETENTION_PATHS_H

#include "ruby/ruby.h"
#include "retention.h"

/* Hops a path shows in profiles and the report (the first and last half,
 * around one :elided hop). */
#define RETENTION_SHOWN 64

struct rpaths {
    struct retention walk;      /* after retention_keep_paths */
    VALUE *hops;                /* [walk.n] the hop into each node, 0 until made */
    VALUE *edge_names;          /* [walk.n] the raw name of the edge into it (retention_names.h) */
    uint8_t *edge_kinds;        /* [walk.n] its kind */
    uint8_t *named;             /* [walk.n] its kept children's edges are named */
    uint32_t *kids_start, *kids;        /* the kept children of each node, made on first need */
    VALUE markers[2];           /* the cut and unreachable hops, made once */
    VALUE globals;              /* value -> "$name", made on first use */
    /* what the walk did */
    size_t walked, expanded, max, bytes;
    double seconds;
    bool cut, failed;
};

/* The hidden object and its struct (zeroed); the object of an rpaths. */
VALUE rpaths_new(struct rpaths **out);
struct rpaths *rpaths_get(VALUE obj);
/* Frees what the walk holds (the object stays, empty). */
void rpaths_release(struct rpaths *p);

/* Paths, root first, frozen Arrays of frozen hop Hashes.  A node's path:
 * whole (shown == 0) or at most shown hops; the path of a target no path
 * reaches (obj: the target, 0 if it is gone): the cut or unreachable
 * marker and its own hop; a target's path, whichever it has (obj: a
 * target of the walk, inside the read that walked). */
VALUE rpaths_node_path(struct rpaths *p, uint32_t node, size_t shown);
VALUE rpaths_no_path(struct rpaths *p, VALUE obj);
VALUE rpaths_target_path(struct rpaths *p, VALUE obj, size_t shown);

/* A hop's :label (a frozen String). */
VALUE rpaths_hop_label(VALUE hop);

/* The hops' Symbols, made once (sampling_define_retention). */
void rpaths_init(void);

static inline VALUE
rsym(const char *name)
{
    return ID2SYM(rb_intern(name));
}

#endif
