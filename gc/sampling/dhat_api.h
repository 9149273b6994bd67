/*
 * dhat_api.h: the DHAT file for out= (out.c), and whether a name is one
 * (out.c; api.c, whose start refuses one with limit: or grow:).
 */
#ifndef SAMPLING_DHAT_API_H
#define SAMPLING_DHAT_API_H

#include "ruby/ruby.h"

/* dhat_api.c: the DHAT file (dhat.h) as a String (in use at the end:
 * the samples that survived min_gcs GCs), and whether a path names one
 * (it ends in ".dhat.json": RUBY_GC_SAMPLING's out= then writes DHAT
 * instead of pprof). */
VALUE sampling_dhat_text(uint32_t min_gcs);
bool sampling_dhat_path(const char *path);

#endif
