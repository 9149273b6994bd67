/*
 * profile.c: the pprof profile (pprof.h encodes it): built from the
 * sites a read sees, one pprof sample per site; written by `write_pprof`
 * (and, with RUBY_GC_SAMPLING's out=, at exit: out.c).
 */
#include "ruby/ruby.h"

#include "addresses.h"
#include "api.h"
#include "config.h"
#include "delta.h"
#include "labels_fiber.h"
#include "memory_split.h"
#include "pprof.h"
#include "profile.h"
#include "read.h"
#include "retention.h"
#include "retention_view.h"
#include "sampler.h"
#include "views.h"
#include "write.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct pprof_build {
    struct read_state read;
    st_table *inuse;
    struct pprof *p;
    uint64_t key_class, key_type, key_memory;
    struct sampling_delta *delta;   /* alloc_* since its last read; NULL: since start */
    const char *default_type;       /* what readers show first */
    int view;                       /* enum pprof_view */
    uint8_t *bytes;
    size_t len;
    uint32_t min_gcs; const char *why;  /* in-use counts samples that survived min_gcs GCs; why: a comment (watcher's) */
};

/* The views of one profile (write_pprof's view:).  Each is a function
 * of its own that names its sample types and writes its samples, inside
 * the read pprof_build_body opened. */
enum pprof_view { VIEW_ALLOCATIONS, VIEW_PEAK, VIEW_RETENTION, VIEW_HEAP, VIEWS };
static const char *const view_names[VIEWS] = { "allocations", "peak", "retention", "heap" };

/* The sample types of the allocations view, in value order: the four
 * of every heap profile, then what the samples' lives were (sites.h,
 * struct sampling_lifetimes).  heaptime is bytes x MiB lived on the
 * allocation clock (bytes x bytes would pass int64 in a long run). */
static const char *const allocation_types[][2] = {
    { "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" },
    { "promoted_space", "bytes" }, { "promoted_dead_space", "bytes" },
    { "died_first_gc_space", "bytes" }, { "died_later_space", "bytes" },
    { "heaptime", "byte_MiB" }, { "inuse_heaptime", "byte_MiB" },
};
#define ALLOCATION_TYPES (sizeof(allocation_types) / sizeof(allocation_types[0]))
/* view: :heap is Go's heap profile: the first four types only.  Fleet
 * readers need it so: Grafana Alloy's delta code (fastdelta) takes at
 * most four values a sample and fails the whole profile otherwise. */
#define HEAP_TYPES 4
_Static_assert(ALLOCATION_TYPES <= PPROF_MAX_VALUES, "every sample type is written");

static void
pprof_sample_types(struct pprof *p, const char *const (*types)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) pprof_sample_type(p, types[i][0], types[i][1]);
}

/* One pprof sample with values rounded once (rounding each record would
 * bias the counts by up to half an object a record); none when all are
 * zero. */
static void
pprof_rounded_sample(struct pprof_build *b, const uint64_t *ids, uint32_t n, const double *v, size_t nvalues,
                     const struct pprof_label *labels, size_t nlabels)
{
    int64_t values[PPROF_MAX_VALUES];
    if (nvalues > PPROF_MAX_VALUES) nvalues = PPROF_MAX_VALUES;
    bool any = false;
    for (size_t i = 0; i < nvalues; i++) any |= (values[i] = llround(v[i])) != 0;
    if (any) pprof_sample(b->p, ids, n, values, nvalues, labels, nlabels);
}

static void
pprof_site_sample(struct pprof_build *b, const uint64_t *ids, uint32_t n, struct site_values sv,
                  const struct pprof_label *labels, size_t nlabels)
{
    double died_later = 0;
    for (int i = 1; i < SAMPLING_AGE_BUCKETS; i++) died_later += sv.life.died_space[i];
    double values[ALLOCATION_TYPES] = { sv.alloc_objects, sv.alloc_space, sv.inuse_objects, sv.inuse_space,
                                        sv.life.promoted_space, sv.life.promoted_dead_space, sv.life.died_space[0],
                                        died_later, sv.life.heaptime / 1048576.0, sv.inuse_heaptime / 1048576.0 };
    pprof_rounded_sample(b, ids, n, values, b->view == VIEW_HEAP ? HEAP_TYPES : ALLOCATION_TYPES, labels, nlabels);
}

