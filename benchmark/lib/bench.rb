# bench.rb: the overhead harness behind benchmark/run (see benchmark/README.md).
# (Long because it is the whole harness: configurations, the phases,
# and the report computed then rendered; plot.rb draws the figures.)
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
#   2b. pairs: the micro-benchmark at ALLOC_MICRO_N=1,000,000, each
#      configuration run back to back with default, the pairs and the order
#      within each pair shuffled every round; the ratio of each pair;
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
  o.on("--only LIST", "comma-separated: #{ALL_PHASES.join(",")}") do |v|
    opts[:phases] = v.split(",")
    bad = opts[:phases] - ALL_PHASES
    abort "bench.rb: unknown phase #{bad.join(", ")} (phases: #{ALL_PHASES.join(", ")})" unless bad.empty?
  end
  o.on("--jobs N", Integer, "parallel callgrind runs (default 2)") { |v| opts[:jobs] = v }
  o.on("--report-only", "measure nothing; re-render results.md and the plots from the work dir's JSON") { opts[:report_only] = true }
end.parse!
opts[:phases] = [] if opts[:report_only]
%i[ruby src out work].each { |k| abort "bench.rb: --#{k} is required" unless opts[k] }

RUBY = opts[:ruby]
SRC = opts[:src]
OUT = opts[:out]
WORK = opts[:work]
QUICK = opts[:quick]
REPORT_ONLY = opts[:report_only]
JOBS = opts[:jobs] || 2
EXT_DIR = File.join(WORK, "ext")
MEMPROF = opts[:memprof]
GC_DIR = File.join(File.dirname(File.dirname(RUBY)), "lib", "ruby", "gc")
RUNNER = File.join(HERE, "runner.rb")
WL = File.join(BENCH_DIR, "workloads")
FileUtils.mkdir_p([OUT, WORK, File.join(WORK, "metrics"), File.join(WORK, "callgrind")])
%w[RUBY_GC_LIBRARY RUBY_GC_SAMPLING].each { |k| ENV.delete(k) }

T_START = Time.now
def log(msg) = $stderr.puts("[bench #{format("%6.1f", Time.now - T_START)}s] #{msg}")

def lib_digests
  %w[default sampling].to_h { |l| [l, Digest::SHA256.file(File.join(GC_DIR, "librubygc.#{l}.so")).hexdigest[0, 16]] }
end
# Another build may replace a GC library while we run (make rm's it first):
# wait until both exist and have not changed for 10 s.
def wait_for_libs(limit = 900)
  t0 = Time.now
  loop do
    paths = %w[default sampling].map { |l| File.join(GC_DIR, "librubygc.#{l}.so") }
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
  cfg("stopped", "sampling, stopped", "sampling", "none"),
  *INTERVALS.map { |k, v| cfg("s#{k}", "sampling #{IV_LABEL[k]}", "sampling", "sampler:#{v}:poisson") },
  *INTERVALS.map { |k, v| cfg("n#{k}", "NEWOBJ hook #{IV_LABEL[k]}", "default", "newobj:#{v}:poisson") },
  cfg("trace", "trace_object_allocations", "default", "trace_object_allocations"),
  (cfg("memprof", "memory_profiler", "default", "memory_profiler") if MEMPROF),
].compact
C = CONFIGS.to_h { |c| [c.key, c] }
MAIN = %w[builtin default stopped s4k s32k s512k s4m n32k]

def env_for(config, extra = {})
  env = { "BENCH_PROFILER" => config.profiler, "BENCH_EXT_DIR" => EXT_DIR, "BENCH_RUBY_SRC" => SRC }
  env["RUBY_GC_LIBRARY"] = config.gc if config.gc
  env["BENCH_MEMPROF_LIB"] = MEMPROF if MEMPROF
  env.merge(extra)
end

def command(config, workload, extra = {})
  env = env_for(config, extra)
  ["env", "-u", "RUBY_GC_LIBRARY", *env.map { |k, v| "#{k}=#{v}" }, RUBY, RUNNER, workload]
end

def sh_join(argv) = argv.map { |a| a =~ %r{\A[\w./=:,+-]+\z} ? a : Shellwords.escape(a) }.join(" ")

