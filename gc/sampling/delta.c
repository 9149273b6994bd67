/*
 * delta.c: ObjectSpace::AllocationSampler::Delta (delta.h has the model).
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
#include "config.h"
#include "delta.h"
#include "read.h"
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the baseline ---- */

static struct sampling_delta_totals
totals_rounded(double space, double objects)
{
    return (struct sampling_delta_totals){ llround(space), llround(objects) };
}

static int
free_value_i(st_data_t key, st_data_t value, st_data_t arg)
{
    free((void *)value);
    return ST_CONTINUE;
}

static void
table_free(st_table *t)
{
    if (!t) return;
    st_foreach(t, free_value_i, 0);
    st_free_table(t);
}

void
sampling_delta_begin(struct sampling_delta *d)
{
    uint64_t generation = sampling_sites_generation();
    if (d->generation != generation) {
        /* totals went back to zero: so does the baseline */
        table_free(d->base);
        d->base = NULL;
        d->other = (struct sampling_delta_totals){ 0, 0 };
        d->generation = generation;
    }
    table_free(d->next);
    d->next = st_init_numtable();
    d->complete = false;
}

void
sampling_delta_site(struct sampling_delta *d, const struct sampling_stack *site, struct site_values *sv)
{
    st_data_t found;
    struct sampling_delta_totals *now = malloc(sizeof(*now));
    if (!now) rb_memerror();
    *now = totals_rounded(sv->alloc_space, sv->alloc_objects);
    st_insert(d->next, (st_data_t)site->id, (st_data_t)now);
    struct sampling_delta_totals then = { 0, 0 };
    if (d->base && st_lookup(d->base, (st_data_t)site->id, &found)) then = *(const struct sampling_delta_totals *)found;
    sv->alloc_space = (double)(now->space - then.space);
    sv->alloc_objects = (double)(now->objects - then.objects);
}

struct missing {
    st_table *next;
    struct sampling_delta_totals sum;
};

static int
missing_i(st_data_t key, st_data_t value, st_data_t arg)
{
    struct missing *m = (struct missing *)arg;
    if (!st_lookup(m->next, key, NULL)) {
        m->sum.space += ((const struct sampling_delta_totals *)value)->space;
        m->sum.objects += ((const struct sampling_delta_totals *)value)->objects;
    }
    return ST_CONTINUE;
}

bool
sampling_delta_other(struct sampling_delta *d, struct site_values *sv)
{
    /* sites gone since the baseline were folded: their totals are in
     * other_* now, and their baseline comes off it */
    struct missing m = { d->next, { 0, 0 } };
    if (d->base) st_foreach(d->base, missing_i, (st_data_t)&m);
    struct sampling_delta_totals now = totals_rounded(sv->alloc_space, sv->alloc_objects);
    sv->alloc_space = (double)(now.space - d->other.space - m.sum.space);
    sv->alloc_objects = (double)(now.objects - d->other.objects - m.sum.objects);
    d->other = now;
    d->complete = true;
    return sv->alloc_space != 0 || sv->alloc_objects != 0;
}

void
sampling_delta_end(struct sampling_delta *d)
{
    if (d->complete) {
        table_free(d->base);
        d->base = d->next;
    }
    else {
        table_free(d->next);
    }
    d->next = NULL;
}

/* ---- Delta ---- */

static VALUE cDelta;

static void
delta_free(void *p)
{
    struct sampling_delta *d = p;
    table_free(d->base);
    table_free(d->next);
    free(d);
}

static size_t
delta_memsize(const void *p)
{
    const struct sampling_delta *d = p;
    return sizeof(*d) + (d->base ? st_memsize(d->base) + d->base->num_entries * sizeof(struct sampling_delta_totals) : 0);
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
    struct read read;
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
