# A sample records the class the object was allocated with and its type:
# strings, arrays, hashes, user classes, BasicObject, Data, Struct, and
# internal objects (T_IMEMO with its kind, no class, never handed out).
require_relative "helper"

class TestSamplingTypes < Minitest::Test
  Point = Struct.new(:x, :y)
  Coord = Data.define(:lat, :lng)
  class Plain; def initialize; @a = 1; end; end
  class Bare < BasicObject; end

  def sample_of
    Sampler.start(interval: 1, mode: :fixed, max_samples: 200_000)
    obj = yield
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.equal?(obj) }
    refute_nil s, "sampled at interval 1"
    [s, obj]
  end

  def assert_sample(type, klass)
    s, obj = sample_of { yield }
    assert_equal type, s.type
    assert_same klass, s.klass
    assert_includes SLOT_SIZES, s.size
    assert_equal s.size, s.weight, "interval 1: the weight is the slot size"
    assert_equal GC.count, s.allocated_gc if s.allocated_gc == GC.count
    s
  end

  def test_string = assert_sample(:T_STRING, String) { +"abc" }
  def test_array = assert_sample(:T_ARRAY, Array) { [1, 2, 3] }
  def test_hash = assert_sample(:T_HASH, Hash) { { a: 1 } }
  def test_user_class = assert_sample(:T_OBJECT, Plain) { Plain.new }
  def test_struct = assert_sample(:T_STRUCT, Point) { Point.new(1, 2) }
  def test_data = assert_sample(:T_STRUCT, Coord) { Coord.new(lat: 1, lng: 2) }
  def test_float = assert_sample(:T_FLOAT, Float) { Float::MAX * (0.5 + rand / 2) } # not a flonum
  def test_class = assert_sample(:T_CLASS, Class) { Class.new }

  def test_basic_object
    Sampler.start(interval: 1, mode: :fixed)
    obj = Bare.new
    Sampler.stop
    s = Sampler.samples.find { |x| x.object.__id__ == obj.__id__ rescue false }
    s ||= Sampler.samples.select { |x| x.klass == Bare }.last
    refute_nil s
    assert_equal :T_OBJECT, s.type
    assert_equal Bare, s.klass
  end

  def test_slot_sizes
    s, _ = sample_of { "x" * STRING_LENGTHS[640] }
    assert_equal 640, s.size
    s, _ = sample_of { Array.new(ARRAY_LENGTHS[160], 0) }
    assert_equal 160, s.size
  end

  def test_internal_objects
    Sampler.start(interval: 1, mode: :fixed)
    eval("def __sampled_method; 1 + 1; end")  # compiles an iseq (T_IMEMO)
    Sampler.stop
    imemos = Sampler.samples.select { |s| s.type == :T_IMEMO }
    refute_empty imemos
    assert imemos.all? { |s| s.klass.nil? }, "an imemo has no class"
    assert imemos.all? { |s| s.object.nil? }, "internal objects are never handed out"
    kinds = imemos.map(&:imemo_type).uniq
    assert_includes kinds, :iseq
    assert kinds.all? { |k| k.is_a?(Symbol) }
    strings = Sampler.samples.select { |s| s.type == :T_STRING }
    assert strings.all? { |s| s.imemo_type.nil? }
  end
end
