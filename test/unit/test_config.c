/*
 * test_config.c: config.c's settings, table-driven.  Each row is one
 * RUBY_GC_SAMPLING value and what it must give: the settings that differ
 * from the defaults (rendered "key=value ..." in one fixed order), or the
 * exact one-line reason the warning prints.  The rows cover every
 * setting's valid and invalid values, both ends of each range and one
 * past them, the k/m/g suffixes (powers of 1024 for bytes, of 1000 for
 * counts, none for the seed), every='s units, out='s commas, the mode
 * names, and the messages' ranges (docs/reference.md#settings).
 * (sampling_expand_path has test_out_path.c.)
 */
// links: config.c
#include "check.h"
#include "config.h"

#include <inttypes.h>
#include <string.h>

/* The settings that differ from the defaults, in one order. */
static const char *
render(const struct sampling_params *p)
{
    static char out[SAMPLING_OUT_MAX + 256];
    struct sampling_params d;
    sampling_params_default(&d);
    size_t n = 0;
    out[0] = '\0';
#define PUT(...) n += (size_t)snprintf(out + n, sizeof(out) - n, __VA_ARGS__)
    if (p->mode != d.mode) PUT(" mode=%s", p->mode == SAMPLING_MODE_FIXED ? "fixed" : "poisson");
    if (p->interval != d.interval) PUT(" interval=%" PRIu64, p->interval);
    if (p->depth != d.depth) PUT(" depth=%" PRIu32, p->depth);
    if (p->max_samples != d.max_samples) PUT(" max_samples=%zu", p->max_samples);
    if (p->has_seed) PUT(" seed=%" PRIu64, p->seed);
    if (p->malloc != d.malloc) PUT(" malloc=%d", p->malloc);
    if (p->every) PUT(" every=%" PRIu32, p->every);
    if (p->out[0]) PUT(" out=%s", p->out);
    if (p->limit == SAMPLING_LIMIT_AUTO) PUT(" limit=auto");
    if (p->limit == SAMPLING_LIMIT_SIZE) PUT(" limit=%" PRIu64, p->limit_bytes);
    if (p->limit_at != d.limit_at) PUT(" limit_at=%" PRIu32, p->limit_at);
    if (p->grow != d.grow) PUT(" grow=%" PRIu64, p->grow);
    if (p->max_files != d.max_files) PUT(" max_files=%" PRIu32, p->max_files);
    if (p->min_gcs != d.min_gcs) PUT(" min_gcs=%" PRIu32, p->min_gcs);
#undef PUT
    return n ? out + 1 : "(defaults)";
}

struct row {
    const char *text;
    const char *want;   /* render() of the result */
    const char *err;    /* or the reason; NULL: it parses */
};

#define OK(text, want) { text, want, NULL }
#define BAD(text, err) { text, NULL, err }

#define INTERVAL_RANGE "from 1 to 1125899906842624 bytes (k/m/g: powers of 1024)"
#define DEPTH_RANGE "from 1 to 4096 frames (k/m/g: thousand, million, billion)"
#define MAX_RANGE "from 1 to 100000000 (k/m/g: thousand, million, billion)"
#define SEED_RANGE "from 0 to 18446744073709551615"
#define EVERY_RANGE "expected seconds from 1 to 86400 (with s, m or h: 60s, 5m, 1h)"
#define KNOWN "(known: interval, depth, max_samples, seed, grow, max_files, min_gcs, mode, malloc, out, every, limit, limit_at)"
#define LIMIT_RANGE "expected auto (the memory cgroup's limit) or a size of RSS from 1m to 1125899906842624 bytes (k/m/g: powers of 1024)"
#define LIMIT_AT_RANGE "expected a fraction of the limit from 0.01 to 1 (e.g. 0.9)"

