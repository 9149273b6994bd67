# bench_instructions.rb: phases 1 and 1b of bench.rb: instructions
# (callgrind over the workload region) and the cycle estimate (callgrind
# with cache and branch simulation), run in parallel jobs; the sampler's
# functions from callgrind_annotate.  Loaded by bench.rb after its
# options and configurations, whose constants it uses.

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
  vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no", *VG_YJIT, "--callgrind-out-file=#{outfile}"]
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

YJIT_KEYS = %w[builtin default stopped s4k s32k s512k s4m]

def callgrind_phase(dry: false)
  jobs = []
  micro = { "ALLOC_MICRO_N" => CG_N.to_s }
  CONFIGS.each do |c|
    next if c.key == "memprof"
    next if YJIT && !YJIT_KEYS.include?(c.key)
    jobs << callgrind_job("micro-#{c.key}", c, MICRO, micro, annotate: c.key.match?(/\As\d/))
  end
  # With YJIT what changes is the mutator's speed: the micro-benchmark
  # under each GC configuration says what the sampler costs then.  The
  # peers, liveness and binary_trees measure the collector's side; the
  # depth runs are left out because YJIT did not reliably compile their
  # loop under valgrind (at depth 64 the stopped run stayed in the
  # interpreter and the sampled one did not, a 56 M-instruction gap).
  if YJIT
    return jobs.each { |j| run_callgrind(j, dry: true) } if dry
    log "callgrind (YJIT): #{jobs.size} runs, #{JOBS} at a time"
    run_parallel(jobs)
    File.write(File.join(WORK, "callgrind.json"), JSON.pretty_generate(CG_RESULTS))
    return
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
    jobs << callgrind_job("depth#{d}-sampling", cfg("f4k", "sampling fixed 4 KiB", SAMPLING_LIB, "sampler:4096:fixed:128"), MICRO, e, annotate: true)
    jobs << callgrind_job("depth#{d}-default", C["default"], MICRO, e)
    jobs << callgrind_job("depth#{d}-newobj", cfg("nf4k", "NEWOBJ fixed 4 KiB", "default", "newobj:4096:fixed:128"), MICRO, e)
  end
  # liveness: LIVE sampled objects alive through GC_LOOPS minor GCs
  live = { "BENCH_KEEP_LIVE" => LIVE.to_s, "BENCH_GC_LOOPS" => GC_LOOPS.to_s, "BENCH_MAX_SAMPLES" => LIVE.to_s }
  jobs << callgrind_job("live-none", C["stopped"], MICRO, live)
  jobs << callgrind_job("live-sampled", cfg("live", "sampling, every object", SAMPLING_LIB, "sampler:1:fixed"), MICRO, live, annotate: true)
  # the same with the sampler running (a timeline row and a peak check a
  # GC); and the cost of a death: the kept objects dropped, one full GC
  jobs << callgrind_job("live-running", cfg("live", "sampling, every object", SAMPLING_LIB, "sampler:1:fixed"), MICRO,
                        live.merge("BENCH_KEEP_SAMPLING" => "1"), annotate: true)
  grow = live.merge("BENCH_KEEP_SAMPLING" => "1", "BENCH_GROW" => "1", "BENCH_MAX_SAMPLES" => (2 * LIVE).to_s)
  jobs << callgrind_job("live-growing-none", C["stopped"], MICRO, grow)
  jobs << callgrind_job("live-growing", cfg("live", "sampling, every object", SAMPLING_LIB, "sampler:1:fixed"), MICRO, grow)
  drop = live.merge("BENCH_DROP_LIVE" => "1")
  jobs << callgrind_job("die-none", C["stopped"], MICRO, drop)
  jobs << callgrind_job("die-sampled", cfg("live", "sampling, every object", SAMPLING_LIB, "sampler:1:fixed"), MICRO, drop)
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
  vg = ["valgrind", "--tool=callgrind", "--collect-atstart=no", *VG_YJIT, "--cache-sim=yes", "--branch-sim=yes", "--callgrind-out-file=#{outfile}"]
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
