# every= keeps absolute deadlines: on a CPU-bound program the k-th file is
# written about k periods after the first, however long each build took
# (a writer that slept a period after each write stretched every=1s to
# 1.4 s here, and the error grew with each file).  Bound: each file within
# 0.3 s of its deadline on the first file's clock, which a stretch of
# 0.3 s a period breaks by the second file and a late build never does.
require_relative "helper"
require "tmpdir"

class TestDeltaDeadlines < Minitest::Test
  def test_periods_do_not_stretch
    Dir.mktmpdir do |dir|
      code = <<~RUBY
        t = Process.clock_gettime(Process::CLOCK_MONOTONIC)
        kept = []
        while Process.clock_gettime(Process::CLOCK_MONOTONIC) - t < 5.5
          kept << Array.new(50) { "x" * 100 }
          kept.shift(50) if kept.size > 2000
        end
      RUBY
      _, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "every=1s,out=#{dir}/alloc-%n.pb.gz" })
      assert status.success?, err
      files = Dir[File.join(dir, "alloc-*.pb.gz")].sort_by { |f| f[/-(\d+)\.pb\.gz\z/, 1].to_i }
      written = files[0...-1].map { |f| File.mtime(f).to_f }   # the last one is the exit's
      assert_operator written.size, :>=, 4, files.inspect
      offsets = written.map { |t| (t - written[0]).round(3) }
      offsets.each_with_index do |offset, k|
        assert_in_delta k, offset, 0.3, "file #{k + 1} of #{offsets.inspect} (seconds after the first)"
      end
    end
  end
end
