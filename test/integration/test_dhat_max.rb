# A program point's maximum (mb, mbk) is the most of its bytes live at
# one GC, which the records know (their GC numbers), not what was live at
# the global peak: objects that all lived together, then died before a
# bigger set made the peak, have their whole size as maximum and nothing
# at t-gmax; the peak's own set has its maximum at t-gmax.  Fixed mode,
# 4 KiB: about 1,000 samples a phase; nothing evicted.
require_relative "helper"
require "json"

class TestDhatMax < Minitest::Test
  N = 40_000

  def early = $early = Array.new(N) { Object.new }
  def late = $late = Array.new(2 * N) { Object.new }

  def test_the_maximum_is_a_points_own
    GC.start
    Sampler.start(interval: 4096, mode: :fixed, malloc: false)
    in_ended_thread { early }
    GC.start
    $early = nil
    GC.start
    late
    GC.start
    Sampler.stop
    d = JSON.parse(Sampler.dhat)
    assert_equal 0, Sampler.stats[:evicted]
    # (the objects' point: the block may also make an internal object
    # once, a point of its own)
    point = lambda do |method|
      d["pps"].select { |pp| pp["fs"].any? { |i| d["ftbl"][i].include?(": block in TestDhatMax##{method} (") } }
              .max_by { |pp| pp["tb"] }
    end
    e = point.("early")
    l = point.("late")
    refute_nil e
    refute_nil l

    size = PLAIN_OBJECT_SLOT
    assert_in_delta N * size, e["tb"], N * size * 0.1, "the early objects' bytes"
    assert_equal 0, e["gb"], "none at the peak"
    assert_equal 0, e["eb"], "none at the end"
    assert_in_delta e["tb"], e["mb"], e["tb"] * 0.02, "all live at once, at the GC after they were made"
    assert_in_delta e["tbk"], e["mbk"], e["tbk"] * 0.02, "blocks then"

    assert_in_delta 2 * N * size, l["gb"], 2 * N * size * 0.1, "the late ones made the peak"
    assert_equal l["gb"], l["mb"], "and their most is at the peak"
  ensure
    $early = $late = nil
  end
end
