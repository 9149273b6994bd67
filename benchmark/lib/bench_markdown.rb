# bench_markdown.rb: phase 4 of bench.rb, the text: results.md's tables
# and notes rendered from bench_data.rb's data (results_phase writes it).

def render_cycles(d)
  md = +"## 1b. Allocation micro-benchmark, cycle estimate (callgrind, cache and branch simulation)\n\n"
  md << "The runs of section 1 (ALLOC_MICRO_N=#{num(d[:n])}) again with `--cache-sim=yes --branch-sim=yes`. "
  md << "Estimate = Ir + 10 x (I1mr + D1mr + D1mw) + 100 x (ILmr + DLmr + DLmw) + 10 x (Bcm + Bim): "
  md << "an L1 miss costs 10, a last-level miss 100, a mispredicted branch 10. \"without Bim\" drops the indirect-branch "
  md << "mispredictions: valgrind predicts an indirect branch with a 512-entry table indexed by the low 9 bits of its "
  md << "address, untagged, so a PLT stub in a GC library and a jump through gc.c's function table 512 bytes apart evict "
  md << "each other on every call (hundreds of thousands of mispredictions here that move with the link layout, not "
  md << "with the code run); a real core's branch target buffer is tagged and thousands of entries deep.\n\n"
  rows = d[:rows].map do |r|
    [r[:label], num(r[:ir]), pct(r[:ratio_ir]), num(r[:l1]), num(r[:ll]), num(r[:bcm]), num(r[:bim]), num(r[:est]), pct(r[:ratio]),
     num(r[:nob]), pct(r[:ratio_nob]), blank(r[:vs_builtin]) { pct(_1) }, blank(r[:vs_builtin_nob]) { pct(_1) },
     r[:vs_stopped] ? pct(r[:vs_stopped]) : "", r[:vs_stopped_nob] ? pct(r[:vs_stopped_nob]) : ""]
  end
  md << md_table(["configuration", "instructions", "vs default", "L1 misses", "LL misses", "cond. mispredicts", "indirect mispredicts",
                  "estimate", "vs default", "estimate without Bim", "vs default", "estimate vs built-in", "without Bim vs built-in",
                  "estimate vs stopped", "without Bim vs stopped"],
                 "lrrrrrrrrrrrrrr", rows)
  md << "\n`default` is Ruby's own library and pays the modular tax (gc.c's helpers called through the PLT, see "
  md << "`gc/sampling/shared_object.h`); the sampling library no longer does, so against `default` it starts below zero. "
  md << "What the sampler itself costs is the column against `sampling, stopped`.\n"
  md << "\n### Where the sampler's cycles go (inclusive, per sample)\n\n"
  rows = d[:sampler].flat_map do |s|
    s[:fns].map do |f|
      [s[:label], f[:name], num(s[:samples]), blank(f[:per_sample_ir]) { num(_1.round) }, blank(f[:per_sample]) { num(_1.round) },
       num(f[:l1]), num(f[:ll]), num(f[:bcm]), num(f[:bim])]
    end
  end
  md << md_table(["configuration", "function", "samples", "Ir / sample", "estimate / sample", "L1 misses", "LL misses", "cond. mispredicts",
                  "indirect mispredicts"], "llrrrrrrr", rows)
  d[:diffs].each do |x|
    md << "\n### #{x[:label]} against default, by function (exclusive, largest differences of the estimate without Bim)\n\n"
    md << md_table(["function", "Ir", "L1 misses", "LL misses", "cond. mispredicts", "indirect mispredicts", "estimate", "estimate without Bim"],
                   "lrrrrrrr", x[:rows].map { |r| [r[:name], *%i[ir l1 ll bcm bim est nob].map { |m| (r[m] < 0 ? "-" : "+") + num(r[m].abs) }] })
  end
  md << "\n"
end

