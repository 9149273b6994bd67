/*
 * test_memlimit.c: memlimit.c against fake cgroup trees in a temporary
 * directory (/proc/self/cgroup, mountinfo and the memory files written
 * by the test): v1 and v2 found through mountinfo, a namespace's view
 * (its cgroup at the mount's root), the level nearest its limit chosen
 * (a parent's lower limit), "max" and v1's huge value as no limit, the
 * working set less inactive file pages, RSS from statm; then the
 * crossing (once, re-armed below the threshold less a twentieth) and
 * growth by steps.
 */
// links: memlimit.c
#include "check.h"
#include "memlimit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char root[256];

static void
put(const char *rel, const char *text)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", root, rel);
    /* the directories on the way */
    for (char *s = strchr(path + strlen(root) + 1, '/'); s; s = strchr(s + 1, '/')) {
        *s = '\0';
        mkdir(path, 0755);
        *s = '/';
    }
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        exit(2);
    }
    fputs(text, f);
    fclose(f);
}

static const char *
at(const char *rel)
{
    static char path[4][1024];
    static int i;
    i = (i + 1) % 4;
    snprintf(path[i], sizeof(path[i]), "%s/%s", root, rel);
    return path[i];
}

static void
test_v1(void)
{
    char mountinfo[2048];
    snprintf(mountinfo, sizeof(mountinfo),
             "22 1 0:20 / /proc rw - proc proc rw\n"
             "30 25 0:26 / %s/cg/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
             "31 25 0:27 / %s/cg/memory rw,relatime shared:10 - cgroup cgroup rw,memory\n"
             "32 25 0:28 / %s/cg/unified rw,relatime - cgroup2 cgroup2 rw\n", root, root, root);
    put("v1/mountinfo", mountinfo);
    put("v1/cgroup", "9:name=systemd:/\n4:memory:/app/job\n1:cpu:/\n0::/\n");
    put("cg/memory/app/job/memory.usage_in_bytes", "100000000\n");
    put("cg/memory/app/job/memory.limit_in_bytes", "300000000\n");
    put("cg/memory/app/job/memory.stat", "cache 10\ninactive_file 5\ntotal_inactive_file 40000000\n");
    put("cg/memory/app/memory.usage_in_bytes", "150000000\n");
    put("cg/memory/app/memory.limit_in_bytes", "9223372036854771712\n");
    put("cg/memory/memory.usage_in_bytes", "2000000000\n");
    put("cg/memory/memory.limit_in_bytes", "9223372036854771712\n");

    struct memlimit m;
    char err[256] = "";
    CHECK(memlimit_open_cgroup(&m, at("v1/cgroup"), at("v1/mountinfo"), err, sizeof(err)), "v1 opens (%s)", err);
    CHECK(m.kind == MEMLIMIT_CGROUP_V1, "v1 (memory controller listed)");
    CHECK(m.n == 3, "the cgroup and its two parents (%zu)", m.n);
    CHECK(strcmp(m.levels[0].dir, at("cg/memory/app/job")) == 0, "dir %s", m.levels[0].dir);
    CHECK(m.levels[0].limit == 300000000 && m.levels[1].limit == MEMLIMIT_NONE, "v1's huge limit is none");
    struct memlimit_reading r;
    CHECK(memlimit_read(&m, &r) && r.usage == 100000000 && r.limit == 300000000 && r.level == 0,
          "reads the limited level (%llu of %llu)", (unsigned long long)r.usage, (unsigned long long)r.limit);
    CHECK(memlimit_working_set(&m, &r) == 60000000, "working set: usage less total_inactive_file (%llu)",
          (unsigned long long)memlimit_working_set(&m, &r));
    /* a value changed in place is read again (pread at 0) */
    put("cg/memory/app/job/memory.usage_in_bytes", "250000000\n");
    CHECK(memlimit_read(&m, &r) && r.usage == 250000000, "a poll reads anew (%llu)", (unsigned long long)r.usage);
    /* a parent nearer its limit wins */
    put("cg/memory/app/memory.limit_in_bytes", "200000000\n");
    put("cg/memory/app/memory.usage_in_bytes", "190000000\n");
    for (int i = 0; i < MEMLIMIT_LIMIT_EVERY; i++) memlimit_read(&m, &r);   /* (limits read again) */
    CHECK(r.level == 1 && r.limit == 200000000 && r.usage == 190000000, "the parent: 95%% against 83%% (level %zu)", r.level);
    put("cg/memory/app/memory.usage_in_bytes", "100000000\n");
    CHECK(memlimit_read(&m, &r) && r.level == 0, "the cgroup again: 83%% against 50%%");
    /* moved: another path in the cgroup file */
    CHECK(!memlimit_moved(&m, at("v1/cgroup")), "not moved");
    put("v1/cgroup-moved", "9:name=systemd:/\n4:memory:/app/other\n");
    CHECK(memlimit_moved(&m, at("v1/cgroup-moved")), "moved to /app/other");
    CHECK(!memlimit_moved(&m, at("nonexistent")), "unreadable: not moved");
    memlimit_close(&m);

    /* no memory controller in the file: v2's line */
    put("v1/cgroup-nomem", "1:cpu:/\n");
    CHECK(!memlimit_open_cgroup(&m, at("v1/cgroup-nomem"), at("v1/mountinfo"), err, sizeof(err)), "no memory cgroup");
    CHECK(strstr(err, "no memory cgroup in") != NULL, "says so: %s", err);
    CHECK(!memlimit_open_cgroup(&m, at("nonexistent"), at("v1/mountinfo"), err, sizeof(err)) &&
          strstr(err, "cannot read") != NULL, "unreadable: %s", err);
}

