# DHAT's JSON format as its viewers read it (valgrind's dh_view.js checks
# the same fields and throws on the same faults): dhatFileVersion 2, mode
# heap, lifetimes on, no access counts, every field a program point needs,
# counts as integers, "[root]" first in the frame table, every frame
# index valid, no two points with the same frames, frames as DHAT prints
# them ("0xADDR: name (where)"), the innermost telling slots from
# malloc'd blocks, a label set as the outermost.  dhat is the String
# write_dhat writes.
require_relative "helper"
require "json"

class TestDhatFormat < Minitest::Test
  POINT_FIELDS = %w[tb tbk tl mb mbk gb gbk eb ebk fs].freeze

  def labeled = Sampler.with_labels(job: "report") { Array.new(3_000) { |i| "labeled #{i}" } }
  def unlabeled = Array.new(3_000) { |i| "labeled #{i}" }

  def test_the_fields_viewers_need
    Sampler.start(interval: 4096, seed: 1, malloc: true)
    $keep = [labeled, unlabeled, Array.new(200) { "b" * 5_000 }]
    GC.start
    text = Sampler.dhat
    Sampler.stop
    assert_equal Encoding::UTF_8, text.encoding
    assert text.valid_encoding?
    d = JSON.parse(text)

    assert_equal 2, d["dhatFileVersion"]
    assert_equal "heap", d["mode"]
    assert_equal "Allocated", d["verb"]
    assert_equal true, d["bklt"]
    assert_equal false, d["bkacc"]
    assert_equal "slot bytes allocated", d["tu"]
    assert_kind_of String, d["Mtu"]
    assert_equal Process.pid, d["pid"]
    assert_match(/ruby/, d["cmd"])
    %w[te tg tuth].each { |k| assert_kind_of Integer, d[k], k }
    assert_operator d["tg"], :<=, d["te"]
    assert_operator d["tuth"], :>, 0

    ftbl = d["ftbl"]
    assert_equal "[root]", ftbl.first
    assert_equal ftbl.size, ftbl.uniq.size, "each frame once"
    ftbl.drop(1).each { |f| assert_match(/\A0x[0-9A-F]+: .+ \(.+\)\z/, f, "DHAT's form") }

    pps = d["pps"]
    refute_empty pps
    pps.each do |pp|
      assert_equal POINT_FIELDS.sort, pp.keys.sort, "a point's fields (no rb, wb, acc: bkacc is false)"
      POINT_FIELDS.each { |k| assert_kind_of Integer, pp[k], k unless k == "fs" }
      refute_empty pp["fs"]
      assert pp["fs"].all? { |i| i.is_a?(Integer) && i.between?(1, ftbl.size - 1) }, "frame indices valid, never [root]"
      assert_operator pp["mb"], :>=, [pp["gb"], pp["eb"]].max, "the most live at once"
    end
    assert_equal pps.size, pps.map { |pp| pp["fs"] }.uniq.size, "no repeated frame list (dh_view throws on one)"

    names = ->(pp) { pp["fs"].map { |i| ftbl[i].sub(/\A0x\h+: /, "") } }
    kinds = pps.map { |pp| names.(pp).first }
    assert_includes kinds, "String (object slot, T_STRING)"
    assert_includes kinds, "malloc (malloc'd block)", "malloc'd blocks have a kind frame of their own"
    assert kinds.all? { |k| k.end_with?("(malloc'd block)") || k.include?("(object slot, T_") }, "every point starts with its kind"

    strings = pps.map(&names).select { |n| n[0].start_with?("String") }
    with_labels = strings.select { |n| n.any? { |f| f.start_with?("block (2 levels) in TestDhatFormat#labeled (") } }
    without = strings.select { |n| n.any? { |f| f.start_with?("block in TestDhatFormat#unlabeled (") } }
    refute_empty with_labels
    refute_empty without
    assert with_labels.all? { |n| n.last == "job=report (labels)" }, "a label set is the outermost frame"
    assert without.none? { |n| n.include?("job=report (labels)") }, "the same allocation without labels: points of its own"
    direct = with_labels.find { |n| n[1].start_with?("block (2 levels) in TestDhatFormat#labeled (") }
    assert_match(/\Ablock \(2 levels\) in TestDhatFormat#labeled \(.*test_dhat_format\.rb:\d+\)\z/, direct&.at(1))
  ensure
    $keep = nil
  end

  # class names and paths are written whole, however long (two long
  # names that share a prefix stay two points)
  def test_long_names_whole
    long_a = Object.const_set("DhatLong#{"a" * 300}A", Class.new)
    long_b = Object.const_set("DhatLong#{"a" * 300}B", Class.new)
    Sampler.start(interval: 4096, seed: 1)
    $keep = Array.new(3_000) { long_a.new } + Array.new(3_000) { long_b.new }
    Sampler.stop
    d = JSON.parse(Sampler.dhat)
    kinds = d["pps"].map { |pp| d["ftbl"][pp["fs"][0]].sub(/\A0x\h+: /, "") }
    assert_includes kinds, "#{long_a.name} (object slot, T_OBJECT)"
    assert_includes kinds, "#{long_b.name} (object slot, T_OBJECT)"
  ensure
    $keep = nil
  end

  def test_dhat_is_what_write_dhat_writes
    Sampler.start(interval: 4096, seed: 1)
    $keep = Array.new(5_000) { |i| "same #{i}" }
    Sampler.stop
    GC.start
    io = StringIO.new
    n = Sampler.write_dhat(io)
    text = Sampler.dhat
    assert_equal io.string.bytesize, n
    # (the allocation clock moves between two reads: te, the live
    # lifetimes, and a GC meanwhile may be a new peak)
    strip = ->(t) { d = JSON.parse(t); %w[te tg tuth].each { |k| d.delete(k) }; d["pps"].each { |pp| pp.delete("tl") }; d }
    assert_equal strip.(io.string), strip.(text)
  ensure
    $keep = nil
  end
end
