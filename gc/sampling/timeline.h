/*
 * timeline.h: memory over time: a small row per GC, and the live set at
 * the highest live estimate seen (the peak).
 *
 * Model.  At the end of every marking (sampling.c, after the liveness
 * walk) the records know the live sampled set and its estimate: the
 * sum of the live records' weights, slots and malloc'd blocks apart
 * (records.h, live_space[], kept by every add and end: O(1) to read).
 * sampling_timeline_gc then
 *
 *   - appends a fixed-size row (GC count, time, minor or major, the
 *     estimates, live samples, the allocation clock).  Rows are bounded:
 *     SAMPLING_TIMELINE_ROWS of them; when full, every other row goes
 *     and from then on one GC in `stride` (2, 4, ...) gets a row, so the
 *     rows always span the whole run at an even spacing;
 *   - if the estimate (slots + malloc'd bytes) is above the peak's, the
 *     peak becomes this GC: its row, and the live set now marked as the
 *     peak's in the records (records.h, struct sampling_peak_set): O(1),
 *     no copy.  The records say which of them were live then (taken
 *     before it, dead after it, if at all); a member whose record goes
 *     later leaves its site id, weight and size behind, so a reader sees
 *     the whole set.  Ids, never pointers: a site folded later (sites.h)
 *     is no longer found, and a reader shows it as <other sites>.
 *
 *          GC:   1    2    3    4    5    6
 *    estimate:  10   30   50   40   20   60
 *        peak:   1    2    3    3    3    6    (marked at 1, 2, 3, 6)
 *
 * Memory comes from malloc only (it runs inside GC): nothing here
 * allocates a Ruby object.  When memory runs out a row is skipped and
 * counted (`lost`).  No locking: the owner
 * serialises (the VM lock; readers keep GC off while they read).
 */
#ifndef SAMPLING_TIMELINE_H
#define SAMPLING_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"

struct sampling_timeline_row {
    uint64_t gc;                                /* GC.count of the collection */
    int64_t time_ns;                            /* CLOCK_MONOTONIC when its marking ended */
    double live_space[SAMPLING_LIVE_KINDS];     /* estimated live bytes: slots, malloc'd blocks */
    uint64_t clock;                             /* the allocation clock then (records.h) */
    uint32_t live_samples;                      /* live records */
    bool major;
};

static inline double
sampling_row_live(const struct sampling_timeline_row *row)
{
    return row->live_space[SAMPLING_LIVE_SLOT] + row->live_space[SAMPLING_LIVE_MALLOC];
}

/* The peak's GC (its live set is in the records: records.h). */
struct sampling_peak {
    bool taken;                             /* false: no GC seen yet */
    struct sampling_timeline_row at;
};

#define SAMPLING_TIMELINE_ROWS 4096
struct sampling_timeline {
    struct sampling_timeline_row *rows;     /* [n], oldest first; NULL until the first GC */
    size_t n;
    uint64_t stride;                        /* a row every stride-th GC seen (1, 2, 4, ...) */
    uint64_t seen;                          /* GCs seen since clear */
    uint64_t lost;                          /* rows skipped for want of memory */
    int64_t origin_ns, origin_real_ns;      /* CLOCK_MONOTONIC and CLOCK_REALTIME at its start (0: not begun) */
    struct sampling_peak peak;
};

/* Sets the origin rows' times are read from, unless it is set. */
void sampling_timeline_begin(struct sampling_timeline *t);

/* The end of a marking (after the liveness walk): a row, and the peak.
 * now: the GC count and the allocation clock of this GC. */
void sampling_timeline_gc(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now, bool major);

/* Forgets every row, the peak and the origin (clear, a forked child);
 * the records' mark of the peak's set goes with sampling_records_forget_peak. */
void sampling_timeline_clear(struct sampling_timeline *t);

#endif
