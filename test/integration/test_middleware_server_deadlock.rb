# The loopback profile server (allocation_sampler/server.rb) does not
# change how the program's deadlocks end: with it running, Queue#pop with
# no other thread, and two threads locking two Mutexes crosswise, still
# die with CRuby's "No live threads left. Deadlock?"; and joining every
# other thread (Thread.list.each(&:join)) returns, the server ending.
# A program that hangs fails the test after HANG_SECONDS (it is killed).
require_relative "helper"

class TestMiddlewareServerDeadlock < Minitest::Test
  HANG_SECONDS = 60

  PRELUDE = <<~RUBY
    require "allocation_sampler/server"
    ObjectSpace::AllocationSampler.start
    server = ObjectSpace::AllocationSampler::Server.start(port: 0)
    $stderr.puts "listening"
    sleep 0.5
  RUBY

  CASES = {
    queue: "Queue.new.pop",
    mutexes: <<~RUBY,
      a, b = Mutex.new, Mutex.new
      ready = Queue.new
      t = Thread.new { b.synchronize { ready << 1; a.lock } }
      a.synchronize { ready.pop; b.lock }
    RUBY
    join: 'Thread.list.each { |t| t.join unless t == Thread.current }; $stderr.puts "joined #{Thread.list.size}"',
  }.freeze

  def run_child(code)
    env = { "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }
    Open3.popen3(env, SamplingTestHelper::RUBY, "-e", PRELUDE + code) do |stdin, out, err, waiter|
      stdin.close
      unless waiter.join(HANG_SECONDS)
        Process.kill("KILL", waiter.pid)
        flunk "the program hung (#{HANG_SECONDS} s) instead of ending: #{err.read}"
      end
      [err.read, waiter.value]
    end
  end

  def test_deadlocks_still_end_the_program
    %i[queue mutexes].each do |name|
      err, status = run_child(CASES[name])
      assert_match(/\Alistening\n/, err, name)
      assert_match(/No live threads left\. Deadlock\? \(fatal\)/, err, name)
      refute status.success?, name
    end
    err, status = run_child(CASES[:join])
    assert_match(/^joined 1$/, err)
    assert status.success?, err
  end
end
