# Under YJIT a sampled String made by a core method that YJIT runs without
# a frame (String#dup, #byteslice, #[], #slice, #+@) still shows that
# method on top, as the interpreter and caller_locations do: the same
# program gives the same stacks with YJIT off, with YJIT compiling every
# method before its first call, and with YJIT's default threshold.
require_relative "helper"

class TestStacksYjitFrameless < Minitest::Test
  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    def m_dup(s) = s.dup
    def m_byteslice(s) = s.byteslice(0, 30)
    def m_aref(s) = s[0, 30]
    def m_slice(s) = s.slice(1, 30)
    def m_uplus(s) = +s
    def m_plain(s) = s * 2          # String#* has a frame everywhere
    STR = ("a" * 40).freeze
    S.start(interval: 1, mode: :fixed)
    200.times { m_dup(STR); m_byteslice(STR); m_aref(STR); m_slice(STR); m_uplus(STR); m_plain(STR) }
    S.stop
    out = S.samples.select { |s| s.type == :T_STRING }.filter_map do |s|
      labels = s.frames.map { _1[2] }
      i = labels.index { _1.start_with?("Object#m_") } or next
      labels[[i - 1, 0].max..i].join(" < ")
    end
    puts out.tally.select { |_, n| n >= 100 }.sort.map { |k, n| "#{k} #{n}" }
  RUBY

  def stacks(*args)
    out, err, status = run_ruby(PROGRAM, args: args)
    assert status.success?, err
    out.lines.map(&:chomp)
  end

  def test_frameless_methods_keep_their_frame
    out, = run_ruby("print defined?(RubyVM::YJIT) ? 1 : 0")
    skip "this Ruby was built without YJIT" unless out == "1"
    interpreter = stacks
    expected = ["String#* < Object#m_plain", "String#+@ < Object#m_uplus", "String#[] < Object#m_aref",
                "String#byteslice < Object#m_byteslice", "String#dup < Object#m_dup", "String#slice < Object#m_slice"]
    assert_equal expected, interpreter.map { _1.sub(/ \d+\z/, "") }
    assert_equal interpreter, stacks("--yjit", "--yjit-call-threshold=1"), "YJIT compiling every method first"
    assert_equal interpreter, stacks("--yjit", "--yjit-call-threshold=2"), "YJIT after the interpreter's first calls"
  end
end
