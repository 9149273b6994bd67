# A constant read by code on the stack: its value's path is the
# constant's, not the running method's iseq and its inline constant cache
# (nor, under YJIT, the compiled code that embeds the value), in every
# output; an object only a cache holds keeps its path through it, marked.
require_relative "helper"

class TestRetentionCache < Minitest::Test
  include PprofHelper

  module A; module B; module C; module D; module E; module F; TABLE = {}; end; end; end; end; end; end
  LINE = __LINE__ + 1
  def fill = (40.times { |i| A::B::C::D::E::F::TABLE[i] = "entry #{i}" * 4 }; nil)

  # reads the constant (its inline cache fills; called often enough for
  # YJIT to compile it), then holds the iseq on the stack while the block runs
  def reader(n)
    return A::B::C::D::E::F::TABLE.size if n > 0
    yield
  end

  def test_constant_not_cache
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    GC.start    # (the temporaries of fill die)
    200.times { reader(1) }
    reader(0) do
      # a walk for one sample (first, and in a thread that ends: a path or a
      # result held, even by a stale word of a stack, would be a root nearer)
      one_labels = in_thread do
        one = Sampler.samples.find do |s|
          s.live? && s.klass == String && s.frames[0][1] == LINE && A::B::C::D::E::F::TABLE[7].equal?(s.object)
        end
        one.retention_path.map { |h| h[:label] }
      end
      r = Sampler.retention
      table = A::B::C::D::E::F::TABLE.values
      entries = samples_at(r[:samples], LINE, String).select { |s| table.any? { |v| v.equal?(s.object) } }
      assert_operator entries.size, :>=, 30
      entries.each do |s|
        path = s.retention_path
        refute path.any? { |h| h[:cache] || h[:class] =~ /imemo (constcache|callcache|iseq|ment)/ }, labels(path)
        assert_equal "TestRetentionCache::A::B::C::D::E::F::TABLE", path[-2][:name], labels(path)
        assert_equal :hash_value, path[-1][:kind]
      end
      # the same choice in a walk for one sample, in the pprof view, in the report
      # (from the constants on: the roots differ, the walk for one ran in another thread)
      from_a = ->(labels) { labels.drop_while { |l| !l.start_with?("TestRetentionCache::A ") } }
      assert_equal from_a.(entries.find { |s| s.object.equal?(table[7]) }.retention_path.map { |h| h[:label] }), from_a.(one_labels)
      assert_equal 8, from_a.(one_labels).size
      table = nil
      assert_path_in_heap(entries[3].retention_path)
      # (the result let go: its Samples hold the paths, which would be nearer roots)
      weight = entries.sum(&:weight)
      r = entries = nil
      GC.start    # (and the paths made above are garbage: gone)
      file = File.join(Dir.mktmpdir, "retention.pb.gz")
      in_thread { Sampler.write_pprof(file, view: :retention) }
      held = pprof_samples(file).select { |s| s[:functions].any? { |f| f.include?("A::B::C::D::E::F::TABLE (Hash)") } }
      # (not every one: a stale word of a machine stack may hold a few)
      assert_operator held.sum { |s| s[:values][1] }, :>, 0
      assert_operator weight, :>, 0
      traces = pprof("-traces", file).split(/^-+\+-+$/)
      assert_empty traces.select { |t| t.include?("TestRetentionCache#fill") && t.include?("T_STRING") && t =~ /constcache|imemo iseq/ }
      out = StringIO.new
      in_thread { Sampler.retention_report(out) }
      assert_match(/TABLE \(Hash\)/, out.string)
      refute_match(/constcache/, out.string)
    end
  end

  # A literal only the running code holds (an eval's iseq, on the stack):
  # its path goes through that code, marked as a cache edge.
  def test_only_a_cache_holds_it
    Sampler.start(interval: 1, mode: :fixed)
    eval(<<~'RUBY')
      Sampler.stop
      r = Sampler.retention
      s = r[:samples].find { |x| x.live? && x.object.is_a?(String) && x.object == "held only by running code, 42" }
      refute_nil s
      path = s.retention_path
      assert_equal [true], path.filter_map { |h| h[:cache] }, labels(path)
      # (the cache hop: from the machine stack, or, under YJIT, one out
      # from the running fiber's frames)
      assert path.any? { |h| h[:cache] && h[:label].end_with?(" [cache]") }, labels(path)
      assert_operator r[:cache_paths], :>=, 1
      file = File.join(Dir.mktmpdir, "retention.pb.gz")
      Sampler.write_pprof(file, view: :retention)
      assert pprof_samples(file).any? { |x| x[:labels]["retention"] == "cache" && x[:functions].any? { |f| f.end_with?("[cache]") } }
    RUBY
  end
end
