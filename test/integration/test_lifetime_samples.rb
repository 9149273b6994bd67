# A Sample's lifetime on both clocks: allocated_gc/freed_gc and
# allocated_bytes/freed_bytes (the allocation clock,
# stats[:total_allocated_bytes]); age_bytes is the bytes allocated between
# them, or since the allocation while it lives (censored: live? says so).
# The clock runs with allocations only: an object that lives while 1.6 MB
# are allocated has an age_bytes of at least that, however many GCs ran
# (here none: GC is off meanwhile).
require_relative "helper"

$kept = nil

class TestLifetimeSamples < Minitest::Test
  def make_kept = $kept = Array.new(50) { |j| "kept-#{j}" * 3 }
  def make_dropped = 50.times { |j| "dropped-#{j}" * 3 }

  def of(samples, name)
    samples.select { |s| s.frames[0][2] == "String#*" && s.frames.any? { |f| f[2].end_with?("##{name}") } }
  end

  def test_both_clocks
    GC.start
    GC.disable
    Sampler.start(interval: 1, mode: :fixed, max_samples: 200_000)
    make_kept
    make_dropped
    Sampler.stop
    samples = Sampler.samples
    kept, dropped = of(samples, "make_kept"), of(samples, "make_dropped")
    assert_equal [50, 50], [kept.size, dropped.size]
    clock0 = Sampler.stats[:total_allocated_bytes]
    samples.each { |s| assert_operator s.allocated_bytes, :<=, clock0, "allocated before now on the clock" }
    junk = Array.new(20_000) { "x" * 30 }
    junk = nil
    clock1 = Sampler.stats[:total_allocated_bytes]
    assert_operator clock1 - clock0, :>=, 20_000 * 80, "the clock counts slot bytes"
    scrub
    GC.enable
    GC.start
    dead = dropped.reject(&:live?)
    assert_operator dead.size, :>=, 45, "the dropped ones died (the stack scan may keep a few)"
    dead.each do |s|
      assert_equal GC.count, s.freed_gc
      assert_operator s.freed_bytes, :>=, clock1, "found dead after the 1.6 MB"
      assert_equal s.freed_bytes - s.allocated_bytes, s.age_bytes
      assert_operator s.age_bytes, :>=, clock1 - clock0
      refute s.promoted?
    end
    kept.each do |s|
      assert s.live?
      assert_nil s.freed_bytes, "censored: no death"
      assert_operator s.age_bytes, :>=, clock1 - s.allocated_bytes, "a live one's age runs on"
    end
  ensure
    GC.enable
    $kept = nil
  end
end
