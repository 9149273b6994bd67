# RUBY_GC_SAMPLING's min_gcs=N applies to the files out= writes: the
# profile at exit of a program that ends with young garbage (allocated
# with GC off) has none of it in inuse_space with min_gcs=1 and all of
# it without; allocation values are the same in both (within 20%: two
# processes with one seed, about 2,000 samples each: nearly the same draws).
require_relative "helper"

class TestEnvMinGcsFiles < Minitest::Test
  include PprofHelper

  SCRIPT = <<~'RUBY'
    def kept_env = $kept = Array.new(5_000) { "k" * 100 }
    def young_env = Array.new(50_000) { "y" * 100 }.size
    kept_env
    GC.start
    GC.disable
    young_env
  RUBY

  def test_min_gcs_setting_filters_out_files
    Dir.mktmpdir do |dir|
      values = ["", "min_gcs=1,"].map do |setting|
        path = File.join(dir, "#{setting.empty? ? "all" : "old"}.pb.gz")
        _, err, status = run_ruby(SCRIPT, env: { "RUBY_GC_SAMPLING" => "#{setting}interval=4096,seed=38,malloc=0,out=#{path}" })
        assert status.success?, err
        pprof_values_by_method(path, %w[kept_env young_env])
      end
      all, old = values
      assert_operator all["young_env"][3], :>, 0, "young garbage in use without min_gcs"
      assert_equal 0, old["young_env"][3], "none with min_gcs=1"
      assert_operator old["kept_env"][3], :>, 0, "the kept set stays"
      # (two processes: the samples differ a little, the seed and the program being the same)
      assert_in_delta all["young_env"][1], old["young_env"][1], 0.2 * all["young_env"][1], "alloc_space unchanged"
    end
  end
end
