# Shared setup for the integration tests: each file is run by test/run in
# its own process, on the built Ruby, with RUBY_GC_LIBRARY=sampling.
require "minitest/autorun"
require "rbconfig"
require "open3"
require "tmpdir"
require "stringio"
require "objspace"

Sampler = ObjectSpace::AllocationSampler

module SamplingTestHelper
  RUBY = File.expand_path(ENV["SAMPLING_TEST_RUBY"] || RbConfig.ruby)
  RUBY_SRC = ENV["SAMPLING_TEST_RUBY_SRC"]

  # Runs code in a fresh Ruby; returns [stdout, stderr, status].
  def run_ruby(code, env: {}, library: "sampling", args: [])
    env = { "RUBY_GC_LIBRARY" => library, "RUBY_GC_SAMPLING" => nil }.merge(env)
    Open3.capture3(env, RUBY, *args, "-e", code)
  end

  # Objects that land on each of the five heaps (40, 80, 160, 320, 640 bytes).
  STRING_LENGTHS = { 40 => 10, 80 => 40, 160 => 120, 320 => 280, 640 => 600 }.freeze
  ARRAY_LENGTHS = { 40 => 2, 80 => 7, 160 => 16, 320 => 36, 640 => 70 }.freeze

  def object_for(slot_size, kind)
    case kind
    when :string then "x" * STRING_LENGTHS.fetch(slot_size)
    when :array then Array.new(ARRAY_LENGTHS.fetch(slot_size), 0)
    end
  end

  def heap_stats
    Sampler.stats[:heaps].to_h { |h| [h[:slot_size], h] }
  end

  # Clears stale copies of references from the machine stack.
  def scrub(depth = 50) = depth.zero? ? 0 : scrub(depth - 1) + 1

  # Every test leaves the heap consistent for the collector's own check,
  # with its sample points still cut into the free lists and again once
  # they are rejoined (it counts allocations and free slots: a sampled slot
  # counted wrongly makes it call rb_bug, which kills this process, and
  # test/run counts the file as failed).
  def teardown
    GC.stress = false
    GC.verify_internal_consistency
    Sampler.stop
    GC.verify_internal_consistency
    Sampler.clear
    super
  end
end

class Minitest::Test
  include SamplingTestHelper
end

# go tool pprof, the real reader of our profiles (Debian's golang-go, which
# tools/install-deps installs).
module PprofHelper
  GO = ENV.fetch("GO", "go")

  def pprof(*args)
    out, err, status = Open3.capture3(GO, "tool", "pprof", *args)
    assert status.success?, "go tool pprof #{args.join(' ')}: #{err}"
    out
  end

  # The samples of a profile as go tool pprof -raw prints them: one Hash
  # per sample with :values (in sample-type order: alloc_objects,
  # alloc_space, inuse_objects, inuse_space, then the lifetime types; the
  # retention view has inuse_objects and inuse_space only), :labels ("key" => "value") and :functions (names,
  # innermost first).  source: a path, or a URL go tool pprof fetches.
  def pprof_samples(source)
    raw = pprof("-raw", source)
    names = {}
    raw[/^Locations\n(.*?)(^Mappings|\z)/m, 1].to_s.each_line do |line|
      m = line.match(/^\s+(\d+): 0x\h+ M=\d+ (.*) \S+ s=/) and names[m[1]] = m[2]
    end
    block = raw[/^Samples:\n.*?\n(.*?)^Locations/m, 1] or flunk("no samples in:\n#{raw}")
    samples = []
    block.each_line do |line|
      if (m = line.match(/^\s+((?:-?\d+\s+)*-?\d+):((?: \d+)*)/))
        samples << { values: m[1].split.map(&:to_i), labels: {},
                     functions: m[2].split.map { |id| names.fetch(id) } }
      elsif samples.any? && line =~ /^\s+\w+:\[/
        line.scan(/(\w+):\[([^\]]*)\]/) { |k, v| samples.last[:labels][k] = v }
      end
    end
    samples
  end

  # The profile's values summed by method: for each of names, the sum
  # (one per sample type) of the samples with a frame "Class#name" on
  # their stack; a name with none maps to nil.
  def pprof_values_by_method(source, names)
    samples = pprof_samples(source)
    names.to_h do |name|
      mine = samples.select { |s| s[:functions].any? { |f| f.end_with?("##{name}") } }
      [name, mine.empty? ? nil : mine.map { |s| s[:values] }.transpose.map(&:sum)]
    end
  end
end

class Minitest::Test
  include PprofHelper
end

# Builds test/integration/ext/NAME.c for the Ruby under test; returns the
# directory to put on the load path.  nogvl.c: xmalloc and xfree without
# the GVL, and on a thread Ruby does not know; cstack.c: an object held
# only by a C local.
module NoGVLHelper
  def build_test_ext(name)
    @@test_ext_dirs ||= {}
    @@test_ext_dirs[name] ||= begin
      dir = Dir.mktmpdir(name)
      src = File.join(__dir__, "ext", "#{name}.c")
      conf, = Open3.capture2(SamplingTestHelper::RUBY, "-e",
                             'print RbConfig::CONFIG.values_at("CC", "rubyhdrdir", "rubyarchhdrdir").join("\n")')
      cc, hdr, archhdr = conf.split("\n")
      out, status = Open3.capture2e(cc, "-shared", "-fPIC", "-O1", "-I#{hdr}", "-I#{archhdr}", src,
                                    "-o", File.join(dir, "#{name}.so"), "-lpthread")
      raise "building #{name}.so failed:\n#{out}" unless status.success?
      dir
    end
  end

  def nogvl_ext_dir = build_test_ext("nogvl")
