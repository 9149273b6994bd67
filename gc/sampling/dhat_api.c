/*
 * dhat_api.c: `write_dhat` and `dhat`: the sites of one read as DHAT's
 * JSON (dhat.h), and the DHAT file written at exit when
 * RUBY_GC_SAMPLING's out= ends in ".dhat.json" (profile.c).
 *
 * One program point per site (sites with the same frames, class, kind
 * and labels, as text, are one point: the viewer allows no two points
 * with equal frames), its values the estimates the pprof profile has:
 *
 *   tb, tbk   alloc_space, alloc_objects
 *   tl        objects x bytes lived: the dead ones' (sites.h, objtime)
 *             and the live ones' so far (read.h, inuse_objtime)
 *   gb, gbk   the live set at the peak (timeline.h, read_peak): the
 *             peak view's inuse_space, inuse_objects
 *   eb, ebk   the live set now (read_inuse): inuse_space, inuse_objects
 *   mb, mbk   the most live at one GC, from the records kept (their GC
 *             numbers), and at least gb and eb
 *
 * Time is the allocation clock (records.h): slot bytes the process has
 * allocated (malloc'd bytes do not move it), so `tu` is "slot bytes
 * allocated", te the clock now, tg the clock at the peak's GC, and tuth
 * ("short-lived") the longest stretch between two GCs (short_lived).
 * The frames, innermost first: what was allocated ("String (object
 * slot, T_STRING)", "malloc (malloc'd block)"), the stack, and the label
 * set when there is one ("k=v (labels)").
 *
 * A reader: GVL held, GC off while it reads; memory from malloc, the
 * text becomes a String at the end.
 */
#include "ruby/ruby.h"

#include "api.h"
#include "dhat_api.h"
#include "write.h"
#include "dhat.h"
#include "labels_fiber.h"
#include "read.h"
#include "sampler.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *rb_imemo_name(int type);

struct dhat_build {
    struct read_state read;
    st_table *inuse, *peak;
    uint32_t min_gcs;               /* eb, ebk: samples that survived this many GCs only */
    struct dhat *d;
    char *text;
    size_t len;
};

/* read_site's argument: the builder and the site being converted. */
struct dhat_site_arg {
    struct dhat *d;
    const struct sampling_site *site;
};

/* What a site allocates, as its innermost frame. */
static uint32_t
kind_frame(struct dhat *d, const struct sampling_site *site, const struct sampling_names *names)
{
    uint16_t type = site->kind.type;
    if (type == SAMPLING_TYPE_MALLOC) return dhat_frame_at(d, "malloc", 6, "malloc'd block", 14);
    char name[64], where[64];
    const char *type_name = read_type_name(type);
    int w = snprintf(where, sizeof(where), "object slot, %s", type_name);
    if (names->klass) return dhat_frame_at(d, names->klass, strlen(names->klass), where, (size_t)w);
    /* a hidden object: its type, as report names it */
    int n = type == RUBY_T_IMEMO ? snprintf(name, sizeof(name), "(%s:%s)", type_name, rb_imemo_name(site->kind.imemo_type))
          : snprintf(name, sizeof(name), "(%s)", type_name);
    return dhat_frame_at(d, name, (size_t)n < sizeof(name) ? (size_t)n : sizeof(name) - 1, where, (size_t)w);
}

/* A site's label set as its outermost frame: "k=v k2=v2 (labels)". */
static uint32_t
labels_frame(struct dhat *d, uint32_t id)
{
    const struct sampling_label_set *set = sampling_labels_set(id);
    if (!set) return UINT32_MAX;
    char *text = malloc(set->len + 1);
    if (!text) return UINT32_MAX;
    size_t n = 0;
    const char *k = set->text;
    for (uint32_t i = 0; i < set->npairs; i++) {
        const char *v = k + strlen(k) + 1;
        size_t kl = strlen(k), vl = strlen(v);
        if (i) text[n++] = ' ';
        memcpy(text + n, k, kl);
        n += kl;
        text[n++] = '=';
        memcpy(text + n, v, vl);
        n += vl;
        k = v + vl + 1;
    }
    uint32_t frame = dhat_frame_at(d, text, n, "labels", 6);
    free(text);
    return frame;
}

