# RUBY_GC_SAMPLING's out= whose name ends in .dhat.json writes a DHAT file
# at exit instead of pprof, with the timeline CSV beside it (x.dhat.json
# -> x.timeline.csv); every= (pprof deltas) refuses such a name with one
# warning, and the program runs unprofiled.  (write_dhat's destinations:
# test_api_write_destinations.rb.)
require_relative "helper"
require "json"

class TestDhatExit < Minitest::Test
  def test_out_at_exit
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby("x = Array.new(20_000) { |i| 'exit ' * (i % 5) }; GC.start",
                                  env: { "RUBY_GC_SAMPLING" => "interval=4k,out=#{dir}/heap-%p.dhat.json" })
      assert status.success?, err
      assert_equal "", err
      files = Dir.children(dir).sort
      assert_equal 2, files.size, files.inspect
      dhat = files.find { |f| f.end_with?(".dhat.json") }
      assert_match(/\Aheap-\d+\.dhat\.json\z/, dhat)
      assert_equal dhat.sub(".dhat.json", ".timeline.csv"), files.find { |f| f.end_with?(".csv") }, "the timeline beside"
      d = JSON.parse(File.read(File.join(dir, dhat)))
      assert_equal dhat[/\d+/].to_i, d["pid"]
      assert d["pps"].any? { |pp| pp["fs"].any? { |i| d["ftbl"][i].include?("(-e:1)") } }, "the program's own site"
    end
  end

  def test_every_refuses_a_dhat_name
    Dir.mktmpdir do |dir|
      out, err, status = run_ruby("p ObjectSpace::AllocationSampler.enabled?",
                                  env: { "RUBY_GC_SAMPLING" => "every=1,out=#{dir}/d-%n.dhat.json" })
      assert status.success?, err
      assert_equal "false\n", out, "sampling stays off"
      assert_equal 1, err.lines.size, err
      assert_match(/every=.*\.dhat\.json/, err)
      assert_empty Dir.children(dir)
    end
  end
end
