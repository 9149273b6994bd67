# Before the OOM killer, for a process moved into its cgroup after it
# started (as a supervisor may do): the watcher notices the move (it reads
# /proc/self/cgroup again every few polls) and watches the new cgroup.
# Otherwise as test_oom_cgroup_kill.rb: killed by the OOM killer in a
# 300 MiB cgroup, it leaves one whole profile naming the leaking site
# first.  Needs root and a memory cgroup (skips, saying why).
require_relative "helper"
require_relative "oom_helper"

class TestOomCgroupMoved < Minitest::Test
  include PprofHelper
  include OomHelper

  WAIT_FOR_MOVE = <<~'RUBY'
    $stdout.sync = true
    puts :ready
    sleep 0.1 until $stdin.gets == "moved\n"
    sleep 1.5                              # (the watcher looks again within a second)
  RUBY

  def test_profile_written_after_a_move_before_the_oom_kill
    cw = nil
    run_leak_in_cgroup do |cgroup, dir, env|
      r, w = IO.pipe
      cr, cw = IO.pipe
      pid = spawn(env, RUBY, "-e", WAIT_FOR_MOVE + PRELUDE + LEAK, in: cr, out: w, err: File.join(dir, "stderr"))
      w.close
      cr.close
      assert_equal "ready\n", r.gets
      File.write("#{cgroup}/cgroup.procs", pid.to_s)      # the move
      cw.puts "moved"
      cw.flush
      pid
    end
  ensure
    cw&.close
  end
end
