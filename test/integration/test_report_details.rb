# The text report's columns, its definition without warnings, and its
# argument checks.
require_relative "helper"
require "stringio"

class ReportSite
  def self.garbage = 20_000.times { "g" * 100 }
  def self.kept = Array.new(5_000) { "k" * 100 }
end

class TestReportDetails < Minitest::Test
  # by: :inuse_objects ranks by objects in use, and its bytes column shows
  # bytes in use (not bytes allocated).
  def test_inuse_bytes_column
    Sampler.start(interval: 1024, mode: :fixed)
    ReportSite.garbage
    $keep = ReportSite.kept
    Sampler.stop
    GC.start
    io = StringIO.new
    Sampler.report(io, by: :inuse_objects, top: 50)
    line = io.string.lines.find { |l| l.include?("String") && l.include?("test_report_details.rb:8") }
    refute_nil line, io.string
    kib = line.split[1].to_f
    assert_in_delta 5_000 * ObjectSpace.memsize_of("k" * 100) / 1024.0, kib, 100, "in-use bytes: #{line}"
    # the garbage site allocated 3,125 KiB and keeps none of it, but for
    # the few a stale register or stack word may still hold (YJIT's)
    garbage = io.string.lines.find { |l| l.include?("test_report_details.rb:7") }
    assert(garbage.nil? || garbage.split[1].to_f < 16, "the garbage site has (almost) no bytes in use: #{garbage}")
  ensure
    $keep = nil
  end

  def test_no_warnings_and_methods_taken_early
    out, err, status = run_ruby(<<~RUBY, args: ["-w"])
      S = ObjectSpace::AllocationSampler
      m = S.method(:report)
      c = S.method(:write_collapsed)
      S.start(interval: 1024)
      x = Array.new(1000) { "y" * 50 }
      require "stringio"
      3.times { m.call(StringIO.new); c.call(StringIO.new) }
      print m.call(StringIO.new, top: 2**100) > 0
    RUBY
    assert status.success?, err
    assert_equal "", err, "ruby -w prints nothing"
    assert_equal "true", out
  end
end
