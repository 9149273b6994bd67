# plot.rb: overhead.png, overhead against sampling interval (gnuplot).
#
# One line per measurement: instructions on the micro-benchmark and on
# binary_trees (callgrind), wall time on both (hyperfine medians); the
# NEWOBJ-hook peer at the same intervals for comparison.  y: ratio to
# RUBY_GC_LIBRARY=default, as overhead in percent.
def plot_overhead(out, work, cg, wall, intervals)
  med = ->(a) { a = a.to_a.compact.sort; a.empty? ? nil : (a.size.odd? ? a[a.size / 2] : (a[a.size / 2 - 1] + a[a.size / 2]) / 2.0) }
  series = {
    "micro, instructions: sampling" => ->(k) { cg["micro-s#{k}"] && cg["micro-default"] && cg["micro-s#{k}"][:ir].to_f / cg["micro-default"][:ir] },
    "binary_trees, instructions: sampling" => ->(k) { cg["bt-s#{k}"] && cg["bt-default"] && cg["bt-s#{k}"][:ir].to_f / cg["bt-default"][:ir] },
    "micro, wall: sampling" => ->(k) { (w = wall["micro"]) && med.(w[:times]["s#{k}"]) && med.(w[:times]["s#{k}"]) / med.(w[:times]["default"]) },
    "binary_trees, wall: sampling" => ->(k) { (w = wall["binary_trees"]) && med.(w[:times]["s#{k}"]) && med.(w[:times]["s#{k}"]) / med.(w[:times]["default"]) },
    "micro, instructions: NEWOBJ hook" => ->(k) { cg["micro-n#{k}"] && cg["micro-default"] && cg["micro-n#{k}"][:ir].to_f / cg["micro-default"][:ir] },
  }
  data = File.join(work, "overhead.dat")
  cols = []
  File.open(data, "w") do |f|
    f.puts "# interval_kib " + series.keys.map { |s| s.tr(" ,:", "_") }.join(" ")
    intervals.each do |k, bytes|
      vals = series.values.map { |fn| (r = fn.(k)) ? format("%.4f", (r - 1) * 100) : "NaN" }
      f.puts "#{bytes / 1024} #{vals.join(" ")}"
    end
  end
  plots = series.keys.each_with_index.map do |name, i|
    style = name.include?("NEWOBJ") ? "linespoints dt 2 lw 2" : "linespoints lw 2"
    "'#{data}' using 1:#{i + 2} with #{style} title '#{name}'"
  end
  script = <<~GP
    set terminal pngcairo size 1000,640 font ",11"
    set output '#{File.join(out, "overhead.png")}'
    set title "Allocation sampling overhead vs interval (ratio to RUBY_GC_LIBRARY=default)"
    set logscale x 2
    set xtics ("4 KiB" 4, "32 KiB" 32, "512 KiB" 512, "4 MiB" 4096)
    set xlabel "mean sampling interval (poisson)"
    set ylabel "overhead, %"
    set grid
    set key top right
    set xrange [3:5500]
    plot 0 notitle lc rgb "black", #{plots.join(", ")}
  GP
  File.write(File.join(work, "overhead.gp"), script)
  system("gnuplot", File.join(work, "overhead.gp")) or warn "gnuplot failed"
end
