# runner.rb: runs one workload under one profiler and appends its metrics.
#
#   ruby runner.rb WORKLOAD.rb [ARGS...]
#
# The GC library is chosen by the caller (RUBY_GC_LIBRARY); the profiler by
# BENCH_PROFILER:
#
#   none                          nothing started
#   sampler:INTERVAL:MODE[:DEPTH] ObjectSpace::AllocationSampler.start (seed 1;
#                                 BENCH_MALLOC=0|1: malloc: false|true)
#   newobj:INTERVAL:MODE[:DEPTH]  the NEWOBJ-hook peer (benchmark/newobj_sampler)
#   trace_object_allocations      ObjectSpace.trace_object_allocations_start
#   memory_profiler               MemoryProfiler.report { workload }
#
# The workload is `load`ed inside CallgrindProbe.collect, so under
# `valgrind --tool=callgrind --collect-atstart=no` only the workload (and
# the profiler's work while it runs, report included) is counted, not
# Ruby's boot.  The profiler is started before and stopped after that
# region.  Metrics (one JSON line) go to the file BENCH_METRICS, if set:
# region seconds, GC.stat time/count, samples, peak RSS (VmHWM).
#
#   BENCH_EXT_DIR      where the extensions were built (build/bench/ext)
#   BENCH_MEMPROF_LIB  lib dir of the unpacked memory_profiler
#   BENCH_WRAP         labels: run the region inside
#                      AllocationSampler.with_labels(endpoint: "bench");
#                      tap: inside Object#tap (the same two frames, no
#                      labels), the baseline to compare labels with;
#                      labels-thread, tap-thread: the same, with the region
#                      in a thread started inside (labels inherited);
#                      labels-big: labels, with 10 more keys in the
#                      Fiber storage (a Hash past 8 keys: an st_table)
#   BENCH_KEEP_LIVE    keep this many sampled objects alive, then run
#                      BENCH_GC_LOOPS minor GCs as the region (liveness cost)
#   BENCH_KEEP_SAMPLING=1  the sampler keeps running through those GCs
#                      (the timeline's row and peak check at every GC)
#   BENCH_GROW=1       with it: one more object kept before each GC, so
#                      every GC finds a new peak (the peak's copy)
#   BENCH_DROP_LIVE=1  instead drop the kept objects and count the one
#                      full GC that finds them dead (the cost of a death)

ext_dir = ENV.fetch("BENCH_EXT_DIR")
$LOAD_PATH.unshift(File.join(ext_dir, "callgrind_probe"), File.join(ext_dir, "newobj_sampler"))
require "callgrind_probe"

kind, *args = ENV.fetch("BENCH_PROFILER", "none").split(":")
workload = ARGV.shift or abort "usage: runner.rb WORKLOAD.rb [ARGS...]"
workload = File.expand_path(workload)

samples = -> { nil }
stop = -> {}
memprof = false

case kind
when "none"
when "sampler"
  sampler = ObjectSpace::AllocationSampler
  opts = { interval: Integer(args[0]), mode: args[1].to_sym, seed: 1 }
  opts[:depth] = Integer(args[2]) if args[2]
  opts[:max_samples] = Integer(ENV["BENCH_MAX_SAMPLES"]) if ENV["BENCH_MAX_SAMPLES"]
  opts[:malloc] = ENV["BENCH_MALLOC"] == "1" if ENV["BENCH_MALLOC"]   # else the library's default
  start = -> { sampler.start(**opts) }
  stop = -> { sampler.stop }
  samples = -> { sampler.stats[:samples] }
when "newobj"
  require "newobj_sampler"
  opts = { interval: Integer(args[0]), mode: args[1].to_sym, seed: 1 }
  opts[:depth] = Integer(args[2]) if args[2]
  start = -> { NewobjSampler.start(**opts) }
  stop = -> { NewobjSampler.stop }
  samples = -> { NewobjSampler.stats[:samples] }
