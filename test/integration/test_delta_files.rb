# RUBY_GC_SAMPLING's every=: a thread writes a delta file every N seconds
# (out= with %n numbers them) and the last one is written at exit.  Each
# is a valid pprof, and in fixed mode the deltas add up exactly, in total
# and stack by stack, to the whole run's allocation totals (the profile
# written after the sampler stopped).
require_relative "helper"
require "tmpdir"

class TestDeltaFiles < Minitest::Test
  def alloc_space_by_stack(path)
    pprof_samples(path).each_with_object(Hash.new(0)) { |s, h| h[s[:functions]] += s[:values][1] }
  end

  def test_deltas_add_up_to_the_run
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        def a(n) = Array.new(n) { "a" * 60 }
        def b(n) = Array.new(n) { [1, 2, 3] }
        t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        kept = []
        while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 3.3
          kept << a(50) << b(50)
          kept.shift(50) if kept.size > 400
        end
        ObjectSpace::AllocationSampler.stop
        ObjectSpace::AllocationSampler.write_pprof(#{File.join(dir, "total.pb.gz").dump})
      RUBY
      _, err, status = run_ruby(code, env: {
        "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,every=1s,out=#{dir}/alloc-%p-%n.pb.gz"
      })
      assert status.success?, err
      assert_empty err
      files = Dir[File.join(dir, "alloc-*-*.pb.gz")].sort_by { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      assert_operator files.size, :>=, 3, files.inspect
      numbers = files.map { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      assert_equal (1..files.size).to_a, numbers

      sum = Hash.new(0)
      files.each { |f| alloc_space_by_stack(f).each { |stack, v| sum[stack] += v } }
      total = alloc_space_by_stack(File.join(dir, "total.pb.gz"))
      sum.delete_if { |_, v| v == 0 }
      total.delete_if { |_, v| v == 0 }
      assert_operator total.values.sum, :>, 1_000_000
      assert_equal total.values.sum, sum.values.sum
      assert_equal total, sum
    end
  end
end
