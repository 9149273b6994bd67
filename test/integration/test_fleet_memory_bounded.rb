# The profiler's own memory (stats[:profiler_bytes]) stops growing once
# its tables are full, however much more of the same the program does:
# distinct stacks (600 methods) and label sets (600 new sets a round) at
# max_samples 200.  Records are bounded by max_samples (reserved at
# start), sites by max_samples (the oldest idle one is folded), label sets
# at 4,096, the timeline's rows at 4,096 (allocated whole), the addresses
# by the code the profiles name (the same 600 methods, all named first).
# Bounded by counts, not time: once sites and label sets are full, ten
# more rounds leave every part but the sites exactly as it was.  The
# sites part moves only with the mix of frames the 200 kept share (their
# frames are a tree, sites.h: a site costs the frames it does not share
# with another kept one; here 1 to 4 nodes of 48 bytes, 300 to 500 nodes
# in all, and the node table's 512 or 1,024 heads; stated bound: 25% of
# the part, where a part that kept growing would be ten times it): 200
# sites fit the 512-slot table, and their references (at most 3 a site
# of their own, the methods' iseqs and entry, plus the shared frames':
# about 640) stay under the 1,024 that would double the 2,048-entry
# reference set.
require_relative "helper"

class TestFleetMemoryBounded < Minitest::Test
  def test_stops_growing_when_full
    out, err, status = run_ruby(<<~RUBY)
      require "stringio"
      S = ObjectSpace::AllocationSampler
      module M
        600.times do |n|
          module_eval "def self.m\#{n}(k) = Array.new(4) { |i| k * (i + 1) }", "gen.rb", n + 1
        end
      end
      # every frame named once (all 600 methods sampled and written), as
      # a long-running server's profiles end up naming its code
      S.start(interval: 1, mode: :fixed, max_samples: 10_000, malloc: false)
      600.times { |n| M.public_send(:"m\#{n}", "x") }
      S.write_pprof(StringIO.new)
      S.clear
      S.start(interval: 256, max_samples: 200, malloc: false, seed: 1)
      22.times do |round|
        600.times { |n| S.with_labels(round: round.to_s, n: n.to_s) { M.public_send(:"m\#{n}", "x") } }
        S.write_pprof(StringIO.new)     # names the frames: the addresses table
        st = S.stats
        puts [st[:sites], st[:label_sets], st[:profiler_bytes], *st[:profiler_memory].values_at(:records, :sites,
              :label_sets, :timeline, :malloc_table, :addresses, :scratch)].join(" ")
      end
    RUBY
    assert status.success?, err
    rows = out.lines.map { |l| l.split.map(&:to_i) }
    assert_equal 22, rows.size
    full = rows.index { |sites, sets| sites == 200 && sets == 4096 }
    refute_nil full, "sites and label sets never filled: #{rows.map { |r| r[0, 2] }.inspect}"
    assert_operator full, :<=, 8, "600 new label sets a round fill 4,096 by the 7th"
    # grew before
    assert_operator rows[full][2], :>, rows[0][2]
    # the round after full names the last frames; from then on, ten rounds of the same
    steady = rows[(full + 1)..]
    assert_operator steady.size, :>=, 10
    base = steady.first
    steady.each_with_index do |r, i|
      # label sets, timeline, malloc table, addresses, scratch: exactly as
      # they were; records may step once more (the peak's spill, bounded
      # by max_samples, doubles when a later GC is a new peak: seen under
      # YJIT), sites move with the mix of frames they share
      assert_equal base.values_at(5, 6, 7, 8, 9), r.values_at(5, 6, 7, 8, 9), "round #{full + 1 + i}: #{r.inspect}"
      assert_in_delta base[3], r[3], base[3] * 0.05, "records part, round #{full + 1 + i}"
      assert_in_delta base[4], r[4], base[4] * 0.25, "sites part, round #{full + 1 + i}"
      assert_equal r[3..].sum, r[2], "profiler_bytes is the sum of its parts"
    end
  end
end
