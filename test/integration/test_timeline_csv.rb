# The timeline from Ruby and as CSV: a row per GC while sampling (GC
# count, seconds since start, major or minor, live estimates, samples
# live, the allocation clock); write_timeline writes the same rows as CSV;
# and with RUBY_GC_SAMPLING's out= the CSV is written beside the profile
# at exit (alloc.pb.gz -> alloc.timeline.csv).
require_relative "helper"

class TestTimelineCsv < Minitest::Test
  HEADER = "gc,seconds,major,live_bytes,live_slot_bytes,live_malloc_bytes,live_samples,total_allocated_bytes"

  def test_rows_and_csv
    Sampler.start(interval: 4096)
    first = GC.count + 1
    GC.start(full_mark: false)
    # (Ruby 4.1 may make it a major GC: major_by :oldgen)
    minor_was_major = !GC.latest_gc_info(:major_by).nil?
    GC.start
    rows = Sampler.timeline
    Sampler.stop
    assert_operator rows.size, :>=, 2
    assert_equal [first, first + 1], rows.last(2).map { |r| r[:gc] } if rows.size == 2
    assert_equal [minor_was_major, true], rows.last(2).map { |r| r[:major] }
    assert rows.each_cons(2).all? { |a, b| a[:gc] < b[:gc] && a[:seconds] <= b[:seconds] }, "oldest first"
    assert rows.all? { |r| r[:live_bytes] == r[:live_slot_bytes] + r[:live_malloc_bytes] }
    out = StringIO.new
    Sampler.write_timeline(out)
    lines = out.string.lines(chomp: true)
    assert_equal HEADER, lines.first
    assert_equal rows.size, lines.size - 1
    rows.zip(lines.drop(1)).each do |r, line|
      f = line.split(",")
      assert_equal [r[:gc], r[:major] ? 1 : 0, r[:live_bytes], r[:live_slot_bytes], r[:live_samples], r[:total_allocated_bytes]],
                   [f[0], f[2], f[3], f[4], f[6], f[7]].map(&:to_i)
      assert_in_delta r[:seconds], Float(f[1]), 1e-5
    end
    assert_raises(ArgumentError) { Sampler.write_timeline(42) }
  end

  def test_written_beside_the_profile_at_exit
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby("3.times { Array.new(10_000) { 'x' * 30 }; GC.start }",
                                  env: { "RUBY_GC_SAMPLING" => "interval=4k,out=#{dir}/alloc.pb.gz" })
      assert status.success?, err
      assert_equal "", err
      csv = File.join(dir, "alloc.timeline.csv")
      assert File.exist?(csv), "beside the profile: #{Dir.children(dir)}"
      lines = File.readlines(csv, chomp: true)
      assert_equal HEADER, lines.first
      assert_operator lines.size - 1, :>=, 3, "a row per GC"
    end
  end
end
