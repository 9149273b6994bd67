/*
 * test_blocks.c: blocks.c, the table of sampled malloc'd blocks and its
 * filter, against a model (an array of candidate addresses, each live or
 * not, with its serial and owner's fields).  Random adds, frees and moves
 * with a fixed seed, in phases that grow the table to thousands of blocks
 * and drain it again (so it rebuilds both ways); some candidates crowd
 * two filter bytes past 255 (saturation), the rest spread; a trim every
 * TRIM steps (the library's major GC).  After every step: the size, the
 * peak, the capacity's bounds and every candidate's filter byte; every
 * 64 steps every candidate's entry (or its absence); every 1,000 steps
 * sampling_blocks_verify.
 */
// links: blocks.c
#include "check.h"
#include "blocks.h"

#include <string.h>

enum { NCAND = 3000, STEPS = 200000, PHASE = 25000, TRIM = 7000 };

static struct sampling_blocks table;

static struct {
    uintptr_t ptr;
    bool live;
    uint64_t serial, seq;
    uint32_t record, pending;
    bool moving;
} cand[NCAND];

static size_t live[NCAND], nlive;     /* candidates live, in no order */
static size_t live_pos[NCAND];
static unsigned count[1 << SAMPLING_BLOCKS_FILTER_BITS];   /* live candidates a byte */
static bool saturated[1 << SAMPLING_BLOCKS_FILTER_BITS];   /* reached 255 once: "maybe" for good */
static uint64_t serials;
static size_t peak;     /* the model's most live candidates since the last trim */

static uint64_t x = 88172645463325252ULL;  /* xorshift, fixed seed */

static uint64_t
next(void)
{
    x ^= x << 13; x ^= x >> 7; x ^= x << 17;
    return x;
}

static void
model_live(size_t i, bool on)
{
    size_t f = sampling_blocks_filter_index((const void *)cand[i].ptr);
    cand[i].live = on;
    if (on) {
        live_pos[i] = nlive;
        live[nlive++] = i;
        if (nlive > peak) peak = nlive;
        if (++count[f] >= 255) saturated[f] = true;
    }
    else {
        size_t last = live[--nlive];
        live[live_pos[i]] = last;
        live_pos[last] = live_pos[i];
        count[f]--;
    }
}

/* The model's owner fields, written into the entry as malloc.c would. */
static void
set_owner(size_t i, struct sampling_block *b)
{
    cand[i].record = (uint32_t)next();
    cand[i].seq = next();
    cand[i].pending = (uint32_t)(next() % 4);
    cand[i].moving = next() % 2;
    b->record = cand[i].record;
    b->seq = cand[i].seq;
    b->pending = cand[i].pending;
    b->moving = cand[i].moving;
}

/* Candidate i's entry, as the model says it is. */
static int
entry_agrees(size_t i, int step)
{
    struct sampling_block *b = sampling_blocks_find(&table, (const void *)cand[i].ptr);
    if (!cand[i].live) {
        REQUIRE(!b, "step %d: candidate %zu freed but found", step, i);
        return 1;
    }
    REQUIRE(b && b->ptr == cand[i].ptr, "step %d: candidate %zu live but not found", step, i);
    REQUIRE(b->serial == cand[i].serial, "step %d: candidate %zu serial %llu, want %llu", step, i,
            (unsigned long long)b->serial, (unsigned long long)cand[i].serial);
    REQUIRE(b->record == cand[i].record && b->seq == cand[i].seq && b->pending == cand[i].pending &&
            b->moving == cand[i].moving,
            "step %d: candidate %zu lost its owner's fields", step, i);
    return 1;
}

static int
filter_agrees(int step)
{
    for (size_t i = 0; i < NCAND; i++) {
        size_t f = sampling_blocks_filter_index((const void *)cand[i].ptr);
        unsigned want = saturated[f] ? 255 : count[f];
        REQUIRE(table.filter[f] == want, "step %d: filter byte %zu is %u, want %u (%u live)", step, f,
                table.filter[f], want, count[f]);
        REQUIRE(sampling_blocks_maybe(&table, (const void *)cand[i].ptr) == (want != 0),
                "step %d: maybe(%zu) disagrees with its byte", step, i);
    }
    return 1;
}

