/*
 * api.c: ObjectSpace::AllocationSampler, its Sample class, and
 * RUBY_GC_SAMPLING at boot.
 *
 * Every argument is checked before anything changes: a call that raises
 * ArgumentError (naming the argument and its accepted range) leaves the
 * sampler as it was.  A bad RUBY_GC_SAMPLING prints one warning on stderr
 * and sampling stays off; the program runs.
 *
 * Reading (samples, each_sample, write_pprof) walks the records with GC
 * held off (read_records), converting each distinct stack once: into
 * frozen [path, lineno, label] arrays, or into pprof location ids.  A Sample keeps its record's index and
 * sequence number, so `object`, `live?`, `freed_gc`, `age` and `old?`
 * follow the record while it exists; it never refers to another record.
 */
#include "ruby/ruby.h"
#include "ruby/st.h"

#include "config.h"
#include "frames.h"
#include "pprof.h"
#include "sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

size_t rb_obj_memsize_of(VALUE obj);
const char *rb_imemo_name(int type);

static VALUE mSampler, cSample;

/* ---- arguments ---- */

/* An Integer argument in [min, max], compared without calling a method
 * (a redefined Integer#< must not let a bad value through). */
static uint64_t
arg_uint(VALUE v, const char *name, uint64_t min, uint64_t max, const char *unit)
{
    if (!RB_INTEGER_TYPE_P(v)) {
        rb_raise(rb_eArgError, "%s must be an Integer from %llu to %llu%s (got %"PRIsVALUE")",
                 name, (unsigned long long)min, (unsigned long long)max, unit, rb_inspect(v));
    }
    bool in_range;
    if (FIXNUM_P(v)) {
        long x = FIX2LONG(v);
        in_range = x >= 0 && (uint64_t)x >= min && (uint64_t)x <= max;
    }
    else {
        /* a Bignum: below 0, or beyond every bound but UINT64_MAX */
        in_range = FIX2INT(rb_big_cmp(v, INT2FIX(0))) > 0 && FIX2INT(rb_big_cmp(v, ULL2NUM(max))) <= 0;
    }
    if (!in_range) {
        rb_raise(rb_eArgError, "%s must be from %llu to %llu%s (got %"PRIsVALUE")",
                 name, (unsigned long long)min, (unsigned long long)max, unit, rb_inspect(v));
    }
    return NUM2ULL(v);
}

/* start(interval: 524_288, mode: :poisson, depth: 128, seed: nil, max_samples: 100_000) */
static VALUE
sampler_start_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    static ID keys[5];
    if (!keys[0]) {
        keys[0] = rb_intern("interval");
        keys[1] = rb_intern("mode");
        keys[2] = rb_intern("depth");
        keys[3] = rb_intern("seed");
        keys[4] = rb_intern("max_samples");
    }
    VALUE values[5] = { Qundef, Qundef, Qundef, Qundef, Qundef };
    if (!NIL_P(opts)) rb_get_kwargs(opts, keys, 0, 5, values);

    struct sampling_params params;
    sampling_params_default(&params);
    if (values[0] != Qundef)
        params.interval = arg_uint(values[0], "interval", SAMPLING_INTERVAL_MIN, SAMPLING_INTERVAL_MAX, " bytes");
    if (values[1] != Qundef) {
        VALUE mode = values[1];
        if (mode == ID2SYM(rb_intern("poisson"))) params.mode = SAMPLING_MODE_POISSON;
        else if (mode == ID2SYM(rb_intern("fixed"))) params.mode = SAMPLING_MODE_FIXED;
        else rb_raise(rb_eArgError, "mode must be :poisson or :fixed (got %"PRIsVALUE")", rb_inspect(mode));
    }
    if (values[2] != Qundef)
        params.depth = (uint32_t)arg_uint(values[2], "depth", SAMPLING_DEPTH_MIN, SAMPLING_DEPTH_MAX, " frames");
    if (values[3] != Qundef && !NIL_P(values[3])) {
        params.seed = arg_uint(values[3], "seed", 0, UINT64_MAX, "");
        params.has_seed = true;
    }
    if (values[4] != Qundef)
        params.max_samples = (size_t)arg_uint(values[4], "max_samples", SAMPLING_MAX_SAMPLES_MIN, SAMPLING_MAX_SAMPLES_MAX, "");

    /* keep the out= of a boot-time start: the profile is still written at exit */
    strcpy(params.out, sampler_params()->out);
    sampler_start(&params);
    return Qtrue;
}

static VALUE
sampler_stop_m(VALUE self)
{
    return sampler_stop() ? Qtrue : Qfalse;
}

static VALUE
sampler_enabled_m(VALUE self)
{
    return sampler_enabled() ? Qtrue : Qfalse;
}

static VALUE
sampler_clear_m(VALUE self)
{
    sampler_clear();
    return Qnil;
}

