# frozen_string_literal: true
# Lifetimes per site put each site in its class: a site whose objects die
# young shows its bytes dead in the first GC; a long-lived one shows them
# alive (censored) and promoted; one kept through several minor GCs until
# promoted, then dropped, shows them as promoted_dead_space (old-generation
# garbage).  Read as a user reads them: go tool pprof on the profile's
# sample types.  Fixed mode (deterministic points), 4 KiB; each site
# allocates about 1.6 MB, some 400 samples, so the bounds below (95%, 5%)
# leave room for the conservative stack scan and a few samples on the
# sites' edges, not for a wrong class.
require_relative "helper"

$long = $promoted = nil

class TestLifetimeClasses < Minitest::Test
  N = 20_000

  def short_site = N.times { "short-lived string " * 2 }
  def long_site = $long = Array.new(N) { "long-lived string " * 2 }
  def promoted_site = $promoted = Array.new(N) { "promoted, dropped " * 2 }

  def test_each_site_is_in_its_class
    skip "go not installed" unless system("go version", out: File::NULL, err: File::NULL)
    GC.start
    # (slots only: promotion is a slot's; a site's malloc'd temporaries
    # would blur the classes this test draws)
    Sampler.start(interval: 4096, mode: :fixed, max_samples: 100_000, malloc: false)
    long_site
    promoted_site
    # through several minor GCs: promoted (old at RVALUE_OLD_AGE GCs survived)
    5.times do
      short_site
      scrub
      GC.start(full_mark: false)
    end
    $promoted = nil
    scrub
    GC.start
    Sampler.stop
    Dir.mktmpdir do |dir|
      path = File.join(dir, "life.pb.gz")
      Sampler.write_pprof(path)
      types = pprof("-raw", path)[/^Samples:\n(.*)$/, 1].split.map { |t| t.sub("[dflt]", "") }
      assert_equal %w[alloc_objects/count alloc_space/bytes inuse_objects/count inuse_space/bytes promoted_space/bytes
                      promoted_dead_space/bytes died_first_gc_space/bytes died_later_space/bytes heaptime/byte_MiB
                      inuse_heaptime/byte_MiB], types
      i = types.each_with_index.to_h { |t, j| [t[%r{\A[^/]+}], j] }
      sites = pprof_values_by_method(path, %w[short_site long_site promoted_site])
      sites.each { |name, v| refute_nil v, "#{name} is in the profile" }
      sites.each do |name, v|
        warn format("%-14s alloc %8d died@1st %8d later %8d alive %8d promoted %8d prom.dead %8d", name, v[i["alloc_space"]],
                    v[i["died_first_gc_space"]], v[i["died_later_space"]], v[i["inuse_space"]], v[i["promoted_space"]],
                    v[i["promoted_dead_space"]]) if ENV["VERBOSE"]
      end
      share = ->(site, type) { sites[site][i[type]].to_f / sites[site][i["alloc_space"]] }

      assert_operator share.("short_site", "died_first_gc_space"), :>=, 0.95, "short-lived: dead in the first GC"
      assert_operator share.("short_site", "promoted_space"), :<=, 0.05, "short-lived: not promoted"
      assert_operator share.("short_site", "inuse_space"), :<=, 0.05, "short-lived: not alive"

      assert_operator share.("long_site", "inuse_space"), :>=, 0.95, "long-lived: alive (censored)"
      assert_operator share.("long_site", "promoted_space"), :>=, 0.95, "long-lived: promoted"
      assert_operator share.("long_site", "promoted_dead_space"), :<=, 0.05, "long-lived: no old garbage"
      assert_operator share.("long_site", "died_first_gc_space") + share.("long_site", "died_later_space"), :<=, 0.05,
                      "long-lived: censored lives are not deaths"
      assert_operator sites["long_site"][i["heaptime"]], :<=, 0.05 * sites["long_site"][i["inuse_heaptime"]],
                      "long-lived: its heaptime is the censored one"

      assert_operator share.("promoted_site", "promoted_dead_space"), :>=, 0.95, "promoted, then dropped: old garbage"
      assert_operator share.("promoted_site", "died_later_space"), :>=, 0.95, "it died after surviving GCs"
      assert_operator share.("promoted_site", "inuse_space"), :<=, 0.05, "and is not alive"
      assert_operator sites["promoted_site"][i["heaptime"]], :>, 0, "its heaptime counts its life"
    end
  ensure
    $long = $promoted = nil
  end
end
