# Shared setup for the integration tests: each file is run by test/run in
# its own process, on the built Ruby, with RUBY_GC_LIBRARY=sampling
# (or SAMPLING_TEST_GC, a copy of the library under another name).
require "minitest/autorun"
require "rbconfig"
require "open3"
require "tmpdir"
require "fileutils"
require "stringio"
require "objspace"

Sampler = ObjectSpace::AllocationSampler

module SamplingTestHelper
  RUBY = File.expand_path(ENV["SAMPLING_TEST_RUBY"] || RbConfig.ruby)
  RUBY_SRC = ENV["SAMPLING_TEST_RUBY_SRC"]
  # The library under test: test/run sets RUBY_GC_LIBRARY (sampling, or a
  # copy built under another name); child Rubies load the same one.
  GC_LIBRARY = ENV.fetch("RUBY_GC_LIBRARY", "sampling")

  # Runs code in a fresh Ruby; returns [stdout, stderr, status].
  def run_ruby(code, env: {}, library: GC_LIBRARY, args: [])
    env = { "RUBY_GC_LIBRARY" => library, "RUBY_GC_SAMPLING" => nil }.merge(env)
    Open3.capture3(env, RUBY, *args, "-e", code)
  end

  # The heaps' slot sizes: 40, 80, 160, 320, 640 bytes on 3.4 and 4.0;
  # twelve sizes from 32 to 1024 on 4.1.
  SLOT_SIZES = GC.stat_heap.map { |_, h| h[:slot_size] }.freeze

  # The longest embedded String and Array that land on each heap (an
  # embedded object's memsize is its slot), for the heaps one can reach:
  # {40 => 16, 80 => 56, ...}.  Both kinds reach the same heaps.
  def self.lengths_by_slot(limit)
    SLOT_SIZES.to_h { |size| [size, (0..limit).select { |n| ObjectSpace.memsize_of(yield(n)) == size }.max] }
              .compact.freeze
  end
  STRING_LENGTHS = lengths_by_slot(1024) { |n| "x" * n }
  ARRAY_LENGTHS = lengths_by_slot(128) { |n| Array.new(n, 0) }
  # The heaps that both kinds reach, smallest first.
  OBJECT_SLOTS = (STRING_LENGTHS.keys & ARRAY_LENGTHS.keys).freeze
  # The slot of an Object.new with no ivars: 40 bytes, 32 on 4.1.
  PLAIN_OBJECT_SLOT = ObjectSpace.memsize_of(Object.new)

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

  # Runs the block in a thread that ends, and returns its value: what that
  # thread's stacks held is gone, so the conservative scan of the machine
  # stack cannot keep it alive (scrub does not reach every stale copy: under
  # YJIT a Ruby call takes no machine stack, and 4.0.5 with YJIT kept one
  # of 1,000 sampled garbage strings alive through it in a CI run).
  def in_ended_thread(&block) = Thread.new(&block).join.value

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

  # What go tool pprof fetches from a URL it also saves ($HOME/pprof unless
  # PPROF_TMPDIR): into a directory of this process's, removed at exit.
  def self.fetch_dir
    @fetch_dir ||= Dir.mktmpdir("pprof-fetched").tap { |d| at_exit { FileUtils.rm_rf(d) } }
  end

  def pprof(*args)
    out, err, status = Open3.capture3({ "PPROF_TMPDIR" => PprofHelper.fetch_dir }, GO, "tool", "pprof", *args)
    assert status.success?, "go tool pprof #{args.join(' ')}: #{err}"
    out
  end

  # The samples of a profile as go tool pprof -raw prints them: one Hash
  # per sample with :values (in sample-type order: alloc_objects,
  # alloc_space, inuse_objects, inuse_space, then the lifetime types; the
  # retention view has inuse_objects and inuse_space only), :labels ("key" => "value") and :functions (names,
  # innermost first).  source: a path, or a URL go tool pprof fetches
  # (options may come before it).
  def pprof_samples(*source)
    raw = pprof("-raw", *source)
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

  # write_pprof(view: :peak), read by go tool pprof: the bytes in use at
  # the peak under each of the methods NAMES (0 for a method not there)
  def peak_inuse_bytes(names)
    Dir.mktmpdir do |dir|
      path = File.join(dir, "peak.pb.gz")
      Sampler.write_pprof(path, view: :peak)
      pprof_values_by_method(path, names).transform_values { |v| v ? v[1] : 0 }
    end
  end
end

class Minitest::Test
  include PprofHelper
end