def rel(path) = path.sub(%r{\A#{Regexp.escape(File.dirname(BENCH_DIR))}/}, "")

COMMANDS = [] # for commands.md

def read_metrics(path)
  File.exist?(path) ? File.readlines(path).map { |l| JSON.parse(l, symbolize_names: true) } : []
end

# ---- 1. callgrind ----

CG_RESULTS = {}
FAILURES = []

# A callgrind run: Ir of the workload region, the run's metrics, and (when
# `annotate`) the inclusive cost of the sampler's functions.
def callgrind_job(id, config, workload, extra = {}, annotate: false)
  { id: id, config: config, workload: workload, extra: extra, annotate: annotate }
end

def run_callgrind(job, dry: false)
  metrics = File.join(WORK, "metrics", "cg-#{job[:id]}.jsonl")
  FileUtils.rm_f(metrics) unless dry
  outfile = job[:annotate] ? File.join(WORK, "callgrind", "#{job[:id]}.out") : "/dev/null"
  argv = command(job[:config], job[:workload], job[:extra].merge("BENCH_METRICS" => metrics))
  vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--callgrind-out-file=#{outfile}"]
  i = argv.index(RUBY)
  full = argv[0...i] + vg + argv[i..]
  COMMANDS << "# callgrind #{job[:id]}\n" + sh_join(full.map { |a| a.sub(WORK + "/metrics", "$WORK/metrics") })
  return if dry
  out = err = st = nil
  3.times do
    LIB_LOCK.synchronize { wait_for_libs }
    out, err, st = Open3.capture3(*full)
    break unless err.include?("cannot be opened")
    log "callgrind #{job[:id]}: GC library missing, retrying"
  end
  ir = err[/Collected : (\d+)/, 1]
  raise "callgrind #{job[:id]} failed (#{st.exitstatus}):\n#{err[-2000..] || err}" unless st.success? && ir
  r = { ir: Integer(ir), metrics: read_metrics(metrics).last || {} }
  r[:functions] = annotate(outfile) if job[:annotate]
  r
end

# Inclusive costs read from callgrind_annotate, by function.  The sampling
# path is one translation unit: the point, the gap and the record are
# inlined into sampling_take, the liveness walk into sampling_marks_finished
# (both out of line); frames.c's capture is a call of its own.
SAMPLER_FUNCTIONS = %w[sampling_take sampling_frames_capture sampling_marks_finished sampling_mark_roots]
DIRECT = %w[sampling_take sampling_marks_finished sampling_mark_roots]

# A function whose body comes from several files (inlining) is listed once
# per file; the largest of its lines is the whole function, inclusive.
def annotate(outfile)
  out, = Open3.capture3("callgrind_annotate", "--inclusive=yes", "--auto=no", "--threshold=100", outfile)
  SAMPLER_FUNCTIONS.to_h do |f|
    counts = out.lines.grep(/\A\s*[\d,]+ .*:#{f}(\s|\z)/).map { |l| Integer(l[/\A\s*([\d,]+)/, 1].delete(",")) }
    [f, counts.max || 0]
  end
end

def run_parallel(jobs)
  queue = Queue.new
  jobs.each { |j| queue << j }
  JOBS.times.map do
    Thread.new do
      while (j = (queue.pop(true) rescue nil))
        t = Time.now
        begin
          CG_RESULTS[j[:id]] = run_callgrind(j)
          log "callgrind #{j[:id]}: #{CG_RESULTS[j[:id]][:ir]} Ir (#{(Time.now - t).round(1)}s)"
        rescue => e
          log "callgrind #{j[:id]} FAILED: #{e.message[0, 3000]}"
          FAILURES << "callgrind #{j[:id]}: #{e.message.lines.grep(/Error|error/).first(3).join.strip}"
        end
      end
    end
  end.each(&:join)
end

MICRO = File.join(WL, "alloc_micro.rb")
BT = File.join(WL, "binary_trees.rb")
CG_N = QUICK ? 10_000 : 50_000
CG_N_MEMPROF = QUICK ? 1_000 : 5_000
CG_BT_DEPTH = QUICK ? 8 : 12
DEPTHS = [8, 64, 128]
LIVE = 100_000
GC_LOOPS = 20

def callgrind_phase(dry: false)
  jobs = []
  micro = { "ALLOC_MICRO_N" => CG_N.to_s }
  CONFIGS.each do |c|
    next if c.key == "memprof"
    jobs << callgrind_job("micro-#{c.key}", c, MICRO, micro, annotate: c.key.match?(/\As\d/))
  end
  if C["memprof"]
    small = { "ALLOC_MICRO_N" => CG_N_MEMPROF.to_s }
    jobs << callgrind_job("microsmall-memprof", C["memprof"], MICRO, small)
    jobs << callgrind_job("microsmall-default", C["default"], MICRO, small)
  end
  # per-sample cost: fixed 4 KiB at depth d, against the same program unsampled
  DEPTHS.each do |d|
    e = micro.merge("ALLOC_MICRO_DEPTH" => d.to_s)
    jobs << callgrind_job("depth#{d}-stopped", C["stopped"], MICRO, e)
    jobs << callgrind_job("depth#{d}-sampling", cfg("f4k", "sampling fixed 4 KiB", "sampling", "sampler:4096:fixed:128"), MICRO, e, annotate: true)
    jobs << callgrind_job("depth#{d}-default", C["default"], MICRO, e)
    jobs << callgrind_job("depth#{d}-newobj", cfg("nf4k", "NEWOBJ fixed 4 KiB", "default", "newobj:4096:fixed:128"), MICRO, e)
  end
  # liveness: LIVE sampled objects alive through GC_LOOPS minor GCs
  live = { "BENCH_KEEP_LIVE" => LIVE.to_s, "BENCH_GC_LOOPS" => GC_LOOPS.to_s, "BENCH_MAX_SAMPLES" => LIVE.to_s }
  jobs << callgrind_job("live-none", C["stopped"], MICRO, live)
  jobs << callgrind_job("live-sampled", cfg("live", "sampling, every object", "sampling", "sampler:1:fixed"), MICRO, live, annotate: true)
  # the same with the sampler running (a timeline row and a peak check a
  # GC); and the cost of a death: the kept objects dropped, one full GC
  jobs << callgrind_job("live-running", cfg("live", "sampling, every object", "sampling", "sampler:1:fixed"), MICRO,
                        live.merge("BENCH_KEEP_SAMPLING" => "1"), annotate: true)
  grow = live.merge("BENCH_KEEP_SAMPLING" => "1", "BENCH_GROW" => "1", "BENCH_MAX_SAMPLES" => (2 * LIVE).to_s)
  jobs << callgrind_job("live-growing-none", C["stopped"], MICRO, grow)
  jobs << callgrind_job("live-growing", cfg("live", "sampling, every object", "sampling", "sampler:1:fixed"), MICRO, grow)
  drop = live.merge("BENCH_DROP_LIVE" => "1")
  jobs << callgrind_job("die-none", C["stopped"], MICRO, drop)
  jobs << callgrind_job("die-sampled", cfg("live", "sampling, every object", "sampling", "sampler:1:fixed"), MICRO, drop)
  # binary_trees, reduced
  bt = { "BINARY_TREES_DEPTH" => CG_BT_DEPTH.to_s }
  %w[builtin default stopped s4k s32k s512k s4m n32k n512k trace].each do |k|
    jobs << callgrind_job("bt-#{k}", C[k], BT, bt)
  end
  return jobs.each { |j| run_callgrind(j, dry: true) } if dry
  log "callgrind: #{jobs.size} runs, #{JOBS} at a time"
  run_parallel(jobs)
  File.write(File.join(WORK, "callgrind.json"), JSON.pretty_generate(CG_RESULTS))
end

# ---- 1b. cycles ----

# Callgrind with its cache and branch simulation (the I1/D1/LL caches of
# this machine, valgrind's predictor), over the same region as phase 1.
# The estimate is the usual one: each instruction a cycle, an L1 miss 10,
# a last-level miss 100, a mispredicted branch 10:
#
#   cycles ~ Ir + 10 (I1mr + D1mr + D1mw) + 100 (ILmr + DLmr + DLmw) + 10 (Bcm + Bim)
#
# It is reported with and without the indirect-branch term (Bim).
# Valgrind's indirect predictor is a table of 512 last targets indexed by
# the low 9 bits of the branch's address, without tags (cachegrind's
# cg_branchpred.c, which callgrind uses): two hot indirect branches 512
# bytes apart, say a PLT stub of a GC library and a jump through gc.c's
# function table in the ruby binary, evict each other and mispredict on
# every call, however constant their targets. A library loads page
# aligned, so which stubs collide is decided by the link layout: one PLT
# entry more shifts every later stub. A real core tags its branch target
# buffer and has thousands of entries, so Bim differences between
# libraries here are mostly layout, not cost; the estimate without them
# is the one to compare.
CYCLE_EVENTS = %w[Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw Bc Bcm Bi Bim]
CYCLE_KEYS = %w[builtin default stopped s4k s32k s512k s4m]

def cycle_estimate(h, indirect: true)
  h["Ir"] + 10 * (h["I1mr"] + h["D1mr"] + h["D1mw"]) + 100 * (h["ILmr"] + h["DLmr"] + h["DLmw"]) +
    10 * (h["Bcm"] + (indirect ? h["Bim"] : 0))
end

CYC_RESULTS = {}

def run_cycles(config, dry: false)
  id = "cycles-#{config.key}"
  metrics = File.join(WORK, "metrics", "#{id}.jsonl")
  outfile = File.join(WORK, "callgrind", "#{id}.out")
  argv = command(config, MICRO, { "ALLOC_MICRO_N" => CG_N.to_s, "BENCH_METRICS" => metrics })
  vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no", "--cache-sim=yes", "--branch-sim=yes", "--callgrind-out-file=#{outfile}"]
  i = argv.index(RUBY)
  full = argv[0...i] + vg + argv[i..]
  COMMANDS << "# cycles #{config.key}\n" + sh_join(full.map { |a| a.sub(WORK + "/metrics", "$WORK/metrics").sub(WORK + "/callgrind", "$WORK/callgrind") })
  return if dry
  FileUtils.rm_f(metrics)
  LIB_LOCK.synchronize { wait_for_libs }
  _, err, st = Open3.capture3(*full)
  raise "callgrind (cycles) #{config.key} failed (#{st.exitstatus}):\n#{err[-2000..] || err}" unless st.success? && File.exist?(outfile)
  # string keys throughout, so that cycles.json reads back the same
  { "totals" => cycle_totals(outfile), "metrics" => (read_metrics(metrics).last || {}).transform_keys(&:to_s),
    "functions" => cycle_functions(outfile) }
end

# The whole region: the file's events and totals lines.
def cycle_totals(outfile)
  events = totals = nil
  File.foreach(outfile) do |l|
    events = l.split[1..] if l.start_with?("events:")
    totals = l.split[1..].map { Integer(_1) } if l.start_with?("totals:", "summary:")
  end
  raise "#{outfile}: no events/totals" unless events && totals
  CYCLE_EVENTS.to_h { |e| [e, totals[events.index(e)] || 0] }
end

# Per function, every event, from callgrind_annotate: exclusive costs summed
# over the files a function's lines come from (inlining spreads them), and
# the sampler's functions inclusive (the largest of their lines, as in
# phase 1).
def cycle_functions(outfile)
  rows = ->(inclusive) do
    out, = Open3.capture3("callgrind_annotate", "--inclusive=#{inclusive ? "yes" : "no"}", "--auto=no", "--threshold=100", outfile)
    out.lines.filter_map do |l|
      next unless l =~ /\A\s*[\d,]/ && !l.include?("PROGRAM TOTALS")
      cells = l.scan(/(?:\A|\s)([\d,]+|\.)(?: \(\s*[\d.]+%\))?(?=\s)/).flatten.first(CYCLE_EVENTS.size)
      next if cells.size < CYCLE_EVENTS.size
      name = l.split(/\s{2,}/).last.strip.sub(/ \[.*\]\z/, "").split(":").last
      [name, CYCLE_EVENTS.zip(cells.map { _1 == "." ? 0 : Integer(_1.delete(",")) }).to_h]
    end
  end
  exclusive = Hash.new { |h, k| h[k] = Hash.new(0) }
  rows.(false).each { |name, h| h.each { |e, v| exclusive[name][e] += v } }
  inclusive = {}
  rows.(true).each { |name, h| inclusive[name] = h if SAMPLER_FUNCTIONS.include?(name) && h["Ir"] > (inclusive[name]&.dig("Ir") || -1) }
  # keep the files small: the functions that matter in any configuration
  top = exclusive.select { |_, h| cycle_estimate(h) >= 200_000 }
  { "exclusive" => top, "sampler" => inclusive }
end

def cycles_phase(dry: false)
  configs = CYCLE_KEYS.map { C[_1] }
  return configs.each { |c| run_cycles(c, dry: true) } if dry
  log "cycles: #{configs.size} runs, #{JOBS} at a time"
  queue = Queue.new
  configs.each { queue << _1 }
  JOBS.times.map do
    Thread.new do
      while (c = (queue.pop(true) rescue nil))
        t = Time.now
        begin
          CYC_RESULTS[c.key] = run_cycles(c)
          log "cycles #{c.key}: #{cycle_estimate(CYC_RESULTS[c.key]["totals"])} est (#{(Time.now - t).round(1)}s)"
        rescue => e
          log "cycles #{c.key} FAILED: #{e.message[0, 3000]}"
          FAILURES << "cycles #{c.key}: #{e.message.lines.first(3).join.strip}"
        end
      end
    end
  end.each(&:join)
  File.write(File.join(WORK, "cycles.json"), JSON.pretty_generate(CYC_RESULTS))
end

# ---- 2. wall time ----

WALL = {} # workload key => { config key => [metrics...] , times }

Workload = Struct.new(:key, :label, :path, :env, :configs, :rounds)
def workloads
  r = QUICK ? 2 : 5
  r_small = QUICK ? 1 : 3
  peers = %w[n512k trace]
  [
    Workload.new("micro", "alloc_micro (N=#{QUICK ? "100k" : "300k"})", MICRO, { "ALLOC_MICRO_N" => (QUICK ? "100000" : "300000") },
                 MAIN + peers + (C["memprof"] && !QUICK ? ["memprof"] : []), r),
    Workload.new("binary_trees", "gc/binary_trees (depth #{QUICK ? 12 : 14})", BT, { "BINARY_TREES_DEPTH" => (QUICK ? "12" : "14") },
                 MAIN + peers, r),
    Workload.new("redblack", "gc/redblack (1 round)", File.join(WL, "redblack.rb"), { "REDBLACK_N" => "1" }, MAIN, r_small),
    Workload.new("ring", "gc/ring (#{QUICK ? 1 : 3} M objects)", File.join(WL, "ring.rb"), { "RING_MAX" => (QUICK ? "1000000" : "3000000") }, MAIN, r_small),
    Workload.new("hash1", "gc/hash1 (n=#{QUICK ? 3 : 10}k)", File.join(WL, "hash1.rb"), { "HASH1_N" => (QUICK ? "3000" : "10000") }, MAIN, r_small),
    (Workload.new("pentomino", "gc/pentomino", File.join(SRC, "benchmark/gc/pentomino.rb"), {}, %w[default stopped s32k s512k n32k], 2) unless QUICK),
    Workload.new("app_uri", "app_uri", File.join(SRC, "benchmark/app_uri.rb"), {}, MAIN, r_small),
    Workload.new("app_strconcat", "app_strconcat", File.join(SRC, "benchmark/app_strconcat.rb"), {}, MAIN, r_small),
    Workload.new("app_factorial", "app_factorial", File.join(SRC, "benchmark/app_factorial.rb"), {}, MAIN, r_small),
  ].compact
end

def wall_phase(dry: false)
  rng = Random.new(42)
  workloads.each do |w|
    if dry
      keys = w.configs
      argv = ["hyperfine", "-N", "--runs", "1", "--style", "none", "--export-json", File.join(WORK, "hyperfine-#{w.key}-0.json"),
              *keys.map { |k| sh_join(command(C[k], w.path, w.env.merge("BENCH_METRICS" => File.join(WORK, "metrics", "wall-#{w.key}-#{k}.jsonl")))) }]
      COMMANDS << "# wall #{w.key} round 1\n" + sh_join(argv.map { |a| a.gsub(WORK, "$WORK") })
      next
    end
    WALL[w.key] = { label: w.label, configs: w.configs, times: Hash.new { |h, k| h[k] = [] }, user: Hash.new { |h, k| h[k] = [] } }
    cmds = w.configs.to_h do |k|
      metrics = File.join(WORK, "metrics", "wall-#{w.key}-#{k}.jsonl")
      FileUtils.rm_f(metrics)
      [k, [command(C[k], w.path, w.env.merge("BENCH_METRICS" => metrics)), metrics]]
    end
    # memory_profiler runs once (it takes ~35x as long); the rest every round
    w.rounds.times do |round|
      keys = w.configs.shuffle(random: rng)
      keys = keys.reject { |k| k == "memprof" } if round > 0
      json = File.join(WORK, "hyperfine-#{w.key}-#{round}.json")
      argv = ["hyperfine", "-N", "--runs", "1", "--style", "none", "--export-json", json,
              *keys.map { |k| sh_join(cmds[k][0]) }]
      COMMANDS << "# wall #{w.key} round #{round + 1}\n" + sh_join(argv.map { |a| a.gsub(WORK, "$WORK") }) if round == 0
      err = st = nil
      3.times do
        wait_for_libs
        _, err, st = Open3.capture3(*argv)
        break if st.success? || !err.include?("cannot be opened")
        log "wall #{w.key}: GC library missing, retrying the round"
      end
      unless st.success?
        log "hyperfine #{w.key} FAILED: #{err[0, 3000]}"
        FAILURES << "wall #{w.key} round #{round + 1}: #{err.lines.first(3).join.strip}"
        next
      end
      JSON.parse(File.read(json))["results"].each_with_index do |res, i|
        WALL[w.key][:times][keys[i]] << res["times"][0]
        WALL[w.key][:user][keys[i]] << res["user"]
      end
    end
    WALL[w.key][:metrics] = cmds.transform_values { |(_, m)| read_metrics(m) }
    log "wall #{w.key}: " + w.configs.map { |k| "#{k} #{(m = median(WALL[w.key][:times][k])) ? format("%.2f", m) : "-"}" }.join(", ")
  end
  File.write(File.join(WORK, "wall.json"), JSON.pretty_generate(WALL)) unless dry
end

# ---- 2b. pairs ----

# The micro-benchmark as a user runs it (whole process, boot included), each
# configuration against default in pairs run back to back: a neighbour that
# slows the machine for a few seconds slows both halves of a pair alike,
# and the ratio of a pair cancels it. Every round runs each pair once, the
# pairs in a shuffled order and default first or second at random.
PAIR_KEYS = %w[builtin stopped s4k s32k s512k s4m]
PAIR_N = QUICK ? 300_000 : 1_000_000
PAIR_ROUNDS = QUICK ? 5 : 11
PAIRS = {} # config key => { times: [...], default: [...], ratios: [...] }

def timed_run(argv)
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  pid = Process.spawn(*argv, out: File::NULL, err: File::NULL)
  Process.wait(pid)
  raise "#{argv.last(2).join(" ")} failed (#{$?.exitstatus})" unless $?.success?
  Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
end

def pairs_phase(dry: false)
  env = { "ALLOC_MICRO_N" => PAIR_N.to_s }
  cmd = ->(k) { command(C[k], MICRO, env) }
  COMMANDS << "# pairs: each of #{PAIR_KEYS.join(", ")} back to back with default, #{PAIR_ROUNDS} rounds, e.g.\n" +
              sh_join(cmd.("default")) + "\n" + sh_join(cmd.("s4k"))
  return if dry
  rng = Random.new(19)
  PAIR_KEYS.each { |k| PAIRS[k] = { times: [], default: [], ratios: [] } }
  PAIR_ROUNDS.times do |round|
    PAIR_KEYS.shuffle(random: rng).each do |k|
      order = rng.rand < 0.5 ? ["default", k] : [k, "default"]
      wait_for_libs
      t = order.to_h { |x| [x, timed_run(cmd.(x))] }
      PAIRS[k][:times] << t[k]
      PAIRS[k][:default] << t["default"]
      PAIRS[k][:ratios] << t[k] / t["default"]
    rescue => e
      FAILURES << "pairs #{k} round #{round + 1}: #{e.message}"
    end
    log "pairs round #{round + 1}/#{PAIR_ROUNDS}: " + PAIR_KEYS.map { |k| "#{k} #{format("%.3f", PAIRS[k][:ratios].last || 0)}" }.join(", ")
  end
  File.write(File.join(WORK, "pairs.json"), JSON.pretty_generate({ n: PAIR_N, rounds: PAIR_ROUNDS, load: load_average, pairs: PAIRS }))
end

def load_average = (File.read("/proc/loadavg").split.first(3).join(" ") rescue "n/a")

def median(a)
  a = a.compact.sort
  return nil if a.empty?
  a.size.odd? ? a[a.size / 2] : (a[a.size / 2 - 1] + a[a.size / 2]) / 2.0
end

# ---- 3. fast path ----

# lib: a library's name in GC_DIR, or a path.  Each instruction as
# [offset in the function, text]: the address column dropped, symbolic
# jump targets kept (function-relative).
def listing(lib, fn)
  path = lib.include?("/") ? lib : File.join(GC_DIR, "librubygc.#{lib}.so")
  out, st = Open3.capture2("objdump", "-d", "--no-show-raw-insn", "--disassemble=#{fn}", path)
  raise "objdump failed" unless st.success?
  on = false
  start = nil
  out.lines.filter_map do |l|
    if l =~ /\A(\h+) <#{Regexp.escape(fn)}>:/ then on = true; start = $1.to_i(16); next
    elsif on && l.strip.empty? then on = false; next
    end
    next unless on && l =~ /\A\s*(\h+):/
    [$1.to_i(16) - start, l.sub(/\A\s*\h+:\s*/, "").sub(/\b\h+ <([^>]+)>/, '<\1>').sub(/#\s*\h+\s*</, "# <").rstrip]
  end
end

# The instructions (indices) on the fast path.  Basic blocks end at every
# jump and ret and start at every jump target; a block is off the fast
# path ("doomed") if it calls or tail-calls newobj_cache_miss,
# sampling_take (the single-Ractor sample, asked in newobj_alloc) or
# newobj_slowpath_* (in a GC or under GC.stress), or if every block it
# can go on to is doomed (the tests that lead only there).  The fast path
# is what the entry reaches without entering a doomed block.
def fast_path(ins, fn)
  off = ->(t) { t =~ /<#{Regexp.escape(fn)}(?:\+0x(\h+))?>/ ? ($1 || "0").to_i(16) : nil }
  at = ins.each_with_index.to_h { |(o, _), i| [o, i] }
  leaders = [0]
  ins.each_with_index do |(_, t), i|
    next unless t =~ /\A(j\w*|ret)\b/
    leaders << i + 1 if i + 1 < ins.size
    leaders << at[off.(t)] if t.start_with?("j") && at[off.(t)]
  end
  starts = leaders.uniq.sort
  blocks = starts.each_with_index.map { |s, k| (s..((starts[k + 1] || ins.size) - 1)) }
  block_of = {}
  blocks.each_with_index { |r, b| r.each { block_of[_1] = b } }
  succ = blocks.map do |r|
    last = ins[r.last][1]
    n = []
    n << block_of[r.last + 1] if r.last + 1 < ins.size && last !~ /\A(jmp|ret)\b/
    n << block_of[at[off.(last)]] if last.start_with?("j") && at[off.(last)]
    n.compact.uniq
  end
  miss = /\A(call|jmp)\s+<(newobj_cache_miss|sampling_take|newobj_slowpath_\w+)>/
  doomed = blocks.map { |r| r.any? { ins[_1][1] =~ miss } }
  loop do
    grew = false
    blocks.each_index do |b|
      next if doomed[b] || succ[b].empty? || !succ[b].all? { doomed[_1] }
      doomed[b] = grew = true
    end
    break unless grew
  end
  seen = {}
  todo = [0]
  until todo.empty?
    b = todo.pop
    next if seen[b] || doomed[b]
    seen[b] = true
    todo.concat(succ[b])
  end
  seen.keys.flat_map { blocks[_1].to_a }.to_h { [_1, true] }
end

REGS = /%(r[a-ds]x|e[a-ds]x|[a-d]l|[a-d]x|r[sd]i|e[sd]i|[sd]il|r[sb]p|e[sb]p|[sb]pl|r\d+[dwb]?)\b/
def regnorm(lines) = lines.map { |l| l.gsub(REGS, "%REG") }
# jump targets inside the function: their offsets move with any code before them
def offnorm(lines) = lines.map { |l| l.sub(/<([\w.]+)\+0x\h+>/, '<\1+OFF>') }

def diff(a, b, label_a = REF_LABEL)
  File.write(fa = File.join(WORK, "fp-a.s"), a.join("\n") + "\n")
  File.write(fb = File.join(WORK, "fp-b.s"), b.join("\n") + "\n")
  out, = Open3.capture2("diff", "-u", "--label", label_a, "--label", "librubygc.sampling.so", fa, fb)
  out
end

# The reference the sampling library's fast path is compared with:
# default.c compiled as sampling.c compiles it (shared_object.h's
# replacements, extconf.rb's flags), with the patch series' hooks left
# empty. Ruby's own librubygc.default.so calls gc.c's no-op helpers, which
# the sampling library does not (shared_object.h), so against it the fast
# path differs by that call; against the reference, by the hooks alone.
REF_LABEL = "reference (default.c as sampling.c compiles it, hooks empty)"
SAMPLING_SRC = File.join(File.dirname(BENCH_DIR), "gc", "sampling")
def build_reference
  dir = File.join(WORK, "fastpath-reference")
  FileUtils.rm_rf(dir)
  FileUtils.mkdir_p(dir)
  File.write(File.join(dir, "reference.c"), <<~C)
    #include "ruby/internal/config.h"
    #include "ruby/ruby.h"
    #include "ruby_version.h"
    #if SAMPLING_INCLUDE_SANITIZERS
    # include "internal/sanitizers.h"
    #endif
    #include "internal/static_assert.h"
    #include "shared_object.h"
    #include "gc/default/default.c"
  C
  File.write(File.join(dir, "extconf.rb"), <<~RUBY)
    require "mkmf"
    $INCFLAGS << " -I#{SRC} -I#{SAMPLING_SRC}"
    $CPPFLAGS << " -DBUILDING_MODULAR_GC"
    append_cflags("-fPIC")
    append_cflags("-fno-semantic-interposition")  # as gc/sampling/extconf.rb
    create_makefile("librubygc.reference")
  RUBY
  _, st = Open3.capture2e(RUBY, "extconf.rb", chdir: dir)
  out, st = Open3.capture2e("make", chdir: dir) if st.success?
  raise "building the fast-path reference failed, see #{dir}: #{out.to_s.lines.grep(/error/).first(3).join}" unless st.success?
  COMMANDS << "# fastpath reference: #{rel(dir)}/reference.c, extconf.rb (written by bench.rb)\n(cd #{rel(dir)} && #{rel(RUBY)} extconf.rb && make)"
  File.join(dir, "librubygc.reference.so")
end

def fastpath_phase
  fn = "rb_gc_impl_new_obj"
  la = listing(build_reference, fn)
  lb = listing("sampling", fn)
  lstock = listing("default", fn)
  a, b, stock = [la, lb, lstock].map { |l| l.map(&:last) }
  on_fast = {}.compare_by_identity
  on_fast[a] = fast_path(la, fn); on_fast[b] = fast_path(lb, fn); on_fast[stock] = fast_path(lstock, fn)
  stock_diff = diff(offnorm(regnorm(stock)), offnorm(regnorm(b)), "librubygc.default.so")
  exact = diff(a, b)
  norm = diff(offnorm(regnorm(a)), offnorm(regnorm(b)))
  # Each line only one side has, with what follows it: padding (nop) or the
  # block it belongs to, named by the call or jump that ends the block.
  padding = /\A(nop|xchg\s+%ax,%ax|data16|cs nop)/
  only = { "+" => [], "-" => [] }
  ai = bi = 0
  norm.lines.each do |l|
    if l =~ /\A@@ -(\d+)(?:,\d+)? \+(\d+)/ then ai = $1.to_i - 1; bi = $2.to_i - 1
    elsif l.start_with?("+++", "---") then next
    elsif l.start_with?("+") then only["+"] << b_i = bi; bi += 1
    elsif l.start_with?("-") then only["-"] << ai; ai += 1
    else ai += 1; bi += 1
    end
  end
  describe = lambda do |lines, i|
    return "`#{lines[i]}` (padding)" if lines[i] =~ padding
    nxt = lines[i..].find { |x| x =~ /\A(call|jmp|ret)/ }
    "`#{lines[i]}` (in the block ending `#{nxt}`)"
  end
  # off the fast path (fast_path above): the miss branch and the slow path
  in_miss = ->(lines, i) { !on_fast[lines][i] }
  fast = ->(lines) { lines.each_index.count { |i| lines[i] !~ padding && on_fast[lines][i] } }
  added = only["+"]; removed = only["-"]
  ctx = added.map { |i| describe.(b, i) } + removed.map { |i| "only in default: " + describe.(a, i) }
  only_miss = added.all? { |i| b[i] =~ padding || in_miss.(b, i) } &&
              removed.all? { |i| a[i] =~ padding || in_miss.(a, i) }
  md = +"# The allocation fast path: machine code of `#{fn}`\n\n"
  md << "Generated by `benchmark/run` on #{Time.now.utc.iso8601}. `objdump -d --no-show-raw-insn --disassemble=#{fn}` "
  md << "of both libraries in `#{rel(GC_DIR)}`; addresses dropped (jump targets kept as `<function+offset>`).\n\n"
  md << "The sampling library is compared with a reference built by this phase: `default.c` compiled as `sampling.c` compiles it "
  md << "(`gc/sampling/shared_object.h`'s replacements of gc.c's helpers, `extconf.rb`'s flags), with the patch series' hooks "
  md << "left empty; so a difference is the hooks' doing. Ruby's own `librubygc.default.so` is shown too: its fast path also "
  md << "calls gc.c's `rb_asan_unpoison_object` (a no-op without ASan, on 3.4) through the PLT, which the sampling library does not.\n\n"
  md << "| | librubygc.default.so | reference | librubygc.sampling.so |\n|---|---|---|---|\n"
  md << "| instructions in `#{fn}` | #{stock.size} | #{a.size} | #{b.size} |\n"
  md << "| of which on the fast path (not the miss branch or the slow path; padding left out) | #{fast.(stock)} | #{fast.(a)} | #{fast.(b)} |\n\n"
  md << "`#{fn}` holds the whole allocation fast path (size-pool choice, `ractor_cache_allocate_slot`'s pop of the "
  md << "free list, `newobj_init`); `newobj_cache_miss` is out of line (NOINLINE) in both. The fast path is found on "
  md << "the control-flow graph: basic blocks end at every jump and `ret` and start at every jump target; a block that "
  md << "calls or tail-calls `newobj_cache_miss`, `sampling_take` (the single-Ractor sample, asked in `newobj_alloc` "
  md << "before `newobj_cache_miss`) or `newobj_slowpath_*` (in a GC or under `GC.stress`) is off it, and so is a "
  md << "block whose every successor is off it (the tests that lead only there); the fast path is what the entry "
  md << "reaches through the others. Jump offsets inside the function are written `+OFF` in the comparison: they "
  md << "move with any code laid out before their target.\n\n"
  pushes = ->(l) { l.count { _1.start_with?("push") } }
  calls = ->(l) { l.grep(/\Acall/).map { _1.sub(/\Acall\s+/, "") }.uniq }
  md << "## Summary\n\n"
  md << "- Against Ruby's `librubygc.default.so`: #{stock.size} instructions there, #{b.size} here; calls only there: "
  md << "#{(calls.(stock) - calls.(b)).map { "`#{_1}`" }.join(", ").then { _1.empty? ? "none" : _1 }}; only here: "
  md << "#{(calls.(b) - calls.(stock)).map { "`#{_1}`" }.join(", ").then { _1.empty? ? "none" : _1 }}; callee-saved registers pushed: #{pushes.(stock)} there, #{pushes.(b)} here.\n"
  md << "- Against the reference: #{a.size} instructions there, #{b.size} here; callee-saved registers pushed: #{pushes.(a)} there, #{pushes.(b)} here"
  md << (pushes.(b) > pushes.(a) ? " (the hook's `klass` and `flags`, kept for the call to `newobj_cache_miss`, take one more: a push and a pop on every allocation)" : "") << ".\n\n"
  md << "## With register names normalised (every register written `%REG`, jump offsets `+OFF`)\n\n"
  if added.empty? && removed.empty?
    md << "**Identical.**\n\n"
  else
    md << "#{removed.size} line(s) only in default, #{added.size} only in sampling:\n\n"
    ctx.each { |c| md << "- #{c}\n" }
    md << "\n"
    if only_miss
      md << "**Verdict: the fast path is identical.** Every extra instruction is off it: the two more arguments "
      md << "(`klass`, `flags`, the `GC_HOOK_NEWOBJ_PARAMS` of the patch) for `newobj_cache_miss`, and the "
      md << "single-Ractor sample check with its call to `sampling_take`; differing `nop` padding is alignment.\n\n"
    else
      differ = added.reject { |i| b[i] =~ padding || in_miss.(b, i) }.map { "`#{b[_1]}`" } +
               removed.reject { |i| a[i] =~ padding || in_miss.(a, i) }.map { "only in the reference: `#{a[_1]}`" }
      md << "**Verdict: on the fast path the listings differ by #{differ.size} line(s): #{differ.join(", ")}**; "
      md << "everything else that differs is off it. Read the diff below.\n\n"
    end
    md << "```diff\n#{norm}```\n\n"
  end
  md << "## Exact (registers as allocated)\n\n"
  md << "The compiler picked different callee-saved registers for the same values (the miss call has two more "
  md << "arguments to keep live); instruction for instruction the code is otherwise the same.\n\n" unless exact.empty?
  md << (exact.empty? ? "**Identical.**\n" : "```diff\n#{exact}```\n")
  md << "\n## Against Ruby's librubygc.default.so (registers normalised)\n\n"
  md << (stock_diff.empty? ? "**Identical.**\n" : "```diff\n#{stock_diff}```\n")
  md << "\n## Full listing (sampling)\n\n```\n#{b.join("\n")}\n```\n"
  File.write(File.join(OUT, "fastpath.md"), md)
  log "fastpath: #{a.size} vs #{b.size} instructions (#{fast.(a)} vs #{fast.(b)} on the fast path); " \
      "#{added.size}+/#{removed.size}- after normalisation; #{only_miss ? "fast path identical" : "fast path differs"}"
end

# ---- 4. reports ----

def pct(r) = r ? format("%+.2f%%", (r - 1) * 100) : "n/a"
def fx(r, d = 3) = r ? format("%.#{d}fx", r) : "n/a"
def num(n) = n.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
def cg(id) = CG_RESULTS[id]

def machine_md
  sh = ->(*c) { (Open3.capture2e(*c)[0] rescue "n/a").strip }
  md = +"# Machine\n\nRecorded by `benchmark/run` on #{Time.now.utc.iso8601}.\n\n"
  md << "## lscpu\n\n```\n#{sh.("lscpu")}\n```\n\n## Memory\n\n```\n#{sh.("free", "-m")}\n```\n\n"
  md << "## Kernel\n\n```\n#{sh.("uname", "-a")}\n```\n\n## OS\n\n```\n#{(File.read("/etc/os-release") rescue "").strip}\n```\n\n"
  md << "## Compiler\n\n```\n#{sh.("gcc", "--version").lines.first.strip}\n```\n\n"
  md << "## Ruby\n\n```\n"
  md << "#{sh.(RUBY, "-v")}\n#{sh.("env", "RUBY_GC_LIBRARY=default", RUBY, "-v")}\n#{sh.("env", "RUBY_GC_LIBRARY=sampling", RUBY, "-v")}\n"
  md << "#{sh.(RUBY, "-e", "puts RbConfig::CONFIG.values_at('CC', 'CFLAGS', 'configure_args').join(\"\\n\")")}\n```\n\n"
  md << "## GC libraries (SHA-256, first 16 hex)\n\n"
  LIBS_AT_START.each { |l, d| md << "- librubygc.#{l}.so: `#{d}`\n" }
  md << "\n## Tools\n\n```\n#{sh.("valgrind", "--version")}\n#{sh.("hyperfine", "--version")}\n#{sh.("gnuplot", "--version")}\n#{sh.("objdump", "--version").lines.first.strip}\n```\n\n"
  md << "## Load during the run\n\n```\n#{sh.("uptime")}\n```\n\nOther processes may share the 2 cores; wall times are medians of "
  md << "interleaved runs and should be read as ratios. Instruction counts do not depend on load.\n"
  File.write(File.join(OUT, "machine.md"), md)
end

def commands_md
  md = +"# Commands\n\nThe whole session:\n\n```\n"
  md << "benchmark/run --ruby #{rel(RUBY)} --ruby-src #{rel(SRC)} --out #{rel(OUT)}#{QUICK ? " --quick" : ""}\n```\n\n"
  md << "(`make bench` runs the same.) `$WORK` is `#{rel(WORK)}`: the extensions are built there with the custom "
  md << "Ruby's mkmf (`benchmark/newobj_sampler`, `benchmark/callgrind_probe`), and memory_profiler is unpacked there "
  md << "from Debian's `ruby-memory-profiler` (`apt-get download` + `dpkg -x`). Each measurement below can be run on its own.\n\n"
  md << "Instruction counts: `Collected :` on valgrind's stderr; only the region inside `CallgrindProbe.collect` is counted "
  md << "(`--collect-atstart=no`). Wall: hyperfine, one run per configuration per round, order shuffled each round.\n\n```sh\n"
  md << COMMANDS.join("\n\n") << "\n```\n"
  File.write(File.join(OUT, "commands.md"), md)
end

# results.md in two layers.  The *_data functions compute each section from
# CG_RESULTS and WALL into plain data (numbers, labels, rows; nil when the
# section's runs are missing); the render_* functions turn that data into
# markdown, every table through md_table.

MICRO_TARGETS = { "stopped" => 0.001, "s512k" => 0.002, "s32k" => 0.01, "s4k" => 0.025 } # overhead vs default (issue 19)
BT_KEYS = %w[builtin default stopped s4k s32k s512k s4m n32k n512k trace]

def verdict(ok) = ok ? "PASS" : "MISS"

# -- computing --

def header_data(plots)
  kept = %w[callgrind cycles wall pairs].reject { |ph| PHASES.include?(ph) }.map do |ph|
    f = File.join(WORK, "#{ph}.json")
    [ph, File.exist?(f) ? File.mtime(f).utc : nil]
  end
  { quick: QUICK, report_only: REPORT_ONLY, at: Time.now.utc, minutes: ((Time.now - T_START) / 60).round(1),
    libs_changed: !REPORT_ONLY && lib_digests != LIBS_AT_START, measured: PHASES, kept: kept, plots: plots }
end

def micro_data
  base = cg("micro-default")&.dig(:ir) or return nil
  rows = CONFIGS.filter_map do |c|
    r = cg("micro-#{c.key}") or next
    s = r[:metrics][:samples]
    ratio = r[:ir].to_f / base
    target = MICRO_TARGETS[c.key]
    { key: c.key, label: c.label, ir: r[:ir], ratio: ratio, gcs: r[:metrics][:gc_count], samples: s,
      per_sample: s && s > 0 ? ((r[:ir] - base).to_f / s).round : nil, target: target,
      verdict: if target then verdict(ratio - 1 <= target)
               elsif c.key.start_with?("n") then "(expected tens of %)"
               else ""
               end }
  end
  mp = cg("microsmall-memprof")
  m0 = cg("microsmall-default")
  functions = %w[s4k s32k s512k s4m].filter_map do |k|
    r = cg("micro-#{k}") or next
    f = r[:functions] || {}
    s = r[:metrics][:samples].to_i
    totals = [f["sampling_take"], f["sampling_frames_capture"], f["sampling_take"].to_i - f["sampling_frames_capture"].to_i,
              f["sampling_marks_finished"], f["sampling_mark_roots"], DIRECT.sum { |x| f[x].to_i }]
    { label: C[k].label, samples: s, per_sample: totals.map { |x| s > 0 ? (x.to_f / s).round : nil } }
  end
  { n: CG_N, objects: CG_N * 9, slot_bytes: CG_N * 1520, rows: rows,
    memprof: mp && m0 ? { n: CG_N_MEMPROF, ir: mp[:ir], ratio: mp[:ir].to_f / m0[:ir] } : nil,
    newobj_32k: (nk = cg("micro-n32k")) ? nk[:ir].to_f / base : nil,
    functions: functions }
end

# Per-sample cost at each depth.  The NEWOBJ peer's samples cost on top of
# its hook: the hook's per-allocation cost comes from the 4 MiB run (almost
# no samples) against default, and is taken out of the 4 KiB-fixed run.
def depth_data
  return nil unless cg("depth8-stopped")
  allocations = CG_N * 9
  hook = (n4m = cg("micro-n4m")) && (m0 = cg("micro-default")) ? (n4m[:ir] - m0[:ir]).to_f / allocations : nil
  rows = DEPTHS.filter_map do |d|
    s0 = cg("depth#{d}-stopped"); s1 = cg("depth#{d}-sampling"); d0 = cg("depth#{d}-default"); n1 = cg("depth#{d}-newobj")
    next unless s0 && s1
    n = s1[:metrics][:samples].to_i
    per = (s1[:ir] - s0[:ir]).to_f / n
    f = s1[:functions] || {}
    nper = n1 && d0 ? (n1[:ir] - d0[:ir]).to_f / n1[:metrics][:samples].to_i : nil
    { depth: d, frames: s1[:metrics][:frames] || d, samples: n, per_sample: per, direct: DIRECT.sum { |x| f[x].to_i } / n.to_f,
      bound: d == 128 ? 2500 : nil, verdict: d == 128 ? verdict(per <= 2500) : "",
      peer_per_sample: nper && hook ? nper - hook * allocations / n1[:metrics][:samples].to_f : nil, peer_hook: hook }
  end
  { n: CG_N, rows: rows }
end

def liveness_data
  return nil unless (l0 = cg("live-none")) && (l1 = cg("live-sampled"))
  live = l1[:metrics][:sampler_live].to_i
  f = l1[:functions] || {}
  { kept: LIVE, loops: GC_LOOPS, live: live, ir_none: l0[:ir], ir_sampled: l1[:ir],
    per_record: (l1[:ir] - l0[:ir]).to_f / GC_LOOPS / live,
    walk_per_record: f["sampling_marks_finished"].to_f / GC_LOOPS / [live, 1].max,
    mark_roots_per_gc: (f["sampling_mark_roots"].to_f / GC_LOOPS).round,
    ratio: l1[:ir].to_f / l0[:ir],
    running_per_record: (l2 = cg("live-running")) && (l2[:ir] - l0[:ir]).to_f / GC_LOOPS / live,
    growing_per_record: (g0 = cg("live-growing-none")) && (l3 = cg("live-growing")) && (l3[:ir] - g0[:ir]).to_f / GC_LOOPS / live,
    per_death: (d0 = cg("die-none")) && (d1 = cg("die-sampled")) && (d1[:ir] - d0[:ir]).to_f / live }
end

def bt_data
  b0 = cg("bt-default") or return nil
  rows = BT_KEYS.filter_map do |k|
    r = cg("bt-#{k}") or next
    { key: k, label: C[k].label, ir: r[:ir], ratio: r[:ir].to_f / b0[:ir], gcs: r[:metrics][:gc_count], samples: r[:metrics][:samples] }
  end
  { depth: CG_BT_DEPTH, rows: rows }
end

def wall_data
  return nil if WALL.empty?
  keys = CONFIGS.map(&:key).select { |k| WALL.values.any? { |w| w[:configs].include?(k) } }
  workloads = WALL.map do |wk, w|
    b = median(w[:times]["default"])
    rows = w[:configs].map do |k|
      t = w[:times][k]
      m = w[:metrics][k] || []
      { key: k, label: C[k].label, runs: t.size, median: median(t), ratio: median(t) / b,
        gc_time_ms: median(m.map { |x| x[:gc_time_ms] }), gcs: median(m.map { |x| x[:gc_count] }),
        peak_rss_mb: (median(m.map { |x| x[:maxrss_kb] }).to_f / 1024).round(1),
        samples: median(m.map { |x| x[:samples] }), samples_per_s: median(m.map { |x| x[:samples_per_s] }) }
    end
    { key: wk, label: w[:label], ratios: keys.map { |k| w[:configs].include?(k) && b ? median(w[:times][k]) / b : nil }, rows: rows }
  end
  bt = WALL["binary_trees"]
  gc_ms = ->(k) { median(bt[:metrics][k].map { |x| x[:gc_time_ms] }) }
  { columns: keys.map { |k| C[k].label }, workloads: workloads,
    bt_gc: bt && { default: gc_ms.("default"), sampling: %w[stopped s4k s32k s512k s4m].map { |k| [C[k].label, gc_ms.(k)] } } }
end

# The PyPy paper (allocation sampling in PyPy's GC, GCBench): 32 KB period
# 3.88x, normalised to 1000 samples/s 1.07x, 4 MB period at most 1.25x.
def pypy_data
  wall = (bt = WALL["binary_trees"]) && %w[s32k s4m].map { |k|
    r = median(bt[:times][k]) / median(bt[:times]["default"])
    sps = median(bt[:metrics][k].map { |x| x[:samples_per_s] }).to_f
    { interval: IV_LABEL[k[1..]], ratio: r, samples_per_s: sps, normalised: sps > 0 ? 1 + (r - 1) * 1000 / sps : nil }
  }
  { wall: wall, instructions_32k: (b0 = cg("bt-default")) && (b1 = cg("bt-s32k")) ? b1[:ir].to_f / b0[:ir] : nil }
end

# Every target in the order of the sections; measured is [format, values...].
def targets_data(micro, depth, liveness, cycles = nil, pairs = nil)
  t = []
  micro&.dig(:rows)&.each do |r|
    t << { name: "micro instructions, #{r[:label]}", bound: "within #{(r[:target] * 100).round(1)}%", measured: [:pct, r[:ratio]], result: r[:verdict] } if r[:target]
  end
  cycles&.dig(:rows)&.each do |r|
    if (b = CYCLE_TARGETS[r[:key]])
      t << { name: "micro cycle estimate, #{r[:label]}", bound: "within #{(b * 100).round(1)}%", measured: [:pct_nob, r[:ratio], r[:ratio_nob], r[:vs_stopped], r[:vs_stopped_nob]],
             result: verdict(r[:ratio] - 1 <= b) + (r[:ratio] - 1 <= b || r[:ratio_nob] - 1 > b ? "" : " (PASS without Bim)") }
    end
    next unless %w[stopped default].include?(r[:key]) && r[:vs_builtin]
    t << { name: "micro, #{r[:label]} against the built-in GC, instructions and cycle estimate", bound: "within 1%",
           measured: [:vs_builtin, r[:ir].to_f / cycles[:rows].find { _1[:key] == "builtin" }[:ir], r[:vs_builtin], r[:vs_builtin_nob]],
           result: verdict([r[:ir].to_f / cycles[:rows].find { _1[:key] == "builtin" }[:ir], r[:vs_builtin]].all? { _1 - 1 <= 0.01 }) }
  end
  pairs&.dig(:rows)&.each do |r|
    case r[:key]
    when "s4k" then t << { name: "micro wall (pairs), #{r[:label]}", bound: "median within 3%", measured: [:range, r[:median], r[:min], r[:max]], result: verdict(r[:median] <= 1.03) }
    when "s512k" then t << { name: "micro wall (pairs), #{r[:label]}", bound: "indistinguishable from default", measured: [:range, r[:median], r[:min], r[:max]],
                             result: if r[:min] <= 1.0 && r[:max] >= 1.0 then "PASS (range holds 1)"
                                     elsif r[:max] < 1.0 then "faster than default (range below 1)"
                                     else "MISS (range above 1)"
                                     end }
    end
  end
  if micro && micro[:newobj_32k]
    t << { name: "NEWOBJ hook sampler (32 KiB), micro instructions", bound: "tens of %", measured: [:pct, micro[:newobj_32k]], result: "" }
  end
  if (r = depth&.dig(:rows)&.find { |x| x[:depth] == 128 })
    t << { name: "per-sample cost at depth 128", bound: "<= 2,500 Ir", measured: [:int, r[:per_sample]], result: r[:verdict] }
  end
  if liveness
    t << { name: "liveness, per GC per live record", bound: "(report)", measured: [:ir1, liveness[:per_record]], result: "" }
  end
  if (bt = WALL["binary_trees"])
    r32 = median(bt[:times]["s32k"]) / median(bt[:times]["default"])
    t << { name: "binary_trees wall, sampling 32 KiB", bound: "<= 1.01x", measured: [:fx, r32], result: verdict(r32 <= 1.01) }
    if (i0 = cg("bt-stopped")) && (i1 = cg("bt-s32k")) && (i2 = cg("bt-default"))
      vs_default = i1[:ir].to_f / i2[:ir]
      t << { name: "(binary_trees instructions, 32 KiB, depth #{CG_BT_DEPTH})", bound: "<= 1.01x",
             measured: [:fx_vs, vs_default, i1[:ir].to_f / i0[:ir]], result: verdict(vs_default <= 1.01) }
    end
  end
  t
end

def results_data(plots)
  micro = micro_data
  depth = depth_data
  liveness = liveness_data
  cycles = cycles_data
  pairs = pairs_data
  { header: header_data(plots), micro: micro, cycles: cycles, depth: depth, liveness: liveness, bt: bt_data, wall: wall_data,
    pairs: pairs, failures: FAILURES.dup, targets: targets_data(micro, depth, liveness, cycles, pairs), pypy: pypy_data }
end

CYCLE_TARGETS = { "s4k" => 0.03, "s32k" => 0.01, "s512k" => 0.002 } # cycle estimate over default

def cycle_parts(t)
  { ir: t["Ir"], l1: t["I1mr"] + t["D1mr"] + t["D1mw"], ll: t["ILmr"] + t["DLmr"] + t["DLmw"], bcm: t["Bcm"], bim: t["Bim"],
    est: cycle_estimate(t), nob: cycle_estimate(t, indirect: false) }
end

def cycles_data
  base = CYC_RESULTS["default"] or return nil
  b = cycle_parts(base["totals"])
  bi = CYC_RESULTS["builtin"] && cycle_parts(CYC_RESULTS["builtin"]["totals"])
  st = CYC_RESULTS["stopped"] && cycle_parts(CYC_RESULTS["stopped"]["totals"])
  rows = CYCLE_KEYS.filter_map do |k|
    r = CYC_RESULTS[k] or next
    p = cycle_parts(r["totals"])
    p.merge(key: k, label: C[k].label, samples: r["metrics"]["samples"], gcs: r["metrics"]["gc_count"],
            ratio_ir: p[:ir].to_f / b[:ir], ratio: p[:est].to_f / b[:est], ratio_nob: p[:nob].to_f / b[:nob],
            vs_builtin: bi && p[:est].to_f / bi[:est], vs_builtin_nob: bi && p[:nob].to_f / bi[:nob],
            vs_stopped: st && k.start_with?("s") && p[:est].to_f / st[:est], vs_stopped_nob: st && k.start_with?("s") && p[:nob].to_f / st[:nob])
  end
  sampler = %w[s4k s32k s512k s4m].filter_map do |k|
    r = CYC_RESULTS[k] or next
    s = r["metrics"]["samples"].to_i
    fns = SAMPLER_FUNCTIONS.filter_map do |f|
      h = r["functions"]["sampler"][f] or next
      p = cycle_parts(h)
      p.merge(name: f, per_sample: s > 0 ? p[:est].to_f / s : nil, per_sample_ir: s > 0 ? p[:ir].to_f / s : nil)
    end
    { label: C[k].label, samples: s, fns: fns }
  end
  # where a configuration's cycles differ from default's: exclusive costs by
  # function, the largest differences of the estimate without Bim
  diffs = %w[builtin stopped s4k].filter_map do |k|
    r = CYC_RESULTS[k] or next
    a = base["functions"]["exclusive"]; x = r["functions"]["exclusive"]
    zero = CYCLE_EVENTS.to_h { [_1, 0] }
    by_fn = (a.keys | x.keys).map do |f|
      pa = cycle_parts(a[f] || zero); px = cycle_parts(x[f] || zero)
      { name: f, **%i[ir l1 ll bcm bim est nob].to_h { |m| [m, px[m] - pa[m]] } }
    end
    { label: C[k].label, rows: by_fn.sort_by { -_1[:nob].abs }.first(10) }
  end
  { n: CG_N, rows: rows, sampler: sampler, diffs: diffs }
end

def pairs_data
  d = PAIRS_DATA or return nil
  rows = PAIR_KEYS.filter_map do |k|
    pr = d["pairs"][k] or next
    r = pr["ratios"]
    next if r.empty?
    { key: k, label: C[k].label, rounds: r.size, median: median(r), min: r.min, max: r.max,
      seconds: median(pr["times"]), default_seconds: median(pr["default"]) }
  end
  { n: d["n"], rounds: d["rounds"], load: d["load"], rows: rows }
end

def render_cycles(d)
  md = +"## 1b. Allocation micro-benchmark, cycle estimate (callgrind, cache and branch simulation)\n\n"
  md << "The runs of section 1 (ALLOC_MICRO_N=#{num(d[:n])}) again with `--cache-sim=yes --branch-sim=yes`. "
  md << "Estimate = Ir + 10 x (I1mr + D1mr + D1mw) + 100 x (ILmr + DLmr + DLmw) + 10 x (Bcm + Bim): "
  md << "an L1 miss costs 10, a last-level miss 100, a mispredicted branch 10. \"without Bim\" drops the indirect-branch "
  md << "mispredictions: valgrind predicts an indirect branch with a 512-entry table indexed by the low 9 bits of its "
  md << "address, untagged, so a PLT stub in a GC library and a jump through gc.c's function table 512 bytes apart evict "
  md << "each other on every call (hundreds of thousands of mispredictions here that move with the link layout, not "
  md << "with the code run); a real core's branch target buffer is tagged and thousands of entries deep.\n\n"
  rows = d[:rows].map do |r|
    [r[:label], num(r[:ir]), pct(r[:ratio_ir]), num(r[:l1]), num(r[:ll]), num(r[:bcm]), num(r[:bim]), num(r[:est]), pct(r[:ratio]),
     num(r[:nob]), pct(r[:ratio_nob]), blank(r[:vs_builtin]) { pct(_1) }, blank(r[:vs_builtin_nob]) { pct(_1) },
     r[:vs_stopped] ? pct(r[:vs_stopped]) : "", r[:vs_stopped_nob] ? pct(r[:vs_stopped_nob]) : ""]
  end
  md << md_table(["configuration", "instructions", "vs default", "L1 misses", "LL misses", "cond. mispredicts", "indirect mispredicts",
                  "estimate", "vs default", "estimate without Bim", "vs default", "estimate vs built-in", "without Bim vs built-in",
                  "estimate vs stopped", "without Bim vs stopped"],
                 "lrrrrrrrrrrrrrr", rows)
  md << "\n`default` is Ruby's own library and pays the modular tax (gc.c's helpers called through the PLT, see "
  md << "`gc/sampling/shared_object.h`); the sampling library no longer does, so against `default` it starts below zero. "
  md << "What the sampler itself costs is the column against `sampling, stopped`.\n"
  md << "\n### Where the sampler's cycles go (inclusive, per sample)\n\n"
  rows = d[:sampler].flat_map do |s|
    s[:fns].map do |f|
      [s[:label], f[:name], num(s[:samples]), blank(f[:per_sample_ir]) { num(_1.round) }, blank(f[:per_sample]) { num(_1.round) },
       num(f[:l1]), num(f[:ll]), num(f[:bcm]), num(f[:bim])]
    end
  end
  md << md_table(["configuration", "function", "samples", "Ir / sample", "estimate / sample", "L1 misses", "LL misses", "cond. mispredicts",
                  "indirect mispredicts"], "llrrrrrrr", rows)
  d[:diffs].each do |x|
    md << "\n### #{x[:label]} against default, by function (exclusive, largest differences of the estimate without Bim)\n\n"
    md << md_table(["function", "Ir", "L1 misses", "LL misses", "cond. mispredicts", "indirect mispredicts", "estimate", "estimate without Bim"],
                   "lrrrrrrr", x[:rows].map { |r| [r[:name], *%i[ir l1 ll bcm bim est nob].map { |m| (r[m] < 0 ? "-" : "+") + num(r[m].abs) }] })
  end
  md << "\n"
end

def render_pairs(d)
  md = +"## 5b. Wall time in pairs (micro-benchmark, ALLOC_MICRO_N=#{num(d[:n])})\n\n"
  md << "Whole process (boot included). Each configuration runs back to back with `default`, #{d[:rounds]} rounds, the pairs "
  md << "in a shuffled order each round and `default` first or second at random; the ratio is taken within each pair, "
  md << "so a neighbour that slows the machine for a while slows both halves alike. Load average at the end: #{d[:load]}.\n\n"
  md << "**The machine was busy (load average over 1): these ratios are not reliable.**\n\n" if d[:load].to_f > 1
  md << md_table(["configuration", "pairs", "median ratio to default", "min", "max", "median s", "default median s"], "lrrrrrr",
                 d[:rows].map { |r| [r[:label], r[:rounds], fx(r[:median]), fx(r[:min]), fx(r[:max]), format("%.3f", r[:seconds]), format("%.3f", r[:default_seconds])] })
  md << "\n"
end

# -- rendering --

# align: one letter a column, "l" or "r".
def md_table(header, align, rows)
  line = ->(cells) { "| #{cells.join(" | ")} |\n" }
  line.(header) + "|#{align.chars.map { |a| a == "r" ? "---:" : "---" }.join("|")}|\n" + rows.map(&line).join
end

def blank(x) = x.nil? ? "" : yield(x)

def measured(kind, *v)
  case kind
  when :pct then pct(v[0])
  when :int then num(v[0].round)
  when :ir1 then "#{v[0].round(1)} Ir"
  when :fx then fx(v[0])
  when :fx_vs then "#{fx(v[0])} vs default, #{fx(v[1])} vs stopped"
  when :pct_nob then "#{pct(v[0])} (without Bim #{pct(v[1])})#{v[2] ? "; the sampler alone, vs stopped: #{pct(v[2])} (without Bim #{pct(v[3])})" : ""}"
  when :vs_builtin then "instructions #{pct(v[0])}, estimate #{pct(v[1])} (without Bim #{pct(v[2])})"
  when :range then "#{fx(v[0])} (#{fx(v[1])} to #{fx(v[2])})"
  end
end

PLOT_LINKS = { "overhead-instructions.png" => "instructions", "overhead-wall.png" => "wall time" }

def render_header(h)
  md = +"# Overhead of the sampling GC, side by side with its peers\n\n"
  md << if h[:report_only]
          "Rendered by `benchmark/run --report-only#{h[:quick] ? " --quick" : ""}` on #{h[:at].iso8601} from the results saved in the work dir "
        else
          "Generated by `benchmark/run#{h[:quick] ? " --quick" : ""}` on #{h[:at].iso8601} in #{h[:minutes]} min "
        end
  plots = h[:plots].map { |f| "[#{PLOT_LINKS[f] || f}](#{f})" }
  md << "(machine: [machine.md](machine.md), commands: [commands.md](commands.md), fast path: [fastpath.md](fastpath.md)"
  md << ", plots: #{plots.join(", ")}" unless plots.empty?
  md << "). Ratios are to `RUBY_GC_LIBRARY=default`. Sampling runs use `mode: :poisson, seed: 1`, depth 128, unless stated.\n\n"
  md << "**Warning: a GC library was rebuilt during this run; numbers mix two builds.**\n\n" if h[:libs_changed]
  unless h[:kept].empty?
    kept = h[:kept].map { |ph, at| "#{ph} (from #{at ? at.iso8601 : "nothing: not run"})" }
    md << "This run measured #{h[:measured].empty? ? "nothing" : "#{h[:measured].join(", ")} only"}; kept from an earlier run: #{kept.join(", ")}.\n\n"
  end
  md
end

def render_micro(d)
  md = +"## 1. Allocation micro-benchmark, instructions (callgrind)\n\n"
  md << "`alloc_micro.rb`, ALLOC_MICRO_N=#{num(d[:n])} (#{num(d[:objects])} objects, #{num(d[:slot_bytes])} slot bytes); only the workload "
  md << "region is counted (Ruby's boot is not).\n\n"
  rows = d[:rows].map do |r|
    [r[:label], num(r[:ir]), pct(r[:ratio]), r[:gcs], blank(r[:samples]) { num(_1) }, blank(r[:per_sample]) { num(_1) },
     blank(r[:target]) { "within #{(_1 * 100).round(1)}%" }, r[:verdict]]
  end
  if (m = d[:memprof])
    rows << ["memory_profiler (N=#{num(m[:n])}, vs default at that N)", num(m[:ir]), pct(m[:ratio]), "", "", "", "", ""]
  end
  md << md_table(["configuration", "instructions", "vs default", "GCs", "samples", "Ir/sample over default", "target", "result"], "lrrrrrll", rows)
  md << "\nThe GC count column matters: a change in GC timing shows there first; those GCs are in the totals. "
  md << "The direct cost of the sampler's own code is in section 2.\n\n"

  md << "### Where the sampler's instructions go (inclusive, callgrind_annotate)\n\n"
  md << "Per sample, inclusive: `sampling_take` is the whole sample (pop the slot, draw the next gap, capture the stack, store the record); "
  md << "the stack capture is `frames_capture`, the rest (point, gap, record) is inlined into `sampling_take`; "
  md << "`marks_finished` is the end-of-marking walk over live records, `mark_roots` the marking of held classes and frames.\n\n"
  md << md_table(["configuration", "samples", "sampling_take", "of which frames_capture", "of which the rest", "marks_finished", "mark_roots", "direct total / sample"],
                 "lrrrrrrr", d[:functions].map { |r| [r[:label], num(r[:samples]), *r[:per_sample].map { |x| blank(x) { num(_1) } }] })
  md << "\n"
end

def render_depth(d)
  md = +"## 2. Per-sample cost by stack depth (instructions)\n\n"
  md << "`alloc_micro.rb` at ALLOC_MICRO_N=#{num(d[:n])} run under a recursion wrapper so that a sample in a C method has the given "
  md << "number of frames; `interval: 4096, mode: :fixed, depth: 128`. Cost = (Ir sampled - Ir stopped at the same depth) / samples; "
  md << "it includes every consequence of a sample (the miss, stack capture, record, liveness checks, and any GC-timing shift). "
  md << "\"direct\" counts only the sampler's functions (inclusive). The NEWOBJ peer is measured the same way against `default` "
  md << "(its cost per sample excludes its per-allocation hook cost, shown separately).\n\n"
  rows = d[:rows].map do |r|
    [r[:depth], r[:frames], num(r[:samples]), num(r[:per_sample].round), num(r[:direct].round), blank(r[:bound]) { "<= #{num(_1)}" }, r[:verdict],
     blank(r[:peer_per_sample]) { num(_1.round) }, blank(r[:peer_hook]) { _1.round(1) }]
  end
  md << md_table(["depth", "frames seen", "samples", "cost / sample", "direct / sample", "target", "result", "NEWOBJ peer: cost / sample",
                  "NEWOBJ peer: hook cost / allocation"], "rrrrrllrr", rows)
  md << "\n"
end

def render_liveness(d)
  md = +"## 3. GC-time cost of liveness tracking\n\n"
  md << "#{num(d[:kept])} objects kept alive, every one sampled (`interval: 1, mode: :fixed, max_samples: #{num(d[:kept])}`) against the same "
  md << "program with the sampler loaded but not started; then #{d[:loops]} `GC.start(full_mark: false)` are counted.\n\n"
  md << md_table(["", "instructions for #{d[:loops]} minor GCs", "per GC"], "lrr",
                 [["no live samples", num(d[:ir_none]), num(d[:ir_none] / d[:loops])],
                  ["#{num(d[:live])} live samples", num(d[:ir_sampled]), num(d[:ir_sampled] / d[:loops])]])
  md << "\n**#{d[:per_record].round(1)} instructions per GC per live record** (difference of totals); the liveness walk itself "
  md << "(`sampling_marks_finished`, inclusive) is #{d[:walk_per_record].round(1)} per GC per record; marking the distinct classes and frames "
  md << "(`sampling_mark_roots`) is #{num(d[:mark_roots_per_gc])} per GC in total. A minor GC of this heap costs "
  md << "#{num(d[:ir_none] / d[:loops])} instructions without samples, so #{num(d[:live])} live records add #{pct(d[:ratio])}.\n\n"
  if d[:running_per_record]
    md << "With the sampler running through the same GCs (each GC also appends a timeline row and checks the peak): "
    md << "**#{d[:running_per_record].round(1)} per GC per live record**.\n\n"
  end
  if d[:growing_per_record]
    md << "The same, one more object kept before each GC, so that every GC finds a new peak (a heap that grows at every GC), "
    md << "against the same program unsampled: **#{d[:growing_per_record].round(1)} per GC per live record**.\n\n"
  end
  if d[:per_death]
    md << "A death (the #{num(d[:live])} kept objects dropped, one full GC finding them dead, against the same program unsampled): "
    md << "**#{d[:per_death].round(1)} instructions per dead record**, its lifetime counted into its site included.\n\n"
  end
  md
end

def render_bt(d)
  md = +"## 4. binary_trees, instructions (callgrind, depth #{d[:depth]})\n\n"
  md << md_table(["configuration", "instructions", "vs default", "GCs", "samples"], "lrrrr",
                 d[:rows].map { |r| [r[:label], num(r[:ir]), pct(r[:ratio]), r[:gcs], blank(r[:samples]) { num(_1) }] })
  md << "\n"
end

def render_wall(d)
  md = +"## 5. Wall time (hyperfine, interleaved rounds, medians)\n\n"
  md << "Whole process (boot included), one run per configuration per round with the order shuffled each round. "
  md << "Ratio = median / median of default. memory_profiler runs once.\n\n"
  md << md_table(["workload", *d[:columns]], "l" + "r" * d[:columns].size,
                 d[:workloads].map { |w| [w[:label], *w[:ratios].map { |r| blank(r) { fx(_1) } }] })
  md << "\n"
  d[:workloads].each do |w|
    md << "### #{w[:label]}\n\n"
    rows = w[:rows].map do |r|
      [r[:label], r[:runs], format("%.3f", r[:median]), fx(r[:ratio]), r[:gc_time_ms], r[:gcs], r[:peak_rss_mb],
       blank(r[:samples]) { num(_1.round) }, blank(r[:samples_per_s]) { num(_1.round) }]
    end
    md << md_table(["configuration", "runs", "median s", "vs default", "GC time ms", "GCs", "peak RSS MB", "samples", "samples/s"], "lrrrrrrrr", rows)
    md << "\n"
  end
  if (g = d[:bt_gc])
    md << "GC pause impact on binary_trees (GC.stat(:time), median ms): default #{g[:default]}"
    g[:sampling].each { |label, ms| md << ", #{label} #{ms}" }
    md << ".\n\n"
  end
  md
end

def render_pypy(d)
  md = +"- **PyPy comparison.** PyPy's GC-integrated allocation sampler reported on GCBench: 3.88x at a 32 KB period, "
  md << "1.07x normalised to 1000 samples/s, at most 1.25x at a 4 MB period. The closest workload here is binary_trees "
  md << "(GCBench-like tree building)"
  if d[:wall]
    md << ": " + d[:wall].map { |w|
      "#{w[:interval]}: #{fx(w[:ratio])} wall at #{num(w[:samples_per_s].round)} samples/s (normalised to 1000 samples/s: #{fx(w[:normalised])})"
    }.join("; ")
  end
  md << "; in instructions at 32 KiB #{fx(d[:instructions_32k])}" if d[:instructions_32k]
  md << ". Wall ratios within a few percent are at the noise floor of this shared machine; the instruction counts are exact.\n"
end

def render_results(d)
  md = render_header(d[:header])
  md << render_micro(d[:micro]) if d[:micro]
  md << render_cycles(d[:cycles]) if d[:cycles]
  md << render_depth(d[:depth]) if d[:depth]
  md << render_liveness(d[:liveness]) if d[:liveness]
  md << render_bt(d[:bt]) if d[:bt]
  md << render_wall(d[:wall]) if d[:wall]
  md << render_pairs(d[:pairs]) if d[:pairs]
  md << "## Failed runs\n\n" + d[:failures].map { |f| "- #{f}\n" }.join + "\n" unless d[:failures].empty?
  md << "## Targets\n\n"
  md << md_table(%w[target bound measured result], "llll", d[:targets].map { |t| [t[:name], t[:bound], measured(*t[:measured]), t[:result]] })
  md << "\n## Notes\n\n" << render_pypy(d[:pypy]) << NOTES
end

def results_phase(plots)
  File.write(File.join(OUT, "results.md"), render_results(results_data(plots)))
end

NOTES = <<~MD
  - **Baselines.** `built-in GC` is Ruby's statically linked GC; `default` is the same collector loaded as a modular
    library (calls go through a function table), the like-for-like baseline for `sampling`, which is `default` plus
    the sampler. The peers (`NEWOBJ hook`, `trace_object_allocations`, `memory_profiler`) run on `default`.
  - **NEWOBJ hook** is `benchmark/newobj_sampler`: an internal NEWOBJ tracepoint that charges each object's slot
    size to an exponential countdown with the same mean as the sampler and records `rb_profile_frames` (frames and
    lines) at a sample, the design of dd-trace-rb, stackprof and vernier. Its cost is mostly per allocation (the VM
    calls the hook for every object), so it barely depends on the interval.
  - **No GC timing shift from samples.** A sample is taken before `newobj_cache_miss`'s incremental marking
      step (patch 0001): the step budget counts the sampled slot like any other, so samples add no marking steps
      and on the micro-benchmark every configuration runs the same number of GCs (27 in the run this was written for).  (An earlier build took the sample after
      the step, and 4 KiB ran 33 GCs instead of 27.)
  - **GC-timing sensitivity.** Loading the sampling library changes Ruby's boot by a few dozen objects (its Ruby
    API is defined at boot), which is enough to move GC trigger points: on binary_trees the stopped sampler can run a
    noticeably different number of GCs from `default` (compare the GC columns). Treat instruction differences of
    a percent or two on the real programs as GC-timing noise, and compare sampling runs with `sampling, stopped`
    there.
  - **Callgrind runs** count the workload region only (`CallgrindProbe.collect`, `--collect-atstart=no`), so Ruby's
    boot, which no configuration changes, does not dilute the ratios.
MD

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
