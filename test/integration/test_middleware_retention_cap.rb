# The retention route bounds its pause: its walk stops at a cap
# (retention_max_objects:, default Middleware::RETENTION_MAX_OBJECTS;
# ?max_objects=N lowers it for one request), and a cut walk says so in
# the x-retention-cut header and in the profile (<cut> at the root of
# the paths it did not find, read by go tool pprof).  A heap larger
# than the default cap is cut by a middleware built with no option.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareRetentionCap < Minitest::Test
  include RackServerHelper
  Middleware = ObjectSpace::AllocationSampler::Middleware

  def headers_of(url)
    out, err, status = Open3.capture3("curl", "-s", "-D", "-", "-o", File::NULL, url)
    assert status.success?, err
    out
  end

  def test_retention_route_is_capped
    with_rack_server(env: { "MIDDLEWARE_OPTIONS" => "{ retention_max_objects: 5_000 }" }) do |port|
      base = "http://127.0.0.1:#{port}/debug/pprof"
      3.times { assert_equal 200, curl("http://127.0.0.1:#{port}/a")[0] }
      head = headers_of("#{base}/retention")
      assert_match(%r{^HTTP/1\.1 200}, head)
      assert_match(/^x-retention-cut: the walk stopped at its cap of 5000 objects/i, head)
      assert_match(/cap of 100 objects/i, headers_of("#{base}/retention?max_objects=100"))
      assert_match(/<cut: the walk stopped at its cap of 5000 objects/, pprof("-traces", "#{base}/retention"))
      code, body = curl("#{base}/retention?max_objects=5001")
      assert_equal 400, code
      assert_match(/max_objects must be an integer from 1 to 5000/, body)
      assert_equal 400, curl("#{base}/retention?max_objects=x")[0]
    end

    # the default cap, with no option: a heap of more objects is cut
    assert_kind_of Integer, Middleware::RETENTION_MAX_OBJECTS
    Sampler.start
    $big = Array.new(Middleware::RETENTION_MAX_OBJECTS + 100_000) { |i| i.to_s }
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => "/debug/pprof/retention", "QUERY_STRING" => "",
            "REMOTE_ADDR" => "127.0.0.1" }
    status, headers, = Middleware.new(->(_) {}).call(env)
    assert_equal 200, status
    assert_equal "the walk stopped at its cap of #{Middleware::RETENTION_MAX_OBJECTS} objects", headers["x-retention-cut"]
    # no cap: nothing cut
    status, headers, = Middleware.new(->(_) {}, retention_max_objects: nil).call(env)
    assert_equal 200, status
    assert_nil headers["x-retention-cut"]
    # the cap it passes: pprof(view: :retention, max_objects:), checked
    assert_match(/max_objects must be nil or an Integer from 1 to/,
                 assert_raises(ArgumentError) { Sampler.pprof(view: :retention, max_objects: 0) }.message)
    assert_match(/max_objects is for view: :retention/, assert_raises(ArgumentError) { Sampler.pprof(max_objects: 10) }.message)
    assert_match(/max_objects is for view: :retention/,
                 assert_raises(ArgumentError) { Sampler.write_pprof(File::NULL, view: :peak, max_objects: 10) }.message)
  ensure
    $big = nil
  end
end
