/*
 * walk_variants.h: 3.4's walk to the next sample point, variant against
 * variant, for benchmark/walk_variants only (sample_point.c includes it).
 *
 * With SAMPLING_PHASES (a SAMPLING_GC_PHASES build, phases.h),
 * SAMPLING_WALK_VARIANTS="0,3" alternates walk variants from one placement
 * to the next (per heap; or from one run of SAMPLING_WALK_BLOCK placements
 * to the next), and the report (SAMPLING_WALK_OUT, else stderr) gives per
 * variant the ticks of a walk in a take, its links, and the ticks from one
 * sample to the next of the same heap (all a variant changes, the
 * program's own work included).  A variant is a set of bits:
 *   1  the guessed walk (else the plain chase)
 *   2  the prefetch of the next walk's lines at the previous sample
 *   4  a prefetch of every slot of the next walk instead (tried, not kept)
 * The library's own is WALK_LIBRARY.  Unset, a phases build walks as the
 * library does and times nothing more (benchmark/phases).
 *
 * Without SAMPLING_PHASES every function here is a constant or does
 * nothing, and the walk is the library's.
 */
#ifndef SAMPLING_WALK_VARIANTS_H
#define SAMPLING_WALK_VARIANTS_H

#include <stdbool.h>
#include <stdint.h>

#include "phases.h"
#include "sample_point.h"

enum { WALK_LIBRARY = 3 };      /* the guessed walk and the prefetch */

#ifdef SAMPLING_PHASES
#include <stdio.h>
#include <stdlib.h>

enum { WALK_VARIANTS_MAX = 8, WALK_PERIOD_OUTLIER = 2000000 };
static int walk_variants[WALK_VARIANTS_MAX] = { WALK_LIBRARY }, walk_nvariants = 1;
static unsigned walk_block = 1;     /* placements in a row with one variant */
static bool walk_timed;             /* SAMPLING_WALK_VARIANTS given: time them */
static uint64_t walk_wrong;         /* guesses that missed */
static struct { uint64_t walk_ticks, walks, links, period_ticks, periods; } walk_stats[WALK_VARIANTS_MAX];

#define WALK_GUESS_MISSED() (walk_wrong++)

/* (fenced: the walk's loads done before the counter is read, or a walk
 * whose loads do not wait for each other would seem to end early) */
static inline uint64_t
walk_tick(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_lfence();
    uint64_t t = __builtin_ia32_rdtsc();
    __builtin_ia32_lfence();
    return t;
#else
    return sampling_phase_tick();
#endif
}

__attribute__((constructor)) static void
walk_variants_init(void)
{
    const char *b = getenv("SAMPLING_WALK_BLOCK");
    if (b && atoi(b) > 0) walk_block = (unsigned)atoi(b);
    const char *v = getenv("SAMPLING_WALK_VARIANTS");
    if (!v || !*v) return;
    walk_timed = true;
    walk_nvariants = 0;
    for (char *e; *v && walk_nvariants < WALK_VARIANTS_MAX; v = *e ? e + 1 : e) {
        walk_variants[walk_nvariants++] = (int)strtol(v, &e, 10);
    }
}

/* One JSON line: {"VARIANT":[walk ticks, walks, links, period ticks,
 * periods], ..., "wrong": guesses that missed} */
__attribute__((destructor)) static void
walk_variants_report(void)
{
    if (!walk_timed) return;
    const char *path = getenv("SAMPLING_WALK_OUT");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    FILE *out = f ? f : stderr;
    fprintf(out, "{");
    for (int i = 0; i < walk_nvariants; i++) {
        fprintf(out, "\"%d\":[%llu,%llu,%llu,%llu,%llu],", walk_variants[i],
                (unsigned long long)walk_stats[i].walk_ticks, (unsigned long long)walk_stats[i].walks,
                (unsigned long long)walk_stats[i].links, (unsigned long long)walk_stats[i].period_ticks,
                (unsigned long long)walk_stats[i].periods);
    }
    fprintf(out, "\"wrong\":%llu}\n", (unsigned long long)walk_wrong);
    if (f) fclose(f);
}

/* A cut is placed k slots down a list: the variant that walks to it (the
 * placement's turn), remembered for the take that ends it. */
static inline int
walk_variant_cut(struct sample_point *sp, uint64_t k)
{
    unsigned idx = sp->ph_placements++ / walk_block % (unsigned)walk_nvariants;
    sp->ph_cut = (uint8_t)idx;
    if (k > 1) {
        sp->ph_variant = (uint8_t)idx;
        sp->ph_links = k - 2;
    }
    return walk_variants[idx];
}

/* The variant of the next placement (its prefetch is made now). */
static inline int
walk_variant_next(const struct sample_point *sp)
{
    return walk_variants[sp->ph_placements / walk_block % (unsigned)walk_nvariants];
}

/* Variant bit 4: every slot of the next walk's first `bytes`, below `s`. */
static inline void
walk_variant_prefetch_slots(const struct sample_point *sp, const void *s, size_t slot_size, uint64_t bytes)
{
    if (!bytes || !(walk_variant_next(sp) & 4)) return;
    __asm__ volatile("");
    for (uintptr_t p = (uintptr_t)s - slot_size, end = (uintptr_t)s - bytes; p >= end; p -= slot_size)
        __builtin_prefetch((const void *)p);
}

/* A take: the time since this heap's last goes to the variant that cut
 * the point taken.  Returns the time, the walk's start. */
static inline uint64_t
walk_variant_take(struct sample_point *sp)
{
    sp->ph_variant = 0xff;
    if (!walk_timed) return 0;
    uint64_t now = walk_tick();
    if (sp->ph_last && now - sp->ph_last < WALK_PERIOD_OUTLIER) {
        walk_stats[sp->ph_cut].period_ticks += now - sp->ph_last;
        walk_stats[sp->ph_cut].periods++;
    }
    sp->ph_last = now;
    return now;
}

/* The take's walk ended (if it walked: ph_variant set by the cut). */
static inline void
walk_variant_walked(struct sample_point *sp, uint64_t t0)
{
    if (!walk_timed || sp->ph_variant == 0xff) return;
    uint64_t d = walk_tick() - t0;
    if (d >= SAMPLING_PHASE_OUTLIER) return;
    walk_stats[sp->ph_variant].walk_ticks += d;
    walk_stats[sp->ph_variant].walks++;
    walk_stats[sp->ph_variant].links += sp->ph_links;
}

#else

#define WALK_GUESS_MISSED() ((void)0)
static inline int walk_variant_cut(struct sample_point *sp, uint64_t k) { (void)sp; (void)k; return WALK_LIBRARY; }
static inline int walk_variant_next(const struct sample_point *sp) { (void)sp; return WALK_LIBRARY; }
static inline void
walk_variant_prefetch_slots(const struct sample_point *sp, const void *s, size_t slot_size, uint64_t bytes)
{
    (void)sp; (void)s; (void)slot_size; (void)bytes;
}
static inline uint64_t walk_variant_take(struct sample_point *sp) { (void)sp; return 0; }
static inline void walk_variant_walked(struct sample_point *sp, uint64_t t0) { (void)sp; (void)t0; }

#endif /* SAMPLING_PHASES */
#endif /* SAMPLING_WALK_VARIANTS_H */
