/*
 * retention_api.c: why is it still alive, from Ruby: the methods and
 * their arguments.  One walk of the heap (retention.h, retention_walk.c)
 * inside one read (retention_read.h), then paths named
 * (retention_paths.c, which says what a path and a hop are) and handed
 * out as
 *
 *   AllocationSampler.retention(max_objects: nil)   a Hash: :samples
 *       (each Sample with its retention_path), and what the walk did
 *   Sample#retention_path(max_objects: nil)         one sample's path
 *   write_pprof(dest, view: :retention), pprof(view: :retention)
 *       the in-use samples with the path as their stack (root at the
 *       bottom, the allocation's frames on top): retention_view.c
 *   retention_report(io, top: 20)                    report.rb, from
 *       retention_rows (retention_view.c)
 */
#include "ruby/ruby.h"

#include "api.h"
#include "retention_view.h"
#include "sample.h"
#include "read.h"
#include "retention.h"
#include "retention_paths.h"
#include "retention_read.h"
#include "sampler.h"

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

/* a Sample sharing the kept walk, its path built when asked */
static VALUE
sample_row(struct rview *rv, size_t i, VALUE obj, uint32_t node)
{
    VALUE sample = sampling_sample_new(&rv->read, i);
    sampling_sample_set_path(sample, rv->paths_obj, node);
    return sample;
}

static VALUE
all_paths_body(VALUE arg)
{
    struct all_paths *a = (struct all_paths *)arg;
    VALUE r = rview_rows(&a->rv, sample_row);
    a->result = RARRAY_AREF(r, 0);
    rb_hash_aset(a->result, rsym("samples"), RARRAY_AREF(r, 1));
    return a->result;
}

/* retention(max_objects: nil) => {samples: [Sample, ...], cut:, cut_paths:,
 * unreachable:, cache_paths:, max_objects:, objects:, expanded:, kept:,
 * bytes:, seconds:}.  The Samples share the kept walk; each builds its
 * path when asked. */
static VALUE
allocation_sampler_retention_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    struct all_paths a = { { READ_INIT, max_objects_arg(opts) }, Qnil };
    rview_run(&a.rv, all_paths_body, (VALUE)&a, NULL);
    return a.result;
}

/* ---- Sample#retention_path ---- */

struct one_path {
    struct rview rv;
    VALUE stored;               /* the Sample's kept walk, or Qundef: walk now */
    uint32_t node;              /* its node there */
    VALUE result;
};

static VALUE
one_path_body(VALUE arg)
{
    struct one_path *o = (struct one_path *)arg;
    struct rview *rv = &o->rv;
    if (o->stored != Qundef) {
        /* the path found by `retention`: built now (in the read: GC off,
         * and the other Ractors stopped while their objects are named) */
        sampler_retention_barrier();
        struct rpaths *p = rpaths_get(o->stored);
        if (o->node != RETENTION_NONE) return o->result = rpaths_node_path(p, o->node, 0);
        /* (its object, if it still lives: for the class the hop shows) */
        uintptr_t obj = sampling_records_object(sampler_records(), rv->index, rv->seq);
        return o->result = rpaths_no_path(p, obj & 1 ? 0 : (VALUE)obj);
    }
    rview_walk(rv);
    if (!rv->only_hidden) return Qnil;   /* dead, or a malloc'd block */
    o->result = rpaths_target_path(rv->paths, (VALUE)~rv->only_hidden, 0);
    rpaths_release(rv->paths);
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
    struct one_path o = { { READ_INIT, max, true }, Qundef, RETENTION_NONE, Qnil };
    if (NIL_P(opts)) o.stored = sampling_sample_path(self, &o.node);
    sampling_sample_record(self, &o.rv.index, &o.rv.seq);
    rview_run(&o.rv, one_path_body, (VALUE)&o, NULL);
    return o.result;
}

/* ---- retention_rows (report.rb's) ---- */

/* retention_rows(max_objects) (private, for report.rb): [stats, [[path
 * (shown), weight, [class name, "file:line (label)"]], ...]]
 * (retention_view.c) */
static VALUE
allocation_sampler_retention_rows_m(VALUE self, VALUE max_objects)
{
    VALUE opts = rb_hash_new();
    rb_hash_aset(opts, rsym("max_objects"), max_objects);
    return sampling_retention_rows(max_objects_arg(opts));
}

READER_METHODV(allocation_sampler_retention_m)
READER_METHODV(sample_retention_path_m)
READER_METHOD1(allocation_sampler_retention_rows_m)

void
sampling_define_retention(VALUE mSampler)
{
    rpaths_init();
    rb_define_singleton_method(mSampler, "retention", allocation_sampler_retention_m_reader, -1);
    rb_define_private_method(rb_singleton_class(mSampler), "retention_rows", allocation_sampler_retention_rows_m_reader, 1);
    VALUE cSample = rb_const_get(mSampler, rb_intern("Sample"));
    rb_define_method(cSample, "retention_path", sample_retention_path_m_reader, -1);
}
