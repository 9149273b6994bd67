# Memory is bounded by max_samples: a full table of live records drops new
# samples (counted in stats[:dropped]); dead records are evicted oldest
# first (counted in stats[:evicted]).
require_relative "helper"

class TestRecordsBounded < Minitest::Test
  def test_drops_are_counted_when_all_live
    Sampler.start(interval: 1, mode: :fixed, max_samples: 100)
    $keep = Array.new(1_000) { Object.new }
    Sampler.stop
    st = Sampler.stats
    assert_equal 100, Sampler.samples.size
    assert_operator st[:dropped], :>=, 900
    assert_equal st[:samples], Sampler.samples.size + st[:dropped] + st[:evicted]
  ensure
    $keep = nil
  end

  def test_dead_records_are_evicted
    Sampler.start(interval: 1, mode: :fixed, max_samples: 500)
    20.times do
      Array.new(400) { Object.new }
      GC.start
    end
    Sampler.stop
    st = Sampler.stats
    assert_operator st[:evicted], :>, 0
    assert_operator Sampler.samples.size, :<=, 500
    assert_equal st[:samples], Sampler.samples.size + st[:dropped] + st[:evicted]
  end

  def test_counters_count_since_start
    Sampler.start(interval: 1, mode: :fixed, max_samples: 10)
    $keep = Array.new(100) { Object.new }
    assert_operator Sampler.stats[:dropped], :>, 0
    Sampler.start(interval: 1, mode: :fixed, max_samples: 10)
    st = Sampler.stats
    # (the first call of a method at a call site allocates a call cache,
    # an internal object that interval 1 samples too)
    assert_operator st[:dropped], :<, 5, "dropped counts since start, not since clear"
    assert_equal st[:dropped], st[:samples]
  ensure
    $keep = nil
  end

  # clear before the first start: every record stays visible
  def test_clear_before_start
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.clear
      S.start(interval: 1, mode: :fixed, max_samples: 1000)
      a = Array.new(3) { Object.new }
      S.stop
      st = S.stats
      p st[:samples] == S.samples.size + st[:dropped] + st[:evicted]
    RUBY
    assert status.success?, err
    assert_equal "true\n", out
  end

  def test_clear_drops_everything
    Sampler.start(interval: 1, mode: :fixed, max_samples: 50)
    Array.new(100) { Object.new }
    Sampler.clear
    st = Sampler.stats
    assert_equal 0, st[:dropped]
    assert_equal 0, st[:live] if Sampler.samples.empty?
    assert st[:enabled]
  end

  # A long run with many distinct stacks (a fresh method per round) and a
  # small max_samples: evicted records free their stacks and let go of
  # their iseqs, so RSS grows no more than the same run's without sampling
  # (defining methods costs Ruby itself a few MiB).
  RSS_PROGRAM = <<~RUBY
    S = ObjectSpace::AllocationSampler
    S.start(interval: 256, mode: :fixed, max_samples: 1000) if ARGV[0] == "on"
    def rss = File.read("/proc/self/status")[/VmRSS:\\s+(\\d+)/, 1].to_i
    round = lambda do |i|
      m = :"site_\#{i}"
      Object.define_method(m) { Array.new(200) { "x" * 20 } }
      send(m)
      Object.send(:remove_method, m)
    end
    2_000.times { |i| round.(i) }
    GC.start
    warm = rss
    20_000.times { |i| round.(i + 2_000) }
    GC.start
    S.stop if ARGV[0] == "on"
    st = S.stats
    n = S.samples.size
    p [rss - warm, st[:samples] == n + st[:dropped] + st[:evicted], st[:evicted], n]
  RUBY

  def test_rss_stays_flat
    results = %w[on off].map do |mode|
      out, err, status = Open3.capture3({ "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }, RUBY, "-e", RSS_PROGRAM, mode)
      assert status.success?, err
      eval(out)
    end
    (on_growth, conserved, evicted, n), (off_growth, *) = results
    # (2 MiB, and 10% of what the program grew without sampling: under
    # YJIT its 22,000 methods compile to code whose memory moves with GC
    # timing, a few MiB either way; unbounded records would be 4.4 million)
    assert_operator on_growth, :<, off_growth * 1.1 + 2_048, "RSS grew #{on_growth} KiB sampling, #{off_growth} KiB without"
    assert conserved, "every sample is recorded, dropped or evicted: the counts tell the truth"
    assert_operator evicted, :>, 10_000
    assert_operator n, :<=, 1000
  end
end

