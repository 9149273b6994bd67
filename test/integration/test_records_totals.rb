# The bound on records is for memory, not counts: allocation totals per
# site stay right however many records are evicted or dropped (as Go
# keeps per-stack counters), and every output says when records went.
# Counts are rounded once per site, so they are unbiased.
require_relative "helper"
require "tmpdir"
require "stringio"

class TotalsSite
  def self.churn(n) = n.times { "t" * 100 }           # 40 + 160 bytes (the literal, the result), dead at once
  def self.big(n) = Array.new(n) { Array.new(70, 0) } # 640-byte slots
end

class TestRecordsTotals < Minitest::Test
  # Fixed mode: every point crossed is a weight of `interval`, so the
  # site's total is exact: points * interval.
  def test_totals_survive_eviction
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 1000)
    40.times { TotalsSite.churn(10_000); GC.start }
    Sampler.stop
    st = Sampler.stats
    assert_operator st[:evicted], :>, 10_000, "most records were evicted"
    points = st[:heaps].sum { |h| h[:points] }
    rows = Sampler.send(:site_totals)
    assert_equal points * 4096, rows.sum { |r| r[4] }, "alloc_space over all sites == points * interval"
    churn = rows.select { |r| r[0].any? { |f| f[2] == "TotalsSite.churn" } && r[1] == "String" }
    bytes = ObjectSpace.memsize_of("t") + ObjectSpace.memsize_of("t" * 100)  # 200 (160 + 40; 4.1: 128 + 40)
    assert_in_delta 400_000 * bytes, churn.sum { |r| r[4] }, 4096 * 40, "the churn site's bytes, exactly (a point per 4 KiB)"

    Dir.mktmpdir do |dir|
      path = File.join(dir, "p.pb.gz")
      Sampler.write_pprof(path)
      assert_equal points * 4096, pprof_samples(path).sum { |s| s[:values][1] }, "pprof alloc_space"
      assert_match(/records evicted: \d+/, pprof("-raw", path), "the profile says records were evicted")
    end
    io = StringIO.new
    Sampler.report(io, top: 3)
    assert_match(/estimated (\d+\.\d) MiB allocated/, io.string)
    assert_in_delta 400_000 * bytes / 1048576.0, io.string[/estimated (\d+\.\d) MiB allocated/, 1].to_f, 1.5
    assert_match(/\d+ records evicted, \d+ dropped, \d+ sites folded/, io.string)
  end

  # pprof object counts: round(sum of weight / size) per site, not a sum
  # of per-record roundings (which biased 640-byte objects by -29% at
  # interval 512 and +9% at 2,000).
  def test_object_counts_are_unbiased
    [512, 1024, 2000].each do |interval|
      Sampler.clear
      Sampler.start(interval: interval, mode: :poisson, seed: 7)
      $keep = TotalsSite.big(20_000)
      Sampler.stop
      Dir.mktmpdir do |dir|
        path = File.join(dir, "p.pb.gz")
        Sampler.write_pprof(path)
        big = pprof_samples(path).select { |s| s[:labels]["class"] == "Array" }
        objects = big.sum { |s| s[:values][0] }
        estimate = Sampler.samples.select { |s| s.klass == Array && s.size == 640 }.sum { |s| s.weight / s.size }
        assert_in_delta estimate, objects, big.size, "interval #{interval}: pprof objects match the estimate"
        assert_in_delta 20_000, objects, 20_000 * 0.08, "interval #{interval}: near the truth"
      end
    end
  ensure
    $keep = nil
  end
end
