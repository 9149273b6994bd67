# demo.rb RUBY_SRC OUTDIR: the body of `make demo` (see tools/demo).
src, out = ARGV
Sampler = ObjectSpace::AllocationSampler

files = Dir[File.join(src, "lib", "**", "*.rb")].sort
abort "demo: no Ruby files under #{src}/lib" if files.empty?
require "prism"

Sampler.start(interval: 128 * 1024, mode: :poisson, seed: 1)
t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)

# 1. Prism parses every file of Ruby's standard library; the last 200
#    parse results stay alive, so some samples are still in use at the end.
kept = []
files.each do |f|
  result = Prism.parse_file(f)
  kept << result
  kept.shift if kept.size > 200
end

# 2. Ruby's own GC benchmark (Boehm's GCBench family), from its source tree.
binary_trees = File.join(src, "benchmark", "gc", "binary_trees.rb")
if File.exist?(binary_trees)
  $stdout = File.open(File::NULL, "w")
  begin
    load binary_trees
  ensure
    $stdout = STDOUT
  end
end

elapsed = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t0
Sampler.stop
GC.start

stats = Sampler.stats
puts format("Profiled Prism parsing %d files of Ruby's standard library, then benchmark/gc/binary_trees.rb: %.1f s,",
            files.size, elapsed)
puts format("%d samples, %.1f MiB of slots allocated (%d samples dropped).",
            stats[:samples], stats[:allocated_bytes] / 1048576.0, stats[:dropped])
puts
Sampler.report($stdout, top: 15)
puts
Sampler.report($stdout, top: 8, by: :inuse_space)

pprof = File.join(out, "demo.pb.gz")
collapsed = File.join(out, "demo.collapsed.txt")
Sampler.write_pprof(pprof)
Sampler.write_collapsed(collapsed)
puts
puts "Wrote #{pprof} (pprof) and #{collapsed} (collapsed stacks). Open them with:"
puts "  go tool pprof -http=localhost:8080 #{pprof}      # a browser UI (flame graph under View)"
puts "  go tool pprof -top -sample_index=inuse_space #{pprof}"
puts "  npx speedscope #{pprof}                            # or load #{collapsed}"
