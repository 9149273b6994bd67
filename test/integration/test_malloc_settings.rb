# malloc sampling is a setting like the others: off unless asked for
# (start's malloc:, RUBY_GC_SAMPLING's malloc=0|1), a bad value raises
# ArgumentError naming it (start) or prints one warning and runs
# unprofiled (environment), and stats always has the malloc keys.
require_relative "helper"

class TestMallocSettings < Minitest::Test
  def test_off_by_default_on_when_asked
    Sampler.start
    st = Sampler.stats
    assert_equal false, st[:malloc]
    "x" * 5_000_000
    assert_equal 0, Sampler.stats[:malloc_samples]
    Sampler.start(malloc: true)
    assert_equal true, Sampler.stats[:malloc]
    "x" * 5_000_000
    assert_operator Sampler.stats[:malloc_samples], :>=, 1
    %i[malloc_allocated_bytes malloc_samples malloc_points].each { |k| assert_kind_of Integer, st[k], k }
  end

  def test_bad_argument
    e = assert_raises(ArgumentError) { Sampler.start(malloc: 1) }
    assert_match(/malloc must be true or false/, e.message)
    refute Sampler.enabled?
  end

  def test_environment
    out, err, status = run_ruby('S = ObjectSpace::AllocationSampler; "x" * 9_000_000; p [S.stats[:malloc], S.stats[:malloc_samples] > 0]',
                                env: { "RUBY_GC_SAMPLING" => "malloc=1" })
    assert status.success?, err
    assert_equal "[true, true]\n", out
    out, err, status = run_ruby("p ObjectSpace::AllocationSampler.enabled?", env: { "RUBY_GC_SAMPLING" => "malloc=2" })
    assert status.success?
    assert_equal "false\n", out
    assert_equal 1, err.lines.size, err
    assert_match(/malloc=2: expected 0 or 1/, err)
  end
end
