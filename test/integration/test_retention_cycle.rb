# A cycle (a <-> b, both reachable from a global) ends, and each gets
# its shortest path.
require_relative "helper"

class TestRetentionCycle < Minitest::Test
  Node = Struct.new(:peer, :payload)
  LINE = __LINE__ + 2
  def fill
    a = Node.new(nil, "a"); b = Node.new(a, "b"); a.peer = b
    $retention_cycle = a
    nil
  end

  def test_cycle
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    nodes = samples_at(Sampler.retention[:samples], LINE, Node)
    assert_equal 2, nodes.size
    paths = nodes.map(&:retention_path).sort_by(&:size)
    assert_equal [:global], paths[0].map { |h| h[:kind] }, labels(paths[0])
    assert_equal [:global, :member], paths[1].map { |h| h[:kind] }, labels(paths[1])
    assert_equal "peer", paths[1][1][:name]
    paths.each { |path| assert_path_in_heap(path) }
  end
end
