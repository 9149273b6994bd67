/*
 * write.c: where write_pprof, write_dhat, write_timeline,
 * Delta#write_pprof and out= at exit write: a path or an IO.  The
 * methods check the destination (and min_gcs:, which the in-use views
 * share) before they read anything, so a bad one raises ArgumentError
 * naming the argument and changes nothing.
 */
#include "ruby/ruby.h"

#include "write.h"
#include "read.h"

/* Writes bytes to path_or_io: an IO (anything with #write, even one that
 * also has #to_path, as every File does) is written through at its
 * position; a String or Pathname names a file, written with File.binwrite
 * (which opens and writes without the GVL and can be interrupted: a FIFO
 * with no reader blocks only this thread). */
VALUE
sampling_write_out(VALUE dest, VALUE bytes, const char *argname)
{
    if (!RB_TYPE_P(dest, T_STRING) && rb_respond_to(dest, rb_intern("write"))) {
        /* (the IO's write is the program's code: its allocations are recorded) */
        read_program_send(dest, rb_intern("write"), 1, &bytes);
    }
    else if (RB_TYPE_P(dest, T_STRING) || rb_respond_to(dest, rb_intern("to_path"))) {
        rb_funcall(rb_cFile, rb_intern("binwrite"), 2, rb_get_path(dest), bytes);
    }
    else {
        rb_raise(rb_eArgError, "%s must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", argname, rb_inspect(dest));
    }
    return LONG2NUM(RSTRING_LEN(bytes));
}

void
sampling_check_destination(VALUE dest, const char *argname)
{
    if (!RB_TYPE_P(dest, T_STRING) && !rb_respond_to(dest, rb_intern("to_path")) && !rb_respond_to(dest, rb_intern("write")))
        rb_raise(rb_eArgError, "%s must be a path (String, Pathname) or an IO (got %"PRIsVALUE")", argname, rb_inspect(dest));
}

uint32_t
sampling_min_gcs_arg(VALUE v)
{
    if (v == Qundef) return 0;
    if (!FIXNUM_P(v) || FIX2LONG(v) < 0 || (unsigned long)FIX2LONG(v) > UINT32_MAX)
        rb_raise(rb_eArgError, "min_gcs must be an Integer from 0 to %u (got %"PRIsVALUE")", UINT32_MAX, rb_inspect(v));
    return (uint32_t)FIX2LONG(v);
}
