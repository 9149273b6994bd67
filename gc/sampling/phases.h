/*
 * phases.h: wall-clock time of the sampler's own phases, for
 * benchmark/phases only.
 *
 * Callgrind counts instructions and simulated misses; what a user feels
 * is time.  With SAMPLING_PHASES defined (extconf.rb, when the library is
 * built with SAMPLING_GC_PHASES=1, as benchmark/phases does under another
 * library name), each phase below adds its elapsed time-stamp counter
 * ticks and one to its count, and the totals are written when the process
 * ends.  Without it every macro is empty: the library the user loads
 * contains none of this.
 *
 * The phases (TAKE holds WALK, CAPTURE and RECORD; the others stand
 * alone):
 *   TAKE     a sample, from the cache miss (4.0: the count's limit) to the
 *            slot handed back
 *   WALK     the walk down the free list to the next point, in TAKE (3.4;
 *            4.0 has none)
 *   CAPTURE  the stack: compare with a recent site, or capture
 *   RECORD   the site and the record
 *   PAGE     a point placed on a new page's list (a walk of its own; 3.4)
 *   MARKS    the end of marking: sampled objects found dead, the timeline
 *   CLOCK    nothing: a start and an end right after each TAKE, what one
 *            phase's two counter reads cost (TAKE holds three such pairs)
 * and a malloc sample's (malloc.c; MSAMPLE holds MCAPTURE and MRECORD):
 *   MSAMPLE  a malloc sample once its count found a point: the stack,
 *            the record (the count and the allocation are not in it)
 *   MCAPTURE its stack
 *   MRECORD  under malloc_lock: the table of blocks, the record (or the
 *            queue), and the queue applied
 *   MFREE    the free of a block the filter said may be sampled: the
 *            table, the record's end
 *
 * Ticks are the x86 time-stamp counter (rdtsc, a few nanoseconds a read),
 * or CLOCK_MONOTONIC's nanoseconds elsewhere; the report gives the
 * counter's rate, measured against CLOCK_MONOTONIC between the first
 * phase and the end.  A phase but MARKS that takes more than
 * SAMPLING_PHASE_OUTLIER ticks (50 us at 4 GHz) was descheduled or
 * interrupted: it is counted apart ("outliers"), so one time slice lost
 * to another process does not move the averages.
 */
#ifndef SAMPLING_PHASES_H
#define SAMPLING_PHASES_H

enum sampling_phase {
    SAMPLING_PHASE_TAKE,
    SAMPLING_PHASE_WALK,
    SAMPLING_PHASE_CAPTURE,
    SAMPLING_PHASE_RECORD,
    SAMPLING_PHASE_PAGE,
    SAMPLING_PHASE_MARKS,
    SAMPLING_PHASE_CLOCK,
    SAMPLING_PHASE_MSAMPLE,
    SAMPLING_PHASE_MCAPTURE,
    SAMPLING_PHASE_MRECORD,
    SAMPLING_PHASE_MFREE,
    SAMPLING_PHASE_COUNT
};

#ifdef SAMPLING_PHASES
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static const char *const sampling_phase_names[SAMPLING_PHASE_COUNT] = {
    "take", "walk", "capture", "record", "page", "marks", "clock",
    "msample", "mcapture", "mrecord", "mfree",
};

#define SAMPLING_PHASE_OUTLIER 200000

static struct {
    uint64_t ticks[SAMPLING_PHASE_COUNT], count[SAMPLING_PHASE_COUNT], outliers;
    uint64_t tick0, ns0;    /* the first reading, against CLOCK_MONOTONIC */
} sampling_phases;

static inline uint64_t
sampling_phase_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t
sampling_phase_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __builtin_ia32_rdtsc();
#else
    return sampling_phase_ns();
#endif
}

static inline uint64_t
sampling_phase_start(void)
{
    if (!sampling_phases.ns0) {
        sampling_phases.ns0 = sampling_phase_ns();
        sampling_phases.tick0 = sampling_phase_tick();
    }
    return sampling_phase_tick();
}

static inline void
sampling_phase_end(enum sampling_phase phase, uint64_t t0)
{
    uint64_t d = sampling_phase_tick() - t0;
    if (d > SAMPLING_PHASE_OUTLIER && phase != SAMPLING_PHASE_MARKS) {
        sampling_phases.outliers++;
        return;
    }
    sampling_phases.ticks[phase] += d;
    sampling_phases.count[phase]++;
}

/* One JSON line, to $SAMPLING_GC_PHASES_OUT (appended) or stderr. */
__attribute__((destructor)) static void
sampling_phases_report(void)
{
    if (!sampling_phases.ns0) return;
    double ns = (double)(sampling_phase_ns() - sampling_phases.ns0);
    double ticks = (double)(sampling_phase_tick() - sampling_phases.tick0);
    const char *path = getenv("SAMPLING_GC_PHASES_OUT");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    FILE *out = f ? f : stderr;
    fprintf(out, "{\"ns_per_tick\":%.6f", ticks > 0 ? ns / ticks : 0.0);
    for (int i = 0; i < SAMPLING_PHASE_COUNT; i++) {
        fprintf(out, ",\"%s\":[%llu,%llu]", sampling_phase_names[i],
                (unsigned long long)sampling_phases.ticks[i], (unsigned long long)sampling_phases.count[i]);
    }
    fprintf(out, ",\"outliers\":%llu}\n", (unsigned long long)sampling_phases.outliers);
    if (f) fclose(f);
}

# define SAMPLING_PHASE_START(t) uint64_t t = sampling_phase_start()
# define SAMPLING_PHASE_END(phase, t) sampling_phase_end((phase), (t))
#else
# define SAMPLING_PHASE_START(t) ((void)0)
# define SAMPLING_PHASE_END(phase, t) ((void)0)
#endif

#endif /* SAMPLING_PHASES_H */