static const struct row rows[] = {
    /* interval: bytes, k/m/g powers of 1024, 1 to 2**50 */
    OK("interval=1", "interval=1"),
    OK("interval=4096", "interval=4096"),
    OK("interval=4k", "interval=4096"),
    OK("interval=4K", "interval=4096"),
    OK("interval=512k", "(defaults)"),
    OK("interval=32k", "interval=32768"),
    OK("interval=2m", "interval=2097152"),
    OK("interval=1g", "interval=1073741824"),
    OK("interval=1048576g", "interval=1125899906842624"),
    OK("interval=1125899906842624", "interval=1125899906842624"),
    BAD("interval=0", "interval=0: expected an integer " INTERVAL_RANGE),
    BAD("interval=1125899906842625", "interval=1125899906842625: expected an integer " INTERVAL_RANGE),
    BAD("interval=1048577g", "interval=1048577g: expected an integer " INTERVAL_RANGE),
    BAD("interval=512KiB", "interval=512KiB: expected an integer " INTERVAL_RANGE),
    BAD("interval=4kk", "interval=4kk: expected an integer " INTERVAL_RANGE),
    BAD("interval=4t", "interval=4t: expected an integer " INTERVAL_RANGE),
    BAD("interval=k", "interval=k: expected an integer " INTERVAL_RANGE),
    BAD("interval=", "interval=: expected an integer " INTERVAL_RANGE),
    BAD("interval=-1", "interval=-1: expected an integer " INTERVAL_RANGE),
    BAD("interval= 4k", "interval= 4k: expected an integer " INTERVAL_RANGE),
    BAD("interval=1.5k", "interval=1.5k: expected an integer " INTERVAL_RANGE),
    BAD("interval=18446744073709551616", "interval=18446744073709551616: expected an integer " INTERVAL_RANGE),
    BAD("interval=17179869184g", "interval=17179869184g: expected an integer " INTERVAL_RANGE),

    /* depth: frames, k = 1000, 1 to 4096 */
    OK("depth=1", "depth=1"),
    OK("depth=4096", "depth=4096"),
    OK("depth=4k", "depth=4000"),
    BAD("depth=0", "depth=0: expected an integer " DEPTH_RANGE),
    BAD("depth=4097", "depth=4097: expected an integer " DEPTH_RANGE),
    BAD("depth=5k", "depth=5k: expected an integer " DEPTH_RANGE),
    BAD("depth=deep", "depth=deep: expected an integer " DEPTH_RANGE),

    /* max_samples: a count, k/m = thousand, million, 1 to 100m */
    OK("max_samples=1", "max_samples=1"),
    OK("max_samples=10k", "max_samples=10000"),
    OK("max_samples=100m", "max_samples=100000000"),
    OK("max_samples=100000000", "max_samples=100000000"),
    BAD("max_samples=0", "max_samples=0: expected an integer " MAX_RANGE),
    BAD("max_samples=100000001", "max_samples=100000001: expected an integer " MAX_RANGE),
    BAD("max_samples=1g", "max_samples=1g: expected an integer " MAX_RANGE),

    /* seed: 0 to 2**64-1, no suffix */
    OK("seed=0", "seed=0"),
    OK("seed=42", "seed=42"),
    OK("seed=18446744073709551615", "seed=18446744073709551615"),
    BAD("seed=18446744073709551616", "seed=18446744073709551616: expected an integer " SEED_RANGE),
    BAD("seed=1k", "seed=1k: expected an integer " SEED_RANGE),
    BAD("seed=", "seed=: expected an integer " SEED_RANGE),

    /* mode: the two names, exactly */
    OK("mode=poisson", "(defaults)"),
    OK("mode=fixed", "mode=fixed"),
    BAD("mode=Fixed", "mode=Fixed: expected poisson or fixed"),
    BAD("mode=fixedd", "mode=fixedd: expected poisson or fixed"),
    BAD("mode=fix", "mode=fix: expected poisson or fixed"),
    BAD("mode=", "mode=: expected poisson or fixed"),
    BAD("mode=random", "mode=random: expected poisson or fixed"),
    /* a value's bytes are shown printable */
    BAD("mode=\x01\xff", "mode=\\x01\\xff: expected poisson or fixed"),

    /* malloc: 0 or 1 */
    OK("malloc=0", "malloc=0"),
    OK("malloc=1", "(defaults)"),
    BAD("malloc=2", "malloc=2: expected 0 or 1"),
    BAD("malloc=true", "malloc=true: expected 0 or 1"),
    BAD("malloc=", "malloc=: expected 0 or 1"),

    /* every: seconds, or s/m/h, 1 s to a day; needs out= with %n, pprof */
    OK("every=30,out=a-%n.pb.gz", "every=30 out=a-%n.pb.gz"),
    OK("every=30s,out=a-%n.pb.gz", "every=30 out=a-%n.pb.gz"),
    OK("every=5m,out=a-%n.pb.gz", "every=300 out=a-%n.pb.gz"),
    OK("every=1h,out=a-%n.pb.gz", "every=3600 out=a-%n.pb.gz"),
    OK("every=24h,out=a-%n.pb.gz", "every=86400 out=a-%n.pb.gz"),
    OK("every=1440m,out=a-%n.pb.gz", "every=86400 out=a-%n.pb.gz"),
    OK("every=86400,out=a-%n.pb.gz", "every=86400 out=a-%n.pb.gz"),
    BAD("every=0,out=a-%n.pb.gz", "every=0: " EVERY_RANGE),
    BAD("every=86401,out=a-%n.pb.gz", "every=86401: " EVERY_RANGE),
    BAD("every=25h,out=a-%n.pb.gz", "every=25h: " EVERY_RANGE),
    BAD("every=1441m,out=a-%n.pb.gz", "every=1441m: " EVERY_RANGE),
    BAD("every=1d,out=a-%n.pb.gz", "every=1d: " EVERY_RANGE),
    BAD("every=s,out=a-%n.pb.gz", "every=s: " EVERY_RANGE),
    BAD("every=1k,out=a-%n.pb.gz", "every=1k: " EVERY_RANGE),
    BAD("every=30", "every= needs out= with %n, the delta file's number (e.g. out=alloc-%p-%n.pb.gz)"),
    BAD("every=30,out=a.pb.gz", "every= needs out= with %n, the delta file's number (e.g. out=alloc-%p-%n.pb.gz)"),
    BAD("every=30,out=a-%n.dhat.json", "every= writes pprof delta files: out= must not end in .dhat.json (a DHAT file "
        "is written once, at exit, without every=)"),

    /* limit: auto or an RSS size; limit_at: a fraction, 0.01 to 1, in millionths;
     * grow: bytes from 1 MiB; max_files, min_gcs: counts; the watcher needs out= */
    OK("limit=auto,out=h-%n.pb.gz", "out=h-%n.pb.gz limit=auto"),
    OK("limit=auto,out=h.pb.gz", "out=h.pb.gz limit=auto"),
    OK("limit=300m,out=h-%n.pb.gz", "out=h-%n.pb.gz limit=314572800"),
    OK("limit=1m,out=h", "out=h limit=1048576"),
    BAD("limit=1023k,out=h", "limit=1023k: " LIMIT_RANGE),
    BAD("limit=0,out=h", "limit=0: " LIMIT_RANGE),
    BAD("limit=Auto,out=h", "limit=Auto: " LIMIT_RANGE),
    BAD("limit=,out=h", "limit=: " LIMIT_RANGE),
    BAD("limit=auto", "limit= needs out=, where its profiles go (e.g. out=heap-%p-%n.pb.gz)"),
    BAD("limit=auto,out=h.dhat.json", "limit= and grow= write pprof files: out= must not end in .dhat.json"),
    OK("limit=auto,limit_at=0.5,out=h", "out=h limit=auto limit_at=500000"),
    OK("limit=auto,limit_at=.95,out=h", "out=h limit=auto limit_at=950000"),
    OK("limit=auto,limit_at=1,out=h", "out=h limit=auto limit_at=1000000"),
    OK("limit=auto,limit_at=0.01,out=h", "out=h limit=auto limit_at=10000"),
    OK("limit=auto,limit_at=0.123456,out=h", "out=h limit=auto limit_at=123456"),
    BAD("limit_at=0.009,out=h", "limit_at=0.009: " LIMIT_AT_RANGE),
    BAD("limit_at=1.01,out=h", "limit_at=1.01: " LIMIT_AT_RANGE),
    BAD("limit_at=0.1234567,out=h", "limit_at=0.1234567: " LIMIT_AT_RANGE),
    BAD("limit_at=90%,out=h", "limit_at=90%: " LIMIT_AT_RANGE),
    BAD("limit_at=.,out=h", "limit_at=.: " LIMIT_AT_RANGE),
    BAD("limit_at=-0.5,out=h", "limit_at=-0.5: " LIMIT_AT_RANGE),
    OK("grow=256m,out=h-%n", "out=h-%n grow=268435456"),
    OK("grow=1m,out=h-%n", "out=h-%n grow=1048576"),
    BAD("grow=1023k,out=h", "grow=1023k: expected an integer from 1048576 to 1125899906842624 bytes (k/m/g: powers of 1024)"),
    BAD("grow=256m", "grow= needs out=, where its profiles go (e.g. out=heap-%p-%n.pb.gz)"),
    OK("limit=auto,grow=64m,max_files=3,out=h-%n", "out=h-%n limit=auto grow=67108864 max_files=3"),
    BAD("max_files=0,out=h", "max_files=0: expected an integer from 1 to 100000 (k/m/g: thousand, million, billion)"),
    OK("min_gcs=1", "min_gcs=1"),
    OK("min_gcs=4294967295", "min_gcs=4294967295"),
    BAD("min_gcs=4294967296", "min_gcs=4294967296: expected an integer from 0 to 4294967295 GCs (k/m/g: thousand, million, billion)"),

    /* out: a path, to the next comma that starts a key */
    OK("out=alloc-%p.pb.gz", "out=alloc-%p.pb.gz"),
    OK("out=a.dhat.json", "out=a.dhat.json"),
    OK("out=a,b.pb.gz", "out=a,b.pb.gz"),
    OK("out=a,b.pb.gz,mode=fixed", "mode=fixed out=a,b.pb.gz"),
    OK("out=a,,b", "out=a,,b"),
    OK("out=a,=b", "out=a,=b"),
    OK("mode=fixed,out=x.pb.gz,interval=4k", "mode=fixed interval=4096 out=x.pb.gz"),
    BAD("out=", "out=: expected a file path (%p expands to the pid)"),
    BAD("out=a,b.pb.gz,bogus=1", "unknown key 'bogus' " KNOWN),

    /* the list: key=value, commas between, nothing unknown */
    OK("interval=4k,mode=fixed,depth=16,max_samples=1k,seed=7,malloc=0",
       "mode=fixed interval=4096 depth=16 max_samples=1000 seed=7 malloc=0"),
    OK("interval=4k,interval=8k", "interval=8192"),
    BAD("", "empty value (expected e.g. interval=512k,mode=poisson,depth=128,out=alloc-%p.pb.gz)"),
    BAD("interval", "'interval' is not key=value"),
    BAD("interval=4k,fixed", "'fixed' is not key=value"),
    BAD("interval=4k,", "trailing comma after 'interval=4k,'"),
    BAD(",interval=4k", "'' is not key=value"),
    BAD("=4k", "unknown key '' " KNOWN),
    BAD("Interval=4k", "unknown key 'Interval' " KNOWN),
    BAD("sample_rate=4k", "unknown key 'sample_rate' " KNOWN),
    BAD("interval=4k,mode=fixed,depth=0", "depth=0: expected an integer " DEPTH_RANGE),
};

