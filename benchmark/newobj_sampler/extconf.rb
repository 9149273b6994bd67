# A per-allocation NEWOBJ-hook sampler: the design dd-trace-rb, stackprof
# and vernier use, built here only as a peer to measure the sampling GC
# against.  Build out of tree:  ruby extconf.rb && make  (in a build dir).
require "mkmf"
$CFLAGS << " -O2 -Wall"
have_func("rb_gc_obj_slot_size") # exported by libruby, not declared in a public header
create_makefile("newobj_sampler")
