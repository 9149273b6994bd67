# driver.rb: ruby-bench's gem-free benchmarks under every GC configuration.
#
#   ruby driver.rb --ruby RUBY --ruby-bench DIR --out FILE [--work DIR]
#                  [--rounds N] [--only a,b] [--yjit off,on] [--smoke]
#                  [--scale F] [--lib NAME] [--commit SHA] [--report-only]
#                  [--perturb K]
#
# benchmark/rubybench/run is the entry point (it fetches ruby-bench); see
# benchmark/README.md.  Each run is one process:
#
#   ruby [--yjit] -I harness/ -r start_sampler.rb DIR/benchmarks/X
#
# with our harness/harness.rb standing in for ruby-bench's (warmup
# iterations, then timed ones, in-process; one JSON line out).  Round by
# round, every benchmark runs under every configuration, YJIT off and on,
# in an order shuffled per benchmark and round, so a busy neighbour or a
# slow spell of the machine hits all configurations of a benchmark alike.
# The raw results go to WORK/rubybench.jsonl (one line a run); the report
# (medians, min-max ranges, ratios to `default`, geometric means, the
# targets, every benchmark beyond 3% with its allocation profile) to --out.
# --report-only re-renders the report from that file.
#
# --perturb K: round r starts every run with (r - 1) * K small objects of
# each of the first heaps kept alive (start_sampler.rb), the same in every
# configuration of the round.  A program whose heap grows for long (splay)
# follows one of several GC paths (how far the heap grew, when the majors
# fall), and which one depends on a few hundred objects more or less at
# boot: the sampling library's own (its API) put it on another path than
# default's.  Rounds that differ this way compare the paths' average, not
# two fixed ones (benchmark/results/splay.md).

require "json"
require "optparse"
require "time"
require "rbconfig"
require "fileutils"

HERE = __dir__
TOP = File.expand_path("../..", HERE)

# name, path under benchmarks/, warmup and timed iterations.  The counts
# make the timed part about 0.3-2 s with the interpreter on a 2-core
# machine (ruby-bench's own harness runs 15 warmups and at least 10 s; we
# need 16 x 10 runs a round, a round in about 5 minutes).  YJIT runs get
# --yjit-call-threshold=1 (YJIT_ARGS), so code that runs once an iteration
# (object-new's loop is the block itself, fannkuchredux's the one call of
# fannkuch) is compiled in the first warmup, as ruby-bench's own harness
# has it compiled after 30 iterations: every timed iteration is compiled code.
# A benchmark that runs the collector at all runs it at least MIN_GCS times
# in its timed iterations (splay's GCs are few and long: 6 iterations held
# 4 GCs, 1 of them major, so where one landed decided the ratio; 30 held
# 12, 3 major; 50 hold 17, 4 major: its GCs thin out as its heap grows,
# and more would take minutes a round), so no single GC's timing decides a ratio: the report
# shows the GCs of each timed window and names a benchmark below it.
BENCHMARKS = [
  ["optcarrot",              "optcarrot/benchmark.rb",      1, 1],
  ["rubykon",                "rubykon/benchmark.rb",        1, 1],
  ["ruby-json",              "ruby-json/benchmark.rb",      1, 3],
  ["etanni",                 "etanni/benchmark.rb",         1, 3],
  ["blurhash",               "blurhash/benchmark.rb",       1, 3],
  ["knucleotide",            "knucleotide/benchmark.rb",    2, 6],
  ["binarytrees",            "binarytrees/benchmark.rb",    1, 4],
  ["nbody",                  "nbody/benchmark.rb",          2, 6],
  ["fannkuchredux",          "fannkuchredux/benchmark.rb",  1, 2],
  ["splay",                  "splay.rb",                    2, 50],
  ["gcbench",                "gcbench.rb",                  1, 1],
  ["str_concat",             "str_concat.rb",               2, 25],
  ["string_malloc_pressure", "string_malloc_pressure.rb",   1, 3],
  ["object-new",             "object-new.rb",               2, 8],
  ["nqueens",                "nqueens.rb",                  2, 4],
  ["sudoku",                 "sudoku.rb",                   1, 3],
].map { |n, p, w, i| { name: n, path: p, warmup: w, itrs: i } }.freeze

ALL_CONFIGS = %w[builtin default stopped 512k 32k 512k-slots 32k-slots].freeze
CONFIG_LABELS = { "builtin" => "built-in GC", "default" => "default", "stopped" => "sampling, stopped",
                  "512k" => "sampling 512 KiB", "32k" => "sampling 32 KiB",
                  "512k-slots" => "512 KiB, slots only", "32k-slots" => "32 KiB, slots only" }.freeze
