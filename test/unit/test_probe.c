/*
 * test_probe.c: probe.h, the linear probing every table of the library
 * uses, on a toy table of keys whose homes are chosen to collide and
 * wrap around the end: random inserts and deletes against a model, with
 * the invariant (no empty slot between an entry's home and its slot) and
 * every lookup checked after each step.
 */
// links:
#include "check.h"
#include "probe.h"

#include <string.h>

enum { CAP = 16, MASK = CAP - 1 };
static uint32_t slots[CAP];             /* key, 0: empty */

/* homes crowd into the last slots, so runs wrap past the end */
static size_t home_of(uint32_t key) { return (CAP - 3 + key % 5) & MASK; }

static bool t_empty(void *t, size_t i) { (void)t; return slots[i] == 0; }
static size_t t_home(void *t, size_t i) { (void)t; return home_of(slots[i]); }
static void t_move(void *t, size_t from, size_t to) { (void)t; slots[to] = slots[from]; }
static void t_clear(void *t, size_t i) { (void)t; slots[i] = 0; }
static const struct probe_ops ops = { t_empty, t_home, t_move, t_clear };

static size_t
find(uint32_t key)
{
    for (size_t i = home_of(key); slots[i]; i = probe_next(i, MASK)) {
        if (slots[i] == key) return i;
    }
    return SIZE_MAX;
}

static int
invariant_holds(void)
{
    for (size_t i = 0; i < CAP; i++) {
        if (!slots[i]) continue;
        for (size_t j = home_of(slots[i]); j != i; j = probe_next(j, MASK)) {
            if (!slots[j]) return 0;
        }
    }
    return 1;
}

int
main(void)
{
    uint64_t x = 88172645463325252ULL;  /* xorshift, fixed seed */
    bool in[64] = { false };
    size_t size = 0;
    int ok = 1;
    for (int step = 0; step < 200000 && ok; step++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        uint32_t key = 1 + (uint32_t)(x % 63);
        if (!in[key] && !probe_full(size, CAP)) {
            size_t i = home_of(key);
            while (slots[i]) i = probe_next(i, MASK);
            slots[i] = key;
            in[key] = true;
            size++;
        }
        else if (in[key]) {
            probe_delete(NULL, find(key), MASK, &ops);
            in[key] = false;
            size--;
        }
        if (!invariant_holds()) { CHECK(0, "step %d: an entry is cut off from its home", step); ok = 0; }
        for (uint32_t k = 1; k < 64 && ok; k++) {
            if ((find(k) != SIZE_MAX) != in[k]) { CHECK(0, "step %d: key %u found %d, in %d", step, k, find(k) != SIZE_MAX, in[k]); ok = 0; }
        }
    }
    if (ok) CHECK(1, "200,000 random inserts and deletes agree with the model");
    CHECK(probe_entry_stays(14, 1, 15) && !probe_entry_stays(14, 1, 13) && probe_entry_stays(2, 5, 4) && !probe_entry_stays(2, 5, 2),
          "the cyclic range (hole, i], wrapped and not");
    CHECK(probe_full(8, 16) && !probe_full(7, 16), "half full is the limit");
    return check_summary();
}
