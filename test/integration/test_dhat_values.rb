# The DHAT file's values are the library's estimates (as the pprof
# profile's): per program point, total bytes and blocks are site_totals'
# alloc_space and alloc_objects (sites that read the same summed), bytes
# at t-end its inuse_space, bytes at t-gmax peak_totals' (the timeline's
# peak), total lifetime the samples' objects x bytes lived
# (Sample#age_bytes, the live ones' until t-end); t-gmax is the peak's allocation clock and t-end the
# clock now.  Rounded once per point.  Fixed seed; no record is evicted
# or dropped (checked), so lifetimes are whole.
require_relative "helper"
require_relative "../viewer/dhat_expect"
require "json"

class TestDhatValues < Minitest::Test
  def kept(n) = Array.new(n) { |i| "kept string #{i}" * 2 }
  def garbage(n) = n.times { |i| pair = [i, "garbage #{i}"]; pair }
  def dropped(n) = Array.new(n) { |i| "dropped #{i}" }

  def test_values_are_the_librarys
    GC.start
    Sampler.start(interval: 4096, seed: 7, malloc: true)
    $a = dropped(20_000)
    GC.start
    $b = kept(30_000)
    garbage(50_000)
    GC.start
    $a = nil
    scrub
    GC.start
    Sampler.stop
    text = Sampler.dhat
    stats = Sampler.stats
    peak = Sampler.peak
    assert_equal [0, 0], [stats[:evicted], stats[:dropped]], "every sample kept"

    d = JSON.parse(text)
    ftbl = d["ftbl"]
    key = ->(pp) { pp["fs"].map { |i| ftbl[i].sub(/\A0x\h+: /, "") } }
    other = d["pps"].find { |pp| key.(pp) == ["<other sites> (folded sites)"] }
    pps = d["pps"] - [other]
    want = DhatExpect.points(Sampler, d["te"])
    assert_equal want.keys.sort, pps.map(&key).sort, "one point per site, as the library names them"
    pps.each do |pp|
      w = want.fetch(key.(pp))
      where = key.(pp).first(2).join(" / ")
      assert_in_delta w[:bytes], pp["tb"], 1, "total bytes of #{where}"
      assert_in_delta w[:blocks], pp["tbk"], 1, "total blocks of #{where}"
      assert_in_delta w[:end], pp["eb"], 1, "bytes at t-end of #{where}"
      assert_in_delta w[:end_blocks], pp["ebk"], 1, "blocks at t-end of #{where}"
      assert_in_delta w[:gmax], pp["gb"], 1, "bytes at t-gmax of #{where}"
      assert_in_delta w[:objtime], pp["tl"], [w[:objtime] * 1e-9, 1].max, "total lifetime of #{where}"
      assert_operator pp["mb"], :>=, [pp["gb"], pp["eb"]].max
    end

    sum = ->(k) { d["pps"].sum { |pp| pp[k] } }
    assert_in_delta stats[:live_slot_bytes] + stats[:live_malloc_bytes], sum.("eb"), d["pps"].size, "t-end: the live estimate"
    assert_in_delta peak[:live_bytes], sum.("gb"), d["pps"].size, "t-gmax: the peak's estimate"
    assert_equal peak[:total_allocated_bytes], d["tg"], "t-gmax on the allocation clock"
    assert_operator d["te"], :>, d["tg"]
    assert_operator d["te"], :<=, stats[:total_allocated_bytes], "t-end: the clock when written"

    # the sites themselves: the kept strings are all live at the end; the
    # dropped ones were at the peak (GC 2, before they were dropped), not at the end
    at = ->(frame) { pps.find { |pp| key.(pp)[0].start_with?("String") && key.(pp)[1].start_with?(frame) } }
    kept = at.("String#* ")
    gone = at.("block in TestDhatValues#dropped ")
    assert_in_delta kept["tb"], kept["eb"], kept["tb"] * 0.001
    assert_equal 0, gone["eb"]
    assert_operator gone["gb"], :>, 0
  ensure
    $a = $b = nil
  end
end
