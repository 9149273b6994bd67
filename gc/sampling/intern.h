/*
 * intern.h: what the profile encoders (pprof.c, dhat.c) share: a growable
 * byte buffer, a map from 64-bit keys to ids, and a string table built on
 * both.
 *
 * Model.  A buffer grows by doubling and remembers a failed allocation
 * (`failed`): writers go on writing into it (nothing happens), and the
 * encoder checks once at the end.  A map is open addressing with linear
 * probing (probe.h) on a hash; a `same` callback tells entries with
 * equal hashes apart, so the key may be anything the caller can compare
 * (a string, a list of ids).  The string table interns byte strings to
 * indices 0, 1, ... in the order first seen, and gives them back in that
 * order.
 *
 * Pure C: malloc only, no Ruby, no locking (one encoder per writer).
 * Static inline functions: each encoder has its own copy.
 */
#ifndef SAMPLING_INTERN_H
#define SAMPLING_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

/* ---- a growable byte buffer ---- */

struct buf {
    uint8_t *data;
    size_t len, capa;
    bool failed;
};

static inline void
buf_reserve(struct buf *b, size_t n)
{
    if (b->failed || b->len + n <= b->capa) return;
    size_t capa = b->capa ? b->capa : 4096;
    while (capa < b->len + n) capa *= 2;
    uint8_t *data = realloc(b->data, capa);
    if (!data) {
        b->failed = true;
        return;
    }
    b->data = data;
    b->capa = capa;
}

static inline void
buf_put(struct buf *b, const void *bytes, size_t n)
{
    if (!n) return;     /* (memcpy of nothing from NULL is undefined) */
    buf_reserve(b, n);
    if (b->failed) return;
    memcpy(b->data + b->len, bytes, n);
    b->len += n;
}

/* ---- 64-bit keys to ids, open addressing (probe.h) ---- */

struct map {
    uint64_t *keys;     /* key + 1; 0: empty */
    uint64_t *values;
    size_t capa, size;
};

static inline size_t
map_slot(uint64_t key, size_t capa)
{
    return probe_home(key, capa - 1);
}

static inline bool
map_grow(struct map *m)
{
    size_t capa = m->capa ? m->capa * 2 : 1024;
    uint64_t *keys = calloc(capa, sizeof(*keys)), *values = calloc(capa, sizeof(*values));
    if (!keys || !values) {
        free(keys);
        free(values);
        return false;
    }
    for (size_t i = 0; i < m->capa; i++) {
        if (!m->keys[i]) continue;
        size_t j = map_slot(m->keys[i] - 1, capa);
        while (keys[j]) j = probe_next(j, capa - 1);
        keys[j] = m->keys[i];
        values[j] = m->values[i];
    }
    free(m->keys);
    free(m->values);
    m->keys = keys;
    m->values = values;
    m->capa = capa;
    return true;
}

/* The slot of key; *found tells whether it holds key (else it is free).
 * same (NULL: the key alone decides) compares an entry's value with what
 * the caller looks for. */
static inline size_t
map_find(const struct map *m, uint64_t key, bool (*same)(uint64_t value, void *ctx), void *ctx, bool *found)
{
    size_t i = map_slot(key, m->capa);
    for (;; i = probe_next(i, m->capa - 1)) {
        if (!m->keys[i]) {
            *found = false;
            return i;
        }
        if (m->keys[i] == key + 1 && (!same || same(m->values[i], ctx))) {
            *found = true;
            return i;
        }
    }
}

/* Room for one more entry: false without memory. */
static inline bool
map_room(struct map *m)
{
    return !probe_full(m->size, m->capa) || map_grow(m);
}

/* Fills the free slot map_find gave for key. */
static inline void
map_set(struct map *m, size_t slot, uint64_t key, uint64_t value)
{
    m->keys[slot] = key + 1;
    m->values[slot] = value;
    m->size++;
}

static inline void
map_free(struct map *m)
{
    free(m->keys);
    free(m->values);
}

/* FNV-1a: the strings' hash. */
static inline uint64_t
hash_bytes(const char *s, size_t len)
{
    return probe_fnv1a(PROBE_FNV_OFFSET, s, len);
}

/* ---- a string table ---- */

struct strtab_entry {
    size_t offset, len;     /* in bytes.data */
};

struct strtab {
    struct buf bytes;       /* the strings, one after another */
    struct buf entries;     /* struct strtab_entry[n] */
    size_t n;
    struct map map;
};

struct strtab_probe {
    const struct strtab *t;
    const char *s;
    size_t len;
};

/* The string at index (its length in *len); "" when nothing was stored. */
static inline const char *
strtab_get(const struct strtab *t, size_t index, size_t *len)
{
    const struct strtab_entry *e = (const struct strtab_entry *)t->entries.data + index;
    *len = e->len;
    return t->bytes.data ? (const char *)t->bytes.data + e->offset : "";
}

static inline bool
strtab_same(uint64_t index, void *ctx)
{
    struct strtab_probe *probe = ctx;
    size_t len;
    const char *s = strtab_get(probe->t, (size_t)index, &len);
    return len == probe->len && memcmp(s, probe->s, len) == 0;
}

/* The index of s (len bytes), stored when new; 0 and *failed set (the
 * encoder's flag) when memory ran out. */
static inline uint64_t
strtab_intern(struct strtab *t, const char *s, size_t len, bool *failed)
{
    if (!map_room(&t->map)) {
        *failed = true;
        return 0;
    }
    uint64_t h = hash_bytes(s, len);
    struct strtab_probe probe = { t, s, len };
    bool found;
    size_t slot = map_find(&t->map, h, strtab_same, &probe, &found);
    if (found) return t->map.values[slot];

    struct strtab_entry entry = { t->bytes.len, len };
    buf_put(&t->bytes, s, len);
    buf_put(&t->entries, &entry, sizeof(entry));
    if (t->bytes.failed || t->entries.failed) {
        *failed = true;
        return 0;
    }
    map_set(&t->map, slot, h, t->n);
    return t->n++;
}

static inline void
strtab_free(struct strtab *t)
{
    free(t->bytes.data);
    free(t->entries.data);
    map_free(&t->map);
}

#endif
