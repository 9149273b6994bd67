# A malloc sample queued (taken while a read was on: before read_run,
# report's IO wrote inside one) waits in the queue with its stack; the
# code on that stack (here an eval's and class bodies' iseqs, garbage
# once they have run) must still be there when the sample is applied and
# named after GCs that ran meanwhile.  (The library
# before the fix read swept iseqs here and crashed.)
require_relative "helper"

class TestMallocQueuedCode < Minitest::Test
  def test_code_of_queued_samples_survives_gcs
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.start(interval: 64, mode: :fixed, malloc: true)
      io = Object.new
      def io.write(*s)    # (now after write_collapsed's reads end)
        20.times { |i| eval("class QueuedCode\#{i}; X = 'y' * 100_000; end") }
        4.times { GC.start }
        s.sum(&:bytesize)
      end
      S.write_collapsed(io)
      4.times { GC.start }
      p S.samples.count { |s| s.kind == :malloc && s.frames.any? { |f| f[2].include?("QueuedCode") } }
      GC.verify_internal_consistency
    RUBY
    assert status.success?, err
    assert_operator Integer(out), :>=, 20, "each class body's 100 kB string is sampled at least once"
  end
end
