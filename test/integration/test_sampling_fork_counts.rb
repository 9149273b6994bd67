# A forked child's profile counts the child's own allocations: the
# parent's are not counted again in every child.  Its in-use part still
# shows what it inherited and holds (README: "After fork").  Slots only:
# the bounds below are slot bytes (each process's boot mallocs megabytes).
require_relative "helper"
require "tmpdir"

class TestSamplingForkCounts < Minitest::Test
  PROGRAM = <<~'RUBY'
    def parent_site = 20_000.times { "p" * 300 }     # 640-byte slots and the literal's 40: 13.6 MB, all dead
    def child_site = 2_000.times { "c" * 300 }
    $kept = Array.new(1_000) { "k" * 300 }          # inherited and still held
    parent_site
    3.times { Process.wait(fork { child_site }) }
  RUBY

  # A String of 300 and the literal: 640 + 40 bytes (4.1: 512 + 40).
  EACH = ObjectSpace.memsize_of("p" * 300) + ObjectSpace.memsize_of("p")

  def test_children_count_their_own
    Dir.mktmpdir do |dir|
      File.write(File.join(dir, "prog.rb"), PROGRAM)
      env = { "RUBY_GC_LIBRARY" => GC_LIBRARY, "RUBY_GC_SAMPLING" => "interval=16k,mode=fixed,malloc=0,out=#{dir}/p-%p.pb.gz" }
      _, err, status = Open3.capture3(env, RUBY, File.join(dir, "prog.rb"))
      assert status.success?, err
      files = Dir[File.join(dir, "p-*.pb.gz")]
      assert_equal 4, files.size
      parent = files.find { |f| f.end_with?("p-#{status.pid}.pb.gz") }
      children = files - [parent]
      by_function = ->(path, fn) { pprof("-top", "-sample_index=alloc_space", "-unit=B", "-nodecount=100000", path)[/^\s*\S+\s+\S+\s+\S+\s+(\d+)B\s+\S+\s+#{Regexp.escape(fn)}$/, 1].to_i }
      assert_in_delta 20_000 * EACH, by_function.(parent, "Object#parent_site"), 16_384 * 2
      children.each do |child|
        assert_equal 0, by_function.(child, "Object#parent_site"), "#{child}: the parent's allocations are not the child's"
        assert_in_delta 2_000 * EACH, by_function.(child, "Object#child_site"), 16_384 * 2
        inuse = pprof("-top", "-sample_index=inuse_space", "-unit=B", child)
        assert_match(/<main>/, inuse, "#{child}: what it inherited and holds is in use")
      end
      total = files.sum { |f| pprof_samples(f).sum { |s| s[:values][1] } }
      assert_operator total, :<, (20_000 + 3 * 2_000 + 1_000) * EACH + 4 * 1_000_000, "the merged profile counts each allocation once"
    end
  end
end
