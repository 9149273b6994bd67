/*
 * read.h: reading the sampler from Ruby: the records and sites as they
 * were when a read began, and what every reader shows of them.
 *
 * A read (read_run) sees records with seq below `limit` and sites up to
 * `newest`.  While it is open GC is off and other Ractors wait, so no
 * record changes state, nothing moves, and (records.h) no record is
 * evicted and no site freed: a reader may allocate freely.  Only the
 * record table may move (it grows past its reserve with samples of the
 * reader's own allocations): read_record gives a record by index, to be
 * asked again after anything that allocates.  Each distinct site is
 * converted once per read (read_site) into what the reader needs (frozen
 * frames, pprof location ids, ...).
 *
 * What a reader allocates, from its first allocation to the last of what
 * it returns, is not recorded (sampler.h, sampler_reader_enter): a read
 * is such a scope, and read_scope (or a READER_METHOD wrapper around a
 * reader's method) makes one around what a reader does outside its read.
 *
 * Readers run with the GVL; nothing here runs during GC.
 */
#ifndef SAMPLING_READ_H
#define SAMPLING_READ_H

#include "ruby/ruby.h"
#include "ruby/st.h"
#include "records.h"

struct read_state {
    st_table *sites;        /* site -> its conversion (read_site) */
    uint64_t limit;
    const struct sampling_site *newest;
    unsigned int lev;
    bool reading;
};

#define READ_INIT { NULL, 0, NULL, 0, false }

/* The one way to read: body(arg) runs inside a read of rd (begun first;
 * rd needs no initialising), and however body leaves, the read ends
 * (free_converted frees what read_site made, NULL: nothing to free),
 * then done(arg) runs (NULL: nothing to do).  Returns what body returns.
 *
 * body is the sampler's C code: it builds what the reader gives (a
 * String, an Array, a C buffer) and calls no program code (no IO's
 * write, no block, no method of a program's object), so no read is ever
 * open while the program runs: no other thread allocates, forks or
 * stops a fiber in the middle of one, and no read is left open by a
 * fiber never resumed.  The reader hands its result to the program after
 * read_run returns (write.c; report.c).  read_program_call inside a read
 * is a bug (an assertion with --enable-checks). */
VALUE read_run(struct read_state *rd, VALUE (*body)(VALUE), VALUE arg, void (*free_converted)(st_data_t), VALUE (*done)(VALUE));

/* fn(arg) in a reader scope (sampler_reader_enter): its allocations are
 * counted, not recorded.  read_method: the same for a method's body
 * fn(argc, argv, self); READER_METHOD0/1/V(name) define name_reader,
 * the method name (of arity 0, 1, -1) in a scope, to register instead. */
VALUE read_scope(VALUE (*fn)(VALUE), VALUE arg);
/* fn(arg) out of the reader scope: the program's code a reader calls (the
 * write of an IO it was given), whose allocations are the program's. */
VALUE read_program_call(VALUE (*fn)(VALUE), VALUE arg);
/* recv.mid(*argv) so: the method found inside the scope (the lookup's
 * call cache is the reader's), called out of it. */
VALUE read_program_send(VALUE recv, ID mid, int argc, const VALUE *argv);
VALUE read_method(VALUE (*fn)(int, VALUE *, VALUE), int argc, VALUE *argv, VALUE self);
#define READER_METHOD0(name) \
    static VALUE name##_scoped(int argc, VALUE *argv, VALUE self) { return name(self); } \
    static VALUE name##_reader(VALUE self) { return read_method(name##_scoped, 0, NULL, self); }
#define READER_METHOD1(name) \
    static VALUE name##_scoped(int argc, VALUE *argv, VALUE self) { return name(self, argv[0]); } \
    static VALUE name##_reader(VALUE self, VALUE a) { return read_method(name##_scoped, 1, &a, self); }
#define READER_METHODV(name) \
    static VALUE name##_reader(int argc, VALUE *argv, VALUE self) { return read_method(name, argc, argv, self); }

/* The record at index if the read sees it, else NULL; valid until the
 * reader next allocates. */
const struct sampling_record *read_record(const struct read_state *rd, size_t index);

/* Every site the read sees, oldest first: up to `newest` as it was when
 * the read began (sites made since, by the reader's own samples, come after). */
#define READ_SITES_FOREACH(rd, s) \
    for (const struct sampling_site *s = (rd)->newest ? sampler_records()->sites.oldest : NULL; s; \
         s = s == (rd)->newest ? NULL : s->newer)

/* The conversion of a site for this read, made once from its names
 * (records.h; made for the read if the site is not named) by convert. */
typedef st_data_t read_convert_fn(const struct sampling_names *names, void *arg);
st_data_t read_site(struct read_state *rd, const struct sampling_site *site, read_convert_fn *convert, void *arg);

/* Frames as Sample#frames gives them: a frozen Array of frozen
 * [path, lineno, label]; read_synthetic_frames, the one frame [name, 0,
 * name] of a place with no real frame. */
VALUE read_frames(const struct sampling_names *names);
VALUE read_synthetic_frames(const char *name);

/* What a profile shows of one site: totals of every sample taken there,
 * and in-use totals of its live records (which the read sees). */
struct site_values {
    double alloc_space, alloc_objects, inuse_space, inuse_objects;
    double inuse_heaptime;              /* the live records' weight x bytes lived so far (censored) */
    struct sampling_lifetimes life;     /* what its recorded samples did (sites.h) */
    double inuse_objtime;               /* the same in objects x bytes lived so far (sites.h: objtime) */
};

/* In-use totals per site (site -> malloc'd struct site_values), from the
 * live records the read sees; read_site_values gives a site's values
 * (its totals, lifetimes and in-use values); read_inuse_free frees the
 * table. */
void read_inuse(struct read_state *rd, st_table *inuse);
/* The same for the live records that survived at least min_gcs GCs
 * (records.h's age): write_pprof's min_gcs:, the in-use values without
 * the young. */
void read_inuse_aged(struct read_state *rd, st_table *inuse, uint32_t min_gcs);
struct site_values read_site_values(const struct sampling_site *site, st_table *inuse);
void read_inuse_free(st_table *inuse);

/* The live set at the peak (timeline.h), as read_inuse gives the live
 * set now: site -> malloc'd struct site_values (inuse_* only) for the
 * sites the read sees; what belongs to none of them (sites folded since
 * the peak) is added to *other's inuse_*.  Freed by read_inuse_free. */
void read_peak(struct read_state *rd, st_table *by_site, struct site_values *other);

/* The totals of folded sites (and of samples no site could take): one
 * pseudo-site named READ_OTHER_SITES, with nothing in use; false when it
 * holds nothing. */
#define READ_OTHER_SITES "<other sites>"
bool read_other_values(struct site_values *sv);

/* T_STRING and friends, as names and Symbols; the imemo type's Symbol
 * (nil unless type is T_IMEMO). */
const char *read_type_name(uint16_t type);
VALUE read_type_symbol(uint16_t type);
VALUE read_imemo_symbol(uint16_t type, uint8_t imemo_type);

#endif
