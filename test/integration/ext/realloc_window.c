/* realloc_window.c: what another thread may do while a sampled block is
 * being reallocated (issue 40, item 4).  glibc's realloc, when it moves a
 * block, frees the old address before returning; until the sampler moves
 * the block's entry (after default.c's realloc returns), that address
 * may be handed to another allocation, which may be freed or sampled.
 * Under load that happens between threads; here it happens at once, in
 * the window, on the reallocating thread.
 *
 * Preloaded (LD_PRELOAD: default.c's realloc then calls this realloc),
 * and required as the extension ReallocWindow (the same loaded copy).
 * Used by test_malloc_realloc_window.rb. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include "ruby/ruby.h"

enum { IDLE, FREE_THERE, SAMPLE_THERE };
static int armed;
static void *armed_ptr;     /* the block the next realloc moves */
static size_t there_size;   /* the size of the block made at its old address */
static void *there;         /* that block (SAMPLE_THERE; freed by free_there) */
static int hit;             /* the block moved and the new block took its old address */

static void *(*next_realloc)(void *, size_t);

void *
realloc(void *ptr, size_t size)
{
    if (!next_realloc) next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
    void *mem = next_realloc(ptr, size);
    if (armed && ptr == armed_ptr && mem && mem != ptr) {
        int what = armed;
        armed = IDLE;
        /* the same size: the chunk glibc just freed (this thread's tcache) */
        void *p = what == FREE_THERE ? malloc(there_size) : ruby_xmalloc(there_size);
        hit = p == ptr;
        if (what == FREE_THERE) ruby_xfree(p);      /* a free at the old address, through xfree */
        else there = p;                             /* sampled there: a block of its own */
    }
    return mem;
}

/* A block and a guard after it (so that growing the block moves it), both
 * sampled (interval 1000, fixed: any 1000 bytes hold a point), then the
 * block reallocated to new_size with the window armed. */
struct job { int what; size_t new_size; void *block, *guard; };

static void *
run_fn(void *p)
{
    struct job *j = p;
    j->block = ruby_xmalloc(1000);
    j->guard = ruby_xmalloc(1000);
    armed_ptr = j->block;
    there_size = 1000;
    there = NULL;
    hit = 0;
    armed = j->what;
    j->block = ruby_xrealloc(j->block, j->new_size);
    armed = IDLE;
    return NULL;
}

/* ReallocWindow.run(where, what, new_size) -> [block, guard, hit]:
 * where :native (a new thread Ruby does not know: its countdown and
 * glibc's cache start afresh) or :gvl (this thread); what :free_there or
 * :sample_there.  hit: the block moved and the window's block took its
 * old address. */
static VALUE
m_run(VALUE self, VALUE where, VALUE what, VALUE new_size)
{
    struct job j = { SYM2ID(what) == rb_intern("free_there") ? FREE_THERE : SAMPLE_THERE, NUM2SIZET(new_size) };
    if (SYM2ID(where) == rb_intern("native")) {
        pthread_t t;
        if (pthread_create(&t, NULL, run_fn, &j)) rb_sys_fail("pthread_create");
        pthread_join(t, NULL);
    }
    else {
        run_fn(&j);
    }
    return rb_ary_new_from_args(3, ULL2NUM((uintptr_t)j.block), ULL2NUM((uintptr_t)j.guard), hit ? Qtrue : Qfalse);
}

/* ReallocWindow.free_there: frees the block :sample_there made (nil if none). */
static VALUE
m_free_there(VALUE self)
{
    if (!there) return Qnil;
    ruby_xfree(there);
    there = NULL;
    return Qtrue;
}

void
Init_realloc_window(void)
{
    VALUE m = rb_define_module("ReallocWindow");
    rb_define_module_function(m, "run", m_run, 3);
    rb_define_module_function(m, "free_there", m_free_there, 0);
}
