# A real tracer sees what the library's own profile says (usdt.h's
# contract): bpftrace, attached to otel_memory:alloc and :free of the
# library in a program with known allocations (fixed mode, interval 4 KiB,
# malloc'd blocks too), sees
#   - one alloc per sample: stats[:samples] (slots and blocks) less
#     reader_samples;
#   - alloc's w summing to the profile's alloc_space (go tool pprof);
#   - each live slot sample at its address, with its size and weight,
#     and no free after it;
#   - per address alloc, free, alloc, ...: never two frees or two allocs
#     in a row, so a free is once per sample, and never for a live one;
#     the allocs left without a free are the live records (stats[:live]).
# (A free first at an address is a block sampled before the measured part
# began, freed or regrown in it: counted apart.)
#
# Attaching takes time: the program allocates and collects in a loop until
# the test has seen both probes fire, then clears the sampler and marks the
# start of the measured part with a sampled 3 MB block; its end with a
# second one, after the figures were read with the sampler stopped and GC
# disabled.  bpftrace numbers its events (one thread: the program's), so
# the test knows it has every event before the end mark without a timeout
# deciding anything.  Needs root and a kernel that allows uprobes; skipped
# (with bpftrace's message) otherwise.
require_relative "helper"
require_relative "usdt_helper"
require "json"
require "timeout"

class TestUsdtBpftraceEvents < Minitest::Test
  MARK = 2_000_000  # a block this large is a mark (the workload's are 5 KB)

  PROGRAM = <<~'RUBY'
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
    keep = ["m" * 3_000_000]            # the start mark
    20_000.times { |i| s = "x" * 10; keep << s if i.even? }
    200.times { |i| b = "y" * 5000; keep << b if i.even? }
    300.times { |i| a = Array.new(30, i); keep << a if i % 3 == 0 }
    GC.start
    GC.disable
    S.stop
    stats = S.stats
    samples = S.samples
    S.write_pprof(out + ".pb.gz")
    rows = samples.map do |s|
      obj = s.object
      addr = begin
        obj && ObjectSpace.dump(obj)[/"address":"0x(\h+)"/, 1]&.to_i(16)
      rescue StandardError
        nil
      end
      { kind: s.kind, size: s.size, weight: s.weight, live: s.live?, address: addr }
    end
    S.start(interval: 4096, mode: :fixed, malloc: true)
    keep << "e" * 3_000_000             # the end mark
    File.write(out, JSON.generate(stats: stats.slice(:samples, :malloc_samples, :reader_samples, :live, :dropped),
                                  samples: rows))
  RUBY

  def test_events_match_the_profile
    skip "needs root (bpftrace attaches uprobes)" unless Process.uid.zero?
    bpftrace = ENV.fetch("BPFTRACE", "bpftrace")
    skip "bpftrace not installed (tools/install-deps installs it)" unless system("#{bpftrace} --version", out: File::NULL, err: File::NULL)
    lib = usdt_library
    skip_unless_probes(lib)

    Dir.mktmpdir("usdt") do |dir|
      go = File.join(dir, "go")
      out = File.join(dir, "out.json")
      prog = File.join(dir, "prog.rb")
      File.write(prog, PROGRAM)
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
        events = collect(bt_out, go)
      ensure
        Process.kill("INT", bt_wait.pid) rescue nil
        bt_err_text = bt_err.read.to_s
        bt_wait.value
        Process.kill("KILL", ruby_wait.pid) rescue nil if events.nil? || events == :refused || !ruby_wait.join(120)
        ruby_text = ruby_out.read.to_s
      end
      skip "bpftrace could not attach (kernel or permissions): #{bt_err_text.strip.lines.first(3).join}" if events == :refused
      assert ruby_wait.value.success?, "the traced program failed: #{ruby_text}"
      check(events, JSON.parse(File.read(out), symbolize_names: true), out + ".pb.gz")
    end
  end

  private

  # Reads bpftrace's events: touches `go` once both probes have fired,
  # and returns every event up to the end mark; :refused if bpftrace ends
  # before any event.
  def collect(bt_out, go)
    events = {}
    seen = {}
    marks = []
    end_seq = nil
    Timeout.timeout(300) do
      while (line = bt_out.gets)
        kind, seq, tid, *args = line.split
        next unless %w[A F].include?(kind) && seq =~ /\A\d+\z/
        ev = { kind: kind, seq: Integer(seq), tid: Integer(tid), args: args.map { |a| Integer(a) } }
        events[ev[:seq]] = ev
        seen[kind] = true
        File.write(go, "") if seen["A"] && seen["F"] && !File.exist?(go)
        marks << ev[:seq] if kind == "A" && ev[:args][1] >= MARK
        end_seq = marks.max if marks.size == 2
        return (1..end_seq).filter_map { |s| events[s] } if end_seq && (1..end_seq).all? { |s| events.key?(s) }
      end
    end
    return :refused if events.empty?
    flunk "bpftrace ended before the end mark (#{events.size} events)"
  end

  def check(events, result, pprof_path)
    stats = result[:stats]
    starts = events.each_index.select { |i| events[i][:kind] == "A" && events[i][:args][1] >= MARK }
    assert_equal 2, starts.size, "two marks in the events"
    measured = events[starts[0]...starts[1]]   # the start mark is a sample of the measured part
    tids = measured.map { |e| e[:tid] }.uniq
    assert_equal 1, tids.size, "every event from the program's thread: #{tids.inspect}"

    allocs = measured.select { |e| e[:kind] == "A" }
    assert_equal stats[:samples] - stats[:reader_samples], allocs.size,
                 "one alloc per recorded sample: #{stats.inspect}"
    assert_equal 0, stats[:dropped], "no record dropped"

    alloc_space = pprof_samples(pprof_path).sum { |s| s[:values][1] }
    assert_equal alloc_space, allocs.sum { |e| e[:args][2] }, "alloc's w sum to the profile's alloc_space"

    open = {}
    prior_frees = 0
    touched = {}
    measured.each do |e|
      addr = e[:args][0]
      if e[:kind] == "A"
        refute open.key?(addr), format("alloc at 0x%x twice without a free (event %d)", addr, e[:seq])
        open[addr] = e
      elsif open.delete(addr)
        nil
      elsif touched[addr]
        flunk format("free at 0x%x twice after one alloc (event %d)", addr, e[:seq])
      else
        prior_frees += 1
      end
      touched[addr] = true
    end
    assert_equal stats[:live], open.size, "allocs left without a free == live records (#{prior_frees} earlier blocks freed)"

    samples = result[:samples]
    live_slots = samples.select { |s| s[:kind] == "slot" && s[:live] && s[:address] }
    dead = samples.reject { |s| s[:live] }
    assert_operator live_slots.size, :>=, 50, "live slot samples with an address"
    assert_operator dead.count { |s| s[:kind] == "slot" }, :>=, 100, "dead slot samples"
    assert_operator dead.count { |s| s[:kind] == "malloc" }, :>=, 50, "freed block samples"
    live_slots.each do |s|
      e = open[s[:address]] or flunk(format("live sample at 0x%x: no alloc left open there", s[:address]))
      assert_equal [s[:size], s[:weight].round], [e[:args][1], e[:args][2]], format("size and weight at 0x%x", s[:address])
    end
  end
end