when "trace_object_allocations"
  require "objspace"
  start = -> { ObjectSpace.trace_object_allocations_start }
  stop = -> { ObjectSpace.trace_object_allocations_stop }
when "memory_profiler"
  $LOAD_PATH.unshift(ENV.fetch("BENCH_MEMPROF_LIB"))
  require "memory_profiler"
  memprof = true
  samples = -> { $memprof_report.total_allocated }
else
  abort "runner.rb: unknown BENCH_PROFILER #{kind.inspect}"
end

if (keep = ENV["BENCH_KEEP_LIVE"])
  # Liveness cost: hold `keep` objects alive (sampled ones when the sampler
  # runs), then count only the minor GCs.
  start&.call
  $kept = Array.new(Integer(keep)) { Object.new }
  stop.call unless ENV["BENCH_KEEP_SAMPLING"] == "1"
  GC.start
  loops = Integer(ENV.fetch("BENCH_GC_LOOPS", "20"))
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  if ENV["BENCH_DROP_LIVE"] == "1"
    $kept = nil
    CallgrindProbe.collect { GC.start }
  elsif ENV["BENCH_GROW"] == "1"
    CallgrindProbe.collect { loops.times { $kept << Object.new; GC.start(full_mark: false) } }
  else
    CallgrindProbe.collect { loops.times { GC.start(full_mark: false) } }
  end
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  stop.call
else
  start&.call if defined?(start)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  # as few frames as possible between <main> and the workload (5), so that
  # alloc_micro.rb can run at a stack depth of 8
  if memprof
    CallgrindProbe.collect { $memprof_report = MemoryProfiler.report { load workload } }
  elsif ENV["BENCH_WRAP"] == "labels"
    ObjectSpace::AllocationSampler.with_labels(endpoint: "bench") { CallgrindProbe.collect { load workload } }
  elsif ENV["BENCH_WRAP"] == "labels-big"
    10.times { |i| Fiber[:"bench_key#{i}"] = i }
    ObjectSpace::AllocationSampler.with_labels(endpoint: "bench") { CallgrindProbe.collect { load workload } }
  elsif ENV["BENCH_WRAP"] == "tap"
    tap { CallgrindProbe.collect { load workload } }
  elsif ENV["BENCH_WRAP"] == "labels-thread"
    ObjectSpace::AllocationSampler.with_labels(endpoint: "bench") do
      Thread.new { CallgrindProbe.collect { load workload } }.join
    end
  elsif ENV["BENCH_WRAP"] == "tap-thread"
    tap { Thread.new { CallgrindProbe.collect { load workload } }.join }
  else
    CallgrindProbe.collect { load workload }
  end
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  stop.call
end

if (path = ENV["BENCH_METRICS"])
  hwm = File.read("/proc/self/status")[/VmHWM:\s*(\d+)/, 1].to_i
  n = samples.call
  stat = GC.stat
  line = {
    seconds: t1 - t0, gc_time_ms: stat[:time], gc_count: stat[:count],
    minor_gc: stat[:minor_gc_count], major_gc: stat[:major_gc_count],
    samples: n, samples_per_s: n && n / (t1 - t0), maxrss_kb: hwm,
    allocated_objects: stat[:total_allocated_objects],
  }
  # YJIT's code size: a YJIT run whose loop stayed in the interpreter shows here
  if defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
    line[:yjit_code_bytes] = RubyVM::YJIT.runtime_stats[:inline_code_size]
  end
  if kind == "sampler"
    st = ObjectSpace::AllocationSampler.stats
    line[:sampler_live] = st[:live]; line[:sampler_dropped] = st[:dropped]
    line[:sampler_allocated_bytes] = st[:allocated_bytes]
    # the stack depth the samples saw (the deepest of the last few)
    line[:frames] = ObjectSpace::AllocationSampler.samples.last(100).map { |x| x.frames.size }.max
  end
  require "json"
  File.open(path, "a") { |f| f.puts(JSON.generate(line)) }
end
