/*
 * retention_read.h: one read with its retention walk, for the retention
 * readers (retention_api.c, retention_view.c).
 *
 * rview_run runs a body inside a read (read.h's read_run: GC off, other
 * Ractors stopped) that rview_walk, inside it, makes a walk of: the heap
 * from the roots (sampler_retention_walk) to the live slot samples the
 * read sees, or to one record's object alone (`one`), with their paths
 * kept (retention_paths.h).
 *
 * Invariant: while the walk takes its roots no C frame of the caller
 * holds a target's address as a plain VALUE (the machine stack is a
 * root): a single target is held complemented (only_hidden), and the
 * targets are read from the records after the walk.
 */
#ifndef SAMPLING_RETENTION_READ_H
#define SAMPLING_RETENTION_READ_H

#include "ruby/ruby.h"
#include "ruby/st.h"
#include "read.h"
#include "retention_paths.h"
#include "sampler.h"

/* One read with its walk. */
struct rview {
    struct read_state read;
    size_t max_objects;
    bool one;                   /* only the record (index, seq) is a target */
    uint32_t index;
    uint64_t seq;
    uintptr_t only_hidden;      /* ~ its object (0: it is dead, nothing was walked), never
                                 * the address itself: this struct is on the machine
                                 * stack, which the walk scans as a root */
    void (*free_converted)(st_data_t);  /* what read_site made (NULL: Ruby objects) */
    VALUE paths_obj;            /* the hidden object holding paths */
    struct rpaths *paths;
};

/* A read with its walk over every live slot sample, and what its body
 * returns. */
struct all_paths {
    struct rview rv;
    VALUE result;
};

/* body(arg) inside a read of rv (read_run), then done(arg) (NULL: none). */
VALUE rview_run(struct rview *rv, VALUE (*body)(VALUE), VALUE arg, VALUE (*done)(VALUE));
void rview_walk(struct rview *rv);

/* The object of the record at index i if the read sees it live and it
 * is a slot's (a target of the walk), else 0. */
VALUE rview_target(struct read_state *rd, size_t i);

/* Live slot records the read sees, in table order: the body runs with
 * each record's index i and object obj. */
#define LIVE_TARGETS_FOREACH(rv, i, obj) \
    for (size_t i = 0; i < sampler_records()->used; i++) \
        for (VALUE obj = rview_target(&(rv)->read, i); obj; obj = 0)

/* One walk, then a row per live slot sample (row(rv, index, object,
 * node)): [stats, rows], stats the Hash `retention` returns without its
 * :samples. */
typedef VALUE target_row_fn(struct rview *rv, size_t index, VALUE obj, uint32_t node);
VALUE rview_rows(struct rview *rv, target_row_fn *row);

#endif