static VALUE
mode_symbol(enum sampling_mode mode)
{
    return ID2SYM(rb_intern(mode == SAMPLING_MODE_FIXED ? "fixed" : "poisson"));
}

#define SYM(name) ID2SYM(rb_intern(name))

static VALUE
sampler_stats_m(VALUE self)
{
    struct sampler_stats s;
    sampler_get_stats(&s);
    VALUE h = rb_hash_new();
    rb_hash_aset(h, SYM("enabled"), s.enabled ? Qtrue : Qfalse);
    rb_hash_aset(h, SYM("interval"), ULL2NUM(s.interval));
    rb_hash_aset(h, SYM("mode"), mode_symbol(s.mode));
    rb_hash_aset(h, SYM("depth"), UINT2NUM(s.depth));
    rb_hash_aset(h, SYM("max_samples"), SIZET2NUM(s.max_samples));
    rb_hash_aset(h, SYM("samples"), ULL2NUM(s.samples));
    rb_hash_aset(h, SYM("live"), ULL2NUM(s.live));
    rb_hash_aset(h, SYM("dropped"), ULL2NUM(s.dropped));
    rb_hash_aset(h, SYM("evicted"), ULL2NUM(s.evicted));
    rb_hash_aset(h, SYM("records"), ULL2NUM(s.records));
    rb_hash_aset(h, SYM("sites"), ULL2NUM(s.sites));
    rb_hash_aset(h, SYM("folded"), ULL2NUM(s.folded));
    rb_hash_aset(h, SYM("named"), ULL2NUM(s.named));
    rb_hash_aset(h, SYM("allocated_bytes"), ULL2NUM(s.allocated_bytes));
    VALUE heaps = rb_ary_new_capa((long)s.nheaps);
    for (size_t i = 0; i < s.nheaps; i++) {
        VALUE hh = rb_hash_new();
        rb_hash_aset(hh, SYM("slot_size"), SIZET2NUM(s.per_heap[i].slot_size));
        rb_hash_aset(hh, SYM("allocated_bytes"), ULL2NUM(s.per_heap[i].allocated_bytes));
        rb_hash_aset(hh, SYM("samples"), ULL2NUM(s.per_heap[i].samples));
        rb_hash_aset(hh, SYM("points"), ULL2NUM(s.per_heap[i].points));
        rb_ary_push(heaps, hh);
    }
    rb_hash_aset(h, SYM("heaps"), heaps);
    return h;
}

/* ---- reading ---- */

/* A read of the records and sites as they were when it began: records
 * with seq below `limit`, sites up to `newest`.  Between read_begin and
 * read_end GC is off and other Ractors wait, so no record changes state,
 * nothing moves, and (records.h) no record is evicted and no site freed:
 * a reader may allocate freely.  Only the record table may move (it grows
 * past its reserve with samples of the reader's own allocations): index
 * it again after anything that allocates.  Each distinct site is
 * converted once per read (read_site), into what the reader needs. */
struct read {
    st_table *sites;        /* site -> its conversion */
    uint64_t limit;
    const struct sampling_stack *newest;
    unsigned int lev;
    bool reading;
};

static void
read_begin(struct read *rd)
{
    rd->limit = sampler_read_begin(&rd->lev);
    rd->newest = sampler_records()->newest;
    rd->reading = true;
}

static int
read_free_i(st_data_t key, st_data_t value, st_data_t free_converted)
{
    if (value) ((void (*)(st_data_t))free_converted)(value);
    return ST_CONTINUE;
}

/* Ends a read (from an ensure function): frees the conversions with
 * free_converted (NULL: nothing to free), and lets GC and the other
 * Ractors go on. */
static void
read_end(struct read *rd, void (*free_converted)(st_data_t))
{
    if (free_converted) st_foreach(rd->sites, read_free_i, (st_data_t)free_converted);
    st_free_table(rd->sites);
    if (rd->reading) sampler_read_end(rd->lev);
}

/* The record at index if the read sees it, else NULL; valid until the
 * reader next allocates. */
static const struct sampling_record *
read_record(const struct read *rd, size_t index)
{
    const struct sampling_records *r = sampler_records();
    if (index >= r->used) return NULL;
    const struct sampling_record *rec = &r->items[index];
    return rec->seq && rec->seq < rd->limit ? rec : NULL;
}

