/* pprof.c: see pprof.h.  (The whole encoder: varints, messages and gzip;
 * buffers and interning are intern.h's.) */
#include "pprof.h"
#include "addresses.h"
#include "intern.h"

/* In the library build mkmf's checks (HAVE_ZLIB_H) land in extconf.h. */
#ifdef RUBY_EXTCONF_H
# include RUBY_EXTCONF_H
#endif

#include <stdlib.h>
#include <string.h>

#if defined(HAVE_ZLIB_H) || defined(PPROF_WITH_ZLIB)
# include <zlib.h>
# define PPROF_GZIP 1
#endif

static size_t
pprof_varint_encode(uint64_t v, uint8_t out[10])
{
    size_t n = 0;
    while (v >= 0x80) {
        out[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    out[n++] = (uint8_t)v;
    return n;
}

static void
put_varint(struct buf *b, uint64_t v)
{
    uint8_t tmp[10];
    buf_put(b, tmp, pprof_varint_encode(v, tmp));
}

static void
put_key(struct buf *b, uint32_t field, uint32_t wire_type)
{
    put_varint(b, (uint64_t)field << 3 | wire_type);
}

/* field: varint (omitted when 0, the protobuf default) */
static void
put_uint_field(struct buf *b, uint32_t field, uint64_t v)
{
    if (!v) return;
    put_key(b, field, 0);
    put_varint(b, v);
}

static void
put_bytes_field(struct buf *b, uint32_t field, const void *bytes, size_t n)
{
    put_key(b, field, 2);
    put_varint(b, n);
    buf_put(b, bytes, n);
}

/* packed repeated varints */
static void
put_packed(struct buf *b, uint32_t field, const uint64_t *v, size_t n)
{
    if (!n) return;
    uint8_t tmp[10];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) len += pprof_varint_encode(v[i], tmp);
    put_key(b, field, 2);
    put_varint(b, len);
    for (size_t i = 0; i < n; i++) put_varint(b, v[i]);
}

/* ---- the builder ---- */

struct pprof {
    struct buf samples;     /* encoded Sample messages (field 2) */
    struct buf header;      /* sample types, period, comments */
    struct buf functions;   /* encoded Function messages (field 5) */
    struct buf locations;   /* encoded Location messages (field 4) */
    struct strtab strings;
    struct buf function_names; /* struct pprof_function_name[], by id - 1 */
    struct map function_map, location_map;
    struct map hashed_addresses;    /* the hashed addresses used (addresses.h) */
    struct sampling_addresses *addresses;
    uint64_t nfunctions, nlocations;
    int64_t time_nanos, duration_nanos;
    bool failed;
};

#define PPROF_MAPPING_ID 1

struct pprof_function_name {
    uint64_t name, file;    /* string indices */
};

struct pprof *
pprof_new(struct sampling_addresses *addresses)
{
    struct pprof *p = calloc(1, sizeof(*p));
    if (!p) return NULL;
    p->addresses = addresses;
    pprof_string(p, "", 0);
    return p;
}

void
pprof_free(struct pprof *p)
{
    if (!p) return;
    struct buf *bufs[] = { &p->samples, &p->header, &p->functions, &p->locations, &p->function_names };
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++) free(bufs[i]->data);
    strtab_free(&p->strings);
    map_free(&p->function_map);
    map_free(&p->location_map);
    map_free(&p->hashed_addresses);
    free(p);
}

uint64_t
pprof_string(struct pprof *p, const char *s, size_t len)
{
    return strtab_intern(&p->strings, s, len, &p->failed);
}

uint64_t
pprof_cstring(struct pprof *p, const char *s)
{
    return pprof_string(p, s, strlen(s));
}

/* Interns an exact 64-bit key in m; *fresh tells whether it is new. */
static uint64_t
intern(struct pprof *p, struct map *m, uint64_t key, uint64_t *counter, bool *fresh)
{
    *fresh = false;
    if (!map_room(m)) {
        p->failed = true;
        return 0;
    }
    bool found;
    size_t slot = map_find(m, key, NULL, NULL, &found);
    if (found) return m->values[slot];
    map_set(m, slot, key, ++*counter);
    *fresh = true;
    return *counter;
}

