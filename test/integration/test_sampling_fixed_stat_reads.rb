# mode: :fixed stays exact while GC.stat and GC.stat_heap are read between
# allocations.  On Ruby 4.0 each read adds the reading Ractor's pending
# allocation counts to the heaps and zeroes them, and the sample point is
# a limit on that count (patches/4.0): the limit must move down with it,
# or every read would push the next sample later by the slots it added.
require_relative "helper"

class TestSamplingFixedStatReads < Minitest::Test
  def test_points_exact_across_stat_reads
    rng = Random.new(20261202)
    [1, 100, 4096, 65_536].each do |interval|
      Sampler.clear
      Sampler.start(interval: interval, mode: :fixed, max_samples: 1_000)
      keep = []
      20_000.times do |i|
        slot = OBJECT_SLOTS.sample(random: rng)
        obj = object_for(slot, :string)
        keep << obj if i % 7 == 0
        GC.stat(:total_allocated_objects) if i % 13 == 0
        GC.stat_heap(0, :total_allocated_objects) if i % 29 == 0
      end
      heap_stats.each do |slot, h|
        assert_equal h[:allocated_bytes] / interval, h[:points], "heap #{slot}, interval #{interval}: #{h.inspect}"
      end
      Sampler.stop
      keep.clear
    end
  end
end
