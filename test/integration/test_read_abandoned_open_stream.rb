# A report streamed through an external Enumerator (a lazily streamed
# Rack body) that the consumer drops after one chunk: its fiber never
# resumes (and, collected, never runs its ensure).  Nothing of the read
# stays open (read.h, read_run): the process loses nothing afterwards.
# Before the fix the whole process stayed "reading": live malloc 0,
# nothing evicted, the peak without malloc'd bytes.
require_relative "helper"

class TestReadAbandonedOpenStream < Minitest::Test
  def test_a_dropped_streaming_report_leaves_nothing_open
    out, err, status = run_ruby(<<~RUBY)
      #{ReadHelper::WORKLOAD}
      #{ReadHelper::START}
      body = Enumerator.new do |y|
        io = Object.new
        io.define_singleton_method(:write) { |*s| s.each { |c| y << c }; s.sum(&:bytesize) }
        ObjectSpace::AllocationSampler.report(io)
      end
      body.next
      body = nil
      GC.start
      p read_workload
    RUBY
    assert status.success?, err
    assert_nothing_lost(workload_result(out), "after a dropped streaming report")
  end
end