uint64_t
pprof_function(struct pprof *p, uint64_t name, uint64_t file)
{
    bool fresh;
    uint64_t id = intern(p, &p->function_map, name << 32 ^ file, &p->nfunctions, &fresh);
    if (fresh) {
        /* Function: 1 id, 2 name, 3 system_name, 4 filename.  No
         * system_name: pprof takes a name equal to its system_name for a
         * mangled or demangled C++ name and strips "<...>" and "(...)"
         * from it ("<main>", "block in <class:Foo>"); a name with none
         * is shown as it is. */
        struct buf m = { 0 };
        put_uint_field(&m, 1, id);
        put_uint_field(&m, 2, name);
        put_uint_field(&m, 4, file);
        if (m.failed) p->failed = true;
        put_bytes_field(&p->functions, 5, m.data, m.len);
        free(m.data);
        struct pprof_function_name names = { name, file };
        buf_put(&p->function_names, &names, sizeof(names));
        if (p->function_names.failed) p->failed = true;
    }
    return id;
}

/* The address of a new location: the process's number for its frame
 * (addresses.h).  A hashed one may collide with another frame's: the
 * second gets the next free one in this profile, so the addresses of a
 * profile stay distinct. */
static uint64_t
location_address(struct pprof *p, uint64_t function, int64_t line)
{
    if (p->failed || !p->addresses) return 0;
    const struct pprof_function_name *f = (const struct pprof_function_name *)p->function_names.data + (function - 1);
    size_t namelen, filelen;
    const char *name = strtab_get(&p->strings, f->name, &namelen), *file = strtab_get(&p->strings, f->file, &filelen);
    uint64_t address = sampling_address(p->addresses, name, namelen, file, filelen, line);
    if (!(address & SAMPLING_ADDRESS_HASHED)) return address;
    for (;; address = SAMPLING_ADDRESS_HASHED | ((address + 1) & (SAMPLING_ADDRESS_HASHED - 1))) {
        uint64_t unused = 0;
        bool fresh;
        intern(p, &p->hashed_addresses, address, &unused, &fresh);
        if (fresh || p->failed) return address;
    }
}

uint64_t
pprof_location(struct pprof *p, uint64_t function, int64_t line)
{
    bool fresh;
    uint64_t id = intern(p, &p->location_map, function << 32 ^ (uint64_t)(uint32_t)line, &p->nlocations, &fresh);
    if (fresh) {
        /* Location: 1 id, 2 mapping_id, 3 address, 4 line { 1
         * function_id, 2 line } */
        struct buf l = { 0 }, m = { 0 };
        put_uint_field(&l, 1, function);
        put_uint_field(&l, 2, (uint64_t)line);
        put_uint_field(&m, 1, id);
        put_uint_field(&m, 2, p->addresses ? PPROF_MAPPING_ID : 0);
        put_uint_field(&m, 3, location_address(p, function, line));
        put_bytes_field(&m, 4, l.data ? l.data : (uint8_t *)"", l.len);
        if (l.failed || m.failed) p->failed = true;
        put_bytes_field(&p->locations, 4, m.data, m.len);
        free(l.data);
        free(m.data);
    }
    return id;
}

static void
put_value_type(struct pprof *p, uint32_t field, const char *type, const char *unit)
{
    struct buf m = { 0 };
    put_uint_field(&m, 1, pprof_cstring(p, type));
    put_uint_field(&m, 2, pprof_cstring(p, unit));
    if (m.failed) p->failed = true;
    put_bytes_field(&p->header, field, m.data ? m.data : (uint8_t *)"", m.len);
    free(m.data);
}

void
pprof_sample_type(struct pprof *p, const char *type, const char *unit)
{
    put_value_type(p, 1, type, unit);
}

void
pprof_period(struct pprof *p, const char *type, const char *unit, int64_t period)
{
    put_value_type(p, 11, type, unit);
    put_uint_field(&p->header, 12, (uint64_t)period);
}

void
pprof_comment(struct pprof *p, const char *comment)
{
    uint64_t index = pprof_cstring(p, comment);
    put_key(&p->header, 13, 0);
    put_varint(&p->header, index);
}

void
pprof_default_sample_type(struct pprof *p, const char *type)
{
    put_uint_field(&p->header, 14, pprof_cstring(p, type));
}

void
pprof_time(struct pprof *p, int64_t time_nanos, int64_t duration_nanos)
{
    p->time_nanos = time_nanos;
    p->duration_nanos = duration_nanos;
}

