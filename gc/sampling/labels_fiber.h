/*
 * labels_fiber.h: the process's label sets (labels.h: one table for the
 * whole process) and the running fiber's set, which the sampling path
 * reads.  The core's side of labels: with_labels and the Ruby Hashes
 * readers show are labels_api.c's, which call down into this.
 *
 * Model.  The current set's id lives in the Fiber storage under a
 * static Symbol key (sampling_labels_key), as a Fixnum: Fiber[] is
 * fiber-local and copied into every fiber and thread started from the
 * fiber (cont.c: inherit_fiber_storage), so labels follow the work into
 * fibers and threads, and a fiber-based server's requests never see
 * one another's.  labels_api.c's with_labels sets it; a sample reads it
 * (sampling_labels_current) and its site keys on it (sites.h).
 *
 * Invariants: the key is set (sampling_labels_init) before
 * sampling_labels_on, and sampling_labels_on before any fiber holds an
 * id; an id in a fiber was returned by sampling_labels_add.
 *
 * Locking: a pthread mutex serialises the table's writers (several
 * Ractors may call with_labels) and the counts; a set is read without
 * it, given its id (labels.h says why that is safe).
 */
#ifndef SAMPLING_LABELS_FIBER_H
#define SAMPLING_LABELS_FIBER_H

#include "ruby/ruby.h"
#include "labels.h"

/* Makes the Fiber storage key (once, at boot: labels_api.c). */
void sampling_labels_init(void);
/* The Fiber storage key: a static Symbol, an immediate, never moved. */
VALUE sampling_labels_key(void);

/* The id of the set with this canonical text, interned now if new; 0
 * when it cannot be kept (counted in dropped). */
uint32_t sampling_labels_add(const char *text, uint32_t len, uint32_t npairs);
/* The set of id (labels.h), or NULL for 0 or an unknown id. */
const struct sampling_label_set *sampling_labels_set(uint32_t id);
/* The counts for stats, and the table's bytes (sampling_labels_memsize). */
void sampling_labels_stats(uint64_t *count, uint64_t *dropped);
size_t sampling_labels_bytes(void);

/* The label set id of the running fiber (ec: its execution context, as
 * the stack capture found it; NULL at boot): 0 unless with_labels is
 * active there (or in the fiber or thread that started it).  On the
 * sampling path: reads a Fixnum from the Fiber storage, in place for a
 * small one (labels_fiber.c), allocates nothing, calls no Ruby method;
 * costs a flag test while with_labels was never called (the flag is
 * set by with_labels). */
extern bool sampling_labels_on;
uint32_t sampling_labels_read(const void *ec);

static inline uint32_t
sampling_labels_current(const void *ec)
{
    return __builtin_expect(sampling_labels_on, 0) && ec ? sampling_labels_read(ec) : 0;
}

#endif
