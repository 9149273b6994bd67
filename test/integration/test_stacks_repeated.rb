# A stack seen again is still shown exactly as caller_locations shows it.
#
# The capture first compares the live stack with the last few sites of the
# same heap (frames.c, match_pred) and, when one matches whole, takes that
# site without storing or hashing the stack.  Here the sampler runs while
# the same places allocate again and again, in runs and in random order,
# so that a stack is often the same as a recent one and often departs from
# one after some frames (same method, other block; same caller line, other
# C method; a rescue or ensure frame, whose next frame is not shown;
# recursion one level deeper; C-level blocks, not shown; one block in two
# methods): every sample must still be its own stack.
#
# The probes have ten instance variables, so they live in a heap of their
# own (the recent sites are kept per heap), and the sampled phase makes
# nothing else there: each site's expected stack is taken by
# caller_locations in a first, unsampled pass over the same lines.
require_relative "helper"

class RepeatProbe
  attr_reader :locs
  def initialize(record)
    @a = @b = @c = @d = @e = @f = @g = @h = @i = nil
    @locs = caller_locations(1) if record
  end
end

class RepeatSites
  def plain(r) = RepeatProbe.new(r)
  def in_times(r) = 1.times { return RepeatProbe.new(r) }
  def in_each(r) = [1].each { return RepeatProbe.new(r) }
  def twice(r) = [1].each { return RepeatProbe.new(r) }

  def in_rescue(r)
    raise ERR
  rescue
    RepeatProbe.new(r)
  end

  def in_ensure(r)
    p = nil
    begin
      raise ERR
    ensure
      p = RepeatProbe.new(r)
    end
  rescue
    p
  end

  ERR = RuntimeError.new("x")

  # one call instruction, two C methods (Array#map, Array#each) yielding to
  # one block: stacks that differ only in one C frame's method entry
  def c_methods(r, kind) = [1].__send__(kind ? :map : :each) { return RepeatProbe.new(r) }

  def deep(r, n) = n.zero? ? RepeatProbe.new(r) : deep(r, n - 1)

  def self.dm_class = Class.new { define_method(:dm) { |r| RepeatProbe.new(r) } }

  # C-level blocks: IFUNC frames, not shown, whose pc is 0 as a C frame's
  # is (match_step tells them apart on the method entry); the second is
  # a method whose body is a Method's proc (an IFUNC frame holding a
  # method entry)
  def in_slice(r) = [1].each_slice(1) { return RepeatProbe.new(r) }
  def in_cons(r) = [1].each_cons(1) { return RepeatProbe.new(r) }
end
RepeatSites.define_method(:via_method_proc, &RepeatSites.new.method(:plain).to_proc)

# One body, two method entries: the block inside is one block (one pc)
# whose method entry, found in the environment it was made in, is the
# module's ("block in RepeatShared#shared") or the copy's in another class
# ("block in RepeatDmB#shared"): the compare must tell them apart there,
# on short stacks and on deep ones (compared two frames a round).
module RepeatShared
  def shared(r) = [1].each { return RepeatProbe.new(r) }
  # the same, 10 blocks deep (past 24 control frames)
  def shared_deep(r, n) = [1].each { return n.zero? ? RepeatProbe.new(r) : shared_deep(r, n - 1) }
end
class RepeatDmA; include RepeatShared; end
class RepeatDmB
  define_method(:shared, RepeatShared.instance_method(:shared))
  define_method(:shared_deep, RepeatShared.instance_method(:shared_deep))
end

class TestStacksRepeated < Minitest::Test
  def frames_of(locs) = locs.map { |l| [l.path, l.lineno, l.label] }

  def drive(calls, list, record) = list.map { |i| calls[i].(record) }

  def test_every_repeated_stack_is_its_own
    sites = RepeatSites.new
    dm = RepeatSites.dm_class.new
    dma, dmb = RepeatDmA.new, RepeatDmB.new
    calls = [
      ->(r) { sites.plain(r) }, ->(r) { sites.in_times(r) }, ->(r) { sites.in_each(r) }, ->(r) { sites.twice(r) },
      ->(r) { sites.in_rescue(r) }, ->(r) { sites.in_ensure(r) },
      ->(r) { sites.c_methods(r, true) }, ->(r) { sites.c_methods(r, false) },
      ->(r) { sites.deep(r, 3) }, ->(r) { sites.deep(r, 4) }, ->(r) { dm.dm(r) },
      ->(r) { sites.in_slice(r) }, ->(r) { sites.in_cons(r) }, ->(r) { sites.via_method_proc(r) },
      # deep enough for the compare's two-frames-a-round loop (24 control
      # frames), even and odd, and with a block partway
      ->(r) { sites.deep(r, 30) }, ->(r) { sites.deep(r, 31) }, ->(r) { [r].map { |q| sites.deep(q, 30) }.first },
      ->(r) { dma.shared(r) }, ->(r) { dmb.shared(r) }, ->(r) { dma.shared_deep(r, 10) }, ->(r) { dmb.shared_deep(r, 10) },
    ]
    rng = Random.new(7)
    order = Array.new(120) { rng.rand(calls.size) }.flat_map { |i| [i] * (1 + rng.rand(3)) }
    # both passes call drive from one line, so the frames below match too;
    # the first (unsampled) records each site's stack, its fourth call
    # once the class knows its size
    warm = (0...calls.size).flat_map { |i| [i] * 4 }
    made = {}
    [true, false].each do |record|
      Sampler.start(interval: 1, mode: :fixed, max_samples: 200_000) unless record
      made[record] = drive(calls, record ? warm : order, record)
      Sampler.stop unless record
    end
    expected = made[true].each_slice(4).map { |probes| frames_of(probes.last.locs) }
    by_object = {}.compare_by_identity
    Sampler.each_sample { |s| by_object[s.object] = s if s.object.is_a?(RepeatProbe) }
    made[false].each_with_index do |obj, k|
      s = by_object[obj]
      refute_nil s, "call #{k} (site #{order[k]}) was sampled (interval 1)"
      assert_equal expected[order[k]], s.frames, "call #{k} (site #{order[k]})"
      refute s.truncated?
    end
  end
end
