/*
 * write.h: where the write_* methods and out= write (write.c): a
 * destination checked, bytes written there, a min_gcs: argument.
 */
#ifndef SAMPLING_WRITE_H
#define SAMPLING_WRITE_H

#include "ruby/ruby.h"

/* write.c: a write_* method's destination, a path (String, Pathname)
 * or an IO, checked (ArgumentError naming argname), and bytes written
 * there (returns how many). */
void sampling_check_destination(VALUE dest, const char *argname);
VALUE sampling_write_out(VALUE dest, VALUE bytes, const char *argname);

/* A min_gcs: argument (Qundef: 0), or ArgumentError naming it (write.c). */
uint32_t sampling_min_gcs_arg(VALUE v);

#endif
