# GET /debug/pprof/delta_heap serves what godeltaprof serves (Grafana
# Alloy's profile.godeltaprof_memory scrapes it and stores it as it comes):
# alloc_* since the previous request to the route (the first: since
# start), inuse_* now, Go's four sample types, fetched by the real client
# (go tool pprof -raw http://...).  Between two fetches only /b is
# requested: make_b's allocations there equal the library's own Delta
# over the same requests (rack_server.rb's /delta, read beside each
# fetch), make_a shows in use only.  ?gc=1 and ?seconds=N (go tool pprof
# -seconds) are served as Go's handlers serve them, ?debug=1 as text in
# Go's heap layout; ?seconds with ?debug is a 400 in text, as Go's.
require_relative "helper"

class TestFleetDeltaHeap < Minitest::Test
  include RackServerHelper

  # {site => [alloc_space, inuse_space]} of a profile's samples (-raw).
  def by_site(samples, types)
    alloc, inuse = types.index("alloc_space"), types.index("inuse_space")
    samples.each_with_object(Hash.new { |h, k| h[k] = [0, 0] }) do |s, h|
      site = s[:functions].find { |f| f.start_with?("Object#make_") } or next
      h[site][0] += s[:values][alloc]
      h[site][1] += s[:values][inuse]
    end
  end

  def library_delta(port, site)
    p = FleetHelper::Reader.read(scrape(port, "/delta"))
    i = sample_type_index(p, "alloc_space")
    p.samples.select { |s| stack_of(p, s).any? { |f, _, _| f == site } }.sum { |s| s.values[i] }
  end

  def test_delta_heap
    with_rack_server do |port|
      url = "http://127.0.0.1:#{port}/debug/pprof/delta_heap"
      types = %w[alloc_objects alloc_space inuse_objects inuse_space]
      3.times { assert_equal "200", http_get(port, "/a").code }

      first = by_site(pprof_samples(url), types)
      library_delta(port, "Object#make_b")
      assert_operator first["Object#make_a"][0], :>, 0, "the first delta counts from start"

      4.times { assert_equal "200", http_get(port, "/b").code }
      second = by_site(pprof_samples(url), types)
      b = library_delta(port, "Object#make_b")
      assert_operator b, :>, 0
      assert_equal b, second["Object#make_b"][0], "make_b's alloc_space: what the library's Delta says"
      assert_equal 0, second["Object#make_a"][0], "make_a allocated nothing since"
      assert_operator second["Object#make_a"][1], :>, 0, "make_a in use now"

      res = http_get(port, "/debug/pprof/delta_heap?gc=1")
      assert_equal ["200", "application/octet-stream"], [res.code, res["content-type"]], "gc=1"
      assert_equal "\x1f\x8b".b, res.body.b[0, 2], "gzipped"
      assert_equal types, FleetHelper::Reader.read(res.body).sample_types.map(&:first), "Go's four sample types"

      4.times { assert_equal "200", http_get(port, "/b").code }
      text = http_get(port, "/debug/pprof/delta_heap?debug=1")
      assert_equal ["200", "text/plain; charset=utf-8"], [text.code, text["content-type"]], "debug=1"
      assert_match(/\Aheap profile: \d+: \d+ \[\d+: \d+\] @ heap\/4096\n/, text.body)
      assert_match(/^\d+: \d+ \[\d+: \d+\] @ (0x\h+ )*0x\h+\n#\t0x\h+\t/, text.body, "a record and its frames")
      assert_match(/^#\t0x\h+\tObject#make_b\t\S+rack_server\.rb:\d+$/, text.body)

      windowed = by_site(pprof_samples("-seconds", "1", url), types)
      assert_equal 0, windowed["Object#make_b"][0], "seconds=1: nothing of make_b allocated in that second"
      assert_operator windowed["Object#make_b"][1], :>, 0, "seconds=1: in use now"

      bad = http_get(port, "/debug/pprof/delta_heap?seconds=1&debug=1")
      assert_equal ["400", "text/plain; charset=utf-8"], [bad.code, bad["content-type"]]
      assert_match(/seconds and debug/, bad.body)
    end
  end
end
