# The label keys a profile writes itself (class, type, memory, retention)
# are reserved: with_labels raises an ArgumentError naming the key (and
# changes nothing), so a user's label never mixes into them and
# go tool pprof -tags shows Ruby classes under `class` only (a job class
# labelled `class` was counted there twice, beside String).
require_relative "helper"
require "tmpdir"

class TestLabelsReserved < Minitest::Test
  def alloc_here = Array.new(200) { +"r" * 30 }

  def test_reserved_keys
    Sampler.start(interval: 1, mode: :fixed)
    %w[class type memory retention].each do |key|
      [key, key.to_sym].each do |k|
        e = assert_raises(ArgumentError) { Sampler.with_labels(k => "MyJob") { flunk "the block ran" } }
        assert_match(/key #{Regexp.escape(k.inspect)} is reserved/, e.message)
      end
      e = assert_raises(ArgumentError) { Sampler.with_labels(job: "a") { Sampler.with_labels(key => "b") { flunk "ran" } } }
      assert_match(/is reserved/, e.message)
    end
    Sampler.with_labels(job_class: "MyJob", Class: "ok") { alloc_here }
    Dir.mktmpdir do |dir|
      path = File.join(dir, "p.pb.gz")
      Sampler.write_pprof(path)
      tags = pprof("-tags", "-sample_index=alloc_space", path)
      classes = tags[/^ class:.*?(?=^ \S|\z)/m]
      refute_nil classes, tags
      refute_match(/MyJob/, classes)
      assert_match(/^ job_class:.*MyJob/m, tags)
    end
  end
end
