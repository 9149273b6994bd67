# pairs_libs.rb: one ruby-bench program under `default` and two sampling
# libraries at one interval, interleaved round by round in a shuffled
# order (the machine is shared: a slow spell hits every configuration of
# a round alike), as driver.rb runs each; prints per round the timed
# seconds and CPU seconds, then medians and ranges of the ratios to
# `default` of the same round.
#
#   ruby pairs_libs.rb RUBY BENCH.rb LIB_A LIB_B [ROUNDS] [INTERVAL] [yjit]
#   e.g. ruby benchmark/rubybench/pairs_libs.rb RUBY \
#          ~/.cache/sampling-gc/ruby-bench/benchmarks/gcbench.rb sampling-before sampling 15 32768 yjit
require "json"
require "tmpdir"

ruby, bench, lib_a, lib_b, rounds, interval, yjit = ARGV
rounds = Integer(rounds || 15)
interval ||= "32768"
here = __dir__
configs = { "default" => { "RUBY_GC_LIBRARY" => "default" },
            lib_a => { "RUBY_GC_LIBRARY" => lib_a, "RB_SAMPLER_INTERVAL" => interval },
            lib_b => { "RUBY_GC_LIBRARY" => lib_b, "RB_SAMPLER_INTERVAL" => interval } }
base_env = ENV.to_h.reject { |k, _| k.start_with?("RUBY_GC_", "RB_", "YJIT_") || %w[RUBYOPT RUBYLIB].include?(k) }
rows = Hash.new { |h, k| h[k] = [] }
Dir.mktmpdir do |work|
  result = File.join(work, "result.json")
  rounds.times do |round|
    configs.keys.shuffle(random: Random.new(round)).each do |name|
      File.delete(result) if File.exist?(result)
      env = base_env.merge(configs[name]).merge("RB_WARMUP_ITRS" => "1", "RB_BENCH_ITRS" => "1", "RB_RESULT" => result)
      cmd = [ruby, *(yjit ? %w[--yjit --yjit-call-threshold=1] : []), "-I", File.join(here, "harness"),
             "-r", File.join(here, "start_sampler.rb"), bench]
      system(env, *cmd, out: File::NULL, err: File::NULL, unsetenv_others: true) or abort "#{name}: failed"
      r = JSON.parse(File.read(result))
      rows[name] << [r["seconds"], r.dig("delta", "cpu_user") + r.dig("delta", "cpu_sys")]
      printf("round %2d %-16s %.3f s (cpu %.3f) load %.1f\n", round + 1, name, *rows[name].last,
             File.read("/proc/loadavg").to_f)
    end
  end
end
def median(a) = (s = a.sort; s.size.odd? ? s[s.size / 2] : (s[s.size / 2 - 1] + s[s.size / 2]) / 2.0)
[lib_a, lib_b].each do |lib|
  %w[wall cpu].each_with_index do |what, k|
    ratios = rows[lib].zip(rows["default"]).map { |x, d| x[k] / d[k] }
    printf("%-16s %s vs default: median %.3f (range %.3f-%.3f, %d rounds)\n", lib, what, median(ratios), *ratios.minmax,
           ratios.size)
  end
end
