# Before the OOM killer, for real: a child Ruby in a memory cgroup of its
# own (300 MiB, swap none) leaks through one known site until the
# kernel's OOM killer kills it (SIGKILL; the cgroup counts the kill).
# With RUBY_GC_SAMPLING="limit=auto,out=..." the profile written at the
# crossing of 90% is there after the kill, is a whole pprof file (go
# tool pprof reads it), is the only one (one file a crossing, no
# temporary file left), and `go tool pprof -top -sample_index=inuse_space`
# names the leaking site first (oom_helper.rb: the leak is paced).
#
# Needs root and a memory cgroup (v1's /sys/fs/cgroup/memory, or a
# cgroup2 with the memory controller); the test creates and removes its
# own cgroup, and skips, saying why, where it cannot.
require_relative "helper"
require_relative "oom_helper"

class TestOomCgroupKill < Minitest::Test
  include PprofHelper
  include OomHelper

  def test_profile_written_before_the_oom_kill
    run_leak_in_cgroup do |cgroup, dir, env|
      # the child joins the cgroup before Ruby starts
      spawn(env, "/bin/sh", "-c", "echo $$ > #{cgroup}/cgroup.procs && exec \"$0\" -e \"$1\"", RUBY, PRELUDE + LEAK,
            err: File.join(dir, "stderr"))
    end
  end
end
