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

/* ---- Sample ---- */

struct sample_view {
    uint32_t index;
    uint64_t seq;
    VALUE klass;            /* Qnil for hidden / internal */
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

/* The locations a stack shows (a malloc'd array; *n of them). */
static struct sampling_location *
stack_resolve(const struct sampling_stack *s, uint32_t *n)
{
    struct sampling_location *locs = malloc((s->nframes ? s->nframes : 1) * sizeof(*locs));
    if (!locs) rb_memerror();
    *n = sampling_frames_resolve(s->frames, s->nframes, locs);
    return locs;
}

static VALUE
location_array(const struct sampling_location *loc)
{
    VALUE path = sampling_location_path(loc);
    if (!NIL_P(path)) path = rb_str_new_frozen(path);
    VALUE label = sampling_location_label(loc);
    return rb_ary_freeze(rb_ary_new_from_args(3, path, INT2NUM(sampling_location_lineno(loc)), rb_str_freeze(label)));
}

static VALUE
boot_frames(void)
{
    /* taken before the VM could show a stack (RUBY_GC_SAMPLING at boot) */
    VALUE boot = rb_str_freeze(rb_str_new_cstr("<boot>"));
    return rb_ary_freeze(rb_ary_new_from_args(1, rb_ary_freeze(rb_ary_new_from_args(3, boot, INT2FIX(0), boot))));
}

struct stack_frames_arg {
    struct sampling_location *locs;
    uint32_t n;
};

static VALUE
stack_frames_body(VALUE arg)
{
    struct stack_frames_arg *a = (struct stack_frames_arg *)arg;
    VALUE frames = rb_ary_new_capa(a->n);
    for (uint32_t i = 0; i < a->n; i++) rb_ary_push(frames, location_array(&a->locs[i]));
    return rb_ary_freeze(frames);
}

static VALUE
free_locations(VALUE arg)
{
    free(((struct stack_frames_arg *)arg)->locs);
    return Qnil;
}

/* frames as Sample#frames gives them: a frozen Array of frozen [path, lineno, label] */
static VALUE
stack_frames(const struct sampling_stack *s)
{
    if (s->nframes == 0) return boot_frames();
    struct stack_frames_arg a;
    a.locs = stack_resolve(s, &a.n);
    return rb_ensure(stack_frames_body, (VALUE)&a, free_locations, (VALUE)&a);
}

/* ---- reading the records ---- */

/* A read of the records taken before it began (seq below the limit
 * sampler_read_begin returns), for samples and for write_pprof.  Records
 * may be added (samples of the reader's own allocations) and evicted while
 * the reader allocates, never moved or found dead: GC is off and other
 * Ractors wait.  Each distinct stack is converted once (convert) and stays
 * retained until the read ends, so no new stack can take its address
 * meanwhile; visit gets the record's index, its sequence number and the
 * conversion, and re-checks the sequence number after it allocates. */
struct read {
    st_table *stacks;       /* stack -> its conversion (0 while converting) */
    unsigned int lev;
    bool reading;
};

typedef st_data_t read_convert_fn(const struct sampling_stack *stack, void *arg);
typedef void read_visit_fn(uint32_t index, uint64_t seq, st_data_t converted, void *arg);

static void
read_records(struct read *rd, read_convert_fn *convert, read_visit_fn *visit, void *arg)
{
    uint64_t limit = sampler_read_begin(&rd->lev);
    rd->reading = true;
    struct sampling_records *r = sampler_records();
    for (size_t i = 0; i < r->used; i++) {
        uint64_t seq = r->items[i].seq;
        if (!seq || seq >= limit) continue;
        struct sampling_stack *stack = r->items[i].stack;
        st_data_t converted;
        if (!st_lookup(rd->stacks, (st_data_t)stack, &converted)) {
            sampling_stack_retain(stack);
            st_insert(rd->stacks, (st_data_t)stack, 0);  /* released at the end, whatever happens */
            converted = convert(stack, arg);
            st_insert(rd->stacks, (st_data_t)stack, converted);
        }
        if (r->items[i].seq != seq) continue;  /* evicted while we allocated */
        visit((uint32_t)i, seq, converted, arg);
    }
}

struct read_end_arg {
    void (*free_converted)(st_data_t);
};

static int
read_release_i(st_data_t key, st_data_t value, st_data_t arg)
{
    void (*free_converted)(st_data_t) = ((struct read_end_arg *)arg)->free_converted;
    if (free_converted && value) free_converted(value);
    sampling_stack_release(sampler_records(), (struct sampling_stack *)key);
    return ST_CONTINUE;
}

/* Ends a read (from an ensure function): releases the stacks, frees their
 * conversions with free_converted (NULL: nothing to free), and lets GC and
 * the other Ractors go on. */
static void
read_end(struct read *rd, void (*free_converted)(st_data_t))
{
    struct read_end_arg a = { free_converted };
    if (rd->reading) st_foreach(rd->stacks, read_release_i, (st_data_t)&a);
    st_free_table(rd->stacks);
    if (rd->reading) sampler_read_end(rd->lev);
}

/* A snapshot of every record taken before the call, as Sample objects. */
struct snapshot {
    struct read read;
    VALUE result;
};

static st_data_t
snapshot_convert(const struct sampling_stack *stack, void *arg)
{
    /* (the frames Array stays reachable: GC is off, then the result holds it) */
    return (st_data_t)stack_frames(stack);
}

static void
snapshot_visit(uint32_t index, uint64_t seq, st_data_t frames, void *arg)
{
    struct snapshot *snap = arg;
    struct sample_view *v;
    VALUE sample = TypedData_Make_Struct(cSample, struct sample_view, &sample_type, v);
    const struct sampling_record *rec = &sampler_records()->items[index];
    if (rec->seq != seq) return;  /* evicted while we allocated */
    v->index = index;
    v->seq = seq;
    RB_OBJ_WRITE(sample, &v->klass, rec->stack->klass ? (VALUE)rec->stack->klass : Qnil);
    RB_OBJ_WRITE(sample, &v->frames, (VALUE)frames);
    v->weight = rec->weight;
    v->allocated_gc = rec->allocated_gc;
    v->size = rec->size;
    v->type = rec->type;
    v->imemo_type = rec->imemo_type;
    v->truncated = rec->stack->truncated;
    v->live = rec->live_pos != SAMPLING_NONE;
    v->freed_gc = rec->freed_gc;
    v->old = rec->old;
    rb_ary_push(snap->result, sample);
}

static VALUE
snapshot_body(VALUE arg)
{
    struct snapshot *snap = (struct snapshot *)arg;
    read_records(&snap->read, snapshot_convert, snapshot_visit, snap);
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
    struct snapshot snap = { { st_init_numtable(), 0, false }, rb_ary_new() };
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

static VALUE
sample_type_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    const char *name = v->type < 32 ? type_names[v->type] : NULL;
    return name ? ID2SYM(rb_intern(name)) : INT2FIX(v->type);
}

static VALUE
sample_imemo_type_m(VALUE self)
{
    struct sample_view *v = sample_get(self);
    if (v->type != RUBY_T_IMEMO) return Qnil;
    return ID2SYM(rb_intern(rb_imemo_name(v->imemo_type)));
}

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

/* ---- profiles ---- */

static VALUE
class_label(VALUE klass)
{
    if (NIL_P(klass) || !klass) return Qnil;
    VALUE name = rb_mod_name(klass);
    if (NIL_P(name)) name = rb_any_to_s(klass);  /* anonymous: #<Class:0x...> */
    return name;
}

static const char *
type_name(uint16_t type)
{
    const char *name = type < 32 ? type_names[type] : NULL;
    return name ? name : "T_UNKNOWN";
}

static uint64_t
rstring_index(struct pprof *p, VALUE str)
{
    if (NIL_P(str)) return 0;
    return pprof_string(p, RSTRING_PTR(str), (size_t)RSTRING_LEN(str));
}

/* A stack's location ids, innermost first.  Registered with the read
 * before it is filled, so an exception while filling it (no memory for a
 * label) leaks nothing: the read's end frees what is there. */
struct stack_ids {
    uint64_t *ids;
    uint32_t n;
    struct sampling_location *locs;  /* while filling */
};

static void
free_stack_ids(st_data_t value)
{
    struct stack_ids *s = (struct stack_ids *)value;
    free(s->ids);
    free(s->locs);
    free(s);
}

struct pprof_build {
    struct read read;
    struct pprof *p;
    uint64_t key_class, key_type;
    uint8_t *bytes;
    size_t len;
};

static st_data_t
pprof_convert(const struct sampling_stack *stack, void *arg)
{
    struct pprof_build *b = arg;
    struct pprof *p = b->p;
    struct stack_ids *s = calloc(1, sizeof(*s));
    if (!s) rb_memerror();
    st_insert(b->read.stacks, (st_data_t)stack, (st_data_t)s);
    s->ids = malloc((stack->nframes ? stack->nframes : 1) * sizeof(*s->ids));
    if (!s->ids) rb_memerror();
    if (!stack->nframes) {
        uint64_t boot = pprof_cstring(p, "<boot>");
        s->ids[0] = pprof_location(p, pprof_function(p, boot, boot), 0);
        s->n = 1;
        return (st_data_t)s;
    }
    s->locs = malloc(stack->nframes * sizeof(*s->locs));
    if (!s->locs) rb_memerror();
    uint32_t count = sampling_frames_resolve(stack->frames, stack->nframes, s->locs);
    for (uint32_t i = 0; i < count; i++) {
        VALUE label = sampling_location_label(&s->locs[i]), path = sampling_location_path(&s->locs[i]);
        uint64_t function = pprof_function(p, rstring_index(p, label), rstring_index(p, path));
        s->ids[i] = pprof_location(p, function, sampling_location_lineno(&s->locs[i]));
        RB_GC_GUARD(label);
        RB_GC_GUARD(path);
    }
    free(s->locs);
    s->locs = NULL;
    s->n = count;
    return (st_data_t)s;
}

static void
pprof_visit(uint32_t index, uint64_t seq, st_data_t converted, void *arg)
{
    struct pprof_build *b = arg;
    struct pprof *p = b->p;
    const struct sampling_record *rec = &sampler_records()->items[index];
    if (rec->seq != seq) return;  /* evicted while we allocated */
    VALUE klass_name = rec->stack->klass ? class_label((VALUE)rec->stack->klass) : Qnil;
    rec = &sampler_records()->items[index];
    if (rec->seq != seq) return;  /* the same, while class_label allocated */
    bool live = rec->live_pos != SAMPLING_NONE;
    int64_t space = (int64_t)llround(rec->weight);
    int64_t objects = (int64_t)llround(rec->weight / rec->size);
    int64_t values[4] = { objects, space, live ? objects : 0, live ? space : 0 };
    struct pprof_label labels[2];
    size_t nlabels = 0;
    labels[nlabels++] = (struct pprof_label){ b->key_type, pprof_cstring(p, type_name(rec->type)) };
    if (!NIL_P(klass_name)) labels[nlabels++] = (struct pprof_label){ b->key_class, rstring_index(p, klass_name) };
    const struct stack_ids *s = (const struct stack_ids *)converted;
    pprof_sample(p, s->ids, s->n, values, 4, labels, nlabels);
    RB_GC_GUARD(klass_name);
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
    char comment[128];
    snprintf(comment, sizeof(comment), "sampling GC: mode=%s interval=%llu depth=%u",
             params->mode == SAMPLING_MODE_FIXED ? "fixed" : "poisson",
             (unsigned long long)params->interval, params->depth);
    pprof_comment(p, comment);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pprof_time(p, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, 0);

    b->key_class = pprof_cstring(p, "class");
    b->key_type = pprof_cstring(p, "type");
    read_records(&b->read, pprof_convert, pprof_visit, b);
    if (!pprof_finish(p, true, &b->bytes, &b->len)) rb_memerror();
    return Qnil;
}

static VALUE
pprof_build_ensure(VALUE arg)
{
    struct pprof_build *b = (struct pprof_build *)arg;
    read_end(&b->read, free_stack_ids);
    pprof_free(b->p);
    return Qnil;
}

/* The profile as a binary String (gzip-compressed pprof). */
static VALUE
pprof_bytes(void)
{
    struct pprof *p = pprof_new();
    if (!p) rb_memerror();
    struct pprof_build b = { { st_init_numtable(), 0, false }, p, 0, 0, NULL, 0 };
    rb_ensure(pprof_build_body, (VALUE)&b, pprof_build_ensure, (VALUE)&b);
    VALUE str = rb_str_new((const char *)b.bytes, (long)b.len);
    free(b.bytes);
    return str;
}

/* Writes bytes to path_or_io: a path (String or #to_path) is written
 * whole or not at all (SystemCallError names it); an IO gets #write. */
static VALUE
write_out(VALUE dest, VALUE bytes, const char *argname)
{
    VALUE path = Qnil;
    if (RB_TYPE_P(dest, T_STRING)) path = dest;
    else if (rb_respond_to(dest, rb_intern("to_path"))) path = rb_funcall(dest, rb_intern("to_path"), 0);
    else if (!rb_respond_to(dest, rb_intern("write")))
        rb_raise(rb_eArgError, "%s must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", argname, rb_inspect(dest));

    if (NIL_P(path)) {
        rb_funcall(dest, rb_intern("write"), 1, bytes);
        return LONG2NUM(RSTRING_LEN(bytes));
    }
    FilePathValue(path);
    const char *cpath = RSTRING_PTR(path);
    if (strlen(cpath) != (size_t)RSTRING_LEN(path)) rb_raise(rb_eArgError, "%s contains a NUL byte", argname);
    int fd = open(cpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) rb_syserr_fail_str(errno, path);
    const char *data = RSTRING_PTR(bytes);
    size_t left = (size_t)RSTRING_LEN(bytes);
    while (left) {
        ssize_t n = write(fd, data, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            int e = errno;
            close(fd);
            rb_syserr_fail_str(e, path);
        }
        data += n;
        left -= (size_t)n;
    }
    if (close(fd) != 0) rb_syserr_fail_str(errno, path);
    return LONG2NUM(RSTRING_LEN(bytes));
}

static VALUE
sampler_write_pprof_m(VALUE self, VALUE dest)
{
    if (!RB_TYPE_P(dest, T_STRING) && !rb_respond_to(dest, rb_intern("to_path")) && !rb_respond_to(dest, rb_intern("write")))
        rb_raise(rb_eArgError, "path_or_io must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", rb_inspect(dest));
    return write_out(dest, pprof_bytes(), "path_or_io");
}

/* RUBY_GC_SAMPLING's out=: the profile at exit, %p the pid.  Never raises:
 * a failure is one warning, and the exit status stays the program's. */
static VALUE
write_at_exit_body(VALUE path)
{
    return write_out(path, pprof_bytes(), "out");
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
    if (state) {
        VALUE err = rb_errinfo();
        rb_set_errinfo(Qnil);
        VALUE msg = rb_check_funcall(err, rb_intern("message"), 0, 0);
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the profile to %s: %s\n", path,
                RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
    }
}

/* ---- report.rb: collapsed stacks and the text report ---- */

static const char report_rb[] =
#include "report_rb.inc"
    ;

/* The first call defines the Ruby methods (report.rb), then re-dispatches
 * to them; they replace these stubs. */
static VALUE
load_report_rb_and_call(int argc, VALUE *argv, VALUE self, const char *name)
{
    rb_eval_string(report_rb);
    return rb_funcallv_kw(self, rb_intern(name), argc, argv, rb_keyword_given_p());
}

static VALUE
sampler_write_collapsed_m(int argc, VALUE *argv, VALUE self)
{
    return load_report_rb_and_call(argc, argv, self, "write_collapsed");
}

static VALUE
sampler_report_m(int argc, VALUE *argv, VALUE self)
{
    return load_report_rb_and_call(argc, argv, self, "report");
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
