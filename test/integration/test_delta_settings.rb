# RUBY_GC_SAMPLING's every=: a bad value (zero, too long, an unknown
# unit) or an out= without %n prints one warning naming the problem, and
# the program runs unprofiled (no thread, no file).
require_relative "helper"
require "tmpdir"

class TestDeltaSettings < Minitest::Test
  def test_bad_every
    Dir.mktmpdir do |dir|
      { "every=0,out=#{dir}/a-%n.pb.gz" => /every=0: expected seconds from 1 to 86400/,
        "every=86401,out=#{dir}/a-%n.pb.gz" => /every=86401: expected seconds/,
        "every=5x,out=#{dir}/a-%n.pb.gz" => /every=5x: expected seconds/,
        "every=2d,out=#{dir}/a-%n.pb.gz" => /every=2d: expected seconds/,
        "every=60s,out=#{dir}/a.pb.gz" => /every= needs out= with %n/ }.each do |setting, message|
        out, err, status = run_ruby('p [ObjectSpace::AllocationSampler.enabled?, Thread.list.size]',
                                    env: { "RUBY_GC_SAMPLING" => setting })
        assert status.success?, err
        assert_equal "[false, 1]\n", out, setting
        assert_equal 1, err.lines.size, err
        assert_match message, err
      end
      assert_empty Dir.children(dir)
      out, err, status = run_ruby('p ObjectSpace::AllocationSampler.enabled?', env: { "RUBY_GC_SAMPLING" => "every=1h,out=#{dir}/a-%n.pb.gz" })
      assert status.success?, err
      assert_equal "true\n", out
      assert_equal ["a-1.pb.gz"], Dir.children(dir)
    end
  end
end
