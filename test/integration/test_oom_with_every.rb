# The watcher beside every=: start(limit:) in a process whose every=
# writer already runs hands the running thread its settings, and the
# files share out='s one sequence: every='s deltas and the limit's
# profile are numbered 1, 2, 3, ... with no gap and no file twice, and
# exactly one of them says it was written before the limit.
require_relative "helper"
require_relative "oom_helper"

class TestOomWithEvery < Minitest::Test
  include PprofHelper

  SCRIPT = OomHelper::PRELUDE + <<~'RUBY'
    def leak_every = "#{HALF}#{HALF}"
    ObjectSpace::AllocationSampler.start(limit: 120 * 1024 * 1024, limit_at: 0.5)
    sleep 1.2                                         # (a delta first)
    $keep = Array.new(100) { leak_every }             # RSS above 60 MiB
    sleep 2.5                                         # (the limit's file, and deltas after it)
  RUBY

  def test_one_sequence_for_deltas_and_the_limit
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "MALLOC_MMAP_THRESHOLD_" => "131072",
              "RUBY_GC_SAMPLING" => "every=1,out=#{dir}/f-%n.pb.gz" }
      _, err, status = Open3.capture3(env, RUBY, "-e", SCRIPT)
      assert status.success?, err
      assert_equal "", err
      numbers = Dir.children(dir).grep(/\.pb\.gz\z/).map { |f| f[/\Af-(\d+)\.pb\.gz\z/, 1].to_i }.sort
      assert_operator numbers.size, :>=, 4, Dir.children(dir).inspect
      assert_equal (1..numbers.size).to_a, numbers, "one sequence, no gap"
      limits = numbers.select { |n| pprof("-comments", File.join(dir, "f-#{n}.pb.gz")).include?("before the limit: RSS") }
      assert_equal 1, limits.size, "one file before the limit among #{numbers}"
      assert_operator limits[0], :>, 1, "after the first delta"
    end
  end
end
