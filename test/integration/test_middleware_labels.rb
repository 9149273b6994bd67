# The middleware never fails a request because of a label: a path of
# 10 KB, one with a NUL byte, invalid UTF-8 or Latin-1 bytes, a label
# Hash that with_labels would refuse (a non-String value, an empty key),
# and a request already inside with_labels near its 4 KiB cap are all
# served by the app; the default endpoint label is valid UTF-8, has no
# NUL byte and at most LABEL_BYTES bytes, and the app's samples carry it.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareLabels < Minitest::Test
  Middleware = ObjectSpace::AllocationSampler::Middleware

  def env_for(path)
    { "REQUEST_METHOD" => "GET", "PATH_INFO" => path, "QUERY_STRING" => "", "REMOTE_ADDR" => "127.0.0.1" }
  end

  def test_labels_never_fail_a_request
    Sampler.start(interval: 1, mode: :fixed)
    seen = []
    app = lambda do |env|
      seen << env["PATH_INFO"]
      $made = Array.new(50) { Object.new }
      [200, {}, ["ok"]]
    end
    mw = Middleware.new(app)
    long = "/#{"x" * 10_000}"
    paths = [long, "/a\0b", "/caf\xC3".b, "/caf\xE9".dup.force_encoding("ISO-8859-1"), "/\xFF\xFE".b, "/#{"é" * 3000}"]
    paths.each do |path|
      status, = mw.call(env_for(path))
      assert_equal 200, status, path.inspect
    end
    assert_equal paths, seen

    endpoints = Sampler.samples.filter_map { |s| s.labels["endpoint"] if s.klass == Object }.uniq
    assert_equal paths.size, endpoints.size, endpoints.inspect
    endpoints.each do |value|
      assert value.valid_encoding?, value.inspect
      refute_includes value, "\0"
      assert_operator value.bytesize, :<=, Middleware::LABEL_BYTES
      assert value.start_with?("GET /"), value
    end
    assert_includes endpoints, "GET /caf\u00e9"                  # Latin-1, converted
    assert endpoints.any? { |v| v.start_with?("GET /xxxx") && v.end_with?("...") }

    # labels of the app's own choosing that with_labels refuses
    odd = Middleware.new(app, labels: ->(_env) { { "" => "empty key", tenant: 42, "x" * 5000 => "y" } })
    assert_equal 200, odd.call(env_for("/odd"))[0]
    # inside with_labels whose text leaves no room for the endpoint's
    Sampler.with_labels(big: "z" * 4000, **(1..15).to_h { |i| [:"k#{i}", "v"] }) do
      assert_equal 200, mw.call(env_for("/crowded"))[0]
    end
    assert_equal "/crowded", seen.last
    # an error the app raises is still the app's
    failing = Middleware.new(->(_env) { raise ArgumentError, "the app's own" })
    assert_equal "the app's own", assert_raises(ArgumentError) { failing.call(env_for("/f")) }.message
  ensure
    $made = nil
  end
end
