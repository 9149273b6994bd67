# A reader's own allocations are not recorded: after every reader
# (samples, each_sample, retention and its paths, stats, pprof,
# write_pprof, report, write_collapsed, retention_report, a Delta, the
# timeline), a second read holds no sample allocated inside any of them,
# slot or malloc'd; the program's code they call (an IO's write,
# each_sample's block) is recorded; the readers' samples are counted in
# stats[:reader_samples].
require_relative "helper"

class TestReadOwnAllocations < Minitest::Test
  # a sample allocated inside a reader has the reader's C method on its
  # stack (each_sample's block is the program's: what each_sample makes
  # itself are Samples, checked apart); the IOs readers write to here
  # allocate nothing, but Keeper, whose write is the program's code
  def reader_method?(f) = f[2].start_with?("ObjectSpace::AllocationSampler") && !f[2].end_with?(".start", ".each_sample")

  # (under YJIT, the Hash of keywords given to a C reader is built after
  # the reader's frame is pushed: the program's, with the reader on top,
  # docs/limits.md)
  def readers_frames(samples)
    samples.select do |s|
      s.frames.any? { |f| reader_method?(f) } && s.frames.none? { |f| f[2] =~ /\A#{self.class}::(Keeper|Sink)#write\z/ } &&
        !(yjit? && s.klass == Hash && s.frames.count { |f| reader_method?(f) } == 1 && reader_method?(s.frames[0]))
    end
  end

  def yjit? = defined?(RubyVM::YJIT) && RubyVM::YJIT.enabled?

  class Sink
    def write(s) = s.bytesize
  end

  class Keeper
    def initialize = (@kept = [])
    def write(s) = (@kept << "kept by the program: #{s}"; s.bytesize)
  end

  LINE = __LINE__ + 1
  def program = ($reader_kept = Array.new(200) { |i| "kept #{i}" * 3 })

  def test_readers_record_nothing
    Sampler.start(interval: 256, mode: :fixed, malloc: true)
    program
    first = Sampler.samples
    second = Sampler.samples
    assert_equal 0, readers_frames(second).size, "samples of the first read's own objects"
    assert_equal 0, second.count { |s| s.klass == Sampler::Sample }
    assert_operator second.size - first.size, :<=, 2
    # retention twice: the second reports none of the first's objects, paths included
    r = Sampler.retention
    r[:samples].each(&:retention_path)
    assert_equal 0, readers_frames(Sampler.retention[:samples]).size, "samples of the first retention's objects"
    # every other reader
    delta = Sampler::Delta.new
    Sampler.stats
    Sampler.pprof
    Sampler.write_pprof(Sink.new)
    Sampler.pprof(view: :retention)
    Sampler.report(Sink.new)
    Sampler.write_collapsed(Sink.new)
    Sampler.retention_report(Sink.new)
    Sampler.report(keeper = Keeper.new)
    delta.pprof
    Sampler.timeline
    Sampler.write_timeline(Sink.new)
    Sampler.each_sample.to_a
    mine = []
    line = __LINE__ + 1
    Sampler.each_sample { |s| mine << "the program's #{s.size}" * 4 if mine.size < 100 }
    after = Sampler.samples
    assert_empty readers_frames(after).map { |s| s.frames[0..3] }.uniq
    assert_equal 0, after.count { |s| s.klass == Sampler::Sample }
    # what the IO's write and each_sample's block allocate is the program's: recorded
    # (report writes its text in one call, after its reads: one String)
    assert_operator after.count { |s| s.frames[0][2] == "#{Keeper}#write" }, :>=, 1
    assert_operator after.count { |s| s.klass == String && s.frames[0][1] == line }, :>=, 20
    assert_operator after.count { |s| s.frames[0][1] == LINE }, :>=, 20
    assert_operator Sampler.stats[:reader_samples], :>, 1000
    refute_nil mine
    refute_nil keeper
  end
end
