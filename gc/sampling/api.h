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
void sampling_define_labels(VALUE mSampler);    /* labels_api.c */
void sampling_define_delta(VALUE mSampler);     /* delta.c */
void sampling_define_timeline(VALUE mSampler);  /* timeline_api.c */

/* The timeline as CSV text, and where it goes beside a profile at exit
 * (false: the name is too long) (timeline_api.c). */
VALUE sampling_timeline_csv(void);
bool sampling_timeline_path(const char *profile, char *out, size_t size);

/* Label sets for readers (labels_api.c): a set as a frozen Hash of
 * frozen Strings (empty for 0), its pairs (labels.h; NULL for 0), and
 * the counts for stats. */
struct sampling_label_set;
VALUE sampling_labels_hash(uint32_t id);
const struct sampling_label_set *sampling_labels_set(uint32_t id);
void sampling_labels_stats(uint64_t *count, uint64_t *dropped);

/* RUBY_GC_SAMPLING's every=: starts the writer of delta files once the
 * VM can run threads (delta.c; called from sampling.c's set_params). */
void sampling_api_booted(void);

/* Writes the profile to RUBY_GC_SAMPLING's out= at exit (profile.c). */
void sampling_write_at_exit(void);

#endif
