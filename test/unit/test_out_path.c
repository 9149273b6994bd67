/*
 * test_out_path.c: config.c's sampling_expand_path: %p, %n and %% as
 * before, and in a forked child a template without %p gets "-PID" before
 * the file name's first dot (at the end if none), so no child's file
 * overwrites its parent's; one with %p is expanded as in the parent.
 */
// links: config.c
#include "check.h"
#include "config.h"

#include <string.h>

static const char *
expand(const char *template_, bool child)
{
    static char out[256];
    if (!sampling_expand_path(template_, 4242, 7, child, out, sizeof(out))) return "(too long)";
    return out;
}

#define EXPECT(template_, child, want) do { \
    const char *got = expand(template_, child); \
    CHECK(strcmp(got, want) == 0, "%s (child %d): got %s, want %s", template_, child, got, want); \
} while (0)

int
main(void)
{
    EXPECT("/t/alloc-%p-%n.pb.gz", false, "/t/alloc-4242-7.pb.gz");
    EXPECT("/t/alloc-%p-%n.pb.gz", true, "/t/alloc-4242-7.pb.gz");
    EXPECT("/t/alloc-%n.pb.gz", false, "/t/alloc-7.pb.gz");
    EXPECT("/t/alloc-%n.pb.gz", true, "/t/alloc-7-4242.pb.gz");
    EXPECT("/t/alloc.pb.gz", true, "/t/alloc-4242.pb.gz");
    EXPECT("/t.d/alloc", true, "/t.d/alloc-4242");
    EXPECT("/t/.alloc.pb", true, "/t/.alloc-4242.pb");
    EXPECT("/t/a%%p-%n.pb", true, "/t/a%p-7-4242.pb");    /* %%p is no pid */
    EXPECT("/t/a%%p-%n.pb", false, "/t/a%p-7.pb");
    EXPECT("/t/alloc-%n", true, "/t/alloc-7-4242");

    char small[12];
    CHECK(!sampling_expand_path("/t/alloc.pb", 4242, 1, true, small, sizeof(small)), "does not fit");
    CHECK(sampling_expand_path("/t/alloc.pb", 4242, 1, false, small, sizeof(small)) && strcmp(small, "/t/alloc.pb") == 0,
          "fits: %s", small);
    return check_summary();
}
