# benchmark/retention_pause.rb: the pause of the Rack middleware's
# retention route against its cap (retention_max_objects:).  For each
# heap (SHAPE x objects) a fresh Ruby builds it, samples at 512 KiB,
# then serves GET /debug/pprof/retention through the middleware (called
# in-process, as a server thread would) with each cap, while a ticker
# thread wakes every millisecond: the pause is the longest gap the
# ticker saw (the program's view: the route holds the GVL throughout),
# beside the route's wall time and whether the walk was cut.  Prints a
# Markdown table; the fastest of three runs per cap.
#
#   RUBY_GC_LIBRARY=sampling build/ruby/bin/ruby benchmark/retention_pause.rb [SHAPE:MILLIONS ...]
#
# Shapes: cache (a global Hash of records: a small Hash with an Array of
# four Strings each, as benchmark/retention.rb), wide (one Array of
# Strings), list (a linked list of Structs: the deepest paths).
require "rbconfig"

CAPS = [100_000, 1_000_000, nil].freeze

if ARGV[0] == "--child"
  require "allocation_sampler/middleware"
  S = ObjectSpace::AllocationSampler
  shape = ARGV[1]
  n = (Float(ARGV[2]) * 1_000_000).to_i
  S.start(interval: 512 * 1024)
  case shape
  when "cache" then $heap = {}; (n / 7).times { |i| $heap["k#{i}"] = { list: Array.new(4) { |j| "v#{i}.#{j}" }, n: i } }
  when "wide" then $heap = Array.new(n) { |i| "s#{i}" }
  when "list"
    node = Struct.new(:next, :value)
    head = nil
    (n / 2).times { |i| head = node.new(head, "v#{i}") }
    $heap = head
  end
  GC.start
  slots = GC.stat(:heap_live_slots)
  env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => "/debug/pprof/retention", "QUERY_STRING" => "",
          "REMOTE_ADDR" => "127.0.0.1" }
  clock = -> { Process.clock_gettime(Process::CLOCK_MONOTONIC) }
  CAPS.each do |cap|
    mw = S::Middleware.new(->(_) {}, retention_max_objects: cap)
    best = 3.times.map do
      gap = 0.0
      stop = false
      ticker = Thread.new do
        last = clock.()
        until stop
          sleep 0.001
          now = clock.()
          gap = now - last if now - last > gap
          last = now
        end
      end
      sleep 0.05
      t = clock.()
      status, headers, = mw.call(env)
      wall = clock.() - t
      sleep 0.01
      stop = true
      ticker.join
      raise "status #{status}" unless status == 200

      [gap, wall, headers.key?("x-retention-cut")]
    end.min_by(&:first)
    puts format("| %s | %.1f M | %.2f M | %s | %.0f | %.0f | %s |", shape, slots / 1e6, n / 1e6,
                cap ? "#{cap / 1000}k" : "none", best[0] * 1000, best[1] * 1000, best[2] ? "cut" : "whole")
    $stdout.flush
  end
  exit
end

heaps = ARGV.empty? ? %w[cache:1 cache:4 wide:4 list:4] : ARGV
puts "| heap | live slots | objects built | cap | pause ms | route ms | walk |"
puts "|---|---|---|---|---|---|---|"
heaps.each do |spec|
  shape, millions = spec.split(":")
  system(RbConfig.ruby, "-I", File.expand_path("../lib", __dir__), __FILE__,
         "--child", shape, millions, exception: true)
end
