# redblack.rb: Ruby's benchmark/gc/redblack.rb, REDBLACK_N rounds
# (upstream: ARGV[0] || 10).
ARGV.replace([ENV.fetch("REDBLACK_N", "10")])
load File.join(ENV.fetch("BENCH_RUBY_SRC"), "benchmark/gc/redblack.rb")
