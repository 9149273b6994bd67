# What retention costs on a deep list: about what the walk costs.  One
# `retention` call allocates a Sample per live sample and nothing per hop
# (paths are built when asked, from the walk's shared prefixes), however
# deep the paths are; one retention_path allocates about its hops; a
# second path sharing the first's prefix allocates little more than its
# Array.  Measured in objects and malloc'd bytes (GC off), not time.
require_relative "helper"

class TestRetentionDeepCost < Minitest::Test
  class Link
    def initialize(n) = (@next = n)
  end

  N = 20_000
  LINE = __LINE__ + 1
  def fill = ($retention_deep = (1..N).reduce(nil) { |head, _| Link.new(head) }; nil)

  # [objects allocated, malloc'd bytes grown] by the block, GC off
  def allocated
    GC.start
    GC.disable
    objects = GC.stat(:total_allocated_objects)
    bytes = GC.stat(:malloc_increase_bytes)
    result = yield
    [GC.stat(:total_allocated_objects) - objects, GC.stat(:malloc_increase_bytes) - bytes, result]
  ensure
    GC.enable
  end

  def test_cost_follows_the_walk
    Sampler.start(interval: 1024, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    objects, bytes, r = allocated { Sampler.retention }
    samples = r[:samples].size
    links = samples_at(r[:samples], LINE, Link)
    assert_operator links.size, :>=, 500
    # (today's paths are Σ depth ≈ 500 × 10,000 hops: 40 MB of Arrays and
    # 100,000 hop objects; the bound is a few per sample plus the walk's)
    assert_operator objects, :<=, 2 * samples + 200, "objects allocated by retention (#{samples} samples)"
    assert_operator bytes, :<=, 512 * samples + 16 * r[:objects], "malloc'd bytes of retention (#{r[:objects]} walked)"
    # the kept walk: the list once, not once a path
    assert_operator r[:kept], :<=, N + 1_000
    # a path, built when asked: the whole of it, about its hops
    tail = links.first  # (the first made is the nearest the tail: the deepest)
    objects, _, path = allocated { tail.retention_path }
    assert_operator path.size, :>, N - 100, labels(path.first(3))
    assert_equal "$retention_deep", path[0][:name]
    assert path.drop(1).all? { |h| h[:kind] == :ivar && h[:name] == "@next" }
    assert_operator objects, :<=, 8 * N + 100
    # another one shares its prefix: its hops were made
    objects, _, other = allocated { links[links.size / 2].retention_path }
    assert_operator other.size, :<, N
    assert other.each_with_index.all? { |h, i| h.equal?(path[i]) }, "the same hops"
    assert_operator objects, :<=, 20
  end
end
