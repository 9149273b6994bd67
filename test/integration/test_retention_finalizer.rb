# A finalizer proc: what only the proc holds is retained from the
# finalizer table, named by the class of the object the finalizer is for.
require_relative "helper"

class TestRetentionFinalizer < Minitest::Test
  class Resource; end

  LINE = __LINE__ + 2
  def fill(resource)
    held = Array.new(3) { |i| "held by a finalizer #{i}" }
    ObjectSpace.define_finalizer(resource, proc { held.size })
    nil
  end

  def test_finalizer_root
    resource = Resource.new
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill(resource) }
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], LINE, Array)[0]
    refute_nil s
    path = s.retention_path
    assert_equal :finalizer, path[0][:kind], labels(path)
    assert_equal "TestRetentionFinalizer::Resource", path[0][:name]
    assert path.any? { |h| h[:class] == "Proc" }, labels(path)
    assert_path_in_heap(path)
  ensure
    ObjectSpace.undefine_finalizer(resource) if resource
  end
end
