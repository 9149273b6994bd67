# The loopback rule fails closed behind a proxy: from 127.0.0.1, a
# forwarding header that does not parse into allowed addresses
# (RFC 7239's quoted IPv6-with-port form for an outside client,
# X-Real-IP, Client-IP, True-Client-IP, "unknown", an empty one) is
# refused, and so is a request that looks proxied without one (a Host
# that is not loopback or localhost, X-Forwarded-Host, Via alone; HTTP/1.0
# is tested in test_middleware_server.rb, as WEBrick does not report it),
# unless token: or an allow: entry admits it.  Direct local
# requests, and forwarded ones for allowed clients, are served.
require_relative "helper"

class TestMiddlewareProxy < Minitest::Test
  include RackServerHelper

  def status(url, *headers, http: "--http1.1")
    curl(url, http, *headers.flat_map { |h| ["-H", h] })[0]
  end

  def test_fails_closed_behind_a_proxy
    env = { "MIDDLEWARE_OPTIONS" => '{ token: "s3cret", allow: ["2001:db8:beef::/48"] }' }
    with_rack_server(env: env) do |port|
      heap = "http://127.0.0.1:#{port}/debug/pprof/heap"
      refused = [
        'Forwarded: for="[2001:db8:cafe::17]:4711"',        # RFC 7239's own example
        "Forwarded: for=unknown",
        'Forwarded: for="_gazonk"',
        "Forwarded: proto=https;by=127.0.0.1",              # no for=: the client is not named
        "Forwarded: for=127.0.0.1;host=app.example.com",
        "X-Real-IP: 203.0.113.5",
        "X-Forwarded-For: 127.0.0.1, 203.0.113.5",
        "X-Forwarded-For: unknown",
        "X-Forwarded-For;",                                  # (curl: the header, empty)
        "Client-IP: 203.0.113.5",
        "True-Client-IP: 203.0.113.5",
        "X-Forwarded-Host: app.example.com",
        "Via: 1.1 proxy",
        "X-Forwarded-Proto: https",
        "Host: app.example.com",
        "Host: 203.0.113.5:80",
      ]
      refused.each do |header|
        code, body = curl(heap, "-H", header)
        assert_equal 403, code, header
        assert_match(/loopback clients only/, body, header)
      end

      served = [
        nil,
        'Forwarded: for="[::1]:4711"',
        'Forwarded: for="[2001:db8:beef::17]:4711";proto=http',   # parsed: an allowed client
        "Forwarded: for=127.0.0.1;host=localhost",
        "X-Forwarded-For: 127.0.0.1, ::1",
        "X-Real-IP: 2001:db8:beef::5",
        "Via: 1.1 proxy\nX-Forwarded-For: 127.0.0.1".split("\n"),
        "Host: localhost:#{port}",
        "Host: [::1]:#{port}",
      ]
      served.each { |headers| assert_equal 200, status(heap, *Array(headers)), headers.inspect }
      # the token admits what looks proxied
      assert_equal 200, status(heap, "Host: app.example.com", "Authorization: bearer s3cret")
      assert_equal 200, status(heap, 'Forwarded: for="[2001:db8:cafe::17]:4711"', "Authorization: Bearer s3cret")
      # the app itself is not guarded
      assert_equal 200, status("http://127.0.0.1:#{port}/a", "Host: app.example.com", "X-Real-IP: 203.0.113.5")
    end
    # an allow: entry naming the peer trusts what it says of hosts (a
    # local proxy that adds X-Forwarded-For), never an outside client
    with_rack_server(env: { "MIDDLEWARE_OPTIONS" => '{ allow: ["127.0.0.1"] }' }) do |port|
      heap = "http://127.0.0.1:#{port}/debug/pprof/heap"
      assert_equal 200, status(heap, "Host: app.example.com", "X-Forwarded-For: 127.0.0.1")
      assert_equal 403, status(heap, "Host: app.example.com", "X-Forwarded-For: 203.0.113.5")
      assert_equal 403, status(heap, 'Forwarded: for="[2001:db8:cafe::17]:4711"')
    end
  end
end
