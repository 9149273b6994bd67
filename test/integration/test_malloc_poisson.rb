# Poisson mode estimates malloc'd bytes per site without bias: over fixed
# seeds, each site's estimate (the sum of its samples' weights) lies
# within 6 sigma of the exact bytes, which a fixed-mode run at interval 1
# counts (every byte a point: every allocation a sample of weight = its
# bytes; a block grown by realloc is one sample, whose weight is the
# bytes its allocation and its growths put on the stream, at most its
# size: a growth is measured from the old block's usable size).  sigma
# comes from the same exact run: a block of s bytes is sampled with
# probability p = 1 - exp(-s/interval) and then weighs s/p, so its
# variance is s^2 (1 - p) / p (Horvitz-Thompson), summed over the site's
# blocks (a grown block's pieces, each sampled on its own, vary less).
require_relative "helper"

class TestMallocPoisson < Minitest::Test
  INTERVAL = 16_384
  SEEDS = [1, 2, 3, 4, 5, 6].freeze

  def workload
    300.times { "a" * 5_000 }                         # SITE :a
    2_000.times { "b" * 1_000 }                       # SITE :b
    40.times { "c" * 100_000 }                        # SITE :c
    200.times { s = +""; 30.times { s << "d" * 100 } } # SITE :d (reallocs)
    nil
  end

  SITES = File.readlines(__FILE__).each_with_index.filter_map { |l, i| [i + 1, l[/# SITE :(\w)/, 1].to_sym] if l =~ /# SITE :\w/ }.to_h

  # { site => [sizes] } of the malloc samples taken in workload
  def sizes_by_site
    h = Hash.new { |hh, k| hh[k] = [] }
    Sampler.samples.each do |s|
      next unless s.kind == :malloc
      f = s.frames.find { |fr| fr[0] == __FILE__ }
      site = f && SITES[f[1]]
      h[site] << [s.size, s.weight] if site
    end
    h
  end

  def test_estimates_within_six_sigma
    Sampler.start(malloc: true, interval: 1, mode: :fixed, max_samples: 1_000_000)
    workload
    Sampler.stop
    exact = sizes_by_site
    assert_equal SITES.values.sort, exact.keys.sort, "every site seen in the exact run"
    exact.each_value { |l| l.each { |size, w| assert_operator w, :<=, size, "interval 1: weight == bytes counted" } }
    sigma = exact.transform_values do |l|
      Math.sqrt(l.sum { |size, _| p = 1 - Math.exp(-size.to_f / INTERVAL); size * size * (1 - p) / p })
    end
    totals = exact.transform_values { |l| l.sum(&:last) }

    SEEDS.each do |seed|
      Sampler.clear
      Sampler.start(malloc: true, interval: INTERVAL, mode: :poisson, seed: seed, max_samples: 100_000)
      workload
      Sampler.stop
      est = sizes_by_site.transform_values { |l| l.sum(&:last) }
      totals.each do |site, bytes|
        e = est.fetch(site, 0.0)
        assert_operator (e - bytes).abs, :<=, 6 * sigma[site],
                        "seed #{seed}, site #{site}: estimate #{e.round}, exact #{bytes}, sigma #{sigma[site].round}"
      end
    end
  end
end
