/*
 * report.c: `report` and `write_collapsed` (written in Ruby: report.rb,
 * compiled in as a string and evaluated on first use) and `site_totals`,
 * the one thing they read: a row per site with its totals.
 */
#include "ruby/ruby.h"

#include "api.h"
#include "labels_api.h"
#include "write.h"
#include "read.h"
#include "sampler.h"

struct totals {
    struct read_state read;
    st_table *inuse;
    VALUE result;
    bool peak;      /* the live set at the peak (inuse_* only), not now */
};

static VALUE
totals_row(VALUE frames, VALUE klass, VALUE type, VALUE imemo, struct site_values sv, VALUE ages, uint32_t labels)
{
    VALUE row = rb_ary_new_capa(11);
    rb_ary_push(row, frames);
    rb_ary_push(row, klass);
    rb_ary_push(row, type);
    rb_ary_push(row, imemo);
    rb_ary_push(row, DBL2NUM(sv.alloc_space));
    rb_ary_push(row, DBL2NUM(sv.alloc_objects));
    rb_ary_push(row, DBL2NUM(sv.inuse_space));
    rb_ary_push(row, DBL2NUM(sv.inuse_objects));
    rb_ary_push(row, ages);
    rb_ary_push(row, sampling_labels_hash(labels));
    /* lives: deaths by GCs survived (0, 1, 2-3, 4-7, 8-15, 16+), promoted,
     * promoted then dead, heaptime of the dead and of the live */
    VALUE life = rb_ary_new_capa(SAMPLING_AGE_BUCKETS + 4);
    for (int i = 0; i < SAMPLING_AGE_BUCKETS; i++) rb_ary_push(life, DBL2NUM(sv.life.died_space[i]));
    rb_ary_push(life, DBL2NUM(sv.life.promoted_space));
    rb_ary_push(life, DBL2NUM(sv.life.promoted_dead_space));
    rb_ary_push(life, DBL2NUM(sv.life.heaptime));
    rb_ary_push(life, DBL2NUM(sv.inuse_heaptime));
    rb_ary_push(row, life);
    return row;
}

static st_data_t
class_name_convert(const struct sampling_names *names, void *arg)
{
    return (st_data_t)(names->klass ? rb_str_freeze(rb_utf8_str_new_cstr(names->klass)) : Qnil);
}

static st_data_t
totals_convert(const struct sampling_names *names, void *arg)
{
    /* (reachable while GC is off, then from the rows) */
    return (st_data_t)rb_ary_new_from_args(2, read_frames(names), (VALUE)class_name_convert(names, NULL));
}

/* The peak's rows: a row per site the peak's live set holds, in-use
 * values only. */
static VALUE
peak_rows(struct totals *t)
{
    struct site_values other = { 0 };
    read_peak(&t->read, t->inuse, &other);
    VALUE rows = rb_ary_new();
    READ_SITES_FOREACH(&t->read, site) {
        st_data_t v;
        if (!st_lookup(t->inuse, (st_data_t)site, &v)) continue;
        struct site_values sv = { 0 };
        sv.inuse_space = ((struct site_values *)v)->inuse_space;
        sv.inuse_objects = ((struct site_values *)v)->inuse_objects;
        VALUE pair = (VALUE)read_site(&t->read, site, totals_convert, NULL);
        rb_ary_push(rows, totals_row(RARRAY_AREF(pair, 0), RARRAY_AREF(pair, 1), read_type_symbol(site->kind.type),
                                     read_imemo_symbol(site->kind.type, site->kind.imemo_type), sv, rb_ary_new(),
                                     site->labels));
    }
    if (other.inuse_space > 0) {
        rb_ary_push(rows, totals_row(read_synthetic_frames(READ_OTHER_SITES), Qnil, Qnil, Qnil, other, rb_ary_new(), 0));
    }
    t->result = rows;
    return rows;
}

static VALUE
totals_body(VALUE arg)
{
    struct totals *t = (struct totals *)arg;
    if (t->peak) return peak_rows(t);
    read_inuse(&t->read, t->inuse);
    /* live ages per site */
    st_table *ages = st_init_numtable();
    VALUE keep = rb_ary_new();
    size_t gc_count = rb_gc_count();
    const struct sampling_records *r = sampler_records();
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = read_record(&t->read, r->live[i].record);
        if (!rec) continue;
        st_data_t list;
        const struct sampling_site *site = rec->site;
        size_t age = sampling_record_age(rec, gc_count);
        if (!st_lookup(ages, (st_data_t)site, &list)) {
            list = (st_data_t)rb_ary_new();
            rb_ary_push(keep, (VALUE)list);
            st_insert(ages, (st_data_t)site, list);
        }
        rb_ary_push((VALUE)list, SIZET2NUM(age));
    }
    VALUE rows = rb_ary_new();
    READ_SITES_FOREACH(&t->read, site) {
        VALUE pair = (VALUE)read_site(&t->read, site, totals_convert, NULL);
        st_data_t list;
        VALUE site_ages = st_lookup(ages, (st_data_t)site, &list) ? (VALUE)list : rb_ary_new();
        rb_ary_push(rows, totals_row(RARRAY_AREF(pair, 0), RARRAY_AREF(pair, 1), read_type_symbol(site->kind.type),
                                     read_imemo_symbol(site->kind.type, site->kind.imemo_type), read_site_values(site, t->inuse), site_ages,
                                     site->labels));
    }
    st_free_table(ages);
    RB_GC_GUARD(keep);
    struct site_values other;
    if (read_other_values(&other)) {
        rb_ary_push(rows, totals_row(read_synthetic_frames(READ_OTHER_SITES), Qnil, Qnil, Qnil, other, rb_ary_new(), 0));
    }
    t->result = rows;
    return rows;
}

