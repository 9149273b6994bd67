# A constant Foo::REGISTRY: the path names the constant with its full
# name, and every edge is in the heap.
require_relative "helper"

class TestRetentionConstant < Minitest::Test
  module Foo; end
  LINE = __LINE__ + 2
  def fill
    Foo.const_set(:REGISTRY, Array.new(10) { |i| "entry #{i}" })
    nil
  end

  def test_constant_full_name
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], LINE, String)[3]
    refute_nil s
    path = s.retention_path
    const = path.find { |h| h[:kind] == :constant && h[:class] == "Array" }
    refute_nil const, labels(path)
    assert_equal "TestRetentionConstant::Foo::REGISTRY", const[:name]
    assert_equal :index, path.last[:kind]
    assert_equal 3, path.last[:name]
    # the modules on the way are named by their constants too
    assert_includes path.map { |h| h[:name] }, "TestRetentionConstant::Foo", labels(path)
    assert_operator assert_path_in_heap(path), :>=, 2
  end
end