INTERVALS = { "512k" => 512 * 1024, "32k" => 32 * 1024 }.freeze
# target: geometric mean of the ratio to default at most this, YJIT off and on
TARGETS = { "512k" => 1.01, "32k" => 1.03 }.freeze
BEYOND = 1.03   # benchmarks above this ratio are listed with why
MIN_GCS = 20    # GCs in a timed window, for a benchmark that runs any (above)
YJIT_ARGS = %w[--yjit --yjit-call-threshold=1].freeze

opts = { rounds: 5, yjit: %w[off on], smoke: false, scale: 1.0, lib: "sampling", work: File.join(TOP, "build/rubybench"),
         report_only: false, commit: nil, only: nil, timeout: 600, perturb: 0, configs: %w[builtin default stopped 512k 32k] }
OptionParser.new do |o|
  o.banner = "usage: driver.rb --ruby RUBY --ruby-bench DIR --out FILE [options]"
  o.on("--ruby PATH") { opts[:ruby] = File.expand_path(_1) }
  o.on("--ruby-bench DIR") { opts[:ruby_bench] = File.expand_path(_1) }
  o.on("--commit SHA", "ruby-bench commit, for the report") { opts[:commit] = _1 }
  o.on("--out FILE") { opts[:out] = File.expand_path(_1) }
  o.on("--work DIR") { opts[:work] = File.expand_path(_1) }
  o.on("--rounds N", Integer) { opts[:rounds] = _1 }
  o.on("--only LIST", "benchmarks, comma-separated") { opts[:only] = _1.split(",") }
  o.on("--yjit LIST", "off,on (default both)") { opts[:yjit] = _1.split(",") }
  o.on("--configs LIST", "of #{ALL_CONFIGS.join(",")} (default the first five; " \
       "*-slots: malloc: false, to tell malloc sampling's cost)") { opts[:configs] = _1.split(",") }
  o.on("--smoke", "1 round, 1 warmup and 1 timed iteration: checks the harness, measures nothing") { opts[:smoke] = true }
  o.on("--scale F", Float, "multiply the timed iterations (at least 1)") { opts[:scale] = _1 }
  o.on("--lib NAME", "the sampling library's RUBY_GC_LIBRARY name (default sampling)") { opts[:lib] = _1 }
  o.on("--perturb K", Integer, "round r keeps (r - 1) * K objects of each small heap at boot (default 0)") { opts[:perturb] = _1 }
  o.on("--timeout S", Integer, "seconds a run may take (default 600)") { opts[:timeout] = _1 }
  o.on("--report-only", "measure nothing: re-render --out from WORK/rubybench.jsonl") { opts[:report_only] = true }
  o.on("--append", "add --rounds rounds to WORK's results (same benchmarks and configurations)") { opts[:append] = true }
  o.on("--command CMD", "the command line to quote in the report") { opts[:command] = _1 }
end.parse!
%i[ruby ruby_bench out].each { |k| next if k == :ruby_bench && opts[:report_only]; abort "driver.rb: --#{k.to_s.tr("_", "-")} is required" unless opts[k] }
opts[:rounds] = 1 if opts[:smoke]
bad = opts[:yjit] - %w[off on]
abort "driver.rb: --yjit takes off,on (got #{bad.join(",")})" unless bad.empty?
bad = opts[:configs] - ALL_CONFIGS
abort "driver.rb: unknown configuration #{bad.join(",")} (known: #{ALL_CONFIGS.join(",")})" unless bad.empty?
abort "driver.rb: --configs must include default (the baseline)" unless opts[:report_only] || opts[:configs].include?("default")
benches = BENCHMARKS
if opts[:only]
  unknown = opts[:only] - BENCHMARKS.map { _1[:name] }
  abort "driver.rb: unknown benchmark #{unknown.join(", ")} (known: #{BENCHMARKS.map { _1[:name] }.join(", ")})" unless unknown.empty?
  benches = BENCHMARKS.select { opts[:only].include?(_1[:name]) }
end

RUBY = opts[:ruby]
RB_DIR = opts[:ruby_bench]
WORK = opts[:work]
RAW = File.join(WORK, "rubybench.jsonl")
META = File.join(WORK, "rubybench-meta.json")
FileUtils.mkdir_p(WORK)

def loadavg
  File.read("/proc/loadavg").split.first(3).map(&:to_f)
rescue StandardError
  [0.0, 0.0, 0.0]
end

def clean_env
  env = ENV.to_h.reject { |k, _| k.start_with?("RUBY_GC_", "RB_", "RUBY_BENCH_", "YJIT_", "ZJIT_") || %w[RUBYOPT RUBYLIB].include?(k) }
  env.merge("WARMUP_ITRS" => nil, "MIN_BENCH_ITRS" => nil, "MIN_BENCH_TIME" => nil)
