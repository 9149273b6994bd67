# An allocation that fails is not counted, and one holding millions of
# points costs one draw (issue 27, item 14).  The points inside one
# allocation are drawn in one step (Poisson: Binomial(span, q), q =
# 1 - exp(-1/interval), gap.h; fixed: arithmetic), after malloc
# succeeded.  A 1 TiB string fails with NoMemoryError at interval 1
# (fixed and Poisson) and 4 KiB (Poisson) and leaves malloc_allocated_bytes
# and malloc_points where they were, but for the few KB the rescue itself
# allocates.  (Before: the TiB was counted, and Poisson at interval 1
# drew one gap per point first: about 50 minutes, deaf to SIGTERM.)  And
# a 64 MB allocation at Poisson interval 1 holds Binomial(bytes, q)
# points: within 6 sigma (sigma = sqrt(bytes q (1 - q)), about 3,950).
# The child is killed after 120 s: a hang guard, not a measure.
require_relative "helper"

class TestMallocHugeAllocation < Minitest::Test
  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    def counts = S.stats.values_at(:malloc_allocated_bytes, :malloc_points)
    [[:fixed, 1], [:poisson, 4096], [:poisson, 1]].each do |mode, interval|
      S.clear
      S.start(malloc: true, mode: mode, interval: interval, seed: 7)
      before = counts
      error = begin; "x" * (1 << 40); nil; rescue NoMemoryError => e; e.class; end
      after = counts
      puts "fail #{mode} #{interval} #{error} #{after[0] - before[0]} #{after[1] - before[1]}"
      $stdout.flush
    end
    S.clear
    S.start(malloc: true, mode: :poisson, interval: 1, seed: 7)
    before = counts
    s = "y" * (64 << 20)
    after = counts
    puts "big #{after[0] - before[0]} #{after[1] - before[1]}"
  RUBY

  def test_failed_allocation_uncounted_and_big_one_drawn_at_once
    out, err, status = run_guarded(PROGRAM)
    assert status.success?, err
    lines = out.lines.map(&:split)
    fails = lines.select { |l| l[0] == "fail" }
    assert_equal 3, fails.size, out
    fails.each do |_, mode, interval, error, bytes, points|
      assert_equal "NoMemoryError", error, "#{mode} #{interval}"
      assert_operator bytes.to_i, :<, 1 << 20, "#{mode} at #{interval}: the failed TiB is not counted"
      assert_operator points.to_i, :<, 1 << 20, "#{mode} at #{interval}: nor its points"
    end
    _, bytes, points = lines.find { |l| l[0] == "big" } || flunk(out)
    bytes = bytes.to_i
    points = points.to_i
    q = 1 - Math.exp(-1.0)
    sigma = Math.sqrt(bytes * q * (1 - q))
    assert_operator bytes, :>=, 64 << 20
    assert_in_delta bytes * q, points, 6 * sigma, "points in #{bytes} bytes at interval 1"
  end

  # run_ruby, killed after 120 s
  def run_guarded(code)
    env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }
    Open3.popen3(env, RUBY, "-e", code) do |stdin, stdout, stderr, wait|
      stdin.close
      unless wait.join(120)
        Process.kill(:KILL, wait.pid)
        flunk "the child still ran after 120 s: #{stdout.read}"
      end
      [stdout.read, stderr.read, wait.value]
    end
  end
end
