# stats[:profiler_bytes] is the sum of stats[:profiler_memory], and the
# parts are exact: the records' tables are what max_samples reserves (a
# record 64 bytes plus a free-slot index, a live entry and a dead-ring
# slot), the scratch buffer depth + 1 frames of 24 bytes, the first label
# set the table's two arrays (4,096 pointers and 8,192 ids: 64 KiB) and
# every set 16 bytes plus its text ("key\0value\0" pairs); every pprof profile
# carries the same figures as a comment.
require_relative "helper"

class TestFleetMemoryParts < Minitest::Test
  def test_parts
    out, err, status = run_ruby(<<~RUBY)
      require "stringio"
      S = ObjectSpace::AllocationSampler
      S.start(interval: 4096, max_samples: 3000, depth: 40, seed: 1)
      m0 = S.stats[:profiler_memory]
      S.with_labels(tenant: "acme") { Array.new(100) { "x" * 50 } }
      m1 = S.stats[:profiler_memory]
      S.with_labels(tenant: "b") { Array.new(100) { "x" * 50 } }
      m2 = S.stats[:profiler_memory]
      S.stop
      S.write_pprof(StringIO.new)   # names every frame once
      st = S.stats
      io = StringIO.new
      S.write_pprof(io)
      p m0, [m1[:label_sets] - m0[:label_sets], m2[:label_sets] - m1[:label_sets]], st[:profiler_bytes], st[:profiler_memory], st[:profiler_memory].values.sum
      puts io.string.b
    RUBY
    assert status.success?, err
    lines = out.b.lines
    m0 = eval(lines[0])     # rubocop:disable Security/Eval
    assert_equal 3000 * (64 + 4) + 3000 * 16 + 4096 * 4, m0[:records], "items, free slots, live[], the dead ring (4,096: a power of two)"
    assert_equal 41 * 24, m0[:scratch]
    assert_equal %i[records sites label_sets timeline malloc_table addresses scratch], m0.keys
    assert_equal [4096 * 8 + 8192 * 4 + 16 + "tenant\0acme\0".bytesize, 16 + "tenant\0b\0".bytesize], eval(lines[1])  # rubocop:disable Security/Eval
    total = Integer(lines[2])
    parts = eval(lines[3])  # rubocop:disable Security/Eval
    assert_equal total, Integer(lines[4])
    assert_operator parts[:sites], :>, 0
    assert_operator parts[:addresses], :>, 0
    # the profile's comment, in the pprof string table
    profile = Zlib.gunzip(lines[5..].join)
    comment = profile[/profiler memory: [^)]*\)/]
    refute_nil comment, "no profiler memory comment"
    expected = "profiler memory: #{total} bytes (" + parts.map { |k, v| "#{k} #{v}" }.join(", ") + ")"
    assert_equal expected, comment
  end
end
