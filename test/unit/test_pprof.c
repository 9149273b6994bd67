/*
 * test_pprof.c: addresses.c and what pprof.c writes of it.  A frame
 * (name, file, line) gets the same non-zero address every time, different
 * frames different ones, numbered 1, 2, ... in order of first use; past
 * the cap a new frame gets a stable hashed address (bit 62 set) while the
 * frames held keep theirs.  A profile (decoded here field by field) has
 * "" as its first string, Function and Location ids 1, 2, ... in the
 * order written, and each Location the address of its frame: the same in
 * a second profile built from the same table, whatever order it names
 * its frames in.
 */
// links: pprof.c addresses.c
#include "check.h"
#include "addresses.h"
#include "pprof.h"

#include <stdlib.h>
#include <string.h>

static uint64_t
addr(struct sampling_addresses *a, const char *name, const char *file, int64_t line)
{
    return sampling_address(a, name, strlen(name), file, strlen(file), line);
}

static void
test_addresses(void)
{
    struct sampling_addresses a = SAMPLING_ADDRESSES_INIT;
    uint64_t x = addr(&a, "Foo#bar", "/app/foo.rb", 10);
    CHECK(x == 1, "first frame is 1 (got %llu)", (unsigned long long)x);
    CHECK(addr(&a, "Foo#bar", "/app/foo.rb", 10) == x, "same frame, same address");
    CHECK(addr(&a, "Foo#bar", "/app/foo.rb", 11) == 2, "another line, the next number");
    CHECK(addr(&a, "Foo#baz", "/app/foo.rb", 10) == 3, "another name");
    CHECK(addr(&a, "Foo#bar", "/app/bar.rb", 10) == 4, "another file");
    CHECK(addr(&a, "ab", "c", 0) != addr(&a, "a", "bc", 0), "the split between name and file counts");
    CHECK(addr(&a, "", "", 0) != 0, "an empty frame has an address too");
    CHECK(sampling_address(&a, NULL, 0, NULL, 0, 0) == addr(&a, "", "", 0), "NULL is the empty string");
    CHECK(a.hashed == 0, "nothing hashed below the cap");
    CHECK(sampling_addresses_memsize(&a) > 0, "memory counted");

    /* many frames: all distinct, all found again */
    enum { N = 5000 };
    static uint64_t seen[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "m%d", i);
        seen[i] = addr(&a, name, "/app/many.rb", i % 7);
    }
    int distinct = 1, stable = 1;
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof(name), "m%d", i);
        stable &= addr(&a, name, "/app/many.rb", i % 7) == seen[i];
        distinct &= i == 0 || seen[i] == seen[i - 1] + 1;
    }
    CHECK(stable, "every frame finds its address again after the tables grew");
    CHECK(distinct, "numbers in order of first use");
    sampling_addresses_clear(&a);
    CHECK(addr(&a, "Foo#bar", "/app/foo.rb", 10) == 1, "clear starts over");
    sampling_addresses_clear(&a);

    /* the cap: frames past it are hashed, stable, and flagged */
    a.max_frames = 4;
    for (int i = 0; i < 4; i++) addr(&a, "kept", "/f.rb", i);
    uint64_t h = addr(&a, "past", "/f.rb", 0);
    CHECK(h & SAMPLING_ADDRESS_HASHED, "past the frame cap: hashed (%llx)", (unsigned long long)h);
    CHECK(addr(&a, "past", "/f.rb", 0) == h, "a hashed address is stable");
    CHECK(addr(&a, "past", "/f.rb", 1) != h, "and differs by frame");
    CHECK(addr(&a, "kept", "/f.rb", 2) == 3, "frames held keep their numbers");
    CHECK(a.hashed == 3, "hashed frames counted (%llu)", (unsigned long long)a.hashed);
    sampling_addresses_clear(&a);
    a.max_frames = SAMPLING_ADDRESSES_MAX_FRAMES;
    a.max_bytes = 8;
    CHECK(addr(&a, "1234", "5678", 0) == 1, "text up to the byte cap");
    CHECK(addr(&a, "123456789", "x", 0) & SAMPLING_ADDRESS_HASHED, "past the byte cap: hashed");
    CHECK(addr(&a, "1234", "5678", 0) == 1, "still found");
    sampling_addresses_clear(&a);
}

/* ---- a reader of the few protobuf fields written ---- */

struct pb {
    const uint8_t *p, *end;
};

static uint64_t
pb_varint(struct pb *b)
{
    uint64_t v = 0;
    for (int shift = 0; b->p < b->end; shift += 7) {
        uint8_t c = *b->p++;
        v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) break;
    }
    return v;
}

/* The next field: its number, and its value (varint) or bytes (length-delimited). */
static int
pb_field(struct pb *b, uint64_t *value, struct pb *bytes)
{
    if (b->p >= b->end) return 0;
    uint64_t key = pb_varint(b);
    if ((key & 7) == 0) *value = pb_varint(b);
    else {
        uint64_t n = pb_varint(b);
        *bytes = (struct pb){ b->p, b->p + n };
        b->p += n;
    }
    return (int)(key >> 3);
}

struct decoded {
    size_t nstrings, nfunctions, nlocations;
    char first_string[16];
    uint64_t function_ids[16], location_ids[16], addresses[16], location_line[16], location_function[16];
    uint64_t function_name[16];
    char strings[64][32];
};

