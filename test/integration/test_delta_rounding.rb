# Deltas add up exactly to the whole profile, in alloc_objects too: each
# delta is the difference of rounded cumulative values, not a rounded
# difference.  One site, 101 deltas, against the cumulative profile: a
# sample there stands for 1000 / 160 = 6.25 objects, so rounding each
# delta by itself drifts by a quarter object a delta.
require_relative "helper"
require "tmpdir"

class TestDeltaRounding < Minitest::Test
  def site(samples)
    mine = samples.select { |s| s[:functions].first(2) == ["String#*", "block in TestDeltaRounding#alloc_here"] }
    mine.map { |s| s[:values][0, 2] }.transpose.map(&:sum)
  end

  def alloc_here(n) = Array.new(n) { "r" * 120 }   # 160-byte slots

  def test_deltas_sum_to_the_whole
    Dir.mktmpdir do |dir|
      Sampler.start(interval: 1000, mode: :fixed, malloc: false)
      d = Sampler::Delta.new(since: :start)
      kept = []
      101.times do |i|
        kept << alloc_here(7)   # 1120 bytes: one point most times
        d.write_pprof(File.join(dir, format("d%03d.pb.gz", i)))
      end
      Sampler.stop
      whole = File.join(dir, "whole.pb.gz")
      Sampler.write_pprof(whole)
      deltas = Dir[File.join(dir, "d*.pb.gz")].sort.map { |f| site(pprof_samples(f)) }
      assert_equal 101, deltas.size
      objects, space = site(pprof_samples(whole))
      assert_operator objects, :>, 500
      assert_equal space, deltas.sum { |o, s| s.to_i }
      assert_equal objects, deltas.sum { |o, s| o.to_i }, "alloc_objects of the deltas: #{deltas.map(&:first).tally}"
    end
  end
end
