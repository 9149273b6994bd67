# malloc sampling is a setting like the others: on unless turned off
# (start's malloc:, RUBY_GC_SAMPLING's malloc=0|1), a bad value raises
# ArgumentError naming it (start) or prints one warning and runs
# unprofiled (environment), and stats always has the malloc keys.
require_relative "helper"

class TestMallocSettings < Minitest::Test
  def test_on_by_default_off_when_asked
    Sampler.start
    st = Sampler.stats
    assert_equal true, st[:malloc]
    "x" * 5_000_000
    assert_operator Sampler.stats[:malloc_samples], :>=, 1
    Sampler.start(malloc: false)
    assert_equal false, Sampler.stats[:malloc]
    "x" * 5_000_000
    assert_equal 0, Sampler.stats[:malloc_samples]
    assert_equal 0, Sampler.stats[:malloc_allocated_bytes]
    Sampler.start(malloc: true)
    assert_equal true, Sampler.stats[:malloc]
    %i[malloc_allocated_bytes malloc_samples malloc_points].each { |k| assert_kind_of Integer, st[k], k }
  end

  def test_bad_argument
    e = assert_raises(ArgumentError) { Sampler.start(malloc: 1) }
    assert_match(/malloc must be true or false/, e.message)
    refute Sampler.enabled?
  end

  def test_environment
    code = 'S = ObjectSpace::AllocationSampler; "x" * 9_000_000; p [S.stats[:malloc], S.stats[:malloc_samples] > 0]'
    { "malloc=1" => "[true, true]\n", "interval=512k" => "[true, true]\n", "malloc=0" => "[false, false]\n" }.each do |setting, want|
      out, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => setting })
      assert status.success?, err
      assert_equal want, out, setting
    end
    out, err, status = run_ruby("p ObjectSpace::AllocationSampler.enabled?", env: { "RUBY_GC_SAMPLING" => "malloc=2" })
    assert status.success?
    assert_equal "false\n", out
    assert_equal 1, err.lines.size, err
    assert_match(/malloc=2: expected 0 or 1/, err)
  end
end
