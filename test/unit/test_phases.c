/*
 * test_phases.c: phases.h as benchmark/phases builds it (SAMPLING_PHASES
 * defined): a phase adds its ticks and one to its count, a phase that ran
 * past the outlier bound is counted apart (but MARKS never is), and the
 * report is one JSON line with the counter's rate and every phase.
 */
// links:
#define SAMPLING_PHASES 1
#include "check.h"
#include "phases.h"

#include <string.h>
#include <unistd.h>

static volatile uint64_t sink;

static void
work(void)
{
    for (int i = 0; i < 1000; i++) sink += (uint64_t)i * 7;   /* well under the outlier bound */
}

int
main(void)
{
    /* one phase: ticks and a count */
    SAMPLING_PHASE_START(t0);
    work();
    SAMPLING_PHASE_END(SAMPLING_PHASE_WALK, t0);
    CHECK(sampling_phases.count[SAMPLING_PHASE_WALK] == 1, "count %llu",
          (unsigned long long)sampling_phases.count[SAMPLING_PHASE_WALK]);
    CHECK(sampling_phases.ticks[SAMPLING_PHASE_WALK] > 0, "no ticks");
    CHECK(sampling_phases.count[SAMPLING_PHASE_TAKE] == 0, "another phase moved");

    /* a phase that started long ago (descheduled): apart, not added */
    uint64_t walk_ticks = sampling_phases.ticks[SAMPLING_PHASE_WALK];
    sampling_phase_end(SAMPLING_PHASE_WALK, sampling_phase_tick() - 2 * SAMPLING_PHASE_OUTLIER);
    CHECK(sampling_phases.outliers == 1, "outliers %llu", (unsigned long long)sampling_phases.outliers);
    CHECK(sampling_phases.count[SAMPLING_PHASE_WALK] == 1, "an outlier was counted");
    CHECK(sampling_phases.ticks[SAMPLING_PHASE_WALK] == walk_ticks, "an outlier's ticks were added");

    /* the end of marking is long by nature: always added */
    sampling_phase_end(SAMPLING_PHASE_MARKS, sampling_phase_tick() - 2 * SAMPLING_PHASE_OUTLIER);
    CHECK(sampling_phases.count[SAMPLING_PHASE_MARKS] == 1 && sampling_phases.outliers == 1, "marks left out");
    CHECK(sampling_phases.ticks[SAMPLING_PHASE_MARKS] >= 2 * SAMPLING_PHASE_OUTLIER, "marks ticks %llu",
          (unsigned long long)sampling_phases.ticks[SAMPLING_PHASE_MARKS]);

    /* the report: one line, to the file named in the environment */
    usleep(2000);   /* so that the rate is measured over more than a tick */
    char path[] = "/tmp/test_phases.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0, "mkstemp");
    close(fd);
    setenv("SAMPLING_GC_PHASES_OUT", path, 1);
    sampling_phases_report();
    FILE *f = fopen(path, "r");
    char line[1024] = "";
    CHECK(f && fgets(line, sizeof(line), f), "no report");
    char extra[16];
    CHECK(f && !fgets(extra, sizeof(extra), f), "more than one line");
    if (f) fclose(f);
    unlink(path);
    double rate = 0;
    CHECK(sscanf(line, "{\"ns_per_tick\":%lf", &rate) == 1 && rate > 0, "rate in: %s", line);
    for (int i = 0; i < SAMPLING_PHASE_COUNT; i++) {
        char key[32];
        snprintf(key, sizeof(key), "\"%s\":[", sampling_phase_names[i]);
        CHECK(strstr(line, key) != NULL, "%s missing in: %s", key, line);
    }
    const char *walk = strstr(line, "\"walk\":[");
    unsigned long long wt = 0, wc = 0;
    CHECK(walk && sscanf(walk, "\"walk\":[%llu,%llu]", &wt, &wc) == 2 && wt == walk_ticks && wc == 1,
          "walk in: %s", line);
    CHECK(strstr(line, "\"outliers\":1}\n") != NULL, "outliers in: %s", line);

    /* nothing more at exit */
    sampling_phases.ns0 = 0;
    unsetenv("SAMPLING_GC_PHASES_OUT");
    return check_summary();
}