/* A site's string labels: type, memory, class, and its label set. */
#define SITE_LABELS_MAX (3 + SAMPLING_LABELS_PAIRS)
static size_t
pprof_site_labels(struct pprof_build *b, const struct sampling_site *site, const struct sampling_site_ids *s,
                  struct pprof_label *labels)
{
    struct pprof *p = b->p;
    size_t nlabels = 0;
    labels[nlabels++] = (struct pprof_label){ b->key_type, pprof_cstring(p, read_type_name(site->kind.type)) };
    labels[nlabels++] = (struct pprof_label){ b->key_memory, pprof_cstring(p, site->kind.type == SAMPLING_TYPE_MALLOC
                                                                           ? "malloc" : "slot") };
    if (s->klass) labels[nlabels++] = (struct pprof_label){ b->key_class, s->klass };
    return nlabels + sampling_pprof_set_labels(p, site->labels, labels + nlabels);
}

/* view: :allocations (the default): every site, allocated and in use;
 * view: :heap, the same with Go's four sample types. */
static void
pprof_view_allocations(struct pprof_build *b)
{
    struct pprof *p = b->p;
    pprof_sample_types(p, allocation_types, b->view == VIEW_HEAP ? HEAP_TYPES : ALLOCATION_TYPES);
    pprof_default_sample_type(p, b->default_type);
    read_inuse_aged(&b->read, b->inuse, b->min_gcs);
    if (b->delta) sampling_delta_begin(b->delta);
    READ_SITES_FOREACH(&b->read, site) {
        const struct sampling_site_ids *s = (const struct sampling_site_ids *)read_site(&b->read, site, sampling_pprof_site_ids, b->p);
        struct pprof_label labels[SITE_LABELS_MAX];
        size_t nlabels = pprof_site_labels(b, site, s, labels);
        struct site_values sv = read_site_values(site, b->inuse);
        if (b->delta) sampling_delta_site(b->delta, site, &sv);
        pprof_site_sample(b, s->ids, s->n, sv, labels, nlabels);
    }
    struct site_values other;
    bool has_other = read_other_values(&other);
    if (b->delta) has_other = sampling_delta_other(b->delta, &other);
    if (has_other) {
        uint64_t id = sampling_pprof_synthetic_location(p, READ_OTHER_SITES);
        pprof_site_sample(b, &id, 1, other, NULL, 0);
    }
}

/* view: :peak: the live set at the highest live estimate (timeline.h),
 * in use at that GC, by site.  A site folded since shows as <other
 * sites>. */
static void
pprof_view_peak(struct pprof_build *b)
{
    static const char *const types[][2] = { { "inuse_objects", "count" }, { "inuse_space", "bytes" } };
    struct pprof *p = b->p;
    pprof_sample_types(p, types, 2);
    pprof_default_sample_type(p, "inuse_space");
    const struct sampling_peak *peak = &sampler_timeline()->peak;
    char comment[256];
    if (peak->taken) {
        snprintf(comment, sizeof(comment), "peak: GC %llu (%s), estimated %.0f bytes live (slots %.0f, malloc %.0f), "
                 "%u live samples", (unsigned long long)peak->at.gc, peak->at.major ? "major" : "minor",
                 sampling_row_live(&peak->at), peak->at.live_space[SAMPLING_LIVE_SLOT],
                 peak->at.live_space[SAMPLING_LIVE_MALLOC], peak->at.live_samples);
        const struct sampling_timeline *t = sampler_timeline();
        pprof_time(p, t->origin_real_ns + (peak->at.time_ns - t->origin_ns), 0);
    }
    else {
        snprintf(comment, sizeof(comment), "peak: no GC seen since the sampler started");
    }
    pprof_comment(p, comment);
    struct site_values other = { 0 };
    read_peak(&b->read, b->inuse, &other);
    READ_SITES_FOREACH(&b->read, site) {
        st_data_t v;
        if (!st_lookup(b->inuse, (st_data_t)site, &v)) continue;
        const struct site_values *sv = (const struct site_values *)v;
        const struct sampling_site_ids *s = (const struct sampling_site_ids *)read_site(&b->read, site, sampling_pprof_site_ids, b->p);
        struct pprof_label labels[SITE_LABELS_MAX];
        size_t nlabels = pprof_site_labels(b, site, s, labels);
        double values[2] = { sv->inuse_objects, sv->inuse_space };
        pprof_rounded_sample(b, s->ids, s->n, values, 2, labels, nlabels);
    }
    /* sites folded since the peak */
    if (other.inuse_space > 0) {
        double values[2] = { other.inuse_objects, other.inuse_space };
        uint64_t id = sampling_pprof_synthetic_location(p, READ_OTHER_SITES);
        pprof_rounded_sample(b, &id, 1, values, 2, NULL, 0);
    }
}

