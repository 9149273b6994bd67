# every='s writer changes nothing the program sees of its own threads:
# Thread.list holds the main thread only (so joining every other thread
# returns), and a deadlock still ends at once with "No live threads left.
# Deadlock?" (a writer that was a Ruby thread sleeping with a timeout made
# `Queue.new.pop` hang forever).  The last delta is written at that exit
# too.  (The timeout only bounds a hang: a hang is the failure.)
require_relative "helper"
require "tmpdir"

class TestDeltaWriterHidden < Minitest::Test
  HANG = 20   # seconds: a deadlock that has not ended by then never will

  # [stdout, stderr, status], or flunks if the program has not ended in HANG seconds
  def run_bounded(code, env)
    env = { "RUBY_GC_LIBRARY" => GC_LIBRARY }.merge(env)
    Open3.popen3(env, RUBY, "-e", code) do |stdin, out, err, waiter|
      stdin.close
      readers = [Thread.new { out.read }, Thread.new { err.read }]
      unless waiter.join(HANG)
        Process.kill("KILL", waiter.pid)
        waiter.join
        flunk "still running after #{HANG} s (#{code.inspect}): the writer kept the program alive"
      end
      [readers[0].value, readers[1].value, waiter.value]
    end
  end

  def test_thread_list_and_deadlock
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_SAMPLING" => "every=1s,out=#{dir}/alloc-%p-%n.pb.gz" }
      code = <<~RUBY
        p Thread.list.size
        Thread.list.each { _1.join unless _1 == Thread.current }
        $kept = Array.new(1000) { "x" * 100 }
        puts "joined"
        $stdout.flush
        Queue.new.pop
      RUBY
      out, err, status = run_bounded(code, env)
      assert_equal "1\njoined\n", out
      refute status.success?
      assert_match(/No live threads left\. Deadlock\?/, err)
      files = Dir[File.join(dir, "alloc-*.pb.gz")]
      assert_equal 1, files.size, files.inspect     # the last one, at that exit
      refute_empty pprof_samples(files[0])
    end
  end
end
