/*
 * api.h: what the binding (api.c) calls in the readers to build the
 * module: each reader's sampling_define_* (HACKING.md's "Layers").  A
 * reader's other functions are in its own header (write.h, profile.h,
 * sample.h, ...), so no reader reaches another through this one.  The
 * core (sampling.c and what it includes) never includes it.
 */
#ifndef SAMPLING_API_H
#define SAMPLING_API_H

#include "ruby/ruby.h"
#include "ruby/st.h"

/* Each reader file defines its methods on the module. */
void sampling_define_sample(VALUE mSampler);    /* sample.c */
void sampling_define_profile(VALUE mSampler);   /* profile.c */
void sampling_define_report(VALUE mSampler);    /* report.c */
void sampling_define_labels(VALUE mSampler);    /* labels_api.c */
void sampling_define_delta(VALUE mSampler);     /* delta_api.c */
void sampling_define_timeline(VALUE mSampler);  /* timeline_api.c */
void sampling_define_retention(VALUE mSampler); /* retention_api.c */
void sampling_define_dhat(VALUE mSampler);      /* dhat_api.c */
void sampling_define_threads(VALUE mSampler);   /* threads.c */
void sampling_define_memory_split(VALUE mSampler);  /* memory_split.c */

#endif
