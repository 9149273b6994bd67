/* cstack.c: CStack.hold { ... } makes an Array (of one String) that only
 * a C local holds while it yields: retention must find it from the
 * machine stack.  Built by the tests (helper.rb, build_test_ext). */
#include "ruby/ruby.h"

static VALUE
cstack_hold(VALUE self)
{
    volatile VALUE held = rb_ary_new_from_args(1, rb_str_new_cstr("held only by a C local"));
    VALUE result = rb_yield(Qnil);
    RB_GC_GUARD(held);
    return result;
}

void
Init_cstack(void)
{
    VALUE m = rb_define_module("CStack");
    rb_define_module_function(m, "hold", cstack_hold, 0);
}