end

def config_env(config, lib)
  case config
  when "builtin" then {}
  when "default" then { "RUBY_GC_LIBRARY" => "default" }
  when "stopped" then { "RUBY_GC_LIBRARY" => lib }
  else
    interval, slots = config.split("-")
    { "RUBY_GC_LIBRARY" => lib, "RB_SAMPLER_INTERVAL" => INTERVALS.fetch(interval).to_s,
      **(slots ? { "RB_SAMPLER_MALLOC" => "0" } : {}) }
  end
end

def capture(env, *cmd)
  out = IO.popen(clean_env.merge(env), cmd, err: [:child, :out], unsetenv_others: true, &:read)
  [$?.success?, out]
end

# --- checks: the Ruby, YJIT, both libraries, ruby-bench's files ------------

def preflight(opts, benches)
  abort "driver.rb: no Ruby at #{RUBY}" unless File.executable?(RUBY)
  abort "driver.rb: #{RB_DIR} is not a ruby-bench checkout (no harness/loader.rb)" unless File.file?(File.join(RB_DIR, "harness/loader.rb"))
  missing = benches.reject { File.file?(File.join(RB_DIR, "benchmarks", _1[:path])) }
  abort "driver.rb: missing in #{RB_DIR}/benchmarks: #{missing.map { _1[:path] }.join(", ")}" unless missing.empty?
  ok, out = capture({ "RUBY_GC_LIBRARY" => "default" }, RUBY, "-e", "print GC.config[:implementation]")
  abort "driver.rb: RUBY_GC_LIBRARY=default does not load: #{out}" unless ok && out == "default"
  ok, out = capture({ "RUBY_GC_LIBRARY" => opts[:lib] }, RUBY, "-e", "print defined?(ObjectSpace::AllocationSampler).inspect")
  abort "driver.rb: RUBY_GC_LIBRARY=#{opts[:lib]} has no ObjectSpace::AllocationSampler: #{out}" unless ok && out.include?("constant")
  if opts[:yjit].include?("on")
    ok, out = capture({}, RUBY, "--yjit", "-e", "print RubyVM::YJIT.enabled?")
    unless ok && out == "true"
      warn "driver.rb: this Ruby has no YJIT (#{out.strip[0, 200]}); measuring YJIT off only"
      opts[:yjit] -= ["on"]
    end
  end
end

def gc_dir
  dir = `#{RUBY} -e 'print RbConfig::CONFIG["modular_gc_dir"].to_s'`
  dir.empty? ? nil : dir
end

def machine
  cpu = File.read("/proc/cpuinfo")[/^model name\s*:\s*(.+)$/, 1] rescue "?"
  mem = File.read("/proc/meminfo")[/MemTotal:\s*(\d+)/, 1].to_i rescue 0
  { cpu: cpu, nproc: `nproc`.to_i, mem_gib: (mem / 1048576.0).round(1), kernel: `uname -r`.strip,
    ruby: `#{RUBY} -v`.strip, yjit_ruby: `#{RUBY} --yjit -v 2>/dev/null`.strip }
end

def project_commit
  sha = `git -C #{TOP} rev-parse --short HEAD 2>/dev/null`.strip
  dirty = !`git -C #{TOP} status --porcelain --untracked-files=no 2>/dev/null`.strip.empty?
  sha.empty? ? "unknown" : "#{sha}#{dirty ? " (with uncommitted changes)" : ""}"
end

# --- one run ---------------------------------------------------------------

