# The library loads under RUBY_GC_LIBRARY=sampling, says so, and adds its
# API; under the default library the API is absent.
require_relative "helper"

class TestApiBoot < Minitest::Test
  def test_implementation_name
    assert_equal "sampling", GC.config[:implementation]
    assert_match(/\+GC\[sampling\]/, RUBY_DESCRIPTION)
  end

  def test_api_present
    %i[start stop enabled? clear stats samples each_sample].each do |m|
      assert_respond_to Sampler, m
    end
    refute Sampler.enabled?
  end

  def test_api_absent_under_default
    out, err, status = run_ruby("p GC.config[:implementation]; p defined?(ObjectSpace::AllocationSampler)", library: "default")
    assert status.success?, err
    assert_equal "\"default\"\nnil\n", out
  end

  def test_both_libraries_installed
    gcdir = File.join(RbConfig::CONFIG["libdir"], "ruby", "gc")
    assert File.exist?(File.join(gcdir, "librubygc.sampling.so")), gcdir
    assert File.exist?(File.join(gcdir, "librubygc.default.so")), gcdir
  end
end
