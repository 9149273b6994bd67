# plot.rb: the overhead figures (gnuplot), one question each.
#
#   overhead-instructions.png  instruction overhead (callgrind, exact) against
#     the sampling interval.  Left, every profiler as a ratio on a log scale:
#     the sampler against the NEWOBJ-hook peer at the same intervals, and
#     trace_object_allocations as a level.  Right, the sampler alone in
#     percent with its targets, since 0-3% vanishes next to 40% and 300%.
#   overhead-wall.png  wall-clock overhead (hyperfine) against the interval,
#     one panel per workload: the median of the interleaved rounds with
#     min-max bars, and the spread of default's own runs as a grey band (the
#     noise a difference has to beat).  Never mixed with instructions.
#
# Everything is relative to RUBY_GC_LIBRARY=default.  Colour is the
# workload, the marker the profiler.  plot_overhead returns the names of the
# PNGs written into out; a figure without data is not written (and an old
# one is removed).

# callgrind id prefix => [wall.json key, name in the figures, colour]
PLOT_WORKLOADS = { "micro" => ["micro", "alloc_micro", "#1f77b4"], "bt" => ["binary_trees", "binary_trees", "#d95f02"] }
PLOT_XMAX = 6500

def plot_overhead(out, work, cg, wall, intervals, targets)
  FileUtils.rm_f(File.join(out, "overhead.png")) # the one mixed figure these two replace
  [plot_instructions(out, work, cg, intervals, targets), plot_wall(out, work, wall, intervals)].compact
end

def gnuplot(work, name, script)
  gp = File.join(work, "#{name}.gp")
  File.write(gp, script)
  system("gnuplot", gp) or warn "gnuplot failed: #{gp}"
end

