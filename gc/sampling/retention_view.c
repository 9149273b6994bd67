/*
 * retention_view.c: the retention outputs made of shown paths, not of
 * Samples: the pprof view (write_pprof(dest, view: :retention),
 * pprof(view: :retention): the in-use samples with their path as the
 * stack, root at the bottom, the allocation's frames on top) and the
 * rows of report.rb's retention_report.  Both show at most
 * RETENTION_SHOWN hops a path (retention_paths.c).
 */
#include "ruby/ruby.h"
#include "ruby/st.h"

#include "retention_view.h"
#include "addresses.h"
#include "labels.h"
#include "pprof.h"
#include "read.h"
#include "retention.h"
#include "retention_paths.h"
#include "retention_read.h"
#include "sampler.h"
#include "views.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- the pprof view ---- */

/* One in-use sample of the view before merging: its path's last node (or
 * a marker), its site. */
struct view_entry {
    uint32_t node;              /* RETENTION_NONE: no path (cut or unreachable) */
    uint64_t obj_hop;           /* no path: the location of the object's own hop */
    const struct sampling_site *site;
    uint64_t marker;            /* location id of the cut / unreachable / object hops */
    double space, objects;
};

static int
view_entry_cmp(const void *a, const void *b)
{
    const struct view_entry *x = a, *y = b;
    if (x->node != y->node) return x->node < y->node ? -1 : 1;
    if (x->marker != y->marker) return x->marker < y->marker ? -1 : 1;
    if (x->site != y->site) return (uintptr_t)x->site < (uintptr_t)y->site ? -1 : 1;
    return 0;
}

struct pprof_view {
    struct rview rv;
    struct pprof *p;
    st_table *locations;        /* hop Hash -> location id */
    struct view_entry *entries;
    uint8_t *bytes;
    size_t len;
};

static uint64_t
hop_location(struct pprof_view *v, VALUE hop)
{
    st_data_t id;
    if (st_lookup(v->locations, (st_data_t)hop, &id)) return id;
    VALUE label = rpaths_hop_label(hop);
    uint64_t name = pprof_string(v->p, RSTRING_PTR(label), (size_t)RSTRING_LEN(label));
    id = pprof_location(v->p, pprof_function(v->p, name, pprof_cstring(v->p, "(retention)")), 0);
    st_insert(v->locations, (st_data_t)hop, id);
    return id;
}

static VALUE
pprof_view_body(VALUE arg)
{
    struct pprof_view *v = (struct pprof_view *)arg;
    struct rview *rv = &v->rv;
    struct pprof *p = v->p;
    pprof_sample_type(p, "inuse_objects", "count");
    pprof_sample_type(p, "inuse_space", "bytes");
    pprof_period(p, "space", "bytes", (int64_t)sampler_params()->interval);
    pprof_default_sample_type(p, "inuse_space");
    rview_walk(rv);
    struct rpaths *paths = rv->paths;
    sampling_pprof_header_comments(p, "retention");
    char comment[320];
    snprintf(comment, sizeof(comment), "retention: stack = shortest path from a GC root (bottom) to the sampled object, "
             "then its allocation frames; through a cache (label retention=cache) only where no other path reaches it; "
             "%zu objects walked%s", paths->walked,
             paths->cut ? " (cut at the cap: paths of samples not reached end in <cut>)" : "");
    pprof_comment(p, comment);

    size_t n = 0, cap = 1024;
    v->entries = malloc(cap * sizeof(*v->entries));
    if (!v->entries) rb_memerror();
    VALUE keep = rb_ary_new();
    LIVE_TARGETS_FOREACH(rv, i, obj) {
        const struct sampling_record *rec = read_record(&rv->read, i);
        struct view_entry e = { retention_target_node(&paths->walk, (uintptr_t)obj), 0, rec->site, 0,
                                rec->weight, rec->weight / (double)sampling_record_size(rec) };
        if (e.node == RETENTION_NONE) {
            /* no path: the marker and the object's own hop as two locations (merged by class) */
            VALUE path = rpaths_no_path(paths, obj);
            rb_ary_push(keep, path);
            e.marker = hop_location(v, RARRAY_AREF(path, 0));
            e.obj_hop = hop_location(v, RARRAY_AREF(path, 1));
        }
        if (n == cap) {
            struct view_entry *grown = realloc(v->entries, (cap *= 2) * sizeof(*grown));
            if (!grown) rb_memerror();
            v->entries = grown;
        }
        v->entries[n++] = e;
    }
    qsort(v->entries, n, sizeof(*v->entries), view_entry_cmp);

    uint64_t key_class = pprof_cstring(p, "class"), key_type = pprof_cstring(p, "type");
    uint64_t key_memory = pprof_cstring(p, "memory"), key_retention = pprof_cstring(p, "retention");
    uint64_t *locs = malloc((RETENTION_SHOWN + 2 + 4096 + 1) * sizeof(*locs));
    if (!locs) rb_memerror();
    for (size_t i = 0; i < n;) {
        struct view_entry e = v->entries[i];
        size_t j = i;
        for (; j < n && view_entry_cmp(&v->entries[j], &e) == 0; j++) {
            if (j > i) {
                e.space += v->entries[j].space;
                e.objects += v->entries[j].objects;
            }
        }
        i = j;
        const struct sampling_site_ids *ids = (const struct sampling_site_ids *)read_site(&rv->read, e.site,
                                                                                            sampling_pprof_site_ids, p);
        size_t nl = 0;
        for (uint32_t k = 0; k < ids->n && k < 4096; k++) locs[nl++] = ids->ids[k];
        const char *state;
        if (e.node != RETENTION_NONE) {
            VALUE path = rpaths_node_path(paths, e.node, RETENTION_SHOWN);
            for (long k = RARRAY_LEN(path) - 1; k >= 0; k--) locs[nl++] = hop_location(v, RARRAY_AREF(path, k));
            state = retention_via_cache(&paths->walk, e.node) ? "cache" : "path";
        }
        else {
            locs[nl++] = e.obj_hop;
            locs[nl++] = e.marker;
            state = paths->cut ? "cut" : "unreachable";
        }
        struct pprof_label labels[4 + SAMPLING_LABELS_PAIRS];
        size_t nlabels = 0;
        labels[nlabels++] = (struct pprof_label){ key_type, pprof_cstring(p, read_type_name(e.site->kind.type)) };
        labels[nlabels++] = (struct pprof_label){ key_memory, pprof_cstring(p, "slot") };
        labels[nlabels++] = (struct pprof_label){ key_retention, pprof_cstring(p, state) };
        if (ids->klass) labels[nlabels++] = (struct pprof_label){ key_class, ids->klass };
        nlabels += sampling_pprof_set_labels(p, e.site->labels, labels + nlabels);
        int64_t values[2] = { llround(e.objects), llround(e.space) };
        if (values[0] || values[1]) pprof_sample(p, locs, nl, values, 2, labels, nlabels);
    }
    free(locs);
    RB_GC_GUARD(keep);
    if (!pprof_finish(p, true, &v->bytes, &v->len)) rb_memerror();
    rpaths_release(paths);
    return Qnil;
}

