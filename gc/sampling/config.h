/*
 * config.h: the sampler's settings, their ranges, and the parser of
 * RUBY_GC_SAMPLING ("interval=512k,mode=poisson,depth=128,out=alloc-%p.pb.gz").
 *
 * The same ranges serve the Ruby API (ArgumentError) and the environment
 * (one warning, sampling stays off).  Pure C, no Ruby.
 */
#ifndef SAMPLING_CONFIG_H
#define SAMPLING_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gap.h"

#define SAMPLING_INTERVAL_DEFAULT   524288
#define SAMPLING_INTERVAL_MIN       1
#define SAMPLING_INTERVAL_MAX       ((uint64_t)1 << 50)   /* 1 PiB: far beyond any heap */
#define SAMPLING_DEPTH_DEFAULT      128
#define SAMPLING_DEPTH_MIN          1
#define SAMPLING_DEPTH_MAX          4096
#define SAMPLING_MAX_SAMPLES_DEFAULT 100000
#define SAMPLING_MAX_SAMPLES_MIN    1
#define SAMPLING_MAX_SAMPLES_MAX    100000000
#define SAMPLING_OUT_MAX            4096

struct sampling_params {
    enum sampling_mode mode;
    uint64_t interval;
    uint32_t depth;
    size_t max_samples;
    bool has_seed;
    uint64_t seed;
    char out[SAMPLING_OUT_MAX];  /* "" when not given; %p not yet expanded */
};

void sampling_params_default(struct sampling_params *params);

/* Parses RUBY_GC_SAMPLING into params (defaults first).  Returns true, or
 * false with a one-line reason in err. */
bool sampling_params_parse(const char *text, struct sampling_params *params, char *err, size_t errlen);

/* Parses an unsigned integer of len bytes, with an optional k/m/g suffix
 * (powers of 1024) when suffixes is true; false on anything else or overflow. */
bool sampling_parse_size(const char *text, size_t len, bool suffixes, uint64_t *out);

/* Expands %p (pid) and %% in an output path template into out; false when
 * it does not fit. */
bool sampling_expand_path(const char *template_, long pid, char *out, size_t outlen);

#endif
