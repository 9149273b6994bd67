/*
 * timeline_api.c: the timeline and the peak from Ruby (timeline.h):
 * `timeline` (a Hash per row), `peak` (the peak's row, or nil),
 * `write_timeline` (CSV), and the CSV written beside the profile at exit.
 * The peak's live set is a profile: write_pprof(dest, view: :peak)
 * (profile.c).
 */
#include "ruby/ruby.h"

#include "api.h"
#include "timeline_api.h"
#include "write.h"
#include "read.h"
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SYM(name) ID2SYM(rb_intern(name))

/* The rows, copied under a read (which is over before Ruby sees them). */
struct rows {
    struct read_state read;
    struct sampling_timeline_row *rows;
    size_t n;
    int64_t origin_ns, origin_real_ns;
    bool peak;
};

static double
row_seconds(const struct rows *r, const struct sampling_timeline_row *row)
{
    return (double)(row->time_ns - r->origin_ns) / 1e9;
}

static VALUE
row_hash(const struct rows *r, const struct sampling_timeline_row *row)
{
    VALUE h = rb_hash_new();
    rb_hash_aset(h, SYM("gc"), ULL2NUM(row->gc));
    rb_hash_aset(h, SYM("seconds"), DBL2NUM(row_seconds(r, row)));
    rb_hash_aset(h, SYM("major"), row->major ? Qtrue : Qfalse);
    rb_hash_aset(h, SYM("live_bytes"), LL2NUM(llround(sampling_row_live(row))));
    rb_hash_aset(h, SYM("live_slot_bytes"), LL2NUM(llround(row->live_space[SAMPLING_LIVE_SLOT])));
    rb_hash_aset(h, SYM("live_malloc_bytes"), LL2NUM(llround(row->live_space[SAMPLING_LIVE_MALLOC])));
    rb_hash_aset(h, SYM("live_samples"), UINT2NUM(row->live_samples));
    rb_hash_aset(h, SYM("total_allocated_bytes"), ULL2NUM(row->clock));
    return h;
}

/* Copies the rows (peak: the peak's row alone) under a read. */
static VALUE
rows_copy(VALUE arg)
{
    struct rows *r = (struct rows *)arg;
    const struct sampling_timeline *t = sampler_timeline();
    r->origin_ns = t->origin_ns;
    r->origin_real_ns = t->origin_real_ns;
    const struct sampling_timeline_row *from = r->peak ? &t->peak.at : t->rows;
    r->n = r->peak ? t->peak.taken : t->n;
    r->rows = malloc((r->n ? r->n : 1) * sizeof(*r->rows));
    if (!r->rows) rb_memerror();
    if (r->n) memcpy(r->rows, from, r->n * sizeof(*r->rows));
    return Qnil;
}

static void
rows_read(struct rows *r, bool peak)
{
    *r = (struct rows){ .peak = peak };
    read_run(&r->read, rows_copy, (VALUE)r, NULL, NULL);
}

/* timeline => [{gc:, seconds:, major:, live_bytes:, ...}, ...], oldest first */
static VALUE
allocation_sampler_timeline_m(VALUE self)
{
    struct rows r;
    rows_read(&r, false);
    VALUE result = rb_ary_new_capa((long)r.n);
    for (size_t i = 0; i < r.n; i++) rb_ary_push(result, row_hash(&r, &r.rows[i]));
    free(r.rows);
    return result;
}

/* peak => the row of the GC with the highest live estimate, with its
 * wall-clock time; nil before the first GC */
static VALUE
allocation_sampler_peak_m(VALUE self)
{
    struct rows r;
    rows_read(&r, true);
    VALUE h = Qnil;
    if (r.n) {
        h = row_hash(&r, &r.rows[0]);
        int64_t real = r.origin_real_ns + (r.rows[0].time_ns - r.origin_ns);
        rb_hash_aset(h, SYM("time"), rb_time_nano_new(real / 1000000000, real % 1000000000));
    }
    free(r.rows);
    return h;
}

#define CSV_HEADER "gc,seconds,major,live_bytes,live_slot_bytes,live_malloc_bytes,live_samples,total_allocated_bytes\n"

/* The rows as CSV text (a header line, then a line a row). */
VALUE
sampling_timeline_csv(void)
{
    struct rows r;
    rows_read(&r, false);
    VALUE text = rb_str_buf_new((long)(r.n * 64 + sizeof(CSV_HEADER)));
    rb_str_cat_cstr(text, CSV_HEADER);
    for (size_t i = 0; i < r.n; i++) {
        const struct sampling_timeline_row *row = &r.rows[i];
        char line[256];
        int len = snprintf(line, sizeof(line), "%llu,%.6f,%d,%.0f,%.0f,%.0f,%u,%llu\n", (unsigned long long)row->gc,
                           row_seconds(&r, row), row->major, sampling_row_live(row), row->live_space[SAMPLING_LIVE_SLOT],
                           row->live_space[SAMPLING_LIVE_MALLOC], row->live_samples, (unsigned long long)row->clock);
        rb_str_cat(text, line, len);
    }
    free(r.rows);
    return text;
}

/* write_timeline(path_or_io) => bytes written */
static VALUE
allocation_sampler_write_timeline_m(VALUE self, VALUE dest)
{
    sampling_check_destination(dest, "path_or_io");
    return sampling_write_out(dest, sampling_timeline_csv(), "path_or_io");
}

/* Where the CSV goes beside a profile at path: its name without .pb.gz
 * (or .pb, .gz, .dhat.json), then .timeline.csv. */
bool
sampling_timeline_path(const char *profile, char *out, size_t size)
{
    static const char *const suffixes[] = { ".pb.gz", ".pb", ".gz", ".dhat.json" };
    size_t len = strlen(profile);
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++) {
        size_t n = strlen(suffixes[i]);
        if (len > n && strcmp(profile + len - n, suffixes[i]) == 0) {
            len -= n;
            break;
        }
    }
    return (size_t)snprintf(out, size, "%.*s.timeline.csv", (int)len, profile) < size;
}

READER_METHOD0(allocation_sampler_timeline_m)
READER_METHOD0(allocation_sampler_peak_m)
READER_METHOD1(allocation_sampler_write_timeline_m)

void
sampling_define_timeline(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "timeline", allocation_sampler_timeline_m_reader, 0);
    rb_define_singleton_method(mSampler, "peak", allocation_sampler_peak_m_reader, 0);
    rb_define_singleton_method(mSampler, "write_timeline", allocation_sampler_write_timeline_m_reader, 1);
}
