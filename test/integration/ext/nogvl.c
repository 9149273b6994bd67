/* nogvl.c: a test extension that allocates and frees with ruby_xmalloc /
 * ruby_xfree where Ruby code cannot: without the GVL (a blocking region)
 * and on a thread Ruby does not know.  Built by helper.rb's
 * build_nogvl_ext; used by test_malloc_frees_anywhere.rb,
 * test_malloc_realloc_anywhere.rb and test_malloc_queue_full_totals.rb. */
#include <pthread.h>
#include "ruby/ruby.h"
#include "ruby/thread.h"

struct job { size_t size; void *ptr; };

static void *alloc_fn(void *p) { struct job *j = p; j->ptr = ruby_xmalloc(j->size); memset(j->ptr, 1, j->size); return NULL; }
static void *free_fn(void *p) { struct job *j = p; ruby_xfree(j->ptr); return NULL; }
static void *realloc_fn(void *p) { struct job *j = p; j->ptr = ruby_xrealloc(j->ptr, j->size); return NULL; }

/* NoGVL.alloc(size) -> address: with the GVL, at the caller's line */
static VALUE
m_alloc(VALUE self, VALUE size)
{
    struct job j = { NUM2SIZET(size), NULL };
    alloc_fn(&j);
    return ULL2NUM((uintptr_t)j.ptr);
}

/* NoGVL.alloc_nogvl(size) -> address: in a blocking region */
static VALUE
m_alloc_nogvl(VALUE self, VALUE size)
{
    struct job j = { NUM2SIZET(size), NULL };
    rb_thread_call_without_gvl(alloc_fn, &j, RUBY_UBF_IO, NULL);
    return ULL2NUM((uintptr_t)j.ptr);
}

/* NoGVL.alloc_many_nogvl(n, size) -> n: n blocks in one blocking region
 * (more than the sampler's queue holds), kept until NoGVL.free_many */
static void **many;
static size_t nmany;
static void *
alloc_many_fn(void *p)
{
    struct job *j = p;
    for (size_t i = 0; i < nmany; i++) many[i] = ruby_xmalloc(j->size);
    return NULL;
}

static VALUE
m_alloc_many_nogvl(VALUE self, VALUE n, VALUE size)
{
    struct job j = { NUM2SIZET(size), NULL };
    nmany = NUM2SIZET(n);
    many = calloc(nmany, sizeof(*many));
    if (!many) rb_memerror();
    rb_thread_call_without_gvl(alloc_many_fn, &j, RUBY_UBF_IO, NULL);
    return n;
}

/* NoGVL.free_many: frees them, with the GVL */
static VALUE
m_free_many(VALUE self)
{
    for (size_t i = 0; i < nmany; i++) ruby_xfree(many[i]);
    free(many);
    many = NULL;
    nmany = 0;
    return Qnil;
}

/* NoGVL.free(address): with the GVL */
static VALUE
m_free(VALUE self, VALUE addr)
{
    struct job j = { 0, (void *)(uintptr_t)NUM2ULL(addr) };
    free_fn(&j);
    return Qnil;
}

/* NoGVL.free_nogvl(address): in a blocking region */
static VALUE
m_free_nogvl(VALUE self, VALUE addr)
{
    struct job j = { 0, (void *)(uintptr_t)NUM2ULL(addr) };
    rb_thread_call_without_gvl(free_fn, &j, RUBY_UBF_IO, NULL);
    return Qnil;
}

/* NoGVL.free_native(address): on a thread Ruby does not know */
static VALUE
m_free_native(VALUE self, VALUE addr)
{
    struct job j = { 0, (void *)(uintptr_t)NUM2ULL(addr) };
    pthread_t t;
    if (pthread_create(&t, NULL, free_fn, &j)) rb_sys_fail("pthread_create");
    pthread_join(t, NULL);
    return Qnil;
}

/* NoGVL.realloc(address, size) -> address: with the GVL */
static VALUE
m_realloc(VALUE self, VALUE addr, VALUE size)
{
    struct job j = { NUM2SIZET(size), (void *)(uintptr_t)NUM2ULL(addr) };
    realloc_fn(&j);
    return ULL2NUM((uintptr_t)j.ptr);
}

/* NoGVL.realloc_nogvl(address, size) -> address: in a blocking region */
static VALUE
m_realloc_nogvl(VALUE self, VALUE addr, VALUE size)
{
    struct job j = { NUM2SIZET(size), (void *)(uintptr_t)NUM2ULL(addr) };
    rb_thread_call_without_gvl(realloc_fn, &j, RUBY_UBF_IO, NULL);
    return ULL2NUM((uintptr_t)j.ptr);
}

/* NoGVL.realloc_native(address, size) -> address: on a thread Ruby does not know */
static VALUE
m_realloc_native(VALUE self, VALUE addr, VALUE size)
{
    struct job j = { NUM2SIZET(size), (void *)(uintptr_t)NUM2ULL(addr) };
    pthread_t t;
    if (pthread_create(&t, NULL, realloc_fn, &j)) rb_sys_fail("pthread_create");
    pthread_join(t, NULL);
    return ULL2NUM((uintptr_t)j.ptr);
}

void
Init_nogvl(void)
{
    VALUE m = rb_define_module("NoGVL");
    rb_define_module_function(m, "alloc_many_nogvl", m_alloc_many_nogvl, 2);
    rb_define_module_function(m, "free_many", m_free_many, 0);
    rb_define_module_function(m, "alloc", m_alloc, 1);
    rb_define_module_function(m, "alloc_nogvl", m_alloc_nogvl, 1);
    rb_define_module_function(m, "free", m_free, 1);
    rb_define_module_function(m, "free_nogvl", m_free_nogvl, 1);
    rb_define_module_function(m, "free_native", m_free_native, 1);
    rb_define_module_function(m, "realloc", m_realloc, 2);
    rb_define_module_function(m, "realloc_nogvl", m_realloc_nogvl, 2);
    rb_define_module_function(m, "realloc_native", m_realloc_native, 2);
}
