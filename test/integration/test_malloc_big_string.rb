# A 10 MB string is one malloc of 10 MB: at the default interval (512 KiB,
# Poisson) it holds a point with probability 1 - exp(-10e6/524288) =
# 1 - 5e-9, so it is sampled, at the line that made it, with a weight of
# size / (1 - exp(-size/interval)) = 10 MB (to 1e-8).  It is in inuse_space
# while it lives, and leaves it once collected (malloc samples die exactly
# when their block is freed).
require_relative "helper"

class TestMallocBigString < Minitest::Test
  SIZE = 10_000_000

  def big_samples
    Sampler.samples.select { |s| s.kind == :malloc && s.size >= SIZE }
  end

  def test_ten_megabytes_at_its_line
    Sampler.start(malloc: true, seed: 15)
    # Made in a thread that ends and held only by `holder`: no stale copy
    # of the String's reference on this stack keeps it alive past the GC
    # below (seen under YJIT on 4.0.5).
    holder = []
    line = nil
    Thread.new do
      holder << "x" * SIZE; line = __LINE__     # (not Thread.new's line: the thread's stack is a block too)
    end.join
    samples = big_samples
    assert_equal 1, samples.size, "one sample of the 10 MB buffer: #{Sampler.stats.inspect}"
    s = samples.first
    assert_equal [__FILE__, line], s.frames.find { |f| f[0] == __FILE__ }&.first(2)
    assert_in_delta SIZE + 1, s.weight, SIZE * 1e-6, "weight ~ 10 MB"
    assert s.live?
    assert_nil s.object, "a malloc'd block is not an object"
    assert_equal :malloc, s.type
    assert_operator Sampler.stats[:malloc_allocated_bytes], :>=, SIZE

    inuse = site_inuse(line)
    assert_in_delta SIZE, inuse, SIZE * 0.01, "inuse_space at the line while it lives"

    holder.clear
    GC.start
    refute s.live?, "freed with its string"
    refute big_samples.first.live?
    assert_in_delta 0, site_inuse(line), 1, "inuse_space at the line after the collection"
  end

  # inuse_space of the malloc sites at this file's line, from the collapsed
  # reader (whose stacks end in [malloc] for malloc'd bytes)
  def site_inuse(line)
    io = StringIO.new
    Sampler.write_collapsed(io, value: :inuse_space)
    Sampler.samples.select { |s| s.kind == :malloc && s.live? && s.frames.any? { |f| f[0] == __FILE__ && f[1] == line } }
           .sum(&:weight).tap do |sum|
      assert_match(/;\[malloc\] \d+$/, io.string) if sum > 0
    end
  end
end
