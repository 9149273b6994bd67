# A real tracer sees what the library's own profile says (usdt.h's
# contract): bpftrace, attached to otel_memory:alloc and :free of the
# library in a program with known allocations (fixed mode, interval 4 KiB,
# malloc'd blocks too), sees
#   - one alloc per sample: stats[:samples] (slots and blocks) less
#     reader_samples;
#   - alloc's w summing to the profile's alloc_space (go tool pprof);
#   - each live slot sample at its address, with its size and weight,
#     and no free after it;
#   - per address alloc, free, alloc, ...: never two frees or two allocs
#     in a row, so a free is once per sample, and never for a live one;
#     the allocs left without a free are the live records (stats[:live]).
# (A free first at an address is a block sampled before the measured part
# began, freed or regrown in it: counted apart.)
#
# Attaching takes time: the program allocates and collects in a loop until
# the test has seen both probes fire (usdt_helper.rb), then clears the
# sampler and marks the start of the measured part with a sampled 3 MB
# block; its end with a second one, after the figures were read with the
# sampler stopped and GC disabled.  bpftrace numbers its events (one
# thread: the program's), so the test knows it has every event before the
# end mark without a timeout deciding anything.  Needs root and a kernel
# that allows uprobes; skipped (with bpftrace's message) otherwise.
require_relative "helper"
require_relative "usdt_helper"

class TestUsdtBpftraceEvents < Minitest::Test
  PROGRAM = <<~'RUBY'
    keep = [mark]
    20_000.times { |i| s = "x" * 10; keep << s if i.even? }
    200.times { |i| b = "y" * 5000; keep << b if i.even? }
    300.times { |i| a = Array.new(30, i); keep << a if i % 3 == 0 }
    GC.start
    GC.disable
    S.stop
    stats = S.stats
    samples = S.samples
    S.write_pprof(out + ".pb.gz")
    rows = samples.map do |s|
      { kind: s.kind, size: s.size, weight: s.weight, live: s.live?, address: address_of(s.object) }
    end
    S.start(interval: 4096, mode: :fixed, malloc: true)
    keep << mark
    File.write(out, JSON.generate(stats: stats.slice(:samples, :reader_samples, :live, :dropped), samples: rows))
  RUBY

  def test_events_match_the_profile
    run_traced(PROGRAM, marks: 2) { |events, result, out| check(events, result, out) }
  end

  private

  def check(events, result, out)
    measured = usdt_part(events, 0)
    stats = result[:stats]
    tids = measured.map { |e| e[:tid] }.uniq
    assert_equal 1, tids.size, "every event from the program's thread: #{tids.inspect}"

    allocs = measured.select { |e| e[:kind] == "A" }
    assert_equal stats[:samples] - stats[:reader_samples], allocs.size, "one alloc per recorded sample: #{stats.inspect}"
    assert_equal 0, stats[:dropped], "no record dropped"

    alloc_space = pprof_samples(out + ".pb.gz").sum { |s| s[:values][1] }
    assert_equal alloc_space, allocs.sum { |e| e[:args][2] }, "alloc's w sum to the profile's alloc_space"

    ledger = UsdtLedger.new(self).feed(measured)
    assert_equal stats[:live], ledger.open.size,
                 "allocs left without a free == live records (#{ledger.before.size} earlier blocks freed)"

    samples = result[:samples]
    live_slots = samples.select { |s| s[:kind] == "slot" && s[:live] && s[:address] }
    dead = samples.reject { |s| s[:live] }
    assert_operator live_slots.size, :>=, 50, "live slot samples with an address"
    assert_operator dead.count { |s| s[:kind] == "slot" }, :>=, 100, "dead slot samples"
    assert_operator dead.count { |s| s[:kind] == "malloc" }, :>=, 50, "freed block samples"
    live_slots.each do |s|
      e = ledger.open[s[:address]] or flunk(format("live sample at 0x%x: no alloc left open there", s[:address]))
      assert_equal [s[:size], s[:weight].round], [e[:args][1], e[:args][2]], format("size and weight at 0x%x", s[:address])
    end
  end
end
