# A closure capturing a local: the path goes through the Proc and its
# captured environment and names the local variable.
require_relative "helper"

class TestRetentionClosure < Minitest::Test
  LINE = __LINE__ + 2
  def make_closure
    captured = Array.new(5) { |i| "captured #{i}" }
    -> { captured.size }
  end

  def test_closure_local
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { $retention_closure = make_closure }
    Sampler.stop
    s = samples_at(Sampler.retention[:samples], LINE, Array)[0]
    refute_nil s
    path = s.retention_path
    assert_equal "$retention_closure", path[0][:name], labels(path)
    assert_equal "Proc", path[0][:class]
    local = path.last
    assert_equal :local, local[:kind], labels(path)
    assert_equal "captured", local[:name]
    assert_equal "(imemo env)", path[-2][:class]
    assert_path_in_heap(path)
  end
end
