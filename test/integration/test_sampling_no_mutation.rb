# Sampling never changes a sampled object: no object id, no flag, shape or
# instance variable.  A sampled object's ObjectSpace.dump (minus
# address-dependent fields) equals its unsampled twin's.
require_relative "helper"
require "objspace"

class TestSamplingNoMutation < Minitest::Test
  class Twin
    def initialize = (@a = 1; @b = "b")
  end

  ADDRESS_FIELDS = %w[address references file line generation].freeze

  def normalized(obj)
    JSON.parse(ObjectSpace.dump(obj)).reject { |k, _| ADDRESS_FIELDS.include?(k) }
  end

  def test_dump_equals_unsampled_twin
    require "json"
    unsampled = Twin.new
    Sampler.start(interval: 1, mode: :fixed)
    sampled = Twin.new
    Sampler.stop
    s = Sampler.samples.find { |x| x.klass == Twin }
    refute_nil s
    # read everything a user can read; none of it may touch the object
    [s.type, s.klass, s.size, s.weight, s.frames, s.age, s.old?, s.live?, s.memsize]
    GC.start(full_mark: false)
    assert_equal normalized(unsampled), normalized(sampled)
    refute_includes ObjectSpace.dump(sampled), "object_id"
    assert_equal unsampled.instance_variables, sampled.instance_variables
  end

  def test_no_object_id_assigned
    Sampler.start(interval: 1, mode: :fixed)
    objs = Array.new(100) { Object.new }
    Sampler.stop
    Sampler.samples
    GC.start
    objs.each { |o| refute_includes ObjectSpace.dump(o), "object_id" }
  end
end
