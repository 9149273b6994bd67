# Samples the queue has no room for (a thread without the GVL mallocs
# more sampled blocks than its 4,096 events before anyone applies them)
# are dropped as records, counted in stats[:dropped], but their bytes
# still reach the allocation totals, as <other sites>: the totals stay
# exact.  (Before, a dropped sample's bytes were lost to every profile.)
require_relative "helper"

class TestMallocQueueFullTotals < Minitest::Test
  N = 10_000
  SIZE = 256    # (2.5 MB in all: no GC, which would apply the queue, meanwhile)

  def test_dropped_samples_stay_in_the_totals
    $LOAD_PATH.unshift(nogvl_ext_dir)
    require "nogvl"
    Sampler.start(interval: SIZE, mode: :fixed, malloc: true, max_samples: 100_000)
    NoGVL.alloc_many_nogvl(N, SIZE)
    st = Sampler.stats
    totals = Sampler.send(:site_totals)
    NoGVL.free_many
    assert_operator st[:dropped], :>=, N - 4096, "the queue overflowed: #{st.slice(:dropped, :malloc_samples)}"
    alloc = totals.sum { |row| row[4] }
    other = totals.select { |row| row[0][0][0] == "<other sites>" }.sum { |row| row[4] }
    # (fixed mode, interval SIZE: every block is sampled, weight SIZE)
    assert_operator alloc, :>=, N * SIZE, "every block's bytes in the totals"
    assert_operator other, :>=, (N - 4096) * SIZE, "the dropped ones' as <other sites>"
  end
end
