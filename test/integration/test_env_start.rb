# RUBY_GC_SAMPLING starts the sampler at boot; a malformed value prints one
# warning and the program runs unprofiled with its own exit status.
require_relative "helper"
require "tmpdir"

class TestEnvStart < Minitest::Test
  PROBE = 'S = ObjectSpace::AllocationSampler; s = S.stats; p [s[:enabled], s[:interval], s[:mode], s[:depth], s[:max_samples]]; exit 3'

  def test_valid_settings
    out, err, status = run_ruby(PROBE, env: { "RUBY_GC_SAMPLING" => "interval=64k,mode=fixed,depth=64,seed=1,max_samples=5000" })
    assert_equal "", err
    assert_equal 3, status.exitstatus
    assert_equal "[true, 65536, :fixed, 64, 5000]\n", out
  end

  # bytes take k/m/g as powers of 1024, counts as thousands and millions
  def test_suffixes
    out, = run_ruby(PROBE, env: { "RUBY_GC_SAMPLING" => "interval=2m" })
    assert_equal "[true, 2097152, :poisson, 128, 100000]\n", out
    out, = run_ruby(PROBE, env: { "RUBY_GC_SAMPLING" => "max_samples=95m,depth=1k" })
    assert_equal "[true, 524288, :poisson, 1000, 95000000]\n", out
  end

  def test_boot_samples_are_taken
    out, err, status = run_ruby('p ObjectSpace::AllocationSampler.stats[:samples] > 0', env: { "RUBY_GC_SAMPLING" => "interval=1k" })
    assert status.success?, err
    assert_equal "true\n", out
  end

  # a path may hold commas: out= runs to the next comma that starts a known key
  def test_out_with_commas
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby("x = 'a' * 100; p ObjectSpace::AllocationSampler.stats[:mode]",
                                  env: { "RUBY_GC_SAMPLING" => "interval=1k,out=#{dir}/a,b.pb.gz,mode=fixed" })
      assert status.success?, err
      assert_equal ":fixed\n", out
      assert_equal ["a,b.pb.gz", "a,b.timeline.csv"], Dir.children(dir).sort
    end
  end

  MALFORMED = ["", "interval", "interval=", "interval=0", "interval=abc", "interval=12q", "interval=99999999999999999999999",
               "mode=fast", "depth=0", "depth=5000", "colour=red", "interval=4k,", "seed=1k", "max_samples=0",
               "interval=4k,,mode=fixed", "mode=fixed\xff".b, "max_samples=101m", "depth=5k", "seed=1k",
               "out=/tmp/x.pb.gz,intervall=4k"].freeze

  def test_malformed_values
    MALFORMED.each do |value|
      out, err, status = run_ruby(PROBE, env: { "RUBY_GC_SAMPLING" => value })
      assert_equal 3, status.exitstatus, "#{value.inspect}: the program runs"
      assert_equal 1, err.lines.size, "#{value.inspect}: one warning, got #{err.inspect}"
      assert_match(/RUBY_GC_SAMPLING/, err)
      assert_match(/sampling is off/, err)
      assert_match(/\A\[false, /, out, "#{value.inspect}: sampling stays off")
    end
  end
end