/* Every site the read sees, oldest first. */
#define READ_SITES_FOREACH(rd, s) \
    for (const struct sampling_stack *s = sampler_records()->oldest, *s##_end = (rd)->newest ? (rd)->newest->newer : s; \
         s && s != s##_end; s = s->newer)

typedef st_data_t read_convert_fn(const struct sampling_names *names, void *arg);

/* A site's names for a read: its own once named, else made now. */
struct site_names {
    const struct sampling_stack *site;
    struct sampling_names *made;
    read_convert_fn *convert;
    void *arg;
};

static VALUE
site_names_convert(VALUE arg)
{
    struct site_names *sn = (struct site_names *)arg;
    const struct sampling_names *names = sn->site->names;
    if (!names) {
        const struct sampling_stack *s = sn->site;
        names = sn->made = sampling_names_of(s->frames, s->nframes, s->origin, s->klass);
        if (!names) rb_memerror();
    }
    return (VALUE)sn->convert(names, sn->arg);
}

static VALUE
site_names_free(VALUE arg)
{
    free(((struct site_names *)arg)->made);
    return Qnil;
}

/* The conversion of site, made once per read.  It is registered (as 0)
 * before it is made, so one that raises half-way is not made again. */
static st_data_t
read_site(struct read *rd, const struct sampling_stack *site, read_convert_fn *convert, void *arg)
{
    st_data_t converted;
    if (st_lookup(rd->sites, (st_data_t)site, &converted)) return converted;
    st_insert(rd->sites, (st_data_t)site, 0);
    struct site_names sn = { site, NULL, convert, arg };
    converted = (st_data_t)rb_ensure(site_names_convert, (VALUE)&sn, site_names_free, (VALUE)&sn);
    st_insert(rd->sites, (st_data_t)site, converted);
    return converted;
}

/* ---- Sample ---- */

struct sample_view {
    uint32_t index;
    uint64_t seq;
    VALUE klass;            /* Qnil for hidden / internal, or a class that died */
    VALUE frames;           /* frozen Array of frozen [path, lineno, label] */
    double weight;
    size_t allocated_gc, freed_gc;
    uint32_t size;
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
}

static void
sample_compact(void *p)
{
    struct sample_view *v = p;
    v->klass = rb_gc_location(v->klass);
    v->frames = rb_gc_location(v->frames);
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
    v->live = rec.live_pos != SAMPLING_NONE;
    v->freed_gc = rec.freed_gc;
    v->old = rec.old;
}

static VALUE
name_string(const char *s, uint32_t len)
{
    return s ? rb_str_freeze(rb_utf8_str_new(s, len)) : Qnil;
}

/* frames as Sample#frames gives them: a frozen Array of frozen [path, lineno, label] */
static st_data_t
frames_convert(const struct sampling_names *names, void *arg)
{
    if (names->n == 0) {
        VALUE unknown = rb_str_freeze(rb_str_new_cstr("<unknown>"));
        return (st_data_t)rb_ary_freeze(rb_ary_new_from_args(1, rb_ary_freeze(rb_ary_new_from_args(3, unknown, INT2FIX(0), unknown))));
    }
    VALUE frames = rb_ary_new_capa(names->n);
    for (uint32_t i = 0; i < names->n; i++) {
        const struct sampling_name *nm = &names->locs[i];
        rb_ary_push(frames, rb_ary_freeze(rb_ary_new_from_args(3, name_string(nm->path, nm->pathlen), INT2NUM(nm->lineno),
                                                                 name_string(nm->label, nm->labellen))));
    }
    /* (stays reachable: GC is off, then the result holds it) */
    return (st_data_t)rb_ary_freeze(frames);
}

/* A snapshot of every record taken before the call, as Sample objects. */
struct snapshot {
    struct read read;
    VALUE result;
};

static VALUE
snapshot_body(VALUE arg)
{
    struct snapshot *snap = (struct snapshot *)arg;
    read_begin(&snap->read);
    for (size_t i = 0; i < sampler_records()->used; i++) {
        const struct sampling_record *rec = read_record(&snap->read, i);
        if (!rec) continue;
        VALUE frames = (VALUE)read_site(&snap->read, rec->stack, frames_convert, NULL);
        struct sample_view *v;
        VALUE sample = TypedData_Make_Struct(cSample, struct sample_view, &sample_type, v);
        rec = read_record(&snap->read, i);   /* (again: the table may have moved) */
        const struct sampling_stack *site = rec->stack;
        v->index = (uint32_t)i;
        v->seq = rec->seq;
        RB_OBJ_WRITE(sample, &v->klass, site->klass ? (VALUE)site->klass : Qnil);
        RB_OBJ_WRITE(sample, &v->frames, frames);
        v->weight = rec->weight;
        v->allocated_gc = rec->allocated_gc;
        v->size = rec->size;
        v->type = site->type;
        v->imemo_type = site->imemo_type;
        v->truncated = site->truncated;
        v->live = rec->live_pos != SAMPLING_NONE;
        v->freed_gc = rec->freed_gc;
        v->old = rec->old;
        rb_ary_push(snap->result, sample);
    }
    return snap->result;
}

static VALUE
snapshot_ensure(VALUE arg)
{
    read_end(&((struct snapshot *)arg)->read, NULL);
    return Qnil;
}

static VALUE
snapshot(void)
{
    struct snapshot snap = { { st_init_numtable(), 0, NULL, 0, false }, rb_ary_new() };
    rb_ensure(snapshot_body, (VALUE)&snap, snapshot_ensure, (VALUE)&snap);
    return snap.result;
}

static VALUE
sampler_samples_m(VALUE self)
{
    return snapshot();
}

static VALUE
sampler_each_sample_m(VALUE self)
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

static const char *const type_names[] = {
    "T_NONE", "T_OBJECT", "T_CLASS", "T_MODULE", "T_FLOAT", "T_STRING", "T_REGEXP", "T_ARRAY",
    "T_HASH", "T_STRUCT", "T_BIGNUM", "T_FILE", "T_DATA", "T_MATCH", "T_COMPLEX", "T_RATIONAL",
    NULL, "T_NIL", "T_TRUE", "T_FALSE", "T_SYMBOL", "T_FIXNUM", "T_UNDEF", NULL,
    NULL, NULL, "T_IMEMO", "T_NODE", "T_ICLASS", "T_ZOMBIE", "T_MOVED", NULL,
};

static const char *
type_name(uint16_t type)
{
    const char *name = type < 32 ? type_names[type] : NULL;
    return name ? name : "T_UNKNOWN";
}

static VALUE
type_symbol(uint16_t type)
{
    return ID2SYM(rb_intern(type_name(type)));
}

static VALUE
imemo_symbol(uint16_t type, uint8_t imemo_type)
{
    return type == RUBY_T_IMEMO ? ID2SYM(rb_intern(rb_imemo_name(imemo_type))) : Qnil;
}

static VALUE sample_type_m(VALUE self) { return type_symbol(sample_get(self)->type); }
static VALUE sample_imemo_type_m(VALUE self) { return imemo_symbol(sample_get(self)->type, sample_get(self)->imemo_type); }
static VALUE sample_klass_m(VALUE self) { return sample_get(self)->klass; }
static VALUE sample_size_m(VALUE self) { return UINT2NUM(sample_get(self)->size); }
static VALUE sample_frames_m(VALUE self) { return sample_get(self)->frames; }
static VALUE sample_truncated_p(VALUE self) { return sample_get(self)->truncated ? Qtrue : Qfalse; }
static VALUE sample_allocated_gc_m(VALUE self) { return SIZET2NUM(sample_get(self)->allocated_gc); }

static VALUE
sample_weight_m(VALUE self)
{
    double w = sample_get(self)->weight;
    /* fixed-mode weights are whole bytes: give an Integer then */
    if (w == floor(w) && w < 9007199254740992.0) return ULL2NUM((unsigned long long)w);
    return DBL2NUM(w);
}

static VALUE
sample_freed_gc_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    sample_refresh(v);
    return v->live || !v->freed_gc ? Qnil : SIZET2NUM(v->freed_gc);
}

