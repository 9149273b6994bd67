# Threads, Ractors and fork: many threads allocating while the sampler runs;
# start/stop/clear from one thread while others allocate; Ractors
# allocating in parallel (each Ractor cache has its own points, the shared
# tables are safe); a fork child keeps a consistent sampler and keeps
# sampling.
require_relative "helper"
require "tmpdir"

class TestThreadsConcurrency < Minitest::Test
  # A Ractor's result: Ractor#value from 4.0 on, Ractor#take before (4.0
  # removed #take), decided by what the Ruby under test has.
  RACTOR_RESULT = <<~RUBY
    def ractor_result(r) = r.respond_to?(:value) ? r.value : r.take
  RUBY

  def test_threads_allocating
    Sampler.start(interval: 512, mode: :fixed)
    threads = 8.times.map do |t|
      Thread.new { a = []; 20_000.times { |i| a << "t#{t}-#{i}"; a.clear if a.size > 500 } }
    end
    threads.each(&:join)
    st = heap_stats
    st.each { |slot, h| assert_equal h[:allocated_bytes] / 512, h[:points], "heap #{slot}: threads share the Ractor's cache" }
    assert_operator Sampler.stats[:samples], :>, 1000
    labels = Sampler.samples.map { |s| s.frames.map(&:last) }.flatten.uniq
    assert_includes labels, "block (2 levels) in TestThreadsConcurrency#test_threads_allocating"
  end

  def test_control_while_others_allocate
    stop = false
    bursts = 0
    # (each worker passes the GVL on after 100 allocations, so every step
    # below runs between bursts of all four, not after their time slices:
    # 200 steps took 82 s at 100 ms a slice)
    workers = 4.times.map do
      Thread.new { a = []; until stop; 100.times { a << Object.new << "s" * 30 }; a.clear if a.size > 1000; bursts += 1; Thread.pass; end }
    end
    200.times do |i|
      case i % 4
      when 0 then Sampler.start(interval: 256 + i, mode: i.even? ? :fixed : :poisson)
      when 1 then Sampler.samples
      when 2 then Sampler.clear
      when 3 then Sampler.stop
      end
      Thread.pass
    end
    stop = true
    workers.each(&:join)
    assert_operator bursts, :>=, 50, "the workers allocated between the steps (#{bursts} bursts)"
    Sampler.start(interval: 1000, mode: :fixed)
    50_000.times { Object.new }
    heap_stats.each { |slot, h| assert_equal h[:allocated_bytes] / 1000, h[:points], "heap #{slot} after the storm" }
  end

  def test_ractors
    out, err, status = run_ruby(RACTOR_RESULT + <<~RUBY, args: ["-W0"])
      S = ObjectSpace::AllocationSampler
      S.start(interval: 1024, mode: :fixed)
      rs = 4.times.map { |k| Ractor.new(k) { |k| a = []; 50_000.times { |i| a << "r\#{k}-\#{i}"; a.clear if a.size > 100 }; k } }
      p rs.map { |r| ractor_result(r) }.sort
      s = S.stats
      p s[:samples] > 100
      p S.samples.any? { |x| x.frames.any? { |f| f[2].include?("block in <main>") } }
      GC.start
      p S.stats[:live] <= S.samples.size
    RUBY
    assert status.success?, err
    assert_equal "[0, 1, 2, 3]\ntrue\ntrue\ntrue\n", out
  end

  def test_fork
    skip "no fork" unless Process.respond_to?(:fork)
    Sampler.start(interval: 1024, mode: :fixed)
    30_000.times { Object.new }
    parent = Sampler.stats
    r, w = IO.pipe
    pid = fork do
      r.close
      before = Sampler.stats
      30_000.times { Object.new }
      after = Sampler.stats
      # counters count the child's own allocations, from the fork on
      # (30,000 objects of 40 bytes, 32 on 4.1, at 1 KiB: over 900 samples)
      ok = before[:samples] < parent[:samples] && after[:samples] > before[:samples] + 900 && after[:enabled] &&
           after[:heaps].all? { |h| h[:points] == h[:allocated_bytes] / 1024 } &&
           Sampler.samples.size >= after[:samples] - after[:evicted] - after[:dropped]
      w.write(ok ? "ok" : "bad #{before.inspect} #{after.inspect}")
      w.close
      exit!(0)
    end
    w.close
    result = r.read
    Process.wait(pid)
    assert_equal "ok", result
    assert $?.success?
  end

  def test_fork_writes_its_own_profile
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby(<<~RUBY, env: { "RUBY_GC_SAMPLING" => "interval=2k,out=#{dir}/p-%p.pb.gz" })
        pid = fork { 1000.times { "x" * 100 } }
        Process.wait(pid)
        p pid
      RUBY
      assert status.success?, err
      files = Dir[File.join(dir, "p-*.pb.gz")].map { |f| File.basename(f) }.sort
      assert_equal ["p-#{out.to_i}.pb.gz", "p-#{status.pid}.pb.gz"].sort, files
    end
  end

  # A Ractor parked in newobj_cache_miss while another stops, starts or
  # clears must take its slot from the rejoined list, never overwrite it.
  def test_ractor_control_while_another_allocates
    out, err, status = run_ruby(RACTOR_RESULT + <<~RUBY, args: ["-W0"])
      S = ObjectSpace::AllocationSampler
      r = Ractor.new { a = []; i = 0; until i == 2_000_000; a << "r\#{i}" << [i]; a.clear if a.size > 200; i += 1; end; :ok }
      n = 0
      until n > 3000
        case n % 3
        when 0 then S.stop
        when 1 then S.start(interval: 17, mode: :fixed, max_samples: 2000)
        else S.clear
        end
        n += 1
      end
      p ractor_result(r)
    RUBY
    assert status.success?, err
    assert_equal ":ok\n", out
  end

  # Reading samples (snapshot, Sample#live?) while another Ractor samples.
  def test_ractor_read_while_another_samples
    out, err, status = run_ruby(RACTOR_RESULT + <<~RUBY, args: ["-W0"])
      S = ObjectSpace::AllocationSampler
      S.start(interval: 64, max_samples: 500)
      r = Ractor.new { a = []; 1_000_000.times { |i| a << "x\#{i}"; a.clear if a.size > 100 }; :ok }
      200.times { S.samples.each { |s| s.live?; s.age; s.frames }; S.write_collapsed(File::NULL) }
      p ractor_result(r)
    RUBY
    assert status.success?, err
    assert_equal ":ok\n", out
  end
end

