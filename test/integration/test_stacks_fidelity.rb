# A sample's frames are what caller_locations shows at the allocation site:
# same paths, line numbers and labels, in order, C methods included
# (Integer#times, Array#map, Range#each, Kernel#loop), blocks labelled
# "block in ...", allocations made inside a C method called from a block.
#
# The expected stack is always the Ruby under test's own caller_locations,
# never a shape written down here: Ruby 3.4 shows a `Class#new` frame for
# `Foo.new`, 4.0 compiles it to the opt_new instruction and shows none.
# A Probe records caller_locations from its initialize, which runs on the
# stack its allocation ran on (Class#new's frame, where there is one, is
# still below it), so `Probe.new` gives the object and, in the same call,
# the stack its sample must show.
require_relative "helper"

class Probe
  attr_reader :locs
  def initialize = @locs = caller_locations(1)
  # [object, expected frames]: what every site returns
  def site = [self, locs]
end

class FidelitySites
  def plain = Probe.new.site
  def self.singleton = Probe.new.site
  def singleton_via_class = self.class.singleton

  def in_times
    r = nil
    1.times { r = Probe.new.site }
    r
  end

  def in_map = [1].map { Probe.new.site }.first

  def in_range
    r = nil
    (1..1).each { r = Probe.new.site }
    r
  end

  def in_loop
    r = nil
    loop do
      r = Probe.new.site
      break
    end
    r
  end

  def nested
    r = nil
    [1].each { 1.times { r = Probe.new.site } }
    r
  end

  # the object is made by a C method (String#*) called from a block: its
  # frame (at its caller's line), then what caller_locations(0) shows there
  CFrame = Struct.new(:path, :lineno, :label)
  def c_method_in_block
    r = nil
    [1].each do
      locs = caller_locations(0); r = ["ab" * 3, [CFrame.new(locs[0].path, locs[0].lineno, "String#*"), *locs]]
    end
    r
  end

  def in_rescue
    raise "x"
  rescue
    Probe.new.site
  end

  def in_define_method_block
    self.class.send(:define_method, :dm) { Probe.new.site }
    dm
  end

  # an ensure clause run by an exception (its own frame), then rescued
  def in_ensure
    r = nil
    begin
      raise "x"
    ensure
      r = Probe.new.site
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
      Probe.new.site
    end
  end

  # a block called through C-level blocks (IFUNC frames, not shown)
  def in_with_index
    r = nil
    [1].each.with_index { r = Probe.new.site }
    r
  end
end

class TestStacksFidelity < Minitest::Test
  def sample_at
    Sampler.start(interval: 1, mode: :fixed, max_samples: 100_000)
    obj, locs = yield
    Sampler.stop
    sample = Sampler.samples.find { |s| s.object.equal?(obj) }
    refute_nil sample, "the object allocated at the site was sampled (interval 1)"
    [sample, locs]
  end

  def frames_of(locs) = locs.map { |l| [l.path, l.lineno, l.label] }

  # The sample shows exactly the expected stack, nothing cut.
  def assert_same_stack
    sample, locs = sample_at { yield }
    assert_equal frames_of(locs), sample.frames
    refute sample.truncated?
    sample
  end

  def sites = FidelitySites.new

  # ... and from the first of the labels given on, the site's own frames
  # are those labels (so each site tests what it says it does).
  def assert_site(site, *labels)
    s = assert_same_stack { sites.public_send(site) }
    i = s.frames.index { |f| f[2] == labels[0] }
    refute_nil i, "#{labels[0]} in #{s.frames.inspect}"
    assert_equal labels, s.frames[i, labels.size].map(&:last)
  end

  def test_plain_method = assert_site(:plain, "FidelitySites#plain")
  def test_integer_times = assert_site(:in_times, "block in FidelitySites#in_times", "Integer#times", "FidelitySites#in_times")
  def test_array_map = assert_site(:in_map, "block in FidelitySites#in_map", "Array#map")
  def test_range_each = assert_site(:in_range, "block in FidelitySites#in_range", "Range#each")
  def test_kernel_loop = assert_site(:in_loop, "block in FidelitySites#in_loop", "Kernel#loop")
  def test_nested_blocks = assert_site(:nested, "block (2 levels) in FidelitySites#nested")
  def test_c_method_called_from_block = assert_site(:c_method_in_block, "String#*", "block in FidelitySites#c_method_in_block", "Array#each")
  def test_rescue_clause = assert_site(:in_rescue, "FidelitySites#in_rescue")
  def test_ensure_clause = assert_site(:in_ensure, "FidelitySites#in_ensure")
  def test_nested_rescue_clauses = assert_site(:in_nested_rescue, "FidelitySites#in_nested_rescue")
  def test_c_level_blocks_hidden = assert_site(:in_with_index, "block in FidelitySites#in_with_index")
  def test_singleton_method = assert_site(:singleton_via_class, "FidelitySites.singleton")

  def test_define_method_block
    assert_same_stack { sites.in_define_method_block }
  end

  def test_main
    out, err, status = run_ruby(<<~RUBY)
      class Probe; attr_reader :locs; def initialize = @locs = caller_locations(1); end
      S = ObjectSpace::AllocationSampler
      S.start(interval: 1, mode: :fixed)
      o = Probe.new
      S.stop
      s = S.samples.find { |x| x.object.equal?(o) }
      p s.frames == o.locs.map { |l| [l.path, l.lineno, l.label] }
      p s.frames.last
    RUBY
    assert status.success?, err
    assert_equal "true\n[\"-e\", 4, \"<main>\"]\n", out
  end

  def test_temporary_class_names_are_not_labels
    klass = Class.new { def m = Probe.new.site }
    klass.set_temporary_name("fake_name")
    sample, locs = sample_at { klass.new.m }
    assert_equal frames_of(locs), sample.frames
    assert_includes sample.frames.map(&:last), "m"
    refute sample.frames.any? { |f| f[2].include?("fake_name") }
  end

  def rescuer(n) = n.zero? ? (raise "x" rescue Probe.new.site) : rescuer(n - 1)

  def test_depth_counts_shown_frames
    Sampler.start(interval: 1, mode: :fixed, depth: 3)
    obj, locs = rescuer(5)
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    assert_equal locs.first(3).map(&:label), s.frames.map(&:last),
                 "frames skipped after a rescue frame do not count against depth"
    assert_includes s.frames.map(&:last), "TestStacksFidelity#rescuer"
    assert s.truncated?
  end

  # depth equal to the frames shown keeps them all and is not a cut; one
  # less is.  Returns [frames kept, cut?, frames caller_locations shows].
  def sample_with_depth(depth)
    Sampler.start(interval: 1, mode: :fixed, depth: depth)
    obj = [1].each { break Probe.new }
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    Sampler.clear
    [s.frames.size, s.truncated?, obj.locs.size]
  end

  def test_depth_exactly_the_stack
    n = sample_with_depth(4096)[2]
    assert_operator n, :>, caller_locations(0).size, "the block, Array#each and sample_with_depth are shown"
    assert_equal [n, false, n], sample_with_depth(n)
    assert_equal [n - 1, true, n], sample_with_depth(n - 1)
    assert_equal [n, false, n], sample_with_depth(n + 1)
  end

  def test_depth_truncates
    Sampler.start(interval: 1, mode: :fixed, depth: 3)
    obj = deep(10) { Probe.new }
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    assert_equal 3, s.frames.size
    assert s.truncated?
    assert_equal obj.locs.first(3).map(&:label), s.frames.map(&:last)
    assert_includes s.frames.map(&:last), "block in TestStacksFidelity#test_depth_truncates"
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
