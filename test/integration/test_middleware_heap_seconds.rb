# GET /debug/pprof/heap?seconds=N answers, as Go's handler does, a delta
# after N seconds: alloc_* only of what was allocated during those
# seconds (/b's site, hit meanwhile; /a's, hit before, with its in-use
# bytes only), read by go tool pprof from the URL; a bad seconds= is 400.
require_relative "helper"
require "net/http"

class TestMiddlewareHeapSeconds < Minitest::Test
  include RackServerHelper

  def by_site(samples)
    totals = Hash.new { |h, k| h[k] = [0, 0] }
    samples.each do |s|
      site = rack_site(s) or next
      totals[site][0] += s[:values][1]   # alloc_space
      totals[site][1] += s[:values][3]   # inuse_space
    end
    totals
  end

  def test_heap_seconds_is_a_delta
    with_rack_server do |port|
      base = "http://127.0.0.1:#{port}/debug/pprof"
      Net::HTTP.start("127.0.0.1", port) { |http| 10.times { assert_equal "200", http.get("/a").code } }
      started = Process.clock_gettime(Process::CLOCK_MONOTONIC)
      fetch = Thread.new { pprof_samples("#{base}/heap?seconds=2") }
      # /b is hit until the answer comes: however late go tool pprof's
      # request reaches the server (its start took over 0.5 s once, under
      # load, and no /b fell in the window), hits fall inside its 2 seconds
      Net::HTTP.start("127.0.0.1", port) do |http|
        while fetch.alive?
          assert_equal "200", http.get("/b").code
          sleep 0.1
        end
      end
      delta = by_site(fetch.value)
      assert_equal 0, delta[:a][0], "alloc_space of /a, hit before the window"
      assert_operator delta[:a][1], :>, 0
      assert_operator delta[:b][0], :>, 0
      # (it waited: an answer at once would be before the 2 seconds)
      assert_operator Process.clock_gettime(Process::CLOCK_MONOTONIC) - started, :>=, 2
      whole = by_site(pprof_samples("#{base}/heap"))
      assert_operator whole[:a][0], :>, 0
      code, body = curl("#{base}/heap?seconds=0")
      assert_equal 400, code
      assert_match(/seconds must be an integer from 1 to 600/, body)
    end
  end
end
