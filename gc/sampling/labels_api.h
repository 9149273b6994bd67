/*
 * labels_api.h: label sets as Hashes, for readers (sample.c, report.c).
 */
#ifndef SAMPLING_LABELS_API_H
#define SAMPLING_LABELS_API_H

#include "ruby/ruby.h"

/* A label set for readers (labels_api.c): a frozen Hash of frozen
 * Strings (empty for 0).  Its pairs, and the counts for stats, are
 * labels_fiber.h's. */
VALUE sampling_labels_hash(uint32_t id);

#endif
