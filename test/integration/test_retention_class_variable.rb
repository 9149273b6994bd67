# A class variable: the path's edge is :class_variable named "@@registry".
require_relative "helper"

class TestRetentionClassVariable < Minitest::Test
  class Registry
    LINE = __LINE__ + 1
    def self.fill = (@@registry = Array.new(10) { |i| "registered #{i}" }; nil)
  end

  def test_class_variable
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { Registry.fill }
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], Registry::LINE, String)[2]
    refute_nil s
    path = s.retention_path
    assert_equal :class_variable, path[-2][:kind], labels(path)
    assert_equal "@@registry", path[-2][:name]
    # the class above it (on 4.0 through the imemo fields object that holds
    # a class's variables)
    owner = path[0..-3].reverse.find { |h| h[:class] == "Class" }
    refute_nil owner, labels(path)
    assert_equal "TestRetentionClassVariable::Registry", owner[:name]
    assert_operator assert_path_in_heap(path), :>=, 2
  end
end
