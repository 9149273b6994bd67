# A class variable: the path's edge is :class_variable named "@@registry".
require_relative "helper"

class TestRetentionClassVariable < Minitest::Test
  class Registry
    LINE = __LINE__ + 1
    def self.fill = (@@registry = Array.new(10) { |i| "registered #{i}" }; nil)
  end

  def test_class_variable
    Sampler.start(interval: 1, mode: :fixed)
    Registry.fill
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], Registry::LINE, String)[2]
    refute_nil s
    path = s.retention_path
    assert_equal :class_variable, path[-2][:kind], labels(path)
    assert_equal "@@registry", path[-2][:name]
    assert_equal "Class", path[-3][:class]
    assert_equal "TestRetentionClassVariable::Registry", path[-3][:name]
    assert_operator assert_path_in_heap(path), :>=, 2
  end
end
