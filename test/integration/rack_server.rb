# rack_server.rb: a Rack app under WEBrick (Debian's ruby-rack and
# ruby-webrick), with the middleware, for the middleware tests.  Run by
# the custom Ruby in a child process (RackServerHelper below); prints
# "port N" once it listens on 127.0.0.1.
#
#   GET /a  allocates Strings at one site (make_a), keeps them in $kept
#   GET /b  allocates Arrays at another (make_b), keeps them in $kept
#   GET /c  allocates Strings at two sites whose stacks differ only in
#           one frame (make_c1, make_c2: same depth, same labels)
#   GET /delta  the library's own Delta (one, made at the first request:
#           since start): alloc_* since the previous GET /delta
#   MIDDLEWARE_OPTIONS (Ruby, evaluated): options for the middleware
#   SAMPLER_OFF=1: the sampler is not started
require "webrick"
require "rack"
require "rack/handler/webrick"
require "allocation_sampler/middleware"

$kept = Queue.new

def make_a
  Array.new(200) { "a" * 100 }
end

def make_b
  Array.new(200) { [1, 2, 3, 4, 5, 6] }
end

def make_c1
  Array.new(100) { "c" * 100 }
end

def make_c2
  Array.new(300) { "c" * 100 }
end

app = lambda do |env|
  case env["PATH_INFO"]
  when "/a" then $kept << make_a
  when "/b" then $kept << make_b
  when "/c" then $kept << make_c1 << make_c2
  when "/delta"
    $delta ||= ObjectSpace::AllocationSampler::Delta.new(since: :start)
    next [200, { "content-type" => "application/octet-stream" }, [$delta.pprof]]
  else next [404, { "content-type" => "text/plain" }, ["no\n"]]
  end
  [200, { "content-type" => "text/plain" }, ["ok\n"]]
end

options = eval(ENV.fetch("MIDDLEWARE_OPTIONS", "{}"))   # rubocop:disable Security/Eval
stack = ObjectSpace::AllocationSampler::Middleware.new(app, **options)
ObjectSpace::AllocationSampler.start(interval: 4096, mode: :fixed, seed: 1) unless ENV["SAMPLER_OFF"] == "1"

server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0, Logger: WEBrick::Log.new(File::NULL),
                                 AccessLog: [])
server.mount "/", Rack::Handler::WEBrick, stack
trap("TERM") { server.shutdown }
$stdout.puts "port #{server.listeners.first.addr[1]}"
$stdout.flush
server.start
