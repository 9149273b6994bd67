# The peak's live set stays whole when a restart with a lower max_samples
# drops its live records (the oldest live records go), also when records
# died before the peak: write_pprof(view: :peak) still shows every byte
# live at the peak.  (A dropped record was taken for one that died before
# the peak, and left the set without a trace.)  Fixed mode, 4 KiB: the
# peak holds about 1,000 samples of rise_a, the restart keeps 100.
require_relative "helper"

$a = nil

class TestPeakMaxLowered < Minitest::Test
  N = 50_000

  def garbage = 50_000.times { "garbage string" * 3 }
  def rise_a = $a = Array.new(N) { "phase a string" * 3 }

  def test_peak_survives_a_lower_max
    skip "go not installed" unless system("go version", out: File::NULL, err: File::NULL)
    GC.start
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 10_000)
    in_ended_thread { garbage }
    GC.start    # the garbage's records die before the peak
    rise_a
    GC.start
    peak_gc = GC.count
    Sampler.stop
    assert_operator Sampler.stats[:records], :>=, 1_000, "the peak's live records"
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 100)
    assert_operator Sampler.stats[:records], :<=, 100, "the restart dropped the peak's live records"
    assert_equal peak_gc, Sampler.peak[:gc]
    bytes = peak_inuse_bytes(%w[rise_a garbage])
    # rise_a's strings (80-byte slots) and its Array's malloc'd buffer of N pointers
    assert_in_delta N * 88, bytes["rise_a"], N * 88 * 0.05, "rise_a's strings are in the peak"
    assert_equal 0, bytes["garbage"], "the garbage died before the peak"
  ensure
    $a = nil
  end
end
