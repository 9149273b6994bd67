# every= in a preforking server: a forked worker writes delta files of its
# own (its pid in %p, numbered from 1) from its own writer thread, while
# it runs and at its exit, and they add up exactly (fixed mode) to what
# the worker allocated after the fork.
require_relative "helper"
require "tmpdir"

class TestDeltaFork < Minitest::Test
  def alloc_space(path)
    pprof_samples(path).sum { |s| s[:values][1] }
  end

  def test_worker_writes_its_own_deltas
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        def work = Array.new(50) { "w" * 100 }
        pid = fork do
          t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
          kept = []
          while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 3.3
            kept << work
            kept.shift if kept.size > 100
          end
          ObjectSpace::AllocationSampler.stop
          ObjectSpace::AllocationSampler.write_pprof(#{File.join(dir, "worker-total.pb.gz").dump})
        end
        Process.wait(pid)
        puts pid
      RUBY
      out, err, status = run_ruby(code, env: {
        "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,every=1s,out=#{dir}/alloc-%p-%n.pb.gz"
      })
      assert status.success?, err
      worker = Integer(out)
      files = Dir[File.join(dir, "alloc-#{worker}-*.pb.gz")].sort_by { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      assert_operator files.size, :>=, 3, Dir.children(dir).inspect   # two or more while it ran, one at exit
      assert_equal (1..files.size).to_a, files.map { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      total = alloc_space(File.join(dir, "worker-total.pb.gz"))
      assert_operator total, :>, 1_000_000
      assert_equal total, files.sum { |f| alloc_space(f) }
      refute_empty Dir[File.join(dir, "alloc-*-1.pb.gz")] - files   # the parent's own
    end
  end
end
