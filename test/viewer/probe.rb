# Workload for test/viewer/run: distinctively named methods that allocate
# plenty at interval 4096, so each one is sampled many times.  Writes a
# gzip-compressed pprof profile to ARGV[0] (and collapsed stacks beside
# it), and the DHAT file (.dhat.json) with what the library reports about
# its top program points (.dhat-expect.json, for check-dhat.mjs).
require "json"
require_relative "dhat_expect"
out = ARGV.fetch(0)

class ViewerProbe
  def make_strings(n)
    Array.new(n) { |i| "viewer-probe-string-#{i}" * (1 + i % 4) }
  end

  def self.build_tree(depth)
    return [depth] if depth.zero?
    [build_tree(depth - 1), build_tree(depth - 1), "leaf-#{depth}" * 3]
  end

  # many small Arrays that die young: the top short-lived program point
  def self.churn(n)
    n.times { |i| pair = [i, i]; pair }
  end

  # big buffers (malloc'd) kept a while in a window, first: the most bytes
  # of all, gone before the peak
  def self.buffers(n, window)
    kept = []
    n.times do |i|
      kept << "buffer-#{i}".ljust(3000, ".")
      kept.shift if kept.size > window
    end
    nil
  end
end

sampler = ObjectSpace::AllocationSampler
sampler.start(interval: 4096, seed: 1)
keep = []
ViewerProbe.buffers(8_000, 50)
3.times do
  keep << ViewerProbe.new.make_strings(40_000)
  keep << ViewerProbe.build_tree(14)
  ViewerProbe.churn(100_000)
end
sampler.stop
sampler.write_pprof(out)
sampler.write_collapsed(out.sub(/\.pb\.gz\z/, "") + ".collapsed")
puts "probe: wrote #{out} (#{File.size(out)} bytes), #{keep.size} roots kept"

# --- DHAT: the file, and the library's own figures for its top points.
base = out.sub(/\.pb\.gz\z/, "")
dhat = base + ".dhat.json"
sampler.write_dhat(dhat)
DhatExpect.write(sampler, dhat, base + ".dhat-expect.json")
puts "probe: wrote #{dhat} (#{File.size(dhat)} bytes, #{JSON.parse(File.read(dhat))["pps"].size} program points)"
