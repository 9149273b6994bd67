# view: :heap (Go's four sample types, what the middleware serves) is
# accepted by write_pprof, pprof and Delta; a Delta takes :allocations or
# :heap only, and a bad view raises ArgumentError naming view and the
# accepted values, writes nothing and leaves the Delta where it was.
require_relative "helper"
require "tmpdir"

class FleetViewSite
  def self.build = Array.new(2000) { "v" * 20 }
end

class TestFleetViewArguments < Minitest::Test
  GO_TYPES = %w[alloc_objects alloc_space inuse_objects inuse_space].freeze

  def types(bytes) = FleetHelper::Reader.read(bytes).sample_types.map(&:first)

  def alloc_space(bytes)
    p = FleetHelper::Reader.read(bytes)
    i = p.sample_types.index { |t, _| t == "alloc_space" }
    p.samples.sum { |s| s.values[i] }
  end

  def test_view_heap_and_bad_views
    Sampler.start(interval: 4096, mode: :fixed)
    assert_equal GO_TYPES, types(Sampler.pprof(view: :heap))
    io = StringIO.new(+"")
    Sampler.write_pprof(io, view: :heap)
    assert_equal GO_TYPES, types(io.string)
    assert_operator types(Sampler.pprof).size, :>, 4, "the default view keeps the lifetime types"

    delta = Sampler::Delta.new
    $keep = FleetViewSite.build
    Dir.mktmpdir do |dir|
      [:peak, :retention, :bogus, "heap", nil].each do |view|
        e = assert_raises(ArgumentError) { delta.pprof(view: view) }
        assert_match(/\Aview must be :allocations/, e.message)
        assert_match(/:heap/, e.message)
        assert_raises(ArgumentError) { delta.write_pprof(File.join(dir, "d.pb.gz"), view: view) }
        refute File.exist?(File.join(dir, "d.pb.gz")), "nothing written for view: #{view.inspect}"
      end
    end
    heap = delta.pprof(view: :heap)
    assert_equal GO_TYPES, types(heap)
    assert_operator alloc_space(heap), :>=, 2000 * 40 - 4096, "the bad calls left the Delta where it was"
  ensure
    $keep = nil
  end
end
