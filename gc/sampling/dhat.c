/* dhat.c: see dhat.h. */
#include "dhat.h"
#include "intern.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct dhat_point {
    struct dhat_values v;
    size_t fs, nfs;         /* its frame list: fs.data[fs, fs + nfs) */
};

struct dhat {
    struct strtab frames;   /* ftbl */
    struct buf points;      /* struct dhat_point[npoints] */
    size_t npoints;
    struct buf fs;          /* uint32_t: every point's frame list */
    struct map point_map;   /* a frame list's hash -> its point */
    struct buf scratch[2];  /* a frame's text while it is made, without and with its address */
    bool failed;
};

static struct dhat_point *
point_at(const struct dhat *d, size_t i)
{
    return (struct dhat_point *)d->points.data + i;
}

static const uint32_t *
point_fs(const struct dhat *d, const struct dhat_point *pt)
{
    return (const uint32_t *)d->fs.data + pt->fs;
}

struct dhat *
dhat_new(void)
{
    struct dhat *d = calloc(1, sizeof(*d));
    if (!d) return NULL;
    dhat_frame(d, "[root]", 6);     /* frame 0: the viewers' root */
    if (d->failed) {
        dhat_free(d);
        return NULL;
    }
    return d;
}

void
dhat_free(struct dhat *d)
{
    if (!d) return;
    strtab_free(&d->frames);
    free(d->points.data);
    free(d->fs.data);
    free(d->scratch[0].data);
    free(d->scratch[1].data);
    map_free(&d->point_map);
    free(d);
}

uint32_t
dhat_frame(struct dhat *d, const char *text, size_t len)
{
    return (uint32_t)strtab_intern(&d->frames, text, len, &d->failed);
}

uint32_t
dhat_frame_at(struct dhat *d, const char *name, size_t namelen, const char *where, size_t wherelen)
{
    struct buf *text = &d->scratch[0], *frame = &d->scratch[1];
    text->len = frame->len = 0;
    buf_put(text, name, namelen);
    buf_put(text, " (", 2);
    buf_put(text, where, wherelen);
    buf_put(text, ")", 1);
    if (text->failed) {
        d->failed = true;
        return 0;
    }
    /* the address: 48 bits of the text's hash, as a code address looks */
    uint64_t h = hash_bytes((const char *)text->data, text->len);
    uint64_t addr = (h ^ h >> 48) & UINT64_C(0xffffffffffff);
    char head[24];
    int headlen = snprintf(head, sizeof(head), "0x%llX: ", (unsigned long long)(addr ? addr : 1));
    buf_put(frame, head, (size_t)headlen);
    buf_put(frame, text->data, text->len);
    if (frame->failed) {
        d->failed = true;
        return 0;
    }
    return dhat_frame(d, (const char *)frame->data, frame->len);
}

size_t
dhat_where(char *out, size_t size, const char *path, size_t pathlen, int line)
{
    if (!path) {
        int n = snprintf(out, size, "in C");
        return n < 0 ? 0 : (size_t)n;
    }
    /* the path's bytes as they are (a NUL in it too, as pprof keeps it),
     * then ":line" */
    char suffix[16];
    int s = line > 0 ? snprintf(suffix, sizeof(suffix), ":%d", line) : 0;
    size_t slen = s < 0 ? 0 : (size_t)s;
    if (size) {
        size_t k = pathlen < size - 1 ? pathlen : size - 1;
        memcpy(out, path, k);
        size_t m = slen < size - 1 - k ? slen : size - 1 - k;
        memcpy(out + k, suffix, m);
        out[k + m] = '\0';
    }
    return pathlen + slen;
}

/* ---- points, interned by their frame lists ---- */

static uint64_t
fs_hash(const uint32_t *fs, size_t n)
{
    uint64_t h = PROBE_FNV_OFFSET ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ fs[i]) * PROBE_GOLDEN;
    return h ^ h >> 29;
}

struct fs_probe {
    const struct dhat *d;
    const uint32_t *fs;
    size_t n;
};

static bool
fs_same(uint64_t point, void *ctx)
{
    const struct fs_probe *probe = ctx;
    const struct dhat_point *pt = point_at(probe->d, (size_t)point);
    return pt->nfs == probe->n && memcmp(point_fs(probe->d, pt), probe->fs, probe->n * sizeof(uint32_t)) == 0;
}

