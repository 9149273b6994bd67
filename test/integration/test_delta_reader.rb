# Delta readers: each read of a Delta gives the allocations since its
# previous read (or its mark), while in-use stays a snapshot.  In fixed
# mode consecutive reads add up exactly to the totals between the first
# mark and the last read, also when sites are folded into <other sites>
# meanwhile (max_samples is small here); two readers do not disturb each
# other; clear starts every reader from zero.
require_relative "helper"
require "tmpdir"

class TestDeltaReader < Minitest::Test
  # 60 methods: 60 sites, far more than max_samples keeps
  60.times { |i| define_method(:"alloc_#{i}") { Array.new(20) { "s#{i}" * 20 } } }

  def alloc_space(bytes, dir, name)
    path = File.join(dir, name)
    File.binwrite(path, bytes)
    pprof_samples(path).sum { |s| s[:values][1] }
  end

  def test_deltas_add_up
    Dir.mktmpdir do |dir|
      Sampler.start(interval: 1024, mode: :fixed, seed: 1, max_samples: 16)
      before = Sampler::Delta.new(since: :start)
      alloc_0
      bytes = before.pprof
      d = Sampler::Delta.new
      other = Sampler::Delta.new
      total_before = alloc_space(bytes, dir, "before.pb.gz")
      sums = 0
      8.times do |round|
        60.times { |i| send(:"alloc_#{i}") if (i + round) % 3 == 0 }
        sums += alloc_space(d.pprof, dir, "d#{round}.pb.gz")
      end
      Sampler.stop
      sums += alloc_space(d.pprof, dir, "last.pb.gz")
      whole = alloc_space(Sampler.pprof, dir, "whole.pb.gz")
      assert_operator Sampler.stats[:folded], :>, 0
      assert_operator sums, :>, 100_000
      # what `before` saw, plus what `d` saw after its mark, is the whole
      # run, up to the few allocations between before's read and d's mark
      assert_operator whole - total_before - sums, :>=, 0
      assert_operator whole - total_before - sums, :<, 4 * 1024
      # the second reader, read once, saw what d saw in all its reads, but
      # for what other's own mark allocated (d was marked first: its st
      # tables, a sample or two at 1,024 when a point falls there, as the
      # allocations before move the phase; exactly equal on no other ground)
      gap = sums - alloc_space(other.pprof, dir, "other.pb.gz")
      assert_operator gap, :>=, 0
      assert_operator gap, :<, 4 * 1024
      assert_equal 0, alloc_space(other.pprof, dir, "again.pb.gz")
      # in-use is a snapshot, not a delta
      inuse = pprof_samples(File.join(dir, "again.pb.gz")).sum { |s| s[:values][3] }
      assert_operator inuse, :>, 0

      Sampler.clear
      Sampler.start(interval: 1024, mode: :fixed, seed: 1, max_samples: 16)
      alloc_1
      Sampler.stop
      since_clear = alloc_space(d.pprof, dir, "clear.pb.gz")
      assert_operator since_clear, :>, 0
      assert_equal since_clear, alloc_space(Sampler.pprof, dir, "whole2.pb.gz")
    end
  end
end
