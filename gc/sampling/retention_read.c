/*
 * retention_read.c: one read with its retention walk (retention_read.h):
 * begun, walked, the paths kept, ended; and the rows every output over
 * all the live samples is made of, with what the walk did.
 */
#include "ruby/ruby.h"
#include "ruby/st.h"

#include "read.h"
#include "retention.h"
#include "retention_paths.h"
#include "retention_read.h"
#include "sampler.h"

#include <stdlib.h>
#include <time.h>

/* ---- the walk ---- */

static double
now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

VALUE
rview_run(struct rview *rv, VALUE (*body)(VALUE), VALUE arg, VALUE (*done)(VALUE))
{
    return read_run(&rv->read, body, arg, rv->free_converted, done);
}

/* Walks, inside the read (the paths object first: it owns the walk's
 * memory from the start, so an exception frees it with the object). */
void
rview_walk(struct rview *rv)
{
    rv->paths_obj = rpaths_new(&rv->paths);
    struct rpaths *p = rv->paths;
    size_t max = rv->max_objects == SIZE_MAX ? sampler_heap_slots() : rv->max_objects;
    p->max = max;
    if (rv->one) {
        /* the record's object, read inside the read: nothing dies meanwhile */
        rv->only_hidden = ~sampling_records_object(sampler_records(), rv->index, rv->seq);
        if (!~rv->only_hidden || (~rv->only_hidden & 1)) {
            rv->only_hidden = 0;
            return;
        }
    }
    double t0 = now();
    bool walked = sampler_retention_walk(&p->walk, max, rv->read.limit, rv->only_hidden);
    p->seconds = now() - t0;
    if (!walked) rb_memerror();
    p->walked = p->walk.walked;
    p->expanded = p->walk.expanded;
    p->cut = p->walk.cut;
    p->failed = p->walk.failed;
    p->bytes = retention_bytes(&p->walk) + sampler_retention_bitmap_bytes();
    if (!retention_keep_paths(&p->walk)) rb_memerror();
#ifdef SAMPLING_CHECKS
    {
        /* with --enable-checks, retention.h's invariants on what is kept */
        const char *err = retention_verify_kept(&p->walk);
        if (err) rb_bug("sampling: retention paths: %s", err);
    }
#endif
    size_t n = p->walk.n ? p->walk.n : 1;
    p->hops = calloc(n, sizeof(*p->hops));
    p->edge_names = calloc(n, sizeof(*p->edge_names));
    p->edge_kinds = calloc(n, sizeof(*p->edge_kinds));
    p->named = calloc(n, sizeof(*p->named));
    if (!p->hops || !p->edge_names || !p->edge_kinds || !p->named) rb_memerror();
}

/* ---- the rows ---- */

/* How the paths of the targets ended: counts for the stats. */
struct path_counts {
    size_t samples, cut, unreachable, cache;
};

static void
count_path(struct rpaths *p, uint32_t node, struct path_counts *c)
{
    c->samples++;
    if (node == RETENTION_NONE) ++*(p->cut ? &c->cut : &c->unreachable);
    else if (retention_via_cache(&p->walk, node)) c->cache++;
}

/* What the walk did, for every output. */
static VALUE
walk_stats(struct rpaths *p, const struct path_counts *c)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, rsym("samples"), SIZET2NUM(c->samples));
    rb_hash_aset(h, rsym("cut"), p->cut ? Qtrue : Qfalse);
    rb_hash_aset(h, rsym("cut_paths"), SIZET2NUM(c->cut));
    rb_hash_aset(h, rsym("unreachable"), SIZET2NUM(c->unreachable));
    rb_hash_aset(h, rsym("cache_paths"), SIZET2NUM(c->cache));
    rb_hash_aset(h, rsym("max_objects"), SIZET2NUM(p->max));
    rb_hash_aset(h, rsym("objects"), SIZET2NUM(p->walked));
    rb_hash_aset(h, rsym("expanded"), SIZET2NUM(p->expanded));
    rb_hash_aset(h, rsym("kept"), SIZET2NUM(p->walk.n));
    rb_hash_aset(h, rsym("bytes"), SIZET2NUM(p->bytes));
    rb_hash_aset(h, rsym("seconds"), DBL2NUM(p->seconds));
    return h;
}

VALUE
rview_target(struct read_state *rd, size_t i)
{
    const struct sampling_record *rec = read_record(rd, i);
    if (!rec || rec->dead) return 0;
    uintptr_t obj = sampler_records()->live[rec->live_pos].obj;
    return obj & 1 ? 0 : (VALUE)obj;   /* (a malloc'd block is no object) */
}

VALUE
rview_rows(struct rview *rv, target_row_fn *row)
{
    rview_walk(rv);
    struct rpaths *p = rv->paths;
    VALUE rows = rb_ary_new();
    struct path_counts c = { 0 };
    LIVE_TARGETS_FOREACH(rv, i, obj) {
        uint32_t node = retention_target_node(&p->walk, (uintptr_t)obj);
        count_path(p, node, &c);
        rb_ary_push(rows, row(rv, i, obj, node));
    }
    return rb_ary_new_from_args(2, walk_stats(p, &c), rows);
}

