# out= without %p plus fork: a forked child's files never overwrite its
# parent's.  The child adds its pid before the file name's extension
# (alloc-%n.pb.gz: the parent writes alloc-1.pb.gz, ..., a child
# alloc-1-PID.pb.gz, ...; out=p.pb.gz: the child's profile at exit is
# p-PID.pb.gz), so a merged profile of all the files counts each process's
# allocations once: the parent's files add up to the parent's whole
# profile and the child's to the child's (fixed mode: exactly).
require_relative "helper"
require "tmpdir"

class TestEnvOutForkNames < Minitest::Test
  def alloc_space(path) = pprof_samples(path).sum { |s| s[:values][1] }

  def busy(seconds) = <<~RUBY
    t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
    kept = []
    while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < #{seconds}
      kept << Array.new(50) { "w" * 100 }
      kept.shift if kept.size > 100
    end
  RUBY

  def finish(total) = <<~RUBY
    ObjectSpace::AllocationSampler.stop
    ObjectSpace::AllocationSampler.write_pprof(#{total.dump}.sub("PID", Process.pid.to_s))
  RUBY

  def test_delta_files
    Dir.mktmpdir do |dir|
      total = File.join(dir, "total-PID.pb")
      code = "#{busy(1.5)}\npid = fork { #{busy(2.5)}\n#{finish(total)} }\nProcess.wait(pid)\n#{busy(1.5)}\n#{finish(total)}\nputs pid"
      out, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,every=1s,out=#{dir}/alloc-%n.pb.gz" })
      assert status.success?, err
      assert_empty err
      child = Integer(out)
      parent_files = Dir[File.join(dir, "alloc-*.pb.gz")].grep(/alloc-\d+\.pb\.gz\z/)
      child_files = Dir[File.join(dir, "alloc-*-#{child}.pb.gz")]
      assert_operator parent_files.size, :>=, 4, Dir.children(dir).inspect
      assert_operator child_files.size, :>=, 3, Dir.children(dir).inspect
      assert_equal parent_files.size + child_files.size + 2, Dir.children(dir).size, Dir.children(dir).inspect
      parent_total = Dir[File.join(dir, "total-*.pb")].reject { |f| f.include?("-#{child}.") }.first
      assert_equal alloc_space(parent_total), parent_files.sum { |f| alloc_space(f) }
      assert_equal alloc_space(File.join(dir, "total-#{child}.pb")), child_files.sum { |f| alloc_space(f) }
    end
  end

  def test_profile_at_exit
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        def parent_work = Array.new(1000) { "p" * 100 }
        def child_work = Array.new(2000) { "c" * 100 }
        $a = parent_work
        pid = fork { $b = child_work }
        Process.wait(pid)
        puts pid
      RUBY
      out, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,out=#{dir}/p.pb.gz" })
      assert status.success?, err
      child = Integer(out)
      assert_equal ["p-#{child}.pb.gz", "p-#{child}.timeline.csv", "p.pb.gz", "p.timeline.csv"], Dir.children(dir).sort
      work = ->(path) { pprof_values_by_method(path, %w[parent_work child_work]).transform_values { _1&.at(1) } }
      parent = work.(File.join(dir, "p.pb.gz"))
      forked = work.(File.join(dir, "p-#{child}.pb.gz"))
      assert_operator parent["parent_work"], :>, 1000 * 160 * 0.9
      assert_nil parent["child_work"]
      assert_operator forked["child_work"], :>, 2000 * 160 * 0.9
      assert_equal 0, forked["parent_work"].to_i   # allocated before the fork (in use there still: inherited)
    end
  end
end
