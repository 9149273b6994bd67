# With malloc'd bytes sampled, the live samples estimate the whole heap a
# program holds, not just its slots.  On a program whose memory is mostly
# buffers (strings of 1-40 KB and arrays of 100-2,000 elements, about
# 90 MB), the weights of the live samples (slots + malloc) taken since
# start agree with the growth of ObjectSpace.memsize_of_all within 10%.
# (Poisson at 64 KiB: about 1,400 samples, so one standard deviation is
# about 1/sqrt(1400) = 2.7%; the bound is near 4 sigma, with a fixed seed.)
# Without malloc samples the estimate is under 2% of it.
require_relative "helper"
require "objspace"

class TestMallocLiveHeap < Minitest::Test
  def build(rng)
    keep = []
    4_000.times { keep << "x" * rng.rand(1_000..40_000) }
    1_000.times { keep << Array.new(rng.rand(100..2_000), 1) }
    keep
  end

  def live_estimate(kind = nil)
    Sampler.samples.select { |s| s.live? && (kind.nil? || s.kind == kind) }.sum(&:weight)
  end

  def test_whole_heap_estimate
    GC.start
    before = ObjectSpace.memsize_of_all
    Sampler.start(malloc: true, interval: 65_536, seed: 7)
    keep = build(Random.new(3))
    GC.start
    grown = ObjectSpace.memsize_of_all - before
    estimate = live_estimate
    assert_operator grown, :>, 80_000_000
    assert_in_delta grown, estimate, grown * 0.10, "live samples #{estimate.round} vs memsize_of_all growth #{grown}"
    assert_operator live_estimate(:slot), :<, grown * 0.02, "slots alone see a small part"
    keep.clear
  end
end
