# The watcher from Ruby and its arguments.  start(limit:, limit_at:,
# grow:, max_files:, out:) does what RUBY_GC_SAMPLING's settings do: with
# limit: bytes (RSS) a profile appears under out: (%n numbered) once the
# process crosses limit_at of it.  Bad values raise ArgumentError naming
# the argument and change nothing (the sampler stays as it was); the
# same in RUBY_GC_SAMPLING print one warning and leave sampling off.
require_relative "helper"
require_relative "oom_helper"

class TestOomStartArguments < Minitest::Test
  include PprofHelper

  def test_start_limit_writes_and_bad_values_raise
    Dir.mktmpdir do |dir|
      code = OomHelper::PRELUDE + <<~'RUBY'
        S = ObjectSpace::AllocationSampler
        def leak_start = "#{HALF}#{HALF}"
        S.start(limit: 120 * 1024 * 1024, limit_at: 0.5, out: File.join(ARGV[0], "s-%p-%n.pb.gz"))
        $keep = Array.new(100) { leak_start }
        wait_for(File.join(ARGV[0], "*.pb.gz"))
        puts Dir.children(ARGV[0]).sort
      RUBY
      out, err, status = Open3.capture3({ "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }, RUBY, "-e", code, dir)
      assert status.success?, err
      assert_equal "", err
      assert_match(/\As-\d+-1\.pb\.gz\n\z/, out, "the watcher's file, and none at exit (start's out: is the watcher's)")
      path = File.join(dir, out.chomp)
      assert_match(/before the limit: RSS \d+ bytes of 125829120 \(\d+%, limit_at=0\.5\)/, pprof("-comments", path))
    end

    Sampler.start(interval: 4096)
    {
      { limit: :bogus } => /limit must be :auto, nil or an Integer from 1048576 to \d+ bytes \(got :bogus\)/,
      { limit: 1000 } => /limit must be :auto, nil or an Integer from 1048576/,
      { limit: "auto" } => /limit must be :auto/,
      { limit: :auto, limit_at: 0 } => /limit_at must be a number from 0.01 to 1, the fraction of the limit that triggers \(got 0\)/,
      { limit: :auto, limit_at: 1.5 } => /limit_at must be a number from 0.01 to 1/,
      { limit: :auto, limit_at: "0.9" } => /limit_at must be a number from 0.01 to 1/,
      { grow: 1 } => /grow must be from 1048576 to \d+ bytes \(got 1\)/,
      { max_files: 0 } => /max_files must be from 1 to 100000 \(got 0\)/,
      { limit: :auto, out: 3 } => /out must be a file path/,
      { limit: :auto, out: "" } => /out must be a file path/,
      { limit: :auto } => /limit needs out:, where its profiles go/,
      { grow: 64 << 20 } => /grow needs out:/,
      { limit: :auto, out: "x.dhat.json" } => /out must name a pprof file with limit: or grow:/,
    }.each do |kwargs, message|
      e = assert_raises(ArgumentError, kwargs.inspect) { Sampler.start(**kwargs) }
      assert_match message, e.message, kwargs.inspect
      assert_equal 4096, Sampler.stats[:interval], "nothing changed by #{kwargs.inspect}"
    end

    ["limit=auto", "limit=bogus,out=x", "limit=auto,limit_at=2,out=x", "grow=1,out=x", "grow=64m",
     "limit=auto,out=x.dhat.json"].each do |setting|
      out, err, status = run_ruby("p ObjectSpace::AllocationSampler.enabled?", env: { "RUBY_GC_SAMPLING" => setting })
      assert status.success?, err
      assert_equal "false\n", out, setting
      assert_equal 1, err.lines.size, "one warning for #{setting}: #{err}"
      assert_match(/\Aruby: warning: RUBY_GC_SAMPLING: .*; allocation sampling is off\n\z/, err, setting)
    end
  end
end
