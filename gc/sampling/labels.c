/* labels.c: see labels.h. */
#include "labels.h"
#include "probe.h"

#include <stdlib.h>
#include <string.h>

/* twice the cap, a power of two: the table is never more than half full */
#define SLOTS (2 * SAMPLING_LABELS_MAX)

static uint64_t
text_hash(const char *text, uint32_t len)
{
    uint64_t h = UINT64_C(0xcbf29ce484222325);     /* FNV-1a */
    for (uint32_t i = 0; i < len; i++) h = (h ^ (unsigned char)text[i]) * UINT64_C(0x100000001b3);
    return h;
}

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
    uint64_t h = text_hash(text, len);
    size_t mask = SLOTS - 1, i;
    for (i = (size_t)h & mask; t->slots[i]; i = probe_next(i, mask)) {
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

void
sampling_labels_free(struct sampling_labels *t)
{
    for (size_t i = 0; i < t->count; i++) free(t->sets[i]);
    free(t->sets);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}
