/*
 * memlimit.h: how close the process is to the memory limit that would
 * kill it, read from the files the kernel keeps (pure C, no Ruby;
 * test/unit/test_memlimit.c).
 *
 * Model.  RUBY_GC_SAMPLING's limit=auto is the memory cgroup's limit:
 *
 *   /proc/self/cgroup      v1: "4:memory:/path"    v2: "0::/path"
 *   /proc/self/mountinfo   where that hierarchy is mounted (its root, the
 *                          mount point): dir = mount point + path less root
 *   dir and its parents    v1: memory.usage_in_bytes, memory.limit_in_bytes
 *   (up to the mount)      v2: memory.current, memory.max ("max": none)
 *
 * A parent's limit counts too (its usage holds its children's), so every
 * level with a limit is read and the one nearest its limit is the
 * reading.  limit=SIZE is the process's RSS (/proc/self/statm) against
 * SIZE.  The files stay open: a poll is one pread(2) a level
 * (docs/oom.md measures it); limits are read again every
 * MEMLIMIT_LIMIT_EVERY polls (a container's limit can be changed live),
 * and so is the process's cgroup (memlimit_moved: a process moved into a
 * cgroup after it started, as a supervisor may do, is watched there).
 *
 * The usage a cgroup reports holds page cache the kernel reclaims before
 * it kills anything; a reading at the threshold is confirmed with the
 * working set (usage less inactive file pages, memory.stat, as the
 * kubelet counts), which is read only then.
 *
 * Crossing: memlimit_crossed is true once when usage reaches the
 * threshold, and again only after usage fell below the threshold less
 * MEMLIMIT_REARM (a twentieth of the limit): one file a crossing, not one
 * a poll while usage hovers.  Growth: memlimit_grew is true when a value
 * reaches the last high plus a step (the high is then that value).
 *
 * Not thread-safe: one owner (periodic.c's thread).  After fork(2) the
 * child must close and open again (/proc/self was the parent's).
 */
#ifndef SAMPLING_MEMLIMIT_H
#define SAMPLING_MEMLIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMLIMIT_LEVELS 8           /* the cgroup and its parents, nearest first */
#define MEMLIMIT_PATH 512
#define MEMLIMIT_LIMIT_EVERY 10     /* polls between reads of the limits (and of where the process is) */
#define MEMLIMIT_REARM 50000        /* millionths of the limit below the threshold that re-arm */
#define MEMLIMIT_NONE UINT64_MAX    /* no limit at a level */

enum memlimit_kind { MEMLIMIT_CGROUP_V1, MEMLIMIT_CGROUP_V2, MEMLIMIT_RSS };

struct memlimit_level {
    char dir[MEMLIMIT_PATH];
    int usage_fd, limit_fd;         /* -1: not open */
    uint64_t limit;                 /* as last read; MEMLIMIT_NONE */
};

struct memlimit {
    enum memlimit_kind kind;
    char path[MEMLIMIT_PATH];       /* the process's cgroup as /proc/self/cgroup names it */
    struct memlimit_level levels[MEMLIMIT_LEVELS];
    size_t n;
    unsigned long polls;
    int statm_fd;                   /* MEMLIMIT_RSS */
    uint64_t rss_limit;
    uint64_t page;
};

struct memlimit_reading {
    uint64_t usage, limit;          /* bytes; limit MEMLIMIT_NONE: no level has one */
    size_t level;                   /* which (0: the process's own cgroup) */
};

/* The process's memory cgroup (v1's memory controller, else v2's),
 * found through the two files (normally /proc/self/cgroup and
 * /proc/self/mountinfo).  False with a one-line reason in err (no cgroup
 * file system, no memory controller, files that cannot be read). */
bool memlimit_open_cgroup(struct memlimit *m, const char *cgroup_file, const char *mountinfo_file, char *err,
                          size_t errlen);
/* Whether the process is in another cgroup than the one m watches
 * (cgroup_file read again); then close and open again. */
bool memlimit_moved(const struct memlimit *m, const char *cgroup_file);

/* RSS (statm_file, normally /proc/self/statm) against bytes. */
bool memlimit_open_rss(struct memlimit *m, uint64_t bytes, const char *statm_file, char *err, size_t errlen);
void memlimit_close(struct memlimit *m);

/* One poll: the level nearest its limit (highest usage / limit).  False
 * when nothing could be read. */
bool memlimit_read(struct memlimit *m, struct memlimit_reading *r);

/* The reading's working set: usage less the level's inactive file pages
 * (memory.stat); the usage itself for RSS or when the stat cannot be
 * read. */
uint64_t memlimit_working_set(const struct memlimit *m, const struct memlimit_reading *r);

/* The threshold of limit at `at` millionths. */
uint64_t memlimit_threshold(uint64_t limit, uint32_t at);

/* True once a crossing (above); *armed is the state between calls
 * (start true). */
bool memlimit_crossed(bool *armed, uint64_t usage, uint64_t limit, uint32_t at);

/* True when value >= *high + step (then *high = value). */
bool memlimit_grew(uint64_t *high, uint64_t value, uint64_t step);

#endif
