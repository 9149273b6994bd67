# The peak: a live heap that rises to a peak and falls.  The snapshot
# kept is the live set at the GC with the highest live estimate: it holds
# the sites live then and not the ones allocated after the fall, its GC
# count is that GC's, and write_pprof(view: :peak) shows it to go tool
# pprof (in use at the peak, inuse_space the default).  Fixed mode, 4 KiB:
# each phase keeps about 4 MB, 1,000 samples.
require_relative "helper"

$a = $b = $c = nil

class TestPeakSnapshot < Minitest::Test
  N = 50_000

  def rise_a = $a = Array.new(N) { "phase a string" * 3 }
  def rise_b = $b = Array.new(N) { "phase b string" * 3 }
  def after_fall = $c = Array.new(N / 2) { "phase c string" * 3 }

  def test_peak_holds_the_peak_sites
    GC.start
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 100_000)
    rise_a
    GC.start
    rise_b
    GC.start
    peak_gc = GC.count
    st = Sampler.stats
    live_at_peak = st[:live_slot_bytes]
    live_total_at_peak = live_at_peak + st[:live_malloc_bytes]
    $a = $b = nil
    scrub
    GC.start
    after_fall
    GC.start
    assert_operator Sampler.stats[:live_slot_bytes], :<, live_at_peak / 2, "the heap fell"

    peak = Sampler.peak
    assert_equal peak_gc, peak[:gc], "the peak is the GC after the rise"
    assert_equal peak_gc, Sampler.stats[:peak_gc]
    assert_in_delta live_at_peak, peak[:live_slot_bytes], 2 * 4096, "the estimate then (a sample or two since)"
    assert_in_delta live_total_at_peak, Sampler.stats[:peak_live_bytes], 1
    assert_kind_of Time, peak[:time]
    assert_operator peak[:live_bytes], :>=, 2 * N * 80 * 0.9, "both phases' strings (80-byte slots) at least"

    skip "go not installed" unless system("go version", out: File::NULL, err: File::NULL)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "peak.pb.gz")
      Sampler.write_pprof(path, view: :peak)
      raw = pprof("-raw", path)
      assert_match(%r{^inuse_objects/count inuse_space/bytes\[dflt\]$}, raw, "in-use sample types, inuse_space first")
      assert_match(/peak: GC #{peak_gc} /, raw, "the comment names the GC")
      bytes = pprof_values_by_method(path, %w[rise_a rise_b after_fall]).transform_values { |v| v ? v[1] : 0 }
      # each site's strings (80-byte slots) and its Array's malloc'd buffer of N pointers
      %w[rise_a rise_b].each do |site|
        assert_in_delta N * 88, bytes[site], N * 88 * 0.05, "#{site}'s strings are in the peak"
      end
      assert_equal 0, bytes["after_fall"], "nothing allocated after the fall"
      top = pprof("-top", path)
      assert_match(/rise_a/, top)
    end
  ensure
    $a = $b = $c = nil
  end
end
