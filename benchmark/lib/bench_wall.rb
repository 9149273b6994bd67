# bench_wall.rb: phases 2 and 2b of bench.rb: wall time (hyperfine,
# every configuration each round, the order shuffled) and the pairs
# against default, with their statistics (median, load average).  Loaded
# by bench.rb after its options and configurations.

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
ALL_PAIR_KEYS = %w[builtin stopped s4k s32k s512k s4m]
PAIR_KEYS = PAIR_OPTS[:pair_configs] || ALL_PAIR_KEYS
unless (bad = PAIR_KEYS - ALL_PAIR_KEYS).empty?
  abort "bench.rb: --pair-configs: unknown #{bad.join(",")} (known: #{ALL_PAIR_KEYS.join(",")})"
end
PAIR_N = PAIR_OPTS[:pair_n] || (QUICK ? 300_000 : 3_000_000)
PAIR_ROUNDS = PAIR_OPTS[:pair_rounds] || (QUICK ? 5 : 21)
# config key => { times: [...], default: [...], ratios: [...], cpu_ratios: [...] }
PAIRS = {}

# One run: [wall seconds, the child's user + system CPU seconds]. CPU time
# leaves out the time the run waited for a CPU (other processes, a
# hypervisor's steal); wall time is what the user waits.
def timed_run(argv)
  c0 = Process.times
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  pid = Process.spawn(*argv, out: File::NULL, err: File::NULL)
  Process.wait(pid)
  wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
  raise "#{argv.last(2).join(" ")} failed (#{$?.exitstatus})" unless $?.success?
  c1 = Process.times
  [wall, (c1.cutime + c1.cstime) - (c0.cutime + c0.cstime)]
end

def pairs_phase(dry: false)
  env = { "ALLOC_MICRO_N" => PAIR_N.to_s }
  cmd = ->(k) { command(C[k], MICRO, env) }
  COMMANDS << "# pairs: each of #{PAIR_KEYS.join(", ")} back to back with default, #{PAIR_ROUNDS} rounds, e.g.\n" +
              sh_join(cmd.("default")) + "\n" + sh_join(cmd.("s4k"))
  return if dry
  rng = Random.new(19)
  PAIR_KEYS.each { |k| PAIRS[k] = { times: [], default: [], ratios: [], cpu_ratios: [] } }
  PAIR_ROUNDS.times do |round|
    PAIR_KEYS.shuffle(random: rng).each do |k|
      order = rng.rand < 0.5 ? ["default", k] : [k, "default"]
      wait_for_libs
      t = order.to_h { |x| [x, timed_run(cmd.(x))] }
      PAIRS[k][:times] << t[k][0]
      PAIRS[k][:default] << t["default"][0]
      PAIRS[k][:ratios] << t[k][0] / t["default"][0]
      PAIRS[k][:cpu_ratios] << t[k][1] / t["default"][1]
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
