/*
 * newobj_sampler.c: the peer design.  An allocation sampler built on the
 * internal NEWOBJ tracepoint, as dd-trace-rb, stackprof (mode: :object)
 * and vernier do it.  Only here to be measured against the sampling GC.
 *
 * Model.  Every allocation calls the hook (that is the cost this design
 * cannot avoid: the VM builds a trace argument and calls out for each new
 * object).  The hook charges the object's slot bytes to a countdown drawn
 * from an exponential distribution with mean `interval` bytes (or a fixed
 * gap), the same process as the sampling GC's :poisson / :fixed modes, so
 * both take samples at the same mean rate.  When the countdown crosses
 * zero the hook records the stack with rb_profile_frames (frames and line
 * numbers, as stackprof does) into a malloc'd buffer, and remembers each
 * distinct frame in a set that is marked on every GC (the profile must
 * keep the iseqs it refers to alive).  At most max_samples stacks are kept;
 * later ones are counted but not stored.
 *
 * The hook runs inside newobj: it allocates no Ruby object and uses plain
 * malloc (never xmalloc, which may start a GC).
 *
 *   NewobjSampler.start(interval: 524288, mode: :poisson, depth: 128,
 *                       max_samples: 100_000, seed: 1, size: :slot)
 *   NewobjSampler.stop          # => true if it was running
 *   NewobjSampler.stats         # => {samples:, stored:, allocated_bytes:, frames:}
 *
 * size: :slot charges rb_gc_obj_slot_size(obj); size: :fixed charges 40
 * bytes an object (what a profiler without access to slot sizes can do).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ruby/ruby.h"
#include "ruby/debug.h"

#ifdef HAVE_RB_GC_OBJ_SLOT_SIZE
size_t rb_gc_obj_slot_size(VALUE obj); /* gc.c, exported, not in a public header */
#endif

static struct {
    VALUE tracepoint;
    int running;
    int fixed_mode;
    int fixed_size;
    int depth;
    double interval;
    int64_t countdown;
    uint64_t rng;
    uint64_t samples;
    uint64_t allocated_bytes;
    /* stored stacks: [n, frame..., ] for frames, [line...] for lines */
    VALUE *frames; int *lines; size_t used, cap;
    size_t stored, max_samples;
    VALUE *scratch; int *scratch_lines;
    /* distinct frames, marked on every GC (open addressing, 0 = empty) */
    VALUE *set; size_t set_cap, set_count;
} s;

static uint64_t
rng_next(void)
{
    /* xorshift64* */
    s.rng ^= s.rng >> 12; s.rng ^= s.rng << 25; s.rng ^= s.rng >> 27;
    return s.rng * UINT64_C(2685821657736338717);
}

static int64_t
next_gap(void)
{
    if (s.fixed_mode) return (int64_t)s.interval;
    /* exponential with mean interval: -ln(U) * interval, U in (0,1] */
    double u = ((double)(rng_next() >> 11) + 1.0) / 9007199254740992.0;
    double g = -log(u) * s.interval;
    return g < 1.0 ? 1 : (int64_t)g;
}

static int
set_add(VALUE v)
{
    if ((s.set_count + 1) * 2 > s.set_cap) {
        size_t ncap = s.set_cap ? s.set_cap * 2 : 1024;
        VALUE *n = calloc(ncap, sizeof(VALUE));
        if (!n) return 0;
        for (size_t i = 0; i < s.set_cap; i++) {
            VALUE k = s.set[i];
            if (!k) continue;
            size_t h = (size_t)((k >> 3) * UINT64_C(0x9e3779b97f4a7c15)) & (ncap - 1);
            while (n[h]) h = (h + 1) & (ncap - 1);
            n[h] = k;
        }
        free(s.set);
        s.set = n; s.set_cap = ncap;
    }
    size_t h = (size_t)((v >> 3) * UINT64_C(0x9e3779b97f4a7c15)) & (s.set_cap - 1);
    while (s.set[h]) {
        if (s.set[h] == v) return 1;
        h = (h + 1) & (s.set_cap - 1);
    }
    s.set[h] = v; s.set_count++;
    return 1;
}

static void
record_sample(void)
{
    int n = rb_profile_frames(0, s.depth, s.scratch, s.scratch_lines);
    s.samples++;
    if (s.stored >= s.max_samples) return;
    if (s.used + (size_t)n + 1 > s.cap) {
        size_t ncap = s.cap ? s.cap * 2 : 65536;
        while (ncap < s.used + (size_t)n + 1) ncap *= 2;
        VALUE *f = realloc(s.frames, ncap * sizeof(VALUE));
        if (!f) return;
        s.frames = f;
        int *l = realloc(s.lines, ncap * sizeof(int));
        if (!l) return;
        s.lines = l; s.cap = ncap;
    }
    s.frames[s.used] = (VALUE)n; s.lines[s.used] = n; s.used++;
    for (int i = 0; i < n; i++) {
        s.frames[s.used] = s.scratch[i];
        s.lines[s.used] = s.scratch_lines[i];
        s.used++;
        set_add(s.scratch[i]);
    }
    s.stored++;
}

