# What the oom_ tests share (docs/oom.md): a leak a child Ruby runs, a
# memory cgroup of the test's own (created and removed; skip, saying why,
# where it cannot be), and the check of a profile written before a kill.
module OomHelper
  LIMIT = 300 * 1024 * 1024

  # The child's first lines: HALF (half a MiB), and wait_for(glob), which
  # returns once a file matches or 20 s passed (the child waits for the
  # watcher's file so that no timing decides).
  PRELUDE = <<~'RUBY'
    HALF = ("x" * 524_288).freeze
    def wait_for(glob)
      t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      sleep 0.01 until Dir.glob(glob).any? || Process.clock_gettime(Process::CLOCK_MONOTONIC) - t > 20
    end
  RUBY

  # One MiB a call through Object#leak_here (malloc'd, kept), paced at
  # 8 ms a MiB (about 125 MiB/s: the 30 MiB above 90% of the limit last
  # some 240 ms, far more than a poll and the build and write measured in
  # docs/oom.md).
  LEAK = <<~'RUBY'
    def leak_here = "#{HALF}#{HALF}"
    def pace = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    $keep = []
    loop do
      $keep << leak_here
      t = pace
      nil while pace - t < 0.008
    end
  RUBY

  # [dir, kind] of a new memory cgroup limited to limit (swap none; nil:
  # no limit of its own), or skip.
  def make_cgroup(limit: LIMIT)
    skip "needs root to create a memory cgroup (uid #{Process.uid})" unless Process.uid.zero?
    name = "sampling-oom-test-#{$$}"
    if File.exist?("/sys/fs/cgroup/memory/memory.limit_in_bytes")
      dir = "/sys/fs/cgroup/memory/#{name}"
      Dir.mkdir(dir)
      if limit
        File.write("#{dir}/memory.limit_in_bytes", limit.to_s)
        File.write("#{dir}/memory.memsw.limit_in_bytes", limit.to_s) if File.exist?("#{dir}/memory.memsw.limit_in_bytes")
      end
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
      File.write("#{dir}/memory.max", limit.to_s) if limit
      File.write("#{dir}/memory.swap.max", "0") if File.exist?("#{dir}/memory.swap.max")
      [dir, :v2]
    else
      skip "no memory cgroup file system here (neither /sys/fs/cgroup/memory nor a cgroup2 with memory)"
    end
  rescue SystemCallError => e
    Dir.rmdir(dir) if dir && File.directory?(dir)
    skip "cannot create a memory cgroup: #{e.message}"
  end

  # Runs code (with the PRELUDE) in a child inside cgroup under
  # RUBY_GC_SAMPLING=setting; [stdout, stderr, status].
  def run_in_cgroup(cgroup, setting, code)
    Open3.capture3({ "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => setting },
                   "/bin/sh", "-c", "echo $$ > #{cgroup}/cgroup.procs && exec \"$0\" -e \"$1\"",
                   SamplingTestHelper::RUBY, PRELUDE + code)
  end

  # (the child is dead: the cgroup is empty, or soon)
  def remove_cgroup(dir)
    return unless dir && File.directory?(dir)

    5.times do
      Dir.rmdir(dir)
      break
    rescue Errno::EBUSY
      sleep 0.2
    end
  end

  def oom_kills(dir, kind)
    File.read(kind == :v1 ? "#{dir}/memory.oom_control" : "#{dir}/memory.events")[/^oom_kill (\d+)/, 1].to_i
  end

  # A new cgroup, a directory and the child's environment (limit=auto,
  # out=DIR/heap-%p-%n.pb.gz) for the block, which spawns the child and
  # returns its pid; then the child's end and its profile are checked.
  def run_leak_in_cgroup
    cgroup, kind = make_cgroup
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => "limit=auto,out=#{dir}/heap-%p-%n.pb.gz" }
      pid = yield(cgroup, dir, env)
      _, status = Process.wait2(pid)
      assert_profile_before_kill(dir, pid, status, cgroup, kind)
    end
  ensure
    remove_cgroup(cgroup)
  end

  # The child was killed by the kernel's OOM killer and left one whole
  # profile, heap-PID-1.pb.gz, that names Object#leak_here first.
  def assert_profile_before_kill(dir, pid, status, cgroup, kind)
    stderr = File.read(File.join(dir, "stderr"))
    assert status.signaled?, "killed by a signal (#{status.inspect}); stderr: #{stderr}"
    assert_equal Signal.list["KILL"], status.termsig
    assert_equal 1, oom_kills(cgroup, kind), "the kernel's OOM killer killed it"
    assert_equal "", stderr, "no warning (a limit was found in time)"
    files = Dir.children(dir) - ["stderr"]
    assert_equal ["heap-#{pid}-1.pb.gz"], files, "one profile, whole (no temporary file); stderr: #{stderr}"
    path = File.join(dir, files[0])
    top = pprof("-top", "-sample_index=inuse_space", path)
    first = top.lines.drop_while { |l| !l.match?(/^\s+flat\s+flat%/) }[1]
    assert_match(/Object#leak_here\s*$/, first, top)
    assert_match(/before the limit: working set \d+ bytes of #{LIMIT} \(\d+%, limit_at=0\.9\) in #{Regexp.escape(cgroup)}/,
                 pprof("-comments", path))
  end
end
