# A thread-local (Thread#thread_variable_set) and a fiber-local
# (Thread#[]) value: both paths run through the Thread, edge by edge in
# the heap.
require_relative "helper"

class TestRetentionLocals < Minitest::Test
  LINE = __LINE__ + 2
  def fill(thread)
    thread.thread_variable_set(:tv, Array.new(3) { |i| "thread local #{i}" })
    thread[:fl] = Array.new(3) { |i| "fiber local #{i}" }
    nil
  end

  def check(line, thread)
    s = samples_at(Sampler.retention[:samples], line, String)[1]
    refute_nil s, "a sample at line #{line}"
    path = s.retention_path
    # (4.1 marks a Ractor's threads' locals as roots of the Ractor, not
    # through the Thread objects: the path starts at that VM root)
    through = path.any? { |h| h[:object].equal?(thread) } || (RUBY_VERSION >= "4.1" && path.first[:kind] == :vm)
    assert through, "through the Thread: #{labels(path)}"
    assert_equal :index, path.last[:kind]
    assert_path_in_heap(path)
  end

  def test_thread_and_fiber_locals
    q = Queue.new
    t = Thread.new { q.pop }
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill(t) }
    Sampler.stop
    check(LINE, t)
    check(LINE + 1, t)
  ensure
    q << 1
    t&.join
  end
end