static void
test_v2(void)
{
    char mountinfo[1024];
    snprintf(mountinfo, sizeof(mountinfo), "32 25 0:28 /kube/pod1 %s/v2fs rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n", root);
    put("v2/mountinfo", mountinfo);
    /* the container sees its own cgroup at the mount's root */
    put("v2/cgroup", "0::/kube/pod1/ctr\n");
    put("v2fs/ctr/memory.current", "50000000\n");
    put("v2fs/ctr/memory.max", "max\n");
    put("v2fs/memory.current", "90000000\n");
    put("v2fs/memory.max", "100000000\n");
    put("v2fs/memory.stat", "anon 1\nactive_file 7\ninactive_file 1000000\n");

    struct memlimit m;
    char err[256] = "";
    CHECK(memlimit_open_cgroup(&m, at("v2/cgroup"), at("v2/mountinfo"), err, sizeof(err)), "v2 opens (%s)", err);
    CHECK(m.kind == MEMLIMIT_CGROUP_V2 && m.n == 2, "v2, two levels (%zu)", m.n);
    CHECK(strcmp(m.levels[0].dir, at("v2fs/ctr")) == 0, "the path less the mount's root: %s", m.levels[0].dir);
    struct memlimit_reading r;
    CHECK(memlimit_read(&m, &r) && r.level == 1 && r.limit == 100000000 && r.usage == 90000000, "max is none: the parent");
    CHECK(memlimit_working_set(&m, &r) == 89000000, "less inactive_file");
    memlimit_close(&m);

    /* a namespace whose path is not under the mount's root: the mount itself */
    put("v2/cgroup-ns", "0::/\n");
    CHECK(memlimit_open_cgroup(&m, at("v2/cgroup-ns"), at("v2/mountinfo"), err, sizeof(err)) &&
          strcmp(m.levels[0].dir, at("v2fs")) == 0, "cgroup / at the mount (%s)", err);
    memlimit_close(&m);

    /* no limit anywhere: nothing to read */
    put("v2fs/memory.max", "max\n");
    CHECK(memlimit_open_cgroup(&m, at("v2/cgroup"), at("v2/mountinfo"), err, sizeof(err)), "opens");
    CHECK(!memlimit_read(&m, &r), "no limit: no reading");
    memlimit_close(&m);
}

static void
test_rss(void)
{
    put("statm", "1000 256 10 1 0 100 0\n");
    struct memlimit m;
    char err[256];
    CHECK(memlimit_open_rss(&m, 1 << 20, at("statm"), err, sizeof(err)), "opens");
    struct memlimit_reading r;
    CHECK(memlimit_read(&m, &r) && r.usage == 256 * m.page && r.limit == 1 << 20, "resident pages (%llu)",
          (unsigned long long)r.usage);
    CHECK(memlimit_working_set(&m, &r) == r.usage, "RSS is the working set");
    memlimit_close(&m);
    CHECK(!memlimit_open_rss(&m, 1, at("nostatm"), err, sizeof(err)), "a missing statm fails");
}

static void
test_crossing(void)
{
    const uint64_t limit = 1000000;
    const uint32_t at9 = 900000;
    CHECK(memlimit_threshold(limit, at9) == 900000, "threshold");
    bool armed = true;
    CHECK(!memlimit_crossed(&armed, 899999, limit, at9), "below");
    CHECK(memlimit_crossed(&armed, 900000, limit, at9), "at the threshold: once");
    CHECK(!memlimit_crossed(&armed, 990000, limit, at9), "still above: no second");
    CHECK(!memlimit_crossed(&armed, 860000, limit, at9), "dips less than a twentieth: not re-armed");
    CHECK(!memlimit_crossed(&armed, 900000, limit, at9), "so no second file");
    CHECK(!memlimit_crossed(&armed, 849999, limit, at9), "below 0.85: re-armed");
    CHECK(memlimit_crossed(&armed, 950000, limit, at9), "the next crossing");
    CHECK(!memlimit_crossed(&armed, 2000000, MEMLIMIT_NONE, at9), "no limit: never");
    armed = true;
    CHECK(!memlimit_crossed(&armed, 10000, limit, 30000) && memlimit_crossed(&armed, 30000, limit, 30000), "small at");
    CHECK(!memlimit_crossed(&armed, 0, limit, 30000), "re-armed at 0 only");

    uint64_t high = 0;
    CHECK(!memlimit_grew(&high, 99, 100), "below a step");
    CHECK(memlimit_grew(&high, 150, 100) && high == 150, "a step: the high moves");
    CHECK(!memlimit_grew(&high, 249, 100) && high == 150, "less than a step above the high");
    CHECK(!memlimit_grew(&high, 10, 100) && high == 150, "down: nothing");
    CHECK(memlimit_grew(&high, 1000, 100) && high == 1000, "many steps at once: one");
    CHECK(!memlimit_grew(&high, 5000, 0), "step 0: off");
}

int
main(void)
{
    snprintf(root, sizeof(root), "/tmp/test_memlimit.XXXXXX");
    if (!mkdtemp(root)) {
        perror("mkdtemp");
        return 2;
    }
    test_v1();
    test_v2();
    test_rss();
    test_crossing();
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", root);
    return check_summary();
}
