/*
 * test_pprof_roundtrip.c: pprof.c's profiles, read back.  A small decoder
 * of profile.proto (written here from the .proto, sharing nothing with
 * the encoder: every wire type, packed and unpacked repeated fields,
 * strict about lengths) reads what the encoder wrote, and the test checks
 * it field by field: the sample types and their order, the period, the
 * comments and the default type; every sample's location ids, values
 * (zeros, negatives, 2**40, the PPROF_MAX_VALUES cut) and labels; each
 * Location's function and line, each Function's name and file, through
 * the string table ("" first, each string once, bytes kept exactly); the
 * one Mapping when addresses are on, none when off.  test_pprof.c checks
 * the addresses themselves.  (gzip is left to the integration tests: the
 * unit tests link no zlib, so compress gives the plain bytes here.)
 */
// links: pprof.c addresses.c
#include "check.h"
#include "addresses.h"
#include "pprof.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- the decoder: profile.proto, field numbers from the .proto ---- */

struct rd {
    const uint8_t *p, *end;
    bool bad;           /* truncated, overlong, or a wire type not in the format */
};

static uint64_t
rd_varint(struct rd *r)
{
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (r->p >= r->end) break;
        uint8_t c = *r->p++;
        if (shift == 63 && c > 1) break;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) return v;
    }
    r->bad = true;
    return 0;
}

struct field {
    int number, wire;
    uint64_t value;         /* wire types 0, 1, 5 */
    struct rd bytes;        /* wire type 2 */
};

/* The next field of r; false at the end (or when r is bad). */
static bool
rd_field(struct rd *r, struct field *f)
{
    if (r->bad || r->p >= r->end) return false;
    uint64_t key = rd_varint(r);
    f->number = (int)(key >> 3);
    f->wire = (int)(key & 7);
    f->value = 0;
    f->bytes = (struct rd){ NULL, NULL, false };
    if (f->number == 0) r->bad = true;
    switch (f->wire) {
      case 0: f->value = rd_varint(r); break;
      case 1: case 5: {
        size_t n = f->wire == 1 ? 8 : 4;
        if ((size_t)(r->end - r->p) < n) { r->bad = true; break; }
        for (size_t i = 0; i < n; i++) f->value |= (uint64_t)r->p[i] << (8 * i);
        r->p += n;
        break;
      }
      case 2: {
        uint64_t n = rd_varint(r);
        if (n > (uint64_t)(r->end - r->p)) { r->bad = true; break; }
        f->bytes = (struct rd){ r->p, r->p + n, false };
        r->p += n;
        break;
      }
      default: r->bad = true;
    }
    return !r->bad;
}

#define MAXN 64

/* A repeated integer field, packed (wire type 2) or one by one. */
struct ints {
    size_t n;
    uint64_t v[MAXN];
    bool overflow;
};

static void
ints_add(struct ints *a, const struct field *f, bool *bad)
{
    if (f->wire == 0) {
        if (a->n < MAXN) a->v[a->n++] = f->value;
        else a->overflow = true;
        return;
    }
    if (f->wire != 2) { *bad = true; return; }
    struct rd r = f->bytes;
    while (r.p < r.end && !r.bad) {
        uint64_t v = rd_varint(&r);
        if (a->n < MAXN) a->v[a->n++] = v;
        else a->overflow = true;
    }
    if (r.bad) *bad = true;
}

struct value_type { uint64_t type, unit; };
struct label { uint64_t key, str, num, num_unit; };
struct sample { struct ints locations, values; size_t nlabels; struct label labels[8]; };
struct line { uint64_t function, line; };
struct location { uint64_t id, mapping, address; size_t nlines; struct line lines[4]; bool folded; };
struct function { uint64_t id, name, system_name, filename, start_line; };
struct mapping { uint64_t id, start, limit, offset, filename, build_id; bool functions, filenames, lines, inline_frames; };

struct profile {
    bool bad;               /* anything the format does not allow, or past this decoder's sizes */
    size_t ntypes, nsamples, nmappings, nlocations, nfunctions, nstrings;
    struct value_type types[PPROF_MAX_VALUES + 4];
    struct sample samples[16];
    struct mapping mappings[4];
    struct location locations[MAXN];
    struct function functions[MAXN];
    struct { const uint8_t *s; size_t len; } strings[MAXN];
    struct ints comments;
    uint64_t time_nanos, duration_nanos, period, default_type, drop_frames, keep_frames;
    struct value_type period_type;
    bool has_period_type;
};

