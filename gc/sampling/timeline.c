/* timeline.c: see timeline.h for the model. */
#include "timeline.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t
monotonic_ns(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0) return 0;
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void
row_append(struct sampling_timeline *t, const struct sampling_timeline_row *row)
{
    if (t->seen++ % t->stride) return;
    if (!t->rows) {
        t->rows = malloc(SAMPLING_TIMELINE_ROWS * sizeof(*t->rows));
        if (!t->rows) {
            t->lost++;
            return;
        }
    }
    if (t->n == SAMPLING_TIMELINE_ROWS) {
        /* every other row goes: the rest are the GCs seen at multiples of
         * the doubled stride (this one is one: seen was a multiple of
         * stride * ROWS) */
        for (size_t i = 0; i < SAMPLING_TIMELINE_ROWS / 2; i++) t->rows[i] = t->rows[2 * i];
        t->n = SAMPLING_TIMELINE_ROWS / 2;
        t->stride *= 2;
    }
    t->rows[t->n++] = *row;
}

void
sampling_timeline_marked(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now, bool major)
{
    if (t->pending) sampling_timeline_swept(t, r);
    t->begun = (struct sampling_timeline_row){
        .gc = now.gc,
        .time_ns = monotonic_ns(),
        .clock = now.bytes,
        .major = major,
    };
    t->pending = true;
    sampling_records_open_window(r);
}

void
sampling_timeline_swept(struct sampling_timeline *t, struct sampling_records *r)
{
    if (!t->pending) return;
    if (!t->stride) t->stride = 1;
    struct sampling_timeline_row row = t->begun;
    for (int k = 0; k < SAMPLING_LIVE_KINDS; k++) {
        row.live_space[k] = r->live_space[k] - r->young_space[k];
        if (row.live_space[k] < 0) row.live_space[k] = 0;   /* (rounding) */
    }
    row.live_samples = (uint32_t)(r->nlive - r->young_count);
    row_append(t, &row);
    struct sampling_peak *peak = &t->peak;
    if (!peak->taken || sampling_row_live(&row) > sampling_row_live(&peak->at)) {
        sampling_records_mark_peak(r);     /* (the window's start: records.h) */
        peak->at = row;
        peak->taken = true;
        double live = sampling_row_live(&row);
        __atomic_store_n(&t->peak_live_bytes, live > 0 ? (uint64_t)live : 0, __ATOMIC_RELAXED);
    }
    sampling_records_close_window(r);
    t->pending = false;
}

void
sampling_timeline_gc(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now, bool major)
{
    sampling_timeline_marked(t, r, now, major);
    sampling_timeline_swept(t, r);
}

void
sampling_timeline_begin(struct sampling_timeline *t)
{
    if (t->origin_ns) return;
    struct timespec ts;
    t->origin_ns = monotonic_ns();
    t->origin_real_ns = clock_gettime(CLOCK_REALTIME, &ts) == 0 ? (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec : 0;
}

void
sampling_timeline_clear(struct sampling_timeline *t)
{
    free(t->rows);
    memset(t, 0, sizeof(*t));
}

const char *
sampling_timeline_verify(const struct sampling_timeline *t, const struct sampling_records *r)
{
    /* rows */
    if (t->n > SAMPLING_TIMELINE_ROWS || (!t->rows && t->n)) return "timeline: more rows than it holds";
    for (size_t i = 1; i < t->n; i++) {
        const struct sampling_timeline_row *a = &t->rows[i - 1], *b = &t->rows[i];
        if (b->gc <= a->gc) return "timeline: rows' GC counts do not increase";
        if (b->time_ns < a->time_ns || b->clock < a->clock) return "timeline: a row's time or clock goes back";
    }
    if (t->pending && t->n && t->begun.gc <= t->rows[t->n - 1].gc) return "timeline: the pending row is not the newest";
    /* thinning */
    if (t->stride & (t->stride - 1)) return "timeline: stride is not a power of two";
    if (!t->stride && t->seen) return "timeline: GCs seen without a stride";
    if (t->stride && !t->lost && t->n != (t->seen + t->stride - 1) / t->stride) {
        return "timeline: rows are not the GCs seen at multiples of stride";
    }
    if (t->stride > 1 && t->n <= SAMPLING_TIMELINE_ROWS / 2) return "timeline: thinned to half or fewer rows";
    /* peak */
    const struct sampling_peak *peak = &t->peak;
    if (peak->taken != (t->seen > 0)) return "timeline: a peak without a GC, or a GC without a peak";
    if (peak->taken != r->peak.taken) return "timeline: the peak and the records' peak set disagree";
    if (!peak->taken) return NULL;
    for (size_t i = 0; i < t->n; i++) {
        if (sampling_row_live(&t->rows[i]) > sampling_row_live(&peak->at)) return "timeline: a row above the peak";
    }
    uint64_t members = r->peak.nspill + r->peak.lost;
    for (size_t i = 0; i < r->used; i++) {
        if (r->items[i].seq && sampling_record_in_peak(r, &r->items[i])) members++;
    }
    if (members != peak->at.live_samples) return "timeline: the peak's set is not whole";
    return NULL;
}
