# go tool pprof shows our labels exactly as caller_locations does: names
# with "<...>" and "(...)" are not taken for C++ and cut ("<main>",
# "block in <class:Foo>", "block (2 levels) in ...").
require_relative "helper"
require "tmpdir"

class TestPprofNames < Minitest::Test
  SCRIPT = <<~'RUBY'
    S = ObjectSpace::AllocationSampler
    S.start(interval: 1, mode: :fixed)
    $keep = []
    $labels = []
    $keep << Object.new; $labels << caller_locations(0, 1)[0].label
    [1].each { $keep << Object.new; $labels << caller_locations(0, 1)[0].label }
    class NamesFoo
      [1].each { $keep << Object.new; $labels << caller_locations(0, 1)[0].label }
    end
    module NamesBar
      [1].each { [2].each { $keep << Object.new; $labels << caller_locations(0, 1)[0].label } }
    end
    S.stop
    S.write_pprof(ARGV[0])
    puts $labels
  RUBY

  def test_labels_survive_go_tool_pprof
    Dir.mktmpdir do |dir|
      path = File.join(dir, "names.pb.gz")
      File.write(File.join(dir, "names.rb"), SCRIPT)
      out, err, status = Open3.capture3({ "RUBY_GC_LIBRARY" => GC_LIBRARY }, RUBY, File.join(dir, "names.rb"), path)
      assert status.success?, err
      labels = out.lines.map(&:chomp)
      assert_equal ["<main>", "block in <main>", "block in <class:NamesFoo>", "block (2 levels) in <module:NamesBar>"], labels
      top = pprof("-top", "-nodecount=1000", path)
      traces = pprof("-traces", path)
      labels.each do |label|
        assert_match(/ #{Regexp.escape(label)}$/, top, "-top shows #{label}")
        assert_match(/^\s+(\S+\s+)?#{Regexp.escape(label)}$/, traces, "-traces shows #{label}")
      end
      refute_match(/<unknown>|block  in|block in $/, top + traces)
    end
  end
end
