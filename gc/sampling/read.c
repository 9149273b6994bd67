/* read.c: see read.h. */
#include "read.h"
#include "frames.h"
#include "invariant.h"
#include "sampler.h"

#include <stdlib.h>

const char *rb_imemo_name(int type);

/* Reads open now (GVL and VM lock held while one is: one Ractor reads at
 * a time), for the check that no program code runs inside one. */
static unsigned int reads_open;

static void
read_begin(struct read_state *rd)
{
    sampler_reader_enter();
    rd->limit = sampler_read_begin(&rd->lev);
    rd->newest = sampler_records()->sites.newest;
    rd->reading = true;
    reads_open++;
    rd->sites = st_init_numtable();
}

static int
read_free_i(st_data_t key, st_data_t value, st_data_t free_converted)
{
    if (value) ((void (*)(st_data_t))free_converted)(value);
    return ST_CONTINUE;
}

static void
read_end(struct read_state *rd, void (*free_converted)(st_data_t))
{
    if (rd->sites) {
        if (free_converted) st_foreach(rd->sites, read_free_i, (st_data_t)free_converted);
        st_free_table(rd->sites);
        rd->sites = NULL;
    }
    if (rd->reading) {
        rd->reading = false;
        reads_open--;
        sampler_read_end(rd->lev);
        sampler_reader_leave();
    }
}

struct run {
    struct read_state *rd;
    VALUE (*body)(VALUE);
    VALUE arg;
    void (*free_converted)(st_data_t);
    VALUE (*done)(VALUE);
};

static VALUE
run_body(VALUE arg)
{
    struct run *r = (struct run *)arg;
    read_begin(r->rd);
    return r->body(r->arg);
}

static VALUE
run_end(VALUE arg)
{
    struct run *r = (struct run *)arg;
    read_end(r->rd, r->free_converted);
    if (r->done) r->done(r->arg);
    return Qnil;
}

VALUE
read_run(struct read_state *rd, VALUE (*body)(VALUE), VALUE arg, void (*free_converted)(st_data_t), VALUE (*done)(VALUE))
{
    *rd = (struct read_state)READ_INIT;
    struct run r = { rd, body, arg, free_converted, done };
    return rb_ensure(run_body, (VALUE)&r, run_end, (VALUE)&r);
}

static VALUE
scope_end(VALUE unused)
{
    sampler_reader_leave();
    return Qnil;
}

VALUE
read_scope(VALUE (*fn)(VALUE), VALUE arg)
{
    sampler_reader_enter();
    return rb_ensure(fn, arg, scope_end, Qnil);
}

static VALUE
program_end(VALUE depth)
{
    sampler_reader_resume((unsigned int)NUM2UINT(depth));
    return Qnil;
}

VALUE
read_program_call(VALUE (*fn)(VALUE), VALUE arg)
{
    SAMPLING_ASSERT(!reads_open);
    unsigned int depth = sampler_reader_pause();
    return rb_ensure(fn, arg, program_end, UINT2NUM(depth));
}

static VALUE
program_send(VALUE args)
{
    return rb_method_call((int)RARRAY_LEN(args) - 1, RARRAY_CONST_PTR(args) + 1, RARRAY_AREF(args, 0));
}

VALUE
read_program_send(VALUE recv, ID mid, int argc, const VALUE *argv)
{
    VALUE args = rb_ary_new_capa(argc + 1);
    rb_ary_push(args, rb_obj_method(recv, ID2SYM(mid)));
    for (int i = 0; i < argc; i++) rb_ary_push(args, argv[i]);
    return read_program_call(program_send, args);
}

struct method_call {
    VALUE (*fn)(int, VALUE *, VALUE);
    int argc;
    VALUE *argv;
    VALUE self;
};

static VALUE
method_call(VALUE arg)
{
    struct method_call *c = (struct method_call *)arg;
    return c->fn(c->argc, c->argv, c->self);
}

VALUE
read_method(VALUE (*fn)(int, VALUE *, VALUE), int argc, VALUE *argv, VALUE self)
{
    struct method_call c = { fn, argc, argv, self };
    return read_scope(method_call, (VALUE)&c);
}

