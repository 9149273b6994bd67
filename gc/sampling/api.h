/*
 * api.h: the Ruby API's files to one another, and to sampling.c, which
 * calls sampling_api_init once the collector is up (rb_gc_impl_init).
 */
#ifndef SAMPLING_API_H
#define SAMPLING_API_H

#include "ruby/ruby.h"

/* Defines ObjectSpace::AllocationSampler and starts sampling if
 * RUBY_GC_SAMPLING says so (api.c). */
void sampling_api_init(void);

/* Each reader file defines its methods on the module. */
void sampling_define_sample(VALUE mSampler);    /* sample.c */
void sampling_define_profile(VALUE mSampler);   /* profile.c */
void sampling_define_report(VALUE mSampler);    /* report.c */

/* Writes the profile to RUBY_GC_SAMPLING's out= at exit (profile.c). */
void sampling_write_at_exit(void);

#endif
