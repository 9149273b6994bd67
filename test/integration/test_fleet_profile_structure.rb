# Every profile the library writes is one fleet readers take: each
# Location has a non-zero address, distinct within the profile and the
# same for the same frame (function, file, line) in every profile of the
# process; Function, Location and Mapping ids are 1, 2, 3, ... in the order
# written (Parca's validation: "location id is not sequential"); the
# string table starts with "".  Checked with go tool pprof -raw (the
# addresses as pprof reads them) and field by field (ids, strings), for
# each way a profile is written: write_pprof and pprof with every view,
# Delta, the exit profile (out=), every= files, and the middleware's
# routes.  Before, every address was 0.
require_relative "helper"
require "tmpdir"

class FleetSite
  def self.build = Array.new(3000) { |i| "fleet-#{i}" * 3 }
  def self.other = Array.new(3000) { [it] }
end

class TestFleetProfileStructure < Minitest::Test
  include RackServerHelper

  # Checks one profile; returns {[function, file, line] => address}.
  def check_profile(bytes, what, dir)
    path = File.join(dir, "p.pb.gz")
    File.binwrite(path, bytes)
    raw = pprof("-raw", path)
    locations = raw[/^Locations\n(.*?)(?=^Mappings|\z)/m, 1].to_s.scan(/^\s+(\d+): (0x\h+) /)
    addresses = locations.map { |_, a| Integer(a) }
    refute_empty addresses, "#{what}: locations"
    assert addresses.none?(&:zero?), "#{what}: every address is non-zero (go tool pprof -raw: #{addresses.count(0)} are 0)"
    assert_equal addresses.size, addresses.uniq.size, "#{what}: addresses distinct"

    p = FleetHelper::Reader.read(bytes)
    assert_equal "", p.strings.first, "#{what}: string_table[0]"
    assert_equal (1..p.functions.size).to_a, p.functions.keys, "#{what}: Function ids 1, 2, ... in order"
    assert_equal (1..p.locations.size).to_a, p.locations.keys, "#{what}: Location ids 1, 2, ... in order"
    assert_equal (1..p.mappings.size).to_a, p.mappings.map { |m| m[1] }, "#{what}: Mapping ids"
    all = p.locations.values.map(&:address)
    assert_empty addresses - all, "#{what}: the addresses pprof read are those written"
    assert all.none?(&:zero?), "#{what}: every address is non-zero (unreferenced Locations too)"
    assert_equal all.size, all.uniq.size, "#{what}: addresses distinct (unreferenced Locations too)"
    p.locations.values.to_h do |l|
      fid, line = l.lines.fetch(0)
      f = p.functions.fetch(fid)
      [[f.name, f.filename, line], l.address]
    end
  end

  # The frames of every profile of one process: same frame, same address;
  # different frames, different addresses.
  def assert_stable(frames_by_profile)
    seen = {}
    frames_by_profile.each do |what, frames|
      frames.each do |frame, address|
        assert_equal seen[frame], address, "#{what}: #{frame.inspect} keeps its address" if seen.key?(frame)
        seen[frame] = address
      end
    end
    assert_equal seen.size, seen.values.uniq.size, "one address a frame across the process"
  end

  def test_in_process_writers
    Sampler.start(interval: 4096, mode: :fixed)
    $keep = [FleetSite.build]
    delta = Sampler::Delta.new
    $keep << FleetSite.other
    GC.start
    $keep << FleetSite.build
    Dir.mktmpdir do |dir|
      written = {}
      %i[allocations peak retention heap].each do |view|
        io = StringIO.new(+"")
        Sampler.write_pprof(io, view: view)
        written["write_pprof view: #{view}"] = io.string
      end
      written["pprof"] = Sampler.pprof
      written["pprof view: :heap, inuse_space"] = Sampler.pprof(view: :heap, default_sample_type: "inuse_space")
      written["Delta#pprof"] = delta.pprof
      $keep << FleetSite.other
      path = File.join(dir, "d.pb.gz")
      delta.write_pprof(path, view: :heap)
      written["Delta#write_pprof view: :heap"] = File.binread(path)
      assert_stable(written.map { |what, bytes| [what, check_profile(bytes, what, dir)] })
    end
  ensure
    $keep = nil
  end

  CHILD = <<~RUBY
    class FleetSite
      def self.build = Array.new(3000) { |i| "fleet-\#{i}" * 3 }
    end
    $keep = FleetSite.build
  RUBY

  def test_exit_profile_and_every_files
    Dir.mktmpdir do |dir|
      _, err, status = run_ruby(CHILD, env: { "RUBY_GC_SAMPLING" => "interval=4k,out=#{dir}/exit.pb.gz" })
      assert status.success?, err
      check_profile(File.binread("#{dir}/exit.pb.gz"), "exit profile (out=)", dir)
      _, err, status = run_ruby(CHILD, env: { "RUBY_GC_SAMPLING" => "interval=4k,every=1h,out=#{dir}/every-%n.pb.gz" })
      assert status.success?, err
      check_profile(File.binread("#{dir}/every-1.pb.gz"), "every= file", dir)
    end
  end

  def test_middleware_routes
    Dir.mktmpdir do |dir|
      with_rack_server do |port|
        %w[/a /b /c].each { |p| assert_equal "200", http_get(port, p).code }
        written = %w[heap heap?gc=1 allocs allocs?seconds=1 delta_heap delta_heap retention].map do |route|
          path = "/debug/pprof/#{route}"
          %w[/a /b].each { |p| http_get(port, p) }
          [path, scrape(port, path)]
        end
        assert_stable(written.map { |what, bytes| [what, check_profile(bytes, what, dir)] })
      end
    end
  end
end
