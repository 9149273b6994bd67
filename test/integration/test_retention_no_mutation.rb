# Nothing changes: sampled objects' ObjectSpace.dump is the same before
# and after every retention output, no object id is assigned, nothing is
# kept alive by it, and GC.verify_internal_consistency passes after.
require_relative "helper"
require "json"

class TestRetentionNoMutation < Minitest::Test
  class Thing
    def initialize(i) = (@i = i; @s = "thing #{i}")
  end

  def test_nothing_changes
    Sampler.start(interval: 1, mode: :fixed)
    $retention_things = Array.new(200) { |i| Thing.new(i) }
    h = { "k" => "v", k: [1, 2] }
    $retention_hash = h
    Sampler.stop
    GC.start
    # (no GC from here to the dumps after: one would age the objects,
    # which is the collector's doing, not the walk's)
    GC.disable
    objects = ($retention_things + [$retention_hash] + $retention_things.map { |t| t.instance_variable_get(:@s) })
    before = objects.map { |o| ObjectSpace.dump(o) }
    flags_before = objects.map { |o| [o.frozen?, o.instance_variables] }
    Sampler.retention
    Sampler.samples.each(&:retention_path)
    Sampler.pprof(view: :retention)
    Sampler.retention_report(StringIO.new)
    after = objects.map { |o| ObjectSpace.dump(o) }
    flags_after = objects.map { |o| [o.frozen?, o.instance_variables] }
    GC.enable
    GC.verify_internal_consistency
    assert_equal before, after
    assert_equal flags_before, flags_after
    objects.each { |o| refute_includes ObjectSpace.dump(o), "object_id" }
  end

  def test_keeps_nothing_alive
    Sampler.start(interval: 1, mode: :fixed)
    $retention_tmp = Array.new(100) { Thing.new(0) }
    Sampler.stop
    Sampler.retention
    Sampler.pprof(view: :retention)
    $retention_tmp = nil
    GC.start
    GC.start
    live = Sampler.samples.select { |s| s.klass == Thing && s.live? }
    assert_operator live.size, :<, 5, "at most a few stale references on the machine stack"
  end
end
