# bench.rb: the overhead harness behind benchmark/run (see benchmark/README.md).
# This file holds the options, the configurations and the order of the
# phases; each phase is a file of its own (bench_instructions.rb: 1 and
# 1b, bench_wall.rb: 2 and 2b, bench_fastpath.rb: 3), and the report is
# computed (bench_data.rb) then rendered (bench_markdown.rb); plot.rb
# draws the figures.
#
# One session, every configuration side by side:
#
#   1. instructions (valgrind --tool=callgrind, only the workload region
#      counted, see runner.rb): the allocation micro-benchmark under every
#      configuration, per-sample cost at stack depths 8/64/128, the GC-time
#      cost of liveness tracking, binary_trees at reduced size;
#   1b. cycles (callgrind with --cache-sim=yes --branch-sim=yes): the
#      micro-benchmark under the built-in GC, default and every sampling
#      configuration, an estimate of cycles from the simulated misses, in
#      total and for the sampler's functions;
#   2. wall time (hyperfine, one run per configuration per round, the order
#      shuffled every round, so a noisy neighbour hits all configurations
#      alike), with GC time, GC count, peak RSS and samples/s from the
#      runs themselves;
#   2b. pairs: the micro-benchmark at ALLOC_MICRO_N=3,000,000, each
#      configuration run back to back with default, the pairs and the order
#      within each pair shuffled every round; the ratio of each pair, in
#      wall time and in the child's CPU time (user + system);
#   3. the fast path's machine code (objdump) in both GC libraries;
#   4. results.md, overhead-instructions.png, overhead-wall.png,
#      fastpath.md, machine.md, commands.md.
#
# --report-only measures nothing: it re-renders results.md and the plots
# from the JSON an earlier run left in the work dir (callgrind.json,
# wall.json).
#
# Ratios are to RUBY_GC_LIBRARY=default: the sampling library is the
# default GC plus the sampler, so that is the like-for-like baseline.
require "optparse"
require "json"
require "fileutils"
require "open3"
require "shellwords"
require "digest"
require "time"

HERE = File.expand_path(__dir__)
BENCH_DIR = File.dirname(HERE)

ALL_PHASES = %w[callgrind cycles wall pairs fastpath]
opts = { quick: false, report_only: false, phases: ALL_PHASES }
OptionParser.new do |o|
  o.banner = "usage: benchmark/run --ruby RUBY --ruby-src DIR --out DIR [--work DIR] [--quick] [--only PHASES | --report-only]"
  o.on("--ruby PATH") { |v| opts[:ruby] = File.expand_path(v) }
  o.on("--ruby-src DIR") { |v| opts[:src] = File.expand_path(v) }
  o.on("--out DIR") { |v| opts[:out] = File.expand_path(v) }
  o.on("--work DIR") { |v| opts[:work] = File.expand_path(v) }
  o.on("--memprof-lib DIR") { |v| opts[:memprof] = File.expand_path(v) }
  o.on("--quick") { opts[:quick] = true }
  o.on("--yjit", "run every workload with YJIT on (ruby --yjit)") { opts[:yjit] = true }
  o.on("--only LIST", "comma-separated: #{ALL_PHASES.join(",")}") do |v|
    opts[:phases] = v.split(",")
    bad = opts[:phases] - ALL_PHASES
    abort "bench.rb: unknown phase #{bad.join(", ")} (phases: #{ALL_PHASES.join(", ")})" unless bad.empty?
  end
  o.on("--jobs N", Integer, "parallel callgrind runs (default 2)") { |v| opts[:jobs] = v }
  o.on("--sampling-lib NAME", "measure librubygc.NAME.so as the sampling library") { |v| opts[:sampling_lib] = v }
  o.on("--pair-n N", Integer, "pairs: allocations a run (default 3,000,000; --quick 300,000)") { |v| opts[:pair_n] = v }
  o.on("--pair-rounds N", Integer, "pairs: rounds (default 21; --quick 5)") { |v| opts[:pair_rounds] = v }
  o.on("--pair-configs LIST", "pairs: which configurations against default (default builtin,stopped,s4k,s32k,s512k,s4m)") do |v|
    opts[:pair_configs] = v.split(",")
  end
  o.on("--report-only", "measure nothing; re-render results.md and the plots from the work dir's JSON") { opts[:report_only] = true }
