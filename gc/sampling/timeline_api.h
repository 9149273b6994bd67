/*
 * timeline_api.h: the timeline's CSV for the files out= writes (out.c).
 */
#ifndef SAMPLING_TIMELINE_API_H
#define SAMPLING_TIMELINE_API_H

#include "ruby/ruby.h"

/* The timeline as CSV text, and where it goes beside a profile at exit
 * (false: the name is too long) (timeline_api.c). */
VALUE sampling_timeline_csv(void);
bool sampling_timeline_path(const char *profile, char *out, size_t size);

#endif
