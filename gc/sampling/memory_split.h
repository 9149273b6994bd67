/*
 * memory_split.h: where the RSS went, as the line every profile's
 * comments carry (profile.c).
 */
#ifndef SAMPLING_MEMORY_SPLIT_H
#define SAMPLING_MEMORY_SPLIT_H

#include "ruby/ruby.h"

/* memory_split.c: the line of it every profile's comments carry (no Ruby
 * call; false when RSS cannot be read). */
bool sampling_memory_split_text(char *buf, size_t len);

#endif
