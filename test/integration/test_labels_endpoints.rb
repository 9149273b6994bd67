# Labels follow the work, and only it: two endpoints that allocate at
# different sites, run concurrently from several threads and from fibers
# interleaved on one thread, each inside with_labels(endpoint: ...).  Every
# sample of make_alpha is labelled alpha and every one of make_beta beta
# (Sample#labels, and the pprof labels of alloc_space and inuse_space
# samples); nothing allocated outside with_labels carries a label, also
# in a thread or fiber right after its with_labels block.
require_relative "helper"
require "tmpdir"

class TestLabelsEndpoints < Minitest::Test
  THREADS = 6
  ROUNDS = 150

  def make_alpha
    Array.new(20) { "alpha" * 20 }
  end

  def make_beta
    Array.new(20) { [1, 2, 3, 4, 5] }
  end

  def endpoint(name, kept)
    Sampler.with_labels(endpoint: name) do
      kept << (name == "alpha" ? make_alpha : make_beta)
    end
  end

  def unlabelled_work
    Array.new(20) { "none" * 20 }
  end

  def run_load
    kept = Queue.new
    threads = Array.new(THREADS) do |i|
      Thread.new do
        ROUNDS.times do |r|
          endpoint((i + r).even? ? "alpha" : "beta", kept)
          kept << unlabelled_work if r % 5 == 0    # a request without labels, after one with
        end
      end
    end
    # fibers on this thread: each suspends inside its with_labels block
    fibers = %w[alpha beta].map do |name|
      Fiber.new do
        ROUNDS.times do
          Sampler.with_labels(endpoint: name) do
            kept << (name == "alpha" ? make_alpha : make_beta)
            Fiber.yield
            kept << (name == "alpha" ? make_alpha : make_beta)
          end
          kept << unlabelled_work
        end
      end
    end
    ROUNDS.times do
      fibers.each(&:resume)
      kept << unlabelled_work
    end
    threads.each(&:join)
    kept
  end

  def site_of(functions)
    return :alpha if functions.any? { |f| f.end_with?("#make_alpha") }
    return :beta if functions.any? { |f| f.end_with?("#make_beta") }
    return :none if functions.any? { |f| f.end_with?("#unlabelled_work") }
  end

  def test_each_site_only_under_its_endpoint
    Sampler.start(interval: 2048, mode: :fixed, seed: 1)
    kept = run_load
    samples = Sampler.samples
    by_site = Hash.new { |h, k| h[k] = Hash.new(0) }
    samples.each do |s|
      site = site_of(s.frames.map { |f| f[2] }) or next
      by_site[site][s.labels] += 1
    end
    assert_equal({ { "endpoint" => "alpha" } => by_site[:alpha].values.sum }, by_site[:alpha])
    assert_equal({ { "endpoint" => "beta" } => by_site[:beta].values.sum }, by_site[:beta])
    assert_equal({ {} => by_site[:none].values.sum }, by_site[:none])
    assert_operator by_site[:alpha].values.sum, :>, 50
    assert_operator by_site[:beta].values.sum, :>, 50
    assert samples.all? { |s| s.labels.frozen? }

    Dir.mktmpdir do |dir|
      path = File.join(dir, "labels.pb.gz")
      Sampler.write_pprof(path)
      totals = Hash.new { |h, k| h[k] = Hash.new(0) }
      pprof_samples(path).each do |s|
        site = site_of(s[:functions]) or next
        totals[[site, s[:labels]["endpoint"]]][:alloc_space] += s[:values][1]
        totals[[site, s[:labels]["endpoint"]]][:inuse_space] += s[:values][3]
      end
      assert_equal [[:alpha, "alpha"], [:beta, "beta"], [:none, nil]].sort_by(&:to_s), totals.keys.sort_by(&:to_s)
      totals.each_value do |t|
        assert_operator t[:alloc_space], :>, 0
        assert_operator t[:inuse_space], :>, 0   # kept alive in `kept`
      end
    end
    kept.close
  end
end
