# A malloc'd block over 4 GiB keeps its exact size (issue 27, item 15):
# Sample#size and #memsize, and the profile's alloc_objects (weight /
# size), which read 1.5 per 6 GiB block while sizes stopped at
# 4,294,967,295.  Two 6 GiB strings (String.new(capacity:): malloc'd,
# never touched, so they cost address space, not memory) at fixed
# interval 1 GiB: each holds 6 points, weighs 6 GiB, and counts as one
# allocation.  Skipped where the system refuses 6 GiB.
require_relative "helper"

class TestMallocBlockOver4GiB < Minitest::Test
  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    S.start(malloc: true, mode: :fixed, interval: 1 << 30)
    begin
      $big = Array.new(2) { String.new(capacity: 6 << 30) }
    rescue NoMemoryError
      puts "refused"
      exit
    end
    S.samples.select { |s| s.kind == :malloc && s.live? && s.weight >= 6 << 30 }.each do |s|
      puts "sample #{s.size} #{s.memsize} #{s.weight.round}"
    end
    S.write_pprof(ENV.fetch("PROFILE"))
  RUBY

  def test_sizes_stay_exact
    Dir.mktmpdir do |dir|
      path = File.join(dir, "big.pb.gz")
      out, err, status = run_ruby(PROGRAM, env: { "PROFILE" => path })
      assert status.success?, err
      skip "6 GiB of address space refused" if out.include?("refused")
      samples = out.lines.grep(/^sample /).map { |l| l.split[1..].map(&:to_i) }
      assert_equal 2, samples.size, out
      samples.each do |size, memsize, weight|
        assert_equal (6 << 30) + 1, size, "Sample#size: capacity and terminator"
        assert_equal size, memsize, "Sample#memsize"
        assert_equal 6 << 30, weight
      end
      skip "go not installed" unless system("go version", out: File::NULL, err: File::NULL)
      big = pprof_samples(path).select { |s| s[:functions].include?("String.new") }
      assert_equal 2, big.sum { |s| s[:values][0] }, "alloc_objects: two allocations"
      assert_equal 12 << 30, big.sum { |s| s[:values][1] }, "alloc_space"
    end
  end
end
