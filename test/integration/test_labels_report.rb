# report groups the totals by label set: a "By labels" section with one
# row per set (its share of the same totals as the site table), only when
# some sample carries labels.
require_relative "helper"
require "stringio"

class TestLabelsReport < Minitest::Test
  def work(n) = Array.new(n) { "r" * 100 }

  def test_report_by_labels
    # (slots only: a report's own malloc'd buffers, built while it reads,
    # are unlabelled bytes of the same order as the small sets here)
    Sampler.start(interval: 4096, mode: :fixed, seed: 1, malloc: false)
    work(500)
    plain = StringIO.new
    Sampler.report(plain)
    refute_match(/By labels/, plain.string)

    Sampler.with_labels(endpoint: "GET /big") { work(3000) }
    # (1,500: (none) also holds what the first report allocated, report.rb's
    # compilation included, about 100 KiB)
    Sampler.with_labels(endpoint: "GET /small", tenant: :t1) { work(1500) }
    io = StringIO.new
    Sampler.report(io, by: :alloc_space)
    section = io.string[/^By labels \(alloc_space\):\n(.*)\z/m, 1]
    refute_nil section, io.string
    rows = section.lines.drop(1).map { |l| l.split(/\s{2,}/).last.chomp }
    assert_equal ["endpoint=GET /big", "endpoint=GET /small tenant=t1", "(none)"], rows.first(3)
    shares = section.lines.drop(1).map { |l| l[/([\d.]+)%/, 1].to_f }
    assert_in_delta 100.0, shares.sum, 0.5
  end
end
