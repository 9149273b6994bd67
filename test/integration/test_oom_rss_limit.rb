# limit=SIZE watches the process's RSS: one profile a crossing of
# limit_at x SIZE (here 0.5 x 200 MiB), none while RSS stays above, a
# new one after RSS fell below the threshold less a twentieth of the
# limit and crossed again, and at most max_files in all.  The child
# leaks through one site, waits for each file before it goes on (so no
# timing decides), frees (MALLOC_MMAP_THRESHOLD_ keeps the 1 MiB blocks
# mapped, so RSS falls at once), and leaks again; a third crossing with
# max_files=2 writes nothing.  Each file is whole, named in out='s
# sequence (%n), says why in its comments, and shows the leaking site
# first in inuse_space; the file at exit comes next in the sequence.
require_relative "helper"
require_relative "oom_helper"

class TestOomRssLimit < Minitest::Test
  include PprofHelper

  SCRIPT = OomHelper::PRELUDE + <<~'RUBY'
    def leak_rss = "#{HALF}#{HALF}"
    def files = Dir.glob(File.join(ARGV[0], "rss-*.pb.gz")).size
    $keep = []
    3.times do |i|
      150.times { $keep << leak_rss }                 # RSS ~170 MiB: above 100 MiB
      i < 2 ? wait_for(File.join(ARGV[0], "rss-#{i + 1}.pb.gz")) : sleep(0.5)   # (the third: max_files reached)
      sleep 0.3                                       # (more polls above the threshold: still one file)
      $keep.clear
      GC.start                                        # RSS ~20 MiB: below 90 MiB, re-armed
      sleep 0.3
    end
    puts files
  RUBY

  def test_one_file_a_crossing_at_most_max_files
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "MALLOC_MMAP_THRESHOLD_" => "131072",
              "RUBY_GC_SAMPLING" => "limit=200m,limit_at=0.5,max_files=2,out=#{dir}/rss-%n.pb.gz" }
      out, err, status = Open3.capture3(env, RUBY, "-e", SCRIPT, dir)
      assert status.success?, err
      assert_equal "2\n", out, "two files while it ran (max_files=2): #{err}"
      assert_equal "", err
      assert_equal %w[rss-1.pb.gz rss-2.pb.gz rss-3.pb.gz rss-3.timeline.csv], Dir.children(dir).sort,
                   "two crossings, then the one at exit (and its timeline)"
      %w[rss-1.pb.gz rss-2.pb.gz].each do |name|
        path = File.join(dir, name)
        assert_match(/before the limit: RSS \d+ bytes of 209715200 \(\d+%, limit_at=0\.5\) in this process/,
                     pprof("-comments", path))
        top = pprof("-top", "-sample_index=inuse_space", path)
        first = top.lines.drop_while { |l| !l.match?(/^\s+flat\s+flat%/) }[1]
        assert_match(/Object#leak_rss\s*$/, first, top)
      end
      refute_match(/before the limit/, pprof("-comments", File.join(dir, "rss-3.pb.gz")))
    end
  end
end
