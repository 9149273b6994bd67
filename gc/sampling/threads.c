/*
 * threads.c: what the program's own threads are doing, for the library's
 * helper threads (the profile server of lib/allocation_sampler/server.rb),
 * so that a helper never changes how the program's deadlocks end.
 *
 * Model.  CRuby reports "No live threads left. Deadlock?" when a thread
 * goes to sleep forever (Queue#pop, Mutex#lock, Thread#join, Thread.stop)
 * and every living thread of its Ractor sleeps forever too
 * (thread.c: rb_check_deadlock).  A helper waiting in a select with a
 * timeout is living and not asleep forever, so while it runs that check
 * never fires: the program hangs instead of dying.  A helper therefore
 * asks, each time its wait times out,
 *
 *   helper_thread_state   => :joined    a thread waits to join the helper:
 *                                       it should end (Thread.list.each(&:join))
 *                            :deadlock  every other thread sleeps forever
 *                                       (helpers named allocation_sampler*
 *                                       aside): it should sleep forever too,
 *                                       and CRuby's own check then fires
 *                            nil        go on serving
 *
 * The test is rb_check_deadlock's, read from the outside with the GVL
 * held: status THREAD_STOPPED_FOREVER, no interrupt pending (a thread
 * being woken has one), and a thread blocked on a Mutex blocked for real
 * (the Mutex is locked: a Mutex handed over or free with waiters wakes
 * someone).  It may say :deadlock a moment before CRuby would (a wakeup
 * on its way); a helper asks twice, a period apart, before it sleeps.
 *
 * Locking: the GVL (a Ruby method); reads only.
 */
#include "ruby/internal/config.h"
#include "vm_core.h"
#include "ractor_core.h"

#include "api.h"

#include <string.h>

#define HELPER_NAME_PREFIX "allocation_sampler"

static bool
helper_thread_p(const rb_thread_t *th)
{
    VALUE name = th->name;
    return RB_TYPE_P(name, T_STRING) && RSTRING_LEN(name) >= (long)strlen(HELPER_NAME_PREFIX) &&
           memcmp(RSTRING_PTR(name), HELPER_NAME_PREFIX, strlen(HELPER_NAME_PREFIX)) == 0;
}

static bool
asleep_forever(const rb_thread_t *th)
{
    if (th->status != THREAD_STOPPED_FOREVER || RUBY_VM_INTERRUPTED(th->ec)) return false;
    if (th->locking_mutex && !RTEST(rb_mutex_locked_p(th->locking_mutex))) return false;
    return true;
}

/* AllocationSampler.helper_thread_state (private) => :joined, :deadlock or nil */
static VALUE
helper_thread_state_m(VALUE self)
{
    /* (GET_THREAD reads a TLS symbol libruby does not export) */
    rb_thread_t *me = (rb_thread_t *)RTYPEDDATA_GET_DATA(rb_thread_current());
    if (me->join_list) return ID2SYM(rb_intern("joined"));
    rb_ractor_t *r = me->ractor;
#ifdef RUBY_THREAD_PTHREAD_H
    if (r->threads.sched.readyq_cnt > 0) return Qnil;   /* someone waits only for the GVL */
#endif
    rb_thread_t *th = NULL;
    bool others = false;
    ccan_list_for_each(&r->threads.set, th, lt_node) {
        if (th == me || helper_thread_p(th)) continue;
        if (!asleep_forever(th)) return Qnil;
        others = true;
    }
    return others ? ID2SYM(rb_intern("deadlock")) : Qnil;
}

void
sampling_define_threads(VALUE mSampler)
{
    rb_define_private_method(rb_singleton_class(mSampler), "helper_thread_state", helper_thread_state_m, 0);
}
