# write_pprof produces a profile that the real `go tool pprof` reads: the
# four sample types, the period, our functions and files, and totals that
# agree with the samples the API returns.  Bad destinations raise a clear
# SystemCallError or ArgumentError and change nothing.
require_relative "helper"
require "tmpdir"
require "stringio"

class PprofSite
  def self.build = Array.new(20_000) { |i| "pprof-site-#{i}" * (1 + i % 3) }
end

class TestPprofGoTool < Minitest::Test
  GO = ENV.fetch("GO", "go")

  def go_available?
    system(GO, "version", out: File::NULL, err: File::NULL)
  end

  def pprof_raw(path)
    out, err, status = Open3.capture3(GO, "tool", "pprof", "-raw", path)
    assert status.success?, err
    out
  end

  def profile
    Sampler.start(interval: 4096, mode: :poisson, seed: 1)
    $keep = PprofSite.build
    Sampler.stop
    Sampler.samples
  end

  def test_go_tool_pprof_reads_it
    skip "go not installed" unless go_available?
    samples = profile
    Dir.mktmpdir do |dir|
      path = File.join(dir, "alloc.pb.gz")
      Sampler.write_pprof(path)
      assert_equal "\x1f\x8b".b, File.binread(path, 2), "gzip"
      raw = pprof_raw(path)
      assert_match(/^PeriodType: space bytes$/, raw)
      assert_match(/^Period: 4096$/, raw)
      assert_match(%r{^alloc_objects/count alloc_space/bytes\[dflt\] inuse_objects/count inuse_space/bytes }, raw,
                   "the four sample types first, alloc_space the default")
      assert_match(/PprofSite\.build/, raw)
      assert_match(/Array\.new/, raw)
      assert_match(/test_pprof_go_tool\.rb/, raw)
      assert_match(/type:\[T_STRING\]/, raw)
      assert_match(/class:\[String\]/, raw)

      # totals: sum the alloc_space column of the raw sample lines
      values = raw[/^Samples:\n.*?\n(.*?)^Locations/m, 1].scan(/^\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)[\s\d]*:/).map { |r| r.map(&:to_i) }
      alloc_space = values.sum { |v| v[1] }
      inuse_space = values.sum { |v| v[3] }
      # each sample's value is its weight rounded: at most 1/2 byte off apiece
      assert_in_delta samples.sum(&:weight), alloc_space, samples.size / 2.0, "alloc_space total"
      assert_in_delta samples.select(&:live?).sum(&:weight), inuse_space, samples.size / 2.0, "inuse_space total"
      # objects are rounded once per site (pprof sample), not per record
      assert_in_delta samples.sum { |s| s.weight / s.size }, values.sum { |v| v[0] }, values.size / 2.0, "alloc_objects total"
    end
  ensure
    $keep = nil
  end

  def test_to_io
    profile
    io = StringIO.new("".b)
    n = Sampler.write_pprof(io)
    assert_equal n, io.string.bytesize
    assert_equal "\x1f\x8b".b, io.string[0, 2]
  end

  def test_empty_profile
    skip "go not installed" unless go_available?
    Dir.mktmpdir do |dir|
      path = File.join(dir, "empty.pb.gz")
      Sampler.write_pprof(path)
      raw = pprof_raw(path)
      assert_match(/^Period: #{Sampler.stats[:interval]}$/, raw)
      assert_match(/^Samples:\nalloc_objects\/count [^\n]*\nLocations/, raw, "no samples")
    end
  end

  def test_deep_and_unicode_stacks
    skip "go not installed" unless go_available?
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        S = ObjectSpace::AllocationSampler
        class Ünïcode; def ðeep(n) = n.zero? ? Array.new(10) { "x" * 30 } : ðeep(n - 1); end
        anon = Class.new { def self.make = Array.new(100) { new } }
        S.start(interval: 64, depth: 1024)
        Ünïcode.new.ðeep(1100)
        anon.make
        S.stop
        S.write_pprof(ARGV[0])
        p S.samples.any?(&:truncated?)
      RUBY
      src = File.join(dir, "ünï.rb")
      File.write(src, code)
      out, err, status = Open3.capture3({ "RUBY_GC_LIBRARY" => GC_LIBRARY }, RUBY, src, File.join(dir, "deep.pb.gz"))
      assert status.success?, err
      assert_equal "true\n", out
      raw = pprof_raw(File.join(dir, "deep.pb.gz"))
      assert_match(/Ünïcode#ðeep/, raw)
      assert_match(/ünï\.rb/, raw)
      assert_match(/#<Class:0x\h+>/, raw, "anonymous classes get a label")
    end
  end

  def test_written_while_another_thread_allocates
    skip "go not installed" unless go_available?
    Sampler.start(interval: 1024)
    stop = false
    t = Thread.new { a = []; until stop; a << "t" * 20; a.clear if a.size > 1000; end }
    Dir.mktmpdir do |dir|
      5.times do |i|
        path = File.join(dir, "t#{i}.pb.gz")
        Sampler.write_pprof(path)
        assert_match(/^Samples:/, pprof_raw(path))
      end
    end
  ensure
    stop = true
    t&.join
  end

  def test_bad_destinations
    profile
    before = Sampler.stats
    e = assert_raises(SystemCallError) { Sampler.write_pprof("/nonexistent-dir/x.pb.gz") }
    assert_match(%r{/nonexistent-dir/x\.pb\.gz}, e.message)
    Dir.mktmpdir do |dir|
      ro = File.join(dir, "ro.pb.gz")
      File.write(ro, "")
      File.chmod(0o444, ro)
      unless Process.uid.zero? # root may write anyway
        assert_raises(Errno::EACCES) { Sampler.write_pprof(ro) }
      end
      assert_raises(Errno::EISDIR) { Sampler.write_pprof(dir) }
    end
    e = assert_raises(ArgumentError) { Sampler.write_pprof(42) }
    assert_match(/path_or_io/, e.message)
    # (the allocation clock runs with the program, sampled or not; and a
    # profile built before its open failed may have named new frames in
    # the process's table of Location addresses, a cache: profiler_*)
    volatile = %i[total_allocated_bytes profiler_bytes profiler_memory]
    assert_equal before.except(*volatile), Sampler.stats.except(*volatile)
  ensure
    $keep = nil
  end

  def test_written_at_exit
    skip "go not installed" unless go_available?
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby('a = Array.new(1000) { "x" * 50 }; exit 7',
                                  env: { "RUBY_GC_SAMPLING" => "interval=1k,out=#{dir}/alloc-%p.pb.gz" })
      assert_equal 7, status.exitstatus, err
      files = Dir[File.join(dir, "alloc-*.pb.gz")]
      assert_equal 1, files.size
      assert_match(/alloc-#{status.pid}\.pb\.gz\z/, files[0])
      assert_match(/^Samples:/, pprof_raw(files[0]))
    end
  end

  def test_unwritable_out_warns_once
    out, err, status = run_ruby('exit 5', env: { "RUBY_GC_SAMPLING" => "interval=1k,out=/nonexistent-dir/a.pb.gz" })
    assert_equal 5, status.exitstatus
    assert_equal 1, err.lines.size, err
    assert_match(/could not write the profile/, err)
  end
end
