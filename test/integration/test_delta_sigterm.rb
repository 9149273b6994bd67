# A worker killed by SIGTERM still writes its last delta file: with
# every=60s no file is due yet when the signal comes, and the one written
# at exit holds what the worker allocated (a valid pprof, with the
# worker's own site in it).
require_relative "helper"
require "tmpdir"

class TestDeltaSigterm < Minitest::Test
  def test_last_delta_on_sigterm
    Dir.mktmpdir do |dir|
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY,
              "RUBY_GC_SAMPLING" => "mode=fixed,interval=4k,every=60s,out=#{dir}/alloc-%p-%n.pb.gz" }
      code = 'def work = Array.new(50_000) { "w" * 60 }; $kept = work; puts "ready"; $stdout.flush; sleep'
      Open3.popen2e(env, RUBY, "-e", code) do |stdin, out, waiter|
        stdin.close
        assert_equal "ready\n", out.gets
        Process.kill("TERM", waiter.pid)
        status = waiter.value
        assert_equal "TERM", Signal.signame(status.termsig.to_i), out.read
      end
      files = Dir[File.join(dir, "alloc-*.pb.gz")]
      assert_equal 1, files.size, files.inspect
      assert_match(/-1\.pb\.gz\z/, files[0])
      work = pprof_samples(files[0]).select { |s| s[:functions].include?("Object#work") }
      assert_operator work.sum { |s| s[:values][1] }, :>=, 50_000 * 80 * 0.9
    end
  end
end
