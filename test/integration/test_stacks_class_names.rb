# frozen_string_literal: true

# A class without a name is shown as inspect shows it, the same in every
# output (frames.h's sampling_class_name): an anonymous class's site
# ("#<Class:0x...>", all 16 digits) in the site totals, the report and a
# retention hop, and a singleton class in a retention path
# ("#<Class:#<Object:0x...>>", "#<Class:Foo::Bar>").
require_relative "helper"
require "stringio"

class TestStacksClassNames < Minitest::Test
  class Named; end

  def test_anonymous_class_as_inspect
    k = Class.new
    Sampler.start(interval: 1, mode: :fixed, malloc: false)
    kept = k.new
    Sampler.stop
    name = k.inspect
    assert_match(/\A#<Class:0x\h{16}>\z/, name)
    assert Sampler.send(:site_totals).any? { |r| r[1] == name }, "a site of class #{name}"
    io = StringIO.new
    Sampler.report(io, top: 1000)
    assert_includes io.string, name
    sample = Sampler.samples.find { |s| s.object.equal?(kept) }
    refute_nil sample, "the instance was sampled"
    assert_equal name, sample.retention_path.last[:class]
  end

  def test_singletons_in_retention_paths
    obj = Object.new
    $stacks_class_names_obj = obj
    fill_singletons(obj)
    a = retention_labels("a" * 100)
    b = retention_labels("b" * 100)
    assert_includes a, "class #{obj.singleton_class.inspect} (Class)", a.join(" -> ")
    assert_match(/\A#<Class:#<Object:0x\h{16}>>\z/, obj.singleton_class.inspect)
    assert_includes b, "#{Named.singleton_class.inspect}::K (String)", b.join(" -> ")
    assert_equal "#<Class:TestStacksClassNames::Named>", Named.singleton_class.inspect
  ensure
    $stacks_class_names_obj = nil
    Named.singleton_class.send(:remove_const, :K) if Named.singleton_class.const_defined?(:K, false)
  end

  private

  # (in a method of its own: no local of the test's frame holds the strings)
  def fill_singletons(obj)
    Sampler.start(interval: 1, mode: :fixed, malloc: false)
    obj.singleton_class.instance_variable_set(:@x, "a" * 100)
    Named.singleton_class.const_set(:K, "b" * 100)
    Sampler.stop
    nil
  end

  def retention_labels(content)
    sample = Sampler.samples.find { |s| (o = s.object).is_a?(String) && o.size == 100 && o == content }
    refute_nil sample, "the string #{content[0]}... was sampled"
    sample.retention_path.map { |hop| hop[:label] }
  end
end
