# Two forwarding cases the loopback rule refuses: a Forwarded element
# that repeats a parameter (RFC 7239 forbids it: which for= is the
# client's is unknown), and WebLogic's client headers (WL-Proxy-Client-IP,
# Proxy-Client-IP) naming an outside client.  Loopback values in them,
# and one for= per element, are still served.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareProxyRepeated < Minitest::Test
  def call(headers)
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => "/debug/pprof/heap", "QUERY_STRING" => "",
            "REMOTE_ADDR" => "127.0.0.1", "HTTP_VERSION" => "HTTP/1.1", "SERVER_PROTOCOL" => "HTTP/1.1" }.merge(headers)
    ObjectSpace::AllocationSampler::Middleware.new(->(_) { [404, {}, []] }).call(env)
  end

  def test_repeated_parameters_and_weblogic_headers_are_refused
    Sampler.start
    refused = [
      { "HTTP_FORWARDED" => "for=203.0.113.5;for=127.0.0.1" },
      { "HTTP_FORWARDED" => "for=127.0.0.1;FOR=203.0.113.5" },
      { "HTTP_FORWARDED" => "for=127.0.0.1;host=localhost;host=app.example.com" },
      { "HTTP_WL_PROXY_CLIENT_IP" => "203.0.113.5" },
      { "HTTP_PROXY_CLIENT_IP" => "203.0.113.5" },
    ]
    refused.each do |headers|
      status, _, body = call(headers)
      assert_equal 403, status, headers.inspect
      assert_match(/loopback clients only/, body.join, headers.inspect)
    end
    served = [
      { "HTTP_FORWARDED" => "for=127.0.0.1, for=::1" },
      { "HTTP_WL_PROXY_CLIENT_IP" => "127.0.0.1" },
      { "HTTP_PROXY_CLIENT_IP" => "::1" },
    ]
    served.each { |headers| assert_equal 200, call(headers)[0], headers.inspect }
  end
end
