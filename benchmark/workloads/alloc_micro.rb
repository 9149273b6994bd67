# alloc_micro.rb: an allocation micro-benchmark.
#
# Each iteration allocates 9 objects, one or more in every size pool:
#   Object.new, BasicObject.new, [i, i, i]          40-byte slots
#   strings of 10, 50, 130, 290, 600 bytes           40, 80, 160, 320, 640
#   {a: i}                                           160
# (embedded strings: an RString header is 24 bytes, so a string of n bytes
# fits a slot of at least n + 25 bytes).  1,520 slot bytes an iteration.
#
#   ALLOC_MICRO_N      iterations (default 300_000: 2.7 M objects, 456 MB)
#   ALLOC_MICRO_DEPTH  run the loop deeper in the stack, so that a sample
#                      taken inside a C method (Class#new, String#*) has
#                      this many frames; unset: wherever the loop happens to be
#   ALLOC_MICRO_CHUNK  call the loop once per this many iterations (YJIT:
#                      a side exit in the one long call would leave the whole
#                      loop to the interpreter, as it did under valgrind in
#                      some configurations; each call re-enters compiled code)
N = Integer(ENV.fetch("ALLOC_MICRO_N", "300000"))
DEPTH = ENV["ALLOC_MICRO_DEPTH"] && Integer(ENV["ALLOC_MICRO_DEPTH"])
CHUNK = ENV["ALLOC_MICRO_CHUNK"] && Integer(ENV["ALLOC_MICRO_CHUNK"])
SRC = "x".freeze

def alloc_loop(n)
  i = 0
  while i < n
    o = Object.new
    b = BasicObject.new
    s1 = SRC * 10
    s2 = SRC * 50
    s3 = SRC * 130
    s4 = SRC * 290
    s5 = SRC * 600
    a = [i, i, i]
    h = {a: i}
    i += 1
  end
  [o, b, s1, s2, s3, s4, s5, a, h].size
end

def alloc_chunks(n)
  done = 0
  while done < n
    alloc_loop(n - done < CHUNK ? n - done : CHUNK)
    done += CHUNK
  end
end

def recurse(levels, n)
  levels <= 0 ? alloc_loop(n) : recurse(levels - 1, n)
end

if DEPTH
  # Frames at an allocation inside a C method (Class#new, String#*), as
  # caller_locations and the sampler count them: the `here` frames below
  # this file's top level (itself included), the recurse frames, alloc_loop,
  # and the C method.
  here = caller_locations(0).size
  frames = DEPTH - here - 2
  raise "ALLOC_MICRO_DEPTH=#{DEPTH} is below the #{here + 2} frames the harness needs" if frames < 0
  frames == 0 ? alloc_loop(N) : recurse(frames - 1, N)
elsif CHUNK
  alloc_chunks(N)
else
  alloc_loop(N)
end