def render_pairs(d)
  md = +"## 5b. Wall time in pairs (micro-benchmark, ALLOC_MICRO_N=#{num(d[:n])})\n\n"
  md << "Whole process (boot included). Each configuration runs back to back with `default`, #{d[:rounds]} rounds, the pairs "
  md << "in a shuffled order each round and `default` first or second at random; the ratio is taken within each pair, "
  md << "so a neighbour that slows the machine for a while slows both halves alike. Load average at the end: #{d[:load]}.\n\n"
  md << "**The machine was busy (load average over 1): these ratios are not reliable.**\n\n" if d[:load].to_f > 1
  md << "The 95% interval is the median's (distribution-free, from the order statistics). CPU time is the run's user + " \
        "system time: it leaves out the time the run waited for a CPU. Fastest: the configuration's fastest run over " \
        "`default`'s fastest in the same pairs (slowdowns from outside only ever add time).\n\n"
  cpu = ->(r) { r[:cpu_median] ? "#{fx(r[:cpu_median])} (#{fx(r[:cpu_min])}-#{fx(r[:cpu_max])})" : "-" }
  ci = ->(r) { r[:ci_lo] ? "#{fx(r[:ci_lo])}-#{fx(r[:ci_hi])}" : "-" }
  md << md_table(["configuration", "pairs", "median wall ratio to default", "95% interval", "min", "max", "fastest",
                  "CPU time ratio, median (range)", "median s", "default median s"], "lrrrrrrrrr",
                 d[:rows].map { |r| [r[:label], r[:rounds], fx(r[:median]), ci.(r), fx(r[:min]), fx(r[:max]), fx(r[:fastest]), cpu.(r),
                                     format("%.3f", r[:seconds]), format("%.3f", r[:default_seconds])] })
  md << "\n"
end

# -- rendering --

# align: one letter a column, "l" or "r".
def md_table(header, align, rows)
  line = ->(cells) { "| #{cells.join(" | ")} |\n" }
  line.(header) + "|#{align.chars.map { |a| a == "r" ? "---:" : "---" }.join("|")}|\n" + rows.map(&line).join
end

def blank(x) = x.nil? ? "" : yield(x)

def measured(kind, *v)
  case kind
  when :pct then pct(v[0])
  when :int then num(v[0].round)
  when :ir1 then "#{v[0].round(1)} Ir"
  when :fx then fx(v[0])
  when :fx_vs then "#{fx(v[0])} vs default, #{fx(v[1])} vs stopped"
  when :pct_nob then "#{pct(v[0])} (without Bim #{pct(v[1])})#{v[2] ? "; the sampler alone, vs stopped: #{pct(v[2])} (without Bim #{pct(v[3])})" : ""}"
  when :vs_builtin then "instructions #{pct(v[0])}, estimate #{pct(v[1])} (without Bim #{pct(v[2])})"
  when :range then "#{fx(v[0])} (#{fx(v[1])} to #{fx(v[2])})"
  end
end

PLOT_LINKS = { "overhead-instructions.png" => "instructions", "overhead-wall.png" => "wall time" }

def render_header(h)
  md = +"# Overhead of the sampling GC, side by side with its peers#{YJIT ? " (YJIT on)" : ""}\n\n"
  md << "Every workload ran with `#{YJIT_ARGS.join(" ")}` and the micro-benchmark's loop in calls of 1,000 iterations " \
        "(`ALLOC_MICRO_CHUNK`, each call entering compiled code): the mutator is compiled, the collector and the sampler " \
        "are the same C. Only the micro-benchmark's configurations run (benchmark/README.md, YJIT on).\n\n" if YJIT
  md << if h[:report_only]
          "Rendered by `benchmark/run --report-only#{h[:quick] ? " --quick" : ""}` on #{h[:at].iso8601} from the results saved in the work dir "
        else
          "Generated by `benchmark/run#{h[:quick] ? " --quick" : ""}#{YJIT ? " --yjit" : ""}` on #{h[:at].iso8601} in #{h[:minutes]} min "
        end
  plots = h[:plots].map { |f| "[#{PLOT_LINKS[f] || f}](#{f})" }
  md << "(machine: [machine.md](machine.md), commands: [commands.md](commands.md), fast path: [fastpath.md](fastpath.md)"
  md << ", plots: #{plots.join(", ")}" unless plots.empty?
  md << "). Ratios are to `RUBY_GC_LIBRARY=default`. Sampling runs use `mode: :poisson, seed: 1`, depth 128, unless stated.\n\n"
  md << "**Warning: a GC library was rebuilt during this run; numbers mix two builds.**\n\n" if h[:libs_changed]
  unless h[:kept].empty?
    kept = h[:kept].map { |ph, at| "#{ph} (from #{at ? at.iso8601 : "nothing: not run"})" }
    md << "This run measured #{h[:measured].empty? ? "nothing" : "#{h[:measured].join(", ")} only"}; kept from an earlier run: #{kept.join(", ")}.\n\n"
  end
  md