static int
sizes_agree(int step)
{
    REQUIRE(table.size == nlive, "step %d: size %zu, model %zu", step, table.size, nlive);
    REQUIRE(!table.capacity || (table.capacity & (table.capacity - 1)) == 0, "step %d: capacity %zu", step, table.capacity);
    REQUIRE(table.size * 2 <= table.capacity || !table.capacity, "step %d: more than half full", step);
    /* (a move adds its new entry before it removes the old one) */
    REQUIRE(table.peak >= peak && table.peak <= peak + 1, "step %d: peak %zu, model %zu", step, table.peak, peak);
    return 1;
}

/* A trim: the table follows the blocks it held since the last one, 16
 * slots a block of that peak at most. */
static int
trim(int step)
{
    size_t was = table.peak, before = table.capacity;
    sampling_blocks_trim(&table);
    /* rebuilt: 4 slots a block of the peak (the first power of two >= 4 x
     * (peak + 1)), room for as many again without a rebuild */
    REQUIRE(table.capacity == before || (table.capacity >= 4 * (was + 1) &&
            (table.capacity == SAMPLING_BLOCKS_MIN || table.capacity < 8 * (was + 1))),
            "step %d: rebuilt at %zu slots for a peak of %zu", step, table.capacity, was);
    REQUIRE(table.capacity <= SAMPLING_BLOCKS_MIN || table.capacity <= 16 * was,
            "step %d: capacity %zu after a trim, %zu blocks at most since the last", step, table.capacity, was);
    REQUIRE(table.peak == table.size, "step %d: the peak starts again at the size", step);
    peak = nlive;
    return 1;
}

static int
run(void)
{
    size_t max_capacity = 0, shrinks = 0, moves = 0, sat = 0;
    for (int step = 0; step < STEPS; step++) {
        /* grow phases add 7 in 10, drain phases 1 in 10 */
        bool growing = (step / PHASE) % 2 == 0;
        unsigned r = (unsigned)(next() % 10);
        unsigned adds = growing ? 7 : 1;
        size_t capacity = table.capacity;
        size_t touched[2] = { SIZE_MAX, SIZE_MAX };
        if (r < adds) {
            size_t i = next() % NCAND;
            touched[0] = i;
            if (!cand[i].live) {
                struct sampling_block *b = sampling_blocks_add(&table, (const void *)cand[i].ptr);
                REQUIRE(b && b->ptr == cand[i].ptr, "step %d: add failed", step);
                REQUIRE(b->serial == ++serials, "step %d: serial %llu, want %llu", step,
                        (unsigned long long)b->serial, (unsigned long long)serials);
                REQUIRE(b->record == 0 && b->seq == 0 && b->pending == 0 && b->moving == 0, "step %d: a new entry's owner fields", step);
                cand[i].serial = b->serial;
                set_owner(i, b);
                model_live(i, true);
            }
        }
        else if (nlive && r < adds + (10 - adds) / 2 + 1) {
            size_t i = live[next() % nlive];
            touched[0] = i;
            struct sampling_block *b = sampling_blocks_find(&table, (const void *)cand[i].ptr);
            REQUIRE(b, "step %d: a live candidate to free is not found", step);
            sampling_blocks_remove(&table, b);
            model_live(i, false);
            REQUIRE(table.capacity == capacity, "step %d: a remove rebuilt the table", step);
        }
        else if (nlive) {
            size_t from = live[next() % nlive], to = next() % NCAND;
            if (!cand[to].live) {
                touched[0] = from;
                touched[1] = to;
                struct sampling_block *b = sampling_blocks_move(&table, (const void *)cand[from].ptr, (const void *)cand[to].ptr);
                REQUIRE(b && b->ptr == cand[to].ptr, "step %d: move failed", step);
                cand[to].serial = cand[from].serial;
                cand[to].record = cand[from].record;
                cand[to].seq = cand[from].seq;
                cand[to].pending = cand[from].pending;
                cand[to].moving = cand[from].moving;
                model_live(from, false);
                model_live(to, true);
                moves++;
            }
        }
        if (step % TRIM == TRIM - 1) {
            if (!trim(step)) return 0;
            if (table.capacity < capacity) shrinks++;
        }
        if (!sizes_agree(step) || !filter_agrees(step)) return 0;
        for (int k = 0; k < 2; k++) {
            if (touched[k] != SIZE_MAX && !entry_agrees(touched[k], step)) return 0;
        }
        if (step % 64 == 0) {
            for (size_t i = 0; i < NCAND; i++) {
                if (!entry_agrees(i, step)) return 0;
            }
        }
        if (step % 1000 == 0) {
            const char *err = sampling_blocks_verify(&table);
            REQUIRE(!err, "step %d: verify: %s", step, err);
        }
        if (table.capacity > max_capacity) max_capacity = table.capacity;
    }
    for (size_t f = 0; f < (1 << SAMPLING_BLOCKS_FILTER_BITS); f++) sat += saturated[f];
    printf("blocks: %d steps, %zu moves, capacity up to %zu, %zu shrinks, %zu saturated filter bytes\n",
           STEPS, moves, max_capacity, shrinks, sat);
    REQUIRE(max_capacity >= 4 * SAMPLING_BLOCKS_MIN && shrinks >= 2 && sat >= 1 && moves > 1000,
            "the run exercised growth, shrinking, saturation and moves");
    return 1;
}

