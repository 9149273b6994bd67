# One thread in a report's slow write (its IO waits until the other
# thread is done) while another thread keeps 10 MB and allocates 30 MB at
# 3,000 new sites: nothing is lost meanwhile, as a read that ended first
# (read.h, read_run: the text is built, the read ended, then written).
# Before the fix the write ran inside the read: malloc samples queued
# past the queue's 4,096 and were lost to the totals, nothing was
# evicted, live malloc'd bytes were missed.
require_relative "helper"

class TestReadSlowWriteTotals < Minitest::Test
  def test_allocations_beside_a_reports_slow_write_are_all_counted
    out, err, status = run_ruby(<<~RUBY)
      #{ReadHelper::WORKLOAD}
      #{ReadHelper::START}
      go, done = Queue.new, Queue.new
      io = Object.new
      first = true
      io.define_singleton_method(:write) do |*s|
        if first
          first = false
          go << true
          done.pop
        end
        s.sum(&:bytesize)
      end
      writer = Thread.new { ObjectSpace::AllocationSampler.report(io) }
      go.pop
      result = Thread.new { read_workload }.value
      done << true
      writer.join
      p result
    RUBY
    assert status.success?, err
    assert_nothing_lost(workload_result(out), "beside a report's slow write")
  end
end
