# Collapsed stacks sum to the same totals as the samples; the text report
# lists the top sites with their shares; bad arguments raise ArgumentError.
require_relative "helper"
require "stringio"
require "tmpdir"

class ReportSite
  STRINGS_LINE = __LINE__ + 1
  def self.strings = Array.new(30_000) { |i| "report-#{i}" }
  def self.hashes = Array.new(10_000) { |i| { i => i } }
end

class TestReportCollapsed < Minitest::Test
  def setup
    Sampler.start(interval: 2048, seed: 3)
    $keep = ReportSite.strings
    # In a thread that ends: an array just discarded can survive full GCs
    # through a stale reference the collector still scans on this stack
    # (seen on 4.0.5, under RUBY_GC_LIBRARY=default too, and under YJIT
    # every time); the hashes must be dead for the live shares below.
    Thread.new { ReportSite.hashes; nil }.join
    Sampler.stop
    2.times { GC.start }
    @samples = Sampler.samples
  end

  def teardown
    $keep = nil
    super
  end

  def collapsed(value)
    io = StringIO.new
    Sampler.write_collapsed(io, value: value)
    io.string.lines.map { |l| l.rpartition(" ") }
  end

  def test_collapsed_sums_to_the_totals
    lines = collapsed(:alloc_space)
    refute_empty lines
    assert lines.all? { |stack, _, v| !stack.empty? && v =~ /\A\d+\n\z/ }
    assert_in_delta @samples.sum(&:weight), lines.sum { |_, _, v| v.to_i }, lines.size
    live = collapsed(:inuse_space)
    assert_in_delta @samples.select(&:live?).sum(&:weight), live.sum { |_, _, v| v.to_i }, live.size
    objects = collapsed(:alloc_objects)
    assert_in_delta @samples.sum { |s| s.weight.to_f / s.size }, objects.sum { |_, _, v| v.to_i }, objects.size
  end

  def test_collapsed_stacks_root_first
    stacks = collapsed(:alloc_space).map(&:first)
    assert stacks.any? { |s| s.end_with?("ReportSite.strings;Array.new;Array#initialize;block in ReportSite.strings") }
    # (malloc samples may also come from a thread running no Ruby frame,
    # without the GVL, or from the collector itself)
    synthetic = ["<boot>", "<no Ruby frame>", "<no GVL>", "<GC>"]
    bad = stacks.reject { |s| s.split(";").first == "<main>" || synthetic.include?(s.split(";").first) || s.match?(/\Ablock (\(\d+ levels\) )?in /) }
    assert_empty bad
  end

  def test_collapsed_to_a_path
    Dir.mktmpdir do |dir|
      path = File.join(dir, "stacks.txt")
      n = Sampler.write_collapsed(path)
      assert_equal n, File.readlines(path).size
    end
  end

  def test_report
    io = StringIO.new
    n = Sampler.report(io, top: 2, by: :alloc_space)
    text = io.string
    assert_equal 2, n
    lines = text.split("\n\n").first.lines    # the top sites; the lifetimes and the peak follow
    assert_match(/\AAllocation sites by alloc_space: \d+ samples, interval 2\.0 KiB \(poisson\)/, lines[0])
    assert_match(/rank\s+bytes\s+share\s+objects\s+live\s+age\s+class\s+site/, lines[1])
    assert_equal 4, lines.size
    assert_match(/^Lifetimes of the sites above/, text)
    assert_match(/String .*test_report_collapsed\.rb:#{ReportSite::STRINGS_LINE}$/, lines[2], "the string site is on top")
    shares = lines[2..].map { |l| l[/(\d+\.\d)%/, 1].to_f }
    assert_equal shares.sort.reverse, shares
    io = StringIO.new
    Sampler.report(io, by: :inuse_space)
    hash_line = io.string.lines.find { |l| l.include?(":#{ReportSite::STRINGS_LINE + 1}") && l.include?("Hash") }
    assert_match(/ 0\.0%\s+-/, hash_line, "dead hashes: no live share, no age") if hash_line
  end

  def test_bad_arguments
    assert_raises(ArgumentError) { Sampler.write_collapsed(StringIO.new, value: :bytes) }
    assert_raises(ArgumentError) { Sampler.write_collapsed(42) }
    assert_raises(ArgumentError) { Sampler.report(StringIO.new, top: 0) }
    assert_raises(ArgumentError) { Sampler.report(StringIO.new, by: :nope) }
    assert_raises(ArgumentError) { Sampler.report(:not_io) }
  end
end
