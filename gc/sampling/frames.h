/*
 * frames.h: the stack of the allocating thread, as caller_locations shows it.
 *
 * Two halves.  Capture (on the sampling path) walks the current thread's
 * control frames (vm_core.h) and keeps, per frame, three words: the iseq,
 * the pc pointer and the method entry, and mixes the pc into the stack's
 * hash.  It computes no line number, no label and no pc offset, and
 * allocates nothing (23 instructions a frame for methods and C methods,
 * 2 of them the hash; blocks and top-level frames walk out to their
 * method's environment).
 * Resolution (when samples are read) applies the rest of the rules of
 * rb_ec_partial_backtrace_object (vm_backtrace.c) and gives what
 * Thread::Backtrace::Location gives:
 *
 *   - Ruby frames without a pc (dummy and IFUNC frames) are not captured,
 *     nor is a frame right after a rescue/ensure frame (both at capture, so
 *     that `depth` counts frames as caller_locations shows them);
 *   - C methods, and Ruby methods that backtraces show as C methods (3.4:
 *     marked `Primitive.attr! :c_trace`; 4.0: defined in `<internal:...>`
 *     files, one kept per run; ruby_version.h), are labelled as C methods
 *     and report the file and line of the Ruby frame that called them;
 *   - labels: "Foo#bar", "Foo.bar", "block in Foo#bar",
 *     "block (2 levels) in Foo#bar", "<main>", "<class:Foo>".
 *
 * rb_profile_frames is not used: in 3.4.5 it labels
 * blocks with their method's name and lists C-level blocks (IFUNC) that
 * caller_locations does not show.
 *
 * Capture runs inside the allocator (under the VM lock, or the GVL alone
 * with a single Ractor).  Resolution and the readers allocate Ruby
 * strings: never call them during GC.
 */
#ifndef SAMPLING_FRAMES_H
#define SAMPLING_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "ruby/ruby.h"
#include "records.h"

/* What a capture gives besides the frames. */
struct sampling_capture {
    uint64_t hash;          /* sampling_stack_hash (records.h), mixed in as frames are read */
    uint32_t nframes;       /* 0 when the VM cannot show a stack yet, e.g. during boot */
    bool truncated;         /* frames were left out */
};

/* Fills buf with up to depth frames of the current thread, innermost first
 * (buf holds depth + 1: a location-only frame may follow a cut stack). */
struct sampling_capture sampling_frames_capture(struct sampling_frame *buf, uint32_t depth);

/* A frame as caller_locations shows it. */
struct sampling_location {
    uintptr_t iseq;         /* where: the frame's iseq, or its Ruby caller's for a C method (0: none) */
    uintptr_t cme;          /* the method entry (label of a C method, owner of a Ruby one) */
    uint32_t pc;            /* instruction offset into iseq */
    bool cfunc;             /* labelled as a C method */
};

/* Applies the caller_locations rules to n captured frames; out holds n.
 * Returns the number of locations. */
uint32_t sampling_frames_resolve(const struct sampling_frame *frames, uint32_t n, struct sampling_location *out);

/* The file (String) of a location, or nil for a C method no Ruby code called. */
VALUE sampling_location_path(const struct sampling_location *loc);

/* The line (>= 0). */
int sampling_location_lineno(const struct sampling_location *loc);

/* The label (String), as Thread::Backtrace::Location#label gives it. */
VALUE sampling_location_label(const struct sampling_location *loc);

#endif
