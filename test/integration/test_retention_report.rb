# retention_report: the top retainers by retained sampled bytes, each with
# its shortest path and the allocation sites it holds.
require_relative "helper"

class TestRetentionReport < Minitest::Test
  class Cache
    def initialize = (@entries = {})
    def fill = (300.times { |i| @entries[i] = "cached #{i}" * 8 }; self)
  end

  def fill
    Object.const_set(:RETENTION_CACHE, Cache.new.fill)
    # (each a few samples' worth at 512 bytes: on 4.1 the 40-byte
    # strings this held drew no sample, their temporaries did)
    $retention_small = Array.new(20) { |i| "small #{i}" * 10 }
    nil
  end

  def test_report
    Sampler.start(interval: 512, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    out = StringIO.new
    rows = Sampler.retention_report(out, top: 5)
    text = out.string
    assert_operator rows, :>=, 2
    lines = text.lines
    assert_match(/\ARetainers by retained sampled bytes: \d+ live samples/, lines[0])
    first = lines.index { |l| l =~ /^\s+1 / }
    assert_match(/@entries \(Hash\)/, lines[first], text)
    assert_match(/path: .*RETENTION_CACHE \(TestRetentionReport::Cache\) -> @entries \(Hash\)/, lines[first + 1])
    assert_match(/holds: [\d.]+ KiB String at .*test_retention_report.rb:8 \(String#\*\)/,
                 lines[first + 2])
    assert_match(/global \$retention_small \(Array\)/, text)
    assert_raises(ArgumentError) { Sampler.retention_report(out, top: 0) }
    e = assert_raises(ArgumentError) { Sampler.retention_report(out, max_objects: -1) }
    assert_match(/max_objects/, e.message)
  end
end
