# harness.rb: our stand-in for ruby-bench's harness/harness.rb.
#
# Every ruby-bench benchmark starts with
# `require_relative "../harness/loader"`, and the loader does
# `require "harness"`: with this directory first on the load path (-I),
# that is this file.  It defines what the gem-free benchmarks call
# (run_benchmark, make_shareable) and nothing else: no Bundler, no CSV,
# no RSS sampling between iterations, no YJIT stats.
#
# run_benchmark(hint) { ... } runs the block RB_WARMUP_ITRS times
# untimed, then RB_BENCH_ITRS times, each timed alone on the monotonic
# clock, and writes one JSON object to the file RB_RESULT (stdout when
# unset): the timed iterations' seconds, and over the timed part only,
# GC.stat's counters and, when the sampler runs, its stats (samples,
# malloc_samples, slot and malloc bytes), so a report can tell a
# slot-heavy program from a malloc-heavy one.  The hint (ruby-bench's
# iteration count for its own harness) is recorded and otherwise unused:
# the driver chooses the counts.

Random.srand(1337)   # as ruby-bench's harness-common.rb: the same work each run

if defined?(Ractor.make_shareable)
  def make_shareable(obj, copy: false)
    Ractor.make_shareable(obj, copy: copy)   # as ruby-bench does, so the data are the same (frozen)
  end
else
  def make_shareable(obj, copy: false)
    obj
  end
end

module RubyBenchHarness
  GC_KEYS = %i[count minor_gc_count major_gc_count time total_allocated_objects].freeze
  SAMPLER_KEYS = %i[samples malloc_samples allocated_bytes malloc_allocated_bytes].freeze

  module_function

  def now
    Process.clock_gettime(Process::CLOCK_MONOTONIC)
  end

  def sampler
    defined?(ObjectSpace::AllocationSampler) ? ObjectSpace::AllocationSampler : nil
  end

  # minor page faults (field 10 of /proc/self/stat): a malloc-heavy
  # program's kernel time is mostly these
  def minflt
    File.read("/proc/self/stat").split(") ", 2).last.split[7].to_i
  rescue StandardError
    0
  end

  def snapshot
    gc = GC.stat
    snap = GC_KEYS.to_h { |k| [k, gc[k] || 0] }
    cpu = Process.times
    snap.merge!(cpu_user: cpu.utime, cpu_sys: cpu.stime, minflt: minflt)
    if (s = sampler) && s.enabled?
      st = s.stats
      SAMPLER_KEYS.each { |k| snap[k] = st[k] || 0 }
    end
    snap
  end

  def delta(before, after)
    after.to_h { |k, v| [k, v - before.fetch(k, 0)] }
  end

  def gc_implementation
    (GC.respond_to?(:config) && GC.config[:implementation]) || "builtin"
  rescue StandardError
    "unknown"
  end

  def result(hint, warmup, times, before, after)
    yjit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled? ? true : false
    hwm = File.read("/proc/self/status")[/VmHWM:\s*(\d+)/, 1].to_i rescue 0
    {
      ruby: RUBY_DESCRIPTION, yjit: yjit, gc_library: ENV["RUBY_GC_LIBRARY"],
      gc_implementation: gc_implementation,
      sampler_enabled: !!(sampler&.enabled?),
      hint: hint, warmup: warmup, times: times, seconds: times.sum,
      delta: delta(before, after), maxrss_kb: hwm,
    }
  end

  def write(result)
    require "json"
    line = JSON.generate(result)
    if (path = ENV["RB_RESULT"])
      File.write(path, line + "\n")
    else
      puts line
    end
  end
end

def run_benchmark(hint, **)
  warmup = Integer(ENV.fetch("RB_WARMUP_ITRS", "2"))
  itrs = Integer(ENV.fetch("RB_BENCH_ITRS", "5"))
  warmup.times { yield }
  times = []
  before = RubyBenchHarness.snapshot
  itrs.times do
    t0 = RubyBenchHarness.now
    yield
    times << RubyBenchHarness.now - t0
  end
  after = RubyBenchHarness.snapshot
  RubyBenchHarness.write(RubyBenchHarness.result(hint, warmup, times, before, after))
end
