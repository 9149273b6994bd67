# sites_memory.rb: loaded with -r into any program run under the sampler
# (RUBY_GC_SAMPLING=...): at exit, prints to stderr one line of what the
# sampler holds: samples, sites, named sites, and the profiler's memory
# (profiler_bytes) with its sites part (stats[:profiler_memory][:sites]).
#
#   RUBY_GC_LIBRARY=sampling RUBY_GC_SAMPLING=interval=4k,seed=1 \
#     ruby -r ./benchmark/sites_memory.rb RUBYDIR/bin/rdoc -q --dry-run LIB/net LIB/rubygems LIB/prism LIB/irb
at_exit do
  st = ObjectSpace::AllocationSampler.stats
  $stderr.puts "sites_memory: samples #{st[:samples]} sites #{st[:sites]} named #{st[:named]} " \
               "profiler_bytes #{st[:profiler_bytes]} sites_bytes #{st[:profiler_memory][:sites]}"
end
