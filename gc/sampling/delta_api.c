/*
 * delta_api.c: ObjectSpace::AllocationSampler::Delta (delta.h has the
 * model; delta.c keeps its baseline).
 *
 *   d = ObjectSpace::AllocationSampler::Delta.new   # since now (since: :start: since start)
 *   d.pprof              # => String: alloc_* since the last read, inuse_* now
 *                        #    (view: :heap: Go's four sample types only)
 *   d.write_pprof(path_or_io)   # (view: as pprof)
 *   d.mark               # the next read counts from here
 *
 * RUBY_GC_SAMPLING's every= writes delta files with one of these
 * (periodic.c).
 */
#include "ruby/ruby.h"

#include "api.h"
#include "delta.h"
#include "profile.h"
#include "write.h"
#include "read.h"
#include "sampler.h"

#include <stdlib.h>

static VALUE cDelta;

static void
delta_free(void *p)
{
    struct sampling_delta *d = p;
    sampling_delta_release(d);
    free(d);
}

static size_t
delta_memsize(const void *p)
{
    const struct sampling_delta *d = p;
    return sizeof(*d) + sampling_delta_memsize(d);
}

static const rb_data_type_t delta_type = {
    "ObjectSpace::AllocationSampler::Delta",
    { NULL, delta_free, delta_memsize, },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY
};

static VALUE
delta_alloc(VALUE klass)
{
    struct sampling_delta *d;
    VALUE obj = TypedData_Make_Struct(klass, struct sampling_delta, &delta_type, d);
    d->generation = sampling_sites_generation();
    return obj;
}

struct mark {
    struct read_state read;
    st_table *inuse;
    struct sampling_delta *d;
};

static VALUE
mark_body(VALUE arg)
{
    struct mark *m = (struct mark *)arg;
    sampling_delta_begin(m->d);
    READ_SITES_FOREACH(&m->read, site) {
        struct site_values sv = read_site_values(site, m->inuse);
        sampling_delta_site(m->d, site, &sv);
    }
    struct site_values other;
    read_other_values(&other);
    sampling_delta_other(m->d, &other);
    return Qnil;
}

static VALUE
mark_done(VALUE arg)
{
    struct mark *m = (struct mark *)arg;
    sampling_delta_end(m->d);
    read_inuse_free(m->inuse);
    return Qnil;
}

static void
delta_mark(struct sampling_delta *d)
{
    struct mark m = { .inuse = st_init_numtable(), .d = d };
    read_run(&m.read, mark_body, (VALUE)&m, NULL, mark_done);
}

/* mark => self: the next read counts from now */
static VALUE
delta_mark_m(VALUE self)
{
    delta_mark(rb_check_typeddata(self, &delta_type));
    return self;
}

/* Delta.new(since: :now) (or since: :start) */
static VALUE
delta_initialize(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil, since = Qundef;
    rb_scan_args(argc, argv, "0:", &opts);
    if (!NIL_P(opts)) {
        ID key = rb_intern("since");
        rb_get_kwargs(opts, &key, 0, 1, &since);
    }
    if (since == Qundef || since == ID2SYM(rb_intern("now"))) delta_mark_m(self);
    else if (since != ID2SYM(rb_intern("start")))
        rb_raise(rb_eArgError, "since must be :now or :start (got %"PRIsVALUE")", rb_inspect(since));
    return self;
}

/* The view: and min_gcs: keywords of pprof and write_pprof (Qundef:
 * not given). */
static void
pprof_kwargs(VALUE opts, VALUE values[2])
{
    values[0] = values[1] = Qundef;
    if (!NIL_P(opts)) {
        ID keys[2] = { rb_intern("view"), rb_intern("min_gcs") };
        rb_get_kwargs(opts, keys, 0, 2, values);
    }
}

/* pprof(view: :allocations, min_gcs: 0) (or view: :heap, Go's four
 * sample types) */
static VALUE
delta_pprof_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil, values[2];
    rb_scan_args(argc, argv, "0:", &opts);
    pprof_kwargs(opts, values);
    return sampling_pprof_delta_bytes(rb_check_typeddata(self, &delta_type), values[0], values[1]);
}

/* write_pprof(path_or_io, view: :allocations, min_gcs: 0) */
static VALUE
delta_write_pprof_m(int argc, VALUE *argv, VALUE self)
{
    VALUE dest, opts = Qnil, values[2];
    rb_scan_args(argc, argv, "1:", &dest, &opts);
    pprof_kwargs(opts, values);
    sampling_check_destination(dest, "path_or_io");
    return sampling_write_out(dest, sampling_pprof_delta_bytes(rb_check_typeddata(self, &delta_type), values[0], values[1]),
                              "path_or_io");
}

READER_METHODV(delta_initialize)
READER_METHOD0(delta_mark_m)
READER_METHODV(delta_pprof_m)
READER_METHODV(delta_write_pprof_m)

void
sampling_define_delta(VALUE mSampler)
{
    cDelta = rb_define_class_under(mSampler, "Delta", rb_cObject);
    rb_define_alloc_func(cDelta, delta_alloc);
    rb_define_method(cDelta, "initialize", delta_initialize_reader, -1);
    rb_define_method(cDelta, "mark", delta_mark_m_reader, 0);
    rb_define_method(cDelta, "pprof", delta_pprof_m_reader, -1);
    rb_define_method(cDelta, "write_pprof", delta_write_pprof_m_reader, -1);
}
