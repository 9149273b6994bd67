# The watcher across fork: Process.fork gives the child a watcher of its
# own (its /proc/self, its numbering from 1, its pid in the name), and
# the parent's goes on.  A child that crosses limit=SIZE (its RSS) leaves
# its own file and exits; then the parent crosses and leaves its own.
require_relative "helper"
require_relative "oom_helper"

class TestOomForkChild < Minitest::Test
  include PprofHelper

  SCRIPT = OomHelper::PRELUDE + <<~'RUBY'
    def leak_fork = "#{HALF}#{HALF}"
    child = fork do
      $keep = Array.new(130) { leak_fork }
      wait_for(File.join(ARGV[0], "f-#{$$}-*.pb.gz"))
      exit!(0)                      # (no file at exit: the watcher's only)
    end
    Process.wait(child)
    $keep = Array.new(130) { leak_fork }
    wait_for(File.join(ARGV[0], "f-#{$$}-*.pb.gz"))
    puts child
  RUBY

  def test_child_and_parent_each_write_their_own
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "MALLOC_MMAP_THRESHOLD_" => "131072",
              "RUBY_GC_SAMPLING" => "limit=200m,limit_at=0.5,out=#{dir}/f-%p-%n.pb.gz" }
      pid = nil
      out, err, status = Open3.popen3(env, RUBY, "-e", SCRIPT, dir) do |i, o, e, t|
        i.close
        pid = t.pid
        [o.read, e.read, t.value]
      end
      assert status.success?, err
      assert_equal "", err
      child = out.to_i
      files = Dir.children(dir).sort
      assert_includes files, "f-#{child}-1.pb.gz", files.inspect
      assert_includes files, "f-#{pid}-1.pb.gz", files.inspect
      [child, pid].each do |p|
        assert_match(/before the limit: RSS/, pprof("-comments", File.join(dir, "f-#{p}-1.pb.gz")))
      end
    end
  end
end
