# hash1.rb: Ruby's benchmark/gc/hash1.rb (a 50k-entry hash kept alive while
# n * 1000 empty strings are made) with n = HASH1_N (upstream: 50_000).
require_relative "ruby_src"
ruby_src_load("benchmark/gc/hash1.rb", "n = 50_000" => "n = #{Integer(ENV.fetch("HASH1_N", "50000"))}")
