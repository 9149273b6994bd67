# mode: :poisson: sample counts agree with the Poisson model within 6 sigma
# across seeds, weights estimate allocated bytes without bias, and a fixed
# seed reproduces the same sample counts.
require_relative "helper"

class TestSamplingPoisson < Minitest::Test
  N = 200_000
  SIZE = PLAIN_OBJECT_SLOT    # Object.new's slot: 40 bytes (4.1: 32)

  def allocate_n = N.times { Object.new }

  def test_counts_within_6_sigma
    interval = 4096
    p = 1 - Math.exp(-SIZE.to_f / interval)  # chance a slot holds a point
    (1..12).each do |seed|
      Sampler.clear
      Sampler.start(interval: interval, mode: :poisson, seed: seed)
      allocate_n
      h = heap_stats[SIZE]
      n = h[:allocated_bytes] / SIZE
      mean = n * p
      sigma = Math.sqrt(n * p * (1 - p))
      assert_in_delta mean, h[:samples], 6 * sigma, "seed #{seed}: #{h[:samples]} samples of #{n} allocations"
      Sampler.stop
    end
  end

  def test_weights_estimate_bytes
    Sampler.start(interval: 2048, mode: :poisson, seed: 99, max_samples: 1_000_000)
    allocate_n
    Sampler.stop
    stats = heap_stats[SIZE]
    estimate = Sampler.samples.select { |s| s.size == SIZE }.sum(&:weight)
    truth = stats[:allocated_bytes]
    p = 1 - Math.exp(-SIZE.to_f / 2048)
    rel_sd = Math.sqrt((1 - p) / (truth / SIZE * p))
    assert_in_delta 1.0, estimate / truth, 6 * rel_sd
  end

  def test_seed_reproduces
    counts = 2.times.map do
      code = 'S = ObjectSpace::AllocationSampler; S.start(interval: 1000, seed: 42); 50_000.times { Object.new }; p S.stats[:heaps][0][:samples]'
      out, err, status = run_ruby(code)
      assert status.success?, err
      out
    end
    assert_equal counts[0], counts[1]
  end
end
