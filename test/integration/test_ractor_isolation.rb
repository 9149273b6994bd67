# Sample#object never hands one Ractor an object another Ractor owns
# (unless it is shareable), as ObjectSpace.each_object hides them; a
# Ractor still gets its own objects.
require_relative "helper"

class TestRactorIsolation < Minitest::Test
  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    S.start(interval: 1, mode: :fixed)
    mine = "main-owned #{rand}"
    r = Ractor.new do
      theirs = Array.new(100) { |i| "ractor-owned-#{i}".dup }
      shared = Ractor.make_shareable(["shareable".dup])
      Ractor.receive
      [theirs.size, shared.size]
    end
    sleep 0.1 until S.samples.any? { |s| s.frames.any? { |f| f[2] =~ /block in <main>/ } && s.type == :T_STRING && s.live? }
    samples = S.samples
    theirs = samples.select { |s| s.frames.any? { |f| f[2] =~ /block (\(2 levels\) )?in <main>/ } && s.type == :T_STRING }
    handed = theirs.map(&:object).compact
    ok_theirs = handed.all? { |o| Ractor.shareable?(o) }
    own = samples.find { |s| s.live? && s.object.equal?(mine) }
    r.send(:go)
    r.respond_to?(:value) ? r.value : r.take
    puts [theirs.size > 50, ok_theirs, !own.nil?].inspect
  RUBY

  def test_other_ractors_objects_are_not_handed_out
    out, err, status = run_ruby(PROGRAM, args: ["-W0"])
    assert status.success?, err
    assert_equal "[true, true, true]\n", out
  end
end
