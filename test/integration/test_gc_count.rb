# The sampling library collects when the default library does: over a
# fixed workload (slot churn on one heap, on all five, and malloc'd
# bytes), stopped or started, it runs the same GCs, minor and major, and
# counts the same allocations and malloc limits as `default`.
#
# The heaps are sized by RUBY_GC_HEAP_n_INIT_SLOTS so that neither library
# grows them during the workload.  Unsized, the GC count of a small-heap
# program is a chaotic function of what was allocated before it: the
# library's ~100 objects made at boot (ObjectSpace::AllocationSampler's
# module, classes and methods) are enough to move it by 20% either way,
# as 60 extra methods defined at boot move `default`'s own
# (benchmark/results/gc-count.md).  Sizing removes that history and keeps
# what this file is about: the collector's triggers (the free slots after
# a sweep, malloc_increase and its limits, the parameters read at boot)
# and the heap totals, which the sampling library wraps or hooks.
require_relative "helper"

class TestGcCount < Minitest::Test
  # (3.4 and 4.0 size each of their five heaps in slots; 4.1 sizes every
  # one of its twelve alike, in bytes, and ignores the slot counts.)
  HEAPS = SLOT_SIZES.each_index.to_h { |i| ["RUBY_GC_HEAP_#{i}_INIT_SLOTS", i.zero? ? "60000" : "30000"] }
                    .merge("RUBY_GC_HEAP_INIT_BYTES" => "4800000").freeze
  # Heap pages: exact on 3.4 and 4.0.  On 4.1 the library's own objects
  # made at boot (about 3,000 live slots there, across twelve heaps) take
  # a few pages more than sizing in bytes absorbs (255 against 258 seen).
  PAGES_SLACK = SLOT_SIZES.size > 5 ? 4 : 0

  # Each phase starts after a full GC; its counters are the difference
  # across it.  Objects die young: the heaps keep their initial size.
  WORKLOAD = <<~'RUBY'
    def phase
      GC.start
      s0 = GC.stat
      yield
      s1 = GC.stat
      %i[count minor_gc_count major_gc_count total_allocated_objects].to_h { |k| [k, s1[k] - s0[k]] }
    end
    r = {}
    r[:slots] = phase { i = 0; while i < 3_000_000; Object.new; i += 1; end }
    r[:heaps] = phase do
      i = 0
      while i < 300_000
        "x" * 40; Array.new(7, i); Array.new(16, i); Array.new(36, i); Array.new(70, i)
        i += 1
      end
    end
    r[:malloc] = phase do
      i = 0
      while i < 2_000
        "y" * 1_000_000
        s = +"z"
        50.times { s << "abcdefgh" * 64 }   # realloc'd as it grows
        i += 1
      end
    end
    s = GC.stat
    r[:limits] = s.slice(:malloc_increase_bytes_limit, :oldmalloc_increase_bytes_limit)
    r[:pages] = s[:heap_allocated_pages]
    p r
  RUBY

  # Runs of one library differ by a GC a phase at most (4.0.5's malloc
  # phase reads 57 or 58 under `default` and under the sampling library:
  # where pages and blocks land varies from run to run).  Allocations,
  # limits and pages are exact.
  SLACK = 1

  def counters(library, env = {})
    out, err, status = run_ruby(WORKLOAD, env: HEAPS.merge(env), library: library, args: ["--disable-gems"])
    assert status.success?, "#{library}: #{err}"
    eval(out) # the child's Hash#inspect
  end

  def assert_same_gcs(expected, actual, what)
    %i[slots heaps malloc].each do |phase|
      e, a = expected.fetch(phase), actual.fetch(phase)
      %i[count minor_gc_count major_gc_count].each do |k|
        assert_in_delta e[k], a[k], SLACK, "#{what}, #{phase} phase: #{k} (default #{e}, sampling #{a})"
      end
      assert_equal e[:total_allocated_objects], a[:total_allocated_objects], "#{what}, #{phase} phase: allocations"
    end
    assert_operator expected[:malloc][:count], :>=, 10, "the malloc phase collects (by malloc_increase)"
    assert_equal expected[:limits], actual[:limits], "#{what}: malloc limits"
    assert_in_delta expected[:pages], actual[:pages], PAGES_SLACK, "#{what}: heap pages"
  end

  def test_same_gcs_as_default
    default = counters("default")
    assert_same_gcs(default, counters(GC_LIBRARY), "sampler stopped")
    assert_same_gcs(default, counters(GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=32k,seed=1"), "sampler at 32 KiB")
  end
end
