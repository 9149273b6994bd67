# ?min_gcs=N on the heap and delta_heap routes: the in-use values count
# only samples that survived N GCs.  Young garbage (allocated with GC
# off) is in /heap's inuse_space and gone with ?min_gcs=1, in both
# routes; a bad value is a 400 naming the parameter and its range.
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareMinGcs < Minitest::Test
  include PprofHelper
  Middleware = ObjectSpace::AllocationSampler::Middleware

  def young_mw = Array.new(50_000) { "y" * 100 }.size

  def get(app, path, query)
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => "/debug/pprof/#{path}", "QUERY_STRING" => query,
            "REMOTE_ADDR" => "127.0.0.1" }
    status, _, body = app.call(env)
    [status, body.join]
  end

  def inuse_of(bytes, dir, name)
    path = File.join(dir, name)
    File.binwrite(path, bytes)
    (pprof_values_by_method(path, %w[young_mw])["young_mw"] || [0, 0, 0, 0])[3]
  end

  def test_min_gcs_param
    Sampler.start(interval: 4096, seed: 38, malloc: false)
    app = Middleware.new(->(_) { [200, {}, []] })
    get(app, "delta_heap", "")      # (the route's window starts)
    GC.disable
    in_ended_thread { young_mw }
    Dir.mktmpdir do |dir|
      status, all = get(app, "heap", "")
      assert_equal 200, status
      assert_operator inuse_of(all, dir, "all"), :>, 0, "young garbage in use without the filter"
      status, old = get(app, "heap", "min_gcs=1")
      assert_equal 200, status
      assert_equal 0, inuse_of(old, dir, "old"), "none with ?min_gcs=1"
      status, delta = get(app, "delta_heap", "min_gcs=1")
      assert_equal 200, status
      assert_equal 0, inuse_of(delta, dir, "delta")
    end
    ["x", "-1", "4294967296", ""].each do |bad|
      %w[heap delta_heap].each do |route|
        status, body = get(app, route, "min_gcs=#{bad}")
        assert_equal 400, status, "#{route}?min_gcs=#{bad}"
        assert_match(/min_gcs must be an integer from 0 to 4294967295 \(got #{Regexp.escape(bad.inspect)}\)/, body)
      end
    end
  ensure
    GC.enable
  end
end
