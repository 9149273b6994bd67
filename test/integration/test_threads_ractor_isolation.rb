# Sample#object never hands one Ractor an object another Ractor may own:
# once a second Ractor exists it gives shareable objects only, as
# ObjectSpace.each_object does.  (Which Ractor allocated an object does
# not say which owns it: a message is copied by its sender.)
require_relative "helper"

class TestThreadsRactorIsolation < Minitest::Test
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
    sent = "sent #{rand}"
    r.send(sent.dup)                       # copied by this Ractor, owned by the other
    copies = S.samples.select { |s| s.live? && s.klass == String }.map(&:object).compact
    r.respond_to?(:value) ? r.value : r.take
    own = S.samples.find { |s| s.live? && s.klass == String && s.frames.first[1] == 3 }
    puts [theirs.size > 50, ok_theirs, copies.all? { |o| Ractor.shareable?(o) }, !own.nil? && own.object.nil?].inspect
  RUBY

  def test_other_ractors_objects_are_not_handed_out
    out, err, status = run_ruby(PROGRAM, args: ["-W0"])
    assert status.success?, err
    assert_equal "[true, true, true, true]\n", out
  end
end
