/*
 * delta.c: a delta profile's baseline (delta.h has the model): what a
 * read of the sites saw, kept per site id, and each site's totals less
 * it.  profile.c runs it through a read; the Delta class (delta_api.c)
 * and every='s writer (periodic.c) each keep one.
 */
#include "ruby/ruby.h"

#include "config.h"
#include "delta.h"
#include "read.h"
#include "sampler.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the baseline ---- */

static struct sampling_delta_totals
totals_rounded(double space, double objects)
{
    return (struct sampling_delta_totals){ llround(space), llround(objects) };
}

static int
free_value_i(st_data_t key, st_data_t value, st_data_t arg)
{
    free((void *)value);
    return ST_CONTINUE;
}

static void
table_free(st_table *t)
{
    if (!t) return;
    st_foreach(t, free_value_i, 0);
    st_free_table(t);
}

void
sampling_delta_begin(struct sampling_delta *d)
{
    uint64_t generation = sampling_sites_generation();
    if (d->generation != generation) {
        /* totals went back to zero: so does the baseline */
        table_free(d->base);
        d->base = NULL;
        d->other = (struct sampling_delta_totals){ 0, 0 };
        d->generation = generation;
    }
    table_free(d->next);
    d->next = st_init_numtable();
    d->complete = false;
}

void
sampling_delta_site(struct sampling_delta *d, const struct sampling_site *site, struct site_values *sv)
{
    st_data_t found;
    struct sampling_delta_totals *now = malloc(sizeof(*now));
    if (!now) rb_memerror();
    *now = totals_rounded(sv->alloc_space, sv->alloc_objects);
    st_insert(d->next, (st_data_t)site->id, (st_data_t)now);
    struct sampling_delta_totals then = { 0, 0 };
    if (d->base && st_lookup(d->base, (st_data_t)site->id, &found)) then = *(const struct sampling_delta_totals *)found;
    sv->alloc_space = (double)(now->space - then.space);
    sv->alloc_objects = (double)(now->objects - then.objects);
}

struct missing {
    st_table *next;
    struct sampling_delta_totals sum;
};

static int
missing_i(st_data_t key, st_data_t value, st_data_t arg)
{
    struct missing *m = (struct missing *)arg;
    if (!st_lookup(m->next, key, NULL)) {
        m->sum.space += ((const struct sampling_delta_totals *)value)->space;
        m->sum.objects += ((const struct sampling_delta_totals *)value)->objects;
    }
    return ST_CONTINUE;
}

bool
sampling_delta_other(struct sampling_delta *d, struct site_values *sv)
{
    /* sites gone since the baseline were folded: their totals are in
     * other_* now, and their baseline comes off it */
    struct missing m = { d->next, { 0, 0 } };
    if (d->base) st_foreach(d->base, missing_i, (st_data_t)&m);
    struct sampling_delta_totals now = totals_rounded(sv->alloc_space, sv->alloc_objects);
    sv->alloc_space = (double)(now.space - d->other.space - m.sum.space);
    sv->alloc_objects = (double)(now.objects - d->other.objects - m.sum.objects);
    d->other = now;
    d->complete = true;
    return sv->alloc_space != 0 || sv->alloc_objects != 0;
}

void
sampling_delta_end(struct sampling_delta *d)
{
    if (d->complete) {
        table_free(d->base);
        d->base = d->next;
    }
    else {
        table_free(d->next);
    }
    d->next = NULL;
}

void
sampling_delta_release(struct sampling_delta *d)
{
    table_free(d->base);
    table_free(d->next);
    d->base = d->next = NULL;
}

size_t
sampling_delta_memsize(const struct sampling_delta *d)
{
    return d->base ? st_memsize(d->base) + d->base->num_entries * sizeof(struct sampling_delta_totals) : 0;
}
