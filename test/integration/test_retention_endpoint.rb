# GET /debug/pprof/retention: the retention view through the Rack
# middleware, read by go tool pprof from the URL; what /a keeps in $kept
# shows its path from the global; the same refusal rules as the other
# routes (403 for an outside client, 503 with the sampler stopped, 405).
require_relative "helper"

class TestRetentionEndpoint < Minitest::Test
  include RackServerHelper

  def test_retention_route
    with_rack_server do |port|
      base = "http://127.0.0.1:#{port}/debug/pprof"
      3.times { assert_equal 200, curl("http://127.0.0.1:#{port}/a")[0] }
      traces = pprof("-traces", "#{base}/retention")
      # (make_a's Array and its Strings: either may come first)
      kept = traces.split(/^-+\+-+$/).select { |t| t.include?("make_a") && t.include?("global $kept") }
      refute_empty kept, traces
      assert kept.any? { |t| t.match?(/\(String\)/) }, traces
      status, body = curl("#{base}/retention", "-H", "X-Forwarded-For: 203.0.113.7")
      assert_equal 403, status
      assert_match(/loopback clients only/, body)
      assert_equal 405, curl("#{base}/retention", "-d", "x=1")[0]
      status, body = curl("#{base}/nothing")
      assert_equal 404, status
      assert_match(%r{/retention}, body)
    end
    with_rack_server(env: { "SAMPLER_OFF" => "1" }) do |port|
      status, body = curl("http://127.0.0.1:#{port}/debug/pprof/retention")
      assert_equal 503, status
      assert_match(/allocation sampler is not running/, body)
    end
  end
end
