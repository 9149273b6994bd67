/*
 * api.h: the Ruby API's files to one another (the readers and api.c,
 * above the core: HACKING.md's "Layers").  The core (sampling.c and what
 * it includes) never includes it.
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

/* The timeline as CSV text, and where it goes beside a profile at exit
 * (false: the name is too long) (timeline_api.c). */
VALUE sampling_timeline_csv(void);
bool sampling_timeline_path(const char *profile, char *out, size_t size);
void sampling_define_retention(VALUE mSampler); /* retention_api.c */
void sampling_define_dhat(VALUE mSampler);      /* dhat_api.c */

/* dhat_api.c: the DHAT file (dhat.h) as a String (in use at the end:
 * the samples that survived min_gcs GCs), and whether a path names one
 * (it ends in ".dhat.json": RUBY_GC_SAMPLING's out= then writes DHAT
 * instead of pprof). */
VALUE sampling_dhat_text(uint32_t min_gcs);
bool sampling_dhat_path(const char *path);
void sampling_define_threads(VALUE mSampler);   /* threads.c */
void sampling_define_memory_split(VALUE mSampler);  /* memory_split.c */
/* memory_split.c: the line of it every profile's comments carry (no Ruby
 * call; false when RSS cannot be read). */
bool sampling_memory_split_text(char *buf, size_t len);

/* sample.c, for other readers: a Sample of the record at index (which
 * the read sees); the retention paths found with it (retention_paths.h's
 * kept walk, and its node there; Qundef: none); its record's index and
 * seq. */
struct read;
VALUE sampling_sample_new(struct read *rd, size_t index);
void sampling_sample_set_path(VALUE sample, VALUE paths, uint32_t node);
VALUE sampling_sample_path(VALUE sample, uint32_t *node);
void sampling_sample_record(VALUE sample, uint32_t *index, uint64_t *seq);

/* retention_view.c: the retention view's pprof, and the rows of
 * retention_report ([stats, [[path (shown), weight, [class name,
 * "file:line (label)"]], ...]]), each from one walk (at most max_objects
 * walked; SIZE_MAX: the whole heap). */
VALUE sampling_retention_pprof_bytes(size_t max_objects);
VALUE sampling_retention_rows(size_t max_objects);

/* write.c: a write_* method's destination, a path (String, Pathname)
 * or an IO, checked (ArgumentError naming argname), and bytes written
 * there (returns how many). */
void sampling_check_destination(VALUE dest, const char *argname);
VALUE sampling_write_out(VALUE dest, VALUE bytes, const char *argname);

/* A label set for readers (labels_api.c): a frozen Hash of frozen
 * Strings (empty for 0).  Its pairs, and the counts for stats, are
 * labels_fiber.h's. */
VALUE sampling_labels_hash(uint32_t id);

/* RUBY_GC_SAMPLING's every=: starts the writer of delta files once the
 * VM can run threads, and again in a forked child (periodic.c; called
 * from api.c's rb_gc_impl_set_params and _after_fork). */
void sampling_api_booted(void);
void sampling_periodic_after_fork(void);

/* RUBY_GC_SAMPLING's out= for this process, file seq (out.c): %p,
 * %n expanded, and in a forked child the pid added where %p is missing
 * (config.h); false when it does not fit.  api.c claims out= for the
 * process that read it (sampling_out_claim), before it starts. */
bool sampling_out_path(unsigned long seq, char *path, size_t size);
void sampling_out_claim(void);
/* The process's next file's name (out= numbers every file of a process
 * in one sequence: every='s, the watcher's, the one at exit; with the
 * GVL), and a file written whole (a temporary file renamed over the
 * name; no symlink followed): false with the reason in err.  No Ruby:
 * callable without the GVL (out.c). */
bool sampling_out_next(char *path, size_t size);
bool sampling_out_write(const char *path, const uint8_t *bytes, size_t len, char *err, size_t errlen);

/* start(limit:, grow:, out:, ...): the watcher takes params's settings
 * (periodic.c). */
struct sampling_params;
void sampling_watch_configure(const struct sampling_params *params);

/* A min_gcs: argument (Qundef: 0), or ArgumentError naming it (write.c). */
uint32_t sampling_min_gcs_arg(VALUE v);

/* Writes the profile to RUBY_GC_SAMPLING's out= at exit (out.c). */
void sampling_write_at_exit(void);

#endif
