# The sampler holds the classes (and code) of its sites weakly: a class
# that the program drops dies as it would without sampling, and the
# profile still names it.
require_relative "helper"
require "stringio"

class TestLivenessWeakSites < Minitest::Test
  PROGRAM = <<~'RUBY'
    class WeakBase; end
    def churn = 100_000.times { Class.new(WeakBase).new }
    churn
    4.times { GC.start }
    print WeakBase.subclasses.size
  RUBY

  def test_dropped_classes_die
    plain, err, status = run_ruby(PROGRAM)
    assert status.success?, err
    sampled, err, status = run_ruby(PROGRAM, env: { "RUBY_GC_SAMPLING" => "interval=4k" })
    assert status.success?, err
    assert_operator sampled.to_i, :<=, plain.to_i + 10,
                    "subclasses alive after GC: #{sampled} with sampling, #{plain} without"
  end

  def test_dead_class_sites_keep_their_names
    Sampler.start(interval: 1, mode: :fixed)
    k = Class.new { def make = Object.new }
    line = __LINE__ + 1
    k.new.make
    name = k.inspect
    k = nil
    Sampler.stop
    4.times { GC.start }
    rows = Sampler.send(:site_totals)
    row = rows.find { |r| r[1] == name }
    refute_nil row, "the dead class's site is named #{name}"
    io = StringIO.new
    Sampler.report(io, top: 1000)
    assert_includes io.string, name
    samples = Sampler.samples
    # (k.new: on 3.4 under a Class#new frame, on 4.0 not: opt_new.)  YJIT's
    # code for the line above holds the class it saw (a guard), so under
    # YJIT the class lives on and the sample keeps it.
    yjit = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?
    refute_nil samples.find { |x| x.type == :T_OBJECT && (yjit ? x.klass.inspect == name : x.klass.nil?) &&
                                  x.frames.none? { |f| f[2] == "make" } && x.frames.any? { |f| f[0] == __FILE__ && f[1] == line } },
               yjit ? "the sample of the instance is there with its class, held by YJIT" : "the sample of the dead class's instance is still there, its class gone"
    made = samples.find { |x| x.frames.any? { |f| f[2] == "make" } && x.type == :T_OBJECT }
    refute_nil made, "the site inside the dead class's method is named"
    assert_equal Object, made.klass, "and keeps its class, which lives"
  end

  # Code that is dropped (eval'd methods, redefined) dies as it would
  # without sampling: the sites do not keep its iseqs.
  def test_dropped_code_dies
    code = <<~'RUBY'
      require "objspace"
      GC.start
      before = ObjectSpace.count_imemo_objects[:imemo_iseq]
      500.times { |i| eval("def weak_m#{i} = Object.new; weak_m#{i}") }
      500.times { |i| eval("def weak_m#{i} = nil") }
      4.times { GC.start }
      print ObjectSpace.count_imemo_objects[:imemo_iseq] - before
    RUBY
    plain, err, status = run_ruby(code)
    assert status.success?, err
    sampled, err, status = run_ruby(code, env: { "RUBY_GC_SAMPLING" => "interval=1,mode=fixed" })
    assert status.success?, err
    assert_operator sampled.to_i, :<=, plain.to_i + 50, "iseqs left: #{sampled} with sampling, #{plain} without"
  end

  # Code that is dropped (an eval'd method, redefined) dies too; the
  # sample keeps its frames as text.
  def test_dead_code_sites_keep_their_frames
    Sampler.start(interval: 1, mode: :fixed)
    $obj = eval("def weak_sites_made = Object.new; weak_sites_made", binding, "weak_eval.rb", 42)
    Sampler.stop
    eval("def weak_sites_made = nil")
    named = Sampler.stats[:named]
    4.times { GC.start }
    assert_operator Sampler.stats[:named], :>, named, "the dropped code's sites were named"
    s = Sampler.samples.find { |x| x.object.equal?($obj) }
    refute_nil s
    assert_equal ["weak_eval.rb", 42, "#{self.class}#weak_sites_made"], s.frames.find { |f| f[2].end_with?("#weak_sites_made") }
  ensure
    $obj = nil
  end
end