def run_one(bench, config, yjit, round, opts)
  warmup = opts[:smoke] ? 1 : bench[:warmup]
  itrs = opts[:smoke] ? 1 : [(bench[:itrs] * opts[:scale]).round, 1].max
  result_file = File.join(WORK, "run-result.json")
  log = File.join(WORK, "logs", "#{bench[:name]}-#{config}-#{yjit}.log")
  FileUtils.mkdir_p(File.dirname(log))
  File.delete(result_file) if File.exist?(result_file)
  env = clean_env.merge(config_env(config, opts[:lib]))
                 .merge("RB_WARMUP_ITRS" => warmup.to_s, "RB_BENCH_ITRS" => itrs.to_s, "RB_RESULT" => result_file)
  env["RB_HEAP_PERTURB"] = ((round - 1) * opts[:perturb]).to_s if opts[:perturb].to_i.positive?
  cmd = [RUBY, *(yjit == "on" ? YJIT_ARGS : []), "-I", File.join(HERE, "harness"), "-r", File.join(HERE, "start_sampler.rb"),
         File.join(RB_DIR, "benchmarks", bench[:path])]
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  pid = Process.spawn(env, *cmd, chdir: WORK, unsetenv_others: true, out: log, err: [:child, :out], pgroup: true)
  $running = pid
  status = nil
  loop do
    _, status = Process.wait2(pid, Process::WNOHANG)
    break if status
    if Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0 > opts[:timeout]
      Process.kill("KILL", -pid) rescue nil
      _, status = Process.wait2(pid)
      File.write(log, "\n[driver: killed after #{opts[:timeout]} s]\n", mode: "a")
      break
    end
    sleep 0.05
  end
  row = { round: round, bench: bench[:name], config: config, yjit: yjit, wall: Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0,
          loadavg: loadavg.first }
  if status.success? && File.exist?(result_file)
    row.merge(ok: true, result: JSON.parse(File.read(result_file), symbolize_names: true))
  else
    tail = File.exist?(log) ? File.readlines(log).last(5).join.strip : ""
    row.merge(ok: false, error: "exit #{status.exitstatus || status.termsig}: #{tail[-400..] || tail}")
  end
end

# the run in flight is in its own process group: take it down with us
$running = nil
%w[INT TERM].each do |sig|
  trap(sig) do
    Process.kill("KILL", -$running) rescue nil if $running
    exit!(130)
  end
end

def measure(opts, benches)
  if opts[:append] && File.exist?(META) && File.exist?(RAW)
    return append(opts, benches) { yield _1 }
  end
  File.write(RAW, "")
  meta = { started: Time.now.utc.iso8601, ruby: RUBY, ruby_bench: RB_DIR, ruby_bench_commit: opts[:commit],
           project_commit: project_commit, lib: opts[:lib], gc_dir: gc_dir, machine: machine, rounds: opts[:rounds],
           smoke: opts[:smoke], scale: opts[:scale], perturb: opts[:perturb], yjit: opts[:yjit], command: opts[:command], configs: opts[:configs],
           benchmarks: benches.map { _1.merge(itrs: opts[:smoke] ? 1 : [(_1[:itrs] * opts[:scale]).round, 1].max,
                                              warmup: opts[:smoke] ? 1 : _1[:warmup]) },
           load_start: loadavg }
  File.write(META, JSON.pretty_generate(meta))
  run_rounds(opts, benches, meta, 0) { yield _1 }
end

# More rounds into an earlier run's results: its benchmarks, configurations
# and YJIT modes, the round numbers going on; the report says so.
def append(opts, benches)
  meta = JSON.parse(File.read(META), symbolize_names: true)
  names = meta[:benchmarks].map { _1[:name] }
  benches = BENCHMARKS.select { names.include?(_1[:name]) }
  opts[:configs] = meta[:configs]
  opts[:yjit] = meta[:yjit]
  opts[:scale] = meta[:scale]
  first = File.readlines(RAW).map { JSON.parse(_1)["round"] }.max || 0
  (meta[:appended] ||= []) << { at: Time.now.utc.iso8601, rounds: opts[:rounds], load_start: loadavg }
  meta[:rounds] = first + opts[:rounds]
  meta.delete(:finished)
  run_rounds(opts, benches, meta, first) { yield _1 }
end

def run_rounds(opts, benches, meta, first)
  rng = Random.new(20261202 + first)
  plan = opts[:configs].product(opts[:yjit])
  total = opts[:rounds] * benches.size * plan.size
  done = 0
  File.open(RAW, "a") do |raw|
    opts[:rounds].times do |r0|
      r = first + r0
      benches.each do |bench|
        plan.shuffle(random: rng).each do |config, yjit|
          row = run_one(bench, config, yjit, r + 1, opts)
          raw.puts(JSON.generate(row))
          raw.flush
          done += 1
          what = row[:ok] ? format("%.3f s", row[:result][:seconds]) : "FAILED #{row[:error]}"
          warn format("[%d/%d] round %d %-22s %-8s yjit=%-3s %s (load %.2f)", done, total, r + 1, bench[:name], config, yjit, what, row[:loadavg])
        end
      end
      File.write(META, JSON.pretty_generate(meta.merge(load_end: loadavg)))
      yield r + 1   # a report after every round: an interrupted run leaves the rounds it finished
    end
  end
  meta[:finished] = Time.now.utc.iso8601
  meta[:load_end] = loadavg
  File.write(META, JSON.pretty_generate(meta))
end

# --- the report --------------------------------------------------------------

def median(xs)
  s = xs.sort
  n = s.size
  n.odd? ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2.0
end

def geomean(xs) = Math.exp(xs.sum { Math.log(_1) } / xs.size)

