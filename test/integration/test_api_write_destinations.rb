# write_pprof and write_dhat write an IO through, at its position, like
# write_collapsed and report: every IO responds to #to_path, but only a
# String or a Pathname names a file.  A write to a path opens and writes without the
# GVL: a FIFO with no reader blocks only the writing thread, and
# Timeout can interrupt it.
require_relative "helper"
require "tmpdir"
require "pathname"
require "json"

class TestApiWriteDestinations < Minitest::Test
  def setup
    Sampler.start(interval: 4096, seed: 1)
    $keep = Array.new(5_000) { |i| "dest-#{i}" }
    Sampler.stop
  end

  def teardown
    $keep = nil
    super
  end

  def gzip?(bytes) = bytes.start_with?("\x1f\x8b".b)
  def dhat?(bytes) = JSON.parse(bytes)["dhatFileVersion"] == 2

  # each writer, and what its output looks like
  WRITERS = { write_pprof: :gzip?, write_dhat: :dhat? }.freeze

  def test_an_io_is_written_at_its_position
    WRITERS.each do |writer, looks_right|
      Dir.mktmpdir do |dir|
        path = File.join(dir, "p.bin")
        n = nil
        File.open(path, "wb") do |f|
          f.write("HEAD")
          n = Sampler.public_send(writer, f)
          f.write("TAIL")
        end
        data = File.binread(path)
        assert_equal "HEAD", data[0, 4]
        assert_equal "TAIL", data[-4..]
        assert_equal n, data.bytesize - 8, "#{writer} returns the bytes written"
        assert send(looks_right, data[4...-4]), "#{writer}: the profile between"
        assert_equal [], Dir.children(dir) - ["p.bin"], "no file named after the IO"
      end
    end
  end

  def test_append_mode_log_is_appended_to
    Dir.mktmpdir do |dir|
      path = File.join(dir, "log")
      File.write(path, "line 1\n")
      File.open(path, "ab") { |f| Sampler.write_pprof(f) }
      data = File.binread(path)
      assert data.start_with?("line 1\n"), "the log keeps what it had"
      assert gzip?(data[7..])
    end
  end

  def test_a_read_only_io_is_not_overwritten
    Dir.mktmpdir do |dir|
      path = File.join(dir, "ro")
      File.write(path, "keep me")
      File.open(path, "rb") do |f|
        assert_raises(IOError) { Sampler.write_pprof(f) }
      end
      assert_equal "keep me", File.read(path)
    end
  end

  def test_stdout_is_written_not_a_file_named_after_it
    WRITERS.each do |writer, looks_right|
      Dir.mktmpdir do |dir|
        out, err, status = run_ruby(<<~RUBY, env: { "RUBY_GC_SAMPLING" => "interval=4096" }, args: ["-C", dir])
          $stdout.binmode
          ObjectSpace::AllocationSampler.#{writer}($stdout)
        RUBY
        assert status.success?, err
        assert send(looks_right, out.b), "#{writer}: the profile went to stdout"
        assert_empty Dir.children(dir), "no file named <STDOUT>"
      end
    end
  end

  def test_string_and_pathname_name_files
    WRITERS.each do |writer, looks_right|
      Dir.mktmpdir do |dir|
        n = Sampler.public_send(writer, File.join(dir, "a.out"))
        Sampler.public_send(writer, Pathname(dir) / "b.out")
        assert_equal File.size(File.join(dir, "a.out")), n
        assert send(looks_right, File.binread(File.join(dir, "a.out"))), writer
        assert send(looks_right, File.binread(File.join(dir, "b.out"))), writer
      end
    end
  end

  # (in a child process: if the write held the GVL, Timeout could not
  # fire and the child would hang; the parent kills it then)
  def test_a_fifo_without_reader_blocks_only_the_writer
    Dir.mktmpdir do |dir|
      fifo = File.join(dir, "fifo")
      File.mkfifo(fifo)
      code = <<~RUBY
        require "timeout"
        S = ObjectSpace::AllocationSampler
        S.start(interval: 4096)
        x = Array.new(1000) { "y" * 50 }
        ticks = 0
        ticker = Thread.new { loop { ticks += 1; sleep 0.01 } }
        begin
          Timeout.timeout(0.5) { S.write_pprof(#{fifo.dump}) }
          puts "written"
        rescue Timeout::Error
          puts "interrupted \#{ticks}"
        end
      RUBY
      r, w = IO.pipe
      pid = spawn({ "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }, RUBY, "-e", code, out: w, err: w)
      w.close
      out = nil
      waited = Thread.new { Process.wait2(pid)[1] }
      unless waited.join(30)
        Process.kill(:KILL, pid)
        waited.join
        flunk "the write blocked the whole process: Timeout never fired"
      end
      out = r.read
      assert_match(/\Ainterrupted (\d+)$/, out)
      assert_operator out[/\d+/].to_i, :>, 10, "other threads ran while it was blocked"
    end
  end
end
