# A continuous profiler's delta of two scrapes of /debug/pprof/allocs
# agrees, stack by stack, with the library's own Delta over the same
# window.  Grafana Alloy (pyroscope.scrape, profile.memory) scrapes the
# cumulative allocs profile and subtracts the previous scrape itself, with
# DataDog's fastdelta: a sample is identified by the addresses of its
# Locations plus its labels (hasher.go), duplicates are summed, alloc_*
# become differences and all-zero samples are dropped (delta_map.go).
# This test does exactly that, from those rules (no engine can be
# installed here).  With every address 0 (before), two stacks of one depth
# and labels are one sample to it: /c's two sites (make_c1, make_c2) merge
# and the delta puts both under one stack.  fastdelta also takes at most
# four values a sample (maxSampleValues): checked last.
#
# The library's side: a Delta in the server (rack_server.rb's GET /delta)
# read right after each scrape; only application stacks are compared (the
# scrapes' own allocations fall between a scrape and its Delta read).  Fixed mode:
# alloc_space agrees exactly, alloc_objects within the rounding (1).
require_relative "helper"

class TestFleetScraperDelta < Minitest::Test
  include RackServerHelper

  DELTA_TYPES = %w[alloc_objects alloc_space].freeze

  # fastdelta's state: identity => the values of the previous scrape.
  # Returns the delta profile's samples: [identity, sample, values].
  def fastdelta(state, profile)
    addresses = profile.locations.transform_values(&:address)
    delta_at = profile.sample_types.map { |t, _| DELTA_TYPES.include?(t) }
    summed = {}
    firsts = {}
    profile.samples.each do |s|
      id = [s.location_ids.map { |l| addresses.fetch(l) }, s.labels.sort]
      firsts[id] ||= s
      summed[id] = summed[id] ? summed[id].zip(s.values).map(&:sum) : s.values.dup
    end
    out = summed.filter_map do |id, values|
      old = state[id]
      delta = values.each_with_index.map { |v, i| delta_at[i] && old ? v - old[i] : v }
      state[id] = values
      [id, firsts[id], delta] unless delta.all?(&:zero?)
    end
    out
  end

  APP = /\AObject#make_/

  # {[labels, stack]} => [alloc_objects, alloc_space] for the stacks of the
  # application's sites.
  def app_allocations(profile, samples)
    objects = sample_type_index(profile, "alloc_objects")
    space = sample_type_index(profile, "alloc_space")
    samples.each_with_object({}) do |(sample, values), h|
      stack = stack_of(profile, sample)
      next unless stack.any? { |f, _, _| f =~ APP }

      key = [sample.labels.sort, stack]
      h[key] = [values[objects], values[space]]
    end
  end

  # A stack in a line: its labels and frames up to the application's.
  def brief((labels, stack))
    app = stack.index { |f, _, _| f =~ APP }
    "#{labels.to_h.values_at('endpoint', 'type').join(' ')}: #{stack[0..app].map { |f, _, l| "#{f}:#{l}" }.join(' < ')}"
  end

  def test_scraper_delta_matches_the_library_delta
    with_rack_server do |port|
      %w[/a /b /c].each { |p| assert_equal "200", http_get(port, p).code }
      state = {}
      first = Reader.read(scrape(port, "/debug/pprof/allocs"))
      fastdelta(state, first)
      scrape(port, "/delta")

      3.times { %w[/a /c /c /b].each { |p| assert_equal "200", http_get(port, p).code } }

      second = Reader.read(scrape(port, "/debug/pprof/allocs"))
      scraper = app_allocations(second, fastdelta(state, second).map { |_, s, v| [s, v] })
      library_profile = Reader.read(scrape(port, "/delta"))
      library = app_allocations(library_profile, library_profile.samples.map { |s| [s, s.values] })
      library.reject! { |_, (objects, space)| objects.zero? && space.zero? }
      # (fastdelta keeps a sample whose alloc_* did not move while its
      # inuse_* is not zero; with nothing allocated in the window it is no
      # allocation of the window: the library's Delta leaves it out)
      scraper.reject! { |_, (objects, space)| objects.zero? && space.zero? }

      sites = ->(h) { h.keys.map { |_, stack| stack.find { |f, _, _| f =~ APP }[0] }.uniq.sort }
      assert_equal %w[Object#make_a Object#make_b Object#make_c1 Object#make_c2], sites.(library),
                   "the library's delta has every site"
      assert_equal library.keys.map { |k| brief(k) }.sort, scraper.keys.map { |k| brief(k) }.sort,
                   "the scraper's delta has the same stacks"
      library.each do |key, (objects, space)|
        got_objects, got_space = scraper.fetch(key)
        assert_equal space, got_space, "alloc_space of #{brief(key)}"
        assert_in_delta objects, got_objects, 1, "alloc_objects of #{brief(key)}"
      end
      assert_operator second.sample_types.size, :<=, 4, "fastdelta takes at most 4 values a sample"
    end
  end
end