static void
newobj_hook(VALUE tpval, void *data)
{
    rb_trace_arg_t *targ = rb_tracearg_from_tracepoint(tpval);
    VALUE obj = rb_tracearg_object(targ);
    size_t size = 40;
#ifdef HAVE_RB_GC_OBJ_SLOT_SIZE
    if (!s.fixed_size) size = rb_gc_obj_slot_size(obj);
#else
    (void)obj;
#endif
    s.allocated_bytes += size;
    s.countdown -= (int64_t)size;
    if (s.countdown <= 0) {
        record_sample();
        do s.countdown += next_gap(); while (s.countdown <= 0);
    }
}

static void
holder_mark(void *p)
{
    for (size_t i = 0; i < s.set_cap; i++) if (s.set[i]) rb_gc_mark(s.set[i]);
}

static const rb_data_type_t holder_type = {
    "NewobjSampler::Holder", { holder_mark, NULL, NULL, }, 0, 0, RUBY_TYPED_FREE_IMMEDIATELY
};

static VALUE
opt(VALUE h, const char *name, VALUE def)
{
    if (NIL_P(h)) return def;
    VALUE v = rb_hash_lookup2(h, ID2SYM(rb_intern(name)), Qundef);
    return v == Qundef ? def : v;
}

static VALUE
sampler_start(int argc, VALUE *argv, VALUE self)
{
    VALUE h = Qnil;
    rb_scan_args(argc, argv, ":", &h);
    if (s.running) return Qfalse;
    s.interval = NUM2DBL(opt(h, "interval", INT2FIX(524288)));
    if (s.interval < 1) rb_raise(rb_eArgError, "interval must be >= 1");
    s.fixed_mode = opt(h, "mode", ID2SYM(rb_intern("poisson"))) == ID2SYM(rb_intern("fixed"));
    s.fixed_size = opt(h, "size", ID2SYM(rb_intern("slot"))) == ID2SYM(rb_intern("fixed"));
    s.depth = NUM2INT(opt(h, "depth", INT2FIX(128)));
    if (s.depth < 1) rb_raise(rb_eArgError, "depth must be >= 1");
    s.max_samples = NUM2SIZET(opt(h, "max_samples", INT2FIX(100000)));
    s.rng = NUM2ULL(opt(h, "seed", INT2FIX(1))) * UINT64_C(0x9e3779b97f4a7c15) | 1;
    free(s.scratch); free(s.scratch_lines);
    s.scratch = malloc(sizeof(VALUE) * s.depth);
    s.scratch_lines = malloc(sizeof(int) * s.depth);
    s.countdown = next_gap();
    if (!s.tracepoint) {
        s.tracepoint = rb_tracepoint_new(0, RUBY_INTERNAL_EVENT_NEWOBJ, newobj_hook, NULL);
        rb_gc_register_mark_object(s.tracepoint);
    }
    rb_tracepoint_enable(s.tracepoint);
    s.running = 1;
    return Qtrue;
}

static VALUE
sampler_stop(VALUE self)
{
    if (!s.running) return Qfalse;
    rb_tracepoint_disable(s.tracepoint);
    s.running = 0;
    return Qtrue;
}

static VALUE
sampler_stats(VALUE self)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, ID2SYM(rb_intern("samples")), ULL2NUM(s.samples));
    rb_hash_aset(h, ID2SYM(rb_intern("stored")), SIZET2NUM(s.stored));
    rb_hash_aset(h, ID2SYM(rb_intern("allocated_bytes")), ULL2NUM(s.allocated_bytes));
    rb_hash_aset(h, ID2SYM(rb_intern("frames")), SIZET2NUM(s.set_count));
    return h;
}

void
Init_newobj_sampler(void)
{
    VALUE m = rb_define_module("NewobjSampler");
    rb_define_singleton_method(m, "start", sampler_start, -1);
    rb_define_singleton_method(m, "stop", sampler_stop, 0);
    rb_define_singleton_method(m, "stats", sampler_stats, 0);
    VALUE holder = TypedData_Wrap_Struct(rb_cObject, &holder_type, NULL);
    rb_gc_register_mark_object(holder);
}
