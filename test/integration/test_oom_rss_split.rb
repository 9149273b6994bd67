# memory_split: where the RSS went, on a real program (the demo's first
# phase: Prism parses Ruby's standard library, keeping the last 200
# results; the sampler from boot, 64 KiB interval, seed 1).  The parts
# add up: rss == heap_pages + malloc_in_use + rest and heap_pages ==
# slots_in_use + slots_free + heap_overhead, exactly; the measured parts
# are not negative; the unknown part (rest) is under a quarter of RSS;
# the sampler's estimate of live slot bytes is within 20% of what the
# heap counts (about 700 samples: 20% is over 5 sigma); every figure
# says where it comes from, and the estimates say they are.  Every
# profile's comments carry the split's first line, which adds up too.
require_relative "helper"

class TestOomRssSplit < Minitest::Test
  include PprofHelper

  SCRIPT = <<~'RUBY'
    require "prism"
    kept = []
    Dir[File.join(ARGV[0], "lib", "**", "*.rb")].sort.each { |f| kept << Prism.parse_file(f); kept.shift if kept.size > 200 }
    GC.start
    m = ObjectSpace::AllocationSampler.memory_split
    ObjectSpace::AllocationSampler.write_pprof(ARGV[1])
    p m
  RUBY

  def test_parts_add_up_on_the_demo
    skip "no Ruby source tree (SAMPLING_TEST_RUBY_SRC)" unless RUBY_SRC && File.directory?(File.join(RUBY_SRC, "lib"))
    profile = File.join(Dir.mktmpdir, "split.pb.gz")
    out, err, status = Open3.capture3({ "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=64k,seed=1" },
                                      RUBY, "-e", SCRIPT, RUBY_SRC, profile)
    assert status.success?, err
    m = eval(out)     # (a Hash of Integers and Strings, printed by p)
    assert_equal m[:rss], m[:heap_pages] + m[:malloc_in_use] + m[:rest], m.inspect
    assert_equal m[:heap_pages], m[:slots_in_use] + m[:slots_free] + m[:heap_overhead], m.inspect
    %i[rss heap_pages slots_in_use slots_free heap_overhead malloc_in_use sampled_slots sampled_malloc].each do |k|
      assert_operator m[k], :>=, 0, k
    end
    assert_operator m[:rest].abs, :<, m[:rss] / 4, "the unknown part is under a quarter of RSS: #{m.inspect}"
    assert_in_delta m[:slots_in_use], m[:sampled_slots], 0.2 * m[:slots_in_use], "estimate of the live slots"
    assert_equal m.keys - [:sources], m[:sources].keys
    m[:sources].each { |k, text| assert_match(/\A(measured|estimate|unknown): /, text, k) }
    %i[sampled_slots sampled_malloc malloc_unsampled].each { |k| assert_match(/\Aestimate: /, m[:sources][k]) }
    assert_operator m[:profiler], :<=, m[:malloc_in_use]

    line = pprof("-comments", profile)[/^memory \(memory_split\): .*$/] or flunk("no memory_split comment")
    parts = line.match(/RSS (\d+) = Ruby heap pages (\d+) \+ malloc in use (\d+) \(the profiler's own \d+\) \+ rest (-?\d+) \(unknown\); estimated live: slots \d+, malloc \d+/)
    assert parts, line
    rss, heap, malloc, rest = parts.captures.map(&:to_i)
    assert_equal rss, heap + malloc + rest, line
    assert_operator heap, :>, 0
  ensure
    FileUtils.rm_rf(File.dirname(profile)) if profile
  end
end
