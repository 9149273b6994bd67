/*
 * timeline.h: memory over time: a small row per GC, and the live set at
 * the highest live estimate seen (the peak).
 *
 * Model.  At the end of every marking (sampling.c, after the liveness
 * walk) the records know the live sampled set and its estimate: the
 * sum of the live records' weights, slots and malloc'd blocks apart
 * (records.h, live_space[], kept by every add and end: O(1) to read).
 * But a dead object's malloc'd buffer is freed only when the sweep
 * reaches it: at the end of marking the blocks of garbage still count.
 * So a row is begun there (sampling_timeline_marked: its GC, time and
 * clock, and a window opened in the records) and finished when the
 * sweep ends (sampling_timeline_swept): the live estimate of the
 * records live at the marking's end that are still live, the records
 * taken meanwhile (young, records.h) left out.  Every buffer the marking
 * found dead is freed by then (and any the program freed meanwhile).
 * A reader finishes a pending sweep first.  sampling_timeline_swept then
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
 * Invariants (sampling_timeline_verify, with the records):
 *   rows: n <= SAMPLING_TIMELINE_ROWS; GC counts strictly increase, times
 *   and allocation clocks never decrease; a pending row's GC is newer
 *   than the newest row's
 *   thinning: stride is a power of two; with no row lost, the rows are
 *   the GCs seen at multiples of stride (n == ceil(seen / stride)); once
 *   thinned, more than half of the rows are kept
 *   peak: taken iff a GC was seen, and iff the records' peak set is; its
 *   estimate is at least every row's; its set is whole: the members
 *   still in the records, those spilled and those lost are its live
 *   samples
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
    uint64_t peak_live_bytes;               /* the peak's estimate, for a thread without the VM lock (atomic
                                             * loads: periodic.c's grow=); 0 before the first GC */
    bool pending;                           /* a row begun at a marking, its sweep not over */
    struct sampling_timeline_row begun;     /* that row: gc, time, clock, major */
};

/* Sets the origin rows' times are read from, unless it is set. */
void sampling_timeline_begin(struct sampling_timeline *t);

/* The end of a marking (after the liveness walk): a row begun (a row
 * still pending is finished first), and the records' window opened.
 * now: the GC count and the allocation clock of this GC. */
void sampling_timeline_marked(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now,
                              bool major);

/* The end of its sweep: the row pending (if any) finished, and the peak;
 * the window closed. */
void sampling_timeline_swept(struct sampling_timeline *t, struct sampling_records *r);

/* Both at once (a marking whose sweep frees nothing the records hold). */
void sampling_timeline_gc(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now, bool major);

/* Forgets every row, the peak and the origin (clear, a forked child);
 * the records' mark of the peak's set goes with sampling_records_forget_peak. */
void sampling_timeline_clear(struct sampling_timeline *t);

/* Checks the invariants above against the records they were taken
 * from; NULL or a message.  O(rows + records): for --enable-checks
 * (sampling.c, after each marking and sweep) and the tests. */
const char *sampling_timeline_verify(const struct sampling_timeline *t, const struct sampling_records *r);

/* Bytes the rows hold: allocated whole at the first GC, never more
 * (thinning keeps at most SAMPLING_TIMELINE_ROWS). */
static inline size_t
sampling_timeline_memsize(const struct sampling_timeline *t)
{
    return t->rows ? SAMPLING_TIMELINE_ROWS * sizeof(*t->rows) : 0;
}

#endif
