# framework_sites.rb: sites under a deep framework, as in a web app.
#
# Each request goes down 60 frames of "framework" (a chain of methods,
# as Rack middleware and a router are) to one of 200 application
# actions, each allocating strings on one of 10 lines: about 2,000
# sites that share their 60 framework frames and differ in their last
# three.  Prints the sampler's stats: how many sites and what they hold
# (profiler_memory[:sites]).
#
#   FRAMEWORK_SITES_N         requests (default 300_000)
#   FRAMEWORK_SITES_INTERVAL  bytes (default 4096; poisson, seed 1)
#   FRAMEWORK_SITES_STOPPED   1: the sampler is not started (under
#                             callgrind, the difference is the samples')
DEPTH = 60
ACTIONS = 200
LINES = 10

module Framework
  DEPTH.times do |i|
    nxt = i + 1 == DEPTH ? "App.dispatch(req)" : "layer#{i + 1}(req)"
    module_eval "def self.layer#{i}(req) = #{nxt}", "framework.rb", i + 1
  end
end

module App
  ACTIONS.times do |a|
    body = LINES.times.map { |l| "    when #{l} then \"a#{a}l#{l}\" * (req & 7 + 1)" }.join("\n")
    module_eval "def self.action#{a}(req)\n  case (req / #{ACTIONS}) % #{LINES}\n#{body}\n  end\nend", "app.rb", 1 + a * (LINES + 4)
  end

  def self.dispatch(req) = public_send(:"action#{req % ACTIONS}", req)
end

S = ObjectSpace::AllocationSampler
unless ENV["FRAMEWORK_SITES_STOPPED"] == "1"
  S.start(interval: Integer(ENV.fetch("FRAMEWORK_SITES_INTERVAL", "4096")), mode: :poisson, seed: 1)
end
Integer(ENV.fetch("FRAMEWORK_SITES_N", "300000")).times { |i| Framework.layer0(i * 7919 % 1_000_003) }
st = S.stats
puts "samples #{st[:samples]}, sites #{st[:sites]}, named #{st[:named]}, sites_bytes #{st[:profiler_memory][:sites]}, " \
     "profiler_bytes #{st[:profiler_bytes]}"
