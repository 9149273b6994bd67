/*
 * delta.h: delta profiles: allocations since a reader's previous read.
 *
 * Model.  Sites keep cumulative totals (sites.h).  A delta holds, per
 * site id, the totals its last read saw, rounded as a profile shows them
 * (its baseline); a read shows each site's rounded totals minus its
 * baseline and makes what it saw the new one.
 * A site folded into <other sites> since (its totals moved there) is
 * missing from the read: its baseline is taken off <other sites>.  So the
 * deltas of consecutive reads add up, site by site and in total, to the
 * totals between the first and the last, exactly as the whole profile
 * rounds them (in both modes, while no site is folded); in-use
 * values are never deltas (a snapshot, as Go's allocs?seconds=N).
 *
 *   read 1 ---- read 2 ---- read 3        totals(3) - totals(1) =
 *          d2          d3                 d2 + d3
 *
 * Totals that went back to zero (clear, a fork: sampling_sites_generation
 * moved) void the baseline: the next delta counts from there.
 *
 * A read is one pass of read.h (VM lock held, GC off) in which each site
 * is seen once: begin, then site() for each, then other(), then end
 * (which keeps the new baseline, or drops it if the pass failed).
 *
 * RUBY_GC_SAMPLING's every= reads one delta every N seconds: periodic.h
 * has its model (the native thread, the build, the write).
 */
#ifndef SAMPLING_DELTA_H
#define SAMPLING_DELTA_H

#include "ruby/ruby.h"
#include "ruby/st.h"
#include "read.h"

/* A site's alloc totals as a read showed them: rounded, as a profile
 * shows them, so that a delta is the difference of two rounded totals
 * and consecutive deltas add up exactly to the rounded whole (rounding
 * each delta again drifts by up to half an object a read). */
struct sampling_delta_totals {
    int64_t space, objects;
};

struct sampling_delta {
    st_table *base;         /* site id -> struct sampling_delta_totals (malloc'd), NULL: empty */
    st_table *next;         /* being built by the read in progress */
    struct sampling_delta_totals other;     /* <other sites> */
    uint64_t generation;
    bool complete;          /* the read in progress got to other() */
};

void sampling_delta_begin(struct sampling_delta *d);
/* sv holds the site's totals now; leaves the delta in it. */
void sampling_delta_site(struct sampling_delta *d, const struct sampling_site *site, struct site_values *sv);
/* Same for <other sites>; returns whether the delta holds anything. */
bool sampling_delta_other(struct sampling_delta *d, struct site_values *sv);
void sampling_delta_end(struct sampling_delta *d);
/* Frees the baseline's tables (not d); the bytes they hold. */
void sampling_delta_release(struct sampling_delta *d);
size_t sampling_delta_memsize(const struct sampling_delta *d);

#endif