end

def render_micro(d)
  md = +"## 1. Allocation micro-benchmark, instructions (callgrind)\n\n"
  md << "`alloc_micro.rb`, ALLOC_MICRO_N=#{num(d[:n])} (#{num(d[:objects])} objects, #{num(d[:slot_bytes])} slot bytes); only the workload "
  md << "region is counted (Ruby's boot is not).\n\n"
  rows = d[:rows].map do |r|
    [r[:label], num(r[:ir]), pct(r[:ratio]), r[:gcs], blank(r[:samples]) { num(_1) }, blank(r[:per_sample]) { num(_1) },
     blank(r[:target]) { "within #{(_1 * 100).round(1)}%" }, r[:verdict]]
  end
  if (m = d[:memprof])
    rows << ["memory_profiler (N=#{num(m[:n])}, vs default at that N)", num(m[:ir]), pct(m[:ratio]), "", "", "", "", ""]
  end
  md << md_table(["configuration", "instructions", "vs default", "GCs", "samples", "Ir/sample over default", "target", "result"], "lrrrrrll", rows)
  md << "\nThe GC count column matters: a change in GC timing shows there first; those GCs are in the totals. "
  md << "The direct cost of the sampler's own code is in section 2.\n\n"

  md << "### Where the sampler's instructions go (inclusive, callgrind_annotate)\n\n"
  md << "Per sample, inclusive: `sampling_take` is the whole sample (pop the slot, draw the next gap, capture the stack, store the record); "
  md << "the stack capture is `frames_capture`, the rest (point, gap, record) is inlined into `sampling_take`; "
  md << "`marks_finished` is the end-of-marking walk over live records, `mark_roots` the marking of held classes and frames.\n\n"
  md << md_table(["configuration", "samples", "sampling_take", "of which frames_capture", "of which the rest", "marks_finished", "mark_roots", "direct total / sample"],
                 "lrrrrrrr", d[:functions].map { |r| [r[:label], num(r[:samples]), *r[:per_sample].map { |x| blank(x) { num(_1) } }] })
  md << "\n"
end

def render_depth(d)
  md = +"## 2. Per-sample cost by stack depth (instructions)\n\n"
  md << "`alloc_micro.rb` at ALLOC_MICRO_N=#{num(d[:n])} run under a recursion wrapper so that a sample in a C method has the given "
  md << "number of frames; `interval: 4096, mode: :fixed, depth: 128`. Cost = (Ir sampled - Ir stopped at the same depth) / samples; "
  md << "it includes every consequence of a sample (the miss, stack capture, record, liveness checks, and any GC-timing shift). "
  md << "\"direct\" counts only the sampler's functions (inclusive). The NEWOBJ peer is measured the same way against `default` "
  md << "(its cost per sample excludes its per-allocation hook cost, shown separately).\n\n"
  rows = d[:rows].map do |r|
    [r[:depth], r[:frames], num(r[:samples]), num(r[:per_sample].round), num(r[:direct].round), blank(r[:bound]) { "<= #{num(_1)}" }, r[:verdict],
     blank(r[:peer_per_sample]) { num(_1.round) }, blank(r[:peer_hook]) { _1.round(1) }]
  end
  md << md_table(["depth", "frames seen", "samples", "cost / sample", "direct / sample", "target", "result", "NEWOBJ peer: cost / sample",
                  "NEWOBJ peer: hook cost / allocation"], "rrrrrllrr", rows)
  md << "\n"
