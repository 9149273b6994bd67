/*
 * api.c: ObjectSpace::AllocationSampler: start, stop, enabled?, clear,
 * stats, RUBY_GC_SAMPLING at boot, and the library's entry points that
 * start it all (rb_gc_impl_init, _set_params, _after_fork: the core's
 * part first).  The readers live below it: sample.c (Sample, samples,
 * each_sample), profile.c (write_pprof, pprof), out.c (out=, the profile
 * at exit), report.c (report, write_collapsed), labels_api.c
 * (with_labels), delta_api.c (Delta), periodic.c (every=, the watcher).
 *
 * Every argument is checked before anything changes: a call that raises
 * ArgumentError (naming the argument and its accepted range) leaves the
 * sampler as it was.  A bad RUBY_GC_SAMPLING prints one warning on stderr
 * and sampling stays off; the program runs.
 */
#include "ruby/ruby.h"

#include "api.h"
#include "dhat_api.h"
#include "out.h"
#include "periodic.h"
#include "config.h"
#include "labels_fiber.h"
#include "read.h"
#include "sampler.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* ---- arguments ---- */

/* An Integer argument in the setting's range, compared without calling a
 * method (a redefined Integer#< must not let a bad value through). */
static uint64_t
arg_setting(VALUE v, enum sampling_setting_id id)
{
    const struct sampling_setting *s = &sampling_settings[id];
    char range[96];
    sampling_setting_range(id, range, sizeof(range));
    if (!RB_INTEGER_TYPE_P(v)) {
        rb_raise(rb_eArgError, "%s must be an Integer %s (got %"PRIsVALUE")", s->name, range, rb_inspect(v));
    }
    bool in_range;
    if (FIXNUM_P(v)) {
        long x = FIX2LONG(v);
        in_range = x >= 0 && (uint64_t)x >= s->min && (uint64_t)x <= s->max;
    }
    else {
        /* a Bignum: below 0, or beyond every bound but UINT64_MAX */
        in_range = FIX2INT(rb_big_cmp(v, INT2FIX(0))) > 0 && FIX2INT(rb_big_cmp(v, ULL2NUM(s->max))) <= 0;
    }
    if (!in_range) rb_raise(rb_eArgError, "%s must be %s (got %"PRIsVALUE")", s->name, range, rb_inspect(v));
    return NUM2ULL(v);
}

/* limit: :auto (the memory cgroup's) or bytes of RSS; nil or false: none. */
static void
arg_limit(VALUE v, struct sampling_params *params)
{
    if (NIL_P(v) || v == Qfalse) {
        params->limit = SAMPLING_LIMIT_NONE;
        return;
    }
    if (v == ID2SYM(rb_intern("auto"))) {
        params->limit = SAMPLING_LIMIT_AUTO;
        return;
    }
    if (!FIXNUM_P(v) || FIX2LONG(v) < (long)SAMPLING_LIMIT_BYTES_MIN || (uint64_t)FIX2LONG(v) > ((uint64_t)1 << 50))
        rb_raise(rb_eArgError, "limit must be :auto, nil or an Integer from %llu to %llu bytes (got %"PRIsVALUE")",
                 (unsigned long long)SAMPLING_LIMIT_BYTES_MIN, (unsigned long long)1 << 50, rb_inspect(v));
    params->limit = SAMPLING_LIMIT_SIZE;
    params->limit_bytes = (uint64_t)FIX2LONG(v);
}

/* limit_at: a fraction of the limit from 0.01 to 1 (Float, Integer or Rational). */
static uint32_t
arg_limit_at(VALUE v)
{
    double x = RB_FLOAT_TYPE_P(v) || RB_INTEGER_TYPE_P(v) || RB_TYPE_P(v, T_RATIONAL) ? NUM2DBL(v) : -1;
    if (!(x >= SAMPLING_LIMIT_AT_MIN / 1e6 && x <= 1.0))
        rb_raise(rb_eArgError, "limit_at must be a number from 0.01 to 1, the fraction of the limit that triggers "
                 "(got %"PRIsVALUE")", rb_inspect(v));
    return (uint32_t)llround(x * 1e6);
}

/* out: where the watcher's files go (%p the pid, %n the file's number),
 * relative to the current directory. */
