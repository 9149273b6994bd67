/*
 * memory_split.c: ObjectSpace::AllocationSampler.memory_split, where the
 * process's RSS went (docs/oom.md#where-the-rss-went):
 *
 *   rss         = heap_pages + malloc_in_use + rest
 *   heap_pages  = slots_in_use + slots_free + heap_overhead
 *   malloc_in_use = sampled_malloc (an estimate) + malloc_unsampled
 *                   (which holds the profiler's own tables: profiler)
 *
 * Measured: rss (/proc/self/statm), heap_pages and the slots (GC.stat,
 * GC.stat_heap), malloc_in_use (glibc's mallinfo2: every malloc of the
 * process, Ruby's and C extensions'). Estimated: the sampler's live slot
 * and malloc'd bytes (the running sums of stats).  rest is what no
 * counter names (code, stacks, other mappings; less the pages counted
 * above that are not resident): the unknown part, stated, never hidden.
 * A reader: it allocates Ruby objects, with the GVL.  Every profile's
 * comments carry the part that needs no Ruby call (profile.c).
 */
#include "ruby/ruby.h"

#include "api.h"
#include "memory_split.h"
#include "read.h"
#include "sampler.h"

#include <fcntl.h>
#ifdef HAVE_MALLINFO2
#include <malloc.h>
#endif
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SYM(name) ID2SYM(rb_intern(name))

/* GC::INTERNAL_CONSTANTS[:HEAP_PAGE_SIZE], read once at boot */
static long long heap_page_size;

/* Every malloc of the process in use (glibc's count), 0 where unknown. */
static long long
malloc_in_use_bytes(void)
{
#ifdef HAVE_MALLINFO2
    struct mallinfo2 mi = mallinfo2();
    return (long long)(mi.uordblks + mi.hblkhd);
#else
    return 0;
#endif
}

static long long
rss_bytes(void)
{
    char buf[128];
    int fd = open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    char *space = strchr(buf, ' ');
    return space ? strtoll(space + 1, NULL, 10) * sysconf(_SC_PAGESIZE) : -1;
}

static long long
stat_of(VALUE hash, const char *key)
{
    VALUE v = rb_hash_lookup2(hash, SYM(key), Qnil);
    return NIL_P(v) ? 0 : NUM2LL(v);
}

/* The line every profile's comments carry (profile.c), from what needs no
 * Ruby call: RSS, the heap's pages, malloc in use, the sampler's
 * estimates, the rest.  False when RSS cannot be read. */
bool
sampling_memory_split_text(char *buf, size_t len)
{
    long long rss = rss_bytes();
    if (rss < 0) return false;
    long long heap = (long long)rb_gc_stat(ID2SYM(rb_intern("heap_allocated_pages"))) * heap_page_size;
    long long in_use = malloc_in_use_bytes();
    struct sampler_stats s;
    sampler_get_stats(&s);
    size_t parts[SAMPLER_MEMORY_PARTS];
    snprintf(buf, len, "memory (memory_split): RSS %lld = Ruby heap pages %lld + malloc in use %lld (the profiler's own "
             "%zu) + rest %lld (unknown); estimated live: slots %.0f, malloc %.0f", rss, heap, in_use, sampler_memory(parts),
             rss - heap - in_use, s.live_space[SAMPLING_LIVE_SLOT], s.live_space[SAMPLING_LIVE_MALLOC]);
    return true;
}

