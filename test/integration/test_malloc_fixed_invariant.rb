# mode: :fixed counts malloc'd bytes exactly: the points crossed since
# start equal floor(malloc_allocated_bytes / interval), for intervals from
# 1 byte to 1 MB, over random mixes of buffer sizes (malloc), zeroed
# buffers (calloc) and growth (realloc), across GCs.
#
# The invariant holds per thread (each counts down on its own); the sums
# in stats obey it when one thread allocates.  So the mixes run in a fresh
# Ruby with no other thread (minitest's workers allocate now and then).
require_relative "helper"

class TestMallocFixedInvariant < Minitest::Test
  INTERVALS = [1, 7, 4096, 65_536, 1_000_003].freeze

  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    def churn(rng, n)
      keep = []
      n.times do
        case rng.rand(5)
        when 0 then keep << "x" * rng.rand(30..70_000)                                            # malloc
        when 1 then s = +"ab"; rng.rand(1..40).times { s << "z" * rng.rand(1..900) }; keep << s  # realloc
        when 2 then a = []; rng.rand(1..300).times { |i| a << i }; keep << a                     # realloc
        when 3 then h = {}; rng.rand(1..60).times { |i| h[i] = i }; keep << h                    # st tables
        when 4 then keep << Array.new(rng.rand(10..5_000), 0)                                    # malloc
        end
        keep.shift if keep.size > 50
      end
      keep
    end
    def check(interval, context)
      st = S.stats
      ok = st[:malloc_allocated_bytes] / interval == st[:malloc_points] && st[:malloc_samples] <= st[:malloc_points]
      puts "#{ok ? 'ok' : 'FAIL'} #{context} interval=#{interval} bytes=#{st[:malloc_allocated_bytes]} " \
           "points=#{st[:malloc_points]} samples=#{st[:malloc_samples]}"
    end
    rng = Random.new(SEED)
    INTERVALS.each do |interval|
      S.clear
      S.start(malloc: true, interval: interval, mode: :fixed, max_samples: 2_000)
      keep = churn(rng, interval == 1 ? 300 : 3_000)
      check(interval, "churn")
      GC.start
      keep.concat(churn(rng, 500))
      check(interval, "gc")
      GC.compact
      keep.concat(churn(rng, 200))
      check(interval, "compact")
      keep.clear
    end
    abort "threads: #{Thread.list.size}" unless Thread.list.size == 1
  RUBY

  def test_intervals_and_mixes
    [20261201, 15].each do |seed|
      out, err, status = run_ruby("INTERVALS = #{INTERVALS.inspect}; SEED = #{seed}\n" + PROGRAM)
      assert status.success?, err
      lines = out.lines
      assert_equal INTERVALS.size * 3, lines.size, out
      lines.each { |l| assert l.start_with?("ok "), "seed #{seed}: #{l}" }
      # the counts are not trivially zero
      big = lines.map { |l| l[/bytes=(\d+)/, 1].to_i }
      assert big.all? { |b| b > 100_000 }, out
      assert lines.select { |l| l =~ /interval=(1|7|4096) / }.all? { |l| l[/points=(\d+)/, 1].to_i > 0 }, out
    end
  end
end
