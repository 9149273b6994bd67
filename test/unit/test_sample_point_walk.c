/*
 * test_sample_point_walk.c: the cut lands on the exact slot, whatever the
 * list's order (gc/sampling/sample_point.c's guessed walk).
 *
 * The walk to a cut guesses that each link leads to the slot just below
 * (a page's list, as the sweep builds it) and follows the real link where
 * it does not.  test_sample_point's mock lists have a stride other than
 * the slot size, so there every guess misses; here the slots lie
 * slot_size apart in one buffer, as on a heap page, and the lists are:
 * all below one another (every guess right); below with slots skipped
 * (live objects: a guess wrong now and then); a new list pushed on top of
 * an old one (the sweep's frees on the leftovers); and shuffled (nearly
 * every guess wrong).  For each, and every cut position, sample_point_place
 * must cut before the k-th slot exactly: the list holds the k - 1 slots
 * before it, in order, ended by NULL; the tail starts at the k-th and
 * holds the rest; the countdown is charged k - 1 slots; and
 * sample_point_rejoin gives the list back whole.
 */
// links: sample_point.c gap.c
#include "check.h"
#include "sample_point.h"

#include <stdint.h>
#include <string.h>

enum { SLOTS = 400 };

static unsigned char page[SLOTS * 640] __attribute__((aligned(64)));

static struct sample_point_slot *
slot_at(size_t slot_size, size_t i)
{
    return (struct sample_point_slot *)(page + i * slot_size);
}

/* Links order[0] -> order[1] -> ... -> NULL; returns the head. */
static struct sample_point_slot *
link_list(size_t slot_size, const size_t *order, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        struct sample_point_slot *s = slot_at(slot_size, order[i]);
        s->flags = 0;
        s->next = i + 1 < n ? slot_at(slot_size, order[i + 1]) : NULL;
    }
    return n ? slot_at(slot_size, order[0]) : NULL;
}

static uint64_t rng_state = 20261202;

static uint64_t
rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

/* The list orders; returns the number of slots. */
static size_t
make_order(int kind, size_t *order)
{
    size_t n = 0;
    switch (kind) {
      case 0:   /* every slot, from the top down */
        for (size_t i = SLOTS; i-- > 0;) order[n++] = i;
        break;
      case 1:   /* from the top down, a slot in five or so left out (live) */
        for (size_t i = SLOTS; i-- > 0;) if (rnd() % 5) order[n++] = i;
        break;
      case 2:   /* the upper half swept onto the lower half's leftovers, which run upwards */
        for (size_t i = SLOTS; i-- > SLOTS / 2;) if (rnd() % 4) order[n++] = i;
        for (size_t i = 0; i < SLOTS / 2; i++) if (rnd() % 3) order[n++] = i;
        break;
      default:  /* shuffled */
        for (size_t i = 0; i < SLOTS; i++) order[n++] = i;
        for (size_t i = n; i > 1; i--) {
            size_t j = rnd() % i, t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        break;
    }
    return n;
}

static int
check_cut(size_t slot_size, const size_t *order, size_t n, uint64_t k)
{
    sample_point_list list = link_list(slot_size, order, n);
    struct sample_point sp;
    memset(&sp, 0, sizeof(sp));
    /* a countdown whose point the k-th slot reaches */
    int64_t countdown = (int64_t)((k - 1) * slot_size + 1 + rnd() % slot_size);
    sp.countdown = countdown;
    sample_point_place(&sp, &list, n, slot_size);

    REQUIRE(sp.tail == slot_at(slot_size, order[k - 1]), "size %zu k %llu: tail is not the k-th slot",
            slot_size, (unsigned long long)k);
    REQUIRE(sp.tail_count == n - (k - 1), "tail_count %zu", sp.tail_count);
    REQUIRE(sp.countdown == countdown - (int64_t)((k - 1) * slot_size), "countdown %lld", (long long)sp.countdown);
    REQUIRE(sp.countdown > 0 && (uint64_t)sp.countdown <= slot_size, "countdown out of (0, size]");
    size_t i = 0;
    for (struct sample_point_slot *s = list; s; s = s->next, i++) {
        REQUIRE(i < k - 1 && s == slot_at(slot_size, order[i]), "size %zu k %llu: list slot %zu wrong",
                slot_size, (unsigned long long)k, i);
    }
    REQUIRE(i == k - 1, "list holds %zu slots, not %llu", i, (unsigned long long)(k - 1));
    REQUIRE(k == 1 ? sp.head_last == NULL : sp.head_last == slot_at(slot_size, order[k - 2]), "head_last");

    sample_point_rejoin(&sp, &list, slot_size);
    REQUIRE(sp.tail == NULL, "tail after rejoin");
    i = 0;
    for (struct sample_point_slot *s = list; s; s = s->next, i++) {
        REQUIRE(i < n && s == slot_at(slot_size, order[i]), "rejoined slot %zu wrong", i);
    }
    REQUIRE(i == n, "rejoined list holds %zu slots of %zu", i, n);
    return 1;
}

int
main(void)
{
    static const size_t sizes[] = { 40, 80, 160, 320, 640 };
    static const char *const kinds[] = { "descending", "descending with gaps", "two runs", "shuffled" };
    static size_t order[SLOTS];
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        for (int kind = 0; kind < 4; kind++) {
            size_t n = make_order(kind, order);
            int ok = 1;
            for (uint64_t k = 1; k <= n && ok; k++) ok = check_cut(sizes[z], order, n, k);
            CHECK(ok, "slot size %zu, %s list of %zu: a cut missed its slot", sizes[z], kinds[kind], n);
        }
    }
    return check_summary();
}