static void
arg_out(VALUE v, struct sampling_params *params)
{
    VALUE path = RB_TYPE_P(v, T_STRING) || rb_respond_to(v, rb_intern("to_path")) ? rb_get_path(v) : Qnil;
    if (NIL_P(path) || RSTRING_LEN(path) == 0 || RSTRING_LEN(path) >= SAMPLING_OUT_MAX || memchr(RSTRING_PTR(path), 0, RSTRING_LEN(path)))
        rb_raise(rb_eArgError, "out must be a file path (String, Pathname; %%p expands to the pid, %%n to the file's "
                 "number) (got %"PRIsVALUE")", rb_inspect(v));
    path = rb_file_expand_path(path, Qnil);
    if (RSTRING_LEN(path) >= SAMPLING_OUT_MAX)
        rb_raise(rb_eArgError, "out is too long (got %"PRIsVALUE")", rb_inspect(v));
    memcpy(params->out, RSTRING_PTR(path), (size_t)RSTRING_LEN(path));
    params->out[RSTRING_LEN(path)] = '\0';
}

/* start(interval: 524_288, mode: :poisson, depth: 128, seed: nil, max_samples: 100_000, malloc: true,
 *       limit: nil, limit_at: 0.9, grow: nil, max_files: 16, min_gcs: 0, out: nil) */
static VALUE
allocation_sampler_start_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    /* the numeric settings, in table order, then the others */
    enum { MODE = SAMPLING_SETTINGS, MALLOC, LIMIT, LIMIT_AT, OUT, NKEYS };
    static ID keys[NKEYS];
    if (!keys[0]) {
        for (int id = 0; id < SAMPLING_SETTINGS; id++) keys[id] = rb_intern(sampling_settings[id].name);
        keys[MODE] = rb_intern("mode");
        keys[MALLOC] = rb_intern("malloc");
        keys[LIMIT] = rb_intern("limit");
        keys[LIMIT_AT] = rb_intern("limit_at");
        keys[OUT] = rb_intern("out");
    }
    VALUE values[NKEYS];
    for (int i = 0; i < NKEYS; i++) values[i] = Qundef;
    if (!NIL_P(opts)) rb_get_kwargs(opts, keys, 0, NKEYS, values);

    struct sampling_params params;
    sampling_params_default(&params);
    /* the watcher's settings and out= stay as they were (RUBY_GC_SAMPLING's, or the last start's) unless given */
    const struct sampling_params *was = sampler_params();
    params.limit = was->limit;
    params.limit_bytes = was->limit_bytes;
    params.limit_at = was->limit_at ? was->limit_at : SAMPLING_LIMIT_AT_DEFAULT;
    params.grow = was->grow;
    params.max_files = was->max_files ? was->max_files : params.max_files;
    params.min_gcs = was->min_gcs;
    if (values[SAMPLING_SETTING_GROW] != Qundef && NIL_P(values[SAMPLING_SETTING_GROW])) {
        params.grow = 0;
        values[SAMPLING_SETTING_GROW] = Qundef;
    }
    for (int id = 0; id < SAMPLING_SETTINGS; id++) {
        if (values[id] == Qundef || (id == SAMPLING_SETTING_SEED && NIL_P(values[id]))) continue;
        sampling_params_set(&params, (enum sampling_setting_id)id, arg_setting(values[id], (enum sampling_setting_id)id));
    }
    if (values[MODE] != Qundef) {
        VALUE mode = values[MODE], name = SYMBOL_P(mode) ? rb_sym2str(mode) : Qnil;
        if (NIL_P(name) || !sampling_mode_parse(RSTRING_PTR(name), (size_t)RSTRING_LEN(name), &params.mode))
            rb_raise(rb_eArgError, "mode must be :poisson or :fixed (got %"PRIsVALUE")", rb_inspect(mode));
    }

    if (values[MALLOC] != Qundef) {
        VALUE m = values[MALLOC];
        if (m != Qtrue && m != Qfalse) rb_raise(rb_eArgError, "malloc must be true or false (got %"PRIsVALUE")", rb_inspect(m));
        params.malloc = m == Qtrue;
    }

    if (values[LIMIT] != Qundef) arg_limit(values[LIMIT], &params);
    if (values[LIMIT_AT] != Qundef) params.limit_at = arg_limit_at(values[LIMIT_AT]);

    /* keep the out= of a boot-time start: the profile is still written at exit */
    strcpy(params.out, was->out);
    params.every = was->every;
    if (values[OUT] != Qundef) arg_out(values[OUT], &params);
    if ((params.limit || params.grow) && !params.out[0])
        rb_raise(rb_eArgError, "%s needs out:, where its profiles go (e.g. out: \"heap-%%p-%%n.pb.gz\")",
                 params.limit ? "limit" : "grow");
    if ((params.limit || params.grow) && sampling_dhat_path(params.out))
        rb_raise(rb_eArgError, "out must name a pprof file with limit: or grow: (got %s, a DHAT name)", params.out);
    sampler_start(&params);
    sampling_watch_configure(sampler_params());
    return Qtrue;
}

static VALUE
allocation_sampler_stop_m(VALUE self)
{
    return sampler_stop() ? Qtrue : Qfalse;
}

