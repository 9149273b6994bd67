/*
 * frames.h: the stack of the allocating thread, as caller_locations shows it.
 *
 * Capture walks the current thread's control frames (vm_core.h) and keeps,
 * per frame, only what identifies it: the iseq and pc offset, the method
 * entry, and whether it is a C method.  No line number is computed and no
 * string is made: that would cost ~90 instructions a frame and allocate.
 * Reading (sampling_frame_path/lineno/label) turns a frame into what
 * Thread::Backtrace::Location gives for it, with the same rules as
 * rb_ec_partial_backtrace_object in vm_backtrace.c:
 *
 *   - Ruby frames without a pc (dummy and IFUNC frames) are skipped;
 *   - a frame right after a rescue/ensure frame is skipped;
 *   - C methods, and Ruby methods marked `Primitive.attr! :c_trace`
 *     (Integer#times, Array#each, Kernel#loop in 3.4), are labelled as C
 *     methods and report the file and line of the Ruby frame that called them;
 *   - labels: "Foo#bar", "Foo.bar", "block in Foo#bar",
 *     "block (2 levels) in Foo#bar", "<main>", "<class:Foo>".
 *
 * rb_profile_frames is not used: in 3.4.5 it labels blocks with their
 * method's name and lists C-level blocks (IFUNC) that caller_locations
 * does not show.
 *
 * Capture may run inside the allocator (VM lock held): it allocates
 * nothing and cannot start a GC.  Reading allocates Ruby strings: never
 * call it during GC.
 */
#ifndef SAMPLING_FRAMES_H
#define SAMPLING_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "ruby/ruby.h"
#include "records.h"

/* Fills buf with up to depth frames of the current thread, innermost first;
 * *truncated tells whether frames were left out.  Returns the count (0
 * when the VM cannot show a stack yet, e.g. during boot). */
uint32_t sampling_frames_capture(struct sampling_frame *buf, uint32_t depth, bool *truncated);

/* The file (String) of a frame, or nil for a C method no Ruby code called. */
VALUE sampling_frame_path(const struct sampling_frame *frame);

/* The line (>= 0). */
int sampling_frame_lineno(const struct sampling_frame *frame);

/* The label (String), as Thread::Backtrace::Location#label gives it. */
VALUE sampling_frame_label(const struct sampling_frame *frame);

#endif
