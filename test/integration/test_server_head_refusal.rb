# The profile server's request-head cap is exact (HEAD_BYTES: a complete
# head one byte over is 431; before, one more 4 KiB read went through and
# such a head was served), and a refused client reads its refusal: the
# server reads what the client still sends before it closes, instead of
# closing with bytes unread (which resets the connection).
require_relative "helper"
require "socket"

class TestServerHeadRefusal < Minitest::Test
  SERVER = <<~RUBY
    require "allocation_sampler/server"
    ObjectSpace::AllocationSampler.start
    server = ObjectSpace::AllocationSampler::Server.start(port: 0)
    puts "port \#{server.port} \#{ObjectSpace::AllocationSampler::Server::HEAD_BYTES}"
    $stdout.flush
    $stdin.read
    server.stop
  RUBY

  # The response to head (sent at once, then our side kept open), read to
  # its end.
  def response_to(port, head)
    socket = TCPSocket.new("127.0.0.1", port)
    socket.write(head)
    socket.read
  ensure
    socket&.close
  end

  def head_of(bytes)
    start = "GET /debug/pprof/heap HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    pad = bytes - start.bytesize - "X-Pad: \r\n\r\n".bytesize
    "#{start}X-Pad: #{"p" * pad}\r\n\r\n"
  end

  def test_head_cap_is_exact_and_refusals_are_read
    Open3.popen2({ "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil },
                 SamplingTestHelper::RUBY, "-e", SERVER) do |stdin, out, waiter|
      line = out.gets.to_s
      port, cap = line.scan(/\d+/).map(&:to_i)
      flunk "the server did not start: #{line}" unless port
      assert_match(%r{\AHTTP/1\.1 200 }, response_to(port, head_of(cap)))
      assert_match(%r{\AHTTP/1\.1 431 }, response_to(port, head_of(cap + 1)))
      assert_match(%r{\AHTTP/1\.1 431 }, response_to(port, head_of(cap + 3000)))
      # a head far over the cap, still being sent: the refusal arrives whole
      3.times do
        text = response_to(port, "GET /debug/pprof/heap HTTP/1.1\r\n" + "X-Pad: #{"p" * 1000}\r\n" * 60)
        assert_match(%r{\AHTTP/1\.1 431 .*the request head is over #{cap} bytes\n\z}m, text)
      end
      stdin.close
      assert waiter.value.success?
    end
  end
end
