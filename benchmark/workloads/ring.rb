# ring.rb: Ruby's benchmark/gc/ring.rb (a long chain of old objects) with
# RING_MAX objects (upstream: 30_000_000).
require_relative "ruby_src"
ruby_src_load("benchmark/gc/ring.rb", "max = 30_000_000" => "max = #{Integer(ENV.fetch("RING_MAX", "30000000"))}")