static void
test_rows(void)
{
    for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
        const struct row *r = &rows[i];
        struct sampling_params p;
        char err[512] = "";
        bool ok = sampling_params_parse(r->text, &p, err, sizeof(err));
        if (r->err) {
            CHECK(!ok, "\"%s\" must be refused (parsed: %s)", r->text, render(&p));
            CHECK(strcmp(err, r->err) == 0, "\"%s\":\n  got  %s\n  want %s", r->text, err, r->err);
        }
        else {
            CHECK(ok, "\"%s\" must parse (%s)", r->text, err);
            const char *got = render(&p);
            CHECK(strcmp(got, r->want) == 0, "\"%s\": got %s, want %s", r->text, got, r->want);
        }
    }
}

/* The defaults are the documented ones, and the table's. */
static void
test_defaults(void)
{
    struct sampling_params p;
    sampling_params_default(&p);
    CHECK(p.mode == SAMPLING_MODE_POISSON, "mode poisson");
    CHECK(p.interval == 512 * 1024, "interval 512k (%" PRIu64 ")", p.interval);
    CHECK(p.depth == 128, "depth 128");
    CHECK(p.max_samples == 100000, "max_samples 100000");
    CHECK(!p.has_seed, "no seed: random");
    CHECK(p.malloc == SAMPLING_MALLOC_DEFAULT && p.malloc, "malloc on");
    CHECK(p.every == 0 && p.out[0] == '\0', "no every=, no out=");
    CHECK(sampling_settings[SAMPLING_SETTING_INTERVAL].def == p.interval &&
          sampling_settings[SAMPLING_SETTING_DEPTH].def == p.depth &&
          sampling_settings[SAMPLING_SETTING_MAX_SAMPLES].def == p.max_samples, "the table's defaults");

    /* a parse starts from the defaults, whatever params held */
    memset(&p, 0x5a, sizeof(p));
    char err[256];
    CHECK(sampling_params_parse("depth=8", &p, err, sizeof(err)), "depth=8 parses");
    CHECK(strcmp(render(&p), "depth=8") == 0, "and only depth changed (%s)", render(&p));

    /* a long value fits the message, cut; out= at its limit */
    static char text[SAMPLING_OUT_MAX + 16];
    memcpy(text, "out=", 4);
    memset(text + 4, 'a', SAMPLING_OUT_MAX - 1);
    text[4 + SAMPLING_OUT_MAX - 1] = '\0';
    CHECK(sampling_params_parse(text, &p, err, sizeof(err)) && strlen(p.out) == SAMPLING_OUT_MAX - 1,
          "out= of %d bytes fits", SAMPLING_OUT_MAX - 1);
    strcat(text, "a");
    CHECK(!sampling_params_parse(text, &p, err, sizeof(err)) && strstr(err, ": expected a file path"),
          "out= of %d bytes does not (%s)", SAMPLING_OUT_MAX, err);
    CHECK(strlen(err) < sizeof(err) - 1, "the message is cut to one line (%zu bytes)", strlen(err));

    /* a short buffer gets a cut message, never an overflow */
    char small[8];
    memset(small, 'x', sizeof(small));
    CHECK(!sampling_params_parse("depth=0", &p, small, sizeof(small)) && small[7] == '\0', "short buffer: cut");
}

