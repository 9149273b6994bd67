/*
 * sample.c: ObjectSpace::AllocationSampler::Sample, and `samples` and
 * `each_sample`, which make them.
 *
 * A Sample is a snapshot of one record (read.h) with what cannot change
 * (stack, class, type, size, weight, allocation GC), and the record's
 * index and sequence number: `object`, `live?`, `freed_gc`, `age` and
 * `old?` follow the record while it exists; it never refers to another
 * record (a slot reused after eviction has another sequence number).
 */
#include "ruby/ruby.h"

#include <inttypes.h>

#include "api.h"
#include "labels_api.h"
#include "sample.h"
#include "read.h"
#include "sampler.h"

#include <math.h>

size_t rb_obj_memsize_of(VALUE obj);

static VALUE cSample;

/* frames_convert for read_site */
static st_data_t
frames_convert(const struct sampling_names *names, void *arg)
{
    return (st_data_t)read_frames(names);
}

struct sample_view {
    uint32_t index;
    uint64_t seq;
    VALUE klass;            /* Qnil for hidden / internal, or a class that died */
    VALUE frames;           /* frozen Array of frozen [path, lineno, label] */
    VALUE paths;            /* the retention walk it was found with (retention_paths.h), or 0 */
    uint32_t path_node;     /* its node there (RETENTION_NONE: no path) */
    struct sampling_sample sample;
    size_t freed_gc;
    uint64_t freed_bytes;
    uint32_t labels;        /* label set id (labels.h) */
    uint16_t type;
    uint8_t imemo_type;
    bool old, live, truncated;
};

static void
sample_mark(void *p)
{
    struct sample_view *v = p;
    rb_gc_mark_movable(v->klass);
    rb_gc_mark_movable(v->frames);
    if (v->paths) rb_gc_mark_movable(v->paths);
}

static void
sample_compact(void *p)
{
    struct sample_view *v = p;
    v->klass = rb_gc_location(v->klass);
    v->frames = rb_gc_location(v->frames);
    if (v->paths) v->paths = rb_gc_location(v->paths);
}

static size_t
sample_memsize(const void *p)
{
    return sizeof(struct sample_view);
}

static const rb_data_type_t sample_type = {
    "ObjectSpace::AllocationSampler::Sample",
    { sample_mark, RUBY_TYPED_DEFAULT_FREE, sample_memsize, sample_compact },
    0, 0, RUBY_TYPED_FREE_IMMEDIATELY | RUBY_TYPED_WB_PROTECTED
};

static struct sample_view *
sample_get(VALUE self)
{
    return rb_check_typeddata(self, &sample_type);
}

/* Live fields follow the record while it exists. */
static void
sample_refresh(struct sample_view *v)
{
    struct sampling_record rec;
    if (!sampler_record_copy(v->index, v->seq, &rec)) {
        v->live = false;  /* gone with clear or eviction: no object to give */
        return;
    }
    v->live = !rec.dead;
    v->freed_gc = rec.dead ? sampling_record_freed_gc(&rec) : 0;
    v->freed_bytes = rec.freed_bytes;
    v->old = rec.old;
}

/* A snapshot of every record taken before the call, as Sample objects. */
struct snapshot {
    struct read_state read;
    VALUE result;
};

/* A Sample of the record at index, which the read sees (read_record). */
VALUE
sampling_sample_new(struct read_state *rd, size_t i)
{
    const struct sampling_record *rec = read_record(rd, i);
    VALUE frames = (VALUE)read_site(rd, rec->site, frames_convert, NULL);
    struct sample_view *v;
    VALUE sample = TypedData_Make_Struct(cSample, struct sample_view, &sample_type, v);
    rec = read_record(rd, i);   /* (again: the table may have moved) */
    const struct sampling_site *site = rec->site;
    v->index = (uint32_t)i;
    v->seq = rec->seq;
    RB_OBJ_WRITE(sample, &v->klass, site->klass ? (VALUE)site->klass : Qnil);
    RB_OBJ_WRITE(sample, &v->frames, frames);
    v->sample = sampling_record_sample(rec);
    v->type = site->kind.type;
    v->imemo_type = site->kind.imemo_type;
    v->truncated = site->truncated;
    v->labels = site->labels;
    v->live = !rec->dead;
    v->freed_gc = rec->dead ? sampling_record_freed_gc(rec) : 0;
    v->freed_bytes = rec->freed_bytes;
    v->old = rec->old;
    return sample;
}