#define SLOT(arr, n, pr) ((n) < sizeof(arr) / sizeof((arr)[0]) ? &(arr)[(n)++] : ((pr)->bad = true, NULL))

static bool
want_wire(const struct field *f, int wire, struct profile *pr)
{
    if (f->wire != wire) pr->bad = true;
    return f->wire == wire;
}

static struct value_type
value_type(struct rd r, struct profile *pr)
{
    struct value_type v = { 0, 0 };
    struct field f;
    while (rd_field(&r, &f)) {
        if (f.number == 1 && want_wire(&f, 0, pr)) v.type = f.value;
        else if (f.number == 2 && want_wire(&f, 0, pr)) v.unit = f.value;
    }
    if (r.bad) pr->bad = true;
    return v;
}

static void
sample(struct rd r, struct profile *pr)
{
    struct sample *s = SLOT(pr->samples, pr->nsamples, pr);
    if (!s) return;
    memset(s, 0, sizeof(*s));
    struct field f, g;
    while (rd_field(&r, &f)) {
        if (f.number == 1) ints_add(&s->locations, &f, &pr->bad);
        else if (f.number == 2) ints_add(&s->values, &f, &pr->bad);
        else if (f.number == 3 && want_wire(&f, 2, pr)) {
            struct label *l = SLOT(s->labels, s->nlabels, pr);
            if (!l) continue;
            memset(l, 0, sizeof(*l));
            while (rd_field(&f.bytes, &g)) {
                uint64_t *to = g.number == 1 ? &l->key : g.number == 2 ? &l->str : g.number == 3 ? &l->num
                    : g.number == 4 ? &l->num_unit : NULL;
                if (to && want_wire(&g, 0, pr)) *to = g.value;
            }
            if (f.bytes.bad) pr->bad = true;
        }
    }
    if (r.bad || s->locations.overflow || s->values.overflow) pr->bad = true;
}

static void
location(struct rd r, struct profile *pr)
{
    struct location *l = SLOT(pr->locations, pr->nlocations, pr);
    if (!l) return;
    memset(l, 0, sizeof(*l));
    struct field f, g;
    while (rd_field(&r, &f)) {
        if (f.number == 1 && want_wire(&f, 0, pr)) l->id = f.value;
        else if (f.number == 2 && want_wire(&f, 0, pr)) l->mapping = f.value;
        else if (f.number == 3 && want_wire(&f, 0, pr)) l->address = f.value;
        else if (f.number == 4 && want_wire(&f, 2, pr)) {
            struct line *ln = SLOT(l->lines, l->nlines, pr);
            if (!ln) continue;
            memset(ln, 0, sizeof(*ln));
            while (rd_field(&f.bytes, &g)) {
                if (g.number == 1 && want_wire(&g, 0, pr)) ln->function = g.value;
                else if (g.number == 2 && want_wire(&g, 0, pr)) ln->line = g.value;
            }
            if (f.bytes.bad) pr->bad = true;
        }
        else if (f.number == 5 && want_wire(&f, 0, pr)) l->folded = f.value != 0;
    }
    if (r.bad) pr->bad = true;
}

static void
function(struct rd r, struct profile *pr)
{
    struct function *fn = SLOT(pr->functions, pr->nfunctions, pr);
    if (!fn) return;
    memset(fn, 0, sizeof(*fn));
    struct field f;
    while (rd_field(&r, &f)) {
        uint64_t *to = f.number == 1 ? &fn->id : f.number == 2 ? &fn->name : f.number == 3 ? &fn->system_name
            : f.number == 4 ? &fn->filename : f.number == 5 ? &fn->start_line : NULL;
        if (to && want_wire(&f, 0, pr)) *to = f.value;
    }
    if (r.bad) pr->bad = true;
}

static void
mapping(struct rd r, struct profile *pr)
{
    struct mapping *m = SLOT(pr->mappings, pr->nmappings, pr);
    if (!m) return;
    memset(m, 0, sizeof(*m));
    struct field f;
    while (rd_field(&r, &f)) {
        if (!want_wire(&f, 0, pr)) continue;
        switch (f.number) {
          case 1: m->id = f.value; break;
          case 2: m->start = f.value; break;
          case 3: m->limit = f.value; break;
          case 4: m->offset = f.value; break;
          case 5: m->filename = f.value; break;
          case 6: m->build_id = f.value; break;
          case 7: m->functions = f.value; break;
          case 8: m->filenames = f.value; break;
          case 9: m->lines = f.value; break;
          case 10: m->inline_frames = f.value; break;
        }
    }
    if (r.bad) pr->bad = true;
}

