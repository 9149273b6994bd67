# limit=auto in a cgroup with no limit anywhere up its hierarchy: one
# warning, and only after about 2 s (20 polls) with none read, since a
# supervisor may set the limit, or move the process into its cgroup,
# just after it starts; a limit set within that time is watched (its
# file written) and no warning printed.  Needs root and a memory cgroup;
# skips, saying why, where it cannot, or where a parent has a limit.
require_relative "helper"
require_relative "oom_helper"

class TestOomNoLimitWarning < Minitest::Test
  include OomHelper

  def test_warning_only_when_no_limit_appears
    cgroup, kind = make_cgroup(limit: nil)
    file = kind == :v1 ? "memory.limit_in_bytes" : "memory.max"
    parents = File.dirname(cgroup)
    limited = File.exist?(File.join(parents, file)) && File.read(File.join(parents, file)).strip.match?(/\A\d+\z/) &&
              File.read(File.join(parents, file)).to_i < 2**62
    skip "a parent cgroup has a memory limit" if limited
    Dir.mktmpdir do |dir|
      setting = "limit=auto,limit_at=0.5,out=#{dir}/w-%n.pb.gz"
      _, err, status = run_in_cgroup(cgroup, setting, "sleep 3")
      assert status.success?, err
      assert_equal 1, err.lines.size, err
      assert_match(/\Aruby: warning: RUBY_GC_SAMPLING: limit=auto: the memory cgroup #{Regexp.escape(cgroup)} and its parents have no limit \(yet\)\n\z/, err)

      # a limit set 0.5 s after the start: watched, no warning
      code = <<~'RUBY'
        $stdout.sync = true
        puts :started
        sleep 1.5                                   # (the limit comes meanwhile; it is read within a second)
        def leak_late = "#{HALF}#{HALF}"
        $keep = Array.new(100) { leak_late }        # 100 MiB: above half of 150 MiB
        wait_for(File.join(ARGV[0] || "", "*.pb.gz"))
      RUBY
      setter = Thread.new do
        sleep 0.5
        File.write(File.join(cgroup, file), (150 << 20).to_s)
      end
      _, err, status = run_in_cgroup(cgroup, setting, code.sub("ARGV[0] || \"\"", dir.dump))
      setter.join
      assert status.success?, err
      assert_equal "", err
      assert_equal ["w-1.pb.gz", "w-2.pb.gz"], Dir.children(dir).grep(/\.pb\.gz\z/).sort, "the limit's file, then the one at exit"
    end
  ensure
    remove_cgroup(cgroup)
  end
end