static VALUE
pprof_view_ensure(VALUE arg)
{
    struct pprof_view *v = (struct pprof_view *)arg;
    st_free_table(v->locations);
    free(v->entries);
    pprof_free(v->p);
    return Qnil;
}

VALUE
sampling_retention_pprof_bytes(size_t max_objects)
{
    struct pprof *p = pprof_new(sampling_addresses_process());
    if (!p) rb_memerror();
    struct pprof_view v = { { READ_INIT, max_objects }, p, st_init_numtable(), NULL, NULL, 0 };
    v.rv.free_converted = sampling_pprof_free_ids;
    rview_run(&v.rv, pprof_view_body, (VALUE)&v, pprof_view_ensure);
    VALUE str = rb_str_new((const char *)v.bytes, (long)v.len);
    free(v.bytes);
    return str;
}

/* ---- rows for retention_report (report.rb) ---- */

static st_data_t
site_text_convert(const struct sampling_names *names, void *arg)
{
    const struct sampling_name *nm = names->n ? &names->locs[0] : NULL;
    VALUE where = nm ? rb_sprintf("%.*s:%d (%.*s)", (int)(nm->path ? nm->pathlen : 1), nm->path ? nm->path : "?", nm->lineno,
                                  (int)nm->labellen, nm->label)
                     : rb_str_new_cstr("?");
    return (st_data_t)rb_ary_new_from_args(2, names->klass ? rb_str_new_cstr(names->klass) : Qnil, where);
}

/* [path (shown), weight, [class name, "file:line (label)"]] */
static VALUE
report_row(struct rview *rv, size_t i, VALUE obj, uint32_t node)
{
    VALUE path = node == RETENTION_NONE ? rpaths_no_path(rv->paths, obj)
                                        : rpaths_node_path(rv->paths, node, RETENTION_SHOWN);
    double weight = read_record(&rv->read, i)->weight;
    VALUE where = (VALUE)read_site(&rv->read, read_record(&rv->read, i)->site, site_text_convert, NULL);
    return rb_ary_new_from_args(3, path, DBL2NUM(weight), where);
}

static VALUE
rows_body(VALUE arg)
{
    struct all_paths *a = (struct all_paths *)arg;
    a->result = rview_rows(&a->rv, report_row);
    rpaths_release(a->rv.paths);
    return a->result;
}

VALUE
sampling_retention_rows(size_t max_objects)
{
    struct all_paths a = { { READ_INIT, max_objects }, Qnil };
    rview_run(&a.rv, rows_body, (VALUE)&a, NULL);
    return a.result;
}
