# grow=SIZE: a slow leak leaves a series of profiles.  A child leaks
# four steps of 48 MiB through one site (a GC after each, so the live
# estimate, read at the end of a GC's sweep, sees it; it waits for each
# file before the next step, so no timing decides); with grow=32m each
# step is one new high by a step (48 > 32, and two steps' 96 < 3 x 32:
# never two files a step), so there are exactly four files, then the one
# at exit.  `go tool pprof -diff_base` between the first and the third
# shows the leaking site first, grown by two steps (96 MiB, within 10%:
# the 1 MiB blocks are far above the 64 KiB interval, so each is
# sampled with a weight near its size).
require_relative "helper"
require_relative "oom_helper"

class TestOomGrowSteps < Minitest::Test
  include PprofHelper

  SCRIPT = OomHelper::PRELUDE + <<~'RUBY'
    def leak_step = "#{HALF}#{HALF}"
    def files = Dir.glob(File.join(ARGV[0], "grow-*.pb.gz")).size
    $keep = []
    4.times do |i|
      48.times { $keep << leak_step }
      GC.start
      wait_for(File.join(ARGV[0], "grow-#{i + 1}.pb.gz"))
    end
    sleep 0.3       # (no fifth file while nothing grows)
    puts files
  RUBY

  def test_stepwise_leak_leaves_a_profile_a_step
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=64k,seed=38,grow=32m,out=#{dir}/grow-%n.pb.gz" }
      out, err, status = Open3.capture3(env, RUBY, "-e", SCRIPT, dir)
      assert status.success?, err
      assert_equal "", err
      assert_equal "4\n", out
      assert_equal %w[grow-1.pb.gz grow-2.pb.gz grow-3.pb.gz grow-4.pb.gz grow-5.pb.gz grow-5.timeline.csv], Dir.children(dir).sort
      highs = (1..4).map do |n|
        comments = pprof("-comments", File.join(dir, "grow-#{n}.pb.gz"))
        comments[/grow: a new high of the estimated live heap, (\d+) bytes \(grow=33554432\)/, 1]&.to_i or flunk(comments)
      end
      highs.each_cons(2) { |a, b| assert_operator b - a, :>=, 32 << 20, "each a step above the last: #{highs}" }

      top = pprof("-top", "-sample_index=inuse_space", "-unit=MB",
                  "-diff_base", File.join(dir, "grow-1.pb.gz"), File.join(dir, "grow-3.pb.gz"))
      first = top.lines.drop_while { |l| !l.match?(/^\s+flat\s+flat%/) }[1]
      assert_match(/Object#leak_step\s*$/, first, top)
      grown = first[/^\s*([\d.]+)MB/, 1].to_f
      assert_in_delta 96 * 1.048576, grown, 0.1 * 96 * 1.048576, top
    end
  end
end