void
pprof_sample(struct pprof *p, const uint64_t *locations, size_t nlocations,
             const int64_t *values, size_t nvalues,
             const struct pprof_label *labels, size_t nlabels)
{
    /* Sample: 1 location_id (packed), 2 value (packed int64), 3 label { 1 key, 2 str } */
    struct buf m = { 0 };
    put_packed(&m, 1, locations, nlocations);
    uint64_t v[PPROF_MAX_VALUES];
    if (nvalues > PPROF_MAX_VALUES) nvalues = PPROF_MAX_VALUES;
    for (size_t i = 0; i < nvalues; i++) v[i] = (uint64_t)values[i];
    /* values are always written, zeros included: their count must match the sample types */
    uint8_t tmp[10];
    size_t len = 0;
    for (size_t i = 0; i < nvalues; i++) len += pprof_varint_encode(v[i], tmp);
    put_key(&m, 2, 2);
    put_varint(&m, len);
    for (size_t i = 0; i < nvalues; i++) put_varint(&m, v[i]);
    for (size_t i = 0; i < nlabels; i++) {
        struct buf l = { 0 };
        put_uint_field(&l, 1, labels[i].key);
        put_uint_field(&l, 2, labels[i].str);
        put_bytes_field(&m, 3, l.data ? l.data : (uint8_t *)"", l.len);
        free(l.data);
    }
    if (m.failed) p->failed = true;
    put_bytes_field(&p->samples, 2, m.data, m.len);
    free(m.data);
}

#ifdef PPROF_GZIP
static bool
gzip(const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    /* windowBits 15 + 16: a gzip header and trailer around the deflate stream */
    if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) return false;
    size_t capa = deflateBound(&z, (uLong)inlen) + 32;
    uint8_t *buf = malloc(capa);
    if (!buf) {
        deflateEnd(&z);
        return false;
    }
    z.next_in = (Bytef *)in;
    z.avail_in = (uInt)inlen;
    z.next_out = buf;
    z.avail_out = (uInt)capa;
    int rc = deflate(&z, Z_FINISH);
    deflateEnd(&z);
    if (rc != Z_STREAM_END) {
        free(buf);
        return false;
    }
    *out = buf;
    *outlen = z.total_out;
    return true;
}
#endif

/* The one Mapping (PPROF_MAPPING_ID) the locations with addresses point
 * to: every address, already symbolised.  Without it go tool pprof makes
 * one up for them and, finding no binary to symbolise, warns "Main binary
 * filename not available."  No file, no build id: nothing to load. */
static void
put_mapping(struct buf *all)
{
    /* Mapping: 1 id, 2 memory_start, 3 memory_limit, 7 has_functions,
     * 8 has_filenames, 9 has_line_numbers */
    struct buf m = { 0 };
    put_uint_field(&m, 1, PPROF_MAPPING_ID);
    put_uint_field(&m, 3, SAMPLING_ADDRESS_HASHED << 1);
    put_uint_field(&m, 7, 1);
    put_uint_field(&m, 8, 1);
    put_uint_field(&m, 9, 1);
    if (m.failed) all->failed = true;
    put_bytes_field(all, 3, m.data, m.len);
    free(m.data);
}

bool
pprof_finish(struct pprof *p, bool compress, uint8_t **out, size_t *outlen)
{
    struct buf all = { 0 };
    buf_put(&all, p->header.data, p->header.len);
    if (p->addresses) put_mapping(&all);
    buf_put(&all, p->samples.data, p->samples.len);
    buf_put(&all, p->locations.data, p->locations.len);
    buf_put(&all, p->functions.data, p->functions.len);
    for (size_t i = 0; i < p->strings.n; i++) {
        size_t len;
        const char *s = strtab_get(&p->strings, i, &len);
        put_bytes_field(&all, 6, s, len);
    }
    put_uint_field(&all, 9, (uint64_t)p->time_nanos);
    put_uint_field(&all, 10, (uint64_t)p->duration_nanos);
    bool failed = p->failed || all.failed || p->samples.failed || p->header.failed ||
        p->functions.failed || p->locations.failed;
    if (failed) {
        free(all.data);
        return false;
    }
#ifdef PPROF_GZIP
    if (compress) {
        bool ok = gzip(all.data ? all.data : (uint8_t *)"", all.len, out, outlen);
        free(all.data);
        return ok;
    }
#endif
    (void)compress;
    *out = all.data ? all.data : malloc(1);
    *outlen = all.len;
    return *out != NULL;
}
