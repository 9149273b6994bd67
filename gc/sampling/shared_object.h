/*
 * shared_object.h: what the default GC pays for living in a shared object,
 * and what this library does instead.  Included by sampling.c alone, after
 * Ruby's headers and before gc/default/default.c.
 *
 * Built into Ruby, gc.c #includes default.c: gc.c's helpers are in the
 * same translation unit, and the compiler inlines them or drops them.
 * Loaded as a library, every such helper is a call into the ruby binary
 * through the PLT, and some of them do nothing.  On the allocation
 * micro-benchmark (benchmark/results/optimisations.md, "the modular tax")
 * these run for every object freed or allocated:
 *
 *   rb_gc_event_hook(obj, FREEOBJ)   once per freed object, to find that
 *       no hook wants it: gc.c tests ruby_vm_event_flags, which the ruby
 *       binary does not export.  The GC keeps its own copy of the GC
 *       events (objspace->hook_events, set by rb_gc_impl_set_event_hook),
 *       and tests that first.  The copy never lacks an event the global
 *       flags have: 3.4's update_global_event_hook hands every new value
 *       of ruby_vm_event_flags to the GC; 4.0's every value that has an
 *       internal event (when the last internal hook goes, the copy keeps
 *       the old events, and the call is made and returns early, as
 *       before).  So a hook is called exactly when it was before; events
 *       outside RUBY_INTERNAL_EVENT_OBJSPACE_MASK always make the call.
 *
 *   rb_asan_poison_object, rb_asan_unpoison_object (3.4 only): without
 *       ASan and MSan, gc.c's versions compute the slot size (an indirect
 *       call back into this library, result unused) and poison nothing.
 *       4.0's default.c defines them as no-ops in a modular build (these
 *       same macros); 3.4's gets the same here, with asan_unpoisoning_object
 *       (which also asked gc.c whether the slot was poisoned: never, then).
 *       With ASan or MSan on, gc.c's are called as before.
 *
 * The calls into gc.c that remain for every object freed or marked skip
 * the PLT stub (GCC's noplt attribute on x86: a call through the GOT).
 * Not -fno-plt for the whole library: that binds every symbol when the
 * library loads, and any use of an unexported symbol (4.0's
 * rb_current_box, which frames.c once reached through RCLASS_CLASSPATH;
 * ruby_version.h) would then stop the library loading at all.  And the
 * library is compiled with -fno-semantic-interposition (extconf.rb): its
 * own exported functions (rb_gc_impl_*) may be inlined into each other.
 */
#ifndef SAMPLING_SHARED_OBJECT_H
#define SAMPLING_SHARED_OBJECT_H

#include "ruby/ruby.h"
#include "ruby_version.h"
#include "gc/gc.h"   /* declares rb_gc_event_hook before the macro below */

#if defined(__has_attribute)
# if __has_attribute(noplt)
#  define SAMPLING_NOPLT __attribute__((noplt))
# endif
#endif
#ifndef SAMPLING_NOPLT
# define SAMPLING_NOPLT
#endif
SAMPLING_NOPLT void rb_gc_obj_free_vm_weak_references(VALUE obj);
SAMPLING_NOPLT bool rb_gc_obj_free(void *objspace, VALUE obj);
SAMPLING_NOPLT void rb_gc_mark_children(void *objspace, VALUE obj);
SAMPLING_NOPLT void rb_gc_event_hook(VALUE obj, rb_event_flag_t event);

/* default.c calls it where `objspace` (rb_objspace_t *) is in scope; a
 * function-like macro does not expand itself, so the call inside is the
 * real one.  SAMPLING_GC_EVENT(objspace, event), defined by the includer,
 * sees every event first (sampling.c: the end of a sweep). */
#define rb_gc_event_hook(obj, event) \
    (SAMPLING_GC_EVENT((objspace), (event)), \
     ((event) & ~RUBY_INTERNAL_EVENT_OBJSPACE_MASK) || RB_UNLIKELY((objspace)->hook_events & (event)) \
        ? rb_gc_event_hook((obj), (event)) : (void)0)

#if SAMPLING_INLINE_ASAN_HELPERS && !defined(RUBY_ASAN_ENABLED) && !defined(RUBY_MSAN_ENABLED)
# include "internal/sanitizers.h"  /* declares them before the macros below */
# define rb_asan_poison_object(obj) ((void)(obj))
# define rb_asan_unpoison_object(obj, newobj_p) ((void)(obj), (void)(newobj_p))
# undef asan_unpoisoning_object
# define asan_unpoisoning_object(obj) if ((obj) || true)
#endif

#endif
