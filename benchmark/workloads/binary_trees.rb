# binary_trees.rb: Ruby's benchmark/so_binary_trees.rb (what
# benchmark/gc/binary_trees.rb runs), with max_depth from
# BINARY_TREES_DEPTH (upstream: 16).
require_relative "ruby_src"
depth = Integer(ENV.fetch("BINARY_TREES_DEPTH", "16"))
ruby_src_load("benchmark/so_binary_trees.rb", "max_depth = 16 #" => "max_depth = #{depth} #")
