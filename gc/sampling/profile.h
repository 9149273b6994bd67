/*
 * profile.h: the pprof profile (profile.c) for the destinations
 * (out.c, periodic.c) and the Delta class (delta_api.c); delta.h has
 * the baseline it reads against.
 */
#ifndef SAMPLING_PROFILE_H
#define SAMPLING_PROFILE_H

#include "ruby/ruby.h"

struct sampling_delta;

/* profile.c: the profile, with alloc_* since the delta's last read (NULL:
 * since start); sampling_pprof_bytes's in-use values follow
 * RUBY_GC_SAMPLING's min_gcs=, a Delta's its min_gcs: (Qundef: 0). */
VALUE sampling_pprof_bytes(struct sampling_delta *delta);
VALUE sampling_pprof_delta_bytes(struct sampling_delta *delta, VALUE view, VALUE min_gcs);
/* The allocations view in malloc'd bytes (the caller frees them), for a
 * writer that holds no Ruby object (periodic.c); with why (a comment),
 * the watcher's in-use profile (inuse_space shown first; docs/oom.md). */
void sampling_pprof_malloced(struct sampling_delta *delta, const char *why, uint8_t **bytes, size_t *len);

#endif