end.parse!
opts[:phases] = [] if opts[:report_only]
%i[ruby src out work].each { |k| abort "bench.rb: --#{k} is required" unless opts[k] }

RUBY = opts[:ruby]
SRC = opts[:src]
OUT = opts[:out]
WORK = opts[:work]
QUICK = opts[:quick]
PAIR_OPTS = opts.slice(:pair_n, :pair_rounds, :pair_configs)
# YJIT on: every workload's Ruby gets --yjit --yjit-call-threshold=1, and
# valgrind checks all anonymous memory for code that changed (YJIT writes
# and patches its code there; without the check valgrind could run a stale
# translation).  The micro-benchmark's loop was one call of alloc_loop:
# YJIT (no on-stack replacement) leaves it to the interpreter at the
# default threshold, and even at 1 one side exit early in that call left
# the whole loop interpreted in some configurations and not others (80 M
# instructions apart).  So with YJIT it runs in calls of 1,000 iterations
# (ALLOC_MICRO_CHUNK), each entering compiled code; runner.rb records the
# code size (yjit_code_bytes).
YJIT = opts[:yjit] || false
YJIT_ARGS = YJIT ? ["--yjit", "--yjit-call-threshold=1"] : []
VG_YJIT = YJIT ? ["--smc-check=all-non-file"] : []
REPORT_ONLY = opts[:report_only]
JOBS = opts[:jobs] || 2
EXT_DIR = File.join(WORK, "ext")
MEMPROF = opts[:memprof]
SAMPLING_LIB = opts[:sampling_lib] || "sampling"
GC_DIR = File.join(File.dirname(File.dirname(RUBY)), "lib", "ruby", "gc")
RUNNER = File.join(HERE, "runner.rb")
WL = File.join(BENCH_DIR, "workloads")
FileUtils.mkdir_p([OUT, WORK, File.join(WORK, "metrics"), File.join(WORK, "callgrind")])
%w[RUBY_GC_LIBRARY RUBY_GC_SAMPLING].each { |k| ENV.delete(k) }

T_START = Time.now
def log(msg) = $stderr.puts("[bench #{format("%6.1f", Time.now - T_START)}s] #{msg}")

def lib_digests
  ["default", SAMPLING_LIB].to_h { |l| [l, Digest::SHA256.file(File.join(GC_DIR, "librubygc.#{l}.so")).hexdigest[0, 16]] }
end
# Another build may replace a GC library while we run (make rm's it first):
# wait until both exist and have not changed for 10 s.
def wait_for_libs(limit = 900)
  t0 = Time.now
  loop do
    paths = ["default", SAMPLING_LIB].map { |l| File.join(GC_DIR, "librubygc.#{l}.so") }
    return if paths.all? { |p| File.exist?(p) && Time.now - File.mtime(p) > 10 }
    raise "GC libraries missing for #{limit}s" if Time.now - t0 > limit
    sleep 2
  end
end
LIB_LOCK = Mutex.new
wait_for_libs unless REPORT_ONLY
LIBS_AT_START = REPORT_ONLY ? nil : lib_digests

# ---- configurations ----

Config = Struct.new(:key, :label, :gc, :profiler)
def cfg(key, label, gc, profiler) = Config.new(key, label, gc, profiler)
INTERVALS = { "4k" => 4096, "32k" => 32_768, "512k" => 524_288, "4m" => 4_194_304 }
IV_LABEL = { "4k" => "4 KiB", "32k" => "32 KiB", "512k" => "512 KiB", "4m" => "4 MiB" }
CONFIGS = [
  cfg("builtin", "built-in GC", nil, "none"),
  cfg("default", "default (baseline)", "default", "none"),
  cfg("stopped", "sampling, stopped", SAMPLING_LIB, "none"),
  *INTERVALS.map { |k, v| cfg("s#{k}", "sampling #{IV_LABEL[k]}", SAMPLING_LIB, "sampler:#{v}:poisson") },
  *INTERVALS.map { |k, v| cfg("n#{k}", "NEWOBJ hook #{IV_LABEL[k]}", "default", "newobj:#{v}:poisson") },
  cfg("trace", "trace_object_allocations", "default", "trace_object_allocations"),
  (cfg("memprof", "memory_profiler", "default", "memory_profiler") if MEMPROF),
].compact
C = CONFIGS.to_h { |c| [c.key, c] }
MAIN = %w[builtin default stopped s4k s32k s512k s4m n32k]

