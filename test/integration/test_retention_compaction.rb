# Under compaction (GC.auto_compact and GC.compact between walks): paths
# are found for objects that moved, and every edge is in the heap.
require_relative "helper"

class TestRetentionCompaction < Minitest::Test
  LINE = __LINE__ + 2
  def fill
    $retention_moved = { list: Array.new(500) { |i| "moved #{i}" } }
    nil
  end

  def test_after_compaction
    skip "no compaction on this platform" unless GC.respond_to?(:compact)
    GC.auto_compact = true
    Sampler.start(interval: 1, mode: :fixed)
    junk = Array.new(20_000) { Object.new }
    in_thread { fill }
    junk = nil
    Sampler.stop
    GC.compact
    3.times { GC.start }
    s = samples_at(Sampler.retention[:samples], LINE, String)[100]
    refute_nil s
    path = s.retention_path
    assert_equal %i[global hash_value index], path.map { |h| h[:kind] }, labels(path)
    assert_equal ":list", path[1][:name]
    assert_path_in_heap(path)
    GC.compact
    assert_equal path.map { |h| h[:label] }, s.retention_path(max_objects: 10**7).map { |h| h[:label] }
    GC.verify_internal_consistency
  ensure
    GC.auto_compact = false
  end
end
