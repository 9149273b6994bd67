# frozen_string_literal: true

# Builds librubygc.sampling.so: CRuby's default GC (gc/default/default.c,
# included by sampling.c) plus the allocation sampler in this directory.
require_relative "../extconf_base"

# frames.c reads the VM's frames (vm_core.h), which includes generated
# headers such as id.h: in the source tree of a release tarball, in the
# build tree of a git archive (as ext/objspace's extconf.rb does).
$INCFLAGS << " -I$(topdir)"

# pprof profiles are gzip-compressed when zlib is there (readers accept
# plain protobuf too).
have_header("zlib.h") && have_library("z", "deflateInit2_")

# memory_split's malloc in use (glibc 2.33 and later; elsewhere it says 0).
have_func("mallinfo2", "malloc.h")

# The otel_memory USDT probes (usdt.h) need <sys/sdt.h> (Debian's
# systemtap-sdt-dev, which tools/install-deps installs); without it the
# library is built without them, and says so here, once.
unless have_header("sys/sdt.h")
  message "sampling: <sys/sdt.h> not found (systemtap-sdt-dev): building without the otel_memory probes\n"
end

# A GC in a shared object pays for it (shared_object.h): the library's own
# exported functions (rb_gc_impl_*, which gc.c finds by dlsym in this
# library, never interposed) may be inlined into each other.  (Not
# -fno-plt: see shared_object.h.)
append_cflags("-fno-semantic-interposition")

# --enable-checks (top-level configure) turns on GC_ASSERT and the
# sampler's own assertions in this library only.
$defs << "-DRGENGC_CHECK_MODE=1" << "-DSAMPLING_CHECKS=1" if ENV["SAMPLING_GC_CHECKS"] == "1"

# benchmark/phases builds a copy timing the sampler's phases (phases.h).
$defs << "-DSAMPLING_PHASES=1" if ENV["SAMPLING_GC_PHASES"] == "1"

# The files sampling.c #includes (the sampling path's, malloc.c,
# retention_walk.c: see its includes) are compiled inside it, not as
# objects here; HACKING.md's map says what each file is.
$objs = %w[sampling.o blocks.o retention.o retention_names.o retention_paths.o retention_read.o retention_view.o retention_api.o frames.o api.o read.o sample.o profile.o out.o report.o config.o pprof.o addresses.o labels.o labels_fiber.o labels_api.o delta.o delta_api.o views.o periodic.o write.o timeline_api.o dhat.o dhat_api.o threads.o memlimit.o watch.o memory_split.o usdt.o]

# Ruby 4.1's default.c includes probes.h in a modular build too: in a
# Ruby built with DTrace/SystemTap probes, their semaphores come from the
# object that `dtrace -G` makes of the library's objects, as for the
# default library (gc/extconf_base.rb: the same rules, which it applies
# to that one library by name).
dtrace_obj = ENV.fetch("DTRACE_OBJ", "")
default_c = File.read(File.join(__dir__, "..", "default", "default.c"))
if !dtrace_obj.empty? && defined?(DTRACE_RULES) && default_c.match?(/^#include "probes.h"/)
  $headers << "$(topdir)/probes.h"
  $cleanfiles << "probes.stamp"
  create_gc_makefile("sampling") do |conf|
    objs = $objs.join(" ")
    Array(conf).join.sub(/^OBJS = .*$/, "OBJS = #{objs} #{dtrace_obj}") + <<~MAKE
      \tGC_DTRACE = #{ENV.fetch("DTRACE")}
      \tGC_DTRACE_OBJ = #{dtrace_obj}
      \tGC_DTRACE_OBJS = #{objs}
      \tGC_DTRACE_REBUILD = #{ENV.fetch("DTRACE_REBUILD", "")}
    MAKE
  end
  File.write("Makefile", DTRACE_RULES, mode: "ab")
else
  create_gc_makefile("sampling")
end
