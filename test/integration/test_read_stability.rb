# Reading samples does not destroy samples: while sampling runs, a
# reader's own allocations are sampled too, but they never evict the
# records being read, nor crowd out the program's records (they are not
# recorded; stats[:reader_samples] counts them).
require_relative "helper"

class TestReadStability < Minitest::Test
  def key(s) = [s.frames, s.allocated_gc, s.size, s.weight]

  def test_reads_keep_what_they_read
    Sampler.start(interval: 64, mode: :fixed, max_samples: 10_000)
    $keep = Array.new(20_000) { Object.new }
    $keep = nil
    # (two: on 4.1 the first GC after the Array is dropped keeps its
    # objects, under the default library as under this one)
    2.times { GC.start }
    assert_equal 10_000, Sampler.stats[:records], "the table is full of evictable (dead) records"
    dropped = Sampler.stats[:dropped]
    first = Sampler.samples
    second = Sampler.samples
    Sampler.stop
    assert_equal 10_000, first.size, "the first read sees every record"
    assert_equal 10_000, second.size
    left = first.map { |s| key(s) }.tally
    second.each { |s| left[key(s)] -= 1 if left[key(s)] }
    kept = 10_000 - left.values.select(&:positive?).sum
    assert_operator kept, :>=, 9_900, "the second read still has the first read's records (#{kept})"
    assert_operator Sampler.stats[:reader_samples], :>, 100, "the reads' own samples were not recorded"
    assert_equal dropped, Sampler.stats[:dropped], "nor dropped: they take no record"
  end

  # Every reader, while sampling runs at 64 bytes over a table full of
  # evictable records: none is evicted while it reads.
  def test_no_reader_evicts
    require "stringio"
    Sampler.start(interval: 64, mode: :fixed, max_samples: 10_000)
    $keep = Array.new(20_000) { Object.new }
    $keep = nil
    GC.start
    readers = {
      samples: -> { Sampler.samples },
      each_sample: -> { n = 0; Sampler.each_sample { n += 1 }; n },
      write_pprof: -> { Sampler.write_pprof(StringIO.new) },
      report: -> { Sampler.report(StringIO.new, top: 100) },
      write_collapsed: -> { Sampler.write_collapsed(StringIO.new) },
    }
    readers.each do |name, reader|
      assert_equal 10_000, Sampler.stats[:records], name
      before = Sampler.stats[:evicted]
      reader.call
      after = Sampler.stats[:evicted]
      # (the stats Hashes and the StringIO around the reader are sampled
      # too and evict a few dozen; samples and each_sample make 10,000
      # Sample objects, about 6,000 samples at 64 bytes, so one that
      # evicted would pass this by far; the other readers allocate per
      # site, and take the records' state before they allocate)
      assert_operator after - before, :<=, 100, "#{name} evicted #{after - before} records while it read"
      # refill the table with dead records for the next reader
      $keep = Array.new(2_000) { Object.new }
      $keep = nil
      GC.start
    end
  ensure
    Sampler.stop
  end
end
