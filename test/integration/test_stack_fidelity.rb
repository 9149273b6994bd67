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

  # an ensure clause run by an exception (its own frame), then rescued
  def in_ensure
    r = nil
    begin
      raise "x"
    ensure
      r = [Object.new, caller_locations(0)]
    end
  rescue
    r
  end

  # a rescue clause inside a rescue clause: two rescue frames in a row
  def in_nested_rescue
    raise "a"
  rescue
    begin
      raise "b"
    rescue
      [Object.new, caller_locations(0)]
    end
  end

  # a block called through C-level blocks (IFUNC frames, not shown)
  def in_with_index
    r = nil
    [1].each.with_index { r = [Object.new, caller_locations(0)] }
    r
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

  # The frames below the allocating C method are the labels given, then
  # the rest of the stack as caller_locations shows it.
  def assert_site(top_label, site, *labels)
    s = assert_same_stack(top_label) { sites.public_send(site) }
    assert_equal labels, s.frames[1, labels.size].map(&:last)
  end

  def test_plain_method = assert_site("Class#new", :plain, "FidelitySites#plain")
  def test_integer_times = assert_site("Class#new", :in_times, "block in FidelitySites#in_times", "Integer#times", "FidelitySites#in_times")
  def test_array_map = assert_site("Class#new", :in_map, "block in FidelitySites#in_map", "Array#map")
  def test_range_each = assert_site("Class#new", :in_range, "block in FidelitySites#in_range", "Range#each")
  def test_kernel_loop = assert_site("Class#new", :in_loop, "block in FidelitySites#in_loop", "Kernel#loop")
  def test_nested_blocks = assert_site("Class#new", :nested, "block (2 levels) in FidelitySites#nested")
  def test_c_method_called_from_block = assert_site("String#*", :c_method_in_block, "block in FidelitySites#c_method_in_block", "Array#each")
  def test_rescue_clause = assert_site("Class#new", :in_rescue, "FidelitySites#in_rescue")
  def test_ensure_clause = assert_site("Class#new", :in_ensure, "FidelitySites#in_ensure")
  def test_nested_rescue_clauses = assert_site("Class#new", :in_nested_rescue, "FidelitySites#in_nested_rescue")
  def test_c_level_blocks_hidden = assert_site("Class#new", :in_with_index, "block in FidelitySites#in_with_index")

  def test_singleton_method
    s = assert_same_stack("Class#new") { FidelitySites.singleton }
    assert_equal "FidelitySites.singleton", s.frames[1][2]
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

  # depth equal to the frames shown keeps them all and is not a cut; one
  # less is.
  def sample_with_depth(depth)
    Sampler.start(interval: 1, mode: :fixed, depth: depth)
    obj = [1].each { break Object.new }
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    Sampler.clear
    [s.frames.size, s.truncated?]
  end

  def test_depth_exactly_the_stack
    n = caller_locations(0).size + 4   # Class#new, the block, Array#each, sample_with_depth, then these
    assert_equal [n, false], sample_with_depth(n)
    assert_equal [n - 1, true], sample_with_depth(n - 1)
    assert_equal [n, false], sample_with_depth(n + 1)
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