void
sampling_sample_set_path(VALUE sample, VALUE paths, uint32_t node)
{
    struct sample_view *v = sample_get(sample);
    RB_OBJ_WRITE(sample, &v->paths, paths);
    v->path_node = node;
}

VALUE
sampling_sample_path(VALUE sample, uint32_t *node)
{
    struct sample_view *v = sample_get(sample);
    *node = v->path_node;
    return v->paths ? v->paths : Qundef;
}

void
sampling_sample_record(VALUE sample, uint32_t *index, uint64_t *seq)
{
    struct sample_view *v = sample_get(sample);
    *index = v->index;
    *seq = v->seq;
}

static VALUE
snapshot_body(VALUE arg)
{
    struct snapshot *snap = (struct snapshot *)arg;
    snap->result = rb_ary_new();
    for (size_t i = 0; i < sampler_records()->used; i++) {
        if (!read_record(&snap->read, i)) continue;
        rb_ary_push(snap->result, sampling_sample_new(&snap->read, i));
    }
    return snap->result;
}

static VALUE
snapshot_scoped(VALUE unused)
{
    struct snapshot snap = { .result = Qnil };
    read_run(&snap.read, snapshot_body, (VALUE)&snap, NULL, NULL);
    return snap.result;
}

/* (a reader scope around the read: the result Array too is the reader's) */
static VALUE
snapshot(void)
{
    return read_scope(snapshot_scoped, Qnil);
}

static VALUE
allocation_sampler_samples_m(VALUE self)
{
    return snapshot();
}

static VALUE
allocation_sampler_each_sample_m(VALUE self)
{
    RETURN_ENUMERATOR(self, 0, 0);
    VALUE samples = snapshot();
    for (long i = 0; i < RARRAY_LEN(samples); i++) rb_yield(RARRAY_AREF(samples, i));
    return self;
}

static VALUE
sample_object_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    return sampler_object(v->index, v->seq);
}

static VALUE
sample_live_p(VALUE self)
{
    struct sample_view *v = sample_get(self);
    sample_refresh(v);
    return v->live ? Qtrue : Qfalse;
}

static VALUE sample_type_m(VALUE self) { return read_type_symbol(sample_get(self)->type); }
static VALUE sample_imemo_type_m(VALUE self) { return read_imemo_symbol(sample_get(self)->type, sample_get(self)->imemo_type); }
static VALUE sample_klass_m(VALUE self) { return sample_get(self)->klass; }
static VALUE sample_size_m(VALUE self) { return ULL2NUM(sample_get(self)->sample.size); }
static VALUE sample_frames_m(VALUE self) { return sample_get(self)->frames; }
static VALUE sample_truncated_p(VALUE self) { return sample_get(self)->truncated ? Qtrue : Qfalse; }
/* the with_labels in effect when it was allocated: a frozen Hash, String => String */
static VALUE sample_labels_m(VALUE self) { return sampling_labels_hash(sample_get(self)->labels); }
static VALUE sample_allocated_gc_m(VALUE self) { return SIZET2NUM(sample_get(self)->sample.allocated_gc); }

static VALUE
sample_weight_m(VALUE self)
{
    double w = sample_get(self)->sample.weight;
    /* fixed-mode weights are whole bytes: give an Integer then */
    if (w == floor(w) && w < 9007199254740992.0) return ULL2NUM((unsigned long long)w);
    return DBL2NUM(w);
}

/* The view with its live fields refreshed (sample_refresh). */
static struct sample_view *
sample_refreshed(VALUE self)
{
    struct sample_view *v = sample_get(self);
    sample_refresh(v);
    return v;
}

/* The record as the view last saw it, for records.h's ages. */
static struct sampling_record
view_record(const struct sample_view *v)
{
    struct sampling_record rec = { 0 };
    rec.weight = v->sample.weight;
    rec.allocated_gc = v->sample.allocated_gc;
    rec.allocated_bytes = v->sample.allocated_bytes;
    sampling_record_set_size(&rec, v->sample.size);
    rec.heap = v->sample.heap;
    rec.freed_bytes = v->freed_bytes;
    if (!v->live) sampling_record_set_freed_gc(&rec, v->freed_gc);
    return rec;
}

static VALUE
sample_freed_gc_m(VALUE self)
{
    struct sample_view *v = sample_refreshed(self);
    return v->live || !v->freed_gc ? Qnil : SIZET2NUM(v->freed_gc);
}

/* every collection since allocation while it lives, those before the
 * one that found it dead otherwise */
