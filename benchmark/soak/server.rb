# server.rb: the soak's server, a Rack app under WEBrick with the
# middleware (run by benchmark/soak/run; prints "port N" once it listens).
#
#   GET /e/N?t=T  endpoint N (0 ... ENDPOINTS-1) for tenant T: one of
#                 ENDPOINTS handler methods (distinct stacks), each
#                 allocating Strings, Arrays and Hashes; a bounded cache
#                 keeps some (the live set churns, never grows past it)
#   GET /stats    the sampler's stats as JSON (plus GC.count), for the
#                 driver; served outside the labels
#
# Labels: endpoint ("GET /e/N") and tenant (T): ENDPOINTS x tenants sets,
# past the 4,096 the library interns.  SOAK_SAMPLER: the start options
# (Ruby), or "off" for the control server (the library loaded, the
# sampler never started).
require "json"
require "webrick"
require "rack"
require "rack/handler/webrick"
require "allocation_sampler/middleware"

ENDPOINTS = Integer(ENV.fetch("SOAK_ENDPOINTS", "200"))
CACHE = 4000

module Handlers
  # Distinct methods, so distinct stacks: handler_N allocates at its own
  # lines, through one of a few shapes.
  ENDPOINTS.times do |n|
    module_eval <<~RUBY, "handlers.rb", n * 10 + 1
      def self.handler_#{n}(tenant)
        case #{n % 4}
        when 0 then Array.new(#{20 + n % 30}) { |i| "#{n}-\#{tenant}-\#{i}" * 4 }
        when 1 then Array.new(#{10 + n % 20}) { |i| { id: i, tenant: tenant, n: #{n} } }
        when 2 then (1..#{50 + n % 50}).map { |i| [i, tenant, i.to_s] }
        else ("x" * #{500 + n * 7}).split("").first(#{40 + n % 40}).map(&:upcase)
        end
      end
    RUBY
  end
end

$cache = {}
$cache_lock = Mutex.new

app = lambda do |env|
  case env["PATH_INFO"]
  when %r{\A/e/(\d+)\z}
    n = $1.to_i % ENDPOINTS
    tenant = env["QUERY_STRING"].to_s[/t=(\w+)/, 1] || "none"
    value = Handlers.public_send(:"handler_#{n}", tenant)
    $cache_lock.synchronize do
      $cache["#{n}/#{tenant}"] = value
      $cache.shift while $cache.size > CACHE
    end
    [200, { "content-type" => "text/plain" }, ["ok #{value.size}\n"]]
  when "/stats"
    s = defined?(ObjectSpace::AllocationSampler) && ObjectSpace::AllocationSampler.enabled? ? ObjectSpace::AllocationSampler.stats : {}
    body = JSON.generate(s.slice(:samples, :records, :sites, :folded, :label_sets, :label_sets_dropped, :evicted, :dropped,
                                 :timeline_rows, :profiler_bytes, :profiler_memory)
                          .merge(gc: GC.count, heap_live_slots: GC.stat(:heap_live_slots)))
    [200, { "content-type" => "application/json" }, [body]]
  else [404, { "content-type" => "text/plain" }, ["no\n"]]
  end
end

labels = ->(env) { { endpoint: "#{env["REQUEST_METHOD"]} #{env["PATH_INFO"]}", tenant: env["QUERY_STRING"].to_s[/t=(\w+)/, 1].to_s } }
stack = ObjectSpace::AllocationSampler::Middleware.new(app, labels: labels)
sampler = ENV.fetch("SOAK_SAMPLER", "{}")
ObjectSpace::AllocationSampler.start(**eval(sampler)) unless sampler == "off"   # rubocop:disable Security/Eval

server = WEBrick::HTTPServer.new(BindAddress: "127.0.0.1", Port: 0, Logger: WEBrick::Log.new(File::NULL), AccessLog: [])
server.mount "/", Rack::Handler::WEBrick, stack
trap("TERM") { server.shutdown }
$stdout.puts "port #{server.listeners.first.addr[1]}"
$stdout.flush
server.start