static void
decode(const uint8_t *data, size_t len, struct profile *pr)
{
    memset(pr, 0, sizeof(*pr));
    struct rd r = { data, data + len, false };
    struct field f;
    while (rd_field(&r, &f)) {
        switch (f.number) {
          case 1: if (want_wire(&f, 2, pr)) { struct value_type *t = SLOT(pr->types, pr->ntypes, pr); if (t) *t = value_type(f.bytes, pr); } break;
          case 2: if (want_wire(&f, 2, pr)) sample(f.bytes, pr); break;
          case 3: if (want_wire(&f, 2, pr)) mapping(f.bytes, pr); break;
          case 4: if (want_wire(&f, 2, pr)) location(f.bytes, pr); break;
          case 5: if (want_wire(&f, 2, pr)) function(f.bytes, pr); break;
          case 6:
            if (want_wire(&f, 2, pr) && pr->nstrings < MAXN) {
                pr->strings[pr->nstrings].s = f.bytes.p;
                pr->strings[pr->nstrings++].len = (size_t)(f.bytes.end - f.bytes.p);
            }
            else pr->bad = true;
            break;
          case 7: if (want_wire(&f, 0, pr)) pr->drop_frames = f.value; break;
          case 8: if (want_wire(&f, 0, pr)) pr->keep_frames = f.value; break;
          case 9: if (want_wire(&f, 0, pr)) pr->time_nanos = f.value; break;
          case 10: if (want_wire(&f, 0, pr)) pr->duration_nanos = f.value; break;
          case 11: if (want_wire(&f, 2, pr)) { pr->period_type = value_type(f.bytes, pr); pr->has_period_type = true; } break;
          case 12: if (want_wire(&f, 0, pr)) pr->period = f.value; break;
          case 13: ints_add(&pr->comments, &f, &pr->bad); break;
          case 14: if (want_wire(&f, 0, pr)) pr->default_type = f.value; break;
          default: pr->bad = true;   /* nothing else is in profile.proto */
        }
    }
    if (r.bad || pr->comments.overflow) pr->bad = true;
}

/* ---- reading the decoded profile ---- */

/* String i, or "(bad index)"; strings hold no NUL here but one test. */
static const char *
str(const struct profile *pr, uint64_t i)
{
    static char out[4][128];
    static int k;
    if (i >= pr->nstrings) return "(bad index)";
    char *o = out[k++ & 3];
    size_t n = pr->strings[i].len < 127 ? pr->strings[i].len : 127;
    memcpy(o, pr->strings[i].s, n);
    o[n] = '\0';
    return o;
}

static const struct location *
location_by_id(const struct profile *pr, uint64_t id)
{
    for (size_t i = 0; i < pr->nlocations; i++) if (pr->locations[i].id == id) return &pr->locations[i];
    return NULL;
}

static const struct function *
function_by_id(const struct profile *pr, uint64_t id)
{
    for (size_t i = 0; i < pr->nfunctions; i++) if (pr->functions[i].id == id) return &pr->functions[i];
    return NULL;
}

/* "name file:line" of a location id, through the tables. */
static const char *
frame(const struct profile *pr, uint64_t id)
{
    static char out[4][256];
    static int k;
    char *o = out[k++ & 3];
    const struct location *l = location_by_id(pr, id);
    if (!l || l->nlines != 1) return "(no location)";
    const struct function *f = function_by_id(pr, l->lines[0].function);
    if (!f) return "(no function)";
    snprintf(o, 256, "%s %s:%" PRId64, str(pr, f->name), str(pr, f->filename), (int64_t)l->lines[0].line);
    return o;
}

/* ---- the tests ---- */

static bool
finish(struct pprof *p, struct profile *pr)
{
    uint8_t *out;
    size_t len;
    bool ok = pprof_finish(p, true, &out, &len);
    pprof_free(p);
    if (!ok) return false;
    decode(out, len, pr);
    free(out);
    return true;
}

static const char *const type_names[][2] = {
    { "alloc_objects", "count" }, { "alloc_space", "bytes" }, { "inuse_objects", "count" }, { "inuse_space", "bytes" },
};

