# A forked child closes its copy of the profile server's listener: once
# the parent stops its server, connections to the port are refused and
# Server.start binds it again while the child still runs (a preforking
# master's hot restart).  (Before, the child's copy kept the port:
# connections hung, and start raised EADDRINUSE until every child
# exited.)
require_relative "helper"

class TestServerForkPort < Minitest::Test
  def test_child_does_not_keep_the_port
    out, err, status = run_ruby(<<~RUBY)
      require "allocation_sampler/server"
      require "socket"
      S = ObjectSpace::AllocationSampler
      S.start
      server = S::Server.start(port: 0)
      port = server.port
      r, w = IO.pipe
      ready_r, ready_w = IO.pipe
      # (the child runs its block once fork's hooks ran: it says so, then
      # lives until the parent closes w)
      pid = fork { w.close; ready_w.puts("ready"); ready_w.close; r.read; exit!(0) }
      r.close
      ready_w.close
      ready_r.gets
      server.stop
      refused = begin
        TCPSocket.new("127.0.0.1", port).close
        false
      rescue Errno::ECONNREFUSED
        true
      end
      again = begin
        S::Server.start(port: port)
      rescue SystemCallError => e
        e
      end
      p [refused, again.class.name]
      again.stop if again.is_a?(S::Server)
      w.close
      Process.wait(pid)
    RUBY
    assert status.success?, err
    assert_equal '[true, "ObjectSpace::AllocationSampler::Server"]', out.strip, err
  end
end
