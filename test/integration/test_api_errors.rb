# Bad arguments raise ArgumentError naming the argument and its range, and
# change nothing; calls on a stopped sampler are harmless.
require_relative "helper"

class TestApiErrors < Minitest::Test
  BAD = {
    interval: [0, -1, 2**50 + 1, 2**80, 1.5, "4096", nil, :big],
    mode: [:random, "poisson", 1, nil],
    depth: [0, -3, 4097, 2.0, "10"],
    seed: [-1, 2**64, 1.0, "7"],
    max_samples: [0, -1, 100_000_001, 3.5],
  }.freeze

  def test_each_bad_argument
    Sampler.start(interval: 8192, mode: :fixed, depth: 10, max_samples: 123)
    before = Sampler.stats
    BAD.each do |name, values|
      values.each do |value|
        e = assert_raises(ArgumentError, "#{name}: #{value.inspect}") { Sampler.start(name => value) }
        assert_match(/\b#{name}\b/, e.message)
        assert_equal before.slice(:enabled, :interval, :mode, :depth, :max_samples),
                     Sampler.stats.slice(:enabled, :interval, :mode, :depth, :max_samples),
                     "#{name}: #{value.inspect} changed the sampler"
      end
    end
  end

  def test_ranges_in_messages
    e = assert_raises(ArgumentError) { Sampler.start(interval: 0) }
    assert_match(/from 1 to/, e.message)
    e = assert_raises(ArgumentError) { Sampler.start(mode: :x) }
    assert_match(/:poisson or :fixed/, e.message)
  end

  def test_unknown_keyword_and_positional
    assert_raises(ArgumentError) { Sampler.start(intervall: 10) }
    assert_raises(ArgumentError) { Sampler.start(4096) }
    refute Sampler.enabled?
  end

  def test_failed_start_does_not_start
    assert_raises(ArgumentError) { Sampler.start(interval: 4096, depth: 0) }
    refute Sampler.enabled?
  end

  def test_redefined_integer_comparison_cannot_pass_a_bad_value
    out, err, status = run_ruby(<<~RUBY)
      class Integer; def <(o) = false; def >(o) = false; end
      begin
        ObjectSpace::AllocationSampler.start(interval: 0, mode: :fixed)
      rescue ArgumentError => e
        puts e.message
      end
      p ObjectSpace::AllocationSampler.enabled?
    RUBY
    assert status.success?, err
    assert_match(/\Ainterval must be from 1 to .*\nfalse\n\z/, out)
  end

  def test_calls_while_stopped
    refute Sampler.enabled?
    assert_equal false, Sampler.stop
    assert_nil Sampler.clear
    assert_equal [], Sampler.samples
    assert_equal 0, Sampler.stats[:samples]
    assert_equal false, Sampler.stats[:enabled]
    assert_equal Sampler, Sampler.each_sample { flunk }
  end

  def test_start_stop_return_values
    assert_equal true, Sampler.start
    assert Sampler.enabled?
    assert_equal true, Sampler.stop
    assert_equal false, Sampler.stop
  end

  def test_defaults
    Sampler.start
    s = Sampler.stats
    assert_equal 524_288, s[:interval]
    assert_equal :poisson, s[:mode]
    assert_equal 128, s[:depth]
    assert_equal 100_000, s[:max_samples]
    assert_equal SLOT_SIZES.size, s[:heaps].size
    assert_equal SLOT_SIZES, s[:heaps].map { |h| h[:slot_size] }
  end
end