static VALUE
pprof_build_body(VALUE arg)
{
    struct pprof_build *b = (struct pprof_build *)arg;
    const struct sampling_params *params = sampler_params();
    struct pprof *p = b->p;
    pprof_period(p, "space", "bytes", (int64_t)params->interval);
    b->key_class = pprof_cstring(p, "class");
    b->key_type = pprof_cstring(p, "type");
    b->key_memory = pprof_cstring(p, "memory");

    sampling_pprof_header_comments(p, view_names[b->view]);
    if (b->why) pprof_comment(p, b->why);
    char line[512];
    if (b->min_gcs && snprintf(line, sizeof(line), "min_gcs=%u: inuse_* count only samples that survived at least %u GCs",
                               b->min_gcs, b->min_gcs) > 0) pprof_comment(p, line);
    if (sampling_memory_split_text(line, sizeof(line))) pprof_comment(p, line);     /* where RSS went (memory_split.c) */

    switch (b->view) {
      case VIEW_PEAK: pprof_view_peak(b); break;
      default: pprof_view_allocations(b); break;
    }
    if (!pprof_finish(p, true, &b->bytes, &b->len)) rb_memerror();
    return Qnil;
}

static VALUE
pprof_build_done(VALUE arg)
{
    struct pprof_build *b = (struct pprof_build *)arg;
    if (b->delta) sampling_delta_end(b->delta);
    read_inuse_free(b->inuse);
    pprof_free(b->p);
    return Qnil;
}

/* The profile as a binary String (gzip-compressed pprof); with a delta,
 * alloc_* count what was allocated since its last read (which this read
 * becomes), inuse_* and the lifetimes stay a snapshot. */
static void
pprof_build(struct sampling_delta *delta, const char *default_type, enum pprof_view view, uint32_t min_gcs, const char *why,
            uint8_t **bytes, size_t *len)
{
    struct pprof *p = pprof_new(sampling_addresses_process());
    if (!p) rb_memerror();
    struct pprof_build b = { READ_INIT, st_init_numtable(), p, 0, 0, 0, delta, default_type, view, NULL, 0, min_gcs, why };
    read_run(&b.read, pprof_build_body, (VALUE)&b, sampling_pprof_free_ids, pprof_build_done);
    *bytes = b.bytes;
    *len = b.len;
}

static VALUE
pprof_bytes(struct sampling_delta *delta, const char *default_type, enum pprof_view view, uint32_t min_gcs)
{
    uint8_t *bytes;
    size_t len;
    pprof_build(delta, default_type, view, min_gcs, NULL, &bytes, &len);
    VALUE str = rb_str_new((const char *)bytes, (long)len);
    free(bytes);
    return str;
}

VALUE
sampling_pprof_bytes(struct sampling_delta *delta)
{
    return pprof_bytes(delta, "alloc_space", VIEW_ALLOCATIONS, sampler_params()->min_gcs);
}

void
sampling_pprof_malloced(struct sampling_delta *delta, const char *why, uint8_t **bytes, size_t *len)
{
    pprof_build(delta, why ? "inuse_space" : "alloc_space", VIEW_ALLOCATIONS, sampler_params()->min_gcs, why, bytes, len);
}

/* min_gcs: (write.c) for the in-use views, :allocations and :heap */
static uint32_t
view_min_gcs_arg(VALUE v, int view)
{
    if (v != Qundef && view != VIEW_ALLOCATIONS && view != VIEW_HEAP)
        rb_raise(rb_eArgError, "min_gcs is for view: :allocations or :heap (got %"PRIsVALUE")", rb_inspect(v));
    return sampling_min_gcs_arg(v);
}

/* view: :allocations (the default), :peak, :retention (retention_view.c
 * builds that one: a walk of the heap) or :heap; ArgumentError naming
 * view otherwise. */
static enum pprof_view
view_arg(VALUE view)
{
    if (view == Qundef) return VIEW_ALLOCATIONS;
    for (int i = 0; i < VIEWS; i++) {
        if (view == ID2SYM(rb_intern(view_names[i]))) return (enum pprof_view)i;
    }
    rb_raise(rb_eArgError, "view must be :allocations, :peak or :retention, or :heap (got %"PRIsVALUE")", rb_inspect(view));
}

/* A Delta's profile (delta_api.c): view: :allocations (the default) or :heap. */
VALUE
sampling_pprof_delta_bytes(struct sampling_delta *delta, VALUE view, VALUE min_gcs)
{
    enum pprof_view v = view_arg(view);
    if (v != VIEW_ALLOCATIONS && v != VIEW_HEAP)
        rb_raise(rb_eArgError, "view must be :allocations or :heap for a Delta (got %"PRIsVALUE")", rb_inspect(view));
    return pprof_bytes(delta, "alloc_space", v, sampling_min_gcs_arg(min_gcs));
}

/* max_objects: for view: :retention, the walk's cap (as retention's):
 * nil or absent, no cap but the heap; bounds the pause (the Rack
 * middleware's retention route passes one). */
