# allocation_sampler/server.rb: the profile routes on their own loopback
# listener (Ruby's socket library only), read by go tool pprof and curl;
# the middleware's rules hold there too (a Host that is not loopback,
# HTTP/1.0 from loopback, a forwarding header for an outside client: 403;
# the token admits them); other paths are 404; its options are checked
# (ArgumentError naming the option); stop ends its thread.
require_relative "helper"

class TestMiddlewareServer < Minitest::Test
  include RackServerHelper

  SERVER = <<~RUBY
    require "allocation_sampler/server"
    S = ObjectSpace::AllocationSampler
    S.start(interval: 4096, mode: :fixed)
    def make_kept = Array.new(2000) { "k" * 100 }
    $kept = make_kept
    server = S::Server.start(port: 0, token: "s3cret")
    puts "port \#{server.port} \#{server.thread.name}"
    $stdout.flush
    $stdin.read           # until the test closes it
    server.stop
    puts "stopped \#{server.running?} \#{Thread.list.size}"
  RUBY

  def test_loopback_listener
    Open3.popen2e({ "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil },
                  SamplingTestHelper::RUBY, "-e", SERVER) do |stdin, out, waiter|
      line = out.gets.to_s
      port = line[/\Aport (\d+)/, 1] or flunk("the server did not start: #{line}#{out.read}")
      assert_match(/allocation_sampler server/, line)
      base = "http://127.0.0.1:#{port}/debug/pprof"
      samples = pprof_samples("#{base}/heap")
      kept = samples.select { |s| s[:functions].any? { |f| f.end_with?("#make_kept") } }
      refute_empty kept
      assert_operator kept.sum { |s| s[:values][3] }, :>, 100_000   # inuse_space
      assert_equal 200, curl("#{base}/allocs")[0]
      assert_equal 200, curl("http://localhost:#{port}/debug/pprof/heap")[0]
      code, body = curl("#{base}/heap", "-H", "Host: app.example.com")
      assert_equal 403, code
      assert_match(/Host "app.example.com" is not a loopback address/, body)
      code, body = curl("#{base}/heap", "--http1.0")
      assert_equal 403, code
      assert_match(%r{HTTP/1\.0}, body)
      assert_equal 403, curl("#{base}/heap", "-H", "X-Real-IP: 203.0.113.5")[0]
      assert_equal 200, curl("#{base}/heap", "--http1.0", "-H", "Authorization: Bearer s3cret")[0]
      assert_equal 404, curl("http://127.0.0.1:#{port}/")[0]
      assert_equal 405, curl("#{base}/heap", "-d", "x=1")[0]
      head = curl("#{base}/heap", "-I")
      assert_equal 200, head[0]
      stdin.close
      assert_equal "stopped false 1", out.read.strip
      assert waiter.value.success?
    end

    err = assert_raises(ArgumentError) { run_in_ruby('S::Server.new(port: 70_000)') }
    assert_match(/port must be an Integer from 0 to 65535/, err.message)
    err = assert_raises(ArgumentError) { run_in_ruby('S::Server.new(port: 0, prefix: "/")') }
    assert_match(/prefix/, err.message)
  end

  # Runs code after requiring the server; raises an ArgumentError with
  # the child's message if it raised one.
  def run_in_ruby(code)
    _, err, status = run_ruby(%(require "allocation_sampler/server"; S = ObjectSpace::AllocationSampler
                                begin; #{code}; rescue ArgumentError => e; warn "ArgumentError: \#{e.message}"; exit 3; end))
    raise ArgumentError, err[/ArgumentError: (.*)/, 1] if status.exitstatus == 3
    flunk "no ArgumentError: #{err}"
  end
end