static void
test_header_and_samples(void)
{
    static struct profile pr;
    struct pprof *p = pprof_new(NULL);
    CHECK(p != NULL, "pprof_new");
    if (!p) return;
    for (size_t i = 0; i < 4; i++) pprof_sample_type(p, type_names[i][0], type_names[i][1]);
    pprof_period(p, "space", "bytes", 524288);
    pprof_comment(p, "mode=poisson interval=524288");
    pprof_comment(p, "second comment");
    pprof_default_sample_type(p, "inuse_space");
    pprof_time(p, 1700000000123456789, 2500000000);

    /* frames: (name, file, line); A#a twice at one line is one location */
    uint64_t fa = pprof_function(p, pprof_cstring(p, "A#a"), pprof_cstring(p, "/app/a.rb"));
    uint64_t fb = pprof_function(p, pprof_cstring(p, "block in <main>"), pprof_cstring(p, "/app/main.rb"));
    uint64_t fa2 = pprof_function(p, pprof_cstring(p, "A#a"), pprof_cstring(p, "/app/a.rb"));
    CHECK(fa == 1 && fb == 2 && fa2 == fa, "function ids 1, 2, and the same again (%" PRIu64 " %" PRIu64 " %" PRIu64 ")",
          fa, fb, fa2);
    uint64_t la10 = pprof_location(p, fa, 10), la11 = pprof_location(p, fa, 11), lb = pprof_location(p, fb, 3);
    CHECK(la10 == 1 && la11 == 2 && lb == 3 && pprof_location(p, fa, 10) == la10, "location ids 1, 2, 3, the same again");

    uint64_t k_thread = pprof_cstring(p, "thread"), v_main = pprof_cstring(p, "main");
    uint64_t k_ep = pprof_cstring(p, "endpoint"), v_users = pprof_cstring(p, "/users/:id");
    struct pprof_label labels[] = { { k_thread, v_main }, { k_ep, v_users } };

    uint64_t stack1[] = { la10, lb }, stack2[] = { la11, la10, lb };
    int64_t v1[] = { 1, 524288, 0, 0 };
    int64_t v2[] = { 3, (int64_t)1 << 40, 2, -7 };
    int64_t v0[] = { 0, 0, 0, 0 };
    pprof_sample(p, stack1, 2, v1, 4, labels, 2);
    pprof_sample(p, stack2, 3, v2, 4, NULL, 0);
    pprof_sample(p, stack1, 2, v0, 4, labels, 1);
    pprof_sample(p, NULL, 0, v1, 4, NULL, 0);

    CHECK(finish(p, &pr), "pprof_finish");
    CHECK(!pr.bad, "the decoder read the whole profile as profile.proto");

    /* strings: "" first, each once */
    CHECK(pr.nstrings > 0 && pr.strings[0].len == 0, "string_table[0] is \"\"");
    for (size_t i = 0; i < pr.nstrings; i++)
        for (size_t j = 0; j < i; j++)
            CHECK(pr.strings[i].len != pr.strings[j].len || memcmp(pr.strings[i].s, pr.strings[j].s, pr.strings[i].len) != 0,
                  "strings %zu and %zu differ (%s)", j, i, str(&pr, i));

    /* the header */
    CHECK(pr.ntypes == 4, "4 sample types (%zu)", pr.ntypes);
    for (size_t i = 0; i < 4 && i < pr.ntypes; i++) {
        CHECK(strcmp(str(&pr, pr.types[i].type), type_names[i][0]) == 0 && strcmp(str(&pr, pr.types[i].unit), type_names[i][1]) == 0,
              "sample type %zu: %s/%s, want %s/%s", i, str(&pr, pr.types[i].type), str(&pr, pr.types[i].unit),
              type_names[i][0], type_names[i][1]);
    }
    CHECK(pr.has_period_type && strcmp(str(&pr, pr.period_type.type), "space") == 0 &&
          strcmp(str(&pr, pr.period_type.unit), "bytes") == 0, "period type space/bytes");
    CHECK(pr.period == 524288, "period 524288 (%" PRIu64 ")", pr.period);
    CHECK(pr.comments.n == 2 && strcmp(str(&pr, pr.comments.v[0]), "mode=poisson interval=524288") == 0 &&
          strcmp(str(&pr, pr.comments.v[1]), "second comment") == 0, "two comments, in order");
    CHECK(strcmp(str(&pr, pr.default_type), "inuse_space") == 0, "default sample type inuse_space");
    CHECK(pr.time_nanos == 1700000000123456789ull && pr.duration_nanos == 2500000000ull, "time and duration");
    CHECK(pr.nmappings == 0, "no addresses, no mapping");

    /* the tables */
    CHECK(pr.nfunctions == 2 && pr.nlocations == 3, "2 functions, 3 locations (%zu, %zu)", pr.nfunctions, pr.nlocations);
    for (size_t i = 0; i < pr.nlocations; i++) {
        CHECK(pr.locations[i].id == i + 1 && pr.locations[i].mapping == 0 && pr.locations[i].address == 0,
              "location %zu: id %zu, no mapping or address", i, i + 1);
    }
    CHECK(strcmp(frame(&pr, la10), "A#a /app/a.rb:10") == 0, "location 1: %s", frame(&pr, la10));
    CHECK(strcmp(frame(&pr, la11), "A#a /app/a.rb:11") == 0, "location 2: %s", frame(&pr, la11));
    CHECK(strcmp(frame(&pr, lb), "block in <main> /app/main.rb:3") == 0, "location 3: %s", frame(&pr, lb));
    for (size_t i = 0; i < pr.nfunctions; i++)
        CHECK(pr.functions[i].system_name == 0, "function %zu: no system_name (pprof would cut <...>)", i);

    /* the samples, in the order written */
    CHECK(pr.nsamples == 4, "4 samples (%zu)", pr.nsamples);
    if (pr.nsamples != 4) return;
    const struct sample *s = pr.samples;
    CHECK(s[0].locations.n == 2 && strcmp(frame(&pr, s[0].locations.v[0]), "A#a /app/a.rb:10") == 0 &&
          strcmp(frame(&pr, s[0].locations.v[1]), "block in <main> /app/main.rb:3") == 0, "sample 1: innermost first");
    CHECK(s[1].locations.n == 3 && s[1].locations.v[0] == la11 && s[1].locations.v[1] == la10 && s[1].locations.v[2] == lb,
          "sample 2's stack");
    CHECK(s[3].locations.n == 0, "a sample without frames");
    const int64_t *want[] = { v1, v2, v0, v1 };
    for (size_t i = 0; i < 4; i++) {
        CHECK(s[i].values.n == 4, "sample %zu: a value per type, zeros written (%zu)", i, s[i].values.n);
        for (size_t j = 0; j < 4 && j < s[i].values.n; j++)
            CHECK((int64_t)s[i].values.v[j] == want[i][j], "sample %zu value %zu: %" PRId64 ", want %" PRId64, i, j,
                  (int64_t)s[i].values.v[j], want[i][j]);
    }
    CHECK(s[0].nlabels == 2 && strcmp(str(&pr, s[0].labels[0].key), "thread") == 0 &&
          strcmp(str(&pr, s[0].labels[0].str), "main") == 0 && strcmp(str(&pr, s[0].labels[1].key), "endpoint") == 0 &&
          strcmp(str(&pr, s[0].labels[1].str), "/users/:id") == 0 && s[0].labels[0].num == 0, "sample 1's labels");
    CHECK(s[1].nlabels == 0 && s[2].nlabels == 1, "labels only where given");
}

