# Connections that send nothing never lock the profile server out: its
# request slots are taken by complete request heads only, so a request
# made while MAX_REQUESTS (and more) idle connections wait is served; an
# idle connection gets 408 once its head's deadline passes.  (Before,
# each idle connection held a slot for 10 s, renewable forever, and
# every real request meanwhile got 503.)
require_relative "helper"
require "socket"

class TestServerIdleConnections < Minitest::Test
  include FleetHelper

  SERVER = <<~RUBY
    require "allocation_sampler/server"
    ObjectSpace::AllocationSampler.start
    server = ObjectSpace::AllocationSampler::Server.start(port: 0)
    puts "port \#{server.port} \#{ObjectSpace::AllocationSampler::Server::MAX_REQUESTS}"
    $stdout.flush
    $stdin.read
    server.stop
  RUBY

  def test_idle_connections_take_no_request_slot
    Open3.popen2({ "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil },
                 SamplingTestHelper::RUBY, "-e", SERVER) do |stdin, out, waiter|
      line = out.gets.to_s
      port, slots = line.scan(/\d+/).map(&:to_i)
      flunk "the server did not start: #{line}" unless port
      idle = Array.new(slots * 2) { TCPSocket.new("127.0.0.1", port) }
      res = http_get(port, "/debug/pprof/heap")
      assert_equal "200", res.code, res.body
      # an idle one is answered, then closed, once its deadline passed
      ready = IO.select([idle[0]], nil, nil, 60)
      refute_nil ready, "no answer to an idle connection"
      assert_match(%r{\AHTTP/1\.1 408 }, idle[0].read)
      idle.each(&:close)
      stdin.close
      assert waiter.value.success?
    end
  end
end
