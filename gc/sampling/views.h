/*
 * views.h: what the pprof views of the records share (views.c): a
 * site's pprof location ids and class name (read_site's conversion: arg
 * is the struct pprof; free with sampling_pprof_free_ids), a location of
 * its own name, a label set as pprof labels, and the comments every view
 * starts with (inside a read).
 */
#ifndef SAMPLING_VIEWS_H
#define SAMPLING_VIEWS_H

#include "ruby/ruby.h"
#include "ruby/st.h"

struct pprof;
struct pprof_label;
struct sampling_names;
struct sampling_site_ids {
    uint64_t klass;
    uint32_t n;
    uint64_t ids[];
};
st_data_t sampling_pprof_site_ids(const struct sampling_names *names, void *pprof);
void sampling_pprof_free_ids(st_data_t ids);
uint64_t sampling_pprof_synthetic_location(struct pprof *p, const char *name);
size_t sampling_pprof_set_labels(struct pprof *p, uint32_t id, struct pprof_label *out);
void sampling_pprof_header_comments(struct pprof *p, const char *view);

#endif