static void
values_add(struct dhat_values *to, const struct dhat_values *v)
{
    to->tb += v->tb;
    to->tbk += v->tbk;
    to->tl += v->tl;
    to->gb += v->gb;
    to->gbk += v->gbk;
    to->eb += v->eb;
    to->ebk += v->ebk;
}

uint32_t
dhat_point(struct dhat *d, const uint32_t *fs, size_t n)
{
    if (d->failed || !map_room(&d->point_map)) {
        d->failed = true;
        return UINT32_MAX;
    }
    uint64_t h = fs_hash(fs, n);
    struct fs_probe probe = { d, fs, n };
    bool found;
    size_t slot = map_find(&d->point_map, h, fs_same, &probe, &found);
    if (!found) {
        struct dhat_point pt = { { 0 }, d->fs.len / sizeof(uint32_t), n };
        buf_put(&d->fs, fs, n * sizeof(uint32_t));
        buf_put(&d->points, &pt, sizeof(pt));
        if (d->fs.failed || d->points.failed) {
            d->failed = true;
            return UINT32_MAX;
        }
        map_set(&d->point_map, slot, h, d->npoints++);
    }
    return (uint32_t)d->point_map.values[slot];
}

void
dhat_add(struct dhat *d, uint32_t point, const struct dhat_values *v)
{
    if (point < d->npoints) values_add(&point_at(d, point)->v, v);
}

size_t
dhat_points(const struct dhat *d)
{
    return d->npoints;
}

const struct dhat_values *
dhat_point_values(const struct dhat *d, uint32_t point)
{
    return point < d->npoints ? &point_at(d, point)->v : NULL;
}

/* ---- each point's maximum, from its lives ---- */

struct life_event {
    uint32_t point;
    uint64_t t;
    double bytes, blocks;   /* added at t (negative: a death) */
};

static int
event_cmp(const void *a, const void *b)
{
    const struct life_event *x = a, *y = b;
    if (x->point != y->point) return x->point < y->point ? -1 : 1;
    return x->t < y->t ? -1 : x->t > y->t;
}

bool
dhat_max_from_lives(struct dhat *d, struct dhat_life *lives, size_t n)
{
    struct life_event *events = malloc((2 * n + 1) * sizeof(*events));
    if (!events) return false;
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const struct dhat_life *l = &lives[i];
        if (l->point >= d->npoints || l->from >= l->to) continue;    /* never live at a known moment */
        events[m++] = (struct life_event){ l->point, l->from, l->bytes, l->blocks };
        if (l->to != DHAT_STILL_LIVE) events[m++] = (struct life_event){ l->point, l->to, -l->bytes, -l->blocks };
    }
    qsort(events, m, sizeof(*events), event_cmp);
    /* a point's live bytes change only at its events: the most is the
     * largest sum after all events of one moment */
    for (size_t i = 0; i < m;) {
        struct dhat_values *v = &point_at(d, events[i].point)->v;
        double bytes = 0, blocks = 0;
        v->mb = v->mbk = 0;
        size_t j = i;
        for (; j < m && events[j].point == events[i].point;) {
            uint64_t t = events[j].t;
            for (; j < m && events[j].point == events[i].point && events[j].t == t; j++) {
                bytes += events[j].bytes;
                blocks += events[j].blocks;
            }
            if (bytes > v->mb) {
                v->mb = bytes;
                v->mbk = blocks;
            }
        }
        i = j;
    }
    free(events);
    return true;
}

/* ---- the JSON text ---- */

static void
put_cstr(struct buf *b, const char *s)
{
    buf_put(b, s, strlen(s));
}

/* A count or time: rounded once, never negative (a sum of estimates
 * that should be 0 may come out a hair below). */
static void
put_number(struct buf *b, double x)
{
    char tmp[32];
    x = isfinite(x) && x > 0 ? round(x) : 0;
    int n = snprintf(tmp, sizeof(tmp), "%.0f", x);
    buf_put(b, tmp, (size_t)n);
}

/* The length of the UTF-8 sequence at s (at most n bytes), 0 if it is
 * not one (overlong forms, surrogates and code points past U+10FFFF
 * included). */
