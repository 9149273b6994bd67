# ruby_src.rb: loads a benchmark from Ruby's source tree with its size
# changed, for the workloads whose size is a literal in the file.
#
#   ruby_src_load("benchmark/gc/ring.rb", "max = 30_000_000" => "max = 3_000_000")
#
# The file is found under BENCH_RUBY_SRC.  Each replacement must match
# exactly once, so a changed upstream file fails loudly instead of running
# at the wrong size.  The code runs at top level with its real path, so
# require_relative inside it still works.
def ruby_src_load(rel, replacements = {})
  path = File.join(ENV.fetch("BENCH_RUBY_SRC"), rel)
  src = File.read(path)
  replacements.each do |from, to|
    n = src.scan(from).size
    raise "#{path}: expected one #{from.inspect}, found #{n}" unless n == 1
    src = src.sub(from) { to }
  end
  eval(src, TOPLEVEL_BINDING, path, 1)
end
