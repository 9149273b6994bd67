# Compaction moves sampled objects, their classes and their stacks' iseqs;
# every record follows: identities, classes and frames stay right, and
# CRuby's own reference check passes.
require_relative "helper"

class TestLivenessCompaction < Minitest::Test
  class Moved; def initialize(i) = @i = i; attr_reader :i; end

  def setup
    skip "compaction unsupported" unless GC.respond_to?(:compact)
    Sampler.start(interval: 1, mode: :fixed, max_samples: 500_000)
    @objs = Array.new(5_000) { |i| make_one(i) }
    @garbage = Array.new(20_000) { Object.new }
    Sampler.stop
    @garbage = nil
    ids = @objs.to_h { |o| [o.__id__, o] }
    @samples = Sampler.samples.select { |s| ids.key?(s.object&.__id__) }
    @frames = @samples.to_h { |s| [s.object.__id__, s.frames] }
    assert_equal 5_000, @samples.size
  end

  def make_one(i) = Moved.new(i)

  def assert_records_follow
    @samples.each do |s|
      o = s.object
      refute_nil o
      assert_same Moved, s.klass
      assert_same o, @objs[o.i]
      assert_equal @frames[o.__id__], s.frames
      # (below Class#new on 3.4; 4.0's opt_new shows no frame for it)
      labels = s.frames.map(&:last)
      i = labels.index("TestLivenessCompaction#make_one")
      refute_nil i, labels.inspect
      assert_equal "block in TestLivenessCompaction#setup", labels[i + 1]
    end
    fresh = Sampler.samples.select { |s| s.klass == Moved }
    assert_equal 5_000, fresh.count { |s| s.live? }
  end

  def test_gc_compact
    GC.compact
    assert_records_follow
  end

  def test_verify_compaction_references
    GC.verify_compaction_references(expand_heap: true, toward: :empty)
    assert_records_follow
  end

  def test_auto_compact
    GC.auto_compact = true
    3.times { GC.start }
    assert_records_follow
  ensure
    GC.auto_compact = false
  end
end
