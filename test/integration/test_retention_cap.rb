# The cap: a heap larger than max_objects gives cut paths and says so
# (in retention's result, in each cut path, in the pprof and the report);
# nothing crashes and the samples the walk reached keep real paths.
require_relative "helper"

class TestRetentionCap < Minitest::Test
  include PprofHelper

  LINE = __LINE__ + 2
  def fill
    $retention_big = Array.new(50_000) { |i| "far #{i}" }
    nil
  end

  def test_cap_cuts_paths
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    r = Sampler.retention(max_objects: 2_000)
    assert r[:cut], "the walk says it was cut"
    assert_equal 2_000, r[:max_objects]
    assert_operator r[:objects], :<=, 2_000
    assert_operator r[:cut_paths], :>, 40_000
    far = samples_at(r[:samples], LINE, String)
    cut = far.map(&:retention_path).select { |p| p[0][:kind] == :cut }
    assert_operator cut.size, :>, 40_000
    assert_equal %i[cut object], cut[0].map { |h| h[:kind] }
    assert_match(/cap of 2000 objects/, cut[0][0][:label])
    # without the cap, every one has its path
    full = Sampler.retention
    refute full[:cut]
    assert_equal 0, full[:cut_paths]
    # the report says so
    Sampler.retention_report(out = StringIO.new, max_objects: 2_000)
    assert_match(/stopped at its cap of 2000 objects: \d+ samples not reached have cut paths/, out.string)
    # one sample's walk stops where its target is: a far one is cut too
    # (one from the middle: the last made may still be on the machine stack)
    mid = far[far.size / 2]
    assert_equal :cut, mid.retention_path(max_objects: 100)[0][:kind]
    assert_equal :global, mid.retention_path(max_objects: 10**7)[0][:kind]
  end
end
