# min_gcs: on write_pprof, pprof, write_dhat, dhat and a Delta's pprof:
# an Integer from 0 to 2**32 - 1, else ArgumentError naming it (and the
# range); only the in-use views take it.
require_relative "helper"

class TestApiMinGcsArguments < Minitest::Test
  def test_min_gcs_arguments
    Sampler.start(interval: 4096)
    [-1, 2**32, 1.0, "1", nil].each do |bad|
      [-> { Sampler.write_pprof(File::NULL, min_gcs: bad) }, -> { Sampler.pprof(min_gcs: bad) },
       -> { Sampler.write_dhat(File::NULL, min_gcs: bad) }, -> { Sampler.dhat(min_gcs: bad) },
       -> { Sampler::Delta.new.pprof(min_gcs: bad) }].each do |call|
        e = assert_raises(ArgumentError) { call.() }
        assert_match(/min_gcs must be an Integer from 0 to 4294967295 \(got #{Regexp.escape(bad.inspect)}\)/, e.message)
      end
    end
    e = assert_raises(ArgumentError) { Sampler.pprof(view: :peak, min_gcs: 1) }
    assert_match(/min_gcs is for view: :allocations or :heap/, e.message)
    assert_kind_of String, Sampler.pprof(view: :heap, min_gcs: 2**32 - 1)
  end
end
