# A sampled block keeps its record while its realloc is under way (issue
# 40, item 4).  glibc's realloc frees a moving block's old address before
# it returns, and the sampler moves the block's entry only after that:
# in between another allocation may get the old address and be freed
# through xfree, or be sampled.  Neither may end the moving block's
# record.  ext/realloc_window.c (preloaded: it is the realloc default.c
# calls) makes that happen at once, inside the window, on the
# reallocating thread: a block of 1,000 bytes at the old address, then
# freed (:free_there) or kept, sampled (:sample_there).  Under load the
# same happens between threads (test_malloc_realloc_anywhere.rb once kept
# 31 of 32 samples).
#
# Each case: a block (1,000 bytes) and a guard after it, both sampled
# (fixed mode, interval 1,000), on a thread Ruby does not know (:native:
# its countdown starts afresh, so a growth of 937 bytes holds no point
# and 2,011 bytes do) or with the GVL; the block grows to 1,937 or 3,011
# bytes.  After it the block has one live sample of its new size, which
# its free ends (its first record: the growth's points merge into it); a block sampled in the window is a sample of its own,
# ended by its own free.
#
# Each case runs 20 times and must see the window's block take the old
# address at least once: with the GVL the first few reallocs on 4.0 and
# 4.1 grow in place or find the chunk taken (4.1: 13 of 20 hit, none of
# the first 5), the native thread's always hit.
require_relative "helper"

class TestMallocReallocWindow < Minitest::Test
  CASES = [[:native, :free_there, 1937], [:native, :free_there, 3011],
           [:native, :sample_there, 1937], [:native, :sample_there, 3011],
           [:gvl, :free_there, 3011], [:gvl, :sample_there, 3011]].freeze

  def test_the_window_leaves_the_record
    dir = build_test_ext("realloc_window")
    code = <<~RUBY
      $LOAD_PATH.unshift(#{nogvl_ext_dir.dump}, #{dir.dump})
      require "nogvl"
      require "realloc_window"
      S = ObjectSpace::AllocationSampler
      S.start(malloc: true, mode: :fixed, interval: 1000, seed: 1)
      live = ->(size) { S.samples.count { |s| s.kind == :malloc && s.live? && s.size == size } }
      #{CASES.inspect}.each do |where, what, size|
        hits = 0
        20.times do
          there0 = live.(1000)
          merged0 = S.stats[:merged]
          block, guard, hit = ReallocWindow.run(where, what, size)
          hits += 1 if hit
          kept = live.(size)
          merged = S.stats[:merged] - merged0
          there = live.(1000) - there0 - 1     # (the guard)
          NoGVL.free(block)
          after_free = live.(size)
          freed_there = ReallocWindow.free_there
          NoGVL.free(guard)
          there_after = live.(1000) - there0
          puts [where, what, size, hit, kept, merged, there, after_free, freed_there.inspect, there_after].join(" ")
        end
        puts "hits \#{where} \#{what} \#{size} \#{hits}"
      end
      puts "dropped \#{S.stats[:dropped]} lost_frees \#{S.stats[:lost_frees]}"
    RUBY
    preload = File.join(dir, "realloc_window.so")
    out, err, status = run_ruby(code, env: { "LD_PRELOAD" => preload })
    assert status.success?, "#{out}\n#{err}"
    lines = out.lines.map(&:split)
    CASES.each do |where, what, size|
      hits = lines.find { |l| l[0] == "hits" && l[1..3] == [where.to_s, what.to_s, size.to_s] }
      assert hits && hits[4].to_i > 0, "#{where} #{what} #{size}: the window's block never took the old address\n#{out}"
    end
    lines.reject { |l| %w[hits dropped].include?(l[0]) }.each do |where, what, size, hit, kept, merged, there, after_free, freed_there, there_after|
      label = "#{where} #{what} #{size} (hit #{hit})"
      assert_equal "1", kept, "#{label}: the block keeps its one live sample\n#{out}"
      # (a growth that holds points joins the block's record: it is the
      # same record, not one the growth began)
      assert_equal size == "3011" ? "1" : "0", merged, "#{label}: the growth's sample joins the block's record\n#{out}"
      assert_equal "0", after_free, "#{label}: its free ends it\n#{out}"
      if what == "sample_there" && hit == "true"
        assert_equal "1", there, "#{label}: the block sampled at the old address is a sample of its own\n#{out}"
        assert_equal "true", freed_there, label
      end
      assert_equal "0", there_after, "#{label}: no sample of the window's is left live\n#{out}"
    end
    assert_equal "dropped 0 lost_frees 0", out.lines.last.chomp
  end
end