int
main(void)
{
    CHECK(!sampling_blocks_find(&table, (const void *)0x1000), "an empty table finds nothing");
    CHECK(!sampling_blocks_maybe(&table, (const void *)0x1000), "an empty filter says no");
    for (size_t i = 0; i < NCAND; i++) {
        if (i % 4 == 0) {
            /* crowded: two filter bytes, far from the others */
            cand[i].ptr = ((uintptr_t)1 << 46) | ((uintptr_t)(i + 1) << 20) | ((uintptr_t)(1 + i / 4 % 2) << 4);
        }
        else {
            /* spread: distinct by the high bits, random below */
            cand[i].ptr = ((uintptr_t)(i + 1) << 24) | (uintptr_t)(next() & 0xfffff0);
        }
    }
    CHECK(run(), "%d random adds, frees and moves agree with the model", STEPS);
    CHECK(!sampling_blocks_find(&table, NULL), "NULL is never an entry");
    CHECK(sampling_blocks_memsize(&table) == sizeof(table.filter) + table.capacity * sizeof(struct sampling_block),
          "memsize: the filter and the slots");
    /* every candidate live, then every block freed: the filter is empty
     * but where it saturated, and the table as large until trimmed */
    for (size_t i = 0; i < NCAND; i++) {
        if (!cand[i].live && sampling_blocks_add(&table, (const void *)cand[i].ptr)) model_live(i, true);
    }
    CHECK(nlive == NCAND && table.size == NCAND, "every candidate added (%zu)", table.size);
    while (nlive) {
        size_t i = live[nlive - 1];
        sampling_blocks_remove(&table, sampling_blocks_find(&table, (const void *)cand[i].ptr));
        model_live(i, false);
    }
    size_t stray = 0;
    for (size_t f = 0; f < (1 << SAMPLING_BLOCKS_FILTER_BITS); f++) stray += table.filter[f] != (saturated[f] ? 255 : 0);
    CHECK(table.size == 0 && stray == 0, "all freed: size %zu, %zu filter bytes astray", table.size, stray);
    size_t full = table.capacity;
    CHECK(full > SAMPLING_BLOCKS_MIN, "all freed: the table keeps its capacity until a trim (%zu)", full);
    CHECK(trim(STEPS) && table.capacity == full, "the first trim: it held many since the last (%zu)", table.capacity);
    CHECK(trim(STEPS) && table.capacity == SAMPLING_BLOCKS_MIN, "the second trim: back to %d slots (%zu)", SAMPLING_BLOCKS_MIN, table.capacity);
    CHECK(!sampling_blocks_verify(&table), "verify, emptied");
    /* verify catches what it promises to */
    struct sampling_block *b = sampling_blocks_add(&table, (const void *)cand[1].ptr);
    table.filter[sampling_blocks_filter_index((const void *)cand[1].ptr)] = 0;
    CHECK(sampling_blocks_verify(&table) != NULL, "verify: a filter byte off");
    table.filter[sampling_blocks_filter_index((const void *)cand[1].ptr)] = 1;
    b->serial = table.serials + 1;
    CHECK(sampling_blocks_verify(&table) != NULL, "verify: a serial never given");
    b->serial = table.serials;
    table.size++;
    CHECK(sampling_blocks_verify(&table) != NULL, "verify: the size off");
    table.size--;
    CHECK(!sampling_blocks_verify(&table), "verify, repaired");
    sampling_blocks_free(&table);
    CHECK(table.capacity == 0 && !table.slots, "free");
    return check_summary();
}
