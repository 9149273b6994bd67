# Label sets are interned and bounded: the same labels are one set however
# often they are used; past the cap (4096) a new set is not kept, the
# block runs with the enclosing labels, and stats counts the drop.  Bad
# labels raise ArgumentError naming what is wrong, before the block runs.
require_relative "helper"

class TestLabelsBounded < Minitest::Test
  CAP = 4096

  def test_interned_and_capped
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.start(interval: 1, mode: :fixed)
      3.times { S.with_labels(k: "same") { } }
      3.times { S.with_labels("k" => :same) { } }
      p S.stats[:label_sets]
      (#{CAP} + 10).times { |i| S.with_labels(n: i.to_s) { } }
      st = S.stats
      p [st[:label_sets], st[:label_sets_dropped]]
      S.clear
      r = S.with_labels(outer: "o") { S.with_labels(n: "new") { Array.new(50) { "x" * 50 } ; :ran } }
      p r
      p S.samples.map(&:labels).uniq
    RUBY
    assert status.success?, err
    lines = out.lines.map(&:chomp)
    assert_equal "1", lines[0]
    # {k: same} and CAP + 10 sets {n: i}: CAP kept, 11 dropped
    assert_equal "[#{CAP}, 11]", lines[1]
    assert_equal ":ran", lines[2]
    # neither {outer: o} nor the merged set fits: the labels in effect stay (none)
    assert_equal "[{}]", lines[3]
  end

  def test_bad_labels_raise
    ran = false
    e = assert_raises(ArgumentError) { Sampler.with_labels(k: 1) { ran = true } }
    assert_match(/labels: value of :k must be a String or Symbol/, e.message)
    e = assert_raises(ArgumentError) { Sampler.with_labels(k: "a\0b") { ran = true } }
    assert_match(/NUL/, e.message)
    e = assert_raises(ArgumentError) { Sampler.with_labels(**(1..17).to_h { |i| [:"k#{i}", "v"] }) { ran = true } }
    assert_match(/at most 16 labels/, e.message)
    e = assert_raises(ArgumentError) { Sampler.with_labels(k: "v") }
    assert_match(/block is required/, e.message)
    refute ran
  end
end