const struct sampling_record *
read_record(const struct read_state *rd, size_t index)
{
    const struct sampling_records *r = sampler_records();
    if (index >= r->used) return NULL;
    const struct sampling_record *rec = &r->items[index];
    return rec->seq && rec->seq < rd->limit ? rec : NULL;
}

/* A site's names for a read, made now (from its path, or as it was named). */
struct site_names {
    const struct sampling_site *site;
    struct sampling_names *made;
    read_convert_fn *convert;
    void *arg;
};

static VALUE
site_names_convert(VALUE arg)
{
    struct site_names *sn = (struct site_names *)arg;
    const struct sampling_names *names = sn->made = sampling_site_names(sn->site);
    if (!names) rb_memerror();
    return (VALUE)sn->convert(names, sn->arg);
}

static VALUE
site_names_free(VALUE arg)
{
    free(((struct site_names *)arg)->made);
    return Qnil;
}

/* The conversion of site, made once per read.  It is registered (as 0)
 * before it is made, so one that raises half-way is not made again. */
st_data_t
read_site(struct read_state *rd, const struct sampling_site *site, read_convert_fn *convert, void *arg)
{
    st_data_t converted;
    if (st_lookup(rd->sites, (st_data_t)site, &converted)) return converted;
    st_insert(rd->sites, (st_data_t)site, 0);
    struct site_names sn = { site, NULL, convert, arg };
    converted = (st_data_t)rb_ensure(site_names_convert, (VALUE)&sn, site_names_free, (VALUE)&sn);
    st_insert(rd->sites, (st_data_t)site, converted);
    return converted;
}

static VALUE
name_string(const char *s, uint32_t len)
{
    return s ? rb_str_freeze(rb_utf8_str_new(s, len)) : Qnil;
}

VALUE
read_synthetic_frames(const char *name)
{
    VALUE s = rb_str_freeze(rb_str_new_cstr(name));
    return rb_ary_freeze(rb_ary_new_from_args(1, rb_ary_freeze(rb_ary_new_from_args(3, s, INT2FIX(0), s))));
}

bool
read_other_values(struct site_values *sv)
{
    const struct sampling_sites *sites = &sampler_records()->sites;
    *sv = (struct site_values){ sites->other_space, sites->other_objects, 0, 0, 0, sites->other_life };
    return sites->other_space > 0;
}

VALUE
read_frames(const struct sampling_names *names)
{
    if (names->n == 0) return read_synthetic_frames("<unknown>");
    VALUE frames = rb_ary_new_capa(names->n);
    for (uint32_t i = 0; i < names->n; i++) {
        const struct sampling_name *nm = &names->locs[i];
        rb_ary_push(frames, rb_ary_freeze(rb_ary_new_from_args(3, name_string(nm->path, nm->pathlen), INT2NUM(nm->lineno),
                                                                 name_string(nm->label, nm->labellen))));
    }
    /* (stays reachable: GC is off, then the result holds it) */
    return rb_ary_freeze(frames);
}

/* inuse_* of the values at key in table (made when new) */
static struct site_values *
values_at(st_table *table, st_data_t key)
{
    st_data_t v;
    if (!st_lookup(table, key, &v)) {
        v = (st_data_t)calloc(1, sizeof(struct site_values));
        if (!v) rb_memerror();
        st_insert(table, key, v);
    }
    return (struct site_values *)v;
}

/* In-use totals per site (site -> malloc'd struct site_values), from the
 * live records the read sees. */
void
read_inuse(struct read_state *rd, st_table *inuse)
{
    read_inuse_aged(rd, inuse, 0);
}

void
read_inuse_aged(struct read_state *rd, st_table *inuse, uint32_t min_gcs)
{
    const struct sampling_records *r = sampler_records();
    uint64_t clock = sampler_clock();
    size_t gcs = rb_gc_count();
    for (size_t i = 0; i < r->nlive; i++) {
        const struct sampling_record *rec = read_record(rd, r->live[i].record);
        if (!rec || (min_gcs && sampling_record_age(rec, gcs) < min_gcs)) continue;
        struct site_values *sv = values_at(inuse, (st_data_t)rec->site);
        sv->inuse_space += rec->weight;
        double objects = rec->weight / (double)sampling_record_size(rec);
        sv->inuse_objects += objects;
        double lived = (double)sampling_record_age_bytes(rec, clock);
        sv->inuse_heaptime += rec->weight * lived;
        sv->inuse_objtime += objects * lived;
    }
}

