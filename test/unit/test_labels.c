/*
 * test_labels.c: labels.c, the interning of label sets: the same text is
 * the same id, different texts different ids (1, 2, ... in order), the
 * pairs read back as stored, and past SAMPLING_LABELS_MAX a new set gets 0
 * and is counted while every known set still finds its id; the memory
 * counted is the two arrays and each set, and stops at the cap.
 */
// links: labels.c
#include "check.h"
#include "labels.h"

#include <stdio.h>
#include <string.h>

static uint32_t
intern_n(struct sampling_labels *t, unsigned n)
{
    char text[64];
    int len = snprintf(text, sizeof(text), "n%c%u", 0, n);
    return sampling_labels_intern(t, text, (uint32_t)len + 1, 1);
}

int
main(void)
{
    struct sampling_labels t = { 0 };
    CHECK(sampling_labels_memsize(&t) == 0, "nothing before the first set");
    static const char two[] = "endpoint\0GET /a\0tenant\0t1";
    uint32_t a = sampling_labels_intern(&t, two, sizeof(two), 2);
    /* the two arrays (4,096 pointers, 8,192 ids), then the set and its text */
    size_t arrays = SAMPLING_LABELS_MAX * sizeof(void *) + 2 * SAMPLING_LABELS_MAX * sizeof(uint32_t);
    CHECK(sampling_labels_memsize(&t) == arrays + sizeof(struct sampling_label_set) + sizeof(two),
          "memsize %zu", sampling_labels_memsize(&t));
    CHECK(a == 1, "first id %u", a);
    CHECK(sampling_labels_intern(&t, two, sizeof(two), 2) == a, "same text, same id");
    const struct sampling_label_set *s = sampling_labels_get(&t, a);
    CHECK(s && s->npairs == 2 && s->len == sizeof(two) && memcmp(s->text, two, sizeof(two)) == 0, "stored as given");
    CHECK(strcmp(s->text + strlen(s->text) + 1, "GET /a") == 0, "first value");
    CHECK(sampling_labels_get(&t, 0) == NULL && sampling_labels_get(&t, 2) == NULL, "no set for 0 or an unknown id");

    bool ids_ok = true;
    for (unsigned n = 0; n < SAMPLING_LABELS_MAX - 1; n++) ids_ok &= intern_n(&t, n) == n + 2;
    CHECK(ids_ok, "ids 2 .. cap in order");
    CHECK(t.count == SAMPLING_LABELS_MAX && t.dropped == 0, "full: %zu sets", t.count);
    size_t full = sampling_labels_memsize(&t);
    CHECK(intern_n(&t, 999999) == 0 && t.dropped == 1, "past the cap: 0, counted");
    CHECK(sampling_labels_memsize(&t) == full, "past the cap, no byte more");
    CHECK(intern_n(&t, 7) == 9 && sampling_labels_intern(&t, two, sizeof(two), 2) == a, "known sets still found");
    CHECK(t.dropped == 1, "no drop for a known set");
    sampling_labels_free(&t);
    return check_summary();
}