/* Strings keep their bytes (UTF-8, a NUL, 300 bytes); "" is index 0;
 * too many values are cut to PPROF_MAX_VALUES. */
static void
test_strings_and_limits(void)
{
    static struct profile pr;
    struct pprof *p = pprof_new(NULL);
    if (!p) { CHECK(0, "pprof_new"); return; }
    CHECK(pprof_cstring(p, "") == 0 && pprof_string(p, "x", 0) == 0, "\"\" is index 0");
    static const char nul[] = { 'a', '\0', 'b' };
    static char big[300];
    memset(big, 'z', sizeof(big));
    uint64_t u = pprof_cstring(p, "Café#naïve"), n = pprof_string(p, nul, 3), b = pprof_string(p, big, sizeof(big));
    CHECK(pprof_string(p, nul, 3) == n && pprof_string(p, nul, 1) != n, "interned by bytes and length");
    for (int i = 0; i < PPROF_MAX_VALUES + 4; i++) pprof_sample_type(p, "t", "u");
    int64_t values[PPROF_MAX_VALUES + 4];
    for (int i = 0; i < PPROF_MAX_VALUES + 4; i++) values[i] = i + 1;
    pprof_sample(p, NULL, 0, values, PPROF_MAX_VALUES + 4, NULL, 0);
    CHECK(finish(p, &pr), "pprof_finish");
    CHECK(!pr.bad, "the decoder read the whole profile");
    CHECK(pr.strings[u].len == strlen("Café#naïve") && memcmp(pr.strings[u].s, "Café#naïve", pr.strings[u].len) == 0,
          "UTF-8 kept");
    CHECK(pr.strings[n].len == 3 && memcmp(pr.strings[n].s, nul, 3) == 0, "a NUL kept");
    CHECK(pr.strings[b].len == sizeof(big) && memcmp(pr.strings[b].s, big, sizeof(big)) == 0, "300 bytes (a 2-byte length)");
    CHECK(pr.nsamples == 1 && pr.samples[0].values.n == PPROF_MAX_VALUES, "values cut to %d (%zu)", PPROF_MAX_VALUES,
          pr.nsamples ? pr.samples[0].values.n : 0);
    CHECK(pr.samples[0].values.v[PPROF_MAX_VALUES - 1] == PPROF_MAX_VALUES, "the first ones kept");
}

