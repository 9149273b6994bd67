# demo.rb RUBY_SRC OUTDIR: the body of `make demo` (see tools/demo).
src, out = ARGV
Sampler = ObjectSpace::AllocationSampler

files = Dir[File.join(src, "lib", "**", "*.rb")].sort
abort "demo: no Ruby files under #{src}/lib" if files.empty?
require "prism"

Sampler.start(interval: 128 * 1024, mode: :poisson, seed: 1, malloc: true)
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
peak_pprof = File.join(out, "demo.peak.pb.gz")
collapsed = File.join(out, "demo.collapsed.txt")
timeline = File.join(out, "demo.timeline.csv")
dhat = File.join(out, "demo.dhat.json")
Sampler.write_pprof(pprof)
Sampler.write_dhat(dhat)
Sampler.write_pprof(peak_pprof, view: :peak)
Sampler.write_collapsed(collapsed)
Sampler.write_timeline(timeline)

# The gnuplot script tools/demo runs: live bytes per GC over time, slots
# and malloc'd bytes, the peak marked.
peak = Sampler.peak
mib = ->(b) { (b / 1048576.0).round(2) }
File.write(File.join(out, "demo.timeline.gp"), <<~GP)
  set terminal pngcairo size 1000,500 font ",10"
  set output "#{File.join(out, "demo.timeline.png")}"
  set datafile separator ","
  set title "Live heap per GC, estimated from the samples (#{Sampler.timeline.size} GCs)"
  set xlabel "seconds since the sampler started"
  set ylabel "estimated live MiB"
  set key top right
  set grid
  set label 1 sprintf("peak: %.1f MiB at GC %d", #{mib.(peak[:live_bytes])}, #{peak[:gc]}) at #{peak[:seconds]}, #{mib.(peak[:live_bytes])} offset 1.5,0
  plot "#{timeline}" every ::1 using 2:($4/1048576) with lines lw 2 title "live (slots + malloc)", \
       "" every ::1 using 2:($5/1048576) with lines title "slots", \
       "" every ::1 using 2:($6/1048576) with lines title "malloc'd", \
       "-" using 1:2 with points pt 7 ps 1.5 lc rgb "red" title "peak"
  #{peak[:seconds]},#{mib.(peak[:live_bytes])}
  e
GP
puts
puts "Wrote #{pprof} (pprof), #{peak_pprof} (the live set at the peak), #{collapsed} (collapsed stacks)"
puts "and #{timeline} (a row per GC). Open them with:"
puts "  go tool pprof -http=localhost:8080 #{pprof}      # a browser UI (flame graph under View)"
puts "  go tool pprof -top -sample_index=inuse_space #{pprof}"
puts "  go tool pprof -top -sample_index=promoted_dead_space #{pprof}   # old-generation garbage by site"
puts "  go tool pprof -top #{peak_pprof}                    # what the heap held at its peak"
puts "  npx speedscope #{pprof}                            # or load #{collapsed}"
puts
puts "and #{dhat} (DHAT's format: lifetimes, the peak and the end per site). Open it with"
puts "  DHAT's viewer: open file:///usr/libexec/valgrind/dh_view.html in a browser (Debian's valgrind),"
puts "    press Load... and pick #{dhat}; sort by \"At t-gmax (bytes)\" or \"Total (blocks), short-lived\""
puts "  the Firefox Profiler: drop #{dhat} on its start page (see docs/dhat.md)"
