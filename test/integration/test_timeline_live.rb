# The timeline's live estimate tracks the collector's own count: after
# each full GC, the row's live_slot_bytes is within 5% (+ 64 KiB) of the
# live slots GC.stat_heap counts (allocated - freed, times each heap's slot
# size) above what was live when the sampler started.  Fixed mode at
# 1 KiB: about 16,000 samples over 16 MB; a random half of the objects is
# kept (fixed seed), so the estimate's error is binomial: about 1% at
# one sigma, the bound about 4.5 sigma.
require_relative "helper"

$kept = nil

class TestTimelineLive < Minitest::Test
  def live_slot_bytes
    GC.stat_heap.sum { |_, h| (h[:total_allocated_objects] - h[:total_freed_objects]) * h[:slot_size] }
  end

  def churn(rng, n)
    n.times do
      s = "timeline" * (1 + rng.rand(60))     # 40- to 640-byte slots
      $kept << s if rng.rand(2) == 0
    end
  end

  def test_estimate_tracks_heap_live_slots
    rng = Random.new(1234)
    $kept = []
    GC.start
    base = live_slot_bytes
    Sampler.start(interval: 1024, mode: :fixed, max_samples: 200_000)
    4.times do |round|
      churn(rng, 25_000)
      GC.start
      row = Sampler.timeline.last
      assert_equal GC.count, row[:gc]
      assert row[:major]
      actual = live_slot_bytes - base
      warn "round #{round}: estimate #{row[:live_slot_bytes]} actual #{actual}" if ENV["VERBOSE"]
      assert_in_delta actual, row[:live_slot_bytes], 0.05 * actual + 65_536, "round #{round}"
      assert_operator row[:live_samples], :>, 0
    end
    $kept = nil
    GC.start
    assert_operator Sampler.timeline.last[:live_slot_bytes], :<, 65_536, "and falls when they go"
  ensure
    $kept = nil
  end
end
