/*
 * delta.c: ObjectSpace::AllocationSampler::Delta (delta.h has the model),
 * and RUBY_GC_SAMPLING's every=: delta files written by a thread.
 *
 *   d = ObjectSpace::AllocationSampler::Delta.new   # since now (since: :start: since start)
 *   d.pprof              # => String: alloc_* since the last read, inuse_* now
 *   d.write_pprof(path_or_io)
 *   d.mark               # the next read counts from here
 *
 * every=N,out=...%n...: a Ruby thread ("allocation_sampler") writes a
 * delta file every N seconds, numbered 1, 2, ... (%n); an end proc writes
 * the last one, so an exit (a SIGTERM too) loses nothing.  A mutex keeps
 * the thread's write and the last one apart, in order.  A forked child
 * (Process._fork, which fork, Process.fork and IO.popen("-") call) gets a
 * writer of its own, numbering its files (%p: its pid) from 1 and
 * counting from the fork, as its totals do.
 */
#include "ruby/ruby.h"

#include "api.h"
#include "config.h"
#include "delta.h"
#include "sampler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the baseline ---- */

struct totals {
    double space, objects;
};

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
        d->other_space = d->other_objects = 0;
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
    struct totals *now = malloc(sizeof(*now));
    if (!now) rb_memerror();
    *now = (struct totals){ sv->alloc_space, sv->alloc_objects };
    st_insert(d->next, (st_data_t)site->id, (st_data_t)now);
    if (d->base && st_lookup(d->base, (st_data_t)site->id, &found)) {
        const struct totals *then = (const struct totals *)found;
        sv->alloc_space -= then->space;
        sv->alloc_objects -= then->objects;
    }
}

struct missing {
    st_table *next;
    struct totals sum;
};

static int
missing_i(st_data_t key, st_data_t value, st_data_t arg)
{
    struct missing *m = (struct missing *)arg;
    if (!st_lookup(m->next, key, NULL)) {
        m->sum.space += ((const struct totals *)value)->space;
        m->sum.objects += ((const struct totals *)value)->objects;
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
    double space = sv->alloc_space, objects = sv->alloc_objects;
    sv->alloc_space = space - d->other_space - m.sum.space;
    sv->alloc_objects = objects - d->other_objects - m.sum.objects;
    d->other_space = space;
    d->other_objects = objects;
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
    return sizeof(*d) + (d->base ? st_memsize(d->base) + d->base->num_entries * sizeof(struct totals) : 0);
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
    read_begin(&m->read);
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
mark_ensure(VALUE arg)
{
    struct mark *m = (struct mark *)arg;
    read_end(&m->read, NULL);
    sampling_delta_end(m->d);
    read_inuse_free(m->inuse);
    return Qnil;
}

static void
delta_mark(struct sampling_delta *d)
{
    struct mark m = { READ_INIT, st_init_numtable(), d };
    rb_ensure(mark_body, (VALUE)&m, mark_ensure, (VALUE)&m);
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

static VALUE
delta_pprof_m(VALUE self)
{
    return sampling_pprof_bytes(rb_check_typeddata(self, &delta_type));
}

static VALUE
delta_write_pprof_m(VALUE self, VALUE dest)
{
    sampling_check_destination(dest, "path_or_io");
    return sampling_write_out(dest, delta_pprof_m(self), "path_or_io");
}

/* ---- every=: delta files ---- */

static struct {
    VALUE delta, mutex, thread;
    unsigned long seq;
    bool done;              /* the last file is written: no more */
} periodic;

/* Writes the next delta file; under periodic.mutex.  Never raises: a
 * failed write is one warning (its delta is lost, the next goes on). */
static VALUE
periodic_write_body(VALUE path)
{
    return sampling_write_out(path, delta_pprof_m(periodic.delta), "out");
}

static VALUE
periodic_write_locked(VALUE last)
{
    if (periodic.done) return Qnil;
    if (RTEST(last)) periodic.done = true;
    const struct sampling_params *params = sampler_params();
    char path[SAMPLING_OUT_MAX + 64];
    if (!sampling_expand_path(params->out, (long)getpid(), ++periodic.seq, path, sizeof(path))) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: out=%s is too long; no delta written\n", params->out);
        return Qnil;
    }
    int state = 0;
    rb_protect(periodic_write_body, rb_str_new_cstr(path), &state);
    if (state) {
        VALUE err = rb_errinfo();
        if (rb_obj_is_kind_of(err, rb_eSignal) || rb_obj_is_kind_of(err, rb_eSystemExit)) rb_jump_tag(state);
        rb_set_errinfo(Qnil);
        VALUE msg = rb_check_funcall(err, rb_intern("message"), 0, 0);
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: could not write the delta to %s: %s\n", path,
                RB_TYPE_P(msg, T_STRING) ? StringValueCStr(msg) : "error");
    }
    return Qnil;
}

static VALUE
periodic_thread(void *unused)
{
    const struct sampling_params *params = sampler_params();
    struct timeval every = { (time_t)params->every, 0 };
    while (!periodic.done) {
        rb_thread_wait_for(every);
        rb_mutex_synchronize(periodic.mutex, periodic_write_locked, Qfalse);
    }
    return Qnil;
}

/* The last delta, at exit: after the thread's write in progress, if any. */
static void
periodic_at_exit(VALUE unused)
{
    if (RTEST(rb_funcall(periodic.mutex, rb_intern("owned?"), 0))) periodic_write_locked(Qtrue);   /* exit from inside a write */
    else rb_mutex_synchronize(periodic.mutex, periodic_write_locked, Qtrue);
}

static void
periodic_start(void)
{
    periodic.seq = 0;
    periodic.done = false;
    periodic.mutex = rb_mutex_new();   /* (the parent's may be held by its writer, gone here) */
    periodic.thread = rb_thread_create(periodic_thread, NULL);
    rb_funcall(periodic.thread, rb_intern("name="), 1, rb_str_new_cstr("allocation_sampler"));
}

/* Process._fork, prepended: the child starts its own writer */
static VALUE
periodic_fork(VALUE self)
{
    VALUE pid = rb_call_super(0, NULL);
    if (pid == INT2FIX(0) && sampler_enabled()) periodic_start();
    return pid;
}

void
sampling_api_booted(void)
{
    const struct sampling_params *params = sampler_params();
    if (!params->every || !params->out[0] || !sampler_enabled()) return;
    rb_gc_register_address(&periodic.delta);
    rb_gc_register_address(&periodic.mutex);
    rb_gc_register_address(&periodic.thread);
    periodic.delta = delta_alloc(cDelta);    /* since start: the first file has every sample from boot */
    rb_set_end_proc(periodic_at_exit, Qnil);
    VALUE fork_hook = rb_module_new();
    rb_define_method(fork_hook, "_fork", periodic_fork, 0);
    rb_prepend_module(rb_singleton_class(rb_mProcess), fork_hook);
    periodic_start();
}

void
sampling_define_delta(VALUE mSampler)
{
    cDelta = rb_define_class_under(mSampler, "Delta", rb_cObject);
    rb_define_alloc_func(cDelta, delta_alloc);
    rb_define_method(cDelta, "initialize", delta_initialize, -1);
    rb_define_method(cDelta, "mark", delta_mark_m, 0);
    rb_define_method(cDelta, "pprof", delta_pprof_m, 0);
    rb_define_method(cDelta, "write_pprof", delta_write_pprof_m, 1);
}
