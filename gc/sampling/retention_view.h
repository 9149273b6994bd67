/*
 * retention_view.h: the retention view and report rows (profile.c's
 * view: :retention, retention_api.c).
 */
#ifndef SAMPLING_RETENTION_VIEW_H
#define SAMPLING_RETENTION_VIEW_H

#include "ruby/ruby.h"

/* retention_view.c: the retention view's pprof, and the rows of
 * retention_report ([stats, [[path (shown), weight, [class name,
 * "file:line (label)"]], ...]]), each from one walk (at most max_objects
 * walked; SIZE_MAX: the whole heap). */
VALUE sampling_retention_pprof_bytes(size_t max_objects);
VALUE sampling_retention_rows(size_t max_objects);

#endif
