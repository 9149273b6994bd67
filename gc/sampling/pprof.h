/*
 * pprof.h: an encoder for pprof profiles (profile.proto, as read by
 * `go tool pprof`, speedscope and other viewers).
 *
 * Model.  A profile is a string table, functions (name + file), locations
 * (function + line), and samples (location ids innermost first, one value
 * per sample type, string labels).  This encoder interns strings,
 * functions and locations as they are named, streams samples into a
 * buffer, and writes the tables at the end; `pprof_finish` returns the
 * protobuf bytes, gzip-compressed when zlib is available (pprof readers
 * accept both).
 *
 * What fleet readers check (Parca's validation, Alloy's delta code), and
 * every profile keeps: string_table[0] is ""; Function and Location ids
 * are 1, 2, 3, ... in the order they are written; every Location has a
 * non-zero address, the same for the same frame in every profile of the
 * process and distinct within a profile (addresses.h).
 *
 * Protobuf wire format, the little of it needed: a field is a varint key
 * (field_number << 3 | wire_type); wire type 0 is a varint, 2 a
 * length-delimited run (strings, nested messages, packed repeated ints).
 *
 * Pure C: malloc only, no Ruby, no locking (one builder per writer).
 */
#ifndef SAMPLING_PPROF_H
#define SAMPLING_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pprof;
struct sampling_addresses;

struct pprof_label {
    uint64_t key;   /* string index */
    uint64_t str;   /* string index */
};

/* NULL without memory.  Locations take their addresses from the table
 * (the library passes the process's); NULL: all 0 (unit tests only). */
struct pprof *pprof_new(struct sampling_addresses *addresses);
void pprof_free(struct pprof *p);

/* String table index of s (len bytes; "" is index 0). */
uint64_t pprof_string(struct pprof *p, const char *s, size_t len);
uint64_t pprof_cstring(struct pprof *p, const char *s);

/* Function id for (name, file), locations id for (function, line): each
 * distinct one is stored once.  Ids start at 1. */
uint64_t pprof_function(struct pprof *p, uint64_t name, uint64_t file);
uint64_t pprof_location(struct pprof *p, uint64_t function, int64_t line);

/* Profile header: the sample types (in value order), the period type and
 * period, and a comment. */
void pprof_sample_type(struct pprof *p, const char *type, const char *unit);
void pprof_period(struct pprof *p, const char *type, const char *unit, int64_t period);
void pprof_comment(struct pprof *p, const char *comment);
/* The sample type viewers show first (by its type name). */
void pprof_default_sample_type(struct pprof *p, const char *type);
void pprof_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos);

/* One sample: locations innermost first, values in sample-type order
 * (at most PPROF_MAX_VALUES; more are not written). */
#define PPROF_MAX_VALUES 16
void pprof_sample(struct pprof *p, const uint64_t *locations, size_t nlocations,
                  const int64_t *values, size_t nvalues,
                  const struct pprof_label *labels, size_t nlabels);

/* The encoded profile (gzip when compress and zlib allow) in a malloc'd
 * buffer the caller frees.  False when memory ran out at any point. */
bool pprof_finish(struct pprof *p, bool compress, uint8_t **out, size_t *outlen);

#endif
