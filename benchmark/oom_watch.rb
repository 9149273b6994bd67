# benchmark/oom_watch.rb: what limit= costs and how soon its file is on
# disk (docs/oom.md).  Needs root and cgroup v1's memory controller.
#
#   build/ruby/bin/ruby benchmark/oom_watch.rb [RUNS]
#
# 1. The watcher's CPU: a Ruby that sleeps 15 s with limit=auto (in a
#    300 MiB cgroup), with limit=1g (RSS) and with no watcher; the
#    process's CPU time from /proc/PID/task/*/schedstat (every thread),
#    as a share of one core.
# 2. Crossing to file: RUNS children leak 1 MiB strings in a 300 MiB
#    cgroup until the OOM killer kills them, paced (8 ms a MiB) and
#    unpaced; the time from the crossing (the profile's comment, "seen
#    at") to the moment the file appeared under its name (this process
#    polls the directory every 0.5 ms).
require "tmpdir"

RUBY = RbConfig.ruby
LIB = ENV.fetch("RUBY_GC_LIBRARY", "sampling")
CG = "/sys/fs/cgroup/memory/oom-watch-bench-#{$$}"
abort "needs root and /sys/fs/cgroup/memory" unless Process.uid.zero? && File.directory?("/sys/fs/cgroup/memory")

def in_cgroup(env, code, **opts)
  spawn(env, "/bin/sh", "-c", "echo $$ > #{CG}/cgroup.procs && exec \"$0\" -e \"$1\"", RUBY, code, **opts)
end

Dir.mkdir(CG)
File.write("#{CG}/memory.limit_in_bytes", (300 << 20).to_s)
begin
  puts "| watcher | CPU, share of one core over 15 s |", "|---|---|"
  [["limit=auto", true], ["limit=1g", false], [nil, false]].each do |setting, cgroup|
    env = { "RUBY_GC_LIBRARY" => LIB, "RUBY_GC_SAMPLING" => setting ? "#{setting},out=#{Dir.tmpdir}/oom-watch-%p.pb.gz" : "interval=512k" }
    pid = cgroup ? in_cgroup(env, "sleep 20") : spawn(env, RUBY, "-e", "sleep 20")
    sleep 2
    cpu = -> { Dir["/proc/#{pid}/task/*/schedstat"].sum { |f| File.read(f).split[0].to_i } }
    t0 = cpu.()
    sleep 15
    t1 = cpu.()
    puts format("| %s | %.3f%% |", setting || "none", (t1 - t0) / 1e9 / 15 * 100)
    Process.kill(:KILL, pid)
    Process.wait(pid)
  end

  puts "", "| leak | crossing seen to file (ms), each run |", "|---|---|"
  [["paced, 8 ms a MiB", 0.008], ["unpaced", 0]].each do |name, pace|
    times = Integer(ARGV[0] || 5).times.map do
      Dir.mktmpdir do |dir|
        leak = "HALF = ('x' * 524_288).freeze; def leak_here = \"\#{HALF}\#{HALF}\"; $k = []; " \
               "loop { $k << leak_here; t = Process.clock_gettime(Process::CLOCK_MONOTONIC); " \
               "nil while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < #{pace} }"
        env = { "RUBY_GC_LIBRARY" => LIB, "RUBY_GC_SAMPLING" => "limit=auto,out=#{dir}/heap-%n.pb.gz" }
        file = "#{dir}/heap-1.pb.gz"
        appeared = nil
        done = false
        watcher = Thread.new do
          sleep 0.0005 until File.exist?(file) || done
          appeared = Process.clock_gettime(Process::CLOCK_REALTIME)
        end
        Process.wait(in_cgroup(env, leak))
        done = true
        watcher.join
        seen = `go tool pprof -comments #{file} 2>&1`[/seen at (\d+\.\d+)/, 1]
        seen ? format("%.1f", (appeared - seen.to_f) * 1000) : "no file"
      end
    end
    puts "| #{name} | #{times.join(", ")} |"
  end
ensure
  sleep 0.5
  Dir.rmdir(CG)
end