static VALUE
allocation_sampler_enabled_m(VALUE self)
{
    return sampler_enabled() ? Qtrue : Qfalse;
}

static VALUE
allocation_sampler_clear_m(VALUE self)
{
    sampler_clear();
    return Qnil;
}

static VALUE
mode_symbol(enum sampling_mode mode)
{
    return ID2SYM(rb_intern(sampling_mode_name(mode)));
}

#define SYM(name) ID2SYM(rb_intern(name))

/* What stats reads: the sampler's counters, the label sets' and the
 * profiler's memory. */
struct stats_read {
    struct sampler_stats s;
    uint64_t label_sets, label_sets_dropped;
    size_t profiler_bytes;
    size_t parts[SAMPLER_MEMORY_PARTS];
};

enum stat_kind {
    STAT_BOOL, STAT_U32, STAT_U64, STAT_SIZE, STAT_MODE,
    STAT_ROUNDED,       /* a double estimate, rounded to an Integer */
    STAT_PEAK_U64,      /* nil before the first peak */
    STAT_PEAK_ROUNDED,
    STAT_MEMORY,        /* {records:, sites:, ...}: the parts */
    STAT_HEAPS,         /* [{slot_size:, allocated_bytes:, samples:, points:}, ...] */
};

/* The stats Hash, key by key in docs/reference.md's order (its stats
 * table; test_stats_keys holds the two together): a new key is a field
 * (sampler.h's struct sampler_stats) and a row here. */
#define STAT(name, field, kind) { name, offsetof(struct stats_read, field), kind }
static const struct stat_key {
    const char *name;
    size_t offset;
    enum stat_kind kind;
} stat_keys[] = {
    STAT("enabled", s.enabled, STAT_BOOL),
    STAT("interval", s.interval, STAT_U64),
    STAT("mode", s.mode, STAT_MODE),
    STAT("depth", s.depth, STAT_U32),
    STAT("max_samples", s.max_samples, STAT_SIZE),
    STAT("malloc", s.malloc, STAT_BOOL),
    STAT("samples", s.samples, STAT_U64),
    STAT("records", s.records, STAT_U64),
    STAT("live", s.live, STAT_U64),
    STAT("dropped", s.dropped, STAT_U64),
    STAT("reader_samples", s.reader_samples, STAT_U64),
    STAT("merged", s.merged, STAT_U64),
    STAT("carried", s.carried, STAT_U64),
    STAT("evicted", s.evicted, STAT_U64),
    STAT("lost_frees", s.lost_frees, STAT_U64),
    STAT("sites", s.sites, STAT_U64),
    STAT("folded", s.folded, STAT_U64),
    STAT("named", s.named, STAT_U64),
    STAT("allocated_bytes", s.allocated_bytes, STAT_U64),
    STAT("malloc_allocated_bytes", s.malloc_allocated_bytes, STAT_U64),
    STAT("malloc_samples", s.malloc_samples, STAT_U64),
    STAT("malloc_points", s.malloc_points, STAT_U64),
    STAT("live_slot_bytes", s.live_space[SAMPLING_LIVE_SLOT], STAT_ROUNDED),
    STAT("live_malloc_bytes", s.live_space[SAMPLING_LIVE_MALLOC], STAT_ROUNDED),
    STAT("total_allocated_bytes", s.total_allocated_bytes, STAT_U64),
    STAT("peak_live_bytes", s.peak_live, STAT_PEAK_ROUNDED),
    STAT("peak_gc", s.peak_gc, STAT_PEAK_U64),
    STAT("peak_lost", s.peak_lost, STAT_U64),
    STAT("timeline_rows", s.timeline_rows, STAT_U64),
    STAT("label_sets", label_sets, STAT_U64),
    STAT("label_sets_dropped", label_sets_dropped, STAT_U64),
    STAT("profiler_bytes", profiler_bytes, STAT_SIZE),
    STAT("profiler_memory", parts, STAT_MEMORY),
    STAT("heaps", s.per_heap, STAT_HEAPS),
};
#undef STAT

static VALUE
heaps_array(const struct sampler_stats *s)
{
    VALUE heaps = rb_ary_new_capa((long)s->nheaps);
    for (size_t i = 0; i < s->nheaps; i++) {
        VALUE hh = rb_hash_new();
        rb_hash_aset(hh, SYM("slot_size"), SIZET2NUM(s->per_heap[i].slot_size));
        rb_hash_aset(hh, SYM("allocated_bytes"), ULL2NUM(s->per_heap[i].allocated_bytes));
        rb_hash_aset(hh, SYM("samples"), ULL2NUM(s->per_heap[i].samples));
        rb_hash_aset(hh, SYM("points"), ULL2NUM(s->per_heap[i].points));
        rb_ary_push(heaps, hh);
    }
    return heaps;
}

