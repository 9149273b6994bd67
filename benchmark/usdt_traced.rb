# What a sample costs with a tracer attached to the otel_memory probes
# (gc/sampling/usdt.h; benchmark/results/usdt.md): a loop of 40-byte
# Strings sampled every 4 KiB (Poisson, seed 1), timed with bpftrace
# attached to alloc and free and counting them, and without, in
# alternating rounds.  Run as root (bpftrace):
#
#   ruby benchmark/usdt_traced.rb RUBY [ROUNDS]
#
# Prints per round the loop's wall time, its samples and the events
# bpftrace counted; then the medians and the difference per event.
# Attaching: the traced program waits for a file the harness writes once
# bpftrace has fired both probes on a warm-up loop, so only the timed loop
# is compared.
require "open3"
require "tmpdir"

ruby = ARGV[0] or abort "usage: usdt_traced.rb RUBY [ROUNDS]"
rounds = Integer(ARGV[1] || 5)
lib_name = ENV.fetch("RUBY_GC_LIBRARY", "sampling")

PROGRAM = <<~'RUBY'
  S = ObjectSpace::AllocationSampler
  go = ARGV[0]
  S.start(interval: 4096, mode: :poisson, seed: 1)
  until File.exist?(go)
    20_000.times { "w" * 10 }
    GC.start
    sleep 0.01
  end
  GC.start
  s0 = S.stats[:samples]
  t0 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  i = 0
  while i < 3_000_000
    "x" * 10
    i += 1
  end
  GC.start
  t1 = Process.clock_gettime(Process::CLOCK_MONOTONIC)
  puts "result #{t1 - t0} #{S.stats[:samples] - s0}"
RUBY

def library_path(ruby, name)
  out, = Open3.capture2({ "RUBY_GC_LIBRARY" => name }, ruby, "-e",
                        "print File.readlines('/proc/self/maps').map { |l| l.split[5] }.compact.find { |p| p.end_with?('librubygc.#{name}.so') }")
  out.empty? ? abort("#{name}: library not found") : out
end

def run(ruby, lib_name, lib, traced)
  Dir.mktmpdir do |dir|
    go = File.join(dir, "go")
    prog = File.join(dir, "prog.rb")
    File.write(prog, PROGRAM)
    File.write(go, "") unless traced
    rin, rout, rwait = Open3.popen2({ "RUBY_GC_LIBRARY" => lib_name, "RUBY_GC_SAMPLING" => nil }, ruby, prog, go)
    rin.close
    events = 0
    if traced
      script = <<~BT
        usdt:#{lib}:otel_memory:alloc { @a = count(); if (@go == 0) { @go = 1; printf("ready\\n"); } }
        usdt:#{lib}:otel_memory:free { @f = count(); }
      BT
      bin, bout, berr, bwait = Open3.popen3("sh", "-c", 'ulimit -l 8192 2>/dev/null; exec "$@"', "sh",
                                            "bpftrace", "-p", rwait.pid.to_s, "-e", script)
      bin.close
      until (line = bout.gets).nil? || line.start_with?("ready"); end
      abort "bpftrace: #{berr.read}" unless line
      File.write(go, "")
    end
    result = rout.read[/^result (\S+) (\d+)/] && [Float($1), Integer($2)]
    rwait.value
    if traced
      Process.kill("INT", bwait.pid)
      counts = bout.read.scan(/^@[af]: (\d+)/).flatten.map(&:to_i)
      bwait.value
      events = counts.sum
    end
    [*result, events]
  end
end

lib = library_path(ruby, lib_name)
rows = { false => [], true => [] }
rounds.times do |r|
  [false, true].each do |traced|
    t, samples, events = run(ruby, lib_name, lib, traced)
    rows[traced] << [t, samples, events]
    puts format("round %d %-8s %.4f s  %d samples  %d events", r, traced ? "traced" : "untraced", t, samples, events)
  end
end
median = ->(a) { a.sort[a.size / 2] }
t0 = median.(rows[false].map(&:first))
t1 = median.(rows[true].map(&:first))
samples = median.(rows[true].map { |x| x[1] })
events = median.(rows[true].map { |x| x[2] })
puts format("median untraced %.4f s, traced %.4f s: +%.1f%%, %d samples, %d events",
            t0, t1, (t1 / t0 - 1) * 100, samples, events)
puts format("per sample %.2f us, per event %.2f us", (t1 - t0) / samples * 1e6, (t1 - t0) / events * 1e6)
