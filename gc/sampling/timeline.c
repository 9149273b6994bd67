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
sampling_timeline_gc(struct sampling_timeline *t, struct sampling_records *r, struct sampling_now now, bool major)
{
    if (!t->stride) t->stride = 1;
    struct sampling_timeline_row row = {
        .gc = now.gc,
        .time_ns = monotonic_ns(),
        .live_space = { r->live_space[SAMPLING_LIVE_SLOT], r->live_space[SAMPLING_LIVE_MALLOC] },
        .clock = now.bytes,
        .live_samples = (uint32_t)r->nlive,
        .major = major,
    };
    row_append(t, &row);
    struct sampling_peak *peak = &t->peak;
    if (peak->taken && sampling_row_live(&row) <= sampling_row_live(&peak->at)) return;
    sampling_records_mark_peak(r);
    peak->at = row;
    peak->taken = true;
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
