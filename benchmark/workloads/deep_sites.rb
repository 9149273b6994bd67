# deep_sites.rb: what a sample costs at a new site against a known one.
#
# N times, a 40-byte string at the bottom of a recursion D = 18 deep.
# DEEP_SITES_DIVERSE=1 recurses from one of two call lines by the bits of
# a scrambled counter, so nearly every sample's stack is new (as in
# ruby-bench's gcbench, whose trees are built that way); otherwise every
# sample has one of two stacks.  Run it under callgrind with the sampler
# stopped and started (DEEP_SITES_INTERVAL, bytes; unset: not started),
# both ways: the difference over the samples is a sample's instructions.
#
#   DEEP_SITES_N         iterations (default 200_000)
#   DEEP_SITES_DIVERSE   1: a new stack nearly every time
#   DEEP_SITES_INTERVAL  start the sampler at this interval (poisson, seed 1)
DEPTH = 18
DIVERSE = ENV["DEEP_SITES_DIVERSE"] == "1"

def down(d, i)
  return "x" * 15 if d.zero?

  if DIVERSE && (i >> d) & 1 == 1
    down(d - 1, i)
  else
    down(d - 1, i)
  end
end

sampler = ObjectSpace::AllocationSampler
if (iv = ENV["DEEP_SITES_INTERVAL"])
  sampler.start(interval: Integer(iv), mode: :poisson, seed: 1)
end
Integer(ENV.fetch("DEEP_SITES_N", "200000")).times { |i| down(DEPTH, i * 2_654_435_761 % (1 << 20)) }
if iv
  st = sampler.stats
  puts "samples #{st[:samples]}, sites #{st[:sites]}, profiler_bytes #{st[:profiler_bytes]}"
end
