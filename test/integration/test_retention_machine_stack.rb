# An object only a C local holds (on the machine stack, while the C
# function yields): its path starts at the :machine_stack root, which
# ObjectSpace.reachable_objects_from_root reports as machine_context.
require_relative "helper"

class TestRetentionMachineStack < Minitest::Test
  def test_c_local
    $LOAD_PATH.unshift(build_test_ext("cstack"))
    require "cstack"
    path = nil
    line = __LINE__ + 2
    Sampler.start(interval: 1, mode: :fixed)
    CStack.hold do
      Sampler.stop
      s = samples_at(Sampler.retention[:samples], line, Array)[0]
      refute_nil s
      path = s.retention_path
      assert_equal [:machine_stack], path.map { |h| h[:kind] }, labels(path)
      assert_equal "Array", path[0][:class]
      assert_path_in_heap(path)
      # (held by a C frame below this block: still there when asked again)
      # (an identity Hash: its keys are new Strings)
      roots = ObjectSpace.reachable_objects_from_root.select { |k, _| k == "machine_context" }.values.flatten(1)
      assert roots.any? { |r| r.equal?(path[0][:object]) }, "the C local is among the machine_context roots"
    end
  end
end
