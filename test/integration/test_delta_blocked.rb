# every='s files are written on time while every Ruby thread of the
# program is blocked (in sleep, Queue#pop, an IO read, Thread#join, a
# ConditionVariable, a child process), and the writer does not cut any of
# those short: each wait lasts as long as the program asked.  The writer
# is a native thread; a build needs a Ruby thread's interrupt check, so
# when none runs it wakes the main thread as a signal would.
require_relative "helper"
require "tmpdir"

class TestDeltaBlocked < Minitest::Test
  WAIT = 2.5   # seconds each wait lasts: two files are due meanwhile

  def test_files_while_blocked
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        def files = Dir[#{dir.dump} + "/alloc-\#{Process.pid}-*.pb.gz"].size
        def clock = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        W = #{WAIT}
        waits = {
          sleep: -> { sleep W },
          queue: -> { q = Queue.new; Thread.new { sleep W; q << 1 }; q.pop },
          read: -> { r, w = IO.pipe; Thread.new { sleep W; w.write "x" }; r.read(1) },
          join: -> { Thread.new { sleep W }.join },
          condvar: -> { m = Mutex.new; cv = ConditionVariable.new; Thread.new { sleep W; m.synchronize { cv.signal } }; m.synchronize { cv.wait(m) } },
          system: -> { system("sleep", W.to_s) },
        }
        waits.each do |name, wait|
          before = files
          t = clock
          wait.call
          puts [name, clock - t, files - before].join(" ")
        end
      RUBY
      out, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "every=1s,out=#{dir}/alloc-%p-%n.pb.gz" })
      assert status.success?, err
      assert_empty err
      lines = out.lines.map(&:split)
      assert_equal %w[sleep queue read join condvar system], lines.map(&:first)
      lines.each do |name, seconds, written|
        assert_operator Float(seconds), :>=, WAIT, "#{name} was cut short"
        assert_operator Integer(written), :>=, 2, "#{name}: files written while it waited (#{out})"
      end
    end
  end
end