static VALUE
sample_age_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    sample_refresh(v);
    /* as sampling_record_age: every collection since allocation while it
     * lives, those before the one that found it dead otherwise */
    size_t last = v->live ? rb_gc_count() : (v->freed_gc ? v->freed_gc - 1 : v->allocated_gc);
    return SIZET2NUM(last > v->allocated_gc ? last - v->allocated_gc : 0);
}

static VALUE
sample_old_p(VALUE self)
{
    struct sample_view *v = sample_get(self);
    sample_refresh(v);
    return v->old ? Qtrue : Qfalse;
}

static VALUE
sample_memsize_m(VALUE self)
{
    VALUE obj = sample_object_m(self);
    if (NIL_P(obj)) return Qnil;
    return SIZET2NUM(rb_obj_memsize_of(obj));
}

static VALUE
sample_inspect_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    VALUE top = RARRAY_LEN(v->frames) ? RARRAY_AREF(v->frames, 0) : Qnil;
    return rb_sprintf("#<%"PRIsVALUE" %"PRIsVALUE" %"PRIsVALUE" size=%u weight=%.0f at %"PRIsVALUE"%s>",
                      rb_class_name(CLASS_OF(self)), sample_type_m(self),
                      NIL_P(v->klass) ? rb_str_new_cstr("(hidden)") : rb_inspect(v->klass),
                      v->size, v->weight, NIL_P(top) ? rb_str_new_cstr("?") : rb_inspect(top),
                      sample_live_p(self) == Qtrue ? "" : " dead");
}

/* ---- sites: totals per site, for profiles and reports ---- */

/* What a profile shows of one site: totals of every sample taken there,
 * and in-use totals of its live records (which the read sees). */
struct site_values {
    double alloc_space, alloc_objects, inuse_space, inuse_objects;
};

/* In-use totals per site (site -> malloc'd struct site_values), from the
 * live records the read sees. */
