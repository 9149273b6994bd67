# bench_data.rb: phase 4 of bench.rb, the figures: each report section's
# data computed from the phases' results (ratios, targets, verdicts), and
# machine.md and commands.md.  bench_markdown.rb renders the data.

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
  md << "benchmark/run --ruby #{rel(RUBY)} --ruby-src #{rel(SRC)} --out #{rel(OUT)}#{QUICK ? " --quick" : ""}#{YJIT ? " --yjit" : ""}\n```\n\n"
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

# A distribution-free 95% confidence interval of the median: the k-th
# smallest and k-th largest of n values, k the largest with
# P(Binomial(n, 1/2) < k) <= 2.5%. nil below 6 values (no such k).
def median_ci(a)
  s = a.sort
  n = s.size
  below = 0.0
  k = 0
  n.times do |i|
    below += (1..i).reduce(1.0) { |m, j| m * (n - j + 1) / j } * 0.5**n
    break if below > 0.025

    k = i + 1
  end
  k.zero? ? [nil, nil] : [s[k - 1], s[n - k]]
end

def pairs_data
  d = PAIRS_DATA or return nil
  rows = ALL_PAIR_KEYS.filter_map do |k|
    pr = d["pairs"][k] or next
    r = pr["ratios"]
    next if r.empty?
    cpu = pr["cpu_ratios"] || [] # not in runs before 2026-12-02
    lo, hi = median_ci(r)
    { key: k, label: C[k].label, rounds: r.size, median: median(r), min: r.min, max: r.max, ci_lo: lo, ci_hi: hi,
      cpu_median: median(cpu), cpu_min: cpu.min, cpu_max: cpu.max,
      fastest: pr["times"].min / pr["default"].min,
      seconds: median(pr["times"]), default_seconds: median(pr["default"]) }
  end
  { n: d["n"], rounds: d["rounds"], load: d["load"], rows: rows }
end
