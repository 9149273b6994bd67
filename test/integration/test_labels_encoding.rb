# Label keys and values are stored as UTF-8, which Sample#labels and the
# pprof string table take them to be: a value in another encoding (here
# Latin-1, Windows-1252, UTF-16LE) is converted; a binary String whose
# bytes are valid UTF-8 (Rack's PATH_INFO) is taken as UTF-8; bytes that
# are not text (invalid UTF-8, binary that is not UTF-8) raise an
# ArgumentError naming the label, and such a call changes nothing.
require_relative "helper"
require "tmpdir"

class TestLabelsEncoding < Minitest::Test
  def alloc_here = Array.new(200) { +"e" * 30 }

  def labels_seen
    Sampler.samples.select { |s| s.frames.any? { |f| f[2].end_with?("#alloc_here") } }.map(&:labels).uniq
  end

  def test_converted_or_refused
    Sampler.start(interval: 1, mode: :fixed)
    latin1 = "caf\xE9".dup.force_encoding(Encoding::ISO_8859_1)
    cp1252 = "\x80 5".dup.force_encoding(Encoding::Windows_1252)
    utf16 = "naïve".encode(Encoding::UTF_16LE)
    binary = "/caf\xC3\xA9".b
    Sampler.with_labels(job: latin1, price: cp1252, word: utf16, path: binary, "clé".encode(Encoding::ISO_8859_1) => "k") do
      alloc_here
    end
    seen = labels_seen
    assert_equal [{ "job" => "café", "price" => "€ 5", "word" => "naïve", "path" => "/café", "clé" => "k" }], seen
    seen[0].each { |k, v| assert [k, v].all? { _1.encoding == Encoding::UTF_8 && _1.valid_encoding? }, [k, v].inspect }

    Sampler.clear
    { "caf\xE9" => /value of :job must be text convertible to UTF-8 \(got "caf\\xE9" in UTF-8\)/,
      "caf\xE9".b => /value of :job must be text convertible to UTF-8 \(got "caf\\xE9" in ASCII-8BIT\)/,
      "\xFF\xFE".dup.force_encoding(Encoding::EUC_JP) => /value of :job .* in EUC-JP/ }.each do |value, message|
      e = assert_raises(ArgumentError) { Sampler.with_labels(job: value) { flunk "the block ran" } }
      assert_match message, e.message
    end
    e = assert_raises(ArgumentError) { Sampler.with_labels("k\xFF" => "v") { flunk "the block ran" } }
    assert_match(/key "k\\xFF" must be text convertible to UTF-8/, e.message)
    alloc_here
    assert_equal [{}], labels_seen     # nothing left in effect
  end

  def test_pprof_holds_utf8
    Sampler.start(interval: 1, mode: :fixed)
    Sampler.with_labels(job: "caf\xE9".dup.force_encoding(Encoding::ISO_8859_1)) { alloc_here }
    Dir.mktmpdir do |dir|
      path = File.join(dir, "p.pb.gz")
      Sampler.write_pprof(path)
      jobs = pprof_samples(path).map { _1[:labels]["job"] }.compact.uniq
      assert_equal ["café"], jobs.map { _1.dup.force_encoding(Encoding::UTF_8) }
    end
  end
end