def num(x) = x.round.to_s.reverse.scan(/\d{1,3}/).join(",").reverse

def rate(x)
  return "0" if x.zero?
  return format("%.2g", x) if x < 10

  num(x)
end

# Figures of one benchmark under one YJIT mode: per config the runs'
# seconds a timed iteration, the per-round ratios to default, the deltas.
def summarise(rows)
  by = Hash.new { |h, k| h[k] = [] }
  rows.each { by[[_1[:bench], _1[:yjit], _1[:config]]] << _1 }
  by
end

def stats_for(by, bench, yjit, config)
  runs = by[[bench, yjit, config]].select { _1[:ok] }
  return nil if runs.empty?

  per_itr = runs.map { _1[:result][:seconds] / _1[:result][:times].size }
  { runs: runs, per_itr: per_itr, median: median(per_itr), min: per_itr.min, max: per_itr.max }
end

# The ratio of a configuration to another: the median over rounds of the
# per-round ratio.  A round runs a program's configurations back to back
# (within a minute or two), so a slow spell of the machine, which moves
# every configuration of that round alike, cancels; the ratio of medians
# across rounds does not (this machine's speed varies up to 2x).
def paired_ratio(by, bench, yjit, config, base = "default")
  rr = round_ratios(by, bench, yjit, config, base)
  rr.empty? ? nil : median(rr)
end

def round_ratios(by, bench, yjit, config, base_config = "default")
  base = by[[bench, yjit, base_config]].select { _1[:ok] }.to_h { [_1[:round], _1[:result][:seconds] / _1[:result][:times].size] }
  by[[bench, yjit, config]].select { _1[:ok] && base[_1[:round]] }
                           .map { (_1[:result][:seconds] / _1[:result][:times].size) / base[_1[:round]] }
end

# The allocation profile over the timed iterations, from a sampled run
# (medians over rounds): slot and malloc bytes a second, samples a second
# of each kind, GC runs a second.
def profile(st)
  return nil unless st

  pick = lambda do |key|
    median(st[:runs].map { |r| r[:result][:delta][key].to_f / r[:result][:seconds] })
  end
  { slot_mb_s: pick.(:allocated_bytes) / 1e6, malloc_mb_s: pick.(:malloc_allocated_bytes) / 1e6,
    objects_s: pick.(:total_allocated_objects), gc_s: pick.(:count),
    gcs: median(st[:runs].map { |r| r[:result][:delta][:count].to_f }),
    majors: median(st[:runs].map { |r| r[:result][:delta][:major_gc_count].to_f }),
    slot_samples_s: median(st[:runs].map { |r| (r[:result][:delta][:samples].to_f - r[:result][:delta][:malloc_samples].to_f) / r[:result][:seconds] }),
    malloc_samples_s: pick.(:malloc_samples),
    sys_share: median(st[:runs].map { |r| d = r[:result][:delta]; (d[:cpu_sys].to_f / [d[:cpu_user].to_f + d[:cpu_sys].to_f, 1e-9].max) }),
    samples_itr: median(st[:runs].map { |r| r[:result][:delta][:samples].to_f / r[:result][:times].size }) }
end

def gcs_cell(pr)
  cell = "#{pr[:gcs].round} (#{pr[:majors].round})"
  pr[:gcs].positive? && pr[:gcs] < MIN_GCS ? "**#{cell}** (< #{MIN_GCS})" : cell
end

# What users feel: each sampling configuration against the built-in GC
# (no RUBY_GC_LIBRARY, what a Ruby runs by default), paired by round as
# the ratios to `default` are.
def builtin_table(by, benches, yjit, config_names)
  cs = config_names - %w[builtin default]
  return "" if cs.empty?

  md = +"Against the **built-in GC** (no `RUBY_GC_LIBRARY`: what a Ruby runs unless told otherwise), the same " \
        "paired ratio with the built-in GC as the baseline:\n\n"
  md << "| benchmark | #{cs.map { CONFIG_LABELS[_1] }.join(" | ")} |\n|---|#{"---:|" * cs.size}\n"
  all = Hash.new { |h, k| h[k] = [] }
  benches.each do |b|
    cells = cs.map do |c|
      r = paired_ratio(by, b, yjit, c, "builtin")
      next "n/a" unless r

      all[c] << r
      format("%.3f", r)
    end
    md << "| #{b} | #{cells.join(" | ")} |\n"
  end
  md << "| **geometric mean** | #{cs.map { all[_1].empty? ? "n/a" : format("**%.3f**", geomean(all[_1])) }.join(" | ")} |\n"
end

