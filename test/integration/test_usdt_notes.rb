# The library carries the OpenTelemetry eBPF profiler's memory probes
# (gc/sampling/usdt.h): `readelf -n` lists otel_memory:alloc with three
# arguments and otel_memory:free with one, each with a semaphore (a
# non-zero address), and on x86-64 the arguments sit in the ABI's
# argument registers, where the profiler's first version reads them.
# Where the compiler has no <sys/sdt.h> the library has no probes: skipped.
require_relative "helper"
require_relative "usdt_helper"

class TestUsdtNotes < Minitest::Test
  def test_probes_with_semaphores
    lib = usdt_library
    skip "no <sys/sdt.h> here (systemtap-sdt-dev): the library is built without probes" unless usdt_header?
    notes = usdt_notes(lib)
    alloc = notes["otel_memory:alloc"] or flunk("no otel_memory:alloc in #{lib}: #{notes.keys.inspect}")
    free = notes["otel_memory:free"] or flunk("no otel_memory:free in #{lib}: #{notes.keys.inspect}")
    refute_equal 0, alloc[:semaphore], "alloc has a semaphore"
    refute_equal 0, free[:semaphore], "free has a semaphore"
    refute_equal alloc[:semaphore], free[:semaphore], "one semaphore a probe"
    assert_equal 3, alloc[:arguments].split.size, alloc[:arguments]
    assert_equal 1, free[:arguments].split.size, free[:arguments]
    if RbConfig::CONFIG["host_cpu"] == "x86_64"
      assert_equal "8@%rdi 8@%rsi 8@%rdx", alloc[:arguments]
      assert_equal "8@%rdi", free[:arguments]
    end
    assert_equal 2, notes.keys.count { |k| k.start_with?("otel_memory:") }, notes.keys.inspect
  end
end
