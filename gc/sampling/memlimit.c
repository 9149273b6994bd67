/* memlimit.c: see memlimit.h. */
#include "memlimit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* v1's "no limit" is the largest page multiple below 2**63; anything
 * from 2**62 on is no limit a machine has. */
#define V1_UNLIMITED ((uint64_t)1 << 62)

static bool
fail(char *err, size_t errlen, const char *what, const char *path)
{
    snprintf(err, errlen, "%s%s%s", what, path ? " " : "", path ? path : "");
    return false;
}

/* A whole small file (at most size - 1 bytes) as a C string. */
static bool
read_text(const char *path, char *buf, size_t size)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    size_t n = 0;
    while (n + 1 < size) {
        ssize_t got = read(fd, buf + n, size - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) break;
        n += (size_t)got;
    }
    close(fd);
    buf[n] = '\0';
    return n > 0;
}

/* A number at the start of an open file ("max": MEMLIMIT_NONE). */
static bool
pread_number(int fd, uint64_t *out)
{
    char buf[32];
    ssize_t n;
    do n = pread(fd, buf, sizeof(buf) - 1, 0); while (n < 0 && errno == EINTR);
    if (n <= 0) return false;
    buf[n] = '\0';
    if (strncmp(buf, "max", 3) == 0) {
        *out = MEMLIMIT_NONE;
        return true;
    }
    char *end;
    errno = 0;
    unsigned long long v = strtoull(buf, &end, 10);
    if (end == buf || errno) return false;
    *out = (uint64_t)v;
    return true;
}

static const char *
usage_name(enum memlimit_kind kind)
{
    return kind == MEMLIMIT_CGROUP_V1 ? "memory.usage_in_bytes" : "memory.current";
}

static const char *
limit_name(enum memlimit_kind kind)
{
    return kind == MEMLIMIT_CGROUP_V1 ? "memory.limit_in_bytes" : "memory.max";
}

static int
open_in(const char *dir, const char *name)
{
    char path[MEMLIMIT_PATH + 64];
    if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path)) return -1;
    return open(path, O_RDONLY | O_CLOEXEC);
}

/* The process's path in the hierarchy: v1's memory line if any ("N:a,memory,b:/path"), else v2's ("0::/path"). */
static bool
cgroup_path(const char *text, enum memlimit_kind *kind, char *path, size_t size)
{
    bool found_v2 = false;
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            size_t clen = (size_t)(c2 - c1 - 1), plen = len - (size_t)(c2 + 1 - line);
            bool memory = false;
            for (const char *c = c1 + 1; c < c2;) {
                const char *comma = memchr(c, ',', (size_t)(c2 - c));
                const char *e = comma ? comma : c2;
                if (e - c == 6 && memcmp(c, "memory", 6) == 0) memory = true;
                c = e + 1;
            }
            if ((memory || (clen == 0 && !found_v2)) && plen < size) {
                memcpy(path, c2 + 1, plen);
                path[plen] = '\0';
                *kind = memory ? MEMLIMIT_CGROUP_V1 : MEMLIMIT_CGROUP_V2;
                if (memory) return true;
                found_v2 = true;
            }
        }
        line = eol ? eol + 1 : line + len;
    }
    return found_v2;
}

/* mountinfo's mount of the hierarchy: "id parent maj:min ROOT POINT opts
 * ... - FSTYPE source SUPEROPTS"; v1's is a cgroup with memory among its
 * super options, v2's the cgroup2.  Octal escapes (\040) are not undone:
 * cgroup mounts have none. */
