# every= after Process.daemon: the daemon (a child, which Process._fork
# does not make) gets a writer of its own, so it writes a file every
# period while it runs, numbered from 1 under its pid, and the last one at
# exit; together they hold what it allocated after daemonizing (fixed
# mode: exactly its whole profile).
require_relative "helper"
require "tmpdir"

class TestDeltaDaemon < Minitest::Test
  def test_daemon_writes_deltas
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        Process.daemon(true, true)      # stdout stays the test's pipe: capture3 returns once the daemon has exited
        puts Process.pid
        def work = Array.new(50) { "d" * 100 }
        t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        kept = []
        while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 3.5
          kept << work
          kept.shift if kept.size > 100
          sleep 0.001
        end
        ObjectSpace::AllocationSampler.stop
        ObjectSpace::AllocationSampler.write_pprof(#{File.join(dir, "daemon-total.pb.gz").dump})
      RUBY
      out, err, status = run_ruby(code, env: {
        "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,every=1s,out=#{dir}/alloc-%p-%n.pb.gz"
      })
      assert status.success?, err
      daemon = Integer(out)
      files = Dir[File.join(dir, "alloc-#{daemon}-*.pb.gz")].sort_by { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      assert_operator files.size, :>=, 4, Dir.children(dir).inspect   # three or more while it ran, one at exit
      assert_equal (1..files.size).to_a, files.map { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      total = pprof_samples(File.join(dir, "daemon-total.pb.gz")).sum { |s| s[:values][1] }
      assert_operator total, :>, 100_000
      assert_equal total, files.sum { |f| pprof_samples(f).sum { |s| s[:values][1] } }
    end
  end
end