static VALUE
totals_done(VALUE arg)
{
    struct totals *t = (struct totals *)arg;
    read_inuse_free(t->inuse);
    return Qnil;
}

/* site_totals (private): one row per site, [frames, class name, type,
 * imemo type, alloc_space, alloc_objects, inuse_space, inuse_objects,
 * ages of its live samples, labels, lives (totals_row)]; folded sites as
 * one "<other sites>" row. */
static VALUE
allocation_sampler_site_totals_m(VALUE self)
{
    struct totals t = { .inuse = st_init_numtable(), .result = Qnil, .peak = false };
    return read_run(&t.read, totals_body, (VALUE)&t, NULL, totals_done);
}

/* peak_totals (private): site_totals' rows for the live set at the peak
 * (timeline.h): in-use values only; sites folded since as "<other
 * sites>". */
static VALUE
allocation_sampler_peak_totals_m(VALUE self)
{
    struct totals t = { .inuse = st_init_numtable(), .result = Qnil, .peak = true };
    return read_run(&t.read, totals_body, (VALUE)&t, NULL, totals_done);
}

static const char report_rb[] =
#include "report_rb.inc"
    ;

/* report, write_collapsed and retention_report stay these C methods (so
 * a Method taken before the first call keeps working, and nothing is
 * redefined); the first call evaluates report.rb, which defines the
 * private methods they call.  Each *_impl checks its arguments, reads
 * (site_totals, stats, ...: each a read of its own) and builds the whole
 * text in a reader scope: its plenty of allocations are counted, not
 * recorded, so they never evict the records of the program reported on.
 * It returns [destination, text, result]; only then, with no read open
 * and out of the scope (read_program_send), is the text handed to the
 * program's IO (or written to the file), so a slow IO, a fork in another
 * thread meanwhile or a fiber never resumed leaves nothing open (read.h,
 * read_run). */
struct report_args {
    int argc;
    VALUE *argv;
    VALUE self;
    const char *name;
    const char *argname;
    int kw_splat;
};

static VALUE
report_scoped(VALUE arg)
{
    static bool loaded;
    if (!loaded) {
        rb_funcall(rb_mKernel, rb_intern("eval"), 4, rb_str_new_static(report_rb, (long)sizeof(report_rb) - 1), Qnil,
                   rb_str_new_cstr("<internal:allocation_sampler/report>"), INT2FIX(1));
        loaded = true;
    }
    struct report_args *a = (struct report_args *)arg;
    /* (in the scope: rb_intern makes the name's String once) */
    VALUE built = rb_funcallv_kw(a->self, rb_intern(a->name), a->argc, a->argv, a->kw_splat);
    /* (the IO's write runs out of the scope: read_program_send) */
    sampling_write_out(RARRAY_AREF(built, 0), RARRAY_AREF(built, 1), a->argname);
    VALUE result = RARRAY_AREF(built, 2);
    RB_GC_GUARD(built);
    return result;
}

static VALUE
report_call(int argc, VALUE *argv, VALUE self, const char *name, const char *argname)
{
    struct report_args a = { argc, argv, self, name, argname, rb_keyword_given_p() };
    return read_scope(report_scoped, (VALUE)&a);
}

static VALUE
allocation_sampler_write_collapsed_m(int argc, VALUE *argv, VALUE self)
{
    return report_call(argc, argv, self, "write_collapsed_impl", "path_or_io");
}

static VALUE
allocation_sampler_report_m(int argc, VALUE *argv, VALUE self)
{
    return report_call(argc, argv, self, "report_impl", "io");
}

/* retention_report(io = $stdout, top: 20, max_objects: nil) */
static VALUE
allocation_sampler_retention_report_m(int argc, VALUE *argv, VALUE self)
{
    return report_call(argc, argv, self, "retention_report_impl", "io");
}

void
sampling_define_report(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "write_collapsed", allocation_sampler_write_collapsed_m, -1);
    rb_define_singleton_method(mSampler, "report", allocation_sampler_report_m, -1);
    rb_define_singleton_method(mSampler, "retention_report", allocation_sampler_retention_report_m, -1);
    rb_define_private_method(rb_singleton_class(mSampler), "site_totals", allocation_sampler_site_totals_m, 0);
    rb_define_private_method(rb_singleton_class(mSampler), "peak_totals", allocation_sampler_peak_totals_m, 0);
}
