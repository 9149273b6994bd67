# The sampling path finds the label set in the Fiber storage Hash
# whatever shape that Hash has: a small one (scanned in place), one with
# deleted keys, one grown past 8 keys inside the block (CRuby turns it
# into an st_table), and a fiber given its own storage (no labels: it did
# not inherit them).
require_relative "helper"

class TestLabelsStorage < Minitest::Test
  def alloc_here(tag)
    Array.new(200) { tag.dup }
  end

  def labels_seen
    Sampler.samples.select { |s| s.type == :T_STRING && s.frames.any? { |f| f[2].end_with?("#alloc_here") } }
           .map(&:labels).uniq
  end

  def in_fiber(storage = true, &blk)
    Fiber.new(storage: storage, &blk).resume
  end

  def test_storage_shapes
    Sampler.start(interval: 1, mode: :fixed, seed: 1)
    seen = {}
    grab = lambda do |name, &blk|
      Sampler.clear
      blk.call
      seen[name] = labels_seen
    end

    grab.call(:small) { in_fiber { Fiber[:a] = 1; Sampler.with_labels(k: "small") { alloc_here("s") } } }
    grab.call(:deleted) do
      in_fiber do
        Fiber[:a] = 1
        Fiber[:b] = 2
        Sampler.with_labels(k: "deleted") do
          Fiber.current.storage = Fiber.current.storage.tap { |h| h.delete(:a) }
          alloc_here("d")
        end
      end
    end
    grab.call(:grown) do
      in_fiber do
        Sampler.with_labels(k: "grown") do
          20.times { |i| Fiber[:"key#{i}"] = i }
          alloc_here("g")
        end
      end
    end
    grab.call(:big_inherited) do
      in_fiber do
        20.times { |i| Fiber[:"key#{i}"] = i }
        Sampler.with_labels(k: "big") { in_fiber { alloc_here("b") } }
      end
    end
    grab.call(:own_storage) { Sampler.with_labels(k: "outer") { in_fiber({ x: 1 }) { alloc_here("o") } } }

    assert_equal [{ "k" => "small" }], seen[:small]
    assert_equal [{ "k" => "deleted" }], seen[:deleted]
    assert_equal [{ "k" => "grown" }], seen[:grown]
    assert_equal [{ "k" => "big" }], seen[:big_inherited]
    assert_equal [{}], seen[:own_storage]
  end
end
