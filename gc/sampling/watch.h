/*
 * watch.h: the watcher's decisions (RUBY_GC_SAMPLING's limit=, grow=;
 * docs/oom.md): when to write the in-use profile, and why.  Pure C, no
 * Ruby: periodic.c's writer thread owns one and polls it; the build and
 * the file are periodic.c's.
 *
 * Model.  A poll reads memory (memlimit.h) and the live estimate's high
 * (the peak's, timeline.h, read atomically by the caller); it says a file
 * is due at a crossing of limit_at x the limit (once a crossing:
 * memlimit_crossed) or at a new high by grow bytes (memlimit_grew),
 * while fewer than max_files were written.  It also says when to poll
 * next: when memory growing at WATCH_RATE could reach the threshold,
 * between WATCH_POLL_MIN_NS and WATCH_POLL_MAX_NS.
 *
 * One owner, no locking (the writer thread, under periodic.c's lock).
 */
#ifndef SAMPLING_WATCH_H
#define SAMPLING_WATCH_H

#include "config.h"
#include "memlimit.h"

/* A poll is one pread(2) of a small file (about a microsecond) and a
 * wake-up of the thread (tens of microseconds in a VM: docs/oom.md);
 * far from the threshold it need not come as often. */
#define WATCH_POLL_MIN_NS (10 * 1000 * 1000ULL)
#define WATCH_POLL_MAX_NS (100 * 1000 * 1000ULL)
#define WATCH_RATE 4        /* bytes a nanosecond: 4 GB/s, more than a Ruby thread writes fresh memory */
#define WATCH_WHY 832       /* a reason's bytes at most (a cgroup's path in it) */

struct sampling_watch {
    struct sampling_params settings;    /* limit, limit_at, grow, max_files */
    struct memlimit ml;
    bool ml_open, armed;
    uint64_t high;                      /* grow=: the live estimate at the last file */
    uint32_t files;                     /* written so far */
    uint64_t poll_ns;                   /* until the next poll */
    uint32_t polls;                     /* since open */
    bool limit_seen;                    /* limit=auto: a limit was read at least once */
};

/* limit=auto with no limit read in this many polls (about 2 s: a
 * supervisor may move the process into its cgroup, or set the limit,
 * just after it starts) prints one warning. */
#define WATCH_NO_LIMIT_POLLS 20

/* Starts watching what settings say (files counted from 0), closing
 * what was open; one warning on stderr when the limit cannot be watched
 * (grow= still works). */
void sampling_watch_open(struct sampling_watch *w, const struct sampling_params *settings);
void sampling_watch_close(struct sampling_watch *w);

/* One poll, given the live estimate's high (the peak's): true when a
 * file is due, with why (a profile comment; the limit's names the peak
 * too).  Sets w->poll_ns. */
bool sampling_watch_poll(struct sampling_watch *w, uint64_t live_high, char *why, size_t whylen);

/* A due file was written (counts toward max_files). */
void sampling_watch_written(struct sampling_watch *w);

#endif
