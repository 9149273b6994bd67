/*
 * addresses.h: a stable address for every frame a profile names, for the
 * life of the process.
 *
 * Model.  A frame is (function name, file, line).  Continuous profilers
 * identify a pprof Location by its `address` alone (Grafana Alloy's delta
 * code, DataDog's fastdelta: a sample is the addresses of its stack plus
 * its labels), and compare the profiles of two scrapes of one process: the
 * same frame must get the same address in both, and different frames
 * different ones.  Ruby frames have no machine address, so this table
 * gives each distinct frame a number the first time any profile names it:
 * 1, 2, 3, ... in order of first use, kept until the process ends (a
 * forked child inherits its parent's, so the numbers stay unique in it).
 * The key is the frame's exact text (names and files interned once each),
 * so two frames never share a number.
 *
 * Bound.  At most SAMPLING_ADDRESSES_MAX_FRAMES frames (131,072), two
 * strings a frame, and SAMPLING_ADDRESSES_MAX_BYTES (8 MiB) of interned
 * text: 15 MiB at the very most, well under 1 MiB for the few thousand
 * frames an application's profiles name.  A frame met after either is full, or
 * when malloc fails, is not stored: its address is a 62-bit hash of its
 * text with bit 62 set (SAMPLING_ADDRESS_HASHED), still stable, disjoint
 * from the numbers, and counted in `hashed`.  Two such frames could
 * collide (about n^2 / 2^63 for n of them); pprof.c keeps the addresses of
 * one profile distinct even then.
 *
 * Pure C, malloc only.  No locking: the library names frames only inside
 * a read (read.h: the VM lock held, other Ractors waiting), which
 * serialises every use of the process's table.
 */
#ifndef SAMPLING_ADDRESSES_H
#define SAMPLING_ADDRESSES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SAMPLING_ADDRESSES_MAX_FRAMES (1u << 17)
#define SAMPLING_ADDRESSES_MAX_BYTES (8u << 20)
#define SAMPLING_ADDRESS_HASHED (UINT64_C(1) << 62)

struct sampling_addresses {
    /* interned text: strings[i] is text[offset, offset + len) */
    char *text;
    size_t text_len, text_capa;
    struct sampling_address_string { uint32_t offset, len; } *strings;
    uint32_t nstrings, strings_capa;
    uint32_t *string_slots;         /* string index + 1; 0: empty (probe.h) */
    size_t string_slots_capa;
    /* frames: frame i has address i + 1 */
    struct sampling_address_frame { uint32_t name, file; int64_t line; } *frames;
    uint32_t nframes, frames_capa;
    uint32_t *frame_slots;          /* frame index + 1; 0: empty */
    size_t frame_slots_capa;
    uint32_t max_frames;            /* the caps (a unit test lowers them) */
    size_t max_bytes;
    uint64_t hashed;                /* frames given a hashed address */
};

#define SAMPLING_ADDRESSES_INIT { .max_frames = SAMPLING_ADDRESSES_MAX_FRAMES, .max_bytes = SAMPLING_ADDRESSES_MAX_BYTES }

/* The process's table. */
struct sampling_addresses *sampling_addresses_process(void);

/* The address of the frame (name, file, line): never 0. */
uint64_t sampling_address(struct sampling_addresses *a, const char *name, size_t namelen,
                          const char *file, size_t filelen, int64_t line);

/* Bytes the table holds (its arrays and text). */
size_t sampling_addresses_memsize(const struct sampling_addresses *a);

/* Frees everything; the table is empty again (its caps kept). */
void sampling_addresses_clear(struct sampling_addresses *a);

#endif
