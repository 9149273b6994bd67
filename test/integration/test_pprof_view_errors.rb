# write_pprof's and pprof's view: is :allocations (the default), :peak or
# :retention;
# anything else raises ArgumentError naming view, and writes nothing.
require_relative "helper"

class TestPprofViewErrors < Minitest::Test
  def test_bad_views_raise_naming_view
    Sampler.start(interval: 4096)
    GC.start
    Dir.mktmpdir do |dir|
      path = File.join(dir, "p.pb.gz")
      [:bogus, "peak", nil, 1, :retentionx].each do |bad|
        e = assert_raises(ArgumentError) { Sampler.write_pprof(path, view: bad) }
        assert_match(/view/, e.message)
        assert_match(/:allocations/, e.message)
        refute File.exist?(path), "nothing written for view: #{bad.inspect}"
        e = assert_raises(ArgumentError) { Sampler.pprof(view: bad) }
        assert_match(/view/, e.message)
      end
      assert_raises(ArgumentError) { Sampler.write_pprof(path, viw: :peak) }
      assert_raises(ArgumentError) { Sampler.pprof(view: :peak, default_sample_type: "alloc_space") }
      assert_operator Sampler.write_pprof(path, view: :allocations), :>, 0
      assert_operator Sampler.write_pprof(path, view: :peak), :>, 0
      assert_equal "\x1f\x8b".b, Sampler.pprof(view: :peak)[0, 2], "a gzipped profile"
    end
  end
end
