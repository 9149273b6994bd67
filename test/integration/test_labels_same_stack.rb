# One stack under two label sets is two sites, also when the stack repeats
# a recent one: the capture's shortcut to a recent site (frames.c) must
# check the label set as the site key does.  A thread started inside
# with_labels inherits the set and runs on the same stack as one started
# outside, so alternating the two gives samples whose stacks match a
# recent site exactly and whose labels differ.
require_relative "helper"

class TestLabelsSameStack < Minitest::Test
  # ten instance variables: a heap of its own, where nothing else is made
  class Big
    def initialize = (@a = @b = @c = @d = @e = @f = @g = @h = @i = @j = nil)
  end

  def spawn_alloc = Thread.new { Array.new(50) { Big.new } }.join

  def test_labels_split_a_repeated_stack
    3.times { Big.new }   # the class learns its size before sampling
    Sampler.start(interval: 1, mode: :fixed, seed: 1)
    6.times { |i| i.odd? ? Sampler.with_labels(endpoint: "x") { spawn_alloc } : spawn_alloc }
    Sampler.stop
    counts = Hash.new(0)
    stacks = Hash.new { |h, k| h[k] = [] }
    Sampler.each_sample do |s|
      next unless s.klass == Big
      counts[s.labels] += 1
      stacks[s.labels] << s.frames
    end
    assert_equal({ {} => 150, { "endpoint" => "x" } => 150 }, counts)
    assert_equal stacks[{}].uniq, stacks[{ "endpoint" => "x" }].uniq, "the stacks are the same"
  end
end
