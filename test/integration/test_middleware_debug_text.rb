# heap?debug=1 and allocs?debug=1 serve the profile as text, as Go's
# handlers do (delta_heap already did): text/plain, PprofReader's form of
# the same profile; with ?seconds=N, 400 as Go's.  (Before, debug=1 was
# ignored and the binary profile served.)
require_relative "helper"
require "allocation_sampler/middleware"

class TestMiddlewareDebugText < Minitest::Test
  def get(path, query)
    env = { "REQUEST_METHOD" => "GET", "PATH_INFO" => path, "QUERY_STRING" => query, "REMOTE_ADDR" => "127.0.0.1" }
    ObjectSpace::AllocationSampler::Middleware.new(->(_) { [404, {}, []] }).call(env)
  end

  def test_debug_1_is_text
    Sampler.start(interval: 4096)
    $kept = Array.new(1000) { "kept" * 50 }
    %w[/debug/pprof/heap /debug/pprof/allocs].each do |path|
      status, headers, body = get(path, "debug=1")
      assert_equal 200, status, path
      assert_match(%r{\Atext/plain}, headers["content-type"], path)
      text = body.join
      assert text.valid_encoding? && !text.start_with?("\x1f\x8b".b), "#{path}: not gzip"
      assert_match(/heap profile: /, text, path)
      status, headers, = get(path, "debug=0")
      assert_equal [200, "application/octet-stream"], [status, headers["content-type"]], path
      status, _, body = get(path, "debug=1&seconds=1")
      assert_equal 400, status, path
      assert_match(/seconds and debug params are incompatible/, body.join)
    end
  end
end