/* The ranges as messages print them, and each setting's field. */
static void
test_table(void)
{
    static const struct {
        enum sampling_setting_id id;
        const char *name, *range;
    } want[] = {
        { SAMPLING_SETTING_INTERVAL, "interval", "from 1 to 1125899906842624 bytes" },
        { SAMPLING_SETTING_DEPTH, "depth", "from 1 to 4096 frames" },
        { SAMPLING_SETTING_MAX_SAMPLES, "max_samples", "from 1 to 100000000" },
        { SAMPLING_SETTING_SEED, "seed", "from 0 to 18446744073709551615" },
        { SAMPLING_SETTING_GROW, "grow", "from 1048576 to 1125899906842624 bytes" },
        { SAMPLING_SETTING_MAX_FILES, "max_files", "from 1 to 100000" },
        { SAMPLING_SETTING_MIN_GCS, "min_gcs", "from 0 to 4294967295 GCs" },
    };
    CHECK(sizeof(want) / sizeof(want[0]) == SAMPLING_SETTINGS, "every setting has a row here");
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        char buf[96];
        sampling_setting_range(want[i].id, buf, sizeof(buf));
        CHECK(strcmp(sampling_settings[want[i].id].name, want[i].name) == 0, "setting %zu is %s", i, want[i].name);
        CHECK(strcmp(buf, want[i].range) == 0, "%s: got %s, want %s", want[i].name, buf, want[i].range);
    }

    struct sampling_params p;
    sampling_params_default(&p);
    sampling_params_set(&p, SAMPLING_SETTING_INTERVAL, 7);
    sampling_params_set(&p, SAMPLING_SETTING_DEPTH, 9);
    sampling_params_set(&p, SAMPLING_SETTING_MAX_SAMPLES, 11);
    sampling_params_set(&p, SAMPLING_SETTING_SEED, 0);
    CHECK(strcmp(render(&p), "interval=7 depth=9 max_samples=11 seed=0") == 0, "set: %s", render(&p));
}

