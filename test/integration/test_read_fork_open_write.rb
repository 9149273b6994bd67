# A fork while a streaming read writes (report to an IO whose write runs
# the program's code: here the write forks, as another thread could while
# the GVL is free) leaves the child a sampler that loses nothing: no read
# is open while the program's code runs (read.h, read_run).  Before the
# fix the child was "reading" for good: live malloc 0, nothing evicted,
# malloc samples queued and never counted, the peak without malloc'd
# bytes.
require_relative "helper"

class TestReadForkOpenWrite < Minitest::Test
  def test_child_forked_in_a_reports_write_loses_nothing
    out, err, status = run_ruby(<<~RUBY)
      #{ReadHelper::WORKLOAD}
      #{ReadHelper::START}
      r, w = IO.pipe
      io = Object.new
      def io.write(*s)
        @pid ||= fork { $stdout.reopen(@w); p read_workload; exit!(0) }
        s.sum(&:bytesize)
      end
      io.instance_variable_set(:@w, w)
      ObjectSpace::AllocationSampler.report(io)
      w.close
      Process.wait(io.instance_variable_get(:@pid))
      print r.read
    RUBY
    assert status.success?, err
    assert_nothing_lost(workload_result(out), "child forked in report's write")
  end
end