void
read_peak(struct read_state *rd, st_table *by_site, struct site_values *other)
{
    const struct sampling_records *r = sampler_records();
    /* the members whose records are still here, by their sites */
    for (size_t i = 0; i < r->used; i++) {
        const struct sampling_record *rec = read_record(rd, i);
        if (!rec || !sampling_record_in_peak(r, rec)) continue;
        struct site_values *sv = values_at(by_site, (st_data_t)rec->site);
        sv->inuse_space += rec->weight;
        sv->inuse_objects += rec->weight / (double)sampling_record_size(rec);
    }
    /* the others by their site ids; those of sites gone since, to other */
    const struct sampling_peak_set *peak = &r->peak;
    st_table *by_id = st_init_numtable();
    for (size_t i = 0; i < peak->nspill; i++) {
        const struct sampling_peak_entry *e = &peak->spill[i];
        struct site_values *sv = values_at(by_id, (st_data_t)e->site);
        sv->inuse_space += e->weight;
        sv->inuse_objects += e->weight / (double)e->size;
    }
    if (by_id->num_entries) {
        READ_SITES_FOREACH(rd, site) {
            st_data_t key = (st_data_t)site->id, v;
            if (!st_delete(by_id, &key, &v)) continue;
            struct site_values *sv = values_at(by_site, (st_data_t)site);
            sv->inuse_space += ((struct site_values *)v)->inuse_space;
            sv->inuse_objects += ((struct site_values *)v)->inuse_objects;
            free((void *)v);
        }
    }
    st_data_t key, v;
    while (st_shift(by_id, &key, &v)) {
        other->inuse_space += ((struct site_values *)v)->inuse_space;
        other->inuse_objects += ((struct site_values *)v)->inuse_objects;
        free((void *)v);
    }
    st_free_table(by_id);
}

struct site_values
read_site_values(const struct sampling_site *site, st_table *inuse)
{
    struct site_values sv = { site->alloc_space, site->alloc_objects, 0, 0, 0, site->life };
    st_data_t v;
    if (st_lookup(inuse, (st_data_t)site, &v)) {
        sv.inuse_space = ((struct site_values *)v)->inuse_space;
        sv.inuse_objects = ((struct site_values *)v)->inuse_objects;
        sv.inuse_heaptime = ((struct site_values *)v)->inuse_heaptime;
        sv.inuse_objtime = ((struct site_values *)v)->inuse_objtime;
    }
    return sv;
}

static int
free_value_i(st_data_t key, st_data_t value, st_data_t arg)
{
    free((void *)value);
    return ST_CONTINUE;
}

void
read_inuse_free(st_table *inuse)
{
    st_foreach(inuse, free_value_i, 0);
    st_free_table(inuse);
}

static const char *const type_names[] = {
    "T_NONE", "T_OBJECT", "T_CLASS", "T_MODULE", "T_FLOAT", "T_STRING", "T_REGEXP", "T_ARRAY",
    "T_HASH", "T_STRUCT", "T_BIGNUM", "T_FILE", "T_DATA", "T_MATCH", "T_COMPLEX", "T_RATIONAL",
    NULL, "T_NIL", "T_TRUE", "T_FALSE", "T_SYMBOL", "T_FIXNUM", "T_UNDEF", NULL,
    NULL, NULL, "T_IMEMO", "T_NODE", "T_ICLASS", "T_ZOMBIE", "T_MOVED", NULL,
};

const char *
read_type_name(uint16_t type)
{
    if (type == SAMPLING_TYPE_MALLOC) return "malloc";
    const char *name = type < 32 ? type_names[type] : NULL;
    return name ? name : "T_UNKNOWN";
}

VALUE
read_type_symbol(uint16_t type)
{
    return ID2SYM(rb_intern(read_type_name(type)));
}

VALUE
read_imemo_symbol(uint16_t type, uint8_t imemo_type)
{
    return type == RUBY_T_IMEMO ? ID2SYM(rb_intern(rb_imemo_name(imemo_type))) : Qnil;
}
