# The stats Hash is what docs/reference.md's stats table says: the same
# keys in the same order, the profiler memory's parts and each heap's keys
# as its rows list them, and each value of the kind it documents (api.c
# builds the Hash from one table, stat_keys; a key added there and not to
# the docs, or the other way, fails here).
require_relative "helper"

class TestStatsKeys < Minitest::Test
  REFERENCE = File.expand_path("../../docs/reference.md", __dir__)

  # The stats table's rows: [[key names], what].
  def documented_rows
    section = File.read(REFERENCE)[/^### `stats`\n(.*?)(?=^#)/m, 1]
    refute_nil section, "docs/reference.md has a ### `stats` section"
    rows = section.lines.grep(/^\| `/).map { |l| l.split("|").map(&:strip).reject(&:empty?) }
    rows.map { |keys, what| [keys.scan(/`(\w+)`/).flatten.map(&:to_sym), what] }
  end

  def documented_keys(row_key)
    what = documented_rows.find { |keys, _| keys == [row_key] }&.last
    refute_nil what, "a row for #{row_key}"
    what[/`[\[{]+([^}]*)}/, 1].scan(/(\w+):/).flatten.map(&:to_sym)
  end

  def test_the_keys_are_the_documented_ones_in_order
    Sampler.start(interval: 4096, seed: 1)
    keep = Array.new(2_000) { "x" * 64 }
    GC.start
    stats = Sampler.stats
    assert_equal documented_rows.flat_map(&:first), stats.keys
    assert_equal documented_keys(:profiler_memory), stats[:profiler_memory].keys
    refute_empty stats[:heaps]
    stats[:heaps].each { |h| assert_equal documented_keys(:heaps), h.keys }
    assert keep
  ensure
    Sampler.stop
  end

  def test_each_value_is_of_its_documented_kind
    Sampler.start(interval: 4096, seed: 1)
    stats = Sampler.stats
    assert_includes [true, false], stats[:enabled]
    assert_includes [true, false], stats[:malloc]
    assert_kind_of Symbol, stats[:mode]
    integers = stats.keys - %i[enabled malloc mode peak_live_bytes peak_gc profiler_memory heaps]
    integers.each { |k| assert_kind_of Integer, stats[k], k }
    %i[peak_live_bytes peak_gc].each { |k| assert(stats[k].nil? || stats[k].is_a?(Integer), k) }
    assert_equal stats[:profiler_memory].values.sum, stats[:profiler_bytes]
  ensure
    Sampler.stop
  end
end
