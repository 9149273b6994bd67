# Sampling malloc'd bytes changes nothing the collector and the VM do:
# under GC.stress, across GC.compact (re-embedding frees buffers: their
# samples end), in a forked child and with Ractors, programs run, the
# counts stay consistent and sampled blocks freed there end their records.
require_relative "helper"

class TestMallocGcModes < Minitest::Test
  def test_stress_and_compaction
    Sampler.start(malloc: true, interval: 4096, seed: 9)
    GC.stress = true
    keep = Array.new(30) { |i| "s" * (1_000 + i * 100) }
    GC.stress = false
    # (too long to embed: 4.1 embeds Strings of up to 999 bytes)
    long = [700, STRING_LENGTHS.values.max + 1].max
    keep += Array.new(300) { |i| "c" * (long + i) }
    # shrink the strings so compaction can re-embed them (their buffers are freed)
    keep.each { |s| s.replace(s[0, 10]) }
    GC.compact
    GC.verify_internal_consistency
    st = Sampler.stats
    assert_operator st[:malloc_samples], :>, 10
    live = Sampler.samples.select { |s| s.kind == :malloc && s.live? }.size
    assert_operator live, :<, st[:malloc_samples], "freed buffers ended their samples"
    keep.clear
  end

  def test_fork
    Sampler.start(malloc: true, interval: 4096, seed: 9)
    # Made in a thread that ends and held only by $big_holder: no stale
    # copy of the String's reference on this stack (under YJIT, or on 4.0,
    # one kept it alive through the child's GC).
    Thread.new { $big_holder = ["x" * 2_000_000]; nil }.join
    pid = fork do
      kept = Sampler.samples.count { |s| s.kind == :malloc && s.live? && s.size >= 2_000_000 }
      $big_holder.clear
      100.times { "y" * 50_000 }
      GC.start
      gone = Sampler.samples.none? { |s| s.kind == :malloc && s.live? && s.size >= 2_000_000 }
      exit!(kept == 1 && gone && Sampler.stats[:malloc_samples] > 0 ? 0 : 1)
    end
    _, status = Process.wait2(pid)
    assert status.success?, "the child inherited the sample, freed it and sampled its own"
    assert Sampler.samples.any? { |s| s.kind == :malloc && s.live? && s.size >= 2_000_000 }, "the parent's block lives"
    assert_equal 2_000_000, $big_holder.first.size
  ensure
    $big_holder = nil
  end

  def test_ractors
    out, err, status = run_ruby(<<~'RUBY')
      Warning[:experimental] = false
      S = ObjectSpace::AllocationSampler
      S.start(malloc: true, interval: 8192, seed: 4)
      rs = 3.times.map { |i| Ractor.new(i) { |k| 200.times.map { |j| ("r" * (2_000 + j)).size }.sum + k } }
      rs.each { |r| r.respond_to?(:value) ? r.value : r.take }
      big = "m" * 3_000_000
      big = nil
      GC.start
      st = S.stats
      p [st[:malloc_samples] > 50, S.samples.count { |s| s.kind == :malloc } > 0]
    RUBY
    assert status.success?, err
    assert_equal "[true, true]\n", out
  end
end
