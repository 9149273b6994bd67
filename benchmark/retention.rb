# benchmark/retention.rb: time and memory of the retention walk per MB of
# heap.  For each target size (MB of live slot bytes, default 10 50 200)
# a fresh Ruby builds a heap of that size (a global Hash of records: an
# Array of Strings and a small Hash each, the shape of a cache), samples
# it at 512 KiB, makes some samples unreachable (so the walk must visit
# every reachable object instead of stopping once all targets are found),
# and times AllocationSampler.retention and write_pprof(view: :retention)
# three times each.  Prints a Markdown table.
#
#   RUBY_GC_LIBRARY=sampling build/ruby/bin/ruby benchmark/retention.rb [MB ...]
require "rbconfig"

if ARGV[0] == "--child"
  mb = Integer(ARGV[1])
  S = ObjectSpace::AllocationSampler
  S.start(interval: 512 * 1024)
  # live slot bytes: every heap's slot size times its live objects
  live_bytes = -> { GC.stat_heap.values.sum { |h| h[:slot_size] * (h[:total_allocated_objects] - h[:total_freed_objects]) } }
  $heap = {}
  i = 0
  GC.start
  target = mb * 1024 * 1024
  while live_bytes.call < target
    1000.times do
      $heap["k#{i}"] = { list: Array.new(4) { |j| "v#{i}.#{j}" }, n: i }
      i += 1
    end
  end
  GC.start
  # garbage samples: no root reaches them, so the walk goes to the end
  2000.times { "x" * 30 }
  slots = GC.stat(:heap_live_slots)
  heap_mb = live_bytes.call / (1024.0 * 1024)
  runs = 3.times.map do
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    r = S.retention
    wall = Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
    [r[:seconds], wall, r[:bytes], r[:objects], r[:samples].size]
  end
  pprof = 3.times.map do
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    S.pprof(view: :retention)
    Process.clock_gettime(Process::CLOCK_MONOTONIC) - t
  end
  rss = File.read("/proc/self/status")[/VmHWM:\s+(\d+)/, 1].to_i
  walk = runs.map { |r| r[0] }.min
  wall = runs.map { |r| r[1] }.min
  bytes, objects, samples = runs.last[2..4]
  puts format("| %d | %d | %.1f | %d | %d | %.1f | %.2f | %.1f | %.2f | %.2f | %.1f | %.1f | %d |",
              mb, slots, heap_mb, objects, samples, walk * 1000, walk * 1000 / heap_mb, wall * 1000,
              bytes / (1024.0 * 1024), bytes / (1024.0 * 1024) / heap_mb, pprof.min * 1000, objects.to_f * 1e9 / (walk * 1e9) / 1e6,
              rss / 1024)
  exit
end

sizes = ARGV.empty? ? [10, 50, 200] : ARGV.map { |a| Integer(a) }
puts "| target MB | live slots | heap MB (live slot bytes) | objects walked | live samples | walk ms | ms per MB | retention call ms | walk memory MiB | MiB per heap MB | pprof view ms | M objects/s | peak RSS MiB |"
puts "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
sizes.each do |mb|
  system({ "RUBY_GC_LIBRARY" => "sampling" }, RbConfig.ruby, __FILE__, "--child", mb.to_s) or abort "the #{mb} MB run failed"
end