def why(bench, yjit, config, ratio, by, meds)
  rr = round_ratios(by, bench, yjit, config)
  st = stats_for(by, bench, yjit, config)
  stopped = paired_ratio(by, bench, yjit, "stopped")
  base = stats_for(by, bench, yjit, "default")
  spread = base ? base[:max] / base[:min] - 1 : 0
  parts = []
  parts << "per-round ratios #{format("%.3f", rr.min)}-#{format("%.3f", rr.max)}" unless rr.empty?
  parts << "`default`'s own runs spread #{format("%.0f", spread * 100)}%"
  if config == "stopped"
    parts.unshift("no sample is taken: the library's own cost (its build of the collector, the hooks) or noise")
  else
    pr = profile(st)
    vs = paired_ratio(by, bench, yjit, config, "stopped")
    excess = vs && meds["stopped"] && (vs - 1) * meds["stopped"]
    if pr && excess && pr[:samples_itr] > 0
      us = excess / pr[:samples_itr] * 1e6
      kind = pr[:malloc_samples_s] > pr[:slot_samples_s] ? "malloc-heavy" : "slot-heavy"
      parts.unshift("#{kind}: #{rate(pr[:slot_samples_s])} slot + #{rate(pr[:malloc_samples_s])} malloc samples/s " \
                    "(#{format("%.0f", pr[:slot_mb_s])} MB/s of slots, #{format("%.0f", pr[:malloc_mb_s])} MB/s malloc'd); " \
                    "#{format("%.1f", excess * 1e3)} ms an iteration over `sampling, stopped` (paired) = #{format("%.1f", us)} µs a sample")
    end
    parts << "stopped alone is #{format("%.3f", stopped)}" if stopped && stopped > BEYOND
  end
  # a shift of GC timing shows first in the count
  gcs = ->(x) { x && median(x[:runs].map { |r| r[:result][:delta][:count].to_f / r[:result][:times].size }) }
  g0 = gcs.(base); g1 = gcs.(st)
  if g0 && g1 && (g1 - g0).abs > [0.05 * g0, 0.5].max
    parts << "GCs an iteration #{format("%.1f", g1)} against `default`'s #{format("%.1f", g0)}"
  end
  parts << "within noise (a round at or below 1.0)" if !rr.empty? && rr.min <= 1.0
  parts.join("; ")
end