static VALUE
stat_value(const struct stats_read *r, const struct stat_key *k)
{
    const void *p = (const char *)r + k->offset;
    switch (k->kind) {
      case STAT_BOOL: return *(const bool *)p ? Qtrue : Qfalse;
      case STAT_U32: return UINT2NUM(*(const uint32_t *)p);
      case STAT_U64: return ULL2NUM(*(const uint64_t *)p);
      case STAT_SIZE: return SIZET2NUM(*(const size_t *)p);
      case STAT_MODE: return mode_symbol(*(const enum sampling_mode *)p);
      case STAT_ROUNDED: return LL2NUM(llround(*(const double *)p));
      case STAT_PEAK_U64: return r->s.peak ? ULL2NUM(*(const uint64_t *)p) : Qnil;
      case STAT_PEAK_ROUNDED: return r->s.peak ? LL2NUM(llround(*(const double *)p)) : Qnil;
      case STAT_MEMORY: {
        VALUE memory = rb_hash_new();
        for (int i = 0; i < SAMPLER_MEMORY_PARTS; i++) rb_hash_aset(memory, SYM(sampler_memory_names[i]), SIZET2NUM(r->parts[i]));
        return memory;
      }
      case STAT_HEAPS: return heaps_array(&r->s);
    }
    return Qnil;
}

static VALUE
allocation_sampler_stats_m(VALUE self)
{
    struct stats_read r;
    sampler_get_stats(&r.s);
    sampling_labels_stats(&r.label_sets, &r.label_sets_dropped);
    r.profiler_bytes = sampler_memory(r.parts);
    VALUE h = rb_hash_new();
    for (size_t i = 0; i < sizeof(stat_keys) / sizeof(stat_keys[0]); i++)
        rb_hash_aset(h, SYM(stat_keys[i].name), stat_value(&r, &stat_keys[i]));
    return h;
}

READER_METHOD0(allocation_sampler_stats_m)

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
    sampling_out_claim();
    sampler_start(&params);
    /* with every=, delta files instead (periodic.c, once threads can run) */
    if (params.out[0] && !params.every) sampling_write_at_exit();
}

static void
api_init(void)
{
    VALUE mObjectSpace = rb_const_get(rb_cObject, rb_intern("ObjectSpace"));
    VALUE mSampler = rb_define_module_under(mObjectSpace, "AllocationSampler");
    rb_define_singleton_method(mSampler, "start", allocation_sampler_start_m, -1);
    rb_define_singleton_method(mSampler, "stop", allocation_sampler_stop_m, 0);
    rb_define_singleton_method(mSampler, "enabled?", allocation_sampler_enabled_m, 0);
    rb_define_singleton_method(mSampler, "clear", allocation_sampler_clear_m, 0);
    rb_define_singleton_method(mSampler, "stats", allocation_sampler_stats_m_reader, 0);
    sampling_define_sample(mSampler);
    sampling_define_profile(mSampler);
    sampling_define_report(mSampler);
    sampling_define_labels(mSampler);
    sampling_define_delta(mSampler);
    sampling_define_timeline(mSampler);
    sampling_define_retention(mSampler);
    sampling_define_dhat(mSampler);
    sampling_define_threads(mSampler);
    sampling_define_memory_split(mSampler);

    start_from_environment();
}

/* ---- the library's entry points ---- */

/* gc.c finds these by name in the library (gc/gc_impl.h declares them,
 * for default.c).  Each runs the collector's part first (sampler.h),
 * then the API's: the core calls nothing up here. */
void rb_gc_impl_init(void);
void rb_gc_impl_set_params(void *objspace_ptr);
void rb_gc_impl_after_fork(void *objspace_ptr, rb_pid_t pid);

/* Once the collector is up: the module, and RUBY_GC_SAMPLING's start. */
void
rb_gc_impl_init(void)
{
    sampler_gc_init();
    api_init();
}

/* Called once the VM can run threads (ruby_gc_set_params, from
 * process_options): RUBY_GC_SAMPLING's every= starts its writer here. */
void
rb_gc_impl_set_params(void *objspace_ptr)
{
    sampler_gc_set_params(objspace_ptr);
    sampling_periodic_boot();
}

void
rb_gc_impl_after_fork(void *objspace_ptr, rb_pid_t pid)
{
    sampler_gc_after_fork(objspace_ptr, pid);
    /* fork, Process.fork, IO.popen("-") and Process.daemon all come
     * here: every= gets a writer in the child (periodic.c) */
    if (pid == 0) sampling_periodic_after_fork();
}
