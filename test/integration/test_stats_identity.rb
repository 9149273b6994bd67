# Every sample is accounted for (docs/reference.md, Counters and records):
#   samples + carried == records + dropped + evicted + reader_samples + merged
# after malloc growth merged into a block's record (String#<<), with
# threads, with evictions and drops, after readers, after stop and start
# (which keeps the records: carried), and in a forked child.  (Before,
# merged growth samples and the records a start kept were missing.)
require_relative "helper"

class TestStatsIdentity < Minitest::Test
  def test_every_sample_is_accounted_for
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      def check(what)
        st = S.stats
        left = st[:samples] + st[:carried]
        right = st[:records] + st[:dropped] + st[:evicted] + st[:reader_samples] + st[:merged]
        puts [what, left, right, st.slice(:samples, :carried, :records, :dropped, :evicted, :reader_samples, :merged)].inspect
      end
      S.start(interval: 1024, seed: 7, max_samples: 5_000, malloc: true)
      s = +""
      20_000.times { s << "x" * 64 }
      check("growth")
      4.times.map { |t| Thread.new { keep = []; 3_000.times { |i| keep << "t\#{t}" * 100; keep.shift if keep.size > 500 } } }.each(&:join)
      check("threads")
      kept = Array.new(10_000) { |i| "k" * 200 }
      check("full table")
      S.report(File.open(File::NULL, "w"))
      S.samples
      check("readers")
      S.stop
      S.start(interval: 1024, seed: 8, max_samples: 5_000, malloc: true)
      20_000.times { s << "y" * 64 }
      check("stop, start")
      r, w = IO.pipe
      pid = fork do
        more = Array.new(1_000) { "c" * 300 }
        $stdout.reopen(w)
        check("forked child")
        exit!(0)
      end
      w.close
      Process.wait(pid)
      print r.read
      check("parent")
    RUBY
    assert status.success?, err
    rows = out.lines.map { |l| eval(l) }
    assert_equal ["growth", "threads", "full table", "readers", "stop, start", "forked child", "parent"], rows.map(&:first)
    rows.each { |what, left, right, st| assert_equal left, right, "#{what}: #{st}" }
    st = rows.to_h { |what, _, _, h| [what, h] }
    assert_operator st["growth"][:merged], :>, 0, "String#<< growth merged into its record"
    assert_operator st["full table"][:dropped] + st["full table"][:evicted], :>, 0
    assert_operator st["readers"][:reader_samples], :>, 0
    assert_operator st["stop, start"][:carried], :>, 0, "records kept by start"
    assert_operator st["forked child"][:carried], :>, 0, "records the child inherited"
  end
end
