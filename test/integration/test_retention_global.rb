# A global $cache Hash of Arrays of Strings: each String's retention path
# is the global, the Hash value under its key, the Array index, checked
# edge by edge against the heap.
require_relative "helper"

class TestRetentionGlobal < Minitest::Test
  LINE = __LINE__ + 5
  def fill
    $cache = {}
    20.times do |i|
      key = "key#{i}"
      $cache[key] = Array.new(3) { |j| "value #{i} #{j}" }
    end
    nil
  end

  def test_global_hash_of_arrays_of_strings
    Sampler.start(interval: 1, mode: :fixed)
    in_thread { fill }
    Sampler.stop
    strings = samples_at(Sampler.retention[:samples], LINE, String)
    assert_operator strings.size, :>=, 50
    s = strings[strings.size / 3]
    path = s.retention_path
    assert_equal %i[global hash_value index], path.map { |h| h[:kind] }, labels(path)
    assert_equal "$cache", path[0][:name]
    assert_match(/\A"key\d+"\z/, path[1][:name])
    assert_kind_of Integer, path[2][:name]
    assert_equal %w[Hash Array String], path.map { |h| h[:class] }
    assert path.last[:object].equal?(s.object), "the last hop is the sampled object"
    assert_equal 2, assert_path_in_heap(path)
    # the key the path names holds the Array the path goes through
    key = path[1][:name].undump
    assert $cache[key].equal?(path[1][:object])
    assert $cache[key][path[2][:name]].equal?(s.object)
  end
end