def env_for(config, extra = {})
  env = { "BENCH_PROFILER" => config.profiler, "BENCH_EXT_DIR" => EXT_DIR, "BENCH_RUBY_SRC" => SRC }
  env["ALLOC_MICRO_CHUNK"] = "1000" if YJIT  # alloc_micro.rb: each call re-enters compiled code
  env["RUBY_GC_LIBRARY"] = config.gc if config.gc
  env["BENCH_MEMPROF_LIB"] = MEMPROF if MEMPROF
  env.merge(extra)
end

def command(config, workload, extra = {})
  env = env_for(config, extra)
  ["env", "-u", "RUBY_GC_LIBRARY", *env.map { |k, v| "#{k}=#{v}" }, RUBY, *YJIT_ARGS, RUNNER, workload]
end

def sh_join(argv) = argv.map { |a| a =~ %r{\A[\w./=:,+-]+\z} ? a : Shellwords.escape(a) }.join(" ")

def rel(path) = path.sub(%r{\A#{Regexp.escape(File.dirname(BENCH_DIR))}/}, "")

COMMANDS = [] # for commands.md

def read_metrics(path)
  File.exist?(path) ? File.readlines(path).map { |l| JSON.parse(l, symbolize_names: true) } : []
end

# The phases and the report, one file a concern (each uses the options
# and configurations above).
require_relative "bench_instructions"
require_relative "bench_wall"
require_relative "bench_fastpath"
require_relative "bench_data"
require_relative "bench_markdown"

# ---- main ----

PHASES = phases = opts[:phases]
if phases.include?("callgrind") then log "callgrind phase"; callgrind_phase
else callgrind_phase(dry: true)
end
if phases.include?("callgrind") then nil
elsif File.exist?(f = File.join(WORK, "callgrind.json"))
  CG_RESULTS.replace(JSON.parse(File.read(f), symbolize_names: true).transform_keys(&:to_s))
  CG_RESULTS.each do |id, r|
    next unless r[:functions]
    out = File.join(WORK, "callgrind", "#{id}.out")
    r[:functions] = File.exist?(out) ? annotate(out) : r[:functions].transform_keys(&:to_s)
  end
end
if phases.include?("cycles") then log "cycles phase"; cycles_phase
else
  cycles_phase(dry: true)
  f = File.join(WORK, "cycles.json")
  CYC_RESULTS.replace(JSON.parse(File.read(f))) if File.exist?(f)
end
if phases.include?("wall") then log "wall phase"; wall_phase
else wall_phase(dry: true)
end
if phases.include?("wall") then nil
elsif File.exist?(f = File.join(WORK, "wall.json"))
  WALL.replace(JSON.parse(File.read(f)).transform_values { |w| w.transform_keys(&:to_sym) })
  WALL.each_value do |w|
    w[:metrics] = w[:metrics].transform_values { |a| a.map { |x| x.transform_keys(&:to_sym) } }
  end
end
if phases.include?("pairs") then log "pairs phase"; pairs_phase
else pairs_phase(dry: true)
end
# (read back when just measured too: one shape, string keys)
PAIRS_DATA = (f = File.join(WORK, "pairs.json")) && File.exist?(f) ? JSON.parse(File.read(f)) : nil
fastpath_phase if phases.include?("fastpath")
# machine.md and commands.md describe a measuring run; --report-only keeps them
machine_md unless REPORT_ONLY
load File.join(HERE, "plot.rb")
results_phase(plot_overhead(OUT, WORK, CG_RESULTS, WALL, INTERVALS, MICRO_TARGETS))
commands_md unless REPORT_ONLY
log "done: #{OUT}/results.md"