static size_t
utf8_length(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    size_t len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    if (!len || len > n) return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0;
    }
    if (len == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
    if (len == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
    return len;
}

static void
put_string(struct buf *b, const char *text, size_t len)
{
    const uint8_t *s = (const uint8_t *)text;
    buf_put(b, "\"", 1);
    for (size_t i = 0; i < len;) {
        uint8_t c = s[i];
        if (c == '"' || c == '\\') {
            char esc[2] = { '\\', (char)c };
            buf_put(b, esc, 2);
            i++;
        }
        else if (c < 0x20 || c == 0x7f) {
            char esc[8];
            buf_put(b, esc, (size_t)snprintf(esc, sizeof(esc), "\\u%04x", c));
            i++;
        }
        else {
            size_t n = utf8_length(s + i, len - i);
            if (n) buf_put(b, s + i, n);
            else put_cstr(b, "\\ufffd");
            i += n ? n : 1;
        }
    }
    buf_put(b, "\"", 1);
}

static void
put_field_number(struct buf *b, const char *key, double x)
{
    put_cstr(b, key);
    put_number(b, x);
}

static void
put_point(struct buf *b, const struct dhat *d, const struct dhat_point *pt)
{
    const struct dhat_values *v = &pt->v;
    /* the most live at once is at least what was live at t-gmax and at t-end */
    double mb = v->mb, mbk = v->mbk;
    if (v->gb > mb) mb = v->gb, mbk = v->gbk;
    if (v->eb > mb) mb = v->eb, mbk = v->ebk;
    put_field_number(b, "{\"tb\":", v->tb);
    put_field_number(b, ",\"tbk\":", v->tbk);
    put_field_number(b, ",\"tl\":", v->tl);
    put_field_number(b, ",\"mb\":", mb);
    put_field_number(b, ",\"mbk\":", mbk);
    put_field_number(b, ",\"gb\":", v->gb);
    put_field_number(b, ",\"gbk\":", v->gbk);
    put_field_number(b, ",\"eb\":", v->eb);
    put_field_number(b, ",\"ebk\":", v->ebk);
    put_cstr(b, ",\"fs\":[");
    const uint32_t *fs = point_fs(d, pt);
    for (size_t i = 0; i < pt->nfs; i++) {
        char tmp[16];
        buf_put(b, tmp, (size_t)snprintf(tmp, sizeof(tmp), i ? ",%u" : "%u", fs[i]));
    }
    put_cstr(b, "]}");
}

bool
dhat_finish(struct dhat *d, const struct dhat_header *h, char **out, size_t *len)
{
    struct buf b = { 0 };
    char tmp[64];
    put_cstr(&b, "{\"dhatFileVersion\":2\n,\"mode\":\"heap\"\n,\"verb\":\"Allocated\"\n,\"bklt\":true\n,\"bkacc\":false\n");
    put_cstr(&b, ",\"tu\":");
    put_string(&b, h->tu, strlen(h->tu));
    put_cstr(&b, ",\"Mtu\":");
    put_string(&b, h->Mtu, strlen(h->Mtu));
    put_field_number(&b, "\n,\"tuth\":", h->tuth);
    put_cstr(&b, "\n,\"cmd\":");
    put_string(&b, h->cmd, strlen(h->cmd));
    buf_put(&b, tmp, (size_t)snprintf(tmp, sizeof(tmp), "\n,\"pid\":%ld", h->pid));
    put_field_number(&b, "\n,\"te\":", h->te);
    put_field_number(&b, "\n,\"tg\":", h->tg);
    put_cstr(&b, "\n,\"pps\":\n[");
    for (size_t i = 0; i < d->npoints; i++) {
        if (i) put_cstr(&b, "\n,");
        put_point(&b, d, point_at(d, i));
    }
    put_cstr(&b, "\n]\n,\"ftbl\":\n[");
    for (size_t i = 0; i < d->frames.n; i++) {
        size_t n;
        const char *s = strtab_get(&d->frames, i, &n);
        if (i) put_cstr(&b, "\n,");
        put_string(&b, s, n);
    }
    put_cstr(&b, "\n]\n}\n");
    buf_put(&b, "", 1);
    if (b.failed || d->failed) {
        free(b.data);
        return false;
    }
    *out = (char *)b.data;
    *len = b.len - 1;
    return true;
}
