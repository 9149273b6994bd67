# The middleware serves profiles to loopback clients only: a request a
# proxy forwarded for an outside client (X-Forwarded-For, Forwarded) is
# refused with 403, unless the client is allowed or brings the token; and
# errors get a clear status and message: a bad seconds= is 400, a stopped
# sampler 503, other routes 404, other methods 405.  The server goes on
# serving after each.
require_relative "helper"

class TestMiddlewareRefusal < Minitest::Test
  include RackServerHelper

  def test_refusal_and_errors
    env = { "MIDDLEWARE_OPTIONS" => '{ token: "s3cret", allow: ["198.51.100.0/24"] }' }
    with_rack_server(env: env) do |port|
      base = "http://127.0.0.1:#{port}/debug/pprof"
      assert_equal 200, curl("#{base}/heap")[0]
      status, body = curl("#{base}/heap", "-H", "X-Forwarded-For: 203.0.113.7")
      assert_equal 403, status
      assert_match(/loopback clients only/, body)
      assert_equal 403, curl("#{base}/heap", "-H", "Forwarded: for=\"[2001:db8::1]\"")[0]
      assert_equal 403, curl("#{base}/heap", "-H", "X-Forwarded-For: 203.0.113.7", "-H", "Authorization: Bearer wrong")[0]
      assert_equal 200, curl("#{base}/heap", "-H", "X-Forwarded-For: 203.0.113.7", "-H", "Authorization: Bearer s3cret")[0]
      assert_equal 200, curl("#{base}/heap", "-H", "X-Forwarded-For: 198.51.100.9")[0]
      # the app itself is not guarded
      assert_equal 200, curl("http://127.0.0.1:#{port}/a", "-H", "X-Forwarded-For: 203.0.113.7")[0]

      %w[abc 0 -1 601 1.5].each do |bad|
        status, body = curl("#{base}/allocs?seconds=#{bad}")
        assert_equal 400, status, bad
        assert_match(/seconds must be an integer from 1 to 600/, body)
      end
      assert_equal 404, curl("#{base}/goroutine")[0]
      assert_equal 405, curl("#{base}/heap", "-d", "x=1")[0]
      assert_equal 200, curl("http://127.0.0.1:#{port}/b")[0]
    end

    with_rack_server(env: { "SAMPLER_OFF" => "1" }) do |port|
      status, body = curl("http://127.0.0.1:#{port}/debug/pprof/heap")
      assert_equal 503, status
      assert_match(/allocation sampler is not running/, body)
      assert_equal 503, curl("http://127.0.0.1:#{port}/debug/pprof/allocs?seconds=1")[0]
      assert_equal 200, curl("http://127.0.0.1:#{port}/a")[0]
    end
  end
end