static VALUE
sample_age_m(VALUE self)
{
    struct sampling_record rec = view_record(sample_refreshed(self));
    return SIZET2NUM(sampling_record_age(&rec, rb_gc_count()));
}

/* The allocation clock (stats[:total_allocated_bytes]) when it was
 * allocated; when it was found dead (nil while it lives); and the bytes
 * allocated between the two, or since its allocation while it lives (a
 * censored lifetime: live? says which). */
static VALUE sample_allocated_bytes_m(VALUE self) { return ULL2NUM(sample_get(self)->sample.allocated_bytes); }

static VALUE
sample_freed_bytes_m(VALUE self)
{
    struct sample_view *v = sample_refreshed(self);
    return v->live || !v->freed_gc ? Qnil : ULL2NUM(v->freed_bytes);
}

static VALUE
sample_age_bytes_m(VALUE self)
{
    struct sampling_record rec = view_record(sample_refreshed(self));
    return ULL2NUM(sampling_record_age_bytes(&rec, rec.dead ? 0 : sampler_clock()));
}

static VALUE
sample_old_p(VALUE self)
{
    return sample_refreshed(self)->old ? Qtrue : Qfalse;
}

static VALUE
sample_kind_m(VALUE self)
{
    return ID2SYM(rb_intern(sample_get(self)->type == SAMPLING_TYPE_MALLOC ? "malloc" : "slot"));
}

static VALUE
sample_memsize_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    if (v->type == SAMPLING_TYPE_MALLOC) return sample_live_p(self) == Qtrue ? ULL2NUM(v->sample.size) : Qnil;
    VALUE obj = sample_object_m(self);
    if (NIL_P(obj)) return Qnil;
    return SIZET2NUM(rb_obj_memsize_of(obj));
}

static VALUE
sample_inspect_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    VALUE top = RARRAY_LEN(v->frames) ? RARRAY_AREF(v->frames, 0) : Qnil;
    return rb_sprintf("#<%"PRIsVALUE" %"PRIsVALUE" %"PRIsVALUE" size=%"PRIu64" weight=%.0f at %"PRIsVALUE"%s>",
                      rb_class_name(CLASS_OF(self)), sample_type_m(self),
                      NIL_P(v->klass) ? rb_str_new_cstr("(hidden)") : rb_inspect(v->klass),
                      (uint64_t)v->sample.size, v->sample.weight, NIL_P(top) ? rb_str_new_cstr("?") : rb_inspect(top),
                      sample_live_p(self) == Qtrue ? "" : " dead");
}

void
sampling_define_sample(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "samples", allocation_sampler_samples_m, 0);
    rb_define_singleton_method(mSampler, "each_sample", allocation_sampler_each_sample_m, 0);
    cSample = rb_define_class_under(mSampler, "Sample", rb_cObject);
    rb_undef_alloc_func(cSample);
    rb_define_method(cSample, "object", sample_object_m, 0);
    rb_define_method(cSample, "live?", sample_live_p, 0);
    rb_define_method(cSample, "type", sample_type_m, 0);
    rb_define_method(cSample, "kind", sample_kind_m, 0);
    rb_define_method(cSample, "imemo_type", sample_imemo_type_m, 0);
    rb_define_method(cSample, "klass", sample_klass_m, 0);
    rb_define_method(cSample, "size", sample_size_m, 0);
    rb_define_method(cSample, "weight", sample_weight_m, 0);
    rb_define_method(cSample, "frames", sample_frames_m, 0);
    rb_define_method(cSample, "truncated?", sample_truncated_p, 0);
    rb_define_method(cSample, "labels", sample_labels_m, 0);
    rb_define_method(cSample, "allocated_gc", sample_allocated_gc_m, 0);
    rb_define_method(cSample, "freed_gc", sample_freed_gc_m, 0);
    rb_define_method(cSample, "age", sample_age_m, 0);
    rb_define_method(cSample, "old?", sample_old_p, 0);
    rb_define_method(cSample, "promoted?", sample_old_p, 0);
    rb_define_method(cSample, "allocated_bytes", sample_allocated_bytes_m, 0);
    rb_define_method(cSample, "freed_bytes", sample_freed_bytes_m, 0);
    rb_define_method(cSample, "age_bytes", sample_age_bytes_m, 0);
    rb_define_method(cSample, "memsize", sample_memsize_m, 0);
    rb_define_method(cSample, "inspect", sample_inspect_m, 0);
}
