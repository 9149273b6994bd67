# The Rack middleware under a real server (WEBrick through Rack), fetched
# by the real clients: `go tool pprof -raw http://...` and curl.  Requests
# to /a and /b, sent concurrently from several threads, are labelled by
# endpoint: in the heap profile each endpoint's site appears only under
# its own label, in alloc_space and inuse_space; allocs?seconds=N is a
# delta (only what was allocated during those seconds); responses are
# gzipped pprof with the content type Go's handlers use.
require_relative "helper"
require "net/http"
require "tmpdir"

class TestMiddlewarePprof < Minitest::Test
  include RackServerHelper

  def hit(port, paths, threads: 4)
    Array.new(threads) do |i|
      Thread.new do
        Net::HTTP.start("127.0.0.1", port) do |http|
          paths.each_with_index { |p, j| assert_equal "200", http.get(paths[(i + j) % paths.size]).code }
        end
      end
    end.each(&:join)
  end

  def by_site(samples)
    totals = Hash.new { |h, k| h[k] = [0, 0] }
    samples.each do |s|
      site = rack_site(s) or next
      totals[[site, s[:labels]["endpoint"]]][0] += s[:values][1]
      totals[[site, s[:labels]["endpoint"]]][1] += s[:values][3]
    end
    totals
  end

  def test_go_tool_pprof_and_curl
    Dir.mktmpdir do |dir|
      with_rack_server do |port|
        base = "http://127.0.0.1:#{port}/debug/pprof"
        hit(port, (["/a", "/b"] * 20))

        heap = by_site(pprof_samples("#{base}/heap"))
        assert_equal [[:a, "GET /a"], [:b, "GET /b"]], heap.keys.sort_by(&:to_s)
        heap.each { |key, (alloc, inuse)| assert_operator alloc, :>, 0, key; assert_operator inuse, :>, 0, key }

        # a delta: /b only during its 2 seconds
        fetch = Thread.new { pprof_samples("#{base}/allocs?seconds=2") }
        sleep 0.5
        hit(port, ["/b"] * 10)
        delta = by_site(fetch.value)
        # (sites of /a are there with their in-use bytes only)
        assert_equal [[:b, "GET /b"]], delta.select { |_, (alloc, _)| alloc > 0 }.keys
        assert_operator delta[[:a, "GET /a"]][1], :>, 0
        assert_operator delta[[:b, "GET /b"]][0], :>, 0
        full = by_site(pprof_samples("#{base}/allocs"))
        assert_operator full[[:b, "GET /b"]][0], :>, delta[[:b, "GET /b"]][0]
        assert_operator full[[:a, "GET /a"]][0], :>, 0

        out, err, status = Open3.capture3("curl", "-s", "-D", "-", "-o", File.join(dir, "heap.pb.gz"), "#{base}/heap?gc=1")
        assert status.success?, err
        assert_match %r{^HTTP/1\.1 200}, out
        assert_match %r{^content-type: application/octet-stream}i, out
        bytes = File.binread(File.join(dir, "heap.pb.gz"))
        assert_equal "\x1f\x8b".b, bytes[0, 2]   # gzip
        assert_match(/inuse_space/, pprof("-raw", File.join(dir, "heap.pb.gz")))
      end
    end
  end
end
