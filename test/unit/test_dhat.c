/*
 * test_dhat.c: dhat.c, the DHAT JSON writer: frames interned by text
 * ("[root]" first) in DHAT's "0xADDR: name (where)" form with a stable
 * address; points interned by frame list, equal lists adding up; each
 * point's maximum from its lives, and at least its bytes at t-gmax and
 * t-end; the text exact for a small file, strings escaped and bytes that
 * are not UTF-8 replaced; values rounded once, never negative; and many
 * frames and points (the tables grow).
 */
// links: dhat.c
#include "check.h"
#include "dhat.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct dhat_header header = { "ruby t.rb", 42, "bytes allocated", "MB allocated", 1000, 400, 100 };

static char *
finish(struct dhat *d, size_t *len)
{
    char *text = NULL;
    size_t n = 0;
    if (!dhat_finish(d, &header, &text, &n)) return NULL;
    if (len) *len = n;
    return text;
}

/* The point of fs, v added to it. */
static uint32_t
add(struct dhat *d, const uint32_t *fs, size_t n, const struct dhat_values *v)
{
    uint32_t point = dhat_point(d, fs, n);
    dhat_add(d, point, v);
    return point;
}

static uint32_t
frame(struct dhat *d, const char *name, const char *where)
{
    return dhat_frame_at(d, name, strlen(name), where, strlen(where));
}

static void
test_frames(void)
{
    struct dhat *d = dhat_new(), *e = dhat_new();
    uint32_t a = frame(d, "Foo#bar", "a.rb:3"), b = frame(d, "Foo#baz", "a.rb:3");
    CHECK(a == 1 && b == 2, "frames after [root]: %u %u", a, b);
    CHECK(frame(d, "Foo#bar", "a.rb:3") == a, "same text, same index");
    CHECK(dhat_frame(d, "[root]", 6) == 0, "[root] is frame 0");
    /* the address comes from the text: the same in another file */
    frame(e, "x", "y");
    uint32_t a2 = frame(e, "Foo#bar", "a.rb:3");
    char *t1 = finish(d, NULL), *t2 = finish(e, NULL);
    const char *s1 = t1 ? strstr(t1, "\"0x") : NULL;
    const char *s2 = t2 ? strstr(t2, ": Foo#bar (a.rb:3)") : NULL;
    CHECK(s1 && s2 && a2 == 2, "both written");
    if (s1 && s2) {
        const char *end1 = strchr(s1, ':');
        const char *start2 = s2;
        while (start2 > t2 && start2[-1] != '"') start2--;
        CHECK((size_t)(end1 - s1 - 1) == (size_t)(s2 - start2) && memcmp(s1 + 1, start2, (size_t)(s2 - start2)) == 0,
              "same address in both files: %.20s / %.20s", s1, start2);
        CHECK(strncmp(s1, "\"0x", 3) == 0 && strstr(s1, ": Foo#bar (a.rb:3)\"") == end1, "DHAT's form: %.40s", s1);
    }
    free(t1);
    free(t2);

    char where[64];
    CHECK(dhat_where(where, sizeof(where), "a.rb", 4, 12) == 7 && strcmp(where, "a.rb:12") == 0, "path:line (%s)", where);
    CHECK(dhat_where(where, sizeof(where), "a.rb", 4, 0) == 4 && strcmp(where, "a.rb") == 0, "no line (%s)", where);
    CHECK(dhat_where(where, sizeof(where), NULL, 0, 5) == 4 && strcmp(where, "in C") == 0, "no path (%s)", where);
    /* a NUL in the path is kept (as pprof keeps it) */
    CHECK(dhat_where(where, sizeof(where), "a\0b.rb", 6, 3) == 8 && memcmp(where, "a\0b.rb:3", 9) == 0, "NUL kept");
    CHECK(dhat_where(where, 4, "abcdef", 6, 1) == 8 && strcmp(where, "abc") == 0, "cut at size, length needed");
    dhat_free(d);
    dhat_free(e);
}

static void
test_points(void)
{
    struct dhat *d = dhat_new();
    uint32_t f1 = frame(d, "a", "x:1"), f2 = frame(d, "b", "x:2");
    uint32_t ab[] = { f1, f2 }, ba[] = { f2, f1 }, a[] = { f1 };
    struct dhat_values v = { .tb = 100, .tbk = 2, .tl = 50, .mb = 999, .gb = 40, .gbk = 1, .eb = 10, .ebk = 0.5 };
    uint32_t p1 = add(d, ab, 2, &v), p2 = add(d, ba, 2, &v), p3 = add(d, a, 1, &v);
    CHECK(p1 == 0 && p2 == 1 && p3 == 2 && dhat_points(d) == 3, "three lists, three points");
    CHECK(add(d, ab, 2, &v) == p1 && dhat_points(d) == 3, "an equal list is the same point");
    const struct dhat_values *s = dhat_point_values(d, p1);
    CHECK(s->tb == 200 && s->tbk == 4 && s->tl == 100 && s->gb == 80 && s->gbk == 2 && s->eb == 20 && s->ebk == 1,
          "its values add up");
    CHECK(s->mb == 0 && s->mbk == 0, "a maximum is never added (%g)", s->mb);
    CHECK(dhat_point_values(d, 3) == NULL, "no point 3");
    dhat_add(d, UINT32_MAX, &v);
    CHECK(dhat_points(d) == 3 && dhat_point_values(d, p1)->tb == 200, "adding to no point does nothing");
    dhat_free(d);
}

