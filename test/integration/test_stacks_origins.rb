# A sample with no Ruby frame is "<boot>" only while the VM boots;
# later (a thread starting, an external enumerator's fiber ending) it is
# "<no Ruby frame>".
require_relative "helper"

class TestStacksOrigins < Minitest::Test
  def test_no_boot_frames_after_boot
    Sampler.start(interval: 1, mode: :fixed)
    Thread.new { 1 }.join
    e = [1].each
    e.next
    begin
      e.next
    rescue StopIteration
    end
    Sampler.stop
    labels = Sampler.samples.map { |s| s.frames.map(&:last) }
    refute labels.any? { |l| l.include?("<boot>") }, "no <boot> frame mid-program"
    assert labels.any? { |l| l == ["<no Ruby frame>"] }, "frameless samples are named so"
  end

  def test_boot_frames_at_boot
    out, err, status = run_ruby('p ObjectSpace::AllocationSampler.samples.any? { |s| s.frames == [["<boot>", 0, "<boot>"]] }',
                                env: { "RUBY_GC_SAMPLING" => "interval=1k" })
    assert status.success?, err
    assert_equal "true\n", out
  end
end