end

def render_liveness(d)
  md = +"## 3. GC-time cost of liveness tracking\n\n"
  md << "#{num(d[:kept])} objects kept alive, every one sampled (`interval: 1, mode: :fixed, max_samples: #{num(d[:kept])}`) against the same "
  md << "program with the sampler loaded but not started; then #{d[:loops]} `GC.start(full_mark: false)` are counted.\n\n"
  md << md_table(["", "instructions for #{d[:loops]} minor GCs", "per GC"], "lrr",
                 [["no live samples", num(d[:ir_none]), num(d[:ir_none] / d[:loops])],
                  ["#{num(d[:live])} live samples", num(d[:ir_sampled]), num(d[:ir_sampled] / d[:loops])]])
  md << "\n**#{d[:per_record].round(1)} instructions per GC per live record** (difference of totals); the liveness walk itself "
  md << "(`sampling_marks_finished`, inclusive) is #{d[:walk_per_record].round(1)} per GC per record; marking the distinct classes and frames "
  md << "(`sampling_mark_roots`) is #{num(d[:mark_roots_per_gc])} per GC in total. A minor GC of this heap costs "
  md << "#{num(d[:ir_none] / d[:loops])} instructions without samples, so #{num(d[:live])} live records add #{pct(d[:ratio])}.\n\n"
  if d[:running_per_record]
    md << "With the sampler running through the same GCs (each GC also appends a timeline row and checks the peak): "
    md << "**#{d[:running_per_record].round(1)} per GC per live record**.\n\n"
  end
  if d[:growing_per_record]
    md << "The same, one more object kept before each GC, so that every GC finds a new peak (a heap that grows at every GC), "
    md << "against the same program unsampled: **#{d[:growing_per_record].round(1)} per GC per live record**.\n\n"
  end
  if d[:per_death]
    md << "A death (the #{num(d[:live])} kept objects dropped, one full GC finding them dead, against the same program unsampled): "
    md << "**#{d[:per_death].round(1)} instructions per dead record**, its lifetime counted into its site included.\n\n"
  end
  md
end

def render_bt(d)
  md = +"## 4. binary_trees, instructions (callgrind, depth #{d[:depth]})\n\n"
  md << md_table(["configuration", "instructions", "vs default", "GCs", "samples"], "lrrrr",
                 d[:rows].map { |r| [r[:label], num(r[:ir]), pct(r[:ratio]), r[:gcs], blank(r[:samples]) { num(_1) }] })
  md << "\n"
end

def render_wall(d)
  md = +"## 5. Wall time (hyperfine, interleaved rounds, medians)\n\n"
  md << "Whole process (boot included), one run per configuration per round with the order shuffled each round. "
  md << "Ratio = median / median of default. memory_profiler runs once.\n\n"
  md << md_table(["workload", *d[:columns]], "l" + "r" * d[:columns].size,
                 d[:workloads].map { |w| [w[:label], *w[:ratios].map { |r| blank(r) { fx(_1) } }] })
  md << "\n"
  d[:workloads].each do |w|
    md << "### #{w[:label]}\n\n"
    rows = w[:rows].map do |r|
      [r[:label], r[:runs], format("%.3f", r[:median]), fx(r[:ratio]), r[:gc_time_ms], r[:gcs], r[:peak_rss_mb],
       blank(r[:samples]) { num(_1.round) }, blank(r[:samples_per_s]) { num(_1.round) }]
    end
    md << md_table(["configuration", "runs", "median s", "vs default", "GC time ms", "GCs", "peak RSS MB", "samples", "samples/s"], "lrrrrrrrr", rows)
    md << "\n"
  end
  if (g = d[:bt_gc])
    md << "GC pause impact on binary_trees (GC.stat(:time), median ms): default #{g[:default]}"
    g[:sampling].each { |label, ms| md << ", #{label} #{ms}" }
    md << ".\n\n"
  end
  md