/* read_site's conversion: the site's point, plus one (0 is "none"). */
static st_data_t
dhat_site_convert(const struct sampling_names *names, void *arg)
{
    const struct dhat_site_arg *a = arg;
    struct dhat *d = a->d;
    uint32_t *fs = malloc((names->n + 3) * sizeof(*fs));
    if (!fs) return 0;
    size_t n = 0;
    fs[n++] = kind_frame(d, a->site, names);
    if (!names->n) fs[n++] = dhat_frame_at(d, "<unknown>", 9, "no Ruby stack", 13);
    for (uint32_t i = 0; i < names->n; i++) {
        const struct sampling_name *nm = &names->locs[i];
        /* a synthetic frame (<boot>, <GC>, ...) names no file */
        if (nm->path == nm->label) {
            fs[n++] = dhat_frame_at(d, nm->label, nm->labellen, "no Ruby stack", 13);
            continue;
        }
        char buf[512], *where = buf;
        size_t w = dhat_where(buf, sizeof(buf), nm->path, nm->pathlen, nm->lineno);
        if (w >= sizeof(buf) && (where = malloc(w + 1)) != NULL) dhat_where(where, w + 1, nm->path, nm->pathlen, nm->lineno);
        if (!where) where = buf, w = sizeof(buf) - 1;   /* (no memory: cut) */
        fs[n++] = dhat_frame_at(d, nm->label, nm->labellen, where, w);
        if (where != buf) free(where);
    }
    uint32_t labels = a->site->labels ? labels_frame(d, a->site->labels) : UINT32_MAX;
    if (labels != UINT32_MAX) fs[n++] = labels;
    uint32_t point = dhat_point(d, fs, n);
    free(fs);
    return point == UINT32_MAX ? 0 : (st_data_t)point + 1;
}

static uint32_t
site_point(struct dhat_build *b, const struct sampling_site *site)
{
    struct dhat_site_arg arg = { b->d, site };
    return (uint32_t)read_site(&b->read, site, dhat_site_convert, &arg) - 1;
}

/* The values of a site (or of <other sites>), its live set at the peak
 * at peak (NULL: none). */
static struct dhat_values
point_values(const struct site_values *sv, const struct site_values *peak)
{
    return (struct dhat_values){
        .tb = sv->alloc_space, .tbk = sv->alloc_objects,
        .tl = sv->life.objtime + sv->inuse_objtime,
        .gb = peak ? peak->inuse_space : 0, .gbk = peak ? peak->inuse_objects : 0,
        .eb = sv->inuse_space, .ebk = sv->inuse_objects,
    };
}

/* Every record the read sees, live from the GC after its allocation
 * until the GC that found it dead: each point's most at one GC.  Without
 * memory for that (about 100 bytes a record), the maxima stay what dhat_finish
 * makes them: the larger of t-gmax's and t-end's. */
static void
point_maxima(struct dhat_build *b)
{
    const struct sampling_records *r = sampler_records();
    struct dhat_life *lives = malloc((r->used ? r->used : 1) * sizeof(*lives));
    if (!lives) return;
    size_t n = 0;
    for (size_t i = 0; i < r->used; i++) {
        const struct sampling_record *rec = read_record(&b->read, i);
        if (!rec) continue;
        /* (site_point's sites are converted: it allocates no Ruby object, the table stays) */
        lives[n++] = (struct dhat_life){
            site_point(b, rec->site), (uint64_t)rec->allocated_gc + 1,
            rec->dead ? (uint64_t)sampling_record_freed_gc(rec) : DHAT_STILL_LIVE, rec->weight, rec->weight / (double)sampling_record_size(rec),
        };
    }
    dhat_max_from_lives(b->d, lives, n);
    free(lives);
}

/* DHAT's "short-lived" threshold: the most the clock moved between two
 * GCs (timeline rows; thinned rows count one GC in stride).  A block
 * that dies in the first GC after its allocation lives, on average,
 * half the stretch it was allocated in, so every point whose blocks
 * die young is under it; the mean stretch would not do, as stretches
 * grow with the heap.  With fewer than two rows: te over the GCs. */
static double
short_lived(double te, size_t gcs)
{
    const struct sampling_timeline *t = sampler_timeline();
    double most = 0;
    for (size_t i = 1; i < t->n; i++) {
        const struct sampling_timeline_row *a = &t->rows[i - 1], *b = &t->rows[i];
        if (b->gc > a->gc && b->clock > a->clock) {
            double stretch = (double)(b->clock - a->clock) / (double)(b->gc - a->gc);
            if (stretch > most) most = stretch;
        }
    }
    return most > 0 ? most : gcs ? te / (double)gcs : te;
}

/* The command line, from /proc (NULs between arguments become spaces);
 * "ruby" where there is none. */
static void
command_line(char *out, size_t size)
{
    ssize_t n = -1;
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        n = read(fd, out, size - 1);
        close(fd);
    }
    if (n <= 0) {
        snprintf(out, size, "ruby");
        return;
    }
    while (n > 0 && out[n - 1] == '\0') n--;
    for (ssize_t i = 0; i < n; i++) {
        if (out[i] == '\0') out[i] = ' ';
    }
    out[n] = '\0';
}