static void
read_inuse(struct read *rd, st_table *inuse)
{
    const struct sampling_records *r = sampler_records();
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = read_record(rd, r->live[i].record);
        if (!rec) continue;
        st_data_t v;
        if (!st_lookup(inuse, (st_data_t)rec->stack, &v)) {
            v = (st_data_t)calloc(1, sizeof(struct site_values));
            if (!v) rb_memerror();
            st_insert(inuse, (st_data_t)rec->stack, v);
        }
        ((struct site_values *)v)->inuse_space += rec->weight;
        ((struct site_values *)v)->inuse_objects += rec->weight / rec->size;
    }
}

static struct site_values
site_values(const struct sampling_stack *site, st_table *inuse)
{
    struct site_values sv = { site->alloc_space, site->alloc_objects, 0, 0 };
    st_data_t v;
    if (st_lookup(inuse, (st_data_t)site, &v)) {
        sv.inuse_space = ((struct site_values *)v)->inuse_space;
        sv.inuse_objects = ((struct site_values *)v)->inuse_objects;
    }
    return sv;
}

static int
free_value_i(st_data_t key, st_data_t value, st_data_t arg)
{
    free((void *)value);
    return ST_CONTINUE;
}

static void
inuse_free(st_table *inuse)
{
    st_foreach(inuse, free_value_i, 0);
    st_free_table(inuse);
}

/* The name a pseudo-site gets for the totals of folded sites. */
#define OTHER_SITES "<other sites>"

/* ---- site_totals (report.rb reads them) ---- */

struct totals {
    struct read read;
    st_table *inuse;
    VALUE result;
};

static VALUE
totals_row(VALUE frames, VALUE klass, VALUE type, VALUE imemo, struct site_values sv, VALUE ages)
{
    VALUE row = rb_ary_new_capa(9);
    rb_ary_push(row, frames);
    rb_ary_push(row, klass);
    rb_ary_push(row, type);
    rb_ary_push(row, imemo);
    rb_ary_push(row, DBL2NUM(sv.alloc_space));
    rb_ary_push(row, DBL2NUM(sv.alloc_objects));
    rb_ary_push(row, DBL2NUM(sv.inuse_space));
    rb_ary_push(row, DBL2NUM(sv.inuse_objects));
    rb_ary_push(row, ages);
    return row;
}

static st_data_t
class_name_convert(const struct sampling_names *names, void *arg)
{
    return (st_data_t)(names->klass ? rb_str_freeze(rb_utf8_str_new_cstr(names->klass)) : Qnil);
}

static st_data_t
totals_convert(const struct sampling_names *names, void *arg)
{
    /* (reachable while GC is off, then from the rows) */
    return (st_data_t)rb_ary_new_from_args(2, (VALUE)frames_convert(names, NULL), (VALUE)class_name_convert(names, NULL));
}

static VALUE
totals_body(VALUE arg)
{
    struct totals *t = (struct totals *)arg;
    read_begin(&t->read);
    read_inuse(&t->read, t->inuse);
    /* live ages per site */
    st_table *ages = st_init_numtable();
    VALUE keep = rb_ary_new();
    size_t gc_count = rb_gc_count();
    const struct sampling_records *r = sampler_records();
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = read_record(&t->read, r->live[i].record);
        if (!rec) continue;
        st_data_t list;
        const struct sampling_stack *site = rec->stack;
        size_t age = sampling_record_age(rec, gc_count);
        if (!st_lookup(ages, (st_data_t)site, &list)) {
            list = (st_data_t)rb_ary_new();
            rb_ary_push(keep, (VALUE)list);
            st_insert(ages, (st_data_t)site, list);
        }
        rb_ary_push((VALUE)list, SIZET2NUM(age));
    }
    VALUE rows = rb_ary_new();
    READ_SITES_FOREACH(&t->read, site) {
        VALUE pair = (VALUE)read_site(&t->read, site, totals_convert, NULL);
        st_data_t list;
        VALUE site_ages = st_lookup(ages, (st_data_t)site, &list) ? (VALUE)list : rb_ary_new();
        rb_ary_push(rows, totals_row(RARRAY_AREF(pair, 0), RARRAY_AREF(pair, 1), type_symbol(site->type),
                                     imemo_symbol(site->type, site->imemo_type), site_values(site, t->inuse), site_ages));
    }
    st_free_table(ages);
    RB_GC_GUARD(keep);
    if (r->other_space > 0) {
        VALUE other = rb_str_freeze(rb_str_new_cstr(OTHER_SITES));
        VALUE frames = rb_ary_freeze(rb_ary_new_from_args(1, rb_ary_freeze(rb_ary_new_from_args(3, other, INT2FIX(0), other))));
        struct site_values sv = { r->other_space, r->other_objects, 0, 0 };
        rb_ary_push(rows, totals_row(frames, Qnil, Qnil, Qnil, sv, rb_ary_new()));
    }
    t->result = rows;
    return rows;
}