# Names print as written (no enhanced-text subscripts); the plot areas of
# all panels line up; the legends go under the panels.
def plot_setup(png, width, height)
  <<~GP
    set terminal pngcairo size #{width},#{height} font "sans,11"
    set termoption noenhanced
    set output '#{png}'
    set logscale x 2
    set xrange [2.8:#{PLOT_XMAX}]
    set xtics ("4 KiB" 4, "32 KiB" 32, "512 KiB" 512, "4 MiB" 4096)
    set xlabel "mean sampling interval"
    set grid
    set tmargin at screen 0.86
    set bmargin at screen 0.32
  GP
end

# The legend of panel i of n, under its x axis label, never over the data.
def plot_key(i, n)
  "set key at screen #{format("%.3f", (i + 0.5) / n)}, screen 0.215 center top vertical Left reverse samplen 3 spacing 1.2"
end

def plot_instructions(out, work, cg, intervals, targets)
  png = File.join(out, "overhead-instructions.png")
  FileUtils.rm_f(png)
  return nil unless cg["micro-default"]
  ratio = ->(wl, k) { (r = cg["#{wl}-#{k}"]) && (b = cg["#{wl}-default"]) ? r[:ir].to_f / b[:ir] : nil }
  val = ->(x) { x ? format("%.5f", x) : "NaN" }
  # columns: KiB, sampling micro, sampling bt, NEWOBJ micro, NEWOBJ bt, micro's target (as a ratio)
  rows = intervals.map do |k, bytes|
    t = targets["s#{k}"]
    [bytes / 1024, ratio.("micro", "s#{k}"), ratio.("bt", "s#{k}"), ratio.("micro", "n#{k}"), ratio.("bt", "n#{k}"), t && 1 + t]
  end
  data = rows.map { |r| "#{r[0]} #{r[1..].map(&val).join(" ")}" }.join("\n")
  colour = PLOT_WORKLOADS.transform_values(&:last)
  name = PLOT_WORKLOADS.transform_values { |v| v[1] }

  # left: every profiler, ratio on a log scale; the peers' levels labelled at the right edge
  overview = ["1 notitle lc rgb 'black' lw 1"]
  labels = []
  PLOT_WORKLOADS.each_key.with_index do |wl, i|
    overview << "$d using 1:#{i + 2} with linespoints lw 2 pt 7 lc rgb '#{colour[wl]}' title 'sampling GC, #{name[wl]}'"
  end
  PLOT_WORKLOADS.each_key.with_index do |wl, i|
    next unless (last = rows.map { |r| r[i + 3] }.compact.last)
    overview << "$d using 1:#{i + 4} with linespoints lw 2 dt 2 pt 4 ps 1.3 lc rgb '#{colour[wl]}' title 'NEWOBJ hook, #{name[wl]}'"
    labels << [colour[wl], last]
  end
  PLOT_WORKLOADS.each_key do |wl|
    next unless (r = ratio.(wl, "trace"))
    overview << "#{r} with lines lw 2 dt 3 lc rgb '#{colour[wl]}' title 'trace_object_allocations, #{name[wl]}'"
    labels << [colour[wl], r]
  end
  top = ([1.6] + rows.flat_map { |r| r[1..4] }.compact + labels.map(&:last)).max * 1.3
  label_cmds = labels.map { |c, r| "set label '#{format("%.2fx", r)}' at #{PLOT_XMAX}, #{r} left offset char 0.5,0 tc rgb '#{c}'" }

  # right: the sampler in percent, values printed, the micro targets as bars
  ours = rows.flat_map { |r| [r[1], r[2], r[5]] }.compact.map { |x| (x - 1) * 100 }
  lo = [ours.min - 0.5, -0.5].min
  hi = [ours.max + 0.6, 1].max
  zoom = [
    "0 notitle lc rgb 'black' lw 1",
    "$d using 1:(($6-1)*100):($1/1.25):($1*1.25) with xerrorbars pt 0 lw 3 lc rgb 'black' title 'target for alloc_micro (at most)'",
    "$d using 1:(($2-1)*100) with linespoints lw 2 pt 7 lc rgb '#{colour["micro"]}' title 'sampling GC, #{name["micro"]}'",
    "$d using 1:(($3-1)*100) with linespoints lw 2 pt 7 lc rgb '#{colour["bt"]}' title 'sampling GC, #{name["bt"]}'",
    "$d using 1:(($2-1)*100):(sprintf('%+.2f%%', ($2-1)*100)) with labels offset char 0,-1.6 tc rgb '#{colour["micro"]}' notitle",
    "$d using 1:(($3-1)*100):(sprintf('%+.2f%%', ($3-1)*100)) with labels offset char 0,1.2 tc rgb '#{colour["bt"]}' notitle",
  ]
  gnuplot(work, "overhead-instructions", <<~GP)
    #{plot_setup(png, 1300, 680)}
    $d << EOD
    #{data}
    EOD
    set multiplot layout 1,2 title "Instruction overhead vs sampling interval (callgrind, workload region only; relative to RUBY_GC_LIBRARY=default)"
    set title "every profiler: ratio to default (log scale)"
    #{plot_key(0, 2)}
    set logscale y
    set yrange [0.9:#{format("%.2f", top)}]
    set ytics ("1x" 1, "1.1x" 1.1, "1.25x" 1.25, "1.5x" 1.5, "2x" 2, "3x" 3, "5x" 5, "10x" 10, "20x" 20)
    set ylabel "instructions / instructions of default"
    set rmargin 8
    #{label_cmds.join("\n")}
    plot #{overview.join(", \\\n     ")}
    unset label
    set rmargin
    set title "the sampling GC alone: overhead in percent (linear)"
    #{plot_key(1, 2)}
    unset logscale y
    set yrange [#{format("%.2f", lo)}:#{format("%.2f", hi)}]
    set ytics auto format "%+g%%"
    set ylabel "instructions vs default"
    plot #{zoom.join(", \\\n     ")}
    unset multiplot
  GP
  File.basename(png)
end

def plot_wall(out, work, wall, intervals)
  png = File.join(out, "overhead-wall.png")
  FileUtils.rm_f(png)
  panels = PLOT_WORKLOADS.values.filter_map { |key, _, colour| (w = wall[key]) && w[:times]["default"]&.any? ? [colour, w] : nil }
  return nil if panels.empty?
  median = ->(a) { a = a.sort; a.size.odd? ? a[a.size / 2] : (a[a.size / 2 - 1] + a[a.size / 2]) / 2.0 }
  script = plot_setup(png, 650 * panels.size, 680)
  script << "set multiplot layout 1,#{panels.size} title \"Wall-clock overhead vs sampling interval " \
            "(hyperfine, whole process; median of interleaved rounds, bars min-max; relative to default's median)\"\n"
  script << "set ytics format \"%+g%%\"\nset ylabel \"wall time vs default\"\n"
  panels.each_with_index do |(colour, w), i|
    base = median.(w[:times]["default"])
    pct = ->(x) { format("%.3f", (x / base - 1) * 100) }
    # a line per interval: for sampling, then NEWOBJ: x (nudged apart), median, min, max
    lines = intervals.map do |k, bytes|
      kib = bytes / 1024
      cols = [["s#{k}", 0.93], ["n#{k}", 1.07]].flat_map do |key, nudge|
        t = w[:times][key]
        t && !t.empty? ? [format("%.2f", kib * nudge), pct.(median.(t)), pct.(t.min), pct.(t.max)] : ["NaN"] * 4
      end
      "#{kib} #{cols.join(" ")}"
    end
    d = w[:times]["default"]
    runs = w[:times].values_at(*intervals.keys.map { |k| "s#{k}" }, "default").compact.map(&:size).minmax.uniq.join("-")
    script << <<~GP
      $w#{i} << EOD
      #{lines.join("\n")}
      EOD
      $b#{i} << EOD
      1 #{pct.(d.min)} #{pct.(d.max)}
      100000 #{pct.(d.min)} #{pct.(d.max)}
      EOD
      set title "#{w[:label]}: #{runs} runs per configuration"
      #{plot_key(i, panels.size)}
      plot $b#{i} using 1:2:3 with filledcurves fc rgb 'grey70' fs transparent solid 0.35 noborder title 'default: min-max of its own runs', \\
           0 notitle lc rgb 'black' lw 1, \\
           $w#{i} using 2:3:4:5 with yerrorlines lw 2 pt 7 lc rgb '#{colour}' title 'sampling GC', \\
           $w#{i} using 6:7:8:9 with yerrorbars lw 2 pt 4 ps 1.3 lc rgb '#{colour}' title 'NEWOBJ hook'
    GP
  end
  script << "unset multiplot\n"
  gnuplot(work, "overhead-wall", script)
  File.basename(png)
end