end

def render_pypy(d)
  md = +"- **PyPy comparison.** PyPy's GC-integrated allocation sampler reported on GCBench: 3.88x at a 32 KB period, "
  md << "1.07x normalised to 1000 samples/s, at most 1.25x at a 4 MB period. The closest workload here is binary_trees "
  md << "(GCBench-like tree building)"
  if d[:wall]
    md << ": " + d[:wall].map { |w|
      "#{w[:interval]}: #{fx(w[:ratio])} wall at #{num(w[:samples_per_s].round)} samples/s (normalised to 1000 samples/s: #{fx(w[:normalised])})"
    }.join("; ")
  end
  md << "; in instructions at 32 KiB #{fx(d[:instructions_32k])}" if d[:instructions_32k]
  md << ". Wall ratios within a few percent are at the noise floor of this shared machine; the instruction counts are exact.\n"
end

def render_results(d)
  md = render_header(d[:header])
  md << render_micro(d[:micro]) if d[:micro]
  md << render_cycles(d[:cycles]) if d[:cycles]
  md << render_depth(d[:depth]) if d[:depth]
  md << render_liveness(d[:liveness]) if d[:liveness]
  md << render_bt(d[:bt]) if d[:bt]
  md << render_wall(d[:wall]) if d[:wall]
  md << render_pairs(d[:pairs]) if d[:pairs]
  md << "## Failed runs\n\n" + d[:failures].map { |f| "- #{f}\n" }.join + "\n" unless d[:failures].empty?
  md << "## Targets\n\n"
  md << md_table(%w[target bound measured result], "llll", d[:targets].map { |t| [t[:name], t[:bound], measured(*t[:measured]), t[:result]] })
  md << "\n## Notes\n\n" << render_pypy(d[:pypy]) << NOTES
end

def results_phase(plots)
  File.write(File.join(OUT, "results.md"), render_results(results_data(plots)))
end

NOTES = <<~MD
  - **Baselines.** `built-in GC` is Ruby's statically linked GC; `default` is the same collector loaded as a modular
    library (calls go through a function table), the like-for-like baseline for `sampling`, which is `default` plus
    the sampler. The peers (`NEWOBJ hook`, `trace_object_allocations`, `memory_profiler`) run on `default`.
  - **NEWOBJ hook** is `benchmark/newobj_sampler`: an internal NEWOBJ tracepoint that charges each object's slot
    size to an exponential countdown with the same mean as the sampler and records `rb_profile_frames` (frames and
    lines) at a sample, the design of dd-trace-rb, stackprof and vernier. Its cost is mostly per allocation (the VM
    calls the hook for every object), so it barely depends on the interval.
  - **No GC timing shift from samples.** A sample is taken before `newobj_cache_miss`'s incremental marking
      step (patch 0001): the step budget counts the sampled slot like any other, so samples add no marking steps
      and on the micro-benchmark every configuration runs the same number of GCs (27 in the run this was written for).  (An earlier build took the sample after
      the step, and 4 KiB ran 33 GCs instead of 27.)
  - **GC-timing sensitivity.** Loading the sampling library changes Ruby's boot by a few dozen objects (its Ruby
    API is defined at boot), which is enough to move GC trigger points: on binary_trees the stopped sampler can run a
    noticeably different number of GCs from `default` (compare the GC columns). Treat instruction differences of
    a percent or two on the real programs as GC-timing noise, and compare sampling runs with `sampling, stopped`
    there.
  - **Callgrind runs** count the workload region only (`CallgrindProbe.collect`, `--collect-atstart=no`), so Ruby's
    boot, which no configuration changes, does not dilute the ratios.
MD
