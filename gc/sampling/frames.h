/*
 * frames.h: the stack of the allocating thread, as caller_locations shows it.
 *
 * Two halves.  Capture (on the sampling path) walks the current thread's
 * control frames (vm_core.h) and keeps, per frame, three words: the iseq,
 * the pc pointer and the method entry, and mixes the pc into the stack's
 * hash.  It computes no line number, no label and no pc offset, and
 * allocates nothing (blocks and top-level frames walk out to their
 * method's environment for the method entry).
 * Resolution (when samples are read, or when a site's code dies) applies the rest of the rules of
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
 * with a single Ractor).  Naming (sampling_names_of) allocates only
 * malloc'd memory, so the collector can call it.
 */
#ifndef SAMPLING_FRAMES_H
#define SAMPLING_FRAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "ruby/ruby.h"
#include "records.h"

/* What a capture gives besides the frames. */
struct sampling_capture {
    uint64_t hash;          /* sampling_stack_hash (records.h), mixed in as frames are read */
    uint32_t nframes;       /* 0: no Ruby frame (origin says why) */
    bool truncated;         /* frames were left out */
    uint8_t origin;         /* enum sampling_origin (records.h) */
    uint32_t cfps;          /* control frames (a cheap filter: sampling_site.cfps) */
    const struct sampling_site *same;   /* the stack is this one of recent's path: buf was not written */
};

/* Fills buf with up to depth frames of the current thread, innermost first
 * (buf holds depth + 1: a location-only frame may follow a cut stack).
 * recent (SAMPLING_RECENT_WAYS sites, some NULL) are stacks seen before,
 * one of them likely this one: the walk compares with them first and,
 * while one matches, neither stores nor hashes.  *ec gets the running
 * fiber's rb_execution_context_t (NULL at boot), for labels.h.
 * type: what is allocated, an object's T_xxx or T_NONE for a malloc'd
 * block (a String method YJIT runs without its frame allocates Strings
 * and their buffers: frames.c). */
/* Once the VM is booted (rb_gc_impl_set_params): what the capture needs
 * to tell a method YJIT runs without its frame (frames.c).  Runs Ruby
 * code; captures before it see no such frame. */
void sampling_frames_init(void);

struct sampling_capture sampling_frames_capture(struct sampling_frame *buf, uint32_t depth,
                                                struct sampling_site *const *recent, const void **ec,
                                                unsigned type);

/* The running fiber's rb_execution_context_t (NULL at boot): who is
 * reading (sampler.h, sampler_reader_enter). */
const void *sampling_frames_ec(void);

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

/* A site as text (records.h): each location's path, line and label as
 * caller_locations shows them, and the class name as Module#name (or
 * inspect, for an anonymous class) gives it; a stack with no frames
 * shows "<boot>" or "<no Ruby frame>" by its origin.  One malloc'd block
 * (free it), or NULL without memory.  Allocates no Ruby object and runs
 * no Ruby code: the collector calls it at the end of marking for sites
 * whose references die, while they can still be read. */
struct sampling_names *sampling_names_of(const struct sampling_frame *frames, uint32_t nframes, uint8_t origin,
                                         uintptr_t klass);

/* The same of a site: an unnamed one's from its path's frames, origin and
 * class; a named one's as it was named (sampling_named_names). */
struct sampling_names *sampling_site_names(const struct sampling_site *site);

/* The one way every output names a class (a site's class, retention's
 * hops): Module#name when it has one, else as inspect shows it
 * (rb_any_to_s, rb_mod_to_s): "#<Class:0x000055d5c3a1b2c8>",
 * "#<Module:0x...>", a singleton "#<Class:Foo>" or
 * "#<Class:#<Foo:0x...>>".  Hands the pieces to put, in order; reads the
 * class, allocates nothing and runs no Ruby code (the collector names
 * sites). */
typedef void sampling_text_put(void *ctx, const char *s, size_t len, VALUE from);  /* from: the String s is (a class path), else 0 */
void sampling_class_name(VALUE klass, sampling_text_put *put, void *ctx);

/* The site key of a sample (sites.h), the one place it is built, for a
 * slot (sampling.c) and a malloc'd block (malloc.c) alike: the stack
 * capture put in buf, the class (0: none), what was allocated (type and
 * imemo_type; the capture gives the origin), the label set, and the
 * recent slot the site goes to. */
static inline void
sampling_frames_site_key(struct sampling_site_key *key, struct sampling_frame *buf, const struct sampling_capture *capture,
                         uintptr_t klass, uint16_t type, uint8_t imemo_type, uint32_t labels, uint8_t recent)
{
    key->klass = klass;
    key->frames = buf;
    key->hash = capture->hash;
    key->nframes = capture->nframes;
    key->truncated = capture->truncated;
    key->kind.word = 0;
    key->kind.type = type;
    key->kind.imemo_type = imemo_type;
    key->kind.origin = capture->origin;
    key->labels = labels;
    key->recent = recent;
    key->cfps = capture->cfps;
    key->site = NULL;
    key->path = NULL;
    const struct sampling_site *same = capture->same;
    /* the stack is a recent site's (buf was not written): that site, if
     * the rest of the key is too; else its path is this key's (its
     * frames copied to buf, for the checks that read them) */
    if (same) {
        key->path = same->frames;
        if (sampling_site_rest_equal(same, key)) key->site = (struct sampling_site *)same;
        else sampling_site_frames(same, buf);
    }
}

#endif
