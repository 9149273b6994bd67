# write_dhat's destination is checked before anything is read: anything
# but a path (String, Pathname) or an IO raises ArgumentError naming
# path_or_io and what it accepts, writes nothing and changes nothing;
# wrong argument counts raise ArgumentError; dhat takes no argument.
require_relative "helper"

class TestDhatErrors < Minitest::Test
  def teardown
    $keep = nil
    super
  end

  def test_bad_destinations
    Sampler.start(interval: 4096, seed: 1)
    $keep = Array.new(2_000) { |i| "err-#{i}" }
    Sampler.stop
    before = Sampler.stats
    [42, nil, :sym, 1.5, Object.new, [], {}].each do |bad|
      e = assert_raises(ArgumentError) { Sampler.write_dhat(bad) }
      assert_match(/path_or_io/, e.message)
      assert_match(/path \(String, Pathname\) or an IO/, e.message)
    end
    assert_raises(ArgumentError) { Sampler.write_dhat }
    assert_raises(ArgumentError) { Sampler.write_dhat("a", "b") }
    assert_raises(ArgumentError) { Sampler.write_dhat("a.json", view: :peak) }
    assert_raises(ArgumentError) { Sampler.dhat(1) }
    assert_raises(ArgumentError) { Sampler.dhat(view: :peak) }
    after = Sampler.stats
    %i[samples live dropped evicted records sites].each { |k| assert_equal before[k], after[k], k }
    Dir.mktmpdir do |dir|
      Dir.chdir(dir) do
        assert_raises(ArgumentError) { Sampler.write_dhat(:x) }
        assert_empty Dir.children(dir), "nothing written"
      end
    end
  end
end
