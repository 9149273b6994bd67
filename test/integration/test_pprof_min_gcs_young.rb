# min_gcs: the in-use views without the young.  A steady live set (kept,
# then two GCs) and heavy young garbage (allocated with GC off, so it is
# still "in use" when read: no GC has looked at it yet).  Without the
# filter the garbage dominates inuse_space; with min_gcs: 1 the garbage
# site is gone from the in-use values (exactly: every one of its samples
# is of age 0) and the steady set is what remains: its own in-use values
# are unchanged (the same records), it holds at least 90% of the
# inuse_space left, and its estimate is within 20% of the bytes it holds
# (about 800 samples at a 4 KiB interval: 20% is over 5 sigma).  The
# allocation values are the same with and without the filter.  Checked in
# write_pprof, pprof, a Delta's pprof and write_dhat (its eb, the bytes at
# the end), with the fixed seed.
require_relative "helper"
require "json"

class TestPprofMinGcsYoung < Minitest::Test
  include PprofHelper

  STEADY = 20_000         # strings of 100 bytes: one 160-byte slot each (4.1: 128)
  GARBAGE = 150_000

  def steady = $steady = Array.new(STEADY) { "s" * 100 }

  def garbage
    GARBAGE.times { "g" * 100 }
    nil
  end

  def test_min_gcs_one_leaves_the_steady_set
    Sampler.start(interval: 4096, seed: 38, malloc: false)
    delta = Sampler::Delta.new(since: :start)
    in_ended_thread { steady }
    GC.start
    GC.start
    GC.disable
    begin
      in_ended_thread { garbage }
      Dir.mktmpdir do |dir|
        all = File.join(dir, "all.pb.gz")
        old = File.join(dir, "old.pb.gz")
        Sampler.write_pprof(all)
        Sampler.write_pprof(old, min_gcs: 1)
        File.binwrite(File.join(dir, "old2.pb.gz"), Sampler.pprof(min_gcs: 1))
        File.binwrite(File.join(dir, "delta.pb.gz"), delta.pprof(min_gcs: 1))
        dhat_all = JSON.parse(Sampler.dhat)
        dhat_old = JSON.parse(Sampler.dhat(min_gcs: 1))
        Sampler.write_dhat(File.join(dir, "old.dhat.json"), min_gcs: 1)

        a = pprof_values_by_method(all, %w[steady garbage])
        o = pprof_values_by_method(old, %w[steady garbage])
        total_inuse_all = pprof_samples(all).sum { |s| s[:values][3] }
        total_inuse_old = pprof_samples(old).sum { |s| s[:values][3] }

        # without the filter: the garbage dominates
        assert_operator a["garbage"][3], :>, 0.6 * total_inuse_all, "garbage dominates inuse_space unfiltered"
        # with it: no garbage in use, the steady set unchanged and most of what is left
        assert_equal 0, o["garbage"][3], "no young garbage in inuse_space with min_gcs: 1"
        assert_equal 0, o["garbage"][2], "nor in inuse_objects"
        assert_equal a["steady"][2..3], o["steady"][2..3], "the steady set's in-use values are the same records"
        assert_operator o["steady"][3], :>=, 0.9 * total_inuse_old, "the steady set is >= 90% of what is left"
        held = STEADY * ObjectSpace.memsize_of("s" * 100)
        assert_in_delta held, o["steady"][3], 0.2 * held, "estimate within 20% of #{held} bytes"
        # allocation values unchanged
        assert_equal a["garbage"][0..1], o["garbage"][0..1]
        assert_equal a["steady"][0..1], o["steady"][0..1]

        # the same from pprof and a Delta (alloc_* since start there too)
        [File.join(dir, "old2.pb.gz"), File.join(dir, "delta.pb.gz")].each do |path|
          v = pprof_values_by_method(path, %w[steady garbage])
          assert_equal [0, 0], v["garbage"][2..3], path
          assert_equal o["steady"][2..3], v["steady"][2..3], path
        end
        assert_match(/min_gcs=1: inuse_\* count only samples that survived at least 1 GCs/, pprof("-comments", old))

        # DHAT: the garbage point's bytes at the end (eb) are gone, the steady one's stay
        eb = lambda do |dhat, name|
          dhat["pps"].select { |pp| pp["fs"].any? { |f| dhat["ftbl"][f].include?("##{name}") } }.sum { |pp| pp["eb"] }
        end
        assert_operator eb.(dhat_all, "garbage"), :>, 0
        assert_equal 0, eb.(dhat_old, "garbage")
        assert_equal eb.(dhat_all, "steady"), eb.(dhat_old, "steady")
        assert_equal 0, eb.(JSON.parse(File.read(File.join(dir, "old.dhat.json"))), "garbage")
      end
    ensure
      GC.enable
      $steady = nil
    end
  end
end
