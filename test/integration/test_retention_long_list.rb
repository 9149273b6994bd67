# A 100,000-long linked list: the tail's path is the whole list (the
# shortest and only one), found without recursion.
require_relative "helper"

class TestRetentionLongList < Minitest::Test
  include PprofHelper

  class Link
    attr_reader :next_link
    def initialize(next_link) = (@next_link = next_link)
  end

  N = 100_000
  LINE = __LINE__ + 3
  def fill
    head = nil
    N.times { head = Link.new(head) }
    $retention_list = head
    nil
  end

  def test_long_list
    Sampler.start(interval: 1, mode: :fixed, max_samples: 200_000)
    in_thread { fill }
    Sampler.stop
    # the first made is the tail; the 100,000 Samples are made in a thread
    # that ends, so no stale word of this thread's stack holds one (a
    # Sample holds its object: a root nearer the tail than the global)
    tail = in_thread { samples_at(Sampler.samples, LINE, Link).first }
    refute_nil tail
    # profiles show a long path by its two ends (written before this test
    # holds the path, whose hops would retain every link by a shorter way)
    # (in a thread that ends: the profile's hops hold links, and a stale
    # word of this thread's machine stack pointing at one would be a root
    # nearer the tail than the global; then a GC frees them)
    file = File.join(Dir.mktmpdir, "retention.pb.gz")
    in_thread { Sampler.write_pprof(file, view: :retention) }
    GC.start
    path = tail.retention_path
    assert_equal N, path.size, "the path starts at #{path[0].slice(:kind, :name).inspect}"
    assert_equal "$retention_list", path[0][:name]
    assert path.drop(1).all? { |h| h[:kind] == :ivar && h[:name] == "@next_link" }
    assert_nil path.last[:object].next_link
    # the edges, a sample of them (each one checked is a reachable_objects_from call)
    assert_equal 199, assert_path_in_heap(path.first(200))
    assert_equal 199, assert_path_in_heap(path.last(200), root: false)
    top = pprof("-top", "-nodecount=100", file)
    assert_match(/\.\.\. \(hops elided\) \.\.\./, top)
    assert_match(/global \$retention_list/, top)
  end
end
