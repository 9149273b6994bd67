# out='s files appear whole and follow no symlink: the profile at exit,
# every='s deltas and the watcher's files are written to a temporary file
# beside the name and renamed over it.  A symlink at the name is
# replaced (its target is untouched); no temporary file is left; what is
# there is a whole profile go tool pprof reads.
require_relative "helper"

class TestEnvOutAtomic < Minitest::Test
  include PprofHelper

  def test_symlinks_replaced_not_followed
    Dir.mktmpdir do |dir|
      target = File.join(dir, "target")
      File.write(target, "precious")
      %w[exit.pb.gz d-1.pb.gz d-2.pb.gz g-1.pb.gz].each { |name| File.symlink(target, File.join(dir, name)) }

      out, err, status = run_ruby("$k = []", env: { "RUBY_GC_SAMPLING" => "out=#{dir}/exit.pb.gz" })
      assert status.success?, err + out
      code = 'HALF = ("x" * 524_288).freeze; def grow_big = "#{HALF}#{HALF}"; $k = Array.new(40) { grow_big }; GC.start; sleep 2.5'
      _, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "every=1,out=#{dir}/d-%n.pb.gz" })
      assert status.success?, err
      _, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "grow=16m,max_files=1,out=#{dir}/g-%n.pb.gz" })
      assert status.success?, err

      assert_equal "precious", File.read(target), "the symlinks' target is untouched"
      %w[exit.pb.gz d-1.pb.gz d-2.pb.gz g-1.pb.gz].each do |name|
        path = File.join(dir, name)
        assert File.file?(path) && !File.symlink?(path), "#{name} is a file of its own"
        pprof("-raw", path)      # (whole: go tool pprof reads it)
      end
      assert_empty Dir.children(dir).grep(/tmp/), "no temporary file left: #{Dir.children(dir)}"
    end
  end
end