def render(opts)
  meta = JSON.parse(File.read(META), symbolize_names: true)
  rows = File.readlines(RAW).map { JSON.parse(_1, symbolize_names: true) }
  by = summarise(rows)
  benches = meta[:benchmarks].map { _1[:name] }
  yjits = meta[:yjit]
  config_names = meta[:configs] || ALL_CONFIGS.first(5)
  rounds_done = rows.map { _1[:round] }.max || 0
  loads = rows.map { _1[:loadavg] }.compact
  md = +""
  version = meta[:machine][:ruby][/ruby (\S+)/, 1]
  md << "# ruby-bench's gem-free benchmarks under the sampling GC (Ruby #{version})\n\n"
  if meta[:smoke]
    md << "**SMOKE RUN: 1 round, 1 warmup and 1 timed iteration a run, on a machine shared with other jobs. " \
          "It shows the harness works; the figures measure nothing.**\n\n"
  end
  md << "Generated by `benchmark/rubybench/run` (#{meta[:started]} to #{meta[:finished] || "unfinished"}).\n\n"
  md << "    #{meta[:command] || "benchmark/rubybench/run --ruby #{meta[:ruby]} --out #{opts[:out]}"}\n\n"
  md << "- ruby-bench: github ruby/ruby-bench at #{meta[:ruby_bench_commit] || "unknown commit"}, benchmarks run as they are, " \
        "with our `benchmark/rubybench/harness/harness.rb` in place of ruby-bench's harness.\n"
  md << "- This project at #{meta[:project_commit]}; sampling library `RUBY_GC_LIBRARY=#{meta[:lib]}`" \
        "#{meta[:gc_dir] ? " (from #{meta[:gc_dir]})" : ""}.\n"
  md << "- #{meta[:machine][:ruby]}; YJIT: `#{meta[:machine][:yjit_ruby]}`.\n"
  md << "- Machine: #{meta[:machine][:cpu]}, #{meta[:machine][:nproc]} cores, #{meta[:machine][:mem_gib]} GiB, Linux #{meta[:machine][:kernel]}. " \
        "Load average (1 min) at start #{meta[:load_start]&.first}, during the runs #{loads.min}-#{loads.max} " \
        "(median #{loads.empty? ? "?" : median(loads).round(2)}), at the end #{meta[:load_end]&.first || "?"}.\n"
  (meta[:appended] || []).each do |a|
    md << "- #{a[:rounds]} more round(s) appended from #{a[:at]} (`--append`; load average at their start #{a[:load_start]&.first}).\n"
  end
  md << "- #{rounds_done} round(s) of #{meta[:rounds]}; in each round every benchmark ran under every configuration, " \
        "YJIT #{yjits.join(" and ")} (`#{YJIT_ARGS.join(" ")}`: compiled from the first call, so the timed iterations " \
        "run compiled code), in a shuffled order. Each run: warmup iterations, then timed iterations, " \
        "each timed in-process (the figure is seconds a timed iteration)." \
        "#{meta[:perturb].to_i.positive? ? " Round r began every run with (r - 1) x #{meta[:perturb]} small objects of each heap kept alive (`--perturb #{meta[:perturb]}`)." : ""}\n\n"
  md << "| configuration | how |\n|---|---|\n"
  md << "| built-in GC | no `RUBY_GC_LIBRARY` |\n" if config_names.include?("builtin")
  md << "| default | `RUBY_GC_LIBRARY=default`, **the baseline of every ratio** |\n"
  md << "| sampling, stopped | `RUBY_GC_LIBRARY=#{meta[:lib]}`, sampler never started |\n" if config_names.include?("stopped")
  sampled = INTERVALS.keys.select { config_names.include?(_1) }.map { CONFIG_LABELS[_1].delete_prefix("sampling ") }
  md << "| sampling #{sampled.join(" / ")} | the same, `ObjectSpace::AllocationSampler.start(interval:, mode: :poisson, seed: 1)` " \
        "from `-r start_sampler.rb` before the benchmark loads (malloc sampling as the library's default) |\n" unless sampled.empty?
  md << "| ... slots only | the same with `malloc: false` |\n" if config_names.any? { _1.end_with?("-slots") }
  md << "\n"
  failed = rows.reject { _1[:ok] }
  unless failed.empty?
    md << "**Failed runs (#{failed.size}):**\n\n"
    failed.first(20).each { md << "- round #{_1[:round]} #{_1[:bench]} #{_1[:config]} YJIT #{_1[:yjit]}: `#{_1[:error].gsub(/\s+/, " ")[0, 300]}`\n" }
    md << "\n"
  end

  verdicts = []
  beyond = []
  yjits.each do |yjit|
    md << "## YJIT #{yjit}\n\n"
    md << "Ratio to `default`: the median over rounds of the per-round ratio (a round runs a program's configurations back " \
          "to back, so a slow spell of the machine cancels); in brackets the lowest and highest per-round ratio. `default`: " \
          "median ms a timed iteration (min-max over rounds).\n\n"
    md << "| benchmark | warmup+timed itrs | default ms | #{config_names.reject { _1 == "default" }.map { CONFIG_LABELS[_1] }.join(" | ")} |\n"
    md << "|---|---:|---:|#{"---:|" * (config_names.size - 1)}\n"
    ratios = Hash.new { |h, k| h[k] = [] }
    vs_stopped = Hash.new { |h, k| h[k] = [] }
    of_medians = Hash.new { |h, k| h[k] = [] }
    benches.each do |b|
      meds = config_names.to_h { [_1, stats_for(by, b, yjit, _1)&.dig(:median)] }
      TARGETS.each_key { |c| (x = paired_ratio(by, b, yjit, c, "stopped")) && vs_stopped[c] << x }
      base = stats_for(by, b, yjit, "default")
      bm = meta[:benchmarks].find { _1[:name] == b }
      cells = config_names.reject { _1 == "default" }.map do |c|
        next "n/a" unless meds[c] && meds["default"]

        r = paired_ratio(by, b, yjit, c)
        of_medians[c] << meds[c] / meds["default"]
        ratios[c] << r
        rr = round_ratios(by, b, yjit, c)
        beyond << [b, yjit, c, r, why(b, yjit, c, r, by, meds)] if r > BEYOND && c != "builtin"
        cell = format("%.3f", r)
        cell = "**#{cell}**" if r > BEYOND && c != "builtin"
        rr.size > 1 ? "#{cell} [#{format("%.2f", rr.min)}-#{format("%.2f", rr.max)}]" : cell
      end
      dcell = base ? format("%.1f (%.1f-%.1f)", base[:median] * 1e3, base[:min] * 1e3, base[:max] * 1e3) : "failed"
      md << "| #{b} | #{bm[:warmup]}+#{bm[:itrs]} | #{dcell} | #{cells.join(" | ")} |\n"
    end
    geo = config_names.reject { _1 == "default" }.map { ratios[_1].empty? ? "n/a" : format("**%.3f**", geomean(ratios[_1])) }
    md << "| **geometric mean** (#{ratios.values.map(&:size).max || 0} benchmarks) | | | #{geo.join(" | ")} |\n\n"
    TARGETS.each do |c, t|
      next if ratios[c].empty?

      g = geomean(ratios[c])
      v = if meta[:smoke] then "not judged (smoke run)"
          elsif g <= t then "PASS"
          else "MISS"
          end
      verdicts << [yjit, c, g, t, v]
      md << "- #{CONFIG_LABELS[c]}, YJIT #{yjit}: geometric mean #{format("%.3f", g)}, target <= #{t} (within #{((t - 1) * 100).round}% of default): **#{v}**\n"
    end
    unless of_medians.empty?
      md << "- For comparison, the geometric mean of the ratios of medians (unpaired, so the machine's drift between rounds " \
            "stays in): " + TARGETS.keys.filter_map { |c| of_medians[c].empty? ? nil : "#{CONFIG_LABELS[c]} #{format("%.3f", geomean(of_medians[c]))}" }.join(", ") + "\n"
    end
    unless vs_stopped.empty?
      md << "- The sampler alone (the paired ratio to `sampling, stopped`, the same library without samples; no target): " +
            vs_stopped.map { |c, xs| "#{CONFIG_LABELS[c]} #{format("%.3f", geomean(xs))}" }.join(", ") + "\n"
    end
    if config_names.include?("builtin")
      md << "\n" << builtin_table(by, benches, yjit, config_names)
    end
    md << "\n"

    md << "Allocation profile over the timed iterations (medians over rounds, from the sampled runs): slot and malloc'd " \
          "megabytes a second, objects and GCs a second, the kernel's share of the CPU time (page faults, mostly), " \
          "samples a second at each interval by kind, and the GCs (major ones in brackets) of a timed window, " \
          "at least #{MIN_GCS} where there are any (so no single GC's timing decides a ratio).\n\n"
    ivs = INTERVALS.keys.select { config_names.include?(_1) }
    md << "| benchmark | slot MB/s | malloc MB/s | objects/s | GC/s | GCs timed | sys | " +
          ivs.map { "#{CONFIG_LABELS[_1].delete_prefix("sampling ")} slot + malloc samples/s |" }.join(" ") + "\n"
    md << "|---|---:|---:|---:|---:|---:|---:|#{"---:|" * ivs.size}\n"
    benches.each do |b|
      ps = ivs.map { profile(stats_for(by, b, yjit, _1)) }
      pr = ps.compact.last
      next unless pr

      s = ->(x) { x ? "#{rate(x[:slot_samples_s])} + #{rate(x[:malloc_samples_s])}" : "n/a" }
      md << "| #{b} | #{format("%.0f", pr[:slot_mb_s])} | #{format("%.0f", pr[:malloc_mb_s])} | #{num(pr[:objects_s])} | " \
            "#{format("%.1f", pr[:gc_s])} | #{gcs_cell(pr)} | #{format("%.0f%%", pr[:sys_share] * 100)} | #{ps.map { "#{s.(_1)} |" }.join(" ")}\n"
    end
    md << "\n"
  end

  md << "## Targets\n\n| YJIT | configuration | geometric mean | target | |\n|---|---|---:|---:|---|\n"
  verdicts.each { |y, c, g, t, v| md << "| #{y} | #{CONFIG_LABELS[c]} | #{format("%.3f", g)} | <= #{t} | **#{v}** |\n" }
  md << "\n"
  md << "## Beyond #{((BEYOND - 1) * 100).round}% of `default`\n\n"
  if beyond.empty?
    md << "None.\n\n"
  else
    md << "Every benchmark and configuration (the sampling library's) whose ratio is more than #{((BEYOND - 1) * 100).round}% " \
          "over `default`'s, with its allocation profile. \"µs a sample\" divides the time over `sampling, stopped` by the " \
          "samples a timed iteration takes: the sampler's cost a sample, if the difference is the sampler's.\n\n"
    beyond.sort_by { [_1[1], _1[0], config_names.index(_1[2])] }.each do |b, y, c, r, w|
      md << "- **#{b}**, YJIT #{y}, #{CONFIG_LABELS[c]}: #{format("%.3f", r)}. #{w}.\n"
    end
    md << "\n"
  end
  md << "Raw results: one JSON line a run in `#{RAW.sub("#{TOP}/", "")}`; re-render with `--report-only`.\n"
  FileUtils.mkdir_p(File.dirname(opts[:out]))
  File.write(opts[:out], md)
  warn "driver.rb: wrote #{opts[:out]}"
end

unless opts[:report_only]
  preflight(opts, benches)
  measure(opts, benches) { render(opts) }
end
render(opts)
