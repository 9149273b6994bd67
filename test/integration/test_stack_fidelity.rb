# A sample's frames are what caller_locations shows at the allocation site:
# same paths, line numbers and labels, in order, C methods included
# (Integer#times, Array#map, Range#each, Kernel#loop), blocks labelled
# "block in ...", allocations made inside a C method called from a block.
require_relative "helper"

class FidelitySites
  def plain = [Object.new, caller_locations(0)]
  def self.singleton = [Object.new, caller_locations(0)]

  def in_times
    r = nil
    1.times { r = [Object.new, caller_locations(0)] }
    r
  end

  def in_map = [1].map { [Object.new, caller_locations(0)] }.first

  def in_range
    r = nil
    (1..1).each { r = [Object.new, caller_locations(0)] }
    r
  end

  def in_loop
    r = nil
    loop do
      r = [Object.new, caller_locations(0)]
      break
    end
    r
  end

  def nested
    r = nil
    [1].each { 1.times { r = [Object.new, caller_locations(0)] } }
    r
  end

  # the object is made by a C method (String#*) called from a block
  def c_method_in_block
    r = nil
    [1].each { r = ["ab" * 3, caller_locations(0)] }
    r
  end

  def in_rescue
    raise "x"
  rescue
    [Object.new, caller_locations(0)]
  end

  def in_define_method_block
    self.class.send(:define_method, :dm) { [Object.new, caller_locations(0)] }
    dm
  end
end

class TestStackFidelity < Minitest::Test
  def sample_at
    Sampler.start(interval: 1, mode: :fixed, max_samples: 100_000)
    obj, locs = yield
    Sampler.stop
    sample = Sampler.samples.find { |s| s.object.equal?(obj) }
    refute_nil sample, "the object allocated at the site was sampled (interval 1)"
    [sample, locs]
  end

  # frames[0] is the allocating C method (Class#new, String#*), reported at
  # its caller's file and line; caller_locations(0) starts at the caller.
  def assert_same_stack(top_label)
    sample, locs = sample_at { yield }
    expected = locs.map { |l| [l.path, l.lineno, l.label] }
    assert_equal expected, sample.frames.drop(1)
    assert_equal top_label, sample.frames[0][2]
    assert_equal locs[0].path, sample.frames[0][0]
    assert_equal locs[0].lineno, sample.frames[0][1]
    refute sample.truncated?
    sample
  end

  def sites = FidelitySites.new

  def test_plain_method
    s = assert_same_stack("Class#new") { sites.plain }
    assert_equal "FidelitySites#plain", s.frames[1][2]
  end

  def test_singleton_method
    s = assert_same_stack("Class#new") { FidelitySites.singleton }
    assert_equal "FidelitySites.singleton", s.frames[1][2]
  end

  def test_integer_times
    s = assert_same_stack("Class#new") { sites.in_times }
    assert_equal ["block in FidelitySites#in_times", "Integer#times", "FidelitySites#in_times"], s.frames[1, 3].map(&:last)
  end

  def test_array_map
    s = assert_same_stack("Class#new") { sites.in_map }
    assert_equal ["block in FidelitySites#in_map", "Array#map"], s.frames[1, 2].map(&:last)
  end

  def test_range_each
    s = assert_same_stack("Class#new") { sites.in_range }
    assert_equal ["block in FidelitySites#in_range", "Range#each"], s.frames[1, 2].map(&:last)
  end

  def test_kernel_loop
    s = assert_same_stack("Class#new") { sites.in_loop }
    assert_equal ["block in FidelitySites#in_loop", "Kernel#loop"], s.frames[1, 2].map(&:last)
  end

  def test_nested_blocks
    s = assert_same_stack("Class#new") { sites.nested }
    assert_equal "block (2 levels) in FidelitySites#nested", s.frames[1][2]
  end

  def test_c_method_called_from_block
    s = assert_same_stack("String#*") { sites.c_method_in_block }
    assert_equal ["block in FidelitySites#c_method_in_block", "Array#each"], s.frames[1, 2].map(&:last)
  end

  def test_rescue_clause
    assert_same_stack("Class#new") { sites.in_rescue }
  end

  def test_define_method_block
    assert_same_stack("Class#new") { sites.in_define_method_block }
  end

  def test_main
    out, err, status = run_ruby(<<~RUBY)
      S = ObjectSpace::AllocationSampler
      S.start(interval: 1, mode: :fixed)
      o = Object.new; locs = caller_locations(0)
      S.stop
      s = S.samples.find { |x| x.object.equal?(o) }
      p s.frames == [[locs[0].path, locs[0].lineno, "Class#new"], *locs.map { |l| [l.path, l.lineno, l.label] }]
      p s.frames.last
    RUBY
    assert status.success?, err
    assert_equal "true\n[\"-e\", 3, \"<main>\"]\n", out
  end

  def test_temporary_class_names_are_not_labels
    klass = Class.new { def m = [Object.new, caller_locations(0)] }
    klass.set_temporary_name("fake_name")
    sample, locs = sample_at { klass.new.m }
    assert_equal locs[0].label, sample.frames[1][2]
    assert_equal "m", sample.frames[1][2]
  end

  def rescuer(n) = n.zero? ? (raise "x" rescue [Object.new, caller_locations(0)]) : rescuer(n - 1)

  def test_depth_counts_shown_frames
    Sampler.start(interval: 1, mode: :fixed, depth: 3)
    obj, locs = rescuer(5)
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    assert_equal ["Class#new", *locs.first(2).map(&:label)], s.frames.map(&:last),
                 "frames skipped after a rescue frame do not count against depth"
    assert s.truncated?
  end

  def test_depth_truncates
    Sampler.start(interval: 1, mode: :fixed, depth: 3)
    obj = deep(10) { Object.new }
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    assert_equal 3, s.frames.size
    assert s.truncated?
    assert_equal ["Class#new", "block in TestStackFidelity#test_depth_truncates", "TestStackFidelity#deep"], s.frames.map(&:last)
  end

  def deep(n, &blk) = n.zero? ? blk.call : deep(n - 1, &blk)

  def test_shared_stacks_are_equal_arrays
    Sampler.start(interval: 1, mode: :fixed)
    objs = 2.times.map { Object.new }
    Sampler.stop
    a, b = objs.map { |o| Sampler.samples.find { |x| x.object.equal?(o) } }
    assert_equal a.frames, b.frames
    assert a.frames.frozen?
  end
end
