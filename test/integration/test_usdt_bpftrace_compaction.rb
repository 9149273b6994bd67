# A sampled object that compaction moves stays announced under the address
# otel_memory:alloc gave (usdt.h): bpftrace sees no event at the move, the
# alloc stays open while the object lives at its new address, and when it
# dies the free names the first address, never the new one.
#
# The program (usdt_helper.rb's handshake first) keeps 10,000 Strings and
# 300 Arrays, moves every movable object (verify_compaction_references,
# toward: :empty), reads where its live samples are now (part 1), drops
# them and collects (part 2).  Part 1: the allocs left open are the live
# records, and at least 50 live samples are at an address with no open
# alloc (they moved).  Part 2: no free at a moved sample's new address
# (unless a new sample was announced there first), and the allocs left
# open are the live records again: the moved samples' frees closed their
# first addresses.
require_relative "helper"
require_relative "usdt_helper"

class TestUsdtBpftraceCompaction < Minitest::Test
  PROGRAM = <<~'RUBY'
    # the live records, read with the sampler stopped (nothing is sampled
    # between the read and the mark that follows)
    def live_now
      S.stop
      S.stats[:live].tap { S.start(interval: 4096, mode: :fixed, malloc: true, max_samples: 100_000) }
    end
    keep = [mark]
    10_000.times { |i| keep << "x" * 10 }
    300.times { |i| keep << Array.new(30, i) }
    GC.verify_compaction_references(expand_heap: true, toward: :empty)
    GC.disable
    moved_to = S.samples.filter_map { |s| s.kind == :slot && s.live? && address_of(s.object) }
    live1 = live_now
    marks = [mark]
    GC.enable
    keep = nil
    GC.start
    GC.disable
    live2 = live_now
    marks << mark
    File.write(out, JSON.generate(live1: live1, live2: live2, moved_to: moved_to))
  RUBY

  def test_moved_samples_keep_their_first_address
    skip "compaction unsupported" unless GC.respond_to?(:verify_compaction_references)
    run_traced(PROGRAM, marks: 3) do |events, result, _out|
      ledger = UsdtLedger.new(self).feed(usdt_part(events, 0))
      assert_equal result[:live1], ledger.open.size, "allocs left open after the compaction == live records"
      now = result[:moved_to]
      moved = now.reject { |a| ledger.open.key?(a) }
      assert_operator moved.size, :>=, 50, "live samples at an address no alloc named (moved) of #{now.size}"

      moved_set = moved.to_h { |a| [a, true] }
      part2 = usdt_part(events, 1)
      part2.each do |e|
        next unless e[:kind] == "F" && moved_set[e[:args][0]] && !ledger.open.key?(e[:args][0])
        flunk format("free at 0x%x, a moved sample's new address (event %d)", e[:args][0], e[:seq])
      end
      ledger.feed(part2)
      assert_equal result[:live2], ledger.open.size, "allocs left open after the deaths == live records"
      assert_operator result[:live1] - result[:live2], :>=, moved.size / 2, "the moved samples died"
    end
  end
end
