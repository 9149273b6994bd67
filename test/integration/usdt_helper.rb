# The otel_memory probes (gc/sampling/usdt.h) as tools outside the process
# see them: the library under test's path, its USDT notes as `readelf -n`
# prints them, and a program run with bpftrace attached to both probes.
require "json"
require "timeout"

module UsdtHelper
  # The library this process loaded (test/run's RUBY_GC_LIBRARY: the child
  # Rubies load the same file).
  def usdt_library
    name = "librubygc.#{SamplingTestHelper::GC_LIBRARY}.so"
    path = File.readlines("/proc/self/maps").map { |l| l.split[5] }.compact.find { |p| File.basename(p) == name }
    path or flunk("#{name} is not mapped into this process")
  end

  # Whether this machine's compiler has <sys/sdt.h> (Debian's
  # systemtap-sdt-dev): then the build must have put the probes in.
  def usdt_header?
    cc = RbConfig::CONFIG["CC"].split.first
    _, status = Open3.capture2e(cc, "-fsyntax-only", "-x", "c", "-", stdin_data: "#include <sys/sdt.h>\n")
    status.success?
  end

  # The library's stapsdt notes: { "provider:name" => { semaphore:, arguments: } }.
  def usdt_notes(lib)
    out, status = Open3.capture2e("readelf", "-n", lib)
    assert status.success?, "readelf -n #{lib}: #{out}"
    notes = {}
    out.scan(/Provider: (\S+)\s+Name: (\S+)\s+Location: \S+, Base: \S+, Semaphore: (0x\h+)\s+Arguments: ([^\n]*)/) do |prov, name, sem, args|
      notes["#{prov}:#{name}"] = { semaphore: Integer(sem), arguments: args.strip }
    end
    notes
  end

  # Skips unless the library carries the probes (built without <sys/sdt.h>).
  def skip_unless_probes(lib)
    return if usdt_notes(lib).key?("otel_memory:alloc")
    skip "#{File.basename(lib)} was built without <sys/sdt.h> (tools/install-deps installs systemtap-sdt-dev)"
  end

  # A block this large is a mark in a traced program (the workloads' are
  # 5 KB at most): the program allocates one where the events it checks
  # begin, between parts, and at the end.
  USDT_MARK = 2_000_000

  # The traced program's side of the handshake, for PROGRAM texts: the
  # sampler started (fixed mode, 4 KiB, malloc'd blocks too), allocating
  # and collecting until the test has seen both probes fire (ARGV[0]
  # exists), then collected and cleared.
  USDT_PROGRAM_PRELUDE = <<~'RUBY'
    require "objspace"
    require "json"
    S = ObjectSpace::AllocationSampler
    go, out = ARGV
    S.start(interval: 4096, mode: :fixed, malloc: true, max_samples: 100_000)
    until File.exist?(go)
      200.times { "w" * 5000; Object.new }
      GC.start
      sleep 0.01
    end
    GC.start
    S.clear
    def mark = "m" * 3_000_000
    def address_of(obj) = (obj && ObjectSpace.dump(obj)[/"address":"0x(\h+)"/, 1]&.to_i(16) rescue nil)
  RUBY

  # Runs program (after USDT_PROGRAM_PRELUDE; it writes JSON to `out`)
  # with bpftrace attached to both probes of the library.  Yields the
  # events up to the program's mark number `marks` (each { kind: "A" or
  # "F", seq:, tid:, args: [ptr, size, w] or [ptr] }, in the program's
  # order), the program's JSON and `out` (its directory lives while the
  # block runs).  Skips where bpftrace cannot run or attach.
  def run_traced(program, marks:)
    skip "needs root (bpftrace attaches uprobes)" unless Process.uid.zero?
    bpftrace = ENV.fetch("BPFTRACE", "bpftrace")
    unless system(bpftrace, "--version", out: File::NULL, err: File::NULL)
      skip "bpftrace not installed (tools/install-deps installs it)"
    end
    lib = usdt_library
    skip_unless_probes(lib)
    Dir.mktmpdir("usdt") do |dir|
      go = File.join(dir, "go")
      out = File.join(dir, "out.json")
      prog = File.join(dir, "prog.rb")
      File.write(prog, USDT_PROGRAM_PRELUDE + program)
      env = { "RUBY_GC_LIBRARY" => SamplingTestHelper::GC_LIBRARY, "RUBY_GC_SAMPLING" => nil }
      ruby_in, ruby_out, ruby_wait = Open3.popen2e(env, SamplingTestHelper::RUBY, prog, go, out)
      ruby_in.close
      script = <<~BT
        usdt:#{lib}:otel_memory:alloc { @seq++; printf("A %d %d %lu %lu %lu\\n", @seq, tid, arg0, arg1, arg2); }
        usdt:#{lib}:otel_memory:free { @seq++; printf("F %d %d %lu\\n", @seq, tid, arg0); }
      BT
      bt_in, bt_out, bt_err, bt_wait = Open3.popen3("sh", "-c", 'ulimit -l 8192 2>/dev/null; exec "$@"', "sh",
                                                    bpftrace, "-p", ruby_wait.pid.to_s, "-e", script)
      bt_in.close
      events = nil
      begin
        events = usdt_collect(bt_out, go, marks)
      ensure
        Process.kill("INT", bt_wait.pid) rescue nil
        bt_err_text = bt_err.read.to_s
        bt_wait.value
        Process.kill("KILL", ruby_wait.pid) rescue nil if events.nil? || events == :refused || !ruby_wait.join(120)
        ruby_text = ruby_out.read.to_s
      end
      skip "bpftrace could not attach (kernel or permissions): #{bt_err_text.strip.lines.first(3).join}" if events == :refused
      assert ruby_wait.value.success?, "the traced program failed: #{ruby_text}"
      yield events, JSON.parse(File.read(out), symbolize_names: true), out
    end
  end

  # The events between mark i and mark i + 1 (0: from the first), mark i's
  # own alloc first.
  def usdt_part(events, i)
    marks = events.each_index.select { |j| events[j][:kind] == "A" && events[j][:args][1] >= USDT_MARK }
    events[marks.fetch(i)...marks.fetch(i + 1)]
  end

  # Follows a part's events address by address: the allocs without a free
  # yet (open: address => event), and the frees of addresses the part saw
  # no alloc at (before: a sample announced before the part).  Fails on
  # an alloc at an open address or a second free after one alloc.
  class UsdtLedger
    attr_reader :open, :before

    def initialize(test)
      @test = test
      @open = {}
      @touched = {}
      @before = []
    end

    def feed(events)
      events.each do |e|
        addr = e[:args][0]
        if e[:kind] == "A"
          @test.refute @open.key?(addr), format("alloc at 0x%x twice without a free (event %d)", addr, e[:seq])
          @open[addr] = e
        elsif @open.delete(addr)
          nil
        elsif @touched[addr]
          @test.flunk format("free at 0x%x twice after one alloc (event %d)", addr, e[:seq])
        else
          @before << e
        end
        @touched[addr] = true
      end
      self
    end
  end

  private

  # Reads bpftrace's events: touches `go` once both probes have fired,
  # and returns every event up to the program's mark number `marks` (its
  # number tells when none is missing); :refused if bpftrace ends before
  # any event.
  def usdt_collect(bt_out, go, nmarks)
    events = {}
    seen = {}
    marks = []
    Timeout.timeout(300) do
      while (line = bt_out.gets)
        kind, seq, tid, *args = line.split
        next unless %w[A F].include?(kind) && seq =~ /\A\d+\z/
        ev = { kind: kind, seq: Integer(seq), tid: Integer(tid), args: args.map { |a| Integer(a) } }
        events[ev[:seq]] = ev
        seen[kind] = true
        File.write(go, "") if seen["A"] && seen["F"] && !File.exist?(go)
        marks << ev[:seq] if kind == "A" && ev[:args][1] >= USDT_MARK
        last = marks.size == nmarks && marks.max
        return (1..last).map { |s| events[s] } if last && (1..last).all? { |s| events.key?(s) }
      end
    end
    return :refused if events.empty?
    flunk "bpftrace ended before the program's last mark (#{events.size} events)"
  end
end

class Minitest::Test
  include UsdtHelper
end
