# start_sampler.rb: loaded with -r before a ruby-bench benchmark.  When
# RB_SAMPLER_INTERVAL is set (bytes) it starts the sampler at that mean
# interval (poisson, seed 1, the library's other defaults, malloc
# sampling included), so the benchmark's own loading and warmup are
# sampled too, as in a program started under a profiler.  Unset, it does
# nothing: every configuration loads this file, so none pays for it alone.
# RB_SAMPLER_MALLOC=0 samples slots only (malloc: false), to tell malloc
# sampling's share of the cost.
if (interval = ENV["RB_SAMPLER_INTERVAL"])
  unless defined?(ObjectSpace::AllocationSampler)
    abort "start_sampler.rb: RB_SAMPLER_INTERVAL is set but RUBY_GC_LIBRARY=#{ENV["RUBY_GC_LIBRARY"].inspect} has no sampler"
  end
  opts = { interval: Integer(interval), mode: :poisson, seed: 1 }
  opts[:malloc] = false if ENV["RB_SAMPLER_MALLOC"] == "0"
  ObjectSpace::AllocationSampler.start(**opts)
end

# RB_HEAP_PERTURB=N (driver.rb's --perturb): N objects of each of the first
# three heaps (an Object, a String, an Array of 10, a Hash), kept alive for
# the run, before the benchmark loads: the same in every configuration of a
# round, another count in the next round, so a program whose GC path
# depends on a few hundred objects at boot is measured over several paths.
if (n = Integer(ENV.fetch("RB_HEAP_PERTURB", "0"))).positive?
  $rb_heap_perturb = Array.new(n) { |i| [Object.new, "a perturbation of the heap, #{i}", Array.new(10, i), { i => i }] }
end
