# A sampled block keeps its sample through reallocs made anywhere (issue
# 27, item 1): with the GVL, in a blocking region without it, and on a
# thread Ruby does not know (whose changes are queued and applied by the
# records' owner).  A shrink to half keeps the sample live at half its
# weight, a growth to twice the size adds the growth's weight, the Sample
# read before stays the same sample (live), and the free ends it.  Then
# a thread without the GVL reallocs 32 sampled blocks up and down while
# this one allocates and reads: nothing is dropped or lost, and once all
# are freed none of their samples is live.  (8 MB blocks: sampled at
# the default interval with probability 1 - 2e-7.)
require_relative "helper"

class TestMallocReallocAnywhere < Minitest::Test
  SIZE = 8_000_000

  def setup
    $LOAD_PATH.unshift(nogvl_ext_dir)
    require "nogvl"
    Sampler.start(malloc: true, seed: 3)
  end

  def live_sample(line, size)
    Sampler.samples.find do |s|
      s.kind == :malloc && s.size == size && s.live? && s.frames.any? { |f| f[0] == __FILE__ && f[1] == line }
    end
  end

  def test_realloc_keeps_the_sample
    %i[realloc realloc_nogvl realloc_native].each do |how|
      addr = NoGVL.alloc(SIZE); line = __LINE__
      first = live_sample(line, SIZE)
      assert first, how
      addr = NoGVL.public_send(how, addr, SIZE / 2)
      half = live_sample(line, SIZE / 2)
      assert half, "#{how}: a shrink keeps the sample"
      assert_in_delta first.weight / 2, half.weight, 1, "#{how}: at half its weight"
      addr = NoGVL.public_send(how, addr, SIZE * 2)
      grown = live_sample(line, SIZE * 2)
      assert grown, "#{how}: growth keeps it"
      assert_operator grown.weight, :>, half.weight + SIZE, "#{how}: with the growth's weight"
      assert first.live?, "#{how}: the same sample"
      NoGVL.free_nogvl(addr)
      refute first.live?, "#{how}: the free ends it"
    end
    assert_equal 0, Sampler.stats[:dropped]
  end

  def test_reallocs_without_the_gvl_while_reading
    addrs = Array.new(32) { NoGVL.alloc(SIZE) }; line = __LINE__
    assert_equal 32, Sampler.samples.count { |s| s.live? && s.kind == :malloc && s.frames.any? { |f| f[1] == line } }
    worker = Thread.new do
      200.times do |i|
        k = i % addrs.size
        addrs[k] = NoGVL.realloc_nogvl(addrs[k], i.even? ? SIZE / 4 : SIZE * 2)
      end
    end
    keep = []
    while worker.alive?
      keep << "r" * 100_000
      keep.shift if keep.size > 20
      Sampler.samples.size
    end
    worker.join
    mine = Sampler.samples.select { |s| s.live? && s.kind == :malloc && s.frames.any? { |f| f[1] == line } }
    assert_equal 32, mine.size, "each block keeps one sample (stats: #{Sampler.stats.except(:heaps).inspect})"
    addrs.each { |a| NoGVL.free_nogvl(a) }
    assert mine.none?(&:live?), "and the frees end them"
    assert_equal 0, Sampler.stats[:dropped]
  end
end