static VALUE
totals_ensure(VALUE arg)
{
    struct totals *t = (struct totals *)arg;
    read_end(&t->read, NULL);
    inuse_free(t->inuse);
    return Qnil;
}

/* site_totals (private): one row per site, [frames, class name, type,
 * imemo type, alloc_space, alloc_objects, inuse_space, inuse_objects,
 * ages of its live samples]; folded sites as one "<other sites>" row. */
static VALUE
sampler_site_totals_m(VALUE self)
{
    struct totals t = { { st_init_numtable(), 0, NULL, 0, false }, st_init_numtable(), rb_ary_new() };
    return rb_ensure(totals_body, (VALUE)&t, totals_ensure, (VALUE)&t);
}

/* ---- pprof ---- */

static uint64_t
name_index(struct pprof *p, const char *s, uint32_t len)
{
    return s ? pprof_string(p, s, len) : 0;
}

/* A site's location ids, innermost first, and its class name's index. */
struct site_ids {
    uint64_t klass;
    uint32_t n;
    uint64_t ids[];
};

static void
free_site_ids(st_data_t value)
{
    free((void *)value);
}

struct pprof_build {
    struct read read;
    st_table *inuse;
    struct pprof *p;
    uint64_t key_class, key_type;
    uint8_t *bytes;
    size_t len;
};

static uint64_t
synthetic_location(struct pprof *p, const char *name)
{
    uint64_t s = pprof_cstring(p, name);
    return pprof_location(p, pprof_function(p, s, s), 0);
}

static st_data_t
pprof_convert(const struct sampling_names *names, void *arg)
{
    struct pprof *p = ((struct pprof_build *)arg)->p;
    uint32_t n = names->n ? names->n : 1;
    struct site_ids *s = malloc(sizeof(*s) + n * sizeof(s->ids[0]));
    if (!s) rb_memerror();
    s->n = n;
    s->klass = names->klass ? pprof_cstring(p, names->klass) : 0;
    if (!names->n) s->ids[0] = synthetic_location(p, "<unknown>");
    for (uint32_t i = 0; i < names->n; i++) {
        const struct sampling_name *nm = &names->locs[i];
        uint64_t function = pprof_function(p, name_index(p, nm->label, nm->labellen), name_index(p, nm->path, nm->pathlen));
        s->ids[i] = pprof_location(p, function, nm->lineno);
    }
    return (st_data_t)s;
}

/* One pprof sample, rounded once (rounding each record would bias the
 * counts by up to half an object a record). */
static void
pprof_site_sample(struct pprof_build *b, const uint64_t *ids, uint32_t n, struct site_values sv,
                  const struct pprof_label *labels, size_t nlabels)
{
    int64_t values[4] = { llround(sv.alloc_objects), llround(sv.alloc_space), llround(sv.inuse_objects),
                          llround(sv.inuse_space) };
    if (!values[0] && !values[1] && !values[2] && !values[3]) return;
    pprof_sample(b->p, ids, n, values, 4, labels, nlabels);
}

