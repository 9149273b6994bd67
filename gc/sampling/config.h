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

#define SAMPLING_OUT_MAX            4096
/* Whether malloc'd bytes are sampled unless told (start's malloc:,
 * RUBY_GC_SAMPLING's malloc=).  On: its cost targets against `default`
 * are met (benchmark/results/malloc.md), and the heap is mostly buffers. */
#define SAMPLING_MALLOC_DEFAULT     true

enum sampling_limit {
    SAMPLING_LIMIT_NONE,
    SAMPLING_LIMIT_AUTO,        /* the memory cgroup's limit (v1 or v2; memlimit.h) */
    SAMPLING_LIMIT_SIZE,        /* limit_bytes, against the process's RSS */
};

struct sampling_params {
    enum sampling_mode mode;
    uint64_t interval;
    uint32_t depth;
    size_t max_samples;
    bool malloc;                 /* sample malloc'd bytes too (malloc.c) */
    bool has_seed;
    uint64_t seed;
    char out[SAMPLING_OUT_MAX];  /* "" when not given; %p, %n not yet expanded; a name ending in .dhat.json: DHAT (dhat.h), else pprof */
    uint32_t every;             /* seconds between delta files (out= names them, with %n); 0: one profile at exit */
    /* Before the limit (docs/oom.md): the watcher (periodic.h) writes the
     * in-use profile to out= when memory crosses limit_at x the limit,
     * and at each new high of the live estimate by grow bytes; at most
     * max_files files in all. */
    enum sampling_limit limit;  /* none, the cgroup's (auto) or limit_bytes of RSS */
    uint64_t limit_bytes;       /* SAMPLING_LIMIT_SIZE: the RSS that is the limit */
    uint32_t limit_at;          /* the fraction of the limit that triggers, in millionths (900000: 0.9) */
    uint64_t grow;              /* bytes; 0: no file on growth */
    uint32_t max_files;         /* files the watcher writes at most */
    uint32_t min_gcs;           /* out='s files count in use only samples that survived this many GCs */
};

#define SAMPLING_EVERY_MAX  86400   /* seconds */
#define SAMPLING_LIMIT_AT_DEFAULT 900000    /* limit_at=0.9 */
#define SAMPLING_LIMIT_AT_MIN 10000         /* 0.01 */
#define SAMPLING_LIMIT_AT_ONE 1000000       /* 1.0, the most */
#define SAMPLING_LIMIT_BYTES_MIN 1048576    /* limit=SIZE: at least 1 MiB */

/* The modes' names, the one spelling of RUBY_GC_SAMPLING's mode=,
 * start's mode: (as Symbols), stats[:mode] and the profiles' comments. */
const char *sampling_mode_name(enum sampling_mode mode);
/* The mode named by the len bytes at name (exactly); false for any other. */
bool sampling_mode_parse(const char *name, size_t len, enum sampling_mode *mode);

void sampling_params_default(struct sampling_params *params);

/* The numeric settings, in one table: their names, defaults, ranges and
 * units serve RUBY_GC_SAMPLING's parser, start's argument checks and
 * every message about them. */
enum sampling_setting_id {
    SAMPLING_SETTING_INTERVAL,
    SAMPLING_SETTING_DEPTH,
    SAMPLING_SETTING_MAX_SAMPLES,
    SAMPLING_SETTING_SEED,
    SAMPLING_SETTING_GROW,
    SAMPLING_SETTING_MAX_FILES,
    SAMPLING_SETTING_MIN_GCS,
    SAMPLING_SETTINGS
};

struct sampling_setting {
    const char *name;
    uint64_t def, min, max;
    const char *unit;       /* " bytes", " frames" or "" */
    unsigned suffix_base;   /* RUBY_GC_SAMPLING's k/m/g: powers of 1024 for bytes, of 1000 for counts; 0: none */
};

extern const struct sampling_setting sampling_settings[SAMPLING_SETTINGS];

/* Stores value (already in range) as the setting's value in params. */
void sampling_params_set(struct sampling_params *params, enum sampling_setting_id id, uint64_t value);

/* "from 1 to 1125899906842624 bytes": the range for messages. */
void sampling_setting_range(enum sampling_setting_id id, char *buf, size_t buflen);

/* limit_at's value: a decimal fraction from 0.01 to 1 ("0.9", ".95",
 * "1") of len bytes, in millionths; false for anything else. */
bool sampling_parse_fraction(const char *text, size_t len, uint32_t *millionths);

/* Parses RUBY_GC_SAMPLING into params (defaults first).  Returns true, or
 * false with a one-line reason in err. */
bool sampling_params_parse(const char *text, struct sampling_params *params, char *err, size_t errlen);

/* Parses an unsigned integer of len bytes, with an optional k/m/g suffix
 * (base, base**2, base**3) unless base is 0; false on anything else or
 * overflow. */
bool sampling_parse_size(const char *text, size_t len, unsigned base, uint64_t *out);

/* Expands %p (pid), %n (seq: the delta file's number, 1, 2, ...) and %%
 * in an output path template into out; false when it does not fit.  In a
 * forked child (child: pid is not the process that read the template) a
 * template without %p gets "-PID" before the file name's first dot (at
 * the end if none): "alloc-%n.pb.gz" -> "alloc-1-4242.pb.gz", so that no
 * child overwrites its parent's files (or a sibling's). */
bool sampling_expand_path(const char *template_, long pid, unsigned long seq, bool child, char *out, size_t outlen);

#endif
