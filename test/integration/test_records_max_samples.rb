# A later start with a smaller max_samples applies it: the oldest dead
# records go first, then the oldest live ones (counted as dropped).
require_relative "helper"

class TestRecordsMaxSamples < Minitest::Test
  def test_shrinking_is_enforced
    Sampler.start(interval: 1, mode: :fixed, max_samples: 5_000)
    $keep = Array.new(1_000) { Object.new }
    Array.new(3_000) { Object.new }
    Sampler.stop
    GC.start
    assert_operator Sampler.stats[:records], :>, 3_000
    Sampler.start(interval: 1, mode: :fixed, max_samples: 500)
    Sampler.stop
    st = Sampler.stats
    assert_operator st[:records], :<=, 500
    assert_equal st[:records], Sampler.samples.size
    assert Sampler.samples.all?(&:live?), "dead records went first"
  ensure
    $keep = nil
  end
end