static void
test_max(void)
{
    struct dhat *d = dhat_new();
    uint32_t f = frame(d, "a", "x:1"), g = frame(d, "b", "x:1");
    struct dhat_values zero = { 0 };
    uint32_t p = add(d, &f, 1, &zero), q = add(d, &g, 1, &zero);
    struct dhat_life lives[] = {
        { p, 1, 3, 100, 1 },    /* live at 1, 2 */
        { p, 2, 4, 50, 2 },     /* live at 2, 3: 150 at 2 */
        { p, 3, DHAT_STILL_LIVE, 80, 1 },   /* 130 at 3 */
        { p, 5, 5, 1000, 9 },   /* never live at a known moment */
        { q, 7, DHAT_STILL_LIVE, 30, 3 },
        { q, 1, 7, 20, 1 },     /* gone when the other comes: 30 at most */
        { 99, 1, 2, 1e9, 1 },   /* no such point */
    };
    CHECK(dhat_max_from_lives(d, lives, sizeof(lives) / sizeof(lives[0])), "sweep");
    const struct dhat_values *v = dhat_point_values(d, p), *w = dhat_point_values(d, q);
    CHECK(v->mb == 150 && v->mbk == 3, "p: 150 bytes in 3 blocks at 2 (%g, %g)", v->mb, v->mbk);
    CHECK(w->mb == 30 && w->mbk == 3, "q: 30 bytes in 3 blocks (%g, %g)", w->mb, w->mbk);

    /* written: at least t-gmax's and t-end's bytes */
    struct dhat *e = dhat_new();
    uint32_t h = frame(e, "h", "x:1"), k = frame(e, "k", "x:1");
    struct dhat_values at_peak = { .tb = 10, .gb = 70, .gbk = 7, .eb = 5, .ebk = 1 };
    struct dhat_values at_end = { .tb = 10, .gb = 5, .gbk = 1, .eb = 60, .ebk = 6 };
    add(e, &h, 1, &at_peak);
    add(e, &k, 1, &at_end);
    char *text = finish(e, NULL);
    CHECK(text && strstr(text, "\"mb\":70,\"mbk\":7,\"gb\":70") && strstr(text, "\"mb\":60,\"mbk\":6,\"gb\":5"),
          "mb at least gb and eb:\n%s", text);
    free(text);
    dhat_free(d);
    dhat_free(e);
}

static void
test_text(void)
{
    struct dhat *d = dhat_new();
    uint32_t f = dhat_frame(d, "q\"b\\s\n\x01\x7f", 8);
    uint32_t g = dhat_frame(d, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 14);
    uint32_t bad = dhat_frame(d, "a\xff" "b\xc3" "c\xed\xa0\x80" "d\xc0\xaf", 11);
    uint32_t fs[] = { f, g, bad };
    struct dhat_values v = { .tb = 2.5, .tbk = 0.49, .tl = 1e20, .gb = -1e-9, .eb = 7.6, .ebk = 1 };
    add(d, fs, 3, &v);
    size_t len;
    char *text = finish(d, &len);
    const char *want =
        "{\"dhatFileVersion\":2\n"
        ",\"mode\":\"heap\"\n"
        ",\"verb\":\"Allocated\"\n"
        ",\"bklt\":true\n"
        ",\"bkacc\":false\n"
        ",\"tu\":\"bytes allocated\",\"Mtu\":\"MB allocated\"\n"
        ",\"tuth\":100\n"
        ",\"cmd\":\"ruby t.rb\"\n"
        ",\"pid\":42\n"
        ",\"te\":1000\n"
        ",\"tg\":400\n"
        ",\"pps\":\n"
        "[{\"tb\":3,\"tbk\":0,\"tl\":100000000000000000000,\"mb\":8,\"mbk\":1,\"gb\":0,\"gbk\":0,\"eb\":8,\"ebk\":1,\"fs\":[1,2,3]}\n"
        "]\n"
        ",\"ftbl\":\n"
        "[\"[root]\"\n"
        ",\"q\\\"b\\\\s\\u000a\\u0001\\u007f\"\n"
        ",\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"\n"
        ",\"a\\ufffdb\\ufffdc\\ufffd\\ufffd\\ufffdd\\ufffd\\ufffd\"\n"
        "]\n"
        "}\n";
    CHECK(text && strcmp(text, want) == 0 && len == strlen(want), "the whole text:\n%s\nwanted:\n%s", text, want);
    free(text);
    dhat_free(d);

    /* an empty file is still a file */
    d = dhat_new();
    text = finish(d, NULL);
    CHECK(text && strstr(text, ",\"pps\":\n[\n]\n,\"ftbl\":\n[\"[root]\"\n]\n}\n"), "no points:\n%s", text);
    free(text);
    dhat_free(d);
}

static void
test_many(void)
{
    struct dhat *d = dhat_new();
    bool ok = true;
    struct dhat_values one = { .tb = 1, .tbk = 1 };
    for (unsigned i = 0; i < 20000; i++) {
        char name[32];
        int n = snprintf(name, sizeof(name), "m%u", i);
        uint32_t fs[2] = { dhat_frame_at(d, name, (size_t)n, "z.rb:1", 6), dhat_frame_at(d, "main", 4, "z.rb:9", 6) };
        /* m0 is 1, main 2, then m1 3, ... */
        ok &= fs[0] == (i ? i + 2 : 1) && fs[1] == 2;
        ok &= add(d, fs, 2, &one) == i && add(d, fs, 2, &one) == i;
    }
    CHECK(ok && dhat_points(d) == 20000, "20000 points, frames in order (%zu)", dhat_points(d));
    CHECK(dhat_point_values(d, 12345)->tb == 2, "each added twice");
    char *text = finish(d, NULL);
    CHECK(text && strstr(text, "\"0x") && strstr(text, ": m19999 (z.rb:1)\""), "every frame written");
    free(text);
    dhat_free(d);
}

int
main(void)
{
    test_frames();
    test_points();
    test_max();
    test_text();
    test_many();
    return check_summary();
}