static bool
cgroup_mount(const char *text, enum memlimit_kind kind, char *root, char *point, size_t size)
{
    for (const char *line = text; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        char buf[2048];
        if (len < sizeof(buf)) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            char *fields[6] = { 0 }, *save = NULL;
            char *tok = strtok_r(buf, " ", &save);
            for (int i = 0; tok && i < 6; i++, tok = i < 6 ? strtok_r(NULL, " ", &save) : tok) fields[i] = tok;
            /* the optional fields end at "-" */
            char *t = fields[5] ? strtok_r(NULL, " ", &save) : NULL;
            while (t && strcmp(t, "-") != 0) t = strtok_r(NULL, " ", &save);
            char *fstype = t ? strtok_r(NULL, " ", &save) : NULL;
            char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
            char *super = source ? strtok_r(NULL, " ", &save) : NULL;
            bool match = false;
            if (fstype && kind == MEMLIMIT_CGROUP_V2) match = strcmp(fstype, "cgroup2") == 0;
            else if (fstype && super && strcmp(fstype, "cgroup") == 0) {
                for (char *o = super; o && *o;) {
                    char *comma = strchr(o, ',');
                    size_t olen = comma ? (size_t)(comma - o) : strlen(o);
                    if (olen == 6 && memcmp(o, "memory", 6) == 0) match = true;
                    o = comma ? comma + 1 : NULL;
                }
            }
            if (match && fields[3] && fields[4] && strlen(fields[3]) < size && strlen(fields[4]) < size) {
                strcpy(root, fields[3]);
                strcpy(point, fields[4]);
                return true;
            }
        }
        line = eol ? eol + 1 : line + len;
    }
    return false;
}

static void
level_close(struct memlimit_level *l)
{
    if (l->usage_fd >= 0) close(l->usage_fd);
    if (l->limit_fd >= 0) close(l->limit_fd);
    l->usage_fd = l->limit_fd = -1;
}

static void
read_limits(struct memlimit *m)
{
    for (size_t i = 0; i < m->n; i++) {
        struct memlimit_level *l = &m->levels[i];
        uint64_t v;
        if (!pread_number(l->limit_fd, &v)) v = MEMLIMIT_NONE;
        if (m->kind == MEMLIMIT_CGROUP_V1 && v >= V1_UNLIMITED) v = MEMLIMIT_NONE;
        l->limit = v;
    }
}

bool
memlimit_open_cgroup(struct memlimit *m, const char *cgroup_file, const char *mountinfo_file, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->statm_fd = -1;
    static char text[65536];
    char path[MEMLIMIT_PATH], root[MEMLIMIT_PATH], point[MEMLIMIT_PATH], dir[MEMLIMIT_PATH];
    if (!read_text(cgroup_file, text, sizeof(text))) return fail(err, errlen, "cannot read", cgroup_file);
    if (!cgroup_path(text, &m->kind, path, sizeof(path))) return fail(err, errlen, "no memory cgroup in", cgroup_file);
    strcpy(m->path, path);
    if (!read_text(mountinfo_file, text, sizeof(text))) return fail(err, errlen, "cannot read", mountinfo_file);
    if (!cgroup_mount(text, m->kind, root, point, sizeof(root))) {
        return fail(err, errlen, m->kind == MEMLIMIT_CGROUP_V1 ? "the cgroup v1 memory controller is not mounted"
                                                              : "no cgroup2 file system is mounted", NULL);
    }
    /* the path less the mount's root (a container sees its own cgroup at the mount's root) */
    size_t rlen = strlen(root);
    const char *rel = path;
    if (strcmp(root, "/") != 0 && strncmp(path, root, rlen) == 0 && (path[rlen] == '/' || !path[rlen])) rel = path + rlen;
    if ((size_t)snprintf(dir, sizeof(dir), "%s%s", point, strcmp(rel, "/") == 0 ? "" : rel) >= sizeof(dir))
        return fail(err, errlen, "the cgroup path is too long:", path);
    if (access(dir, F_OK) != 0) strcpy(dir, point);     /* a namespace's view: its own cgroup is the mount */

    /* the cgroup and its parents up to the mount point */
    size_t plen = strlen(point);
    for (;;) {
        struct memlimit_level *l = &m->levels[m->n];
        l->usage_fd = open_in(dir, usage_name(m->kind));
        l->limit_fd = open_in(dir, limit_name(m->kind));
        if (l->usage_fd >= 0 && l->limit_fd >= 0) {
            strcpy(l->dir, dir);
            if (++m->n == MEMLIMIT_LEVELS) break;
        }
        else level_close(l);
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < plen || strlen(dir) <= plen) break;
        *slash = '\0';
    }
    if (!m->n) {
        snprintf(err, errlen, "no %s in %s or its parents", limit_name(m->kind), dir);
        return false;
    }
    read_limits(m);
    return true;
}

