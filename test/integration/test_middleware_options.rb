# Middleware options that could never work are refused at new with an
# ArgumentError naming the option: a token with a space (or empty, or
# not a String), a prefix that is nil, "", "/", has no leading slash or
# holds "//", "?" or a space, a bad allow: entry, a bad
# retention_max_objects:.  Good options are kept (a trailing slash on the
# prefix is dropped), and the Bearer scheme is case-insensitive.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareOptions < Minitest::Test
  Middleware = ObjectSpace::AllocationSampler::Middleware
  APP = ->(_env) { [200, {}, ["app"]] }

  def refused(option, value)
    err = assert_raises(ArgumentError, "#{option}: #{value.inspect}") { Middleware.new(APP, option => value) }
    assert_match(/\A#{option}\b/, err.message)
    err.message
  end

  def get(mw, path, **headers)
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => path, "QUERY_STRING" => "", "REMOTE_ADDR" => "203.0.113.9",
            "HTTP_HOST" => "app.example.com" }
    headers.each { |k, v| env["HTTP_#{k.upcase}"] = v }
    mw.call(env)[0]
  end

  def test_options_are_checked
    ["two words", "tab\there", "", "new\nline", "caf\u00e9", :sym].each { |t| refused(:token, t) }
    refute_match(/two words/, refused(:token, "two words"))   # the secret is not echoed
    [nil, "", "/", "//", "debug", "debug/pprof", "/debug//pprof", "/debug pprof", "/debug?x", 7].each { |p| refused(:prefix, p) }
    [["not an address"], [42], ["10.0.0.0/99"]].each { |a| refused(:allow, a) }
    [0, -1, 1.5, "100"].each { |m| refused(:retention_max_objects, m) }
    refused(:max_seconds, 0)
    refused(:labels, "endpoint")

    Sampler.start
    mw = Middleware.new(APP, token: "s3cret-tok_en.1~+/=", prefix: "/internal/pprof/")
    assert_equal 200, get(mw, "/internal/pprof/heap", authorization: "Bearer s3cret-tok_en.1~+/=")
    assert_equal 200, get(mw, "/internal/pprof/heap", authorization: "bearer s3cret-tok_en.1~+/=")
    assert_equal 200, get(mw, "/internal/pprof/heap", authorization: "BEARER  s3cret-tok_en.1~+/=")
    assert_equal 403, get(mw, "/internal/pprof/heap", authorization: "Basic s3cret-tok_en.1~+/=")
    assert_equal 403, get(mw, "/internal/pprof/heap", authorization: "bearer s3cret")
    assert_equal 200, get(mw, "/debug/pprof/heap")                # the app's now
    assert_equal 200, get(Middleware.new(APP, prefix: "/p", retention_max_objects: nil), "/other")
  end
end
