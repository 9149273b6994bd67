# A DHAT file keeps a file name past a NUL byte, as the pprof profile
# does (the frame's text is the path's bytes, JSON-escaped): before, it
# was cut at the NUL ("a:7" for "a\0b.rb:7").
require_relative "helper"
require "json"

class TestDhatNulPath < Minitest::Test
  def test_file_name_with_a_nul_is_kept
    Sampler.start(interval: 64, mode: :fixed)
    $kept = Array.new(100) { eval('"x" * 200', nil, "a\0b.rb", 7) }
    frames = JSON.parse(Sampler.dhat)["ftbl"]
    assert frames.any? { |f| f.end_with?("(a\0b.rb:7)") }, frames.grep(/a.b|a:/).first(3).inspect
  end
end
