# Survival and liveness come from the collector's mark bits: a kept object
# stays live and ages; a dropped one is dead at the first collection that
# can see it (a minor GC for a young object, the next major GC for an old
# one); `object` is nil once dead and never another object in its slot; the
# sampler never keeps an object alive.
require_relative "helper"

$kept = nil

class TestLivenessMarkBits < Minitest::Test
  # Samples of n new strings; keep: true leaves the strings in $kept.
  # (No caller ever holds the strings in a local: a stale VM stack slot
  # would keep them alive.)
  def sampled(n = 50, keep: false)
    Sampler.start(interval: 1, mode: :fixed, max_samples: 200_000)
    objs = Array.new(n) { |i| "liveness-#{i}" * 2 }
    Sampler.stop
    ids = objs.map(&:__id__)
    samples = Sampler.samples.select { |s| ids.include?(s.object&.__id__) }
    assert_equal n, samples.size
    $kept = keep ? objs : nil
    samples
  end

  def test_kept_object_lives_and_ages
    samples = sampled(20, keep: true)
    4.times { GC.start(full_mark: false) }
    GC.start
    samples.each do |s|
      assert s.live?
      assert_nil s.freed_gc
      assert_operator s.age, :>=, 5
      assert_includes $kept, s.object
    end
    assert samples.all?(&:old?), "kept through 5 GCs: promoted (RVALUE_OLD_AGE #{GC::INTERNAL_CONSTANTS[:RVALUE_OLD_AGE]})"
  ensure
    $kept = nil
  end

  def make_young_garbage = sampled(200)

  def test_young_object_dies_at_minor_gc
    samples = make_young_garbage
    scrub
    GC.start(full_mark: false)
    dead = samples.reject(&:live?)
    assert_operator dead.size, :>=, 190, "young garbage dies at the first minor GC (conservative stack scan may keep a few)"
    dead.each do |s|
      assert_equal GC.count, s.freed_gc
      assert_nil s.object
      assert_nil s.memsize
    end
  end

  def test_old_object_dies_at_next_major_gc
    samples = sampled(50, keep: true)
    4.times { GC.start(full_mark: false) }
    assert samples.all?(&:old?)
    $kept = nil
    scrub
    GC.start(full_mark: false)
    assert samples.all?(&:live?), "a minor GC does not see old garbage"
    GC.start(full_mark: true)
    dead = samples.reject(&:live?)
    assert_operator dead.size, :>=, 45
    dead.each { |s| assert_equal GC.count, s.freed_gc }
  end

  def test_not_retained
    wm = ObjectSpace::WeakMap.new
    keys = []
    make = lambda do
      Sampler.start(interval: 1, mode: :fixed)
      200.times { |i| o = Object.new; k = "k#{i}"; keys << k; wm[k] = o }
      Sampler.stop
    end
    make.call
    scrub
    GC.start
    alive = keys.count { |k| wm.key?(k) }
    assert_operator alive, :<=, 10, "sampled objects are collected like any other (#{alive} of 200 survived)"
    assert_equal 200, Sampler.samples.count { |s| s.klass == Object }
  end

  def test_slot_reuse_never_gives_another_object
    samples = make_young_garbage
    scrub
    GC.start
    dead = samples.reject(&:live?)
    refute_empty dead
    fill = Array.new(50_000) { "reuse-slots!" * 2 }  # same slot size as the dead strings
    GC.start(full_mark: false)
    dead.each { |s| assert_nil s.object }
    assert fill.size == 50_000
  end

  def test_live_count
    Sampler.start(interval: 1, mode: :fixed)
    $kept = Array.new(100) { Object.new }
    Sampler.stop
    GC.start
    live = Sampler.samples.count(&:live?)
    assert_equal live, Sampler.stats[:live]
    assert_operator live, :>=, 100
  ensure
    $kept = nil
  end

  def test_memsize
    Sampler.start(interval: 1, mode: :fixed)
    big = "x" * 100_000
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(big) }
    assert_operator s.memsize, :>=, 100_000, "memsize includes the malloc'd buffer"
    assert_equal 40, s.size
  end

  def self.noop_finalizer = proc {}   # made here, so it captures no object

  def finalized_samples
    Sampler.start(interval: 1, mode: :fixed)
    objs = Array.new(20) { Object.new }
    objs.each { |o| ObjectSpace.define_finalizer(o, TestLivenessMarkBits.noop_finalizer) }
    Sampler.stop
    ids = objs.map(&:__id__)
    Sampler.samples.select { |s| ids.include?(s.object&.__id__) }
  end

  def test_zombie_counts_dead
    samples = finalized_samples
    assert_equal 20, samples.size
    scrub
    GC.start
    dead = samples.reject(&:live?)
    assert_operator dead.size, :>=, 15, "objects with finalizers die (become zombies) at the collection that finds them"
    dead.each { |s| assert_equal GC.count, s.freed_gc }
  end

  def test_gc_stress_tiny_interval
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.start(interval: 64, mode: :fixed, max_samples: 2000)
      GC.stress = true
      h = {}
      300.times { |i| h[i] = ["s" * (i % 700), [i] * (i % 40), { i => i.to_s }]; h.delete(i - 10) }
      GC.stress = false
      s = S.samples
      p [s.size > 0, s.all? { |x| x.frames.is_a?(Array) }, S.stats[:live] <= s.size]
    RUBY
    assert status.success?, err
    assert_equal "[true, true, true]\n", out
  end
end