end

class Minitest::Test
  include NoGVLHelper
end

# A Rack server (rack_server.rb) on the built Ruby, for the middleware
# tests: Debian's ruby-rack and ruby-webrick (tools/install-deps), loaded
# with -I as pure Ruby.
module RackServerHelper
  GEM_DIRS = %w[/usr/share/rubygems-integration/all/gems /usr/lib/ruby/vendor_ruby].freeze

  def rack_lib_dirs
    %w[rack webrick].map do |name|
      dir = Dir.glob("/usr/share/rubygems-integration/all/gems/#{name}-*/lib").max ||
            (File.exist?("/usr/lib/ruby/vendor_ruby/#{name}.rb") && "/usr/lib/ruby/vendor_ruby")
      dir or flunk("#{name} is missing: tools/install-deps installs ruby-#{name}")
    end
  end

  # Starts the server; yields its port; stops it.
  def with_rack_server(env: {})
    args = rack_lib_dirs.flat_map { |d| ["-I", d] }
    env = { "RUBY_GC_LIBRARY" => "sampling", "RUBY_GC_SAMPLING" => nil }.merge(env)
    script = File.join(__dir__, "rack_server.rb")
    stdin, out, waiter = Open3.popen2e(env, SamplingTestHelper::RUBY, *args, script)
    stdin.close
    line = out.gets.to_s
    port = line[/\Aport (\d+)/, 1] or flunk("the server did not start: #{line}#{out.read}")
    begin
      yield Integer(port)
    ensure
      Process.kill("TERM", waiter.pid) rescue nil
      waiter.value
      out.close
    end
  end

  # An HTTP GET with curl: [status, body].
  def curl(url, *args)
    out, err, status = Open3.capture3("curl", "-s", "-o", "-", "-w", "\n%{http_code}", *args, url)
    assert status.success?, "curl #{url}: #{err}"
    body, _, code = out.rpartition("\n")
    [Integer(code), body]
  end
end

# Retention paths (AllocationSampler.retention, Sample#retention_path),
# checked against the heap itself: every hop must be an edge that
# ObjectSpace.reachable_objects_from reports (from an internal object,
# which Ruby code cannot hold, the references ObjectSpace.dump_all lists
# for it: the same mark functions), and the first hop must be among
# ObjectSpace.reachable_objects_from_root's objects of its category.  A
# path that does not exist in the heap fails.
module RetentionHelper
  ROOT_CATEGORIES = { vm: "vm", global: "global_tbl", machine_stack: "machine_context", end_proc: "end_proc" }.freeze

  # The live sample of class klass allocated at line of file (the
  # innermost frame), found without holding its object.
  def samples_at(samples, line, klass, file: caller_locations(1, 1)[0].path)
    samples.select { |s| s.live? && s.klass == klass && s.frames[0][0] == file && s.frames[0][1] == line }
  end

  def address_of(x)
    if x.is_a?(ObjectSpace::InternalObjectWrapper)
      Integer(x.inspect[/0x\h+/], 16)
    else
      ObjectSpace.dump(x)[/"address":"(0x\h+)"/, 1]&.to_i(16)
    end
  end

  def dump_all_references
    @dump_all_references ||= ObjectSpace.dump_all(output: :string).each_line.filter_map do |line|
      address = line[/"address":"(0x\h+)"/, 1] or next
      [address.to_i(16), line[/"references":\[([^\]]*)\]/, 1].to_s.scan(/0x\h+/).map { |a| a.to_i(16) }]
    end.to_h
  end

  # Asserts that path exists in the heap, hop by hop; returns the number
  # of edges checked with reachable_objects_from.
  def assert_path_in_heap(path, root: true)
    refute_empty path
    checked = 0
    GC.disable
    root &&= path[0]
    if !root
      # (a part of a path: its edges only)
    elsif (category = ROOT_CATEGORIES[root[:kind]])
      # (an identity Hash: its keys are new Strings)
      roots = ObjectSpace.reachable_objects_from_root.select { |k, _| k == category }.values.flatten(1)
      assert roots.any? { |r| root[:object] ? r.equal?(root[:object]) : address_of(r) == root[:address] },
             "the root #{root[:label]} is not among the #{category} roots"
    else
      assert_equal :finalizer, root[:kind], "a root kind: #{root[:label]}"
    end
    path.each_cons(2) do |parent, child|
      refute_includes %i[cut unreachable elided], child[:kind], "a hop that is no edge: #{child[:label]}"
      if parent[:object]
        children = ObjectSpace.reachable_objects_from(parent[:object])
        assert children.any? { |c| child[:object] ? c.equal?(child[:object]) : address_of(c) == child[:address] },
               "#{child[:label]} is not reachable from #{parent[:label]}"
        checked += 1
      else
        assert_includes dump_all_references.fetch(parent[:address], []), child[:address],
                        "#{child[:label]} is not referenced by #{parent[:label]} (internal: ObjectSpace.dump_all)"
      end
    end
    checked
  ensure
    GC.enable
  end

  def labels(path) = path.map { |h| h[:label] }.join(" -> ")

  # Runs the block in a thread that ends: a structure built there leaves
  # no stale word on the main thread's machine stack (a root, scanned
  # conservatively), so its shortest path is the one the test built.
  def in_thread(&block) = Thread.new(&block).join.value
end

class Minitest::Test
  include RetentionHelper
end
