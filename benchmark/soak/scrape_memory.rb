# scrape_memory.rb: what building profiles costs in RSS, apart from the
# profiler's tables (benchmark/results/soak.md).  Fills 10,000 sites of
# about 30 frames (2,000 methods, 2,000 label sets), then builds ten
# profiles as a scraper's requests would (pprof and a Delta's, view:
# :heap) and prints RSS and stats[:profiler_bytes] before and after.
#
#   RUBY_GC_LIBRARY=sampling build/ruby/bin/ruby benchmark/soak/scrape_memory.rb
require "stringio"
S = ObjectSpace::AllocationSampler
def rss = File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i / 1024.0
module M
  2000.times { |n| module_eval "def self.m#{n}(k) = Array.new(4) { |i| k * (i + 1) }", "gen.rb", n + 1 }
end
def deep(d, &b) = d.zero? ? b.call : deep(d - 1, &b)
S.start(interval: 1024, max_samples: 10_000, seed: 1)
r = 0
while S.stats[:sites] < 10_000
  2000.times { |n| S.with_labels(t: (r % 2000).to_s) { deep(25) { M.public_send(:"m#{n}", "x") } } }
  r += 1
end
GC.start
a = [rss, S.stats[:profiler_bytes]]
d = S::Delta.new(since: :start)
5.times { S.pprof(view: :heap); d.pprof(view: :heap) }
GC.start
b = [rss, S.stats[:profiler_bytes]]
p before: a, after_scrapes: b, gc: GC.stat.slice(:heap_live_slots, :heap_available_slots)