# Builds test/integration/ext/NAME.c for the Ruby under test; returns the
# directory to put on the load path.  nogvl.c: xmalloc and xfree without
# the GVL, and on a thread Ruby does not know; cstack.c: an object held
# only by a C local; realloc_window.c: a realloc that acts while a
# sampled block moves (preloaded).
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
    env = { "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }.merge(env)
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

  # Which of rack_server.rb's sites a pprof sample (pprof_samples) was
  # allocated at: :a (make_a), :b (make_b), or nil.
  def rack_site(sample)
    if sample[:functions].any? { |f| f.end_with?("#make_a") } then :a
    elsif sample[:functions].any? { |f| f.end_with?("#make_b") } then :b
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
  # (4.1 splits the VM's roots: its Ractors and registered globals and
  # symbols come under categories of their own)
  ROOT_CATEGORIES = { vm: %w[vm ractor registered_globals global_symbols], global: %w[global_tbl],
                      machine_stack: %w[machine_context], end_proc: %w[end_proc] }.freeze

  # The live sample of class klass allocated at line of file (the
  # innermost frame), found without holding its object.
  # Live samples of klass made at file:line.  Not those of Integer#to_s:
  # under YJIT "#{i}" calls it and makes a String the interpreter takes
  # from its cache (garbage at once, so no retention path).
  def samples_at(samples, line, klass, file: caller_locations(1, 1)[0].path)
    samples.select do |s|
      s.live? && s.klass == klass && s.frames[0][0] == file && s.frames[0][1] == line && s.frames[0][2] != "Integer#to_s"
    end
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
    elsif root[:kind] == :machine_stack
      # The machine stack is read conservatively and changes from call to
      # call: a word the walk saw there (a spilled register of a frame
      # under Sampler.retention) may be gone when this asks again, the
      # more so in a --enable-checks build, whose frames differ.  Only
      # that it names an object or an address.
      assert(root[:object] || root[:address], "the machine stack root names nothing: #{root[:label]}")
    elsif (category = ROOT_CATEGORIES[root[:kind]])
      # (an identity Hash: its keys are new Strings)
      roots = ObjectSpace.reachable_objects_from_root.select { |k, _| category.include?(k) }.values.flatten(1)
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

# The fleet tests (test_fleet_*): profiles read as the fleet's scrapers
# read them.  PprofReader (the library's, loaded from this checkout) gives
# the fields go tool pprof does not print (ids, the string table).
require_relative "../../lib/allocation_sampler/pprof_reader"
require "net/http"

module FleetHelper
  Reader = ObjectSpace::AllocationSampler::PprofReader

  # GET http://127.0.0.1:port/path: the response.
  def http_get(port, path)
    Net::HTTP.start("127.0.0.1", port, read_timeout: 120) { |http| http.get(path) }
  end

  # GET a profile: its bytes, checking the status and content type.
  def scrape(port, path)
    res = http_get(port, path)
    assert_equal "200", res.code, "#{path}: #{res.body}"
    assert_equal "application/octet-stream", res["content-type"], path
    res.body
  end

  # A sample's stack as text, innermost first: [[function, file, line], ...].
  def stack_of(profile, sample)
    sample.location_ids.flat_map do |id|
      profile.locations.fetch(id).lines.map do |fid, line|
        f = profile.functions.fetch(fid)
        [f.name, f.filename, line]
      end
    end
  end

  def sample_type_index(profile, type) = profile.sample_types.index { |t, _| t == type }
end

class Minitest::Test
  include FleetHelper
end

# The read tests (test_read_*_open_*): what the sampler keeps of a
# workload run while a streaming read (report to an IO) is, or was, in
# its write.  Ruby source for a child process: read_workload keeps 10 MB
# of malloc'd buffers, makes about 30 MB of garbage at 3,000 new sites,
# and returns {live_malloc:, evicted:, alloc_space:, peak:}: what a read
# left open would stop (malloc samples stay queued, nothing is evicted,
# sites are not folded, the peak misses malloc'd bytes).
module ReadHelper
  START = "ObjectSpace::AllocationSampler.start(interval: 16_384, seed: 1, max_samples: 1_000, malloc: true)"

  WORKLOAD = <<~RUBY
    def read_workload
      s = ObjectSpace::AllocationSampler
      keep = Array.new(100) { "k" * 100_000 }
      3_000.times { |i| eval("'g' * 10_000", nil, "site.rb", i + 1) }
      GC.start
      st = s.stats
      peak = s.peak
      { live_malloc: st[:live_malloc_bytes], evicted: st[:evicted],
        alloc_space: s.send(:site_totals).sum { |row| row[4] }.round,
        peak: peak ? peak[:live_malloc_bytes] : 0, kept: keep.size }
    end
  RUBY

  # What read_workload returned, as a child printed it (p).
  def workload_result(out) = eval(out.lines.last)

  # The bounds a run that loses nothing meets (10 MB kept, about 40 MB
  # allocated, max_samples 1,000: a sampling error far inside them).
  def assert_nothing_lost(r, what)
    assert_operator r[:live_malloc], :>=, 6_000_000, "#{what}: live malloc'd bytes (10 MB kept): #{r}"
    assert_operator r[:evicted], :>=, 500, "#{what}: dead records evicted (3,000 garbage strings): #{r}"
    assert_operator r[:alloc_space], :>=, 25_000_000, "#{what}: bytes allocated in the totals (about 40 MB): #{r}"
    assert_operator r[:peak], :>=, 6_000_000, "#{what}: malloc'd bytes at the peak (10 MB kept): #{r}"
  end
end

class Minitest::Test
  include ReadHelper
end
