/*
 * api.h: the Ruby API's files to one another, and to sampling.c, which
 * calls sampling_api_init once the collector is up (rb_gc_impl_init).
 */
#ifndef SAMPLING_API_H
#define SAMPLING_API_H

#include "ruby/ruby.h"
#include "ruby/st.h"

struct sampling_names;

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
void sampling_define_retention(VALUE mSampler); /* retention_api.c */

/* sample.c, for other readers: a Sample of the record at index (which
 * the read sees); the retention path stored with it (Qundef: none); its
 * record's index and seq. */
struct read;
VALUE sampling_sample_new(struct read *rd, size_t index);
void sampling_sample_set_path(VALUE sample, VALUE path);
VALUE sampling_sample_path(VALUE sample);
void sampling_sample_record(VALUE sample, uint32_t *index, uint64_t *seq);

/* profile.c, for other profile views: a site's pprof location ids and
 * class name (read_site's conversion: arg is the struct pprof; free with
 * sampling_pprof_free_ids), its label set as pprof labels, and the
 * profile comment every view starts with. */
struct pprof;
struct pprof_label;
struct sampling_site_ids {
    uint64_t klass;
    uint32_t n;
    uint64_t ids[];
};
st_data_t sampling_pprof_site_ids(const struct sampling_names *names, void *pprof);
void sampling_pprof_free_ids(st_data_t ids);
size_t sampling_pprof_set_labels(struct pprof *p, uint32_t id, struct pprof_label *out);
void sampling_pprof_header_comments(struct pprof *p, const char *view);

/* retention_api.c: the retention view's pprof (at most max_objects
 * walked; SIZE_MAX: the whole heap). */
VALUE sampling_retention_pprof_bytes(size_t max_objects);

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
