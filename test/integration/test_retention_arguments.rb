# Bad arguments raise ArgumentError naming the argument: view (only
# :allocations, :peak and :retention), max_objects; and change nothing.
require_relative "helper"

class TestRetentionArguments < Minitest::Test
  def test_bad_arguments
    Sampler.start(interval: 64, mode: :fixed)
    kept = Array.new(100) { "x" * 10 }     # (so that there is a sample to ask)
    [:retentionx, "retention", 1, nil].each do |view|
      e = assert_raises(ArgumentError) { Sampler.write_pprof(StringIO.new, view: view) }
      assert_match(/\Aview must be :allocations, :peak or :retention/, e.message)
      e = assert_raises(ArgumentError) { Sampler.pprof(view: view) }
      assert_match(/\Aview/, e.message)
    end
    [0, -1, "1", 1.5, 2**40].each do |v|
      e = assert_raises(ArgumentError) { Sampler.retention(max_objects: v) }
      assert_match(/\Amax_objects must be nil or an Integer from 1 to/, e.message)
      e = assert_raises(ArgumentError) { Sampler.samples.first.retention_path(max_objects: v) }
      assert_match(/\Amax_objects/, e.message)
    end
    e = assert_raises(ArgumentError) { Sampler.retention(cap: 1) }
    assert_match(/cap/, e.message)
    e = assert_raises(ArgumentError) { Sampler.pprof(view: :retention, default_sample_type: "alloc_space") }
    assert_match(/default_sample_type/, e.message)
    assert Sampler.enabled?
    refute_nil kept
    # the default view, and an explicit one, are today's profile
    io = StringIO.new
    Sampler.write_pprof(io, view: :allocations)
    assert_operator io.string.bytesize, :>, 0
    # dead samples and malloc'd blocks have no path
    Sampler.start(interval: 1, mode: :fixed, malloc: true)
    Array.new(10) { "x" * 100 }
    Sampler.stop
    GC.start
    assert Sampler.samples.select { |s| !s.live? }.all? { |s| s.retention_path.nil? }
    assert Sampler.samples.select { |s| s.kind == :malloc }.all? { |s| s.retention_path.nil? }
  end
end
