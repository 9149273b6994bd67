/*
 * out.h: RUBY_GC_SAMPLING's out= (out.c): the files' names and their
 * writing, for api.c and periodic.c.
 */
#ifndef SAMPLING_OUT_H
#define SAMPLING_OUT_H

#include "ruby/ruby.h"

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

/* Writes the profile to RUBY_GC_SAMPLING's out= at exit (out.c). */
void sampling_write_at_exit(void);

#endif
