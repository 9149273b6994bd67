/*
 * sample.h: Samples for the other readers (retention_api.c).
 */
#ifndef SAMPLING_SAMPLE_H
#define SAMPLING_SAMPLE_H

#include "ruby/ruby.h"

/* sample.c, for other readers: a Sample of the record at index (which
 * the read sees); the retention paths found with it (retention_paths.h's
 * kept walk, and its node there; Qundef: none); its record's index and
 * seq. */
struct read_state;
VALUE sampling_sample_new(struct read_state *rd, size_t index);
void sampling_sample_set_path(VALUE sample, VALUE paths, uint32_t node);
VALUE sampling_sample_path(VALUE sample, uint32_t *node);
void sampling_sample_record(VALUE sample, uint32_t *index, uint64_t *seq);

#endif