static void
decode(const uint8_t *data, size_t len, struct decoded *d)
{
    memset(d, 0, sizeof(*d));
    struct pb b = { data, data + len }, m, sub;
    uint64_t v;
    int f;
    while ((f = pb_field(&b, &v, &m))) {
        if (f == 6 && d->nstrings < 64) {
            size_t n = (size_t)(m.end - m.p);
            memcpy(d->strings[d->nstrings], m.p, n < 31 ? n : 31);
            d->nstrings++;
        }
        else if (f == 5 && d->nfunctions < 16) {
            size_t i = d->nfunctions++;
            int g;
            while ((g = pb_field(&m, &v, &sub))) {
                if (g == 1) d->function_ids[i] = v;
                if (g == 2) d->function_name[i] = v;
            }
        }
        else if (f == 4 && d->nlocations < 16) {
            size_t i = d->nlocations++;
            int g;
            while ((g = pb_field(&m, &v, &sub))) {
                if (g == 1) d->location_ids[i] = v;
                if (g == 3) d->addresses[i] = v;
                if (g == 4) {
                    struct pb line;
                    int k;
                    while ((k = pb_field(&sub, &v, &line))) {
                        if (k == 1) d->location_function[i] = v;
                        if (k == 2) d->location_line[i] = v;
                    }
                }
            }
        }
    }
}

/* A profile naming frames[order[0..n)]: (name, file, line). */
static const char *const frames[][2] = { { "A#a", "/a.rb" }, { "B#b", "/b.rb" }, { "A#a", "/a.rb" }, { "<main>", "/m.rb" } };
static const int64_t lines[] = { 1, 2, 3, 4 };

static int
build(struct sampling_addresses *a, const int *order, size_t n, struct decoded *d)
{
    struct pprof *p = pprof_new(a);
    if (!p) return 0;
    pprof_sample_type(p, "alloc_space", "bytes");
    uint64_t ids[4];
    for (size_t i = 0; i < n; i++) {
        const char *const *fr = frames[order[i]];
        uint64_t fn = pprof_function(p, pprof_cstring(p, fr[0]), pprof_cstring(p, fr[1]));
        ids[i] = pprof_location(p, fn, lines[order[i]]);
    }
    int64_t value = 100;
    pprof_sample(p, ids, n, &value, 1, NULL, 0);
    uint8_t *out;
    size_t len;
    int ok = pprof_finish(p, false, &out, &len);
    pprof_free(p);
    if (!ok) return 0;
    decode(out, len, d);
    free(out);
    return 1;
}

/* The address the profile gives frame k (by its name and line). */
static uint64_t
address_of(const struct decoded *d, int k)
{
    for (size_t i = 0; i < d->nlocations; i++) {
        uint64_t fn = d->location_function[i];
        if (d->location_line[i] == (uint64_t)lines[k] && fn >= 1 && fn <= d->nfunctions &&
            strcmp(d->strings[d->function_name[fn - 1]], frames[k][0]) == 0) return d->addresses[i];
    }
    return 0;
}

static void
test_profile(void)
{
    struct sampling_addresses a = SAMPLING_ADDRESSES_INIT;
    struct decoded d1, d2;
    static const int first[] = { 0, 1, 2, 3 }, second[] = { 3, 2, 1, 0 };
    CHECK(build(&a, first, 4, &d1), "profile 1 built");
    CHECK(build(&a, second, 4, &d2), "profile 2 built");
    CHECK(d1.nstrings > 0 && d1.strings[0][0] == 0, "string_table[0] is empty");
    CHECK(d1.nfunctions == 3 && d1.nlocations == 4, "3 functions, 4 locations (%zu, %zu)", d1.nfunctions, d1.nlocations);
    for (size_t i = 0; i < d1.nfunctions; i++) CHECK(d1.function_ids[i] == i + 1, "function %zu has id %zu", i, i + 1);
    for (size_t i = 0; i < d2.nlocations; i++) CHECK(d2.location_ids[i] == i + 1, "location %zu has id %zu", i, i + 1);
    for (size_t i = 0; i < d1.nlocations; i++) {
        CHECK(d1.addresses[i] != 0, "location %zu has an address", i);
        for (size_t j = 0; j < i; j++) CHECK(d1.addresses[i] != d1.addresses[j], "locations %zu and %zu differ", i, j);
    }
    for (int k = 0; k < 4; k++) {
        CHECK(address_of(&d1, k) != 0 && address_of(&d1, k) == address_of(&d2, k),
              "frame %d: the same address in both profiles (%llu, %llu)", k,
              (unsigned long long)address_of(&d1, k), (unsigned long long)address_of(&d2, k));
    }
    CHECK(d2.addresses[0] == address_of(&d1, 3), "profile 2's location 1 is frame 3, named last in profile 1");
    sampling_addresses_clear(&a);

    /* a full table: every frame hashed, still distinct and stable */
    a.max_frames = 0;
    CHECK(build(&a, first, 4, &d1) && build(&a, second, 4, &d2), "profiles built from a full table");
    for (int k = 0; k < 4; k++) {
        CHECK(address_of(&d1, k) & SAMPLING_ADDRESS_HASHED, "frame %d hashed", k);
        CHECK(address_of(&d1, k) == address_of(&d2, k), "frame %d: the same hashed address in both", k);
        for (int j = 0; j < k; j++) CHECK(address_of(&d1, j) != address_of(&d1, k), "frames %d and %d differ", j, k);
    }
    sampling_addresses_clear(&a);
}

int
main(void)
{
    test_addresses();
    test_profile();
    return check_summary();
}
