/* labels.c: see labels.h. */
#include "labels.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

/* twice the cap, a power of two: the table is never more than half full */
#define SLOTS (2 * SAMPLING_LABELS_MAX)

uint32_t
sampling_labels_intern(struct sampling_labels *t, const char *text, uint32_t len, uint32_t npairs)
{
    if (!t->sets) {
        t->sets = calloc(SAMPLING_LABELS_MAX, sizeof(*t->sets));
        t->slots = calloc(SLOTS, sizeof(*t->slots));
        if (!t->sets || !t->slots) {
            free(t->sets);
            free(t->slots);
            t->sets = NULL;
            t->slots = NULL;
            t->dropped++;
            return 0;
        }
    }
    uint64_t h = probe_fnv1a(PROBE_FNV_OFFSET, text, len);
    size_t mask = SLOTS - 1, i;
    for (i = probe_home(h, mask); t->slots[i]; i = probe_next(i, mask)) {
        const struct sampling_label_set *s = t->sets[t->slots[i] - 1];
        if (s->hash == h && s->len == len && memcmp(s->text, text, len) == 0) return t->slots[i];
    }
    if (t->count >= SAMPLING_LABELS_MAX) {
        t->dropped++;
        return 0;
    }
    struct sampling_label_set *s = malloc(sizeof(*s) + len);
    if (!s) {
        t->dropped++;
        return 0;
    }
    s->npairs = npairs;
    s->len = len;
    s->hash = h;
    memcpy(s->text, text, len);
    t->sets[t->count] = s;
    uint32_t id = (uint32_t)++t->count;
    t->slots[i] = id;
    return id;
}

const struct sampling_label_set *
sampling_labels_get(const struct sampling_labels *t, uint32_t id)
{
    return id && id <= t->count ? t->sets[id - 1] : NULL;
}

size_t
sampling_labels_memsize(const struct sampling_labels *t)
{
    if (!t->sets) return 0;
    size_t bytes = SAMPLING_LABELS_MAX * sizeof(*t->sets) + SLOTS * sizeof(*t->slots);
    for (size_t i = 0; i < t->count; i++) bytes += sizeof(*t->sets[i]) + t->sets[i]->len;
    return bytes;
}

void
sampling_labels_free(struct sampling_labels *t)
{
    for (size_t i = 0; i < t->count; i++) free(t->sets[i]);
    free(t->sets);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

/* The table as probe_verify sees it (it never deletes: no move, no clear). */
static bool
slot_empty(void *t, size_t i)
{
    return ((struct sampling_labels *)t)->slots[i] == 0;
}

static size_t
slot_home(void *t, size_t i)
{
    const struct sampling_labels *l = t;
    return probe_home(l->sets[l->slots[i] - 1]->hash, SLOTS - 1);
}

static const struct probe_ops labels_probe_ops = { slot_empty, slot_home, NULL, NULL };

/* Whether a set's text is canonical (labels.h): npairs pairs
 * "key\0value\0", keys strictly ascending, within the bounds. */
static bool
canonical(const struct sampling_label_set *s)
{
    if (s->npairs > SAMPLING_LABELS_PAIRS || s->len > SAMPLING_LABELS_TEXT) return false;
    const char *p = s->text, *end = s->text + s->len, *key = NULL;
    for (uint32_t i = 0; i < s->npairs; i++) {
        const char *k = p, *kend = memchr(k, 0, (size_t)(end - k));
        if (!kend) return false;
        const char *vend = memchr(kend + 1, 0, (size_t)(end - kend - 1));
        if (!vend) return false;
        if (key && strcmp(key, k) >= 0) return false;
        key = k;
        p = vend + 1;
    }
    return p == end;
}

const char *
sampling_labels_verify(const struct sampling_labels *t)
{
    if (!t->sets) return t->count || t->slots ? "labels: counted sets without a table" : NULL;
    if (t->count > SAMPLING_LABELS_MAX) return "labels: more sets than SAMPLING_LABELS_MAX";
    for (size_t i = 0; i < SAMPLING_LABELS_MAX; i++) {
        const struct sampling_label_set *s = t->sets[i];
        if ((i < t->count) != (s != NULL)) return "labels: sets[] is not filled exactly up to count";
        if (!s) continue;
        if (s->hash != probe_fnv1a(PROBE_FNV_OFFSET, s->text, s->len)) return "labels: a set's hash is not the hash of its text";
        if (!canonical(s)) return "labels: a set's text is not canonical";
    }
    /* each id once, in the table (probe_verify: in its run, and as many
     * entries as sets) */
    unsigned char seen[SAMPLING_LABELS_MAX / 8 + 1] = { 0 };
    for (size_t i = 0; i < SLOTS; i++) {
        uint32_t id = t->slots[i];
        if (!id) continue;
        if (id > t->count) return "labels: the table holds an id past count";
        if (seen[id / 8] & (1u << (id % 8))) return "labels: the table holds an id twice";
        seen[id / 8] |= (unsigned char)(1u << (id % 8));
    }
    return probe_verify(t, SLOTS, t->count, &labels_probe_ops);
}