static size_t
view_max_objects_arg(VALUE v, enum pprof_view view)
{
    if (v == Qundef) return SIZE_MAX;
    if (view != VIEW_RETENTION) rb_raise(rb_eArgError, "max_objects is for view: :retention (got %"PRIsVALUE")", rb_inspect(v));
    if (NIL_P(v)) return SIZE_MAX;
    if (!FIXNUM_P(v) || FIX2LONG(v) < 1 || (unsigned long)FIX2LONG(v) > RETENTION_MAX_NODES) {
        rb_raise(rb_eArgError, "max_objects must be nil or an Integer from 1 to %zu (got %"PRIsVALUE")",
                 (size_t)RETENTION_MAX_NODES, rb_inspect(v));
    }
    return (size_t)FIX2LONG(v);
}

/* pprof(default_sample_type: "alloc_space", view: :allocations,
 * max_objects: nil, min_gcs: 0) => the profile as a String (what write_pprof
 * writes); the Rack middleware's heap route makes readers show
 * inuse_space first, as Go's heap profiles do.  Every argument is
 * checked before anything is read. */
static VALUE
allocation_sampler_pprof_m(int argc, VALUE *argv, VALUE self)
{
    static const char *const types[] = { "alloc_objects", "alloc_space", "inuse_objects", "inuse_space" };
    VALUE opts = Qnil, values[4] = { Qundef, Qundef, Qundef, Qundef };
    rb_scan_args(argc, argv, "0:", &opts);
    if (!NIL_P(opts)) {
        ID keys[4] = { rb_intern("default_sample_type"), rb_intern("view"), rb_intern("max_objects"), rb_intern("min_gcs") };
        rb_get_kwargs(opts, keys, 0, 4, values);
    }
    VALUE type = values[0];
    enum pprof_view view = view_arg(values[1]);
    size_t max_objects = view_max_objects_arg(values[2], view);
    uint32_t min_gcs = view_min_gcs_arg(values[3], view);
    if (view == VIEW_RETENTION) {
        if (type != Qundef) rb_raise(rb_eArgError, "default_sample_type is for view: :allocations or :peak (got %"PRIsVALUE")", rb_inspect(type));
        return sampling_retention_pprof_bytes(max_objects);
    }
    if (type == Qundef) return pprof_bytes(NULL, view == VIEW_PEAK ? "inuse_space" : "alloc_space", view, min_gcs);
    VALUE name = RB_SYMBOL_P(type) ? rb_sym2str(type) : type;
    bool any_type = view == VIEW_ALLOCATIONS || view == VIEW_HEAP;
    for (size_t i = 0; any_type && RB_TYPE_P(name, T_STRING) && i < sizeof(types) / sizeof(types[0]); i++) {
        if (strcmp(StringValueCStr(name), types[i]) == 0) return pprof_bytes(NULL, types[i], view, min_gcs);
    }
    if (view == VIEW_PEAK && RB_TYPE_P(name, T_STRING) && strcmp(StringValueCStr(name), "inuse_space") == 0)
        return pprof_bytes(NULL, "inuse_space", view, min_gcs);
    rb_raise(rb_eArgError, "default_sample_type must be alloc_objects, alloc_space, inuse_objects or inuse_space "
             "(inuse_space with view: :peak) (got %"PRIsVALUE")", rb_inspect(type));
}

/* write_pprof(path_or_io, view: :allocations, max_objects: nil, min_gcs: 0) */
static VALUE
allocation_sampler_write_pprof_m(int argc, VALUE *argv, VALUE self)
{
    VALUE dest, opts = Qnil, values[3] = { Qundef, Qundef, Qundef };
    rb_scan_args(argc, argv, "1:", &dest, &opts);
    if (!NIL_P(opts)) {
        ID keys[3] = { rb_intern("view"), rb_intern("max_objects"), rb_intern("min_gcs") };
        rb_get_kwargs(opts, keys, 0, 3, values);
    }
    enum pprof_view v = view_arg(values[0]);
    size_t max_objects = view_max_objects_arg(values[1], v);
    uint32_t min_gcs = view_min_gcs_arg(values[2], v);
    sampling_check_destination(dest, "path_or_io");
    VALUE bytes = v == VIEW_RETENTION ? sampling_retention_pprof_bytes(max_objects)
                                      : pprof_bytes(NULL, v == VIEW_PEAK ? "inuse_space" : "alloc_space", v, min_gcs);
    return sampling_write_out(dest, bytes, "path_or_io");
}

READER_METHODV(allocation_sampler_write_pprof_m)
READER_METHODV(allocation_sampler_pprof_m)

void
sampling_define_profile(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "write_pprof", allocation_sampler_write_pprof_m_reader, -1);
    rb_define_singleton_method(mSampler, "pprof", allocation_sampler_pprof_m_reader, -1);
}
