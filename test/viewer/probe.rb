# Workload for test/viewer/run: distinctively named methods that allocate
# plenty at interval 4096, so each one is sampled many times.  Writes a
# gzip-compressed pprof profile to ARGV[0] (and collapsed stacks beside it).
out = ARGV.fetch(0)

class ViewerProbe
  def make_strings(n)
    Array.new(n) { |i| "viewer-probe-string-#{i}" * (1 + i % 4) }
  end

  def self.build_tree(depth)
    return [depth] if depth.zero?
    [build_tree(depth - 1), build_tree(depth - 1), "leaf-#{depth}" * 3]
  end
end

sampler = ObjectSpace::AllocationSampler
sampler.start(interval: 4096, seed: 1)
keep = []
3.times do
  keep << ViewerProbe.new.make_strings(40_000)
  keep << ViewerProbe.build_tree(14)
end
sampler.stop
sampler.write_pprof(out)
sampler.write_collapsed(out.sub(/\.pb\.gz\z/, "") + ".collapsed")
puts "probe: wrote #{out} (#{File.size(out)} bytes), #{keep.size} roots kept"
