# The peak's live set stays whole when its records go: after the fall,
# new samples evict the peak's dead records (max_samples is small), and
# write_pprof(view: :peak) still shows every byte live at the peak, by
# its sites (what the peak needs of an evicted record is kept beside the
# records, records.h).  Fixed mode, 4 KiB: the peak holds about 2,000
# samples, then 5,000 samples of garbage evict them.
require_relative "helper"

$a = $b = nil

class TestPeakEvicted < Minitest::Test
  N = 50_000

  def rise_a = $a = Array.new(N) { "phase a string" * 3 }
  def rise_b = $b = Array.new(N) { "phase b string" * 3 }
  def garbage = 250_000.times { "garbage string" * 3 }

  def test_peak_survives_eviction
    skip "go not installed" unless system("go version", out: File::NULL, err: File::NULL)
    GC.start
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 2_500)
    rise_a
    rise_b
    GC.start
    peak_gc = GC.count
    $a = $b = nil
    scrub
    GC.start
    garbage
    GC.start
    assert_operator Sampler.stats[:evicted], :>=, 2_000, "the peak's records were evicted"
    assert_equal peak_gc, Sampler.peak[:gc]
    bytes = peak_inuse_bytes(%w[rise_a rise_b garbage])
    # each site's strings (80-byte slots) and its Array's malloc'd buffer of N pointers
    %w[rise_a rise_b].each { |site| assert_in_delta N * 88, bytes[site], N * 88 * 0.05, "#{site}'s strings are in the peak" }
    assert_equal 0, bytes["garbage"], "nothing allocated after the fall"
  ensure
    $a = $b = nil
  end
end
