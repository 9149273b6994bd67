# With threads running and allocating, a retention walk pauses them (it
# holds the GVL and the VM lock), finds their objects' paths through
# their Thread, and they go on after.
require_relative "helper"

class TestRetentionThreads < Minitest::Test
  LINE = __LINE__ + 5
  def test_with_threads
    Sampler.start(interval: 64, mode: :fixed)
    stop = false
    threads = Array.new(4) do |n|
      Thread.new do
        mine = Array.new(50) { |i| "thread #{n} item #{i}" }
        junk = 0
        until stop
          junk += Array.new(10) { "x" * 20 }.size
          Thread.pass
        end
        mine.size + junk
      end
    end
    sleep 0.2
    5.times do
      r = Sampler.retention
      ours = samples_at(r[:samples], LINE, String)
      next if ours.empty?
      path = ours[0].retention_path
      assert path.any? { |h| h[:class] == "Thread" }, labels(path)
    end
    stop = true
    assert threads.map(&:value).all? { |v| v >= 50 }
    GC.verify_internal_consistency
  ensure
    stop = true
    threads&.each(&:join)
  end
end