bool
memlimit_moved(const struct memlimit *m, const char *cgroup_file)
{
    static char text[16384];
    char path[MEMLIMIT_PATH];
    enum memlimit_kind kind;
    if (m->kind == MEMLIMIT_RSS || !read_text(cgroup_file, text, sizeof(text))) return false;
    return cgroup_path(text, &kind, path, sizeof(path)) && (kind != m->kind || strcmp(path, m->path) != 0);
}

bool
memlimit_open_rss(struct memlimit *m, uint64_t bytes, const char *statm_file, char *err, size_t errlen)
{
    memset(m, 0, sizeof(*m));
    m->kind = MEMLIMIT_RSS;
    m->rss_limit = bytes;
    long page = sysconf(_SC_PAGESIZE);
    m->page = page > 0 ? (uint64_t)page : 4096;
    m->statm_fd = open(statm_file, O_RDONLY | O_CLOEXEC);
    if (m->statm_fd < 0) return fail(err, errlen, "cannot read", statm_file);
    return true;
}

void
memlimit_close(struct memlimit *m)
{
    for (size_t i = 0; i < m->n; i++) level_close(&m->levels[i]);
    m->n = 0;
    if (m->statm_fd >= 0) close(m->statm_fd);
    m->statm_fd = -1;
}

bool
memlimit_read(struct memlimit *m, struct memlimit_reading *r)
{
    if (m->kind == MEMLIMIT_RSS) {
        /* statm: "size resident shared ..." in pages */
        char buf[128];
        ssize_t n;
        do n = pread(m->statm_fd, buf, sizeof(buf) - 1, 0); while (n < 0 && errno == EINTR);
        if (n <= 0) return false;
        buf[n] = '\0';
        char *space = strchr(buf, ' ');
        if (!space) return false;
        *r = (struct memlimit_reading){ strtoull(space + 1, NULL, 10) * m->page, m->rss_limit, 0 };
        return true;
    }
    if (m->polls++ % MEMLIMIT_LIMIT_EVERY == 0 && m->polls > 1) read_limits(m);
    bool any = false;
    *r = (struct memlimit_reading){ 0, MEMLIMIT_NONE, 0 };
    for (size_t i = 0; i < m->n; i++) {
        const struct memlimit_level *l = &m->levels[i];
        uint64_t usage;
        if (l->limit == MEMLIMIT_NONE || !pread_number(l->usage_fd, &usage)) continue;
        /* nearest its limit: usage / limit highest (compared crosswise, in long double: no overflow) */
        if (!any || (long double)usage * r->limit > (long double)r->usage * l->limit) {
            *r = (struct memlimit_reading){ usage, l->limit, i };
            any = true;
        }
    }
    return any;
}

uint64_t
memlimit_working_set(const struct memlimit *m, const struct memlimit_reading *r)
{
    if (m->kind == MEMLIMIT_RSS) return r->usage;
    char path[MEMLIMIT_PATH + 64], text[8192];
    snprintf(path, sizeof(path), "%s/memory.stat", m->levels[r->level].dir);
    if (!read_text(path, text, sizeof(text))) return r->usage;
    /* v1 counts the hierarchy's in total_*, v2 its own (which holds its children's) */
    const char *key = m->kind == MEMLIMIT_CGROUP_V1 ? "total_inactive_file " : "inactive_file ";
    size_t klen = strlen(key);
    for (const char *line = text; line && *line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL) {
        if (strncmp(line, key, klen) == 0) {
            uint64_t inactive = strtoull(line + klen, NULL, 10);
            return inactive < r->usage ? r->usage - inactive : 0;
        }
    }
    return r->usage;
}

uint64_t
memlimit_threshold(uint64_t limit, uint32_t at)
{
    return (uint64_t)((long double)limit * at / 1000000);
}

bool
memlimit_crossed(bool *armed, uint64_t usage, uint64_t limit, uint32_t at)
{
    if (limit == MEMLIMIT_NONE) return false;
    if (*armed) {
        if (usage < memlimit_threshold(limit, at)) return false;
        *armed = false;
        return true;
    }
    if (usage < memlimit_threshold(limit, at > MEMLIMIT_REARM ? at - MEMLIMIT_REARM : 0)) *armed = true;
    return false;
}

bool
memlimit_grew(uint64_t *high, uint64_t value, uint64_t step)
{
    if (!step || value < *high || value - *high < step) return false;
    *high = value;
    return true;
}
