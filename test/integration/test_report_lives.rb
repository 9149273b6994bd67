# report ends with the lifetimes of its top sites (died in the first GC,
# later, alive; promoted, promoted then dead; mean life of the dead) and
# the live set at the peak with its GC.
require_relative "helper"

$kept = nil

class TestReportLives < Minitest::Test
  def garbage_site = 20_000.times { "report garbage" * 3 }
  def kept_site = $kept = Array.new(20_000) { "report kept str" * 3 }

  def test_lifetimes_and_peak_sections
    Sampler.start(interval: 4096, mode: :fixed)
    garbage_site
    kept_site
    GC.start
    peak_gc = GC.count
    $kept = nil
    GC.start
    Sampler.stop
    out = StringIO.new
    Sampler.report(out, top: 5)
    text = out.string
    lives = text[/^Lifetimes of the sites above.*?\n\n/m] or flunk("no lifetimes section:\n#{text}")
    assert_match(/died@1st\s+later\s+alive\s+promoted\s+prom\.dead\s+mean life/, lives)
    garbage = lives.lines.find { |l| l.include?("String") && l.include?("test_report_lives.rb:9") }
    assert garbage, "the garbage site is there:\n#{lives}"
    assert_match(/\A(9\d|100)\.\d%\z/, garbage.split[1], "it died in the first GC: #{garbage}")
    assert_match(/^Peak: estimated .* live .* at GC #{peak_gc} \(major\)/, text)
    peak = text[/^Peak:.*\z/m]
    assert_match(/test_report_lives\.rb:10/, peak, "the kept site was live at the peak")
  ensure
    $kept = nil
  end
end
