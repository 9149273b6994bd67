# The memcheck workload: every part of the sampler, small enough for
# valgrind (about 30 s): sampling at a small interval, minor and major GCs,
# compaction, reading every sample, all three writers, clear and stop,
# and reads that evict the records they read.
S = ObjectSpace::AllocationSampler
S.start(interval: 256, mode: :fixed, max_samples: 2000)
keep = []
20_000.times { |i| keep << ("x" * (i % 300)) if i % 7 == 0; [i] * (i % 20); { i => i } }
GC.start(full_mark: false); GC.start; GC.compact
S.samples.each { |s| s.frames; s.object; s.memsize }
S.write_pprof(File::NULL); S.write_collapsed(File::NULL); S.report(File.open(File::NULL, "w"))
S.clear; S.stop
# Reading while the reader's own allocations are sampled and evict the
# (dead) records being read: stacks must stay valid until the read ends.
S.start(interval: 1, mode: :fixed, max_samples: 64)
200.times { Object.new }
GC.start
3.times { S.samples.each(&:frames); S.write_pprof(File::NULL) }
S.stop
p keep.size
