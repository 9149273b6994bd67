# Before the OOM killer, for real: a child Ruby in a memory cgroup of its
# own (300 MiB, swap none) leaks through one known site until the
# kernel's OOM killer kills it (SIGKILL; the cgroup counts the kill).
# With RUBY_GC_SAMPLING="limit=auto,out=..." the profile written at the
# crossing of 90% is there after the kill, is a whole pprof file (go
# tool pprof reads it), is the only one (one file a crossing, no
# temporary file left), and `go tool pprof -top -sample_index=inuse_space`
# names the leaking site first.  The leak is paced (1 MiB every 8 ms,
# about 125 MiB/s: the 30 MiB above the threshold last some 240 ms, far
# more than the 10 ms poll and the build and write measured in
# docs/oom.md).
#
# Needs root and a memory cgroup (v1's /sys/fs/cgroup/memory, or a
# cgroup2 with the memory controller); the test creates and removes its
# own cgroup, and skips, saying why, where it cannot.
require_relative "helper"

class TestOomCgroupKill < Minitest::Test
  include PprofHelper

  LIMIT = 300 * 1024 * 1024

  LEAK = <<~'RUBY'
    HALF = ("x" * 524_288).freeze
    def leak_here = "#{HALF}#{HALF}"      # one MiB a call, malloc'd, kept below
    def pace = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    $keep = []
    loop do
      $keep << leak_here
      t = pace
      nil while pace - t < 0.008
    end
  RUBY

  # [dir, kind] of a new memory cgroup limited to LIMIT, or skip.
  def make_cgroup
    skip "needs root to create a memory cgroup (uid #{Process.uid})" unless Process.uid.zero?
    name = "sampling-oom-test-#{$$}"
    if File.exist?("/sys/fs/cgroup/memory/memory.limit_in_bytes")
      dir = "/sys/fs/cgroup/memory/#{name}"
      Dir.mkdir(dir)
      File.write("#{dir}/memory.limit_in_bytes", LIMIT.to_s)
      File.write("#{dir}/memory.memsw.limit_in_bytes", LIMIT.to_s) if File.exist?("#{dir}/memory.memsw.limit_in_bytes")
      File.write("#{dir}/memory.swappiness", "0") if File.exist?("#{dir}/memory.swappiness")
      [dir, :v1]
    elsif File.exist?("/sys/fs/cgroup/cgroup.controllers") &&
          File.read("/sys/fs/cgroup/cgroup.controllers").split.include?("memory")
      begin
        File.write("/sys/fs/cgroup/cgroup.subtree_control", "+memory")
      rescue SystemCallError => e
        skip "cannot enable the cgroup2 memory controller for children: #{e.message}"
      end
      dir = "/sys/fs/cgroup/#{name}"
      Dir.mkdir(dir)
      File.write("#{dir}/memory.max", LIMIT.to_s)
      File.write("#{dir}/memory.swap.max", "0") if File.exist?("#{dir}/memory.swap.max")
      [dir, :v2]
    else
      skip "no memory cgroup file system here (neither /sys/fs/cgroup/memory nor a cgroup2 with memory)"
    end
  rescue SystemCallError => e
    Dir.rmdir(dir) if dir && File.directory?(dir)
    skip "cannot create a memory cgroup: #{e.message}"
  end

  def oom_kills(dir, kind)
    file = kind == :v1 ? "#{dir}/memory.oom_control" : "#{dir}/memory.events"
    File.read(file)[/^oom_kill (\d+)/, 1].to_i
  end

  def test_profile_written_before_the_oom_kill
    cgroup, kind = make_cgroup
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY,
              "RUBY_GC_SAMPLING" => "limit=auto,out=#{dir}/heap-%p-%n.pb.gz" }
      # the child joins the cgroup before Ruby starts
      pid = spawn(env, "/bin/sh", "-c", "echo $$ > #{cgroup}/cgroup.procs && exec \"$0\" -e \"$1\"", RUBY, LEAK,
                  err: File.join(dir, "stderr"))
      _, status = Process.wait2(pid)
      stderr = File.read(File.join(dir, "stderr"))
      assert status.signaled?, "killed by a signal (#{status.inspect}); stderr: #{stderr}"
      assert_equal Signal.list["KILL"], status.termsig
      assert_equal 1, oom_kills(cgroup, kind), "the kernel's OOM killer killed it"

      files = Dir.children(dir) - ["stderr"]
      assert_equal ["heap-#{pid}-1.pb.gz"], files, "one profile, whole (no temporary file); stderr: #{stderr}"
      path = File.join(dir, files[0])
      top = pprof("-top", "-sample_index=inuse_space", path)
      first = top.lines.drop_while { |l| !l.match?(/^\s+flat\s+flat%/) }[1]
      assert_match(/Object#leak_here\s*$/, first, top)
      comments = pprof("-comments", path)
      assert_match(/before the limit: working set \d+ bytes of #{LIMIT} \(\d+%, limit_at=0\.9\) in #{Regexp.escape(cgroup)}/,
                   comments)
    end
  ensure
    if cgroup && File.directory?(cgroup)
      # (the child is dead: the cgroup is empty)
      5.times do
        Dir.rmdir(cgroup)
        break
      rescue Errno::EBUSY
        sleep 0.2
      end
    end
  end
end
