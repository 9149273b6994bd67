# Four Ractors allocate in parallel while the main Ractor samples: on
# Ruby 4.1 each Ractor has an objspace of its own, collected by its own
# local GCs (no lock) and now and then by a global one.  The sampler works
# on the main Ractor's objspace (docs/ruby-4.1.md): the main Ractor's
# fixed-mode counts stay exact on every heap while the others allocate and
# collect, the main Ractor's sampled objects keep their records (live
# while held), the Ractors that end are absorbed, and the collector's own
# check passes.  On 3.4 and 4.0 the same
# program runs with one objspace: the main Ractor's counts are exact there
# too (its cache is its own).
require_relative "helper"

class TestThreadsRactorsParallel < Minitest::Test
  PROGRAM = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    S.start(interval: 4096, mode: :fixed, max_samples: 200_000, malloc: false)
    workers = 4.times.map do |w|
      Ractor.new(w) do |w|
        keep = []
        30.times do |round|
          3_000.times { |i| keep << "ractor #{w} #{i}" * (1 + i % 8) }
          keep.shift(2_000)
          GC.start if round % 10 == 9
        end
        keep.size
      end
    end
    mine = []
    200.times do |round|
      500.times { |i| mine << "main #{i}" * (1 + i % 8) }
      mine.shift(400) if round.odd?
      GC.start if round % 50 == 49
    end
    sizes = workers.map { |r| r.respond_to?(:value) ? r.value : r.take }
    st = S.stats
    short = RUBY_VERSION >= "4.1" ? 0 : 5
    exact = st[:heaps].all? { |h| (h[:allocated_bytes] / 4096 - h[:points]).between?(0, short) }
    GC.start
    # (mine holds 500 * 200 - 400 * 100 = 60,000 Strings, about 2.4 MB)
    live = S.samples.count { |s| s.live? && s.klass == String && s.frames.any? { |f| f[2] == "block (2 levels) in <main>" } }
    GC.verify_internal_consistency
    puts [sizes.sum, exact, st[:samples] > 100, live > 100, mine.size].inspect
  RUBY

  def test_main_ractor_counts_while_others_allocate
    out, err, status = run_ruby(PROGRAM, args: ["-W0"])
    assert status.success?, err
    assert_equal "[#{4 * 30_000}, true, true, true, 60000]\n", out, err
  end
end