static VALUE
dhat_build_body(VALUE arg)
{
    struct dhat_build *b = (struct dhat_build *)arg;
    read_inuse_aged(&b->read, b->inuse, b->min_gcs);
    const struct sampling_peak *peak = &sampler_timeline()->peak;
    struct site_values other_peak = { 0 };
    if (peak->taken) read_peak(&b->read, b->peak, &other_peak);

    READ_SITES_FOREACH(&b->read, site) {
        struct site_values sv = read_site_values(site, b->inuse);
        st_data_t at_peak = 0;
        /* with no GC seen there is no peak: t-gmax is t-end */
        const struct site_values *p = !peak->taken ? &sv
                                    : st_lookup(b->peak, (st_data_t)site, &at_peak) ? (const struct site_values *)at_peak : NULL;
        struct dhat_values v = point_values(&sv, p);
        dhat_add(b->d, site_point(b, site), &v);
    }
    struct site_values other;
    if (read_other_values(&other) || other_peak.inuse_space > 0) {
        uint32_t fs = dhat_frame_at(b->d, READ_OTHER_SITES, sizeof(READ_OTHER_SITES) - 1, "folded sites", 12);
        struct dhat_values v = point_values(&other, &other_peak);
        dhat_add(b->d, dhat_point(b->d, &fs, 1), &v);
    }
    point_maxima(b);

    char cmd[4096];
    command_line(cmd, sizeof(cmd));
    double te = (double)sampler_clock();
    size_t gcs = rb_gc_count();
    struct dhat_header h = {
        cmd, (long)getpid(), "slot bytes allocated", "M slot bytes", te,
        peak->taken ? (double)peak->at.clock : te, short_lived(te, gcs),
    };
    if (!dhat_finish(b->d, &h, &b->text, &b->len)) rb_memerror();
    return Qnil;
}

static VALUE
dhat_build_done(VALUE arg)
{
    struct dhat_build *b = (struct dhat_build *)arg;
    read_inuse_free(b->inuse);
    read_inuse_free(b->peak);
    dhat_free(b->d);
    return Qnil;
}

/* The DHAT file as a String (UTF-8 JSON). */
VALUE
sampling_dhat_text(uint32_t min_gcs)
{
    struct dhat *d = dhat_new();
    if (!d) rb_memerror();
    struct dhat_build b = { .inuse = st_init_numtable(), .peak = st_init_numtable(), .d = d };
    b.min_gcs = min_gcs;
    read_run(&b.read, dhat_build_body, (VALUE)&b, NULL, dhat_build_done);
    VALUE str = rb_utf8_str_new(b.text, (long)b.len);
    free(b.text);
    return str;
}

bool
sampling_dhat_path(const char *path)
{
    static const char suffix[] = ".dhat.json";
    size_t len = strlen(path), n = sizeof(suffix) - 1;
    return len >= n && strcmp(path + len - n, suffix) == 0;
}

/* The min_gcs: keyword (Qundef: not given). */
static uint32_t
min_gcs_kwarg(VALUE opts)
{
    VALUE v = Qundef;
    if (!NIL_P(opts)) {
        ID key = rb_intern("min_gcs");
        rb_get_kwargs(opts, &key, 0, 1, &v);
    }
    return sampling_min_gcs_arg(v);
}

/* dhat(min_gcs: 0) => the DHAT file as a String */
static VALUE
allocation_sampler_dhat_m(int argc, VALUE *argv, VALUE self)
{
    VALUE opts = Qnil;
    rb_scan_args(argc, argv, "0:", &opts);
    return sampling_dhat_text(min_gcs_kwarg(opts));
}

/* write_dhat(path_or_io, min_gcs: 0) => bytes written */
static VALUE
allocation_sampler_write_dhat_m(int argc, VALUE *argv, VALUE self)
{
    VALUE dest, opts = Qnil;
    rb_scan_args(argc, argv, "1:", &dest, &opts);
    uint32_t min_gcs = min_gcs_kwarg(opts);
    sampling_check_destination(dest, "path_or_io");
    return sampling_write_out(dest, sampling_dhat_text(min_gcs), "path_or_io");
}

READER_METHODV(allocation_sampler_dhat_m)
READER_METHODV(allocation_sampler_write_dhat_m)

void
sampling_define_dhat(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "dhat", allocation_sampler_dhat_m_reader, -1);
    rb_define_singleton_method(mSampler, "write_dhat", allocation_sampler_write_dhat_m_reader, -1);
}
