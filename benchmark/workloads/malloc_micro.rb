# malloc_micro.rb: a malloc-heavy micro-benchmark (issue 15).
#
# Each iteration mallocs about 24 KiB outside the slots, the way Ruby
# programs do:
#   a string of 100 B .. 64 KiB (one malloc of its size, the sizes cycle)
#   a string grown by appends past its embedded size (reallocs)
#   an array grown by push from empty to 40 elements (reallocs)
#   a hash grown from empty to 16 pairs (its table is malloc'd and regrown)
#
#   MALLOC_MICRO_N  iterations (default 20_000)
N = Integer(ENV.fetch("MALLOC_MICRO_N", "20000"))
SIZES = [100, 1_000, 4_096, 16_384, 65_536, 300, 30_000, 8_000].freeze
CHUNK = ("y" * 200).freeze

def malloc_loop(n)
  i = 0
  while i < n
    s = "x" * SIZES[i & 7]
    t = +""
    j = 0
    while j < 10
      t << CHUNK
      j += 1
    end
    a = []
    j = 0
    while j < 40
      a << j
      j += 1
    end
    h = {}
    j = 0
    while j < 16
      h[j] = j
      j += 1
    end
    i += 1
  end
  [s, t, a, h].size
end

malloc_loop(N)
