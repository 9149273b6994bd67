# An instance variable of a long-lived object (held by a constant): the
# path names the ivar, edge by edge in the heap.
require_relative "helper"

class TestRetentionIvar < Minitest::Test
  class Holder
    LINE = __LINE__ + 1
    def initialize = (@items = Array.new(10) { |i| "item #{i}" })
  end

  def fill
    Object.const_set(:RETENTION_HOLDER, Holder.new)
    nil
  end

  def test_instance_variable
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], Holder::LINE, String)[4]
    refute_nil s
    path = s.retention_path
    assert_equal [:constant, :ivar, :index], path.last(3).map { |h| h[:kind] }, labels(path)
    assert_equal "RETENTION_HOLDER", path[-3][:name]
    assert_equal "TestRetentionIvar::Holder", path[-3][:class]
    assert_equal "@items", path[-2][:name]
    assert_equal 4, path[-1][:name]
    assert_operator assert_path_in_heap(path), :>=, 3
  end
end
