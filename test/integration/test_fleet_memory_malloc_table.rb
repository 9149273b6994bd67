# The table of sampled malloc'd blocks is sized by the blocks it holds,
# not by the blocks ever sampled: a program whose live malloc'd memory is
# bounded (2,000 Strings, replaced at random, 200 B to 8 KB) keeps a
# table of bounded size however many blocks it samples and frees.  The
# table rebuilt to twice its size at every rebuild, tombstones of freed
# blocks included, so it doubled again and again (profiler_memory's
# malloc_table: 3.7 MB after 95,000 samples, 13 MB after 1.1 million;
# 1.3 MB throughout now).  Bounded by counts: 12 rounds of
# 100,000 replacements (about 95,000 samples each); the table at the end
# is at most twice (one rebuild) what it was after the second round.  A
# GC every 10,000 replacements bounds the garbage (and its blocks, still
# live until swept) alike on every Ruby: 4.1 collects a third as often as
# 4.0 on this program, which left up to 4 times the blocks live.
require_relative "helper"

class TestFleetMemoryMallocTable < Minitest::Test
  def test_bounded_by_live_blocks
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.start(interval: 256, max_samples: 1000, malloc: true, seed: 1)
      pool = Array.new(2000)
      r = Random.new(1)
      12.times do
        10.times do
          10_000.times { pool[r.rand(2000)] = "y" * (200 + r.rand(8000)) }
          GC.start
        end
        st = S.stats
        puts "\#{st[:malloc_samples]} \#{st[:profiler_memory][:malloc_table]}"
      end
    RUBY
    assert status.success?, err
    rows = out.lines.map { |l| l.split.map(&:to_i) }
    assert_operator rows.last[0], :>, 500_000, "enough malloc samples to churn the table"
    assert_operator rows.last[1], :<=, 2 * rows[1][1], "malloc_table by round: #{rows.map(&:last).inspect}"
  end
end