static VALUE
pprof_build_body(VALUE arg)
{
    struct pprof_build *b = (struct pprof_build *)arg;
    const struct sampling_params *params = sampler_params();
    struct pprof *p = b->p;
    pprof_sample_type(p, "alloc_objects", "count");
    pprof_sample_type(p, "alloc_space", "bytes");
    pprof_sample_type(p, "inuse_objects", "count");
    pprof_sample_type(p, "inuse_space", "bytes");
    pprof_period(p, "space", "bytes", (int64_t)params->interval);
    pprof_default_sample_type(p, "alloc_space");
    b->key_class = pprof_cstring(p, "class");
    b->key_type = pprof_cstring(p, "type");

    read_begin(&b->read);
    const struct sampling_records *r = sampler_records();
    char comment[256];
    snprintf(comment, sizeof(comment), "sampling GC: mode=%s interval=%llu depth=%u",
             params->mode == SAMPLING_MODE_FIXED ? "fixed" : "poisson",
             (unsigned long long)params->interval, params->depth);
    pprof_comment(p, comment);
    if (r->evicted || r->dropped || r->folded) {
        /* totals stay exact; in-use covers the records kept */
        snprintf(comment, sizeof(comment), "records evicted: %llu, dropped: %llu; sites folded into "
                 OTHER_SITES ": %llu (alloc totals are exact; inuse covers the records kept)",
                 (unsigned long long)r->evicted, (unsigned long long)r->dropped, (unsigned long long)r->folded);
        pprof_comment(p, comment);
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pprof_time(p, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, 0);

    read_inuse(&b->read, b->inuse);
    READ_SITES_FOREACH(&b->read, site) {
        const struct site_ids *s = (const struct site_ids *)read_site(&b->read, site, pprof_convert, b);
        struct pprof_label labels[2];
        size_t nlabels = 0;
        labels[nlabels++] = (struct pprof_label){ b->key_type, pprof_cstring(p, type_name(site->type)) };
        if (s->klass) labels[nlabels++] = (struct pprof_label){ b->key_class, s->klass };
        pprof_site_sample(b, s->ids, s->n, site_values(site, b->inuse), labels, nlabels);
    }
    if (r->other_space > 0) {
        uint64_t id = synthetic_location(p, OTHER_SITES);
        struct site_values sv = { r->other_space, r->other_objects, 0, 0 };
        pprof_site_sample(b, &id, 1, sv, NULL, 0);
    }
    if (!pprof_finish(p, true, &b->bytes, &b->len)) rb_memerror();
    return Qnil;
}

static VALUE
pprof_build_ensure(VALUE arg)
{
    struct pprof_build *b = (struct pprof_build *)arg;
    read_end(&b->read, free_site_ids);
    inuse_free(b->inuse);
    pprof_free(b->p);
    return Qnil;
}

/* The profile as a binary String (gzip-compressed pprof). */
static VALUE
pprof_bytes(void)
{
    struct pprof *p = pprof_new();
    if (!p) rb_memerror();
    struct pprof_build b = { { st_init_numtable(), 0, NULL, 0, false }, st_init_numtable(), p, 0, 0, NULL, 0 };
    rb_ensure(pprof_build_body, (VALUE)&b, pprof_build_ensure, (VALUE)&b);
    VALUE str = rb_str_new((const char *)b.bytes, (long)b.len);
    free(b.bytes);
    return str;
}

/* ---- output ---- */

/* Writes bytes to path_or_io: an IO (anything with #write, even one that
 * also has #to_path, as every File does) is written through at its
 * position; a String or Pathname names a file, written with File.binwrite
 * (which opens and writes without the GVL and can be interrupted: a FIFO
 * with no reader blocks only this thread). */
static VALUE
write_out(VALUE dest, VALUE bytes, const char *argname)
{
    if (!RB_TYPE_P(dest, T_STRING) && rb_respond_to(dest, rb_intern("write"))) {
        rb_funcall(dest, rb_intern("write"), 1, bytes);
    }
    else if (RB_TYPE_P(dest, T_STRING) || rb_respond_to(dest, rb_intern("to_path"))) {
        rb_funcall(rb_cFile, rb_intern("binwrite"), 2, rb_get_path(dest), bytes);
    }
    else {
        rb_raise(rb_eArgError, "%s must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", argname, rb_inspect(dest));
    }
    return LONG2NUM(RSTRING_LEN(bytes));
}

static void
check_destination(VALUE dest, const char *argname)
{
    if (!RB_TYPE_P(dest, T_STRING) && !rb_respond_to(dest, rb_intern("to_path")) && !rb_respond_to(dest, rb_intern("write")))
        rb_raise(rb_eArgError, "%s must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", argname, rb_inspect(dest));
}

static VALUE
sampler_write_pprof_m(VALUE self, VALUE dest)
{
    check_destination(dest, "path_or_io");
    return write_out(dest, pprof_bytes(), "path_or_io");
}

/* RUBY_GC_SAMPLING's out=: the profile at exit, %p the pid (resolved
 * against the directory the program started in).  Never raises for a
 * failed write: one warning, and the exit status stays the program's.  A
 * signal that arrives meanwhile waits until the profile is written (unless
 * the write blocks), then ends the program as it would have. */
static VALUE
write_at_exit_write(RB_BLOCK_CALL_FUNC_ARGLIST(unused, path))
{
    return write_out(path, pprof_bytes(), "out");
}

static VALUE
write_at_exit_body(VALUE path)
{
    VALUE mask = rb_hash_new();
    rb_hash_aset(mask, rb_cObject, ID2SYM(rb_intern("on_blocking")));
    return rb_block_call(rb_cThread, rb_intern("handle_interrupt"), 1, &mask, write_at_exit_write, path);
}

static void
write_at_exit(VALUE unused)
{
    const struct sampling_params *params = sampler_params();
    if (!params->out[0]) return;
    char path[SAMPLING_OUT_MAX + 32];
    if (!sampling_expand_path(params->out, (long)getpid(), path, sizeof(path))) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s is too long; no profile written\n", params->out);
        return;
    }
    int state = 0;
    rb_protect(write_at_exit_body, rb_str_new_cstr(path), &state);
    if (!state) return;
    VALUE err = rb_errinfo();
    if (rb_obj_is_kind_of(err, rb_eSignal)) rb_jump_tag(state);   /* the program ends by its signal */
    rb_set_errinfo(Qnil);
    VALUE msg = rb_check_funcall(err, rb_intern("message"), 0, 0);
    fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the profile to %s: %s\n", path,
            RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
}