/* With the process's addresses: one Mapping, every location on it. */
static void
test_mapping(void)
{
    static struct profile pr;
    struct sampling_addresses a = SAMPLING_ADDRESSES_INIT;
    struct pprof *p = pprof_new(&a);
    if (!p) { CHECK(0, "pprof_new"); return; }
    pprof_sample_type(p, "alloc_space", "bytes");
    uint64_t f = pprof_function(p, pprof_cstring(p, "Integer#times"), pprof_cstring(p, "<internal:numeric>"));
    uint64_t l[] = { pprof_location(p, f, 0), pprof_location(p, f, 257) };
    int64_t v = 4096;
    pprof_sample(p, l, 2, &v, 1, NULL, 0);
    CHECK(finish(p, &pr), "pprof_finish");
    CHECK(!pr.bad, "the decoder read the whole profile");
    CHECK(pr.nmappings == 1 && pr.mappings[0].id == 1 && pr.mappings[0].functions && pr.mappings[0].filenames &&
          pr.mappings[0].lines && pr.mappings[0].filename == 0, "one symbolised mapping, no file");
    for (size_t i = 0; i < pr.nlocations; i++) {
        const struct location *loc = &pr.locations[i];
        CHECK(loc->mapping == 1 && loc->address != 0 && loc->address < pr.mappings[0].limit,
              "location %zu on the mapping (address %" PRIx64 ")", i, loc->address);
    }
    CHECK(strcmp(frame(&pr, l[0]), "Integer#times <internal:numeric>:0") == 0, "line 0: %s", frame(&pr, l[0]));
    CHECK(strcmp(frame(&pr, l[1]), "Integer#times <internal:numeric>:257") == 0, "line 257: %s", frame(&pr, l[1]));
    sampling_addresses_clear(&a);
}

/* The decoder refuses what is not a profile, so that a pass above means
 * something. */
static void
test_decoder(void)
{
    static struct profile pr;
    static const uint8_t truncated[] = { 0x0a, 0x05, 0x08, 0x01 };      /* a length past the end */
    static const uint8_t overlong[] = { 0x48, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f };
    static const uint8_t unknown[] = { 0x78, 0x01 };                      /* field 15 */
    static const uint8_t wrong_wire[] = { 0x0d, 0, 0, 0, 0 };             /* sample_type as fixed32 */
    static const uint8_t fine[] = { 0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x60, 0x80, 0x01 };
    decode(truncated, sizeof(truncated), &pr);
    CHECK(pr.bad, "truncated: refused");
    decode(overlong, sizeof(overlong), &pr);
    CHECK(pr.bad, "an 11-byte varint: refused");
    decode(unknown, sizeof(unknown), &pr);
    CHECK(pr.bad, "a field not in profile.proto: refused");
    decode(wrong_wire, sizeof(wrong_wire), &pr);
    CHECK(pr.bad, "a wrong wire type: refused");
    decode(fine, sizeof(fine), &pr);
    CHECK(!pr.bad && pr.ntypes == 1 && pr.types[0].type == 1 && pr.types[0].unit == 2 && pr.period == 128,
          "a hand-written profile: read");
}

int
main(void)
{
    test_decoder();
    test_header_and_samples();
    test_strings_and_limits();
    test_mapping();
    return check_summary();
}
