# With Ruby 4.0's namespaces on (RUBY_BOX=1), the library loads and names
# classes: it reads a class's name from the class's own classext, never
# through rb_current_box, which the ruby binary does not export (a library
# calling it died on a symbol lookup the first time a class was named).
# On 3.4 RUBY_BOX means nothing and the same program must run the same way.
require_relative "helper"

class TestStacksBoxNames < Minitest::Test
  def test_classes_are_named_with_boxes_on
    out, err, status = run_ruby(<<~RUBY, env: { "RUBY_BOX" => "1" })
      require "stringio"
      S = ObjectSpace::AllocationSampler
      module Outer; class Foo; end; end
      S.start(interval: 1, mode: :fixed)
      kept = Array.new(100) { Outer::Foo.new }
      S.stop
      puts S.samples.filter_map { |s| s.klass&.to_s }.grep(/Foo/).uniq.sort
      io = StringIO.new
      S.report(io)
      puts io.string.include?("Outer::Foo")
    RUBY
    assert status.success?, "exit #{status.exitstatus}: #{err}"
    lines = out.lines.map(&:chomp)
    assert_includes lines, "Outer::Foo"
    assert_equal "true", lines.last, "the report names the class"
  end
end
