/* watch.c: see watch.h. */
#include "watch.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

void
sampling_watch_close(struct sampling_watch *w)
{
    if (w->ml_open) memlimit_close(&w->ml);
    w->ml_open = false;
}

void
sampling_watch_open(struct sampling_watch *w, const struct sampling_params *settings)
{
    char err[256];
    sampling_watch_close(w);
    w->settings = *settings;
    w->armed = true;
    w->high = 0;
    w->files = 0;
    w->poll_ns = WATCH_POLL_MIN_NS;
    w->polls = 0;
    w->limit_seen = false;
    if (settings->limit == SAMPLING_LIMIT_NONE) return;
    bool automatic = settings->limit == SAMPLING_LIMIT_AUTO;
    w->ml_open = automatic ? memlimit_open_cgroup(&w->ml, "/proc/self/cgroup", "/proc/self/mountinfo", err, sizeof(err))
                           : memlimit_open_rss(&w->ml, settings->limit_bytes, "/proc/self/statm", err, sizeof(err));
    if (!w->ml_open) {
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: limit=%s cannot be watched (%s); no profile is written "
                "before a limit\n", automatic ? "auto" : "SIZE", err);
        return;
    }
}

/* The crossing's reason, with the wall-clock time it was seen (docs/oom.md
 * measures the time from it to the file). */
static void
limit_why(const struct sampling_watch *w, const struct memlimit_reading *r, uint64_t usage, uint64_t live_high, char *why,
          size_t whylen)
{
    struct timespec seen;
    clock_gettime(CLOCK_REALTIME, &seen);
    bool rss = w->ml.kind == MEMLIMIT_RSS;
    snprintf(why, whylen, "before the limit: %s %llu bytes of %llu (%.0f%%, limit_at=%g) in %s, seen at %lld.%06ld; "
             "the peak so far: %llu bytes estimated live", rss ? "RSS" : "working set", (unsigned long long)usage,
             (unsigned long long)r->limit, 100.0 * (double)usage / (double)r->limit, w->settings.limit_at / 1e6,
             rss ? "this process" : w->ml.levels[r->level].dir, (long long)seen.tv_sec, seen.tv_nsec / 1000,
             (unsigned long long)live_high);
}

bool
sampling_watch_poll(struct sampling_watch *w, uint64_t live_high, char *why, size_t whylen)
{
    const struct sampling_params *s = &w->settings;
    w->poll_ns = WATCH_POLL_MAX_NS;
    if (w->files >= s->max_files) return false;
    struct memlimit_reading r;
    if (w->ml_open && w->ml.polls % MEMLIMIT_LIMIT_EVERY == MEMLIMIT_LIMIT_EVERY - 1 &&
        memlimit_moved(&w->ml, "/proc/self/cgroup")) {
        /* moved to another cgroup: watch that one (the crossing state stays) */
        char err[256];
        memlimit_close(&w->ml);
        w->ml_open = memlimit_open_cgroup(&w->ml, "/proc/self/cgroup", "/proc/self/mountinfo", err, sizeof(err));
    }
    bool read = w->ml_open && memlimit_read(&w->ml, &r);
    w->limit_seen |= read;
    if (w->ml_open && !w->limit_seen && ++w->polls == WATCH_NO_LIMIT_POLLS) {
        /* (it may get one later: limits are read again while watched) */
        fprintf(stderr, "ruby: warning: RUBY_GC_SAMPLING: limit=auto: the memory cgroup %s and its parents have no "
                "limit (yet)\n", w->ml.levels[0].dir);
    }
    if (read) {
        uint64_t threshold = memlimit_threshold(r.limit, s->limit_at);
        uint64_t headroom_ns = r.usage < threshold ? (threshold - r.usage) / WATCH_RATE : 0;
        w->poll_ns = headroom_ns < WATCH_POLL_MIN_NS ? WATCH_POLL_MIN_NS : headroom_ns < WATCH_POLL_MAX_NS ? headroom_ns : WATCH_POLL_MAX_NS;
        /* page cache is reclaimed before anything is killed: at the
         * threshold, the working set decides */
        uint64_t usage = r.usage >= threshold ? memlimit_working_set(&w->ml, &r) : r.usage;
        if (memlimit_crossed(&w->armed, usage, r.limit, s->limit_at)) {
            limit_why(w, &r, usage, live_high, why, whylen);
            return true;
        }
    }
    if (s->grow && memlimit_grew(&w->high, live_high, s->grow)) {
        snprintf(why, whylen, "grow: a new high of the estimated live heap, %llu bytes (grow=%llu)",
                 (unsigned long long)live_high, (unsigned long long)s->grow);
        return true;
    }
    return false;
}

void
sampling_watch_written(struct sampling_watch *w)
{
    w->files++;
}
