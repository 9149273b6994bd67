# workload.rb: a fixed-seed program whose profiles the readers write, to
# compare their bytes between two builds of the library (run.sh).  Deep
# shared stacks over varied leaves, recursion from two lines, code that
# is loaded and dropped (its sites are named), classes that die, labels,
# malloc'd buffers.  Collections run only where it asks (GC.start): when
# the collector runs on its own depends on what malloc reports of each
# block, which moves with the heap's layout, and so with any change in
# what the library mallocs for itself.  Writes into ARGV[0]: the in-use and heap pprof
# profiles, DHAT, the report and the collapsed stacks; RUBY_GC_SAMPLING's
# out= writes the allocations profile at exit.
dir = ARGV.fetch(0)
S = ObjectSpace::AllocationSampler

module Framework
  40.times do |i|
    nxt = i == 39 ? "yield" : "layer#{i + 1}(req) { yield }"
    module_eval "def self.layer#{i}(req) = #{nxt}", "framework.rb", i + 1
  end
end

def down(d, i)
  return "x" * (16 + (i & 15)) if d.zero?

  if (i >> d) & 1 == 1
    down(d - 1, i)
  else
    down(d - 1, i)
  end
end

GC.disable
keep = []
3000.times do |i|
  Framework.layer0(i) do
    case i % 5
    when 0 then keep << down(12, i * 2_654_435_761 % (1 << 20))
    when 1 then keep << Array.new(i % 9 + 1) { |k| k.to_s * 3 }
    when 2 then S.with_labels(kind: (i % 3).to_s) { keep << ("y" * 200_000) }
    when 3 then keep << { i => i.to_s }
    else keep << [i].pack("N*") * 50
    end
  end
  keep.shift if keep.size > 2000
  next unless i % 300 == 0

  # code loaded, run and dropped: its sites are named once it is collected
  m = Module.new
  m.module_eval "def self.made#{i}(n) = Array.new(n) { |k| 'z' * (k + 1) }", "loaded#{i}.rb", 1
  keep << m.public_send(:"made#{i}", 50)
  Object.const_set(:"Dying#{i}", Class.new(Struct.new(:a))) unless Object.const_defined?(:"Dying#{i}")
  keep << Object.const_get(:"Dying#{i}").new(i)
  Object.send(:remove_const, :"Dying#{i}")
  GC.start(full_mark: i % 900 == 0)
end
4.times { GC.start }
S.stop  # (the reads below allocate: their own samples would follow each build's internals)
File.write(File.join(dir, "stats.txt"), S.stats.reject { |k, _| k.to_s =~ /memory|bytes|seconds|time/ }.inspect + "\n")
S.write_pprof(File.join(dir, "heap.pb.gz"), view: :heap)
S.write_dhat(File.join(dir, "dhat.json"))
File.open(File.join(dir, "report.txt"), "w") { |f| S.report(f, top: 50) }
S.write_collapsed(File.join(dir, "collapsed.txt"))