/* memory_split => Hash (the model above; :sources says where each comes from) */
static VALUE
allocation_sampler_memory_split_m(VALUE self)
{
    VALUE mGC = rb_const_get(rb_cObject, rb_intern("GC"));
    VALUE stat = rb_funcall(mGC, rb_intern("stat"), 0);
    long long heap_pages = stat_of(stat, "heap_allocated_pages") * heap_page_size;
    /* per heap: its slots (eden), the live ones (3.4 has no heap_live_slots a heap: allocated less freed) */
    long long in_use = 0, capacity = 0;
    VALUE heaps = rb_funcall(mGC, rb_intern("stat_heap"), 0);
    for (long i = 0;; i++) {
        VALUE h = rb_hash_lookup2(heaps, LONG2NUM(i), Qnil);
        if (NIL_P(h)) break;
        long long size = stat_of(h, "slot_size");
        long long live = RTEST(rb_hash_lookup2(h, SYM("heap_live_slots"), Qnil)) ? stat_of(h, "heap_live_slots")
                       : stat_of(h, "total_allocated_objects") - stat_of(h, "total_freed_objects");
        in_use += live * size;
        capacity += stat_of(h, "heap_eden_slots") * size;
    }
    long long malloc_in_use = malloc_in_use_bytes();
    struct sampler_stats s;
    sampler_get_stats(&s);
    long long sampled_slots = llround(s.live_space[SAMPLING_LIVE_SLOT]), sampled_malloc = llround(s.live_space[SAMPLING_LIVE_MALLOC]);
    long long rss = rss_bytes();

    VALUE h = rb_hash_new();
    rb_hash_aset(h, SYM("rss"), LL2NUM(rss));
    rb_hash_aset(h, SYM("heap_pages"), LL2NUM(heap_pages));
    rb_hash_aset(h, SYM("slots_in_use"), LL2NUM(in_use));
    rb_hash_aset(h, SYM("slots_free"), LL2NUM(capacity - in_use));
    rb_hash_aset(h, SYM("heap_overhead"), LL2NUM(heap_pages - capacity));
    rb_hash_aset(h, SYM("malloc_in_use"), LL2NUM(malloc_in_use));
    size_t parts[SAMPLER_MEMORY_PARTS];
    rb_hash_aset(h, SYM("profiler"), SIZET2NUM(sampler_memory(parts)));
    rb_hash_aset(h, SYM("sampled_slots"), LL2NUM(sampled_slots));
    rb_hash_aset(h, SYM("sampled_malloc"), LL2NUM(sampled_malloc));
    rb_hash_aset(h, SYM("malloc_unsampled"), LL2NUM(malloc_in_use - sampled_malloc));
    rb_hash_aset(h, SYM("rest"), LL2NUM(rss - heap_pages - malloc_in_use));
    static const char *const sources[][2] = {
        { "rss", "measured: /proc/self/statm, resident pages" },
        { "heap_pages", "measured: GC.stat heap_allocated_pages x HEAP_PAGE_SIZE" },
        { "slots_in_use", "measured: GC.stat_heap, live slots x slot size" },
        { "slots_free", "measured: GC.stat_heap, free slots of the pages in use x slot size (fragmentation)" },
        { "heap_overhead", "measured: heap_pages less the slots' bytes (page headers and alignment, empty pages)" },
        { "malloc_in_use", "measured: glibc mallinfo2, every malloc of the process (Ruby's, C extensions')" },
        { "profiler", "measured: the sampler's own tables (stats[:profiler_bytes]), part of malloc_in_use" },
        { "sampled_slots", "estimate: the sampler's live slot bytes (samples since start)" },
        { "sampled_malloc", "estimate: the sampler's live malloc'd bytes (samples since start)" },
        { "malloc_unsampled", "estimate: malloc_in_use less sampled_malloc (before start, C extensions' own, allocator overhead)" },
        { "rest", "unknown: rss less heap_pages and malloc_in_use (code, stacks, other mappings; pages counted above "
                  "that are not resident make it smaller)" },
    };
    VALUE src = rb_hash_new();
    for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
        rb_hash_aset(src, SYM(sources[i][0]), rb_str_new_cstr(sources[i][1]));
    rb_hash_aset(h, SYM("sources"), src);
    return h;
}

READER_METHOD0(allocation_sampler_memory_split_m)

void
sampling_define_memory_split(VALUE mSampler)
{
    rb_define_singleton_method(mSampler, "memory_split", allocation_sampler_memory_split_m_reader, 0);
    VALUE mGC = rb_const_get(rb_cObject, rb_intern("GC"));
    heap_page_size = stat_of(rb_const_get(mGC, rb_intern("INTERNAL_CONSTANTS")), "HEAP_PAGE_SIZE");
}
