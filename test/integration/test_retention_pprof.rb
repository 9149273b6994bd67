# write_pprof(view: :retention): go tool pprof reads it; each stack is the
# retention path (root at the bottom, the sampled object's hop above it)
# with the allocation's frames on top, valued by in-use weight, so -top
# and -traces show retention merged by path.
require_relative "helper"

class TestRetentionPprof < Minitest::Test
  include PprofHelper

  LINE = __LINE__ + 2
  def fill
    $retention_pprof = { users: Array.new(400) { |i| "user #{i}" * 4 } }
    nil
  end

  def test_retention_view
    Sampler.start(interval: 1024, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    GC.start    # (the temporaries die: what is left in use is what the path holds)
    file = File.join(Dir.mktmpdir, "retention.pb.gz")
    Sampler.write_pprof(file, view: :retention)
    traces = pprof("-traces", "-sample_index=inuse_space", file)
    # a trace, innermost first: the allocation frames, then the hops down to the root
    trace = traces.split(/^-+\+-+$/).find { |t| t.include?("[:users] (Array)") }
    refute_nil trace, traces
    lines = trace.lines.map(&:strip).reject(&:empty?)
    funcs = lines.map { |l| l.split(/\s{2,}/).last }
    assert_equal "global $retention_pprof (Hash)", funcs.last, trace
    assert_equal "[:users] (Array)", funcs[-2]
    assert_match(/\A\[\d+\] \(String\)\z/, funcs[-3])
    assert_includes funcs, "TestRetentionPprof#fill"
    assert_operator funcs.index("TestRetentionPprof#fill"), :<, funcs.index("[:users] (Array)")
    # values: in-use weight, equal to what the samples say
    weight = samples_at(Sampler.samples, LINE, String).select(&:live?).sum(&:weight)
    samples = pprof_samples(file)
    held = samples.select { |s| s[:functions].include?("[:users] (Array)") }.sum { |s| s[:values][1] }
    assert_equal weight, held
    # -top merges by path
    assert_match(/global \$retention_pprof \(Hash\)/, pprof("-top", "-nodecount=200", file))
    # labels (cache: held only through a method or call cache, as the
    # T_IMEMOs YJIT makes while it compiles fill)
    assert held.positive?
    labels = samples.map { |s| s[:labels]["retention"] }.uniq
    assert_empty labels - %w[path cache cut unreachable], "retention labels: #{labels.inspect}"
    # the default view is the allocations profile
    assert_equal Sampler.pprof.bytesize > 0, true
    assert_equal Sampler.pprof(view: :allocations).byteslice(0, 2), Sampler.pprof.byteslice(0, 2)
  end
end
