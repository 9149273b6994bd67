/* addresses.c: see addresses.h. */
#include "addresses.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

static struct sampling_addresses process_addresses = SAMPLING_ADDRESSES_INIT;

struct sampling_addresses *
sampling_addresses_process(void)
{
    return &process_addresses;
}

/* Doubles a table of uint32 slots (index + 1), rehashing each entry by
 * home(index); false without memory (the table is left as it was). */
static bool
slots_grow(uint32_t **slots, size_t *capa, const struct sampling_addresses *a,
           uint64_t (*hash_of)(const struct sampling_addresses *, uint32_t))
{
    size_t ncapa = *capa ? *capa * 2 : 1024;
    uint32_t *grown = calloc(ncapa, sizeof(*grown));
    if (!grown) return false;
    for (size_t i = 0; i < *capa; i++) {
        uint32_t v = (*slots)[i];
        if (!v) continue;
        size_t j = probe_home(hash_of(a, v - 1), ncapa - 1);
        while (grown[j]) j = probe_next(j, ncapa - 1);
        grown[j] = v;
    }
    free(*slots);
    *slots = grown;
    *capa = ncapa;
    return true;
}

/* Grows an array of n items to hold one more; false without memory. */
static bool
array_reserve(void **items, uint32_t *capa, uint32_t n, size_t size)
{
    if (n < *capa) return true;
    uint32_t ncapa = *capa ? *capa * 2 : 256;
    void *grown = realloc(*items, (size_t)ncapa * size);
    if (!grown) return false;
    *items = grown;
    *capa = ncapa;
    return true;
}

/* ---- interned text ---- */

static uint64_t
string_hash(const struct sampling_addresses *a, uint32_t i)
{
    return probe_fnv1a(PROBE_FNV_OFFSET, a->text + a->strings[i].offset, a->strings[i].len);
}

/* The index of s in the table, interned if new; UINT32_MAX when the text
 * cap or memory ran out. */
static uint32_t
intern_string(struct sampling_addresses *a, const char *s, size_t len)
{
    if (probe_full(a->nstrings, a->string_slots_capa) &&
        !slots_grow(&a->string_slots, &a->string_slots_capa, a, string_hash)) return UINT32_MAX;
    size_t mask = a->string_slots_capa - 1;
    size_t i = probe_home(probe_fnv1a(PROBE_FNV_OFFSET, s, len), mask);
    for (; a->string_slots[i]; i = probe_next(i, mask)) {
        const struct sampling_address_string *e = &a->strings[a->string_slots[i] - 1];
        if (e->len == len && memcmp(a->text + e->offset, s, len) == 0) return a->string_slots[i] - 1;
    }
    /* a frame brings at most two new strings */
    if (a->text_len + len > a->max_bytes || a->nstrings >= 2 * a->max_frames) return UINT32_MAX;
    if (a->text_len + len > a->text_capa) {
        size_t capa = a->text_capa ? a->text_capa : 16384;
        while (capa < a->text_len + len) capa *= 2;
        if (capa > a->max_bytes) capa = a->max_bytes;
        char *grown = realloc(a->text, capa);
        if (!grown) return UINT32_MAX;
        a->text = grown;
        a->text_capa = capa;
    }
    if (!array_reserve((void **)&a->strings, &a->strings_capa, a->nstrings, sizeof(*a->strings))) return UINT32_MAX;
    memcpy(a->text + a->text_len, s, len);
    a->strings[a->nstrings] = (struct sampling_address_string){ (uint32_t)a->text_len, (uint32_t)len };
    a->text_len += len;
    a->string_slots[i] = ++a->nstrings;
    return a->nstrings - 1;
}

/* ---- frames ---- */

static uint64_t
frame_key_hash(uint32_t name, uint32_t file, int64_t line)
{
    uint64_t h = probe_fnv1a(PROBE_FNV_OFFSET, &name, sizeof(name));
    h = probe_fnv1a(h, &file, sizeof(file));
    return probe_fnv1a(h, &line, sizeof(line));
}

static uint64_t
frame_hash(const struct sampling_addresses *a, uint32_t i)
{
    const struct sampling_address_frame *f = &a->frames[i];
    return frame_key_hash(f->name, f->file, f->line);
}

/* The address of a frame the table cannot hold: its text hashed, in the
 * range no stored frame uses. */
static uint64_t
hashed_address(struct sampling_addresses *a, const char *name, size_t namelen,
               const char *file, size_t filelen, int64_t line)
{
    uint64_t h = probe_fnv1a(PROBE_FNV_OFFSET, name, namelen);
    h = probe_fnv1a(h, &namelen, sizeof(namelen));    /* ("ab", "c") is not ("a", "bc") */
    h = probe_fnv1a(h, file, filelen);
    h = probe_fnv1a(h, &line, sizeof(line));
    a->hashed++;
    return SAMPLING_ADDRESS_HASHED | (h & (SAMPLING_ADDRESS_HASHED - 1));
}

uint64_t
sampling_address(struct sampling_addresses *a, const char *name, size_t namelen,
                 const char *file, size_t filelen, int64_t line)
{
    if (!name) namelen = 0;
    if (!file) filelen = 0;
    /* (a full table still finds the frames it holds: interning a known
     * string needs no room) */
    uint32_t n = intern_string(a, name ? name : "", namelen);
    uint32_t f = n == UINT32_MAX ? UINT32_MAX : intern_string(a, file ? file : "", filelen);
    if (f == UINT32_MAX) return hashed_address(a, name, namelen, file, filelen, line);

    uint64_t h = frame_key_hash(n, f, line);
    if (a->frame_slots_capa) {
        size_t mask = a->frame_slots_capa - 1;
        for (size_t i = probe_home(h, mask); a->frame_slots[i]; i = probe_next(i, mask)) {
            const struct sampling_address_frame *e = &a->frames[a->frame_slots[i] - 1];
            if (e->name == n && e->file == f && e->line == line) return a->frame_slots[i];
        }
    }
    if (a->nframes >= a->max_frames ||
        (probe_full(a->nframes, a->frame_slots_capa) &&
         !slots_grow(&a->frame_slots, &a->frame_slots_capa, a, frame_hash)) ||
        !array_reserve((void **)&a->frames, &a->frames_capa, a->nframes, sizeof(*a->frames)))
        return hashed_address(a, name, namelen, file, filelen, line);
    size_t mask = a->frame_slots_capa - 1;
    size_t i = probe_home(h, mask);
    while (a->frame_slots[i]) i = probe_next(i, mask);
    a->frames[a->nframes] = (struct sampling_address_frame){ n, f, line };
    a->frame_slots[i] = ++a->nframes;
    return a->nframes;
}

size_t
sampling_addresses_memsize(const struct sampling_addresses *a)
{
    return a->text_capa + (size_t)a->strings_capa * sizeof(*a->strings) + a->string_slots_capa * sizeof(*a->string_slots) +
        (size_t)a->frames_capa * sizeof(*a->frames) + a->frame_slots_capa * sizeof(*a->frame_slots);
}

void
sampling_addresses_clear(struct sampling_addresses *a)
{
    free(a->text);
    free(a->strings);
    free(a->string_slots);
    free(a->frames);
    free(a->frame_slots);
    *a = (struct sampling_addresses){ .max_frames = a->max_frames, .max_bytes = a->max_bytes };
}
