/*
 * views.c: what every pprof view of the records shares (profile.c's
 * allocations and peak, retention_view.c's retention): a site's
 * location ids and class name, its label set as labels, and the comments
 * every view starts with.  Neither view calls the other for them.
 */
#include "ruby/ruby.h"

#include "config.h"
#include "labels_fiber.h"
#include "pprof.h"
#include "read.h"
#include "sampler.h"
#include "views.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t
name_index(struct pprof *p, const char *s, uint32_t len)
{
    return s ? pprof_string(p, s, len) : 0;
}

/* A site's location ids, innermost first, and its class name's index:
 * struct sampling_site_ids (views.h). */
void
sampling_pprof_free_ids(st_data_t value)
{
    free((void *)value);
}

/* A location of its own name (<unknown>, <other sites>). */
uint64_t
sampling_pprof_synthetic_location(struct pprof *p, const char *name)
{
    uint64_t s = pprof_cstring(p, name);
    return pprof_location(p, pprof_function(p, s, s), 0);
}

st_data_t
sampling_pprof_site_ids(const struct sampling_names *names, void *arg)
{
    struct pprof *p = arg;
    uint32_t n = names->n ? names->n : 1;
    struct sampling_site_ids *s = malloc(sizeof(*s) + n * sizeof(s->ids[0]));
    if (!s) rb_memerror();
    s->n = n;
    s->klass = names->klass ? pprof_cstring(p, names->klass) : 0;
    if (!names->n) s->ids[0] = sampling_pprof_synthetic_location(p, "<unknown>");
    for (uint32_t i = 0; i < names->n; i++) {
        const struct sampling_name *nm = &names->locs[i];
        uint64_t function = pprof_function(p, name_index(p, nm->label, nm->labellen), name_index(p, nm->path, nm->pathlen));
        s->ids[i] = pprof_location(p, function, nm->lineno);
    }
    return (st_data_t)s;
}

/* A site's label set as pprof string labels (labels.h); returns how
 * many it wrote to out (at most SAMPLING_LABELS_PAIRS). */
size_t
sampling_pprof_set_labels(struct pprof *p, uint32_t id, struct pprof_label *out)
{
    const struct sampling_label_set *set = sampling_labels_set(id);
    if (!set) return 0;
    const char *k = set->text;
    for (uint32_t i = 0; i < set->npairs; i++) {
        const char *v = k + strlen(k) + 1;
        out[i] = (struct pprof_label){ pprof_cstring(p, k), pprof_cstring(p, v) };
        k = v + strlen(v) + 1;
    }
    return set->npairs;
}

/* The comments every view starts with (settings, the view; records
 * gone), and the time; inside a read. */
void
sampling_pprof_header_comments(struct pprof *p, const char *view)
{
    const struct sampling_params *params = sampler_params();
    const struct sampling_records *r = sampler_records();
    char comment[256];
    snprintf(comment, sizeof(comment), "sampling GC: mode=%s interval=%llu depth=%u view=%s",
             sampling_mode_name(params->mode),
             (unsigned long long)params->interval, params->depth, view);
    pprof_comment(p, comment);
    if (r->evicted || r->dropped || r->sites.folded) {
        /* totals stay exact; in-use covers the records kept */
        snprintf(comment, sizeof(comment), "records evicted: %llu, dropped: %llu; sites folded into "
                 READ_OTHER_SITES ": %llu (alloc totals are exact; inuse covers the records kept)",
                 (unsigned long long)r->evicted, (unsigned long long)r->dropped, (unsigned long long)r->sites.folded);
        pprof_comment(p, comment);
    }
    /* what the profiler itself holds, as stats[:profiler_memory] says */
    size_t parts[SAMPLER_MEMORY_PARTS];
    size_t total = sampler_memory(parts);
    int at = snprintf(comment, sizeof(comment), "profiler memory: %zu bytes (", total);
    for (int i = 0; i < SAMPLER_MEMORY_PARTS && at > 0 && (size_t)at < sizeof(comment); i++) {
        at += snprintf(comment + at, sizeof(comment) - (size_t)at, "%s%s %zu", i ? ", " : "", sampler_memory_names[i], parts[i]);
    }
    if (at > 0 && (size_t)at < sizeof(comment)) snprintf(comment + at, sizeof(comment) - (size_t)at, ")");
    pprof_comment(p, comment);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    pprof_time(p, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec, 0);
}
