/*
 * callgrind_probe.c: marks the measured region for callgrind.
 *
 * Run under valgrind --tool=callgrind --collect-atstart=no; then
 * CallgrindProbe.collect { work } counts the instructions of `work` only
 * (and of everything it calls, GCs included), not Ruby's boot and exit.
 * Outside valgrind the client requests are a handful of no-op instructions.
 */
#include "ruby/ruby.h"
#include <valgrind/callgrind.h>

static VALUE
collect_off(VALUE unused)
{
    CALLGRIND_TOGGLE_COLLECT;
    return Qnil;
}

static VALUE
probe_collect(VALUE self)
{
    CALLGRIND_TOGGLE_COLLECT;
    return rb_ensure(rb_yield, Qnil, collect_off, Qnil);
}

static VALUE
probe_running_p(VALUE self)
{
    return RUNNING_ON_VALGRIND ? Qtrue : Qfalse;
}

void
Init_callgrind_probe(void)
{
    VALUE m = rb_define_module("CallgrindProbe");
    rb_define_singleton_method(m, "collect", probe_collect, 0);
    rb_define_singleton_method(m, "valgrind?", probe_running_p, 0);
}
