# The retention cap stays within the walk's range (1 to 2**31 - 1,
# retention.md): with no cap, ?max_objects past it is a 400 (not a 500
# from the walk's own check), and Middleware.new refuses a cap past it
# with ArgumentError naming retention_max_objects.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareRetentionCapRange < Minitest::Test
  Middleware = ObjectSpace::AllocationSampler::Middleware

  def test_cap_and_request_stay_in_the_walks_range
    Sampler.start
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => "/debug/pprof/retention", "REMOTE_ADDR" => "127.0.0.1",
            "QUERY_STRING" => "max_objects=2147483648" }
    app = Middleware.new(->(_) {}, retention_max_objects: nil)
    status, _, body = app.call(env)
    assert_equal 400, status, body.join
    assert_match(/max_objects must be an integer from 1 to 2147483647/, body.join)
    assert_equal 200, app.call(env.merge("QUERY_STRING" => "max_objects=2147483647"))[0]

    err = assert_raises(ArgumentError) { Middleware.new(->(_) {}, retention_max_objects: 3_000_000_000) }
    assert_match(/retention_max_objects must be nil or an Integer from 1 to 2147483647/, err.message)
    assert_equal Middleware, Middleware.new(->(_) {}, retention_max_objects: 2**31 - 1).class
  end
end
