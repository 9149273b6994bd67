# A sampled block's record ends when the block is freed, whoever frees it:
# another Ruby thread, a blocking region without the GVL, a thread Ruby
# does not know, or the VM at exit; and a block malloc'd without the GVL
# is counted and attributed to the synthetic frame <no GVL>, never
# dropped.  Nothing crashes or is lost meanwhile.  (xmalloc and xfree
# outside the GVL come from a small test extension, ext/nogvl.c.)
require_relative "helper"

class TestMallocFreesAnywhere < Minitest::Test
  SIZE = 8_000_000   # sampled at the default interval with probability 1 - 2e-7

  def setup
    $LOAD_PATH.unshift(nogvl_ext_dir)
    require "nogvl"
    Sampler.start(malloc: true, seed: 3)
  end

  # the live sample of a block of SIZE (or SIZE + 1: a string's NUL) made at line
  def sample_of(line)
    Sampler.samples.find do |s|
      s.kind == :malloc && s.size.between?(SIZE, SIZE + 1) && s.live? && s.frames.any? { |f| f[0] == __FILE__ && f[1] == line }
    end
  end

  def test_free_from_another_thread
    s = "x" * SIZE; line = __LINE__
    sample = sample_of(line)
    assert sample
    Thread.new { s.clear }.join   # String#clear frees the buffer, on that thread
    refute sample.live?
  end

  def test_free_without_the_gvl
    [:free_nogvl, :free_native].each do |how|
      addr = NoGVL.alloc(SIZE); line = __LINE__
      sample = sample_of(line)
      assert sample, how
      NoGVL.public_send(how, addr)
      refute sample.live?, "#{how} ended the record"
    end
  end

  def test_malloc_without_the_gvl
    before = Sampler.stats[:malloc_samples]
    addr = NoGVL.alloc_nogvl(SIZE)
    s = Sampler.samples.find { |x| x.kind == :malloc && x.size == SIZE && x.live? }
    assert s, "sampled without the GVL: #{Sampler.stats.inspect}"
    assert_equal ["<no GVL>"], s.frames.map(&:last)
    assert_operator Sampler.stats[:malloc_samples], :>, before
    assert s.live?
    NoGVL.free_nogvl(addr)
    refute s.live?
  end

  def test_frees_at_exit
    code = <<~RUBY
      $LOAD_PATH.unshift(#{nogvl_ext_dir.inspect}); require "nogvl"
      S = ObjectSpace::AllocationSampler
      S.start(malloc: true, seed: 5, interval: 4096)
      $keep = Array.new(200) { |i| "x" * (i * 997 % 60_000 + 1_000) }
      $addrs = Array.new(20) { NoGVL.alloc(100_000) }
      t = Thread.new { loop { NoGVL.free_nogvl(NoGVL.alloc_nogvl(50_000)); Thread.pass } }
      sleep 0.05
      at_exit { $addrs.each { |a| NoGVL.free_native(a) }; puts S.stats[:malloc_samples] }
    RUBY
    out, err, status = run_ruby(code, env: { "RUBY_FREE_AT_EXIT" => "1" })
    assert status.success?, err
    assert_operator out.to_i, :>, 100, out
    refute_match(/BUG|Segmentation|double free|invalid pointer/, err)
  end
end