/* ---- report.rb: collapsed stacks and the text report ---- */

static const char report_rb[] =
#include "report_rb.inc"
    ;

/* report and write_collapsed stay these C methods (so a Method taken
 * before the first call keeps working, and nothing is redefined); the
 * first call evaluates report.rb, which defines the private methods they
 * call. */
static VALUE
report_call(int argc, VALUE *argv, VALUE self, const char *name)
{
    static bool loaded;
    if (!loaded) {
        rb_funcall(rb_mKernel, rb_intern("eval"), 4, rb_str_new_static(report_rb, (long)sizeof(report_rb) - 1), Qnil,
                   rb_str_new_cstr("<internal:allocation_sampler/report>"), INT2FIX(1));
        loaded = true;
    }
    return rb_funcallv_kw(self, rb_intern(name), argc, argv, rb_keyword_given_p());
}

static VALUE
sampler_write_collapsed_m(int argc, VALUE *argv, VALUE self)
{
    return report_call(argc, argv, self, "write_collapsed_impl");
}

static VALUE
sampler_report_m(int argc, VALUE *argv, VALUE self)
{
    return report_call(argc, argv, self, "report_impl");
}

/* ---- boot ---- */

static void
start_from_environment(void)
{
    const char *text = getenv("RUBY_GC_SAMPLING");
    if (!text) return;
    struct sampling_params params;
    char err[512];
    if (!sampling_params_parse(text, &params, err, sizeof(err))) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: %s; allocation sampling is off\n", err);
        return;
    }
    if (params.out[0] && params.out[0] != '/') {
        /* relative to where the program started, not where it is at exit */
        char cwd[SAMPLING_OUT_MAX], out[SAMPLING_OUT_MAX];
        if (!getcwd(cwd, sizeof(cwd)) || (size_t)snprintf(out, sizeof(out), "%s/%s", cwd, params.out) >= sizeof(out)) {
            fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s: the current directory cannot be read or the path is "
                    "too long; allocation sampling is off\n", params.out);
            return;
        }
        strcpy(params.out, out);
    }
    sampler_start(&params);
    if (params.out[0]) rb_set_end_proc(write_at_exit, Qnil);
}

void
sampling_api_init(void)
{
    VALUE mObjectSpace = rb_const_get(rb_cObject, rb_intern("ObjectSpace"));
    mSampler = rb_define_module_under(mObjectSpace, "AllocationSampler");
    rb_define_singleton_method(mSampler, "start", sampler_start_m, -1);
    rb_define_singleton_method(mSampler, "stop", sampler_stop_m, 0);
    rb_define_singleton_method(mSampler, "enabled?", sampler_enabled_m, 0);
    rb_define_singleton_method(mSampler, "clear", sampler_clear_m, 0);
    rb_define_singleton_method(mSampler, "stats", sampler_stats_m, 0);
    rb_define_singleton_method(mSampler, "samples", sampler_samples_m, 0);
    rb_define_singleton_method(mSampler, "each_sample", sampler_each_sample_m, 0);
    rb_define_singleton_method(mSampler, "write_pprof", sampler_write_pprof_m, 1);
    rb_define_singleton_method(mSampler, "write_collapsed", sampler_write_collapsed_m, -1);
    rb_define_singleton_method(mSampler, "report", sampler_report_m, -1);
    rb_define_private_method(rb_singleton_class(mSampler), "site_totals", sampler_site_totals_m, 0);

    cSample = rb_define_class_under(mSampler, "Sample", rb_cObject);
    rb_undef_alloc_func(cSample);
    rb_define_method(cSample, "object", sample_object_m, 0);
    rb_define_method(cSample, "live?", sample_live_p, 0);
    rb_define_method(cSample, "type", sample_type_m, 0);
    rb_define_method(cSample, "imemo_type", sample_imemo_type_m, 0);
    rb_define_method(cSample, "klass", sample_klass_m, 0);
    rb_define_method(cSample, "size", sample_size_m, 0);
    rb_define_method(cSample, "weight", sample_weight_m, 0);
    rb_define_method(cSample, "frames", sample_frames_m, 0);
    rb_define_method(cSample, "truncated?", sample_truncated_p, 0);
    rb_define_method(cSample, "allocated_gc", sample_allocated_gc_m, 0);
    rb_define_method(cSample, "freed_gc", sample_freed_gc_m, 0);
    rb_define_method(cSample, "age", sample_age_m, 0);
    rb_define_method(cSample, "old?", sample_old_p, 0);
    rb_define_method(cSample, "memsize", sample_memsize_m, 0);
    rb_define_method(cSample, "inspect", sample_inspect_m, 0);

    start_from_environment();
}