/* The mode names: one spelling each way, exact bytes only. */
static void
test_mode_names(void)
{
    static const struct {
        const char *text;
        size_t len;
        bool ok;
        enum sampling_mode want;
    } cases[] = {
        { "poisson", 7, true, SAMPLING_MODE_POISSON },
        { "fixed", 5, true, SAMPLING_MODE_FIXED },
        { "fixed,depth=3", 5, true, SAMPLING_MODE_FIXED },
        { "fixed", 4, false, 0 },
        { "fixedx", 6, false, 0 },
        { "FIXED", 5, false, 0 },
        { "", 0, false, 0 },
        { "poisson\0", 8, false, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum sampling_mode m = (enum sampling_mode)7;
        bool ok = sampling_mode_parse(cases[i].text, cases[i].len, &m);
        CHECK(ok == cases[i].ok, "\"%.*s\": %s", (int)cases[i].len, cases[i].text, ok ? "parsed" : "refused");
        if (ok && cases[i].ok) CHECK(m == cases[i].want, "\"%.*s\": mode %d", (int)cases[i].len, cases[i].text, (int)m);
        if (!ok) CHECK(m == (enum sampling_mode)7, "refused: the mode left alone");
    }
    CHECK(strcmp(sampling_mode_name(SAMPLING_MODE_POISSON), "poisson") == 0, "poisson's name");
    CHECK(strcmp(sampling_mode_name(SAMPLING_MODE_FIXED), "fixed") == 0, "fixed's name");
    enum sampling_mode modes[] = { SAMPLING_MODE_POISSON, SAMPLING_MODE_FIXED };
    for (size_t i = 0; i < 2; i++) {
        enum sampling_mode m;
        const char *name = sampling_mode_name(modes[i]);
        CHECK(sampling_mode_parse(name, strlen(name), &m) && m == modes[i], "%s reads back", name);
    }
}

/* sampling_parse_size alone: the suffix's base, and overflow. */
static void
test_parse_size(void)
{
    static const struct {
        const char *text;
        unsigned base;
        bool ok;
        uint64_t want;
    } cases[] = {
        { "0", 1024, true, 0 },
        { "7", 0, true, 7 },
        { "7k", 0, false, 0 },
        { "7k", 1024, true, 7168 },
        { "7k", 1000, true, 7000 },
        { "7M", 1000, true, 7000000 },
        { "16g", 1024, true, (uint64_t)16 << 30 },
        { "16G", 1000, true, 16000000000ull },
        { "18446744073709551615", 0, true, UINT64_MAX },
        { "18446744073709551616", 0, false, 0 },
        { "17179869183g", 1024, true, (uint64_t)17179869183 << 30 },
        { "17179869184g", 1024, false, 0 },
        { "", 1024, false, 0 },
        { "k", 1024, false, 0 },
        { "1kb", 1024, false, 0 },
        { "1 ", 0, false, 0 },
        { "+1", 0, false, 0 },
        { "0x10", 0, false, 0 },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t v = 12345;
        bool ok = sampling_parse_size(cases[i].text, strlen(cases[i].text), cases[i].base, &v);
        CHECK(ok == cases[i].ok, "\"%s\" base %u: %s", cases[i].text, cases[i].base, ok ? "parsed" : "refused");
        if (ok && cases[i].ok) CHECK(v == cases[i].want, "\"%s\": %" PRIu64 ", want %" PRIu64, cases[i].text, v, cases[i].want);
        if (!ok) CHECK(v == 12345, "\"%s\": refused, the output left alone", cases[i].text);
    }
    /* only len bytes are read */
    uint64_t v;
    CHECK(sampling_parse_size("12,depth=3", 2, 1024, &v) && v == 12, "a value ends where its length says");
}

int
main(void)
{
    test_rows();
    test_defaults();
    test_table();
    test_mode_names();
    test_parse_size();
    return check_summary();
}
