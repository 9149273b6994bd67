# benchmark/retention_paths.rb: what a retention read costs beside the
# walk itself, on the shapes where paths are long or parents wide (issue
# 27, item 2).  Each case runs in a fresh Ruby (the library named by
# RUBY_GC_LIBRARY, default "sampling"), with the program paused for the
# call; prints a Markdown row per case:
#
#   list100k   a 100,000-node linked list held by a global, interval 4 KiB:
#              S.retention, then every sample's retention_path
#   list1m     a 1,000,000-node list, the default interval (512 KiB)
#   hash1m     Sample#retention_path of one value under a 1,000,000-entry
#              Hash (String keys) held by a global (a fresh walk for that
#              sample), then S.retention, then every sample's path
#
# Columns: the call's wall time, the walk's own (its :seconds), the growth
# of the process's resident set over the call (VmRSS, MiB) and the objects
# it allocated (GC.stat total_allocated_objects).
#
#   RUBY_GC_LIBRARY=sampling build/ruby/bin/ruby benchmark/retention_paths.rb [case ...]
require "rbconfig"

CASES = %w[list100k list1m hash1m].freeze

def rss_mib = File.read("/proc/self/status")[/VmRSS:\s+(\d+)/, 1].to_i / 1024.0
def now = Process.clock_gettime(Process::CLOCK_MONOTONIC)

def measure
  GC.start
  GC.disable
  rss0 = rss_mib
  obj0 = GC.stat(:total_allocated_objects)
  t0 = now
  result = yield
  wall = now - t0
  row = [wall, rss_mib - rss0, GC.stat(:total_allocated_objects) - obj0]
  GC.enable
  [result, *row]
end

class Link
  def initialize(n) = (@next = n)
end

def build_list(n)
  head = nil
  n.times { head = Link.new(head) }
  head
end

if ARGV[0] == "--child"
  name = ARGV[1]
  S = ObjectSpace::AllocationSampler
  rows = []
  case name
  when "list100k", "list1m"
    n, interval = name == "list100k" ? [100_000, 4096] : [1_000_000, 512 * 1024]
    S.start(interval: interval)
    $list = Thread.new { build_list(n) }.value
    S.stop
    r, wall, rss, objs = measure { S.retention }
    rows << ["#{name}: retention", r[:samples].size, wall, r[:seconds], rss, objs]
    _, wall, rss, objs = measure { r[:samples].sum { |s| s.retention_path.size } }
    rows << ["#{name}: every retention_path", r[:samples].size, wall, nil, rss, objs]
    _, wall, rss, objs = measure { S.pprof(view: :retention).bytesize }
    rows << ["#{name}: pprof(view: :retention)", r[:samples].size, wall, nil, rss, objs]
  when "hash1m"
    $hash = {}
    1_000_000.times { |i| $hash["key #{i}"] = i }
    S.start(interval: 1, mode: :fixed)
    Thread.new { 1000.times { |i| $hash["key #{i * 997}"] = [i] } }.join
    S.stop
    s = S.samples.select { |x| x.live? && x.klass == Array }.last
    path, wall, rss, objs = measure { s.retention_path }
    rows << ["hash1m: retention_path", 1, wall, nil, rss, objs]
    $stderr.puts path.map { |h| h[:label] }.join(" -> ") if ENV["SHOW"]
    path = nil
    r, wall, rss, objs = measure { S.retention }
    rows << ["hash1m: retention", r[:samples].size, wall, r[:seconds], rss, objs]
    _, wall, rss, objs = measure { r[:samples].count { |x| x.klass == Array && x.retention_path } }
    rows << ["hash1m: retention_path of every sample (after retention, #{r[:seconds].round(2)} s walk)", r[:samples].size, wall, nil, rss, objs]
  end
  rows.each do |label, samples, wall, walk, rss, objs|
    puts format("| %s | %d | %.2f | %s | %.1f | %d |", label, samples, wall, walk ? format("%.2f", walk) : "", rss, objs)
  end
  exit
end

cases = ARGV.empty? ? CASES : ARGV
lib = ENV.fetch("RUBY_GC_LIBRARY", "sampling")
puts "library: #{lib}"
puts "| case | samples | call s | walk s | RSS growth MiB | objects allocated |"
puts "|---|---:|---:|---:|---:|---:|"
cases.each do |c|
  system({ "RUBY_GC_LIBRARY" => lib }, RbConfig.ruby, __FILE__, "--child", c) or warn "#{c}: the run failed"
end
